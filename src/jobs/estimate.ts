// Estimates of a job before it runs: a dry run (on a compute thread, reading no pixels) gives the
// output grid and the values to read; costs follow from the values, the duration from the
// throughput measured on recently finished jobs, the size from the output pixels and the bands a
// tiny sample of the output has.
import type { Compute } from '../compute/pool.js';
import type { Config } from '../core/config.js';
import { calledProcess, type Graph } from '../core/graph.js';
import type { JobRecord, Store } from '../store/types.js';
import { userProcessesOf } from '../graph/user-processes.js';
import { jobOptions } from './records.js';
import { costsOf } from '../compute/costs.js';
import { processCatalog } from '../process-catalog/catalog.js';
import { classifyGraph, savedFormats } from './chunking.js';

/** Raster values per second assumed until a job has finished here (measured on a 2-core machine). */
export const DEFAULT_VALUES_PER_SECOND = 20e6;
/** A job's fixed cost in seconds: queueing, the dry run, opening files. */
const OVERHEAD_S = 1;

export interface Estimate {
  costs: number;
  duration: string;
  size?: number;
  // downloads_included is left out: null (unlimited downloads) is its default, and some readers of
  // the definition refuse the null that the 1.x schemas allow.
  /** Not part of the API answer: the raster values the job reads. */
  values: number;
}

export async function estimateJob(job: JobRecord, store: Store, compute: Compute, config: Config): Promise<Estimate> {
  const graph = job.process.process_graph as Graph;
  const userProcesses = await userProcessesOf(store.processGraphs, job.userId, graph);
  const base = {
    graph,
    user: job.userId,
    userProcesses,
    maxValues: jobOptions(config, job, userProcesses).max_values as number,
    limitAdvice: 'Narrow the extent, dates or bands of the job.',
    mode: 'job' as const,
  };
  const dry = await compute.run({ ...base, probe: true });
  if (!dry.probe) return { costs: 0, duration: isoDuration(OVERHEAD_S), size: dry.body.length, values: 0 };
  const plan = dry.probe;
  const measured = await store.jobs.throughput();
  const rate = measured.seconds > 0 && measured.values > 0 ? measured.values / measured.seconds : DEFAULT_VALUES_PER_SECOND;
  const out: Estimate = { costs: costsOf(plan.values), duration: isoDuration(OVERHEAD_S + plan.values / rate), values: plan.values };
  const local = classifyGraph(graph, { categories: (id) => processCatalog.get(id)?.spec.categories, userProcess: (id, ns) => calledProcess(base.userProcesses, id, ns)?.process_graph ?? null }).local;
  const formats = savedFormats(graph);
  if (local && formats.length === 1 && formats[0]?.toLowerCase() === 'gtiff') {
    // The bands of the output, from a 4 x 4 pixel sample at the centre; float32, overviews add a third.
    const g = plan.grid;
    const w = Math.min(4, g.width);
    const h = Math.min(4, g.height);
    const col = Math.floor((g.width - w) / 2);
    const row = Math.floor((g.height - h) / 2);
    const t = g.transform;
    const region = { epsg: g.epsg, transform: [t[0] + col * t[1], t[1], 0, t[3] + row * t[5], 0, t[5]] as typeof t, width: w, height: h };
    const sample = await compute.run({ ...base, region, raw: true });
    if (sample.raw) out.size = Math.ceil(g.width * g.height * sample.raw.planes.length * 4 * (4 / 3));
  }
  return out;
}

/** Seconds as an ISO 8601 duration (PT1H2M3S). */
export function isoDuration(seconds: number): string {
  const s = Math.max(1, Math.ceil(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  return `PT${h ? `${h}H` : ''}${m ? `${m}M` : ''}${r || (!h && !m) ? `${r}S` : ''}`;
}
