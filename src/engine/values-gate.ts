// The memory bound of a compute thread that draws several tiles at once (compute/pool.ts): the
// first load of a tile waits while the tiles already loading on this thread hold, together with
// it, more raster values than one tile may load alone (XEO_SYNC_MAX_VALUES). So a thread holds
// about what it held when it drew one tile at a time, while small tiles (the usual two bands of
// 256 x 256 px) all run at once. A tile never waits while it holds values of its own (it could
// wait for one that waits for it), and one tile alone is always let through.

interface Waiter {
  values: number;
  limit: number;
  grant(): void;
}

export class ValuesGate {
  private held = 0;
  private readonly waiting: Waiter[] = [];

  /**
   * Reserves `values` for a run, resolving once it may load them; `limit` is what one load may
   * read (the run's maxValues). Release what was reserved with release() when the run ends.
   */
  reserve(values: number, limit: number, holdsAlready: boolean, signal?: AbortSignal): Promise<void> {
    if (holdsAlready || this.fits(values, limit)) {
      this.held += values;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = {
        values,
        limit,
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          this.held += values;
          resolve();
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(w);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal!.reason);
        this.wake();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(w);
    });
  }

  release(values: number): void {
    this.held = Math.max(0, this.held - values);
    this.wake();
  }

  private fits(values: number, limit: number): boolean {
    // Waiters first: a later, smaller load does not overtake one that waits.
    return this.waiting.length === 0 && this.room(values, limit);
  }

  private room(values: number, limit: number): boolean {
    return this.held === 0 || this.held + values <= limit;
  }

  /** Lets through the waiters that fit now, oldest first. */
  private wake(): void {
    while (this.waiting.length) {
      const w = this.waiting[0];
      if (!this.room(w.values, w.limit)) return;
      this.waiting.shift();
      w.grant();
    }
  }
}
