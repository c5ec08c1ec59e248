// Counted slots shared by every node of an installation (a user's computations at once): in one
// process a counter; on PostgreSQL session advisory locks, one per slot, held by the node's
// connection, so a node that dies gives its slots back with its connection.
import { createHash } from 'node:crypto';
import type { SqlDb } from './sql.js';

export interface Semaphores {
  /** Takes one of `limit` slots of `name`; answers how to give it back, or null when all are taken. */
  take(name: string, limit: number): (() => void) | null;
}

export class LocalSemaphores implements Semaphores {
  private readonly taken = new Map<string, number>();

  take(name: string, limit: number): (() => void) | null {
    const n = this.taken.get(name) ?? 0;
    if (n >= limit) return null;
    this.taken.set(name, n + 1);
    return () => {
      const left = (this.taken.get(name) ?? 1) - 1;
      if (left <= 0) this.taken.delete(name);
      else this.taken.set(name, left);
    };
  }
}

/** A name's 32-bit lock space (two names may share one: they then share slots, never exceed them). */
const space = (name: string) => createHash('sha256').update(name).digest().readInt32BE(0);

export class PgSemaphores implements Semaphores {
  /** Slots this node holds: a session may take its own advisory lock again, so it must not ask for them. */
  private readonly held = new Set<string>();

  constructor(private readonly db: SqlDb) {}

  take(name: string, limit: number): (() => void) | null {
    const key = space(name);
    for (let slot = 0; slot < limit; slot++) {
      const mine = `${key}/${slot}`;
      if (this.held.has(mine)) continue;
      if (!this.db.get<{ ok: boolean }>('SELECT pg_try_advisory_lock(?::int, ?::int) AS ok', key, slot)?.ok) continue;
      this.held.add(mine);
      return () => {
        this.held.delete(mine);
        try {
          this.db.get('SELECT pg_advisory_unlock(?::int, ?::int)', key, slot);
        } catch {
          // The connection is gone, and its locks with it.
        }
      };
    }
    return null;
  }
}
