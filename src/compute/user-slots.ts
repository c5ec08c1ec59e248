// Computations a user may run at the same time (synchronous /result requests). One user's burst
// must not take every compute thread from the others: beyond the limit the answer is 429 at once.
// The slots are the store's semaphores, so the limit holds across every node sharing the store.
import { ApiError } from '../core/errors.js';
import type { Semaphores } from '../store/semaphores.js';

/** Per-user slots of synchronous work. */
export type Slots = Pick<UserSlots, 'acquire'>;

export class UserSlots {
  constructor(
    private readonly semaphores: Semaphores,
    private readonly perUser: number,
  ) {}

  /** Takes a slot for the user; the returned function gives it back (once). */
  async acquire(userId: string): Promise<() => void> {
    const give = await this.semaphores.take(`user-computations:${userId}`, this.perUser);
    if (!give) {
      const e = new ApiError('TooManyRequests', { running: this.perUser });
      e.headers = { 'Retry-After': '1' };
      throw e;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      void give();
    };
  }
}
