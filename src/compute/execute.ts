// Runs a process graph to an encoded answer: the engine entry shared by /result (and, later, by
// tiles and batch chunks). Knows nothing of HTTP or threads.
import { evaluateGraph, rootScope, type Graph } from '../graph/evaluate.js';
import type { LogLevel, RunContext } from '../graph/context.js';
import type { CatalogSource } from '../data/load.js';
import type { ProcessParameter } from '../processes/types.js';
import { predefined } from '../processes/registry.js';
import { encodeResult, type Encoded } from '../output/encode.js';
import { outputFormat } from '../output/formats.js';

export interface UserProcess {
  parameters?: ProcessParameter[] | null;
  process_graph: Graph;
}

export interface ExecuteRequest {
  graph: Graph;
  /** The user's stored processes the graph may call, by id. */
  userProcesses: Record<string, UserProcess>;
  maxValues: number;
  limitAdvice: string;
  /** Raster values the request's budget pays for; absent = no budget. */
  budgetValues?: number;
}

export interface LogEntry {
  level: LogLevel;
  message: string;
  time: string;
}

export interface ExecuteResult extends Encoded {
  /** Raster values loaded (pixels × dates × bands), the basis of costs. */
  values: number;
  logs: LogEntry[];
}

export async function execute(req: ExecuteRequest, catalog: CatalogSource, signal?: AbortSignal): Promise<ExecuteResult> {
  const logs: LogEntry[] = [];
  const run: RunContext = {
    catalog,
    maxValues: req.maxValues,
    limitAdvice: req.limitAdvice,
    budgetValues: req.budgetValues,
    results: [],
    log: (level, message) => logs.push({ level, message, time: new Date().toISOString() }),
    signal,
    stats: { values: 0 },
  };
  const value = await evaluateGraph(
    req.graph,
    { predefined: (id) => predefined.get(id), userProcess: (id) => req.userProcesses[id] ?? null, run },
    rootScope(),
  );
  // With save_result the saved data is the answer; without, the graph's value, as JSON.
  const saved = run.results[run.results.length - 1];
  const encoded = saved
    ? await encodeResult(saved.data, outputFormat(saved.format, saved.options), run)
    : await encodeResult(value, outputFormat('JSON', {}), run);
  return { ...encoded, values: run.stats.values, logs };
}
