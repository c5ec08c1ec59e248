// The logs of synchronous requests (POST /result): what a graph logged while it ran (print() and
// inspect() of UDFs, inspect's summaries, a UDF's error with its traceback) is kept in the record
// store under an owner of the user's own, for an hour, and the answer links to it with
// `Link: <...>; rel="monitor"` (API 1.1+). The node that kept a log deletes it after the hour (and
// at an orderly stop); a node that dies leaves its last hour of such logs behind.
import { randomBytes } from 'node:crypto';
import type { LogRepo } from '../store/types.js';
import type { RunLog } from '../core/run-context.js';

/** Entries one request may keep at most. */
const MAX_ENTRIES = 1000;

export const syncLogOwner = (user: string, id: string) => `result:${user}:${id}`;

export type SyncLogEntry = RunLog & { code?: string };

export class SyncLogs {
  private readonly kept: { owner: string; until: number }[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly logs: Pick<LogRepo, 'append' | 'deleteOwner'>,
    private readonly ttlMs = 3600_000,
  ) {
    this.timer = setInterval(() => void this.sweep(Date.now()), 60_000);
    this.timer.unref();
  }

  /** Keeps the entries of one request; answers the id of its log. */
  async save(user: string, entries: SyncLogEntry[]): Promise<string> {
    const id = randomBytes(12).toString('hex');
    const owner = syncLogOwner(user, id);
    const list = entries.length > MAX_ENTRIES ? [...entries.slice(0, MAX_ENTRIES - 1), { level: 'warning' as const, message: `${entries.length - MAX_ENTRIES + 1} more log entries of this request were dropped.`, time: new Date().toISOString() }] : entries;
    for (const e of list) await this.logs.append(owner, e);
    this.kept.push({ owner, until: Date.now() + this.ttlMs });
    return id;
  }

  private async sweep(now: number): Promise<void> {
    while (this.kept.length && this.kept[0].until <= now) {
      const { owner } = this.kept.shift()!;
      try {
        await this.logs.deleteOwner(owner);
      } catch (e) {
        console.error(`[xeo] a request's log was not deleted: ${(e as Error).message}`);
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.sweep(Infinity);
  }
}
