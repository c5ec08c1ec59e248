// The AssemblyScript kernels built by `npm ci` load and compute the same as plain JavaScript
// (float32 semantics, NaN as no-data, division by zero as IEEE 754 says), and a job COG's band
// statistics are the same from kernel memory as from a plain array. The SIMD kernels of reading
// (TIFF predictor 2) and of zonal statistics agree with the plain loops they replaced, and so do
// the zonal statistics of geometries whose spans come in any order of rows.
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './helpers.js';
import { BandStats } from '../src/jobs/outputs.js';
import { plane, ptrOf, withArena } from '../src/wasm/kernels.js';
import { zonalStats, zonalValues, type ZonalStat } from '../src/datacube/zonal.js';

interface Kernels {
  memory: WebAssembly.Memory;
  heapBase(): number;
  add(a: number, b: number, out: number, n: number): void;
  subtract(a: number, b: number, out: number, n: number): void;
  multiply(a: number, b: number, out: number, n: number): void;
  divide(a: number, b: number, out: number, n: number): void;
  normalizedDifference(a: number, b: number, out: number, n: number): void;
  linearScale(a: number, out: number, n: number, inMin: number, inMax: number, outMin: number, outMax: number): void;
  undoPredictor16(p: number, width: number, rows: number): void;
  zonalSums(values: number, width: number, spans: number, nSpans: number, acc: number): void;
}

/** Room for `bytes` past the heap base. */
function room(k: Kernels, bytes: number): number {
  const base = k.heapBase();
  const need = base + bytes + 64;
  if (need > k.memory.buffer.byteLength) k.memory.grow(Math.ceil((need - k.memory.buffer.byteLength) / 65536));
  return base;
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
      const base = room(k, n * 12);
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

describe('SIMD kernels of reading and zonal statistics against plain loops', () => {
  it('undo TIFF predictor 2 of 16-bit rows of every width, modulo 2^16', async () => {
    const k = await load();
    let x = 99;
    for (const width of [1, 2, 7, 8, 9, 15, 16, 17, 150, 512]) {
      const rows = 3;
      const diffs = new Uint16Array(width * rows).map(() => (x = (x * 1103515245 + 12345) % 2147483648) & 0xffff);
      const want = new Uint16Array(diffs);
      for (let r = 0; r < rows; r++) for (let i = 1; i < width; i++) want[r * width + i] = (want[r * width + i] + want[r * width + i - 1]) & 0xffff;
      const at = room(k, diffs.byteLength);
      new Uint16Array(k.memory.buffer, at, diffs.length).set(diffs);
      k.undoPredictor16(at, width, rows);
      expect(Array.from(new Uint16Array(k.memory.buffer, at, diffs.length)), `width ${width}`).toEqual(Array.from(want));
    }
  });

  it('sum spans as the scalar loop did: counts, min and max exactly, sums to 1e-12, NaN left out', async () => {
    const k = await load();
    const width = 200;
    const height = 4;
    const plane = values(width * height, 5);
    // spans of every length up to 13 and two long ones, over 3 labels, at every start modulo 4
    const spans: number[][] = [];
    for (let len = 0; len <= 13; len++) for (let c0 = 0; c0 < 4; c0++) spans.push([(len + c0) % 3, (len + c0) % height, c0 + 7 * len, c0 + 8 * len]);
    spans.push([1, 2, 3, 197], [2, 3, 0, 200]);
    const labels = 3;
    const at = room(k, plane.byteLength + spans.length * 16 + labels * 48);
    new Float32Array(k.memory.buffer, at, plane.length).set(plane);
    const sp = at + plane.byteLength;
    new Int32Array(k.memory.buffer, sp, spans.length * 4).set(spans.flat());
    const acc = sp + spans.length * 16;
    const start = [0, 0, 0, Infinity, -Infinity, 0];
    const accs = new Float64Array(k.memory.buffer, acc, labels * 6);
    for (let l = 0; l < labels; l++) accs.set(start, l * 6);
    k.zonalSums(at, width, sp, spans.length, acc);
    const got = Array.from(new Float64Array(k.memory.buffer, acc, labels * 6));
    const want = Array.from({ length: labels }, () => [...start]);
    for (const [label, row, c0, c1] of spans) {
      const a = want[label];
      a[0] += c1 - c0;
      for (let c = c0; c < c1; c++) {
        const v = plane[row * width + c];
        if (Number.isNaN(v)) continue;
        a[1]++;
        a[2] += v;
        if (v < a[3]) a[3] = v;
        if (v > a[4]) a[4] = v;
      }
    }
    for (let l = 0; l < labels; l++) {
      const [total, valid, sum, min, max] = got.slice(l * 6, l * 6 + 5);
      expect([total, valid, min, max], `label ${l}`).toEqual([want[l][0], want[l][1], want[l][3], want[l][4]]);
      if (Number.isFinite(want[l][2])) expect(Math.abs(sum - want[l][2]), `label ${l} sum`).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(want[l][2])) * want[l][1]);
      else expect(sum, `label ${l} sum`).toBe(want[l][2]);
    }
    expect(want.some((a) => a[1] < a[0])).toBe(true); // some no-data was left out
  });

  it('give the zonal statistics of the plain loops, whatever the order of the spans', async () => {
    const width = 37;
    const height = 29;
    const planes = 3;
    const data = values(width * height * planes, 11);
    // Label 0: a block of rows; label 1: rows from the bottom up, two runs a row; label 2: every
    // third row in a shuffled order (a multipolygon's parts); label 3: no span at all.
    const spans: number[][] = [];
    for (let r = 4; r < 20; r++) spans.push([0, r, 2, 15]);
    for (let r = height - 1; r >= 0; r -= 2) spans.push([1, r, 0, 5], [1, r, 20, 36]);
    for (const r of [27, 3, 15, 0, 24, 9, 6, 21, 12, 18]) spans.push([2, r, (r * 7) % 30, ((r * 7) % 30) + 7]);
    const labels = 4;
    const given = { data: Int32Array.from(spans.flat()), count: spans.length, labels };
    const pixels = (l: number, p: number) =>
      spans.filter((s) => s[0] === l).flatMap(([, row, c0, c1]) => Array.from(data.subarray(p * width * height + row * width + c0, p * width * height + row * width + c1)));
    const f = Math.fround;
    const plain: Record<ZonalStat, (v: number[]) => number> = {
      count: (v) => v.filter((x) => !Number.isNaN(x)).length,
      sum: (v) => (v.some((x) => !Number.isNaN(x)) ? f(v.filter((x) => !Number.isNaN(x)).reduce((a, b) => a + b, 0)) : NaN),
      mean: (v) => {
        const ok = v.filter((x) => !Number.isNaN(x));
        return ok.length ? f(ok.reduce((a, b) => a + b, 0) / ok.length) : NaN;
      },
      min: (v) => (v.some((x) => !Number.isNaN(x)) ? Math.min(...v.filter((x) => !Number.isNaN(x))) : NaN),
      max: (v) => (v.some((x) => !Number.isNaN(x)) ? Math.max(...v.filter((x) => !Number.isNaN(x))) : NaN),
      median: (v) => {
        const ok = v.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
        const n = ok.length;
        return n === 0 ? NaN : n % 2 ? ok[(n - 1) / 2] : f((ok[n / 2 - 1] + ok[n / 2]) / 2);
      },
      variance: () => NaN,
      sd: () => NaN,
    };
    await withArena(() => {
      for (const stat of ['count', 'sum', 'mean', 'min', 'max', 'median'] as ZonalStat[]) {
        const r = zonalStats(data, width, height, planes, given, stat);
        for (let l = 0; l < labels; l++) {
          for (let p = 0; p < planes; p++) {
            const want = plain[stat](pixels(l, p));
            const got = r.values[l * planes + p];
            // infinities in the data make some sums infinite or NaN on both sides
            if (Number.isFinite(want)) expect(Math.abs(got - want), `${stat}, label ${l}, plane ${p}`).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(want)));
            else expect(got, `${stat}, label ${l}, plane ${p}`).toBe(want);
          }
          expect(r.total[l], `total of label ${l}`).toBe(pixels(l, 0).length);
        }
      }
      // The pixels handed to other reducers keep each label's own order of spans.
      const zv = zonalValues(data, width, height, planes, given);
      for (let l = 0; l < labels; l++) {
        const got = zv.values(l).map((px) => Array.from(px));
        const want = pixels(l, 0).map((_, j) => Array.from({ length: planes }, (_, p) => f(pixels(l, p)[j])));
        expect(got, `pixels of label ${l}`).toEqual(want);
      }
    });
  });
});
