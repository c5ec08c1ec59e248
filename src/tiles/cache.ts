// Rendered tiles in memory: an LRU bounded by bytes, and the renders in flight, so concurrent
// misses of one tile are computed once. A render that every waiting client gave up on is
// cancelled; one that finishes anyway is kept, since maps come back to tiles they panned past.
import { LRUCache } from 'lru-cache';
import { createHash } from 'node:crypto';

export interface CachedTile {
  body: Buffer;
  contentType: string;
  /** Strong validator: a hash of the bytes, quoted. */
  etag: string;
  /** Server-Timing of the render that made it. */
  timing?: string;
  /** The answer it makes when served from the cache (made on the first such answer). */
  answer?: { status: 200; headers: Record<string, string>; body: Buffer; contentType: string };
}

/** Bytes an entry costs beyond its body (key, object, its kept answer, map slot): keeps the bound honest for tiny tiles. */
const ENTRY_OVERHEAD = 384;

export const etagOf = (body: Buffer): string => `"${createHash('sha1').update(body).digest('base64url').slice(0, 22)}"`;

interface Flight {
  promise: Promise<CachedTile>;
  abort: AbortController;
  waiters: number;
}

export class TileCache {
  private readonly lru: LRUCache<string, CachedTile>;
  private readonly flights = new Map<string, Flight>();

  constructor(maxBytes: number) {
    this.lru = new LRUCache<string, CachedTile>({ maxSize: Math.max(1, maxBytes), sizeCalculation: (t, k) => t.body.length + k.length + ENTRY_OVERHEAD });
  }

  get(key: string): CachedTile | undefined {
    return this.lru.get(key);
  }

  /** Whether a render of `key` is under way (a request for it joins that render). */
  rendering(key: string): boolean {
    return this.flights.has(key);
  }

  /**
   * The tile for `key`: joins a render in flight or starts one. `signal` is this caller's
   * interest; the render is aborted when all callers' signals have fired.
   */
  render(key: string, make: (signal: AbortSignal) => Promise<CachedTile>, signal?: AbortSignal, onJoin?: () => void): Promise<CachedTile> {
    let f = this.flights.get(key);
    if (f) onJoin?.();
    else {
      const abort = new AbortController();
      const flight: Flight = { abort, waiters: 0, promise: null as unknown as Promise<CachedTile> };
      flight.promise = make(abort.signal).then(
        (t) => {
          this.flights.delete(key);
          if (!abort.signal.aborted) this.lru.set(key, t);
          return t;
        },
        (e) => {
          this.flights.delete(key);
          throw e;
        },
      );
      this.flights.set(key, (f = flight));
    }
    const flight = f;
    flight.waiters++;
    if (!signal) return flight.promise;
    return new Promise<CachedTile>((resolve, reject) => {
      const gone = () => {
        if (--flight.waiters === 0 && this.flights.get(key) === flight) {
          this.flights.delete(key);
          flight.abort.abort(signal.reason);
        }
        reject(signal.reason);
      };
      if (signal.aborted) return gone();
      signal.addEventListener('abort', gone, { once: true });
      flight.promise.then(
        (t) => {
          signal.removeEventListener('abort', gone);
          resolve(t);
        },
        (e) => {
          signal.removeEventListener('abort', gone);
          reject(e);
        },
      );
    });
  }

  /** Drops every cached tile whose key starts with `prefix` (a service's tiles after a change). */
  purge(prefix: string): number {
    let n = 0;
    for (const k of [...this.lru.keys()]) {
      if (k.startsWith(prefix)) {
        this.lru.delete(k);
        n++;
      }
    }
    for (const [k, f] of this.flights) {
      if (k.startsWith(prefix)) {
        this.flights.delete(k);
        f.abort.abort(new Error('the service changed'));
      }
    }
    return n;
  }

  get bytes(): number {
    return this.lru.calculatedSize;
  }

  get entries(): number {
    return this.lru.size;
  }
}
