// What a run leaves in the records, the same on whichever node or worker ran it: log entries at
// the job's level, the result files moved into the result store and listed, the end status.
import type { Config } from '../core/config.js';
import type { Graph } from '../core/graph.js';
import type { LogLevel } from '../core/run-context.js';
import { errorFromData, type ErrorData } from '../core/errors.js';
import { messageOf } from '../core/messages.js';
import type { BlobStore } from '../store/blobs.js';
import type { JobAsset, JobRecord, LogEntry, Store } from '../store/types.js';
import { levelRank } from '../store/logs.js';
import { userProcessesOf } from '../graph/user-processes.js';
import { costsOf, valuesFor } from '../compute/costs.js';
import type { PathEntry } from '../graph/evaluate.js';
import type { JobOutcome, JobSpec } from './runner.js';
import type { JobThreadInit } from './protocol.js';

/** The log of a job in the log store. */
export const jobLogOwner = (id: string) => `job:${id}`;

/** What a job thread needs of the configuration (on an API node and on a worker alike). */
export function jobThreadInit(config: Config): JobThreadInit {
  return { dataDir: config.dataDir, databaseUrl: config.databaseUrl, blockCacheBytes: config.jobBlockCacheBytes, outboundAllow: config.outboundAllow, arenaKeepBytes: config.kernelArenaKeepBytes, kernelThreads: config.kernelThreads, vector: config.vector };
}

/** A run of a job, as the records know it. */
export interface RunRef {
  jobId: string;
  run: number;
  logLevel: LogLevel;
}

export class RunRecords {
  constructor(
    readonly store: Store,
    /** Where finished result files live, under `<job id>/<asset>`. */
    readonly results: BlobStore,
    private readonly config: Config,
  ) {}

  /** Adds a log entry when its level reaches the job's log level. */
  log(job: { id: string; logLevel: LogLevel }, entry: Omit<LogEntry, 'id' | 'time'>): void {
    if (levelRank(entry.level) > levelRank(job.logLevel)) return;
    this.store.logs.append(jobLogOwner(job.id), entry);
  }

  /** What a job thread needs to run (a part of) the job's current run. */
  spec(job: JobRecord, outDir: string): JobSpec {
    const graph = job.process.process_graph as Graph;
    return {
      jobId: job.id,
      run: job.run,
      userId: job.userId,
      graph,
      userProcesses: userProcessesOf(this.store.processGraphs, job.userId, graph),
      maxValues: this.config.batchMaxValues,
      chunkSize: this.config.jobChunkSize,
      budgetValues: job.budget === null ? null : valuesFor(job.budget),
      zonalBlockCacheBytes: this.config.zonalBlockCacheBytes,
      outDir,
    };
  }

  /** A canceled run with nothing done: back to created (from `from`), said in its log. */
  canceledEmpty(a: RunRef, from: 'running' | 'canceled'): boolean {
    if (!this.store.jobs.transition(a.jobId, [from], 'created')) return false;
    this.log({ id: a.jobId, logLevel: a.logLevel }, { level: 'info', message: 'Canceled before any part of the result was written; the job is back to created.' });
    return true;
  }

  /** The run failed: error, with the failure (and where in the graph) in the log. */
  fail(a: RunRef, e: ErrorData, path: PathEntry[], from: 'running' | 'canceled' = 'running'): boolean {
    if (!this.store.jobs.transition(a.jobId, [from], 'error')) return false;
    this.log({ id: a.jobId, logLevel: a.logLevel }, { level: 'error', code: e.code, message: messageOf(errorFromData(e), 'en').text, ...(path.length ? { path } : {}) });
    return true;
  }

  /** Moves a run's files into the result store and records them: finished, or canceled with partial results. */
  async keep(a: RunRef, outcome: JobOutcome): Promise<void> {
    const assets: Record<string, JobAsset> = {};
    for (const out of outcome.outputs) {
      const key = `${a.jobId}/${out.name}`;
      const info = await this.results.adopt(key, out.file);
      assets[out.name] = { key, type: out.type, bytes: info.size, title: out.title, roles: out.roles, fields: out.fields };
    }
    this.store.jobResults.put(a.jobId, {
      run: a.run,
      partial: outcome.partial,
      assets,
      bbox: outcome.bbox,
      geometry: outcome.geometry,
      times: outcome.times,
      created: new Date().toISOString(),
    });
    const values = outcome.usage.values_read?.value ?? 0;
    // A partial result belongs to a job set to canceled when it halted; it stays canceled.
    const moved = outcome.partial
      ? this.store.jobs.report(a.jobId, a.run, { usage: outcome.usage, costs: costsOf(values) }, 'canceled')
      : this.store.jobs.transition(a.jobId, ['running'], 'finished', { usage: outcome.usage, costs: costsOf(values), progress: 100 });
    if (!moved) {
      // The same run settled first by another task (one taken over while still running, or a
      // cancel's partial result): theirs stands. Only a run that is gone takes its files along.
      const now = this.store.jobs.byId(a.jobId);
      if (now && now.run === a.run) return;
      this.store.jobResults.delete(a.jobId);
      await this.results.deleteTree(a.jobId);
      return;
    }
    const bytes = Object.values(assets).reduce((s, x) => s + x.bytes, 0);
    const u = outcome.usage;
    this.log({ id: a.jobId, logLevel: a.logLevel }, {
      level: 'info',
      message: `${outcome.partial ? 'The partial result is written' : 'Finished'}: ${Object.keys(assets).join(', ')} (${bytes} bytes) in ${u.duration.value} s, ${u.cpu.value} CPU seconds, ${u.pixels.value} pixels, ${values} values read.`,
    });
  }
}
