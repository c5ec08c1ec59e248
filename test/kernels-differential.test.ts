// Differential tests of the kernels: thousands of random pixel-wise child graphs (apply and
// reduce_dimension) run by the JS engine (the reference: scalar processes lifted over pixels), by
// the tier-0 block VM and by tier-1 compiled modules; the answers must agree within float32
// tolerance. Disagreements found on the way are kept below as fixed regression cases.
import { describe, it, expect } from 'vitest';
import { evaluateGraph, rootScope } from '../src/graph/evaluate.js';
import { DataCube } from '../src/datacube/datacube.js';
import { fuseChild } from '../src/compile/fuse.js';
import { predefined } from '../src/processes/registry.js';
import { compileMany, createTier1 } from '../src/compile/tier1.js';
import { engineEnv } from './engine-env.js';
import { tempDir } from './helpers.js';
import { arenaStats, plane, withArena } from '../src/wasm/kernels.js';
import { inputValues, randomChild, type Shape } from './kernel-graphs.js';
import { Rng } from './rng.js';

const PIXELS = 67; // odd, so SIMD tails are exercised
const GRAPHS = Number(process.env.XEO_DIFF_GRAPHS ?? 2000);
// Tier 1 compiles a WebAssembly module per graph (16 ms each here): 1,000 keep `npm test` within its
// 15 minutes; XEO_DIFF_TIER1=5000 for a longer hunt.
const TIER1_GRAPHS = Number(process.env.XEO_DIFF_TIER1 ?? 1000);

function cubeOf(shape: Shape, rng: Rng): DataCube {
  const n = shape.kind === 'value' ? 1 : shape.n;
  const data = new Float32Array(n * PIXELS);
  for (let k = 0; k < n; k++) data.set(inputValues(rng, PIXELS), k * PIXELS);
  return new DataCube({
    dims: [
      { name: 'bands', type: 'bands', labels: Array.from({ length: n }, (_, i) => `L${i}`) },
      { name: 'p', type: 'other', labels: Array.from({ length: PIXELS }, (_, i) => i) },
    ],
    data,
  });
}

function rootGraph(shape: Shape, child: Record<string, unknown>) {
  return shape.kind === 'value'
    ? { a: { process_id: 'apply', arguments: { data: { from_parameter: 'cube' }, process: { process_graph: child } }, result: true } }
    : { a: { process_id: 'reduce_dimension', arguments: { data: { from_parameter: 'cube' }, dimension: 'bands', reducer: { process_graph: child } }, result: true } };
}

async function runWith(kernels: 'off' | 0 | 1, shape: Shape, child: Record<string, unknown>, cube: DataCube): Promise<Float32Array | string> {
  const { env, run } = engineEnv();
  run.kernels = kernels;
  run.engine = { ...run.engine, tier1 };
  try {
    const out = (await evaluateGraph(rootGraph(shape, child), env, rootScope({ cube }))) as DataCube;
    return out.data;
  } catch (e) {
    return `error ${(e as { code?: string }).code ?? (e as Error).message}`;
  }
}

/** float32 agreement: both NaN, equal, or close relative to the magnitudes involved. */
function agree(a: number, b: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  if (a === b) return true;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  return Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(a), Math.abs(b));
}

function compare(ref: Float32Array | string, got: Float32Array | string): string | null {
  if (typeof ref === 'string' || typeof got === 'string') return ref === got || typeof ref === 'string' ? null : `reference ${ref}, kernel ${got}`;
  for (let i = 0; i < ref.length; i++) if (!agree(ref[i], got[i])) return `pixel ${i}: reference ${ref[i]}, kernel ${got[i]}`;
  return null;
}

interface Case {
  shape: Shape;
  child: Record<string, any>;
  seed: number;
}

function cases(count: number, seed: number): Case[] {
  const rng = new Rng(seed);
  return Array.from({ length: count }, (_, i) => {
    const shape: Shape = rng.next() < 0.5 ? { kind: 'value' } : { kind: 'array', n: 1 + rng.int(12) };
    return { shape, child: randomChild(rng, shape), seed: seed * 100003 + i };
  });
}

/** Disagreements found by this suite, fixed and kept (the fix is in the comment above each). */
const REGRESSIONS: Case[] = [
  // a boolean from a constant part compared with pixels (neq(-2.5, 2.5) = true; eq(n, true))
  {
    shape: { kind: 'array', n: 1 },
    child: {
      n0: { process_id: 'product', arguments: { data: { from_parameter: 'data' } } },
      n1: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: 0 } },
      n2: { process_id: 'eq', arguments: { x: { from_node: 'n0' }, y: { from_node: 'n1' } } },
      n3: { process_id: 'neq', arguments: { x: -2.5, y: 2.5 } },
      n4: { process_id: 'eq', arguments: { x: { from_node: 'n2' }, y: { from_node: 'n3' } } },
      n5: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: 0 } },
      n6: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: 0 } },
      n7: { process_id: 'if', arguments: { value: -0.5, accept: { from_node: 'n5' }, reject: { from_node: 'n6' } } },
      n8: { process_id: 'tanh', arguments: { x: { from_node: 'n7' } } },
      n9: { process_id: 'mod', arguments: { x: { from_node: 'n4' }, y: { from_node: 'n8' } } },
      n10: { process_id: 'clip', arguments: { x: 0.5, min: 8, max: 9 } },
      n11: { process_id: 'linear_scale_range', arguments: { x: { from_node: 'n10' }, inputMin: -1, inputMax: 34, outputMin: 0, outputMax: 255 } },
      n12: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: 0 } },
      n13: { process_id: 'max', arguments: { data: { from_parameter: 'data' } } },
      n14: { process_id: 'and', arguments: { x: { from_node: 'n12' }, y: { from_node: 'n13' } } },
      n15: { process_id: 'divide', arguments: { x: { from_node: 'n11' }, y: { from_node: 'n14' } } },
      n16: { process_id: 'power', arguments: { base: { from_node: 'n9' }, p: { from_node: 'n15' } }, result: true },
    },
    seed: 100043,
  },
  // is_nan of a constant compared with a comparison of pixels
  {
    shape: { kind: 'value' },
    child: {
      n3: { process_id: 'log', arguments: { x: 1.5, base: 0 } },
      n4: { process_id: 'is_nan', arguments: { x: { from_node: 'n3' } } },
      n5: { process_id: 'gt', arguments: { x: { from_parameter: 'x' }, y: { from_node: 'n4' } }, result: true },
    },
    seed: 100659,
  },
  // a constant part that is NaN in plain JS (no-data only among pixels)
  { shape: { kind: 'value' }, child: { a: { process_id: 'arcsin', arguments: { x: -1e38 } }, n: { process_id: 'is_nodata', arguments: { x: { from_node: 'a' } }, result: true } }, seed: 7 },
  // is_infinite of no-data is 0
  { shape: { kind: 'value' }, child: { i: { process_id: 'is_infinite', arguments: { x: { from_parameter: 'x' } }, result: true } }, seed: 11 },
  // power with no-data operands is no-data (wasm pow(NaN, 0) would be 1)
  {
    shape: { kind: 'array', n: 2 },
    child: {
      a: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: 0 } },
      b: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: 1 } },
      p: { process_id: 'power', arguments: { base: { from_node: 'a' }, p: { from_node: 'b' } }, result: true },
    },
    seed: 13,
  },
  // a constant near the float32 limit used with pixels is float32 (-1e38 minus a pixel)
  { shape: { kind: 'value' }, child: { s: { process_id: 'subtract', arguments: { x: -1e38, y: { from_parameter: 'x' } }, result: true } }, seed: 17 },
];

/** A tier 1 that holds every compiled case in memory (an engine's holds 256), given to the runs' engine. */
const tier1 = createTier1({ cacheDir: tempDir('xeo-tier1-'), maxEntries: 4096 });

/** Compiles the fused programs of all cases at once: one compile keeps the tests fast; each program is still its own function. */
function compileAll(list: { child: Record<string, any>; shape: Shape }[]): Promise<unknown> {
  return compileMany(
    list
      .map(
        (c) =>
          fuseChild(c.child, c.shape.kind === 'value' ? { kind: 'value', param: 'x' } : { kind: 'array', param: 'data', labels: Array.from({ length: c.shape.n }, (_, i) => `L${i}`) }, {
            outer: () => undefined,
            shadowed: () => false,
            predefined: (id: string) => predefined.get(id),
          }).fused?.program,
      )
      .filter((p) => p !== undefined),
    tier1,
  );
}

describe('kernels agree with the JS engine', () => {
  it(`fuses the generated graphs (most of them)`, () => {
    let fused = 0;
    for (const c of cases(GRAPHS, 1)) {
      const shape = c.shape.kind === 'value' ? { kind: 'value' as const, param: 'x' } : { kind: 'array' as const, param: 'data', labels: Array.from({ length: c.shape.n }, (_, i) => `L${i}`) };
      if (fuseChild(c.child, shape, { outer: () => undefined, shadowed: () => false, predefined: (id: string) => predefined.get(id) }).fused) fused++;
    }
    expect(fused / GRAPHS).toBeGreaterThan(0.9);
  });

  it(`tier 0 on ${GRAPHS} random graphs and the regression cases`, async () => {
    const failures: string[] = [];
    for (const c of [...REGRESSIONS, ...cases(GRAPHS, 1)]) {
      const ref = await runWith('off', c.shape, c.child, cubeOf(c.shape, new Rng(c.seed)));
      const got = await runWith(0, c.shape, c.child, cubeOf(c.shape, new Rng(c.seed)));
      const d = compare(ref, got);
      if (d) failures.push(`${d}\n  ${JSON.stringify(c)}`);
    }
    expect(failures.slice(0, 5).join('\n'), `${failures.length} disagreements`).toBe('');
  }, 300_000);

  it(`tier 1 on ${TIER1_GRAPHS} random graphs and the regression cases`, async () => {
    const list = [...REGRESSIONS, ...cases(TIER1_GRAPHS, 2)];
    await compileAll(list);
    const failures: string[] = [];
    for (const c of list) {
      const ref = await runWith('off', c.shape, c.child, cubeOf(c.shape, new Rng(c.seed)));
      const got = await runWith(1, c.shape, c.child, cubeOf(c.shape, new Rng(c.seed)));
      const d = compare(ref, got);
      if (d) failures.push(`${d}\n  ${JSON.stringify(c)}`);
    }
    expect(failures.slice(0, 5).join('\n'), `${failures.length} disagreements`).toBe('');
  }, 600_000);

  it('on the arena: cubes in kernel memory, one scope per graph (some failing), growth and recycling between them', async () => {
    const list = [...REGRESSIONS, ...cases(400, 3)];
    await compileAll(list);
    const failures: string[] = [];
    const g0 = arenaStats().generation;
    // Small enough that a scope which grew the memory gives it back when it ends.
    const small = { keepBytes: 256 * 1024 };
    for (const [i, c] of list.entries()) {
      const ref = await runWith('off', c.shape, c.child, cubeOf(c.shape, new Rng(c.seed)));
      for (const tier of [0, 1] as const) {
        const got = await withArena(async () => {
          const heap = cubeOf(c.shape, new Rng(c.seed));
          const data = plane(heap.data.length);
          data.set(heap.data);
          // Every few graphs, a large plane grows the memory in the middle of the request.
          if (i % 7 === 0) plane(200_000).fill(-1);
          const out = await runWith(tier, c.shape, c.child, heap.with({ data }));
          return typeof out === 'string' ? out : Float32Array.from(out); // the answer outlives the scope
        }, small);
        const d = compare(ref, got);
        if (d) failures.push(`tier ${tier}: ${d}\n  ${JSON.stringify(c)}`);
      }
    }
    expect(failures.slice(0, 5).join('\n'), `${failures.length} disagreements`).toBe('');
    expect(arenaStats().generation).toBeGreaterThan(g0);
    expect(arenaStats().activeScopes).toBe(0);
  }, 300_000);
});
