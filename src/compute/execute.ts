// Runs a process graph to an answer: the one engine entry shared by /result, map tiles and the
// chunks of batch jobs. The modes differ only in the region the loads fill, the parameters the
// graph gets, and whether the answer is encoded or handed back as planes. Knows nothing of HTTP
// or threads.
import { evaluateGraph, rootScope } from '../graph/evaluate.js';
import { calledProcess, type Graph } from '../core/graph.js';
import { withRunLogs, type RunContext, type RunLog, type UserFiles } from '../core/run-context.js';
import type { CatalogSource } from '../core/catalog.js';
import type { UserProcess } from '../core/graph.js';
import { predefined } from '../processes/registry.js';
import { encodeResult, percentileRange, planesOf, type Encoded } from '../output/encode.js';
import { DataCube } from '../datacube/datacube.js';
import { cubeOf, isCube, LoadProbe, type LoadPlan } from '../datacube/lazy.js';
import type { Grid } from '../core/grid.js';
import { addStage, stageTimes, withStages, type StageTimes } from '../core/stages.js';
import { outputFormat } from '../output/formats.js';
import { inArena, withArena } from '../compile/kernels.js';
import { ValuesGate } from './values-gate.js';

/** What the tiles this thread draws at once may load together (compute/values-gate.ts). */
const tileValues = new ValuesGate();

/** This thread's reader of users' files (set by setupEngineThread), bound to a user per run. */
let userFiles: ((userId: string) => UserFiles) | null = null;

export function setUserFiles(f: ((userId: string) => UserFiles) | null): void {
  userFiles = f;
}

export interface ExecuteRequest {
  graph: Graph;
  /** A chunk of a zonal batch job: the geometries aggregate_spatial computes (RunContext.zonal). */
  zonal?: { members: number[] };
  /** The user's stored processes the graph may call, by id. */
  userProcesses: Record<string, UserProcess>;
  maxValues: number;
  limitAdvice: string;
  /** Raster values the request's budget pays for; absent = no budget. */
  budgetValues?: number;
  /** Values of the root process's parameters (a tile's extent and coordinates, say). */
  parameters?: Record<string, unknown>;
  /** Every load fills this grid (a tile, a batch chunk); see RunContext.region. */
  region?: Grid;
  /** Encode in this format whatever save_result asked for (tiles are always images). */
  output?: { format: string; options: Record<string, unknown> };
  /** Hand back a raster result as planes instead of encoding it (batch chunks are written by the job). */
  raw?: boolean;
  /**
   * Hand back a vector cube result itself (`kept`) instead of encoding it: for callers on the same
   * thread (a batch job's plan and chunks, jobs/zonal-plan.ts); its values are copied out of the
   * run's kernel memory.
   */
  keep?: boolean;
  /** Answer only the default value range of a raster result (percentileRange), computed here, not by the caller. */
  range?: boolean;
  /** What runs the graph (RunContext.mode); sync when absent. */
  mode?: RunContext['mode'];
  /** Whose graph it is (RunContext.user): whose files load_uploaded_files reads; user-defined functions run in that user's interpreters only. */
  user?: string;
  /** Milliseconds one call of a user-defined function may take (RunContext.udfTimeoutMs). */
  udfTimeoutMs?: number;
  /** Kernels for fusable child processes (default 'auto'). */
  kernels?: RunContext['kernels'];
  /**
   * A dry run (RunContext.probe): stops at the first load that needs pixels and answers its plan
   * in `probe`. A graph that loads nothing runs to its end and answers as usual, with `probe` null.
   */
  probe?: boolean;
}

/** A raster result as planes of the region's grid: one per combination of non-spatial labels. */
export interface RawResult {
  grid: Grid;
  planes: Float32Array[];
  names: string[];
  /** The format and options save_result asked for (GTiff without one). */
  format: string;
  options: Record<string, unknown>;
}

export interface ExecuteResult extends Encoded {
  /** Raster values loaded (pixels × dates × bands), the basis of costs. */
  values: number;
  logs: RunLog[];
  /** With `raw`, a raster result (then `body` is empty). */
  raw?: RawResult;
  /** With `range`: the 2nd and 98th percentiles of the raster result, null when it has no finite value or is no raster. */
  range?: [number, number] | null;
  /** Milliseconds per stage. */
  stages: StageTimes;
  /** With `probe`: the plan of the first load, or null when the graph loads nothing (then the answer is complete). */
  probe?: LoadPlan | null;
  /** With `keep`: the vector cube the graph gave (not encoded), or null when it gave something else. */
  kept?: DataCube | null;
  /** With `keep`: the format and options save_result asked for (null without save_result). */
  saved?: { format: string; options: Record<string, unknown> } | null;
  /** The models save_ml_model saved (batch jobs): the job writes them with its results. */
  models?: { nodeId: string; model: unknown }[];
}

/**
 * Runs the graph in an arena scope (src/compile/kernels.ts): its cubes are planes of the kernels'
 * memory, freed for the next request when it ends. A caller already in a scope (a batch chunk that
 * writes the raw planes before its scope ends) keeps them; otherwise raw planes are copied out, as
 * they outlive the scope.
 */
export async function execute(req: ExecuteRequest, catalog: CatalogSource, signal?: AbortSignal): Promise<ExecuteResult> {
  if (inArena()) return executeInScope(req, catalog, signal);
  return withArena(async () => {
    const out = await executeInScope(req, catalog, signal);
    if (out.raw) out.raw = { ...out.raw, planes: out.raw.planes.map((p) => Float32Array.from(p)) };
    return out;
  });
}

function executeInScope(req: ExecuteRequest, catalog: CatalogSource, signal?: AbortSignal): Promise<ExecuteResult> {
  return withStages(() => executeCounted(req, catalog, signal));
}

async function executeCounted(req: ExecuteRequest, catalog: CatalogSource, signal?: AbortSignal): Promise<ExecuteResult> {
  const started = performance.now();
  const logs: RunLog[] = [];
  const run: RunContext = {
    catalog,
    maxValues: req.maxValues,
    limitAdvice: req.limitAdvice,
    budgetValues: req.budgetValues,
    results: [],
    log: (level, message, data, stacktrace) => logs.push({ level, message, time: new Date().toISOString(), ...(data === undefined ? {} : { data }), ...(stacktrace ? { stacktrace } : {}) }),
    signal,
    stats: { values: 0 },
    region: req.region,
    kernels: req.kernels,
    probe: req.probe,
    mode: req.mode,
    user: req.user,
    udfTimeoutMs: req.udfTimeoutMs,
    files: req.user && userFiles ? userFiles(req.user) : undefined,
    zonal: req.zonal,
    ...(req.mode === 'job' ? { models: [] } : {}),
  };
  let held = 0;
  // Tiles share their thread with other tiles (compute/pool.ts); other graphs run alone.
  if (req.mode === 'tile') {
    run.reserve = async (values) => {
      await tileValues.reserve(values, req.maxValues, held > 0, signal);
      held += values;
    };
  }
  try {
    if (!req.probe) return await evaluateAndAnswer(req, run, logs, started);
    return { ...(await evaluateAndAnswer(req, run, logs, started)), probe: null };
  } catch (e) {
    if (e instanceof LoadProbe) return { body: Buffer.alloc(0), mediaType: '', extension: '', values: 0, logs, probe: e.plan, stages: stageTimes(performance.now() - started) };
    // What the graph logged before it failed (a UDF's prints, say) goes along with the failure.
    withRunLogs(e, logs);
    throw e;
  } finally {
    if (held) tileValues.release(held);
  }
}

/** Evaluates the graph and shapes its answer: encoded, or raw planes. */
async function evaluateAndAnswer(req: ExecuteRequest, run: RunContext, logs: RunLog[], started: number): Promise<ExecuteResult> {
  const value = await evaluateGraph(
    req.graph,
    { predefined: (id) => predefined.get(id), userProcess: (id, ns) => calledProcess(req.userProcesses, id, ns), run },
    rootScope(req.parameters ?? {}),
  );
  // With save_result the saved data is the answer; without, the graph's value, as JSON.
  const saved = run.results[run.results.length - 1];
  const value0 = saved ? saved.data : value;
  const data = isCube(value0) ? await cubeOf(value0, run, 'save_result') : value0;
  const done = (e: Encoded, more: Partial<ExecuteResult> = {}): ExecuteResult => ({ ...e, values: run.stats.values, logs, stages: stageTimes(performance.now() - started), ...(run.models?.length ? { models: run.models } : {}), ...more });
  const nothing: Encoded = { body: Buffer.alloc(0), mediaType: '', extension: '' };
  const raster = data instanceof DataCube && data.grid ? data : null;
  if (req.range) return done(nothing, { range: raster ? percentileRange(planesOf(raster, 'GTiff').planes) : null });
  if (req.keep) {
    return done(nothing, {
      kept: data instanceof DataCube && data.features ? data.with({ data: Float32Array.from(data.data) }) : null,
      saved: saved ? { format: saved.format, options: saved.options } : null,
    });
  }
  if (req.raw && raster) {
    const format = saved?.format ?? 'GTiff';
    const { planes, names } = planesOf(raster, format);
    return done(nothing, { raw: { grid: raster.grid!, planes, names, format, options: saved?.options ?? {} } });
  }
  const format = req.output ?? (saved ? { format: saved.format, options: saved.options } : { format: 'JSON', options: {} });
  const t0 = performance.now();
  const encoded = await encodeResult(data, outputFormat(format.format, format.options), run);
  addStage('encode', performance.now() - t0);
  return done(encoded);
}
