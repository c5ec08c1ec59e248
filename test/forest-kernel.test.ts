// The forest kernel on its own (src/compile/forest-kernel.ts, kernels/forest.ts): a forest trained
// here, walked in WebAssembly, against the same forest walked in JavaScript, value for value; and a
// large prediction split over a kernel helper thread (build/forest.wasm on the shared kernel
// memory) equal to the same prediction on one thread.
import { describe, expect, it } from 'vitest';
import { trainForest } from '../src/ml/train.js';
import { predictOne, probabilitiesOne, type Forest } from '../src/ml/forest.js';
import { decodeForest, encodeForest } from '../src/ml/model-file.js';
import { FOREST_SPLIT_MIN_PIXELS, runForest } from '../src/compile/forest-kernel.js';
import { KernelHelpers } from '../src/compile/kernel-threads.js';
import { plane, withArena } from '../src/wasm/kernels.js';
import { mulberry32 } from '../src/core/random.js';

const P = 6;

function forest(kind: 'classification' | 'regression', seed: number): Forest {
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
    y[i] = kind === 'regression' ? s * 10 : s > 1.2 ? 2 : s > 0.8 ? 1 : 0;
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

describe('the forest kernel', () => {
  it('walks classification and regression forests as the JavaScript walk does, NaN giving NaN', async () => {
    for (const kind of ['classification', 'regression'] as const) {
      // Through the model file, as a loaded model reaches the kernel.
      const f = decodeForest(encodeForest(forest(kind, 3)));
      await withArena(() => {
        const n = 5000;
        const ps = planes(n, 9);
        const out = runForest(f, ps, n, false)[0];
        const probs = kind === 'classification' ? runForest(f, ps, n, true) : null;
        const x = new Float64Array(P);
        for (let i = 0; i < n; i++) {
          for (let k = 0; k < P; k++) x[k] = ps[k][i];
          expect(Object.is(out[i], Math.fround(predictOne(f, x))), `${kind} pixel ${i}`).toBe(true);
          if (probs) probabilitiesOne(f, x).forEach((v, c) => expect(Object.is(probs[c][i], v)).toBe(true));
        }
      });
    }
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
        // Below the threshold, and for probabilities (a plane per class), it stays on this thread.
        runForest(
          f,
          ps.map((p) => p.subarray(0, 1000)),
          1000,
          false,
          helpers,
        );
        runForest(f, ps, n, true, helpers);
        expect(helpers.stats().splits).toBe(after.splits);
      });
    } finally {
      helpers.stop();
    }
  }, 120_000);
});
