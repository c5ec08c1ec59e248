// The kernels against their baselines, in one run: NDVI and EVI over 4096² pixels, the median and
// mean of 12 dates over 2048² pixels. Each workload runs through the engine's JS path (the scalar
// processes lifted over pixels: the reference evaluator), tier 0 (the wasm block VM), tier 1 (the
// compiled module), plain C from gcc -O3 (scalar, built by this bench when gcc exists) and a memcpy
// of the same bytes (inputs in, result out). Tier 1 is timed twice: through the engine (copies into
// and out of kernel memory included) and as the compiled kernel alone on data already in kernel
// memory, the way C is timed. Also the first compile of a new program and a cache lookup.
// The engine runs in an arena scope on a cube whose planes are in kernel memory, as a load leaves
// them (blocks are decoded into the arena): placing the inputs there is the load's work, not timed
// here; the result plane is allocated in the arena per run and freed with the run's scope.
// Tier 1 through the engine is timed once more with the kernel helper threads of a server thread
// (one per further core, as XEO_KERNEL_THREADS = cores - 1 gives), which share a run by bands of rows
// (figures *_threads_*); the other figures are of one thread, as C is.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { evaluateGraph, rootScope } from '../src/graph/evaluate.js';
import { DataCube } from '../src/datacube/datacube.js';
import { fuseChild } from '../src/compile/fuse.js';
import { createEngine, type Engine } from '../src/engine/engine.js';
import { createTier1, compileNow } from '../src/compile/tier1.js';
import { programHash, type Program } from '../src/compile/program.js';
import { alloc, f32, mark, plane, release, u32, withArena } from '../src/wasm/kernels.js';
import { KernelHelpers } from '../src/compile/kernel-threads.js';
import os from 'node:os';
import type { CompiledKernel } from '../src/compile/executor.js';
import { predefined } from '../src/processes/registry.js';
import type { RunContext } from '../src/core/run-context.js';
import { Cleanup, median, round, table, tempDir, removeDir } from './lib.js';
import type { BenchOptions, BenchResult } from './run.js';

interface Workload {
  name: string;
  side: number;
  inputs: number;
  child: Record<string, unknown>;
  c: string;
}

const el = (i: number) => ({ process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: i } });
const reducer = (id: string) => ({ r: { process_id: id, arguments: { data: { from_parameter: 'data' } }, result: true } });

const WORKLOADS: Workload[] = [
  {
    name: 'ndvi',
    side: 4096,
    inputs: 2,
    child: { n: el(0), r: el(1), d: { process_id: 'normalized_difference', arguments: { x: { from_node: 'n' }, y: { from_node: 'r' } }, result: true } },
    c: 'for (long i = 0; i < n; i++) { float a = in[0][i], b = in[1][i]; out[i] = (a - b) / (a + b); }',
  },
  {
    name: 'evi',
    side: 4096,
    inputs: 3,
    child: {
      n: el(0),
      r: el(1),
      b: el(2),
      d: { process_id: 'subtract', arguments: { x: { from_node: 'n' }, y: { from_node: 'r' } } },
      r6: { process_id: 'multiply', arguments: { x: { from_node: 'r' }, y: 6 } },
      b7: { process_id: 'multiply', arguments: { x: { from_node: 'b' }, y: 7.5 } },
      s1: { process_id: 'add', arguments: { x: { from_node: 'n' }, y: { from_node: 'r6' } } },
      s2: { process_id: 'subtract', arguments: { x: { from_node: 's1' }, y: { from_node: 'b7' } } },
      s3: { process_id: 'add', arguments: { x: { from_node: 's2' }, y: 1 } },
      q: { process_id: 'divide', arguments: { x: { from_node: 'd' }, y: { from_node: 's3' } } },
      e: { process_id: 'multiply', arguments: { x: { from_node: 'q' }, y: 2.5 }, result: true },
    },
    c: 'for (long i = 0; i < n; i++) { float a = in[0][i], b = in[1][i], c = in[2][i]; out[i] = 2.5f * ((a - b) / (a + 6.0f * b - 7.5f * c + 1.0f)); }',
  },
  {
    name: 'median12',
    side: 2048,
    inputs: 12,
    child: reducer('median'),
    c: `for (long i = 0; i < n; i++) {
      float v[12]; int m = 0;
      for (int k = 0; k < 12; k++) { float x = in[k][i]; if (x == x) { int j = m++; while (j > 0 && v[j - 1] > x) { v[j] = v[j - 1]; j--; } v[j] = x; } }
      out[i] = m == 0 ? NAN : (m & 1) ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) * 0.5f;
    }`,
  },
  {
    name: 'mean12',
    side: 2048,
    inputs: 12,
    child: reducer('mean'),
    c: `for (long i = 0; i < n; i++) {
      float s = 0; int m = 0;
      for (int k = 0; k < 12; k++) { float x = in[k][i]; if (x == x) { s += x; m++; } }
      out[i] = m ? s / m : NAN;
    }`,
  },
];

/** Reflectance-like inputs with 2% no-data. */
function inputs(count: number, pixels: number): Float32Array {
  const a = new Float32Array(count * pixels);
  let s = 12345;
  for (let i = 0; i < a.length; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    a[i] = s % 50 === 0 ? NaN : 200 + ((s >>> 8) % 5000);
  }
  return a;
}

function cubeOf(w: Workload, data: Float32Array): DataCube {
  const pixels = w.side * w.side;
  return new DataCube({
    dims: [
      { name: 'bands', type: 'bands', labels: Array.from({ length: w.inputs }, (_, i) => `b${i}`) },
      { name: 'y', type: 'other', labels: Array.from({ length: w.side }, (_, i) => i) },
      { name: 'x', type: 'other', labels: Array.from({ length: pixels / w.side }, (_, i) => i) },
    ],
    data,
  });
}

async function timeEngine(engine: Engine, w: Workload, cube: DataCube, kernels: 'off' | 0 | 1): Promise<number> {
  const run: RunContext = { engine, catalog: { collections: { get: async () => null, items: async () => [] } }, maxValues: Infinity, limitAdvice: '', results: [], log: () => {}, stats: { values: 0 }, kernels };
  const graph = { a: { process_id: 'reduce_dimension', arguments: { data: { from_parameter: 'cube' }, dimension: 'bands', reducer: { process_graph: w.child } }, result: true } };
  // One arena scope per run, as execute() opens per request: its result plane is freed at the end.
  return withArena(async () => {
    const t0 = performance.now();
    await evaluateGraph(graph, { predefined: (id) => predefined.get(id), userProcess: () => null, run }, rootScope({ cube }));
    return performance.now() - t0;
  });
}

/** Copying the inputs in and the result out once, into buffers allocated (and touched) beforehand. */
/** The compiled kernel alone, on inputs already in kernel memory (what C is measured on). */
function kernelOnlyMs(k: CompiledKernel, data: Float32Array, inputs: number, pixels: number, rounds: number): number {
  const m = mark();
  try {
    const ptrs = Array.from({ length: inputs }, () => alloc(pixels * 4 + 16));
    const out = alloc(pixels * 4 + 16);
    const table = alloc(inputs * 4);
    ptrs.forEach((p, i) => f32(p, pixels).set(data.subarray(i * pixels, (i + 1) * pixels)));
    u32(table, inputs).set(ptrs);
    f32(out, pixels).fill(0);
    const times: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const t0 = performance.now();
      k.run(table, out, pixels);
      times.push(performance.now() - t0);
    }
    return median(times);
  } finally {
    release(m);
  }
}

function memcpyMs(data: Float32Array, pixels: number, dst: Float32Array, out: Float32Array): number {
  const t0 = performance.now();
  dst.set(data);
  out.set(dst.subarray(0, pixels));
  return performance.now() - t0;
}

/** Builds and runs the C reference; null without gcc. */
function cTimes(dir: string, rounds: number): Record<string, number> | null {
  if (spawnSync('gcc', ['--version']).status !== 0) return null;
  const fns = WORKLOADS.map((w) => `static void k_${w.name}(float **in, float *out, long n) { ${w.c} }`).join('\n');
  const calls = WORKLOADS.map(
    (w) => `{ long n = ${w.side}L * ${w.side}L; float *in[${w.inputs}]; for (int k = 0; k < ${w.inputs}; k++) { in[k] = malloc(n * 4); fill(in[k], n, k); }
      float *out = malloc(n * 4); double best[${rounds}];
      for (int r = 0; r < ${rounds}; r++) { double t0 = now(); k_${w.name}(in, out, n); best[r] = now() - t0; }
      double s = 0; for (long i = 0; i < n; i += 4099) s += out[i] == out[i] ? out[i] : 0;
      qsort(best, ${rounds}, sizeof(double), cmp); printf("${w.name} %f %f\\n", best[${rounds} / 2], s);
      for (int k = 0; k < ${w.inputs}; k++) free(in[k]); free(out); }`,
  );
  const src = `#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
static void fill(float *a, long n, int k) { unsigned s = 12345 + k; for (long i = 0; i < n; i++) { s = s * 1103515245u + 12345u; a[i] = s % 50 == 0 ? NAN : 200 + (s >> 8) % 5000; } }
${fns}
int main(void) {
${calls.join('\n')}
  return 0;
}
`;
  const file = path.join(dir, 'kernels.c');
  const exe = path.join(dir, 'kernels-c');
  writeFileSync(file, src);
  // Scalar C: -O3 without the auto-vectorizer, the baseline the goal names.
  const cc = spawnSync('gcc', ['-O3', '-fno-tree-vectorize', '-o', exe, file, '-lm'], { encoding: 'utf8' });
  if (cc.status !== 0) throw new Error(`gcc failed: ${cc.stderr}`);
  const out = spawnSync(exe, [], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`C reference failed: ${out.stderr}`);
  const times: Record<string, number> = {};
  for (const line of out.stdout.trim().split('\n')) {
    const [name, ms] = line.split(' ');
    times[name] = Number(ms);
  }
  return times;
}

export async function run(opts: BenchOptions): Promise<BenchResult> {
  const cleanup = new Cleanup();
  const dir = tempDir();
  cleanup.add(() => removeDir(dir));
  try {
    const rounds = opts.quick ? 3 : 7;
    // An engine as a compute thread builds it (no records are read: the graphs load nothing).
    const engine = createEngine({ dataDir: dir, databaseUrl: null, blockCacheBytes: 64 << 20, outboundAllow: '' });
    const rows: (string | number)[][] = [['workload', 'pixels', 'JS ms', 'tier 0 ms', 'tier 1 ms', 'tier 1 kernel only ms', 'C -O3 ms', 'memcpy ms']];
    const figures: Record<string, number> = {};
    const speed = { js: 0, t0: 0, t1: 0, c: 0, memcpy: 0, kernel: 0 };
    const c = cTimes(dir, rounds);
    let coldMs = 0;
    for (const w of WORKLOADS)
      await withArena(async () => {
        const pixels = w.side * w.side;
        const data = inputs(w.inputs, pixels);
        // The engine's cube in kernel memory (see the header); the JS path reads the same planes.
        const arenaData = plane(data.length);
        arenaData.set(data);
        const cube = cubeOf(w, arenaData);
        const shape = { kind: 'array' as const, param: 'data', labels: Array.from({ length: w.inputs }, (_, i) => `b${i}`) };
        const program: Program = fuseChild(w.child, shape, { outer: () => undefined, shadowed: () => false, predefined: (id: string) => predefined.get(id) }).fused!.program;
        const t0c = performance.now();
        const compiled = await compileNow(program);
        coldMs = Math.max(coldMs, performance.now() - t0c);
        const js: number[] = [];
        const t0: number[] = [];
        const t1: number[] = [];
        const mc: number[] = [];
        const dst = new Float32Array(data.length).fill(1);
        const outBuf = new Float32Array(pixels).fill(1);
        // The JS path is slow: fewer rounds keep the bench short.
        for (let r = 0; r < Math.max(1, Math.ceil(rounds / 3)); r++) js.push(await timeEngine(engine, w, cube, 'off'));
        for (let r = 0; r < rounds; r++) {
          t0.push(await timeEngine(engine, w, cube, 0));
          t1.push(await timeEngine(engine, w, cube, 1));
          mc.push(memcpyMs(data, pixels, dst, outBuf));
        }
        // Tier 1 through the engine with the kernel helper threads a server thread has (bands of rows).
        const helpers = Math.max(0, Math.min(7, os.availableParallelism() - 1));
        const tt: number[] = [];
        if (helpers > 0) {
          const split = { ...engine, kernelHelpers: new KernelHelpers(helpers) };
          for (let r = 0; r < rounds; r++) tt.push(await timeEngine(split, w, cube, 1));
          split.kernelHelpers.stop();
        }
        const row = { js: median(js), t0: median(t0), t1: median(t1), c: c?.[w.name] ?? NaN, memcpy: median(mc), kernel: kernelOnlyMs(compiled, data, w.inputs, pixels, rounds) };
        if (helpers > 0) {
          figures[`${w.name}_tier1_threads_ms`] = round(median(tt), 1);
          if (c) figures[`${w.name}_threads_wasm_over_c`] = round(row.c / median(tt), 2);
        }
        rows.push([w.name, pixels, round(row.js), round(row.t0, 1), round(row.t1, 1), round(row.kernel, 1), round(row.c, 1), round(row.memcpy, 1)]);
        figures[`${w.name}_tier1_mpx_per_s`] = round(pixels / row.t1 / 1000, 1);
        if (c) figures[`${w.name}_wasm_over_c`] = round(row.c / row.t1, 2);
        if (c) figures[`${w.name}_kernel_over_c`] = round(row.c / row.kernel, 2);
        // Ratios over all workloads: sums of times, so the slowest workloads weigh the most.
        speed.js += row.js;
        speed.t0 += row.t0;
        speed.t1 += row.t1;
        speed.c += row.c;
        speed.memcpy += row.memcpy;
        speed.kernel += row.kernel;
      });
    // Warm: the cache lookup of a compiled program (hash + LRU).
    const program = fuseChild(WORKLOADS[0].child, { kind: 'array', param: 'data', labels: ['b0', 'b1'] }, { outer: () => undefined, shadowed: () => false, predefined: (id: string) => predefined.get(id) })
      .fused!.program;
    const tier1 = createTier1({ cacheDir: path.join(dir, 'kernels'), maxEntries: 64 });
    tier1.lookup(programHash(program));
    const lookups = 2000;
    const tw = performance.now();
    for (let i = 0; i < lookups; i++) tier1.lookup(programHash(program));
    const warmMs = (performance.now() - tw) / lookups;
    // Cold: a program never seen before (a new constant), compiled from scratch.
    const fresh: Program = {
      inputs: 1,
      code: [
        { op: 'const', value: Math.random() },
        { op: 'add', a: 0, b: 1 },
      ],
      output: 2,
    };
    const tc = performance.now();
    await compileNow(fresh);
    const freshMs = performance.now() - tc;
    engine.kernelHelpers.stop();
    console.log(table(rows));
    figures.compile_cold_ms = round(freshMs, 1);
    figures.compile_cold_max_workload_ms = round(coldMs, 1);
    figures.compile_warm_ms = round(warmMs, 4);
    return {
      figures,
      ratios: {
        wasm_over_js: round(speed.js / speed.t1, 2),
        wasm_over_c: c ? round(speed.c / speed.t1, 2) : NaN,
        tier0_over_js: round(speed.js / speed.t0, 2),
        wasm_over_memcpy: round(speed.memcpy / speed.t1, 3),
        kernel_over_c: c ? round(speed.c / speed.kernel, 2) : NaN,
      },
    };
  } finally {
    await cleanup.run();
  }
}
