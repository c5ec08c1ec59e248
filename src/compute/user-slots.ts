// Computations a user may run at the same time (synchronous /result requests). One user's burst
// must not take every compute thread from the others: beyond the limit the answer is 429 at once.
import { ApiError } from '../core/errors.js';

/** Per-user slots of synchronous work. */
export type Slots = Pick<UserSlots, 'acquire'>;

export class UserSlots {
  private readonly running = new Map<string, number>();

  constructor(private readonly perUser: number) {}

  /** Takes a slot for the user; the returned function gives it back (once). */
  acquire(userId: string): () => void {
    const n = this.running.get(userId) ?? 0;
    if (n >= this.perUser) {
      const e = new ApiError('TooManyRequests', { running: n });
      e.headers = { 'Retry-After': '1' };
      throw e;
    }
    this.running.set(userId, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.running.get(userId) ?? 1) - 1;
      if (left <= 0) this.running.delete(userId);
      else this.running.set(userId, left);
    };
  }
}
