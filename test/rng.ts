// Seeded pseudo-random numbers for tests, so a failing case can be run again exactly.
import { mulberry32 } from '../src/core/random.js';

/** xorshift32: integers and picks for generated graphs and inputs. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 1;
  }
  next(): number {
    let x = this.s;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.s = x >>> 0;
    return this.s / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(a: readonly T[]): T {
    return a[this.int(a.length)];
  }
}

/** mulberry32 as a function of no arguments: numbers in [0, 1) for generated rasters. */
export const rng = mulberry32;
