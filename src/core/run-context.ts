// What a running process graph can reach beyond its arguments: the catalog to load from, the
// limits of the mode it runs in, where save_result puts its outputs, logging and cancellation.
// Set by /result, tiles and batch jobs; absent when scalar graphs are evaluated on their own.
import type { CatalogSource } from './catalog.js';
import type { Grid } from './grid.js';

export interface SavedResult {
  nodeId: string;
  data: unknown;
  format: string;
  options: Record<string, unknown>;
}

/** A user's file as a run sees it. */
export interface UserFileInfo {
  size: number;
  /** ISO date-time of its last change. */
  modified: string;
}

/** The files of the user a run belongs to (load_uploaded_files), by path in their workspace. */
export interface UserFiles {
  /** Whose files these are (the user id): part of every cache key of what is read from them. */
  owner: string;
  stat(path: string): Promise<UserFileInfo | null>;
  read(path: string, maxBytes: number): Promise<Uint8Array>;
  /**
   * The model file a finished batch job of this user saved (load_ml_model by job id); JobNotFound
   * for a job that is not theirs. Absent where no job store is reachable.
   */
  jobModel?(jobId: string, maxBytes: number): Promise<Uint8Array>;
}

export type LogLevel = 'debug' | 'info' | 'warning' | 'error';

/** A line a running graph logs (inspect's summary, a warning); the store adds an id, code and path. */
export interface RunLog {
  level: LogLevel;
  message: string;
  time: string;
  /** What the process logged along (inspect's summary of its data, say). */
  data?: unknown;
  /**
   * Where in the user's own code (a UDF's traceback; API 1.3.0's `stacktrace` of a log entry).
   * Never set from our own failures: their internals stay in the server's log.
   */
  stacktrace?: string;
}

/**
 * The services of the engine thread a run is on, built once per thread by createEngine
 * (src/engine/engine.ts) and reached by the run through RunContext.engine. Each part is declared
 * by the module that owns its type, as an augmentation of this interface
 * (`declare module '../core/run-context.js' { interface EngineParts { ... } }`), so that lower
 * layers name what they use without importing upwards; a new part is one line there and one in
 * createEngine.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by the augmentations of the owners of its parts
export interface EngineParts {}

/** What a load will read, known before reading: the answer of a dry run. */
export interface LoadPlan {
  collection: string;
  grid: Grid;
  times: string[];
  bands: string[];
  /** grid pixels x dates x bands */
  values: number;
}

export interface RunContext {
  /** The thread's engine: caches, kernels, links to the main thread, limits (EngineParts). */
  engine: EngineParts;
  catalog: CatalogSource;
  /** Most cube values (pixels x times x bands) one load may produce in this mode. */
  maxValues: number;
  /** Why the limit exists, for the error message (e.g. "use a batch job"). */
  limitAdvice: string;
  /** Values the request's budget pays for, in all loads together (Infinity without a budget). */
  budgetValues?: number;
  /**
   * Waits until a load of this many values may hold them (a tile drawn beside others on its thread:
   * engine/values-gate.ts); absent, a load never waits.
   */
  reserve?: (values: number) => Promise<void>;
  results: SavedResult[];
  /** Models save_ml_model saved (batch jobs only; absent elsewhere): written with the job's results. */
  models?: { nodeId: string; model: unknown }[];
  log(level: LogLevel, message: string, data?: unknown, stacktrace?: string): void;
  signal?: AbortSignal;
  /** Which kernels run fusable child processes: 'auto' (tier 1 when compiled, else tier 0), a tier, or 'off' (JS only). */
  kernels?: 'auto' | 'off' | 0 | 1;
  /**
   * When set, every load fills exactly this grid (a map tile in Web Mercator, a chunk of a batch
   * job's output grid) instead of the grid its extent and resolution give; pixels outside the
   * load's own extent stay no-data. The dates of each load stay those of its whole extent, so all
   * tiles and chunks of one graph have the same labels.
   */
  region?: Grid;
  /**
   * A dry run: the first load that needs pixels hands what it would read to this function instead
   * of reading it (data/lazy.ts) and waits on its answer, which never comes: the run's answer is
   * that plan (engine/execute.ts). Batch jobs learn their output grid this way before any pixel is
   * read.
   */
  dryRun?: (plan: LoadPlan) => Promise<never>;
  /**
   * What runs the graph: a synchronous request, a map tile or a batch job (absent = sync). Loads of
   * STAC API collections search by it: a tile searches around the tile, a job its whole extent,
   * and the cap on items is higher for jobs.
   */
  mode?: 'sync' | 'tile' | 'job';
  /** The files of the run's user; absent when the run has no user (or the thread no file store). */
  files?: UserFiles;
  /**
   * A chunk of a batch job that aggregates over geometries (jobs/zonal-plan.ts): aggregate_spatial
   * computes only the geometries at these positions, the chunk's share of the job.
   */
  zonal?: { members: number[] };
  /** Values loaded so far, for costs and usage. */
  stats: { values: number };
  /** Whose graph runs (user-defined functions never share an interpreter between users); absent for the server's own graphs. */
  user?: string;
  /** Milliseconds one call of a user-defined function may run in this mode. */
  udfTimeoutMs?: number;
}

const RUN_LOGS = Symbol('run logs');

/** The log entries of a run that ended with this failure (none when it logged nothing). */
export function runLogsOf(e: unknown): RunLog[] {
  return (e !== null && typeof e === 'object' && (e as { [RUN_LOGS]?: RunLog[] })[RUN_LOGS]) || [];
}

/** Gives a failure the log entries of its run (what a UDF printed before it failed, say), also after crossing from a thread. */
export function withRunLogs<T>(e: T, logs: RunLog[] | undefined): T {
  if (logs?.length && e !== null && typeof e === 'object') (e as { [RUN_LOGS]?: RunLog[] })[RUN_LOGS] = logs;
  return e;
}
