// Counted slots shared by every node of an installation (a user's computations at once): in one
// process a counter; on PostgreSQL session advisory locks, one per slot, held by a connection of
// the node's own that does nothing else, so a node that dies gives its slots back with its
// connection.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { pgClient } from './pg-driver.js';
import { StoreUnavailable, unreachable, type PgOptions } from './pg.js';

export interface Semaphores {
  /**
   * Takes one of `limit` slots of `name`; answers how to give it back (once; its promise says when
   * the slot is free for others), or null when all are taken.
   */
  take(name: string, limit: number): Promise<(() => Promise<void>) | null>;
  close(): Promise<void>;
}

export class LocalSemaphores implements Semaphores {
  private readonly taken = new Map<string, number>();

  async take(name: string, limit: number): Promise<(() => Promise<void>) | null> {
    const n = this.taken.get(name) ?? 0;
    if (n >= limit) return null;
    this.taken.set(name, n + 1);
    return async () => {
      const left = (this.taken.get(name) ?? 1) - 1;
      if (left <= 0) this.taken.delete(name);
      else this.taken.set(name, left);
    };
  }

  async close(): Promise<void> {}
}

/** A name's 32-bit lock space (two names may share one: they then share slots, never exceed them). */
const space = (name: string) => createHash('sha256').update(name).digest().readInt32BE(0);

/** The connection that holds this node's locks, and the slots it holds (a session may take its own lock again, so it must not ask for them). */
interface LockSession {
  client: pg.Client;
  held: Set<string>;
}

export class PgSemaphores implements Semaphores {
  private session: Promise<LockSession> | null = null;
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly options: PgOptions,
  ) {}

  async take(name: string, limit: number): Promise<(() => Promise<void>) | null> {
    const s = await this.connection();
    const key = space(name);
    for (let slot = 0; slot < limit; slot++) {
      const mine = `${key}/${slot}`;
      if (s.held.has(mine)) continue;
      // Taken before the answer arrives: two takes at once on this node never both ask for one slot.
      s.held.add(mine);
      let ok = false;
      try {
        ok = (await this.query(s, 'SELECT pg_try_advisory_lock($1::int, $2::int) AS ok', [key, slot]))[0]?.ok === true;
      } finally {
        if (!ok) s.held.delete(mine);
      }
      if (!ok) continue;
      return async () => {
        if (!s.held.delete(mine)) return;
        // A session that is gone took its locks with it.
        await this.query(s, 'SELECT pg_advisory_unlock($1::int, $2::int)', [key, slot]).then(
          () => {},
          () => {},
        );
      };
    }
    return null;
  }

  async close(): Promise<void> {
    this.closed = true;
    // closing: a session that never opened has nothing to end
    const s = await this.session?.catch(() => null);
    this.session = null;
    // closing: a connection that is already broken has nothing left to end
    await s?.client.end().catch(() => {});
  }

  private connection(): Promise<LockSession> {
    if (this.closed) return Promise.reject(new StoreUnavailable('the record store is closed'));
    return (this.session ??= this.open());
  }

  private async open(): Promise<LockSession> {
    const client = await pgClient(this.url, this.options.timeoutMs);
    const session: LockSession = { client, held: new Set() };
    const lost = () => this.drop(session);
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
    } catch (e) {
      lost();
      throw new StoreUnavailable((e as Error).message);
    }
    return session;
  }

  /** Forgets a session that failed: its locks are gone with it on the server's side. */
  private drop(s: LockSession): void {
    s.held.clear();
    void this.session?.then(
      (cur) => cur === s && (this.session = null),
      () => (this.session = null),
    );
    (s.client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  }

  private async query(s: LockSession, text: string, values: unknown[]): Promise<{ ok?: boolean }[]> {
    try {
      return (await s.client.query(text, values)).rows;
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (unreachable(code)) {
        this.drop(s);
        throw new StoreUnavailable((e as Error).message);
      }
      throw e;
    }
  }
}
