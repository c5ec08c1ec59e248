// The logs of synchronous requests (POST /result): what a graph logged while it ran (inspect's
// summaries, loads, warnings; a user-defined function's prints and traceback) is kept in the
// record store under an owner of the user's own, for an hour, and the answer names the request
// (`{Brand}-Identifier`) and links to its log (`Link: <...>; rel="monitor"`). The node that kept a
// log deletes it after the hour (and at an orderly stop); a node that dies leaves its last hour of
// such logs behind.
import { randomBytes } from 'node:crypto';
import type { LogEntry, LogRepo } from '../store/types.js';

/** Entries one request keeps at most. */
const MAX_ENTRIES = 1000;

/** The log of request `id` of `user` in the log store. */
export const syncLogOwner = (user: string, id: string) => `result:${user}:${id}`;

/** A new request id: 96 random bits, hex (its log cannot be guessed, and is the user's only anyway). */
export const newSyncId = () => randomBytes(12).toString('hex');
export const SYNC_ID = /^[0-9a-f]{24}$/;

export type SyncLogEntry = Omit<LogEntry, 'id'>;

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

  /** Keeps the entries of request `id` (nothing when there are none). */
  async save(user: string, id: string, entries: SyncLogEntry[]): Promise<void> {
    if (!entries.length) return;
    const owner = syncLogOwner(user, id);
    const list =
      entries.length > MAX_ENTRIES
        ? [...entries.slice(0, MAX_ENTRIES - 1), { level: 'warning' as const, message: `${entries.length - MAX_ENTRIES + 1} more log entries of this request were dropped.`, time: new Date().toISOString() }]
        : entries;
    for (const e of list) await this.logs.append(owner, e);
    this.kept.push({ owner, until: Date.now() + this.ttlMs });
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
