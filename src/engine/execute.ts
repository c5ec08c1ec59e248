// Runs a process graph to an answer: the one engine entry shared by /result, map tiles and the
// chunks of batch jobs. The modes differ only in the region the loads fill, the parameters the
// graph gets, and whether the answer is encoded or handed back as planes. Knows nothing of HTTP
// or threads.
import { evaluateGraph, rootScope } from '../graph/evaluate.js';
import { calledProcess, type Graph } from '../core/graph.js';
import { withRunLogs, type LoadPlan, type RunContext, type RunLog } from '../core/run-context.js';
import { RequestAborted } from '../core/errors.js';
import type { Engine } from './engine.js';
import type { UserProcess } from '../core/graph.js';
import { predefined } from '../processes/registry.js';
import { encodeResult, percentileRange, planesOf, type Encoded } from '../output/encode.js';
import { DataCube } from '../datacube/datacube.js';
import { cubeOf, isCube } from '../data/lazy.js';
import type { Grid } from '../core/grid.js';
import { addStage, stageTimes, withStages, type StageTimes } from '../core/stages.js';
import { outputFormat } from '../output/formats.js';
import { inArena, withArena } from '../wasm/kernels.js';
import { ValuesGate } from './values-gate.js';

/** What the tiles this thread draws at once may load together (values-gate.ts). */
const tileValues = new ValuesGate();

/** What a run is: the graph, what it may call and read, and the limits of its mode. */
export interface RunSpec {
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
  /** What runs the graph (RunContext.mode); sync when absent. */
  mode?: RunContext['mode'];
  /** Whose graph it is (RunContext.user): whose files load_uploaded_files reads; user-defined functions run in that user's interpreters only. */
  user?: string;
  /** Milliseconds one call of a user-defined function may take (RunContext.udfTimeoutMs). */
  udfTimeoutMs?: number;
  /** Kernels for fusable child processes (default 'auto'). */
  kernels?: RunContext['kernels'];
}

/** The answer a caller wants of a run. */
export type AnswerKind =
  /** The result encoded: in `output`'s format when given (tiles are always images), else as save_result asked, else JSON. */
  | { kind: 'encoded'; output?: { format: string; options: Record<string, unknown> } }
  /** A raster result as planes of the region's grid (batch chunks are written by the job); anything else encoded. */
  | { kind: 'planes' }
  /**
   * A vector cube result itself, not encoded: for callers on the same thread (a batch job's plan
   * and chunks, jobs/zonal-plan.ts); its values are copied out of the run's kernel memory.
   */
  | { kind: 'kept' }
  /** Only the default value range of a raster result (percentileRange), computed here, not by the caller. */
  | { kind: 'range' }
  /**
   * A dry run: the plan of the first load that needs pixels, read by nobody. A graph that loads
   * nothing runs to its end and answers encoded.
   */
  | { kind: 'plan' };

export type ExecuteRequest = RunSpec & { answer: AnswerKind };

/** A raster result as planes of the region's grid: one per combination of non-spatial labels. */
export interface RawResult {
  grid: Grid;
  planes: Float32Array[];
  names: string[];
  /** The format and options save_result asked for (GTiff without one). */
  format: string;
  options: Record<string, unknown>;
}

/** What every answer tells of its run. */
export interface RunFacts {
  /** Raster values loaded (pixels × dates × bands), the basis of costs. */
  values: number;
  logs: RunLog[];
  /** Milliseconds per stage. */
  stages: StageTimes;
  /** The models save_ml_model saved (batch jobs): the job writes them with its results. */
  models?: { nodeId: string; model: unknown }[];
}

export type EncodedAnswer = { kind: 'encoded' } & Encoded;

/** The answer of a run, of the kind asked (an encoded one where the data has no other form). */
export type ExecuteResult = RunFacts &
  (
    | EncodedAnswer
    | { kind: 'planes'; raw: RawResult }
    /** `kept`: the vector cube the graph gave, or null when it gave something else; `saved`: what save_result asked for (null without it). */
    | { kind: 'kept'; kept: DataCube | null; saved: { format: string; options: Record<string, unknown> } | null }
    /** The 2nd and 98th percentiles of the raster result, null when it has no finite value or is no raster. */
    | { kind: 'range'; range: [number, number] | null }
    | { kind: 'plan'; plan: LoadPlan }
  );

/** The answers a request of this kind may get: its own, or an encoded one (planes of no raster, a dry run that loads nothing). */
export type AnswerOf<K extends AnswerKind['kind']> = Extract<ExecuteResult, { kind: K }> | (K extends 'planes' | 'plan' ? Extract<ExecuteResult, { kind: 'encoded' }> : never);

/**
 * Runs the graph in an arena scope (src/wasm/kernels.ts): its cubes are planes of the kernels'
 * memory, freed for the next request when it ends. A caller already in a scope (a batch chunk that
 * writes the raw planes before its scope ends) keeps them; otherwise raw planes are copied out, as
 * they outlive the scope.
 */
export async function execute<R extends ExecuteRequest>(req: R, engine: Engine, signal?: AbortSignal): Promise<AnswerOf<R['answer']['kind']>> {
  return (await executeAny(req, engine, signal)) as AnswerOf<R['answer']['kind']>;
}

async function executeAny(req: ExecuteRequest, engine: Engine, signal?: AbortSignal): Promise<ExecuteResult> {
  if (inArena()) return executeInScope(req, engine, signal);
  return withArena(async () => {
    const out = await executeInScope(req, engine, signal);
    if (out.kind === 'planes') out.raw = { ...out.raw, planes: out.raw.planes.map((p) => Float32Array.from(p)) };
    return out;
  }, engine.arena);
}

function executeInScope(req: ExecuteRequest, engine: Engine, signal?: AbortSignal): Promise<ExecuteResult> {
  return withStages(() => executeCounted(req, engine, signal));
}

async function executeCounted(req: ExecuteRequest, engine: Engine, signal?: AbortSignal): Promise<ExecuteResult> {
  const started = performance.now();
  const logs: RunLog[] = [];
  const run: RunContext = {
    engine,
    catalog: engine.catalog(),
    maxValues: req.maxValues,
    limitAdvice: req.limitAdvice,
    budgetValues: req.budgetValues,
    results: [],
    log: (level, message, data, stacktrace) => logs.push({ level, message, time: new Date().toISOString(), ...(data === undefined ? {} : { data }), ...(stacktrace ? { stacktrace } : {}) }),
    signal,
    stats: { values: 0 },
    region: req.region,
    kernels: req.kernels,
    mode: req.mode,
    user: req.user,
    udfTimeoutMs: req.udfTimeoutMs,
    files: req.user && engine.files ? engine.files(req.user) : undefined,
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
    if (req.answer.kind !== 'plan') return await evaluateAndAnswer(req, run, logs, started);
    return await dryRun(req, run, logs, started, signal);
  } catch (e) {
    // What the graph logged before it failed (a UDF's prints, say) goes along with the failure.
    withRunLogs(e, logs);
    throw e;
  } finally {
    if (held) tileValues.release(held);
  }
}

/**
 * A dry run: the graph runs until its first load that needs pixels, which hands over its plan and
 * waits for good; the plan is the answer, and the rest of the run is stopped (its signal aborted).
 * A graph that loads nothing answers as a run does.
 */
async function dryRun(req: ExecuteRequest, run: RunContext, logs: RunLog[], started: number, signal?: AbortSignal): Promise<ExecuteResult> {
  let found!: (plan: LoadPlan) => void;
  const planned = new Promise<LoadPlan>((resolve) => (found = resolve));
  const stop = new AbortController();
  run.signal = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
  run.dryRun = (plan) => {
    found(plan);
    return new Promise<never>(() => {});
  };
  const answered = evaluateAndAnswer(req, run, logs, started);
  const first = await Promise.race([answered.then((answer) => ({ answer })), planned.then((plan) => ({ plan }))]);
  if ('answer' in first) return first.answer;
  stop.abort(new RequestAborted());
  // Branches that were under way end on the abort; what they say then is not this run's answer.
  answered.catch(() => {});
  return { kind: 'plan', plan: first.plan, values: 0, logs, stages: stageTimes(performance.now() - started) };
}

/** Evaluates the graph and shapes its answer, of the kind asked. */
async function evaluateAndAnswer(req: ExecuteRequest, run: RunContext, logs: RunLog[], started: number): Promise<ExecuteResult> {
  const value = await evaluateGraph(req.graph, { predefined: (id) => predefined.get(id), userProcess: (id, ns) => calledProcess(req.userProcesses, id, ns), run }, rootScope(req.parameters ?? {}));
  // With save_result the saved data is the answer; without, the graph's value, as JSON.
  const saved = run.results[run.results.length - 1];
  const value0 = saved ? saved.data : value;
  const data = isCube(value0) ? await cubeOf(value0, run, 'save_result') : value0;
  const facts = (): RunFacts => ({ values: run.stats.values, logs, stages: stageTimes(performance.now() - started), ...(run.models?.length ? { models: run.models } : {}) });
  const raster = data instanceof DataCube && data.grid ? data : null;
  const answer = req.answer;
  if (answer.kind === 'range') return { kind: 'range', range: raster ? percentileRange(planesOf(raster, 'GTiff').planes) : null, ...facts() };
  if (answer.kind === 'kept') {
    return {
      kind: 'kept',
      kept: data instanceof DataCube && data.features ? data.with({ data: Float32Array.from(data.data) }) : null,
      saved: saved ? { format: saved.format, options: saved.options } : null,
      ...facts(),
    };
  }
  if (answer.kind === 'planes' && raster) {
    const format = saved?.format ?? 'GTiff';
    const { planes, names } = planesOf(raster, format);
    return { kind: 'planes', raw: { grid: raster.grid!, planes, names, format, options: saved?.options ?? {} }, ...facts() };
  }
  const format = (answer.kind === 'encoded' ? answer.output : undefined) ?? (saved ? { format: saved.format, options: saved.options } : { format: 'JSON', options: {} });
  const t0 = performance.now();
  const encoded = await encodeResult(data, outputFormat(format.format, format.options), run);
  addStage('encode', performance.now() - t0);
  return { kind: 'encoded', ...encoded, ...facts() };
}
