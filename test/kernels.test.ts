// The AssemblyScript kernels built by `npm ci` load and compute the same as plain JavaScript
// (float32 semantics, NaN as no-data, division by zero as IEEE 754 says), and a job COG's band
// statistics are the same from kernel memory as from a plain array.
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './helpers.js';
import { BandStats } from '../src/jobs/outputs.js';
import { plane, ptrOf, withArena } from '../src/wasm/kernels.js';

interface Kernels {
  memory: WebAssembly.Memory;
  heapBase(): number;
  add(a: number, b: number, out: number, n: number): void;
  subtract(a: number, b: number, out: number, n: number): void;
  multiply(a: number, b: number, out: number, n: number): void;
  divide(a: number, b: number, out: number, n: number): void;
  normalizedDifference(a: number, b: number, out: number, n: number): void;
  linearScale(a: number, out: number, n: number, inMin: number, inMax: number, outMin: number, outMax: number): void;
}

async function load(): Promise<Kernels> {
  const bytes = readFileSync(path.join(ROOT, 'build/kernels.wasm'));
  const { instance } = await WebAssembly.instantiate(bytes, {
    env: {
      abort: () => {
        throw new Error('abort');
      },
    },
  });
  return instance.exports;
}

function values(n: number, seed: number): Float32Array {
  const special = [NaN, Infinity, -Infinity, 0, -0, 1e38, -1e38, 1e-45];
  const a = new Float32Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    a[i] = i % 17 === 0 ? special[((i / 17) % special.length) | 0] : (x / 2147483648) * 2000 - 1000;
  }
  return a;
}

describe('kernels', () => {
  it('match JavaScript float32 arithmetic on blocks of every tail length', async () => {
    const k = await load();
    const f = Math.fround;
    const ops: [keyof Kernels, (x: number, y: number) => number][] = [
      ['add', (x, y) => f(x + y)],
      ['subtract', (x, y) => f(x - y)],
      ['multiply', (x, y) => f(x * y)],
      ['divide', (x, y) => f(x / y)],
      ['normalizedDifference', (x, y) => f(f(x - y) / f(x + y))],
    ];
    for (const n of [0, 1, 3, 4, 5, 7, 8, 1000, 4099]) {
      const a = values(n, 1);
      const b = values(n, 2);
      const base = k.heapBase();
      const need = base + n * 12 + 64;
      if (need > k.memory.buffer.byteLength) k.memory.grow(Math.ceil((need - k.memory.buffer.byteLength) / 65536));
      const pa = base;
      const pb = base + n * 4;
      const po = base + n * 8;
      new Float32Array(k.memory.buffer, pa, n).set(a);
      new Float32Array(k.memory.buffer, pb, n).set(b);
      for (const [name, js] of ops) {
        (k[name] as (a: number, b: number, o: number, n: number) => void)(pa, pb, po, n);
        const out = new Float32Array(k.memory.buffer, po, n);
        for (let i = 0; i < n; i++) {
          const want = js(a[i], b[i]);
          if (!Object.is(out[i], want) && !(Number.isNaN(out[i]) && Number.isNaN(want))) {
            throw new Error(`${name}(${a[i]}, ${b[i]}) = ${out[i]}, expected ${want} (n=${n}, i=${i})`);
          }
        }
      }
      k.linearScale(pa, po, n, -1000, 1000, 0, 255);
      const out = new Float32Array(k.memory.buffer, po, n);
      for (let i = 0; i < n; i++) {
        const want = f(f(f(a[i] - -1000) * f(255 / 2000)) + 0);
        expect(Math.abs(out[i] - want) <= Math.abs(want) * 1e-6 || (Number.isNaN(out[i]) && Number.isNaN(want)) || out[i] === want).toBe(true);
      }
    }
  });
});

describe('band statistics of a job COG (kernels/stats.ts through BandStats)', () => {
  it('count, min and max as the JavaScript loop, sums to 1e-12, NaN and infinities left out, for every tail length', async () => {
    for (const n of [1024, 1025, 1027, 4099, 100_000]) {
      const src = values(n, 3);
      const js = new BandStats();
      js.add(new Float32Array(src)); // a plain array: the loop
      const wasm = new BandStats();
      await withArena(() => {
        const p = plane(n); // kernel memory: the kernel
        p.set(src);
        expect(ptrOf(p)).toBeGreaterThanOrEqual(0);
        wasm.add(p);
      });
      expect(wasm.n).toBe(js.n);
      expect(wasm.n).toBeLessThan(n); // the specials are there
      expect(wasm.min).toBe(js.min);
      expect(wasm.max).toBe(js.max);
      expect(Math.abs(wasm.sum - js.sum)).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(js.sum), js.sq ** 0.5));
      expect(Math.abs(wasm.sq - js.sq)).toBeLessThanOrEqual(1e-12 * js.sq);
    }
    const none = new BandStats();
    await withArena(() => {
      const p = plane(2048);
      p.fill(NaN);
      none.add(p);
    });
    expect([none.n, none.min, none.max]).toEqual([0, Infinity, -Infinity]);
  });
});
