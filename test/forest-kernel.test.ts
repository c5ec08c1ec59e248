// The forest kernel on its own (src/compile/forest-kernel.ts, kernels/forest.ts): a forest trained
// here, walked in WebAssembly, against the same forest walked in JavaScript, value for value; the
// same with images made of runs of equal pixels (a tile zoomed in past its data), whose pixels take
// their left or upper neighbour's answer instead of a walk; and a large prediction split over a
// kernel helper thread (build/forest.wasm on the shared kernel memory) equal to the same prediction
// on one thread.
import { describe, expect, it } from 'vitest';
import { trainForest } from '../src/ml/train.js';
import { predictOne, probabilitiesOne, type Forest } from '../src/ml/forest.js';
import { decodeForest, encodeForest } from '../src/ml/model-file.js';
import { FOREST_SPLIT_MIN_PIXELS, runForest } from '../src/compile/forest-kernel.js';
import { KernelHelpers } from '../src/compile/kernel-threads.js';
import { plane, withArena } from '../src/wasm/kernels.js';
import { mulberry32 } from '../src/core/random.js';

const P = 6;

/** A forest of 30 trees over P predictors: three classes (or `classes`), or values. */
function forest(kind: 'classification' | 'regression', seed: number, classes = 3): Forest {
  const n = 3000;
  const r = mulberry32(seed);
  const x = new Float32Array(n * P);
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let f = 0; f < P; f++) {
      const v = r();
      x[f * n + i] = v;
      s += f < 2 ? v : 0.1 * v;
    }
    y[i] = kind === 'regression' ? s * 10 : classes === 3 ? (s > 1.2 ? 2 : s > 0.8 ? 1 : 0) : Math.min(classes - 1, Math.floor((s / 2.4) * classes));
  }
  return trainForest({ kind, x, n, p: P, y, predictors: Array.from({ length: P }, (_, f) => `b${f}`), numTrees: 30, maxVariables: 2, maxVariablesGiven: 2, seed, maxDepth: 64, skipped: 0 });
}

/** P planes of `n` pixels in kernel memory, with some NaN. */
function planes(n: number, seed: number): Float32Array[] {
  const r = mulberry32(seed);
  return Array.from({ length: P }, (_, f) => {
    const a = plane(n);
    for (let i = 0; i < n; i++) a[i] = (i + f) % 997 === 0 ? NaN : r();
    return a;
  });
}

/**
 * P planes of an image `cols` wide and `rows` high made of blocks of `bw` x `bh` equal pixels (as
 * nearest resampling draws data zoomed in), with whole blocks of NaN, single NaN values inside
 * blocks, and -0 beside 0 (equal as numbers: the walk cannot tell them apart either).
 */
function blockPlanes(cols: number, rows: number, bw: number, bh: number, seed: number): Float32Array[] {
  const r = mulberry32(seed);
  const bx = Math.ceil(cols / bw);
  const values = Array.from({ length: P }, () => Float32Array.from({ length: bx * Math.ceil(rows / bh) }, () => (r() < 0.05 ? 0 : r())));
  return Array.from({ length: P }, (_, f) => {
    const a = plane(cols * rows);
    for (let y = 0; y < rows; y++) {
      for (let x = 0; x < cols; x++) {
        const b = Math.floor(y / bh) * bx + Math.floor(x / bw);
        const i = y * cols + x;
        a[i] = b % 41 === 5 || (i * 7 + f) % 1013 === 0 ? NaN : values[f][b] === 0 && (x + y) % 2 ? -0 : values[f][b];
      }
    }
    return a;
  });
}

/** Expects the kernel's planes to equal the JavaScript walk of every pixel (values, classes or probabilities). */
function expectAsWalkedInJs(f: Forest, ps: Float32Array[], n: number, out: Float32Array, probs: Float32Array[] | null, what: string): void {
  const x = new Float64Array(P);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < P; k++) x[k] = ps[k][i];
    if (!Object.is(out[i], Math.fround(predictOne(f, x)))) expect(out[i], `${what}: pixel ${i}`).toBe(Math.fround(predictOne(f, x)));
    if (probs) probabilitiesOne(f, x).forEach((v, c) => Object.is(probs[c][i], v) || expect(probs[c][i], `${what}: pixel ${i} class ${c}`).toBe(v));
  }
}

describe('the forest kernel', () => {
  it('walks classification and regression forests as the JavaScript walk does, NaN giving NaN', async () => {
    // Three classes and two (leaves padded to four numbers, added in one SIMD addition), six
    // (added one by one), and values.
    for (const [kind, classes] of [
      ['classification', 3],
      ['classification', 2],
      ['classification', 6],
      ['regression', 1],
    ] as const) {
      // Through the model file, as a loaded model reaches the kernel.
      const f = decodeForest(encodeForest(forest(kind, 3, classes)));
      if (kind === 'classification') expect(f.classes.length).toBe(classes);
      await withArena(() => {
        const n = 5000;
        const ps = planes(n, 9);
        const out = runForest(f, ps, n, false)[0];
        const probs = kind === 'classification' ? runForest(f, ps, n, true) : null;
        const x = new Float64Array(P);
        for (let i = 0; i < n; i++) {
          for (let k = 0; k < P; k++) x[k] = ps[k][i];
          expect(Object.is(out[i], Math.fround(predictOne(f, x))), `${kind} (${classes}) pixel ${i}`).toBe(true);
          if (probs) probabilitiesOne(f, x).forEach((v, c) => expect(Object.is(probs[c][i], v)).toBe(true));
        }
      });
    }
  });

  it('gives pixels equal to their left or upper neighbour its answer: the map of the walk of every pixel', async () => {
    for (const kind of ['classification', 'regression'] as const) {
      const f = forest(kind, 4);
      await withArena(() => {
        // Blocks of 3 x 3 (a tile at zoom 15 over 10 m data), 1 x 4 (runs down columns only, so
        // only the upper neighbour helps), 5 x 1 (along rows only), and 1 x 1 (no runs at all).
        for (const [bw, bh] of [
          [3, 3],
          [1, 4],
          [5, 1],
          [1, 1],
        ]) {
          const cols = 61;
          const rows = 47;
          const n = cols * rows;
          const ps = blockPlanes(cols, rows, bw, bh, 20 + bw * 10 + bh);
          // Given the true rows, no rows at all (left neighbours only), and rows of the wrong length:
          // every answer stays exact, only fewer pixels are spared.
          for (const given of [cols, 0, cols - 1]) {
            const out = runForest(f, ps, n, false, undefined, given)[0];
            const probs = kind === 'classification' ? runForest(f, ps, n, true, undefined, given) : null;
            expectAsWalkedInJs(f, ps, n, out, probs, `${kind}, blocks ${bw} x ${bh}, cols ${given}`);
          }
        }
      });
    }
  });

  it('walks each block of equal pixels once when it knows the rows, each run along a row without them', async () => {
    const f = forest('classification', 6);
    await withArena(() => {
      const r = mulberry32(8);
      const [cols, rows, bw, bh] = [256, 200, 3, 4];
      const [bx, by] = [Math.ceil(cols / bw), Math.ceil(rows / bh)];
      const values = Array.from({ length: P }, () => Array.from({ length: bx * by }, () => 0.01 + r()));
      const ps = values.map((v) => {
        const a = plane(cols * rows);
        for (let i = 0; i < cols * rows; i++) a[i] = v[Math.floor(Math.floor(i / cols) / bh) * bx + Math.floor((i % cols) / bw)];
        return a;
      });
      const stats = { walked: 0 };
      const out = runForest(f, ps, cols * rows, false, undefined, cols, stats)[0];
      expect(stats.walked).toBe(bx * by);
      expectAsWalkedInJs(f, ps, cols * rows, out, null, 'blocks');
      runForest(f, ps, cols * rows, false, undefined, 0, stats);
      expect(stats.walked).toBe(bx * rows);
    });
  });

  it('splits a large prediction over a helper thread, with the answer of one thread', async () => {
    const f = forest('classification', 5);
    const helpers = new KernelHelpers(1);
    try {
      await withArena(() => {
        const n = FOREST_SPLIT_MIN_PIXELS + 12_345;
        const ps = planes(n, 11);
        const alone = Float32Array.from(runForest(f, ps, n, false)[0]);
        const before = helpers.stats();
        const split = runForest(f, ps, n, false, helpers)[0];
        const after = helpers.stats();
        expect(after.splits).toBe(before.splits + 1);
        expect(after.rescued).toBe(before.rescued);
        expect(new Int32Array(split.buffer, split.byteOffset, n)).toEqual(new Int32Array(alone.buffer));
        // An image of runs, split in bands that do not start at rows: the same as on one thread.
        const rows = Math.ceil(n / 512);
        const runs = blockPlanes(512, rows, 3, 3, 13);
        const runsAlone = Float32Array.from(runForest(f, runs, 512 * rows, false, undefined, 512)[0]);
        const runsSplit = runForest(f, runs, 512 * rows, false, helpers, 512)[0];
        expect(helpers.stats().splits).toBe(after.splits + 1);
        expect(new Int32Array(runsSplit.buffer, runsSplit.byteOffset, 512 * rows)).toEqual(new Int32Array(runsAlone.buffer));
        // Below the threshold, and for probabilities (a plane per class), it stays on this thread.
        runForest(
          f,
          ps.map((p) => p.subarray(0, 1000)),
          1000,
          false,
          helpers,
        );
        runForest(f, ps, n, true, helpers);
        expect(helpers.stats().splits).toBe(after.splits + 1);
      });
    } finally {
      helpers.stop();
    }
  }, 120_000);
});
