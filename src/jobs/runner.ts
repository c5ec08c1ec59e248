// Runs one batch job to its files, on the engine /result and tiles use (execute()). First a dry
// run finds the output grid without reading pixels; a graph whose processes are all pixel-wise is
// then cut into square chunks of that grid, each run with every load filling just the chunk and
// written into a streamed COG, so memory stays that of one chunk whatever the job's size. Any
// other graph runs as one piece (under the batch limit) and is written by the usual encoders.
// Knows nothing of threads or the database: it reports through a sink.
import { jobChunksDone } from '../core/metrics.js';
import { readFileSync } from 'node:fs';
import { execute, type ExecuteResult } from '../engine/execute.js';
import { modelOutputs } from './model-outputs.js';
import { arenaStats, withArena } from '../wasm/kernels.js';
import { calledProcess, type UserProcess } from '../core/graph.js';
import type { Engine } from '../engine/engine.js';
import type { Graph } from '../core/graph.js';
import type { LogLevel } from '../core/run-context.js';
import type { Grid } from '../core/grid.js';
import { predefined } from '../processes/registry.js';
import { ApiError } from '../core/errors.js';
import { CogStreamWriter } from '../output/cog-stream.js';
import { chunkWindows, classifyGraph, savedFormats, windowGrid, type Window } from './chunking.js';
import { bytesOutput, cogSink, footprint, type CogSink, type OutputFile } from './outputs.js';
import { groupGeometries, zonalCell, zonalFrontierBytes, zonalShape, type ZonalGroup } from './zonal-plan.js';
import type { DataCube } from '../datacube/datacube.js';
import { joinVectorParts } from '../datacube/vector-blob.js';
import { featuresBox } from '../datacube/geometry.js';
import { encodeResult } from '../output/encode.js';
import { OUTPUT_FORMATS, outputFormat } from '../output/formats.js';
import { BlockCache } from '../data/cog-reader.js';

/** Output format names by lower-case name and alias. */
const OUTPUT_NAMES = new Map<string, string>([...OUTPUT_FORMATS.map((f) => [f.name.toLowerCase(), f.name] as [string, string]), ['geoparquet', 'Parquet'], ['nc', 'netCDF']]);
import type { Usage } from '../store/types.js';

export interface JobSpec {
  jobId: string;
  run: number;
  graph: Graph;
  userProcesses: Record<string, UserProcess>;
  /** Most values one load may read (per chunk when chunked). */
  maxValues: number;
  /** Wanted chunk side in pixels (rounded up to the COG writer's alignment). */
  chunkSize: number;
  /** Raster values the job's budget pays for; null = no limit. */
  budgetValues: number | null;
  /** A fresh folder for this run's files. */
  outDir: string;
  /** The job's owner: whose files load_uploaded_files reads; their user-defined functions run in their own interpreters. */
  user: string;
  /** Milliseconds one call of a user-defined function may take (the job's udf_timeout option). */
  udfTimeoutMs: number;
  /** The block cache of the thread while it runs a zonal job's chunks (XEO_ZONAL_BLOCK_CACHE_BYTES); as configured when absent. */
  zonalBlockCacheBytes?: number;
}

export interface RunLog {
  level: LogLevel;
  message: string;
  code?: string;
  data?: unknown;
  /** Where in the user's own code (a UDF's traceback). */
  stacktrace?: string;
}

export interface JobSink {
  log(entry: RunLog): void;
  /** `done` of `total` chunks are written; `values` raster values read so far. */
  progress(done: number, total: number, values: number): void;
  /** The computation stopped after a stop request, with `done` chunks written (what follows only finishes files). */
  halted(done: number): void;
}

export interface JobOutcome {
  outputs: OutputFile[];
  /** Stopped early: the outputs hold what was done, no-data elsewhere. */
  partial: boolean;
  bbox: [number, number, number, number] | null;
  geometry: unknown;
  times: string[];
  usage: Usage;
}

/** The reason a run is aborted with: a cancel keeps what is done, a delete or shutdown does not. */
export class JobStopped extends Error {
  constructor(readonly keepPartial: boolean) {
    super(keepPartial ? 'the job was canceled' : 'the job was stopped');
  }
}

const LIMIT_ADVICE = 'Narrow the extent, dates or bands of the job (for pixel-wise graphs the limit holds per output chunk).';

/** CPU seconds of the calling thread (Linux); compression in the shared zlib pool is not included. */
export function threadCpuSeconds(): number {
  try {
    const f = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  }
}

/** A job cut into chunks of its output grid: what every chunk, and the assembly, need to know. */
export interface ChunkPlan {
  grid: Grid;
  /** Chunk side in pixels (aligned for the COG writer). */
  size: number;
  /** Number of chunks (windows of `grid`, row by row). */
  count: number;
  times: string[];
  bbox: [number, number, number, number] | null;
  geometry: unknown;
  /** The save_result options (tile size, overview resampling). */
  options: Record<string, unknown>;
  /**
   * A zonal job (zonal-plan.ts): chunk i computes the geometries of group i in its window, and the
   * parts are joined and written in `format`. Absent for raster jobs (square windows of a COG).
   */
  zonal?: { groups: ZonalGroup[]; format: string; planes: number };
}

/** After the dry run: the job is done already (it ran as one piece), or runs in chunks. */
export type JobPlan = { kind: 'done'; outcome: JobOutcome } | { kind: 'chunked'; chunks: ChunkPlan };

/** The windows of a chunk plan, in chunk order. */
export const planWindows = (plan: ChunkPlan): Window[] => (plan.zonal ? plan.zonal.groups.map((g) => g.window) : chunkWindows(plan.grid.width, plan.grid.height, plan.size));

/** Chunks of a zonal job the embedded runner computes at once. */
const ZONAL_CHUNKS_AT_ONCE = 2;

/** Formats a zonal job's joined parts can be written in. */
const VECTOR_FORMATS = new Set(['CSV', 'GeoJSON', 'Parquet', 'netCDF', 'JSON']);

/** The file of a zonal job: its parts joined in geometry order, encoded in the saved format. */
export async function writeZonal(dir: string, plan: ChunkPlan, parts: DataCube[], indices: number[]): Promise<OutputFile> {
  const z = plan.zonal!;
  const cube = joinVectorParts(
    parts,
    indices.map((i) => z.groups[i].members),
  );
  const enc = await encodeResult(cube, outputFormat(z.format, plan.options));
  return bytesOutput(dir, enc.body, enc.mediaType, enc.extension);
}

/** Measures a run: wall time since `started`, CPU of this thread since `cpu0`. */
export function usageOf(started: number, cpuSeconds: number, pixels: number, values: number): Usage {
  return {
    cpu: { value: round(cpuSeconds, 2), unit: 'cpu-seconds' },
    duration: { value: round((Date.now() - started) / 1000, 3), unit: 'seconds' },
    pixels: { value: pixels, unit: 'pixels' },
    values_read: { value: values, unit: 'values' },
  };
}

type Forward = (logs: { level: LogLevel; message: string; data?: unknown; stacktrace?: string }[], demote: boolean) => void;

export const forwarder =
  (sink: Pick<JobSink, 'log'>): Forward =>
  (logs, demote) => {
    for (const l of logs) sink.log({ level: demote ? 'debug' : l.level, message: l.message, ...(l.data === undefined ? {} : { data: l.data }), ...(l.stacktrace ? { stacktrace: l.stacktrace } : {}) });
  };

const baseOf = (spec: JobSpec) => ({
  graph: spec.graph,
  userProcesses: spec.userProcesses,
  maxValues: spec.maxValues,
  limitAdvice: LIMIT_ADVICE,
  mode: 'job' as const,
  user: spec.user,
  udfTimeoutMs: spec.udfTimeoutMs,
});

export async function runJob(spec: JobSpec, engine: Engine, sink: JobSink, signal: AbortSignal): Promise<JobOutcome> {
  const started = Date.now();
  const cpu0 = threadCpuSeconds();
  const plan = await planJob(spec, engine, sink, signal, started);
  if (plan.kind === 'done') return plan.outcome;
  return runChunked(spec, plan.chunks, engine, sink, signal, (outputs, partial, values) => ({
    outputs,
    partial,
    bbox: plan.chunks.bbox,
    geometry: plan.chunks.geometry,
    times: plan.chunks.times,
    usage: usageOf(started, threadCpuSeconds() - cpu0, plan.chunks.grid.width * plan.chunks.grid.height, values),
  }));
}

/**
 * The dry run finds the output grid; a graph whose processes are all pixel-wise and that saves
 * one GTiff is then planned in chunks, any other runs here as one piece (its outcome returned).
 */
export async function planJob(spec: JobSpec, engine: Engine, sink: JobSink, signal: AbortSignal, started = Date.now()): Promise<JobPlan> {
  const cpu0 = threadCpuSeconds();
  const base = baseOf(spec);
  const forward = forwarder(sink);
  const usage = (pixels: number, values: number) => usageOf(started, threadCpuSeconds() - cpu0, pixels, values);

  const dry = await execute({ ...base, answer: { kind: 'plan' }, budgetValues: spec.budgetValues ?? undefined }, engine, signal);
  if (dry.kind !== 'plan') {
    // Nothing to load: the dry run was the whole run, and its answer is the result.
    forward(dry.logs, false);
    const outputs = await withModels(spec, dry, () => bytesOutput(spec.outDir, dry.body, dry.mediaType, dry.extension));
    sink.progress(1, 1, 0);
    return { kind: 'done', outcome: { outputs, partial: false, bbox: null, geometry: null, times: [], usage: usage(0, 0) } };
  }
  const plan = dry.plan;
  const verdict = classifyGraph(spec.graph, {
    categories: (id) => predefined.get(id)?.spec.categories,
    userProcess: (id, ns) => calledProcess(spec.userProcesses, id, ns)?.process_graph ?? null,
  });
  const formats = savedFormats(spec.graph);
  const cog = formats.length === 1 && formats[0]?.toLowerCase() === 'gtiff';
  const g = plan.grid;
  sink.log({
    level: 'info',
    message: `The output grid is ${g.width} x ${g.height} pixels in EPSG:${g.epsg} at ${round(Math.abs(g.transform[1]), 6)} units per pixel; ${plan.times.length} dates and ${plan.bands.length} bands of ${plan.collection} are read.`,
  });
  const place = footprint(g);
  const finish = (outputs: OutputFile[], pixels: number, values: number): JobPlan => ({
    kind: 'done',
    outcome: { outputs, partial: false, ...place, times: plan.times, usage: usage(pixels, values) },
  });

  // A zonal job: chunks by groups of geometries.
  const zonal = verdict.local && cog ? null : zonalShape(spec.graph, { categories: (id) => predefined.get(id)?.spec.categories, userProcess: (id) => spec.userProcesses[id]?.process_graph ?? null });
  const format = formats.length === 1 ? formats[0] : formats.length === 0 ? 'JSON' : null;
  const vectorFormat = format ? OUTPUT_NAMES.get(format.toLowerCase()) : undefined;
  if (zonal && vectorFormat && VECTOR_FORMATS.has(vectorFormat)) {
    const geo = await execute({ ...base, graph: zonal.geometries, answer: { kind: 'kept' } }, engine, signal);
    const features = geo.kept?.features;
    if (features) {
      const planes = plan.times.length * plan.bands.length;
      const cell = zonalCell(spec.chunkSize, planes);
      const groups = groupGeometries(features, g, cell);
      const box = featuresBox(features, 4326);
      const place4326 = box.every(Number.isFinite)
        ? {
            bbox: box.map((v) => Math.round(v * 1e7) / 1e7) as [number, number, number, number],
            geometry: {
              type: 'Polygon',
              coordinates: [
                [
                  [box[0], box[1]],
                  [box[2], box[1]],
                  [box[2], box[3]],
                  [box[0], box[3]],
                  [box[0], box[1]],
                ],
              ],
            },
          }
        : place;
      sink.log({
        level: 'info',
        message: `The job aggregates ${features.length} geometries: it runs as ${groups.length} chunk${groups.length === 1 ? '' : 's'}, each the geometries of one ${cell} x ${cell} pixel cell of the output grid, read only around them.`,
      });
      return { kind: 'chunked', chunks: { grid: g, size: cell, count: groups.length, times: plan.times, ...place4326, options: savedOptions(spec.graph), zonal: { groups, format: vectorFormat, planes } } };
    }
  }

  if (verdict.local && cog) {
    const options = savedOptions(spec.graph);
    const size = alignedChunk(spec.chunkSize, options);
    const count = chunkWindows(g.width, g.height, size).length;
    sink.log({ level: 'info', message: `Every process is pixel-wise: the job runs as ${count} chunk${count === 1 ? '' : 's'} of up to ${size} x ${size} pixels.` });
    return { kind: 'chunked', chunks: { grid: g, size, count, times: plan.times, ...place, options } };
  }

  sink.log({
    level: 'info',
    message: verdict.local
      ? `The job runs as one piece: ${formats.length === 0 ? 'it has no save_result, so the result is JSON' : formats.length > 1 ? 'it saves more than one result' : `its format ${formats[0] ?? '(not a plain name)'} is written whole`}.`
      : `The job runs as one piece: ${verdict.reason}.`,
  });
  // One arena scope for the whole piece: the raw planes are written from kernel memory.
  return withArena(async () => {
    const out = await execute({ ...base, answer: { kind: cog ? 'planes' : 'encoded' }, budgetValues: spec.budgetValues ?? undefined }, engine, signal);
    forward(out.logs, false);
    if (out.kind === 'planes') {
      // A raster computed whole: written through the same COG writer, in chunk-sized windows.
      const { grid, planes, names, options } = out.raw;
      const writer = await cogSink(spec.outDir, 'result.tif', grid, names, options, engine.deflate);
      const windows = chunkWindows(grid.width, grid.height, alignedChunk(spec.chunkSize, options));
      try {
        for (const w of windows)
          await writer.write(
            w,
            planes.map((p) => cut(p, grid.width, w)),
          );
        const file = await writer.finish(windows);
        sink.progress(1, 1, out.values);
        const done = finish([file], grid.width * grid.height, out.values);
        if (done.kind === 'done') Object.assign(done.outcome, footprint(grid));
        return done;
      } catch (e) {
        // the error being thrown is the one to report; a failed abort only leaves a temporary file behind
        await writer.abort().catch(() => {});
        throw e;
      }
    }
    const outputs = await withModels(spec, out, () => bytesOutput(spec.outDir, out.body, out.mediaType, out.extension));
    sink.progress(1, 1, out.values);
    return finish(outputs, 0, out.values);
  }, engine.arena);
}

/**
 * What one chunk gave: its planes (kernel memory: valid only during `use`) and band names; for a
 * zonal job, its part of the vector cube.
 */
export type ChunkOutput = { kind: 'raster'; planes: Float32Array[]; names: string[] } | { kind: 'vector'; cube: DataCube };
export type ChunkUse = (out: ChunkOutput) => Promise<void>;

/** Where a job's chunks spent their time, in milliseconds summed over chunks (see timesNote). */
export interface ChunkTimes {
  read: number;
  warp: number;
  kernel: number;
  write: number;
}

/**
 * Computes chunk `index` of a plan, handing its planes to `use` inside the chunk's arena scope
 * (the planes are reused by the next chunk after it returns). Answers the raster values read.
 * `times`, when given, gathers where the chunk's time went.
 */
export async function computeChunk(
  spec: JobSpec,
  plan: ChunkPlan,
  index: number,
  budgetValues: number | null,
  engine: Engine,
  signal: AbortSignal,
  forward: Forward,
  use: ChunkUse,
  times?: ChunkTimes,
): Promise<number> {
  const w = planWindows(plan)[index];
  if (!w) throw new Error(`the job has no chunk ${index}`);
  const zonal = plan.zonal?.groups[index];
  return withArena(async () => {
    const r = await execute(
      {
        ...baseOf(spec),
        region: windowGrid(plan.grid, w),
        ...(zonal ? { zonal: { members: zonal.members }, answer: { kind: 'kept' } } : { answer: { kind: 'planes' } }),
        budgetValues: budgetValues ?? undefined,
      },
      engine,
      signal,
    );
    forward(r.logs, index > 0);
    if (times) {
      times.read += r.stages.read;
      times.warp += r.stages.warp;
      times.kernel += r.stages.kernel + r.stages.udf + r.stages.model;
    }
    const t0 = performance.now();
    if (zonal) {
      if (r.kind !== 'kept' || !r.kept) throw new ApiError('ProcessParameterInvalid', { process: 'save_result', parameter: 'data', reason: 'the saved data is not a vector data cube' });
      await use({ kind: 'vector', cube: r.kept });
    } else {
      if (r.kind !== 'planes') throw new ApiError('ProcessParameterInvalid', { process: 'save_result', parameter: 'data', reason: 'the saved data is not a raster data cube' });
      await use({ kind: 'raster', planes: r.raw.planes, names: r.raw.names });
    }
    if (times) times.write += performance.now() - t0;
    return r.values;
  }, engine.arena);
}

async function runChunked(
  spec: JobSpec,
  plan: ChunkPlan,
  engine: Engine,
  sink: JobSink,
  signal: AbortSignal,
  finish: (outputs: OutputFile[], partial: boolean, values: number) => JobOutcome,
): Promise<JobOutcome> {
  const windows = planWindows(plan);
  const forward = forwarder(sink);
  // Neighbouring groups of fields read the blocks along their common edges: with a cache that holds
  // the blocks of the rows of cells around the one under way, each block is decoded once. That
  // cache is the job's own: its runs carry it, and the thread's stays as it is.
  const wanted = plan.zonal && spec.zonalBlockCacheBytes ? Math.min(spec.zonalBlockCacheBytes, zonalFrontierBytes(plan.grid.width, plan.size, plan.zonal.planes)) : 0;
  const zonalBytes = wanted > engine.blocks.maxBytes ? wanted : null;
  const jobEngine = zonalBytes ? { ...engine, blocks: new BlockCache(zonalBytes, engine.blocks.inflater) } : engine;
  try {
    return await runChunks(spec, plan, windows, jobEngine, sink, signal, forward, finish);
  } finally {
    // the job's own blocks go back now, not when the idle thread next collects garbage
    if (jobEngine !== engine) jobEngine.blocks.clear();
  }
}

/**
 * Where the chunks' time went, for the job's log: reading (and decoding) the data, warping it,
 * the kernels and user code, and handing each chunk's result on (for a COG: its tiles, overviews
 * and the wait for compression). Wall time summed over chunks, so chunks that run at once count
 * twice.
 */
function timesNote(t: ChunkTimes, lanes: number): string {
  // To the millisecond: a stage served from the thread's caches (blocks read by an earlier job) still shows.
  const s = (ms: number) => `${(ms / 1000).toFixed(3)} s`;
  const overlap = lanes > 1 ? `, summed over ${lanes} chunks at a time` : '';
  return `Time in the chunks${overlap}: reading ${s(t.read)}, warping ${s(t.warp)}, computing ${s(t.kernel)}, writing the result ${s(t.write)}.`;
}

async function runChunks(
  spec: JobSpec,
  plan: ChunkPlan,
  windows: Window[],
  engine: Engine,
  sink: JobSink,
  signal: AbortSignal,
  forward: Forward,
  finish: (outputs: OutputFile[], partial: boolean, values: number) => JobOutcome,
): Promise<JobOutcome> {
  let out = null as CogSink | null;
  const parts: DataCube[] = [];
  const partIndices: number[] = [];
  let values = 0;
  let done = 0;
  let next = 0;
  // Raster chunks go one by one into the COG; a zonal job's parts in any order, so two chunks run
  // at once: one's blocks are read and inflated (in libuv's pool) while the other's are reduced.
  const lanes = plan.zonal ? ZONAL_CHUNKS_AT_ONCE : 1;
  const times: ChunkTimes = { read: 0, warp: 0, kernel: 0, write: 0 };
  let failed = false;
  const lane = async () => {
    for (let i = next++; i < windows.length && !failed; i = next++) {
      if (signal.aborted) throw signal.reason;
      const w = windows[i];
      const t0 = performance.now();
      // Each chunk's planes are written from kernel memory, then reused by the next chunk.
      values += await computeChunk(
        spec,
        plan,
        i,
        spec.budgetValues === null ? null : spec.budgetValues - values,
        engine,
        signal,
        forward,
        async (o) => {
          if (o.kind === 'vector') {
            parts.push(o.cube);
            partIndices.push(i);
            return;
          }
          out ??= await cogSink(spec.outDir, 'result.tif', plan.grid, o.names, plan.options, engine.deflate);
          await out.write(w, o.planes);
        },
        times,
      );
      done++;
      jobChunksDone.inc(0);
      sink.log({
        level: 'debug',
        message: `Chunk ${done} of ${windows.length} (${w.width} x ${w.height} px at column ${w.col}, row ${w.row}) took ${Math.round(performance.now() - t0)} ms; ${memoryNote(engine)}.`,
      });
      sink.progress(done, windows.length, values);
    }
  };
  try {
    const running = Array.from({ length: Math.min(lanes, windows.length) }, () =>
      lane().catch((e: unknown) => {
        failed = true;
        throw e;
      }),
    );
    // Every lane ends (a failure stops the others before their next chunk) before the outcome is decided.
    const settled = await Promise.allSettled(running);
    const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) throw failure.reason;
    sink.log({ level: 'info', message: timesNote(times, lanes) });
    if (plan.zonal) return finish([await writeZonal(spec.outDir, plan, parts, partIndices)], false, values);
    return finish([await out!.finish(windows)], false, values);
  } catch (e) {
    if (e instanceof JobStopped) sink.halted(done);
    if (e instanceof JobStopped && e.keepPartial && plan.zonal && parts.length > 0) {
      sink.log({ level: 'info', message: `Stopped after ${done} of ${windows.length} chunks; the result holds the geometries of the chunks done.` });
      return finish([await writeZonal(spec.outDir, plan, parts, partIndices)], true, values);
    }
    if (e instanceof JobStopped && e.keepPartial && out && done > 0) {
      sink.log({ level: 'info', message: `Stopped after ${done} of ${windows.length} chunks; the rest of the result is no-data.` });
      return finish([await out.finish(windows)], true, values);
    }
    // the error being thrown is the one to report; a failed abort only leaves a temporary file behind
    await out?.abort().catch(() => {});
    throw e;
  }
}

/**
 * The files of a run that ran as one piece: the models it saved (save_ml_model) and the encoded
 * answer, which is left out when the graph saved models and has no save_result (its answer is
 * then save_ml_model's `true`, not a result).
 */
async function withModels(spec: JobSpec, out: ExecuteResult, answer: () => Promise<OutputFile>): Promise<OutputFile[]> {
  const models = out.models?.length ? await modelOutputs(spec.outDir, spec.jobId, out.models) : [];
  if (models.length && savedFormats(spec.graph).length === 0) return models;
  return [...models, await answer()];
}

/** The options of the graph's save_result (literal ones; others count as absent). */
function savedOptions(graph: Graph): Record<string, unknown> {
  const node = Object.values(graph).find((n) => n.process_id === 'save_result');
  const o = node?.arguments?.options;
  return o && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>) : {};
}

function alignedChunk(wanted: number, options: Record<string, unknown>): number {
  const align = CogStreamWriter.chunkAlign({ tileSize: Number(options.tile_size ?? 256) });
  return Math.max(1, Math.ceil(wanted / align)) * align;
}

/** The window `w` of a plane of `width` columns, as its own array. */
function cut(plane: Float32Array, width: number, w: Window): Float32Array {
  const out = new Float32Array(w.width * w.height);
  for (let r = 0; r < w.height; r++) out.set(plane.subarray((w.row + r) * width + w.col, (w.row + r) * width + w.col + w.width), r * w.width);
  return out;
}

const round = (x: number, digits: number) => Number(x.toFixed(digits));

/** What the thread holds: its kernel memory, the decoded blocks it keeps, and the memory of its buffers. */
function memoryNote(engine: Engine): string {
  const mb = (b: number) => Math.round(b / 2 ** 20);
  const c = engine.blocks.counts;
  return `kernel memory ${mb(arenaStats().memoryBytes)} MB, decoded blocks kept ${mb(engine.blocks.lru.calculatedSize)} MB, buffers ${mb(process.memoryUsage().arrayBuffers)} MB; blocks read ${c.fetched}, decoded ${c.decoded}, reused ${c.reused}`;
}
