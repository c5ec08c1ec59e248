// Bytes that uploads in progress hold against their user's quota, so that uploads running at once,
// on one node or on many nodes sharing a database server, cannot pass the quota together. An
// upload reserves bytes before it writes them and gives its reservation back when it ends. On a
// database server a reservation that was not renewed for RESERVATION_STALE_MS (its node died, say)
// no longer counts, and such rows are swept. The embedded store keeps the reservations in memory:
// a single process holds them all.
import type { SqlDb } from './sql.js';

export interface UploadLedger {
  /**
   * Changes the reservation of upload `id` of `userId` by `delta` bytes; answers the bytes that all
   * of that user's live reservations hold, this one included.
   */
  reserve(id: string, userId: string, delta: number, now: number): Promise<number>;
  /** Ends the reservation of upload `id`. */
  release(id: string): Promise<void>;
}

/** How long a reservation counts without being renewed. */
export const RESERVATION_STALE_MS = 10 * 60_000;

export class LocalUploadLedger implements UploadLedger {
  private readonly byUser = new Map<string, Map<string, number>>();
  private readonly userOf = new Map<string, string>();

  async reserve(id: string, userId: string, delta: number): Promise<number> {
    let mine = this.byUser.get(userId);
    if (!mine) this.byUser.set(userId, (mine = new Map()));
    mine.set(id, (mine.get(id) ?? 0) + delta);
    this.userOf.set(id, userId);
    let held = 0;
    for (const bytes of mine.values()) held += bytes;
    return held;
  }

  async release(id: string): Promise<void> {
    const userId = this.userOf.get(id);
    if (userId === undefined) return;
    this.userOf.delete(id);
    const mine = this.byUser.get(userId)!;
    mine.delete(id);
    if (mine.size === 0) this.byUser.delete(userId);
  }
}

/** How often, at most, stale reservations are swept. */
const SWEEP_MS = 60_000;

export class SqlUploadLedger implements UploadLedger {
  private lastSweep = 0;

  constructor(private readonly db: SqlDb) {}

  async reserve(id: string, userId: string, delta: number, now: number): Promise<number> {
    const stale = now - RESERVATION_STALE_MS;
    if (now - this.lastSweep > SWEEP_MS) {
      this.lastSweep = now;
      // In the background: a sweep never delays the answer.
      void this.db.run('DELETE FROM upload_reservations WHERE updated <= ?', stale).catch(() => {});
    }
    await this.db.run(
      'INSERT INTO upload_reservations (id, user_id, bytes, updated) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET bytes = upload_reservations.bytes + excluded.bytes, updated = excluded.updated',
      id,
      userId,
      delta,
      now,
    );
    return Number((await this.db.get<{ held: number | string }>('SELECT coalesce(sum(bytes), 0) AS held FROM upload_reservations WHERE user_id = ? AND updated > ?', userId, stale))?.held ?? 0);
  }

  async release(id: string): Promise<void> {
    await this.db.run('DELETE FROM upload_reservations WHERE id = ?', id);
  }
}
