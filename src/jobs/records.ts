// What a run leaves in the records, the same on whichever node or worker ran it: log entries at
// the job's level, the result files moved into the result store and listed, the end status.
import { log } from '../core/log.js';
import type { Config } from '../core/config.js';
import type { Graph, UserProcess } from '../core/graph.js';
import { LRUCache } from 'lru-cache';
import { processDefaults, processingParameters, resolveOptions } from '../core/processing-options.js';
import type { LogLevel } from '../core/run-context.js';
import { errorFromData, type ErrorData } from '../core/errors.js';
import { messageOf } from '../core/messages.js';
import type { BlobStore } from '../store/blobs.js';
import type { JobAsset, JobRecord, LogEntry, Store } from '../store/types.js';
import { levelRank } from '../store/logs.js';
import { userProcessesOf } from '../graph/user-processes.js';
import type { RemoteProcesses } from '../graph/remote-processes.js';
import { costsOf, valuesFor } from '../compute/costs.js';
import type { PathEntry } from '../graph/evaluate.js';
import type { JobOutcome, JobSpec } from './runner.js';
import type { JobThreadInit } from './protocol.js';

/** The processing parameters a run of `job` uses (core/processing-options.ts). */
export function jobOptions(config: Config, job: JobRecord, userProcesses: Record<string, UserProcess>): Record<string, unknown> {
  return resolveOptions(processingParameters(config).job, job.options, processDefaults('job', job.process, userProcesses));
}

/** The log of a job in the log store. */
export const jobLogOwner = (id: string) => `job:${id}`;

/** What a job thread needs of the configuration (on an API node and on a worker alike). */
export function jobThreadInit(config: Config): JobThreadInit {
  return {
    dataDir: config.dataDir,
    databaseUrl: config.databaseUrl,
    database: config.database,
    blockCacheBytes: config.jobBlockCacheBytes,
    outboundAllow: config.outboundAllow,
    arenaKeepBytes: config.kernelArenaKeepBytes,
    kernelThreads: config.kernelThreads,
    deflateThreads: config.jobDeflateThreads,
    vector: config.vector,
    models: config.models,
    ml: config.ml,
  };
}

/** A run of a job, as the records know it. */
export interface RunRef {
  jobId: string;
  run: number;
  logLevel: LogLevel;
}

/** Runs whose stored processes are kept (a worker takes many chunks of one run). */
const RUNS_KEPT = 64;

export class RunRecords {
  /** The stored processes a run calls, read once per run: every chunk of it uses the same ones. */
  private readonly processesOfRun = new LRUCache<string, Promise<Record<string, UserProcess>>>({ max: RUNS_KEPT });

  constructor(
    readonly store: Store,
    /** Where finished result files live, under `<job id>/<asset>`. */
    readonly results: BlobStore,
    private readonly config: Config,
    /** Processes named by URL that jobs' graphs call. */
    private readonly remote: RemoteProcesses,
  ) {}

  /**
   * Adds a log entry when its level reaches the job's log level. Entries of one job are stored in
   * the order they were logged; the answer says when this one is (a failed write is reported, not
   * thrown: a log line never fails the run).
   */
  log(job: { id: string; logLevel: LogLevel }, entry: Omit<LogEntry, 'id' | 'time'>): Promise<void> {
    if (levelRank(entry.level) > levelRank(job.logLevel)) return Promise.resolve();
    return this.store.logs.append(jobLogOwner(job.id), entry).then(
      () => {},
      (e: unknown) => log.error(`a log entry was not stored: ${(e as Error).message}`, { job: job.id }),
    );
  }

  /**
   * What a job thread needs to run (a part of) the job's current run: its graph, the processes it
   * calls, and its processing parameters (the job's own, else its processes', else the defaults).
   */
  async spec(job: JobRecord, outDir: string): Promise<JobSpec> {
    const graph = job.process.process_graph as Graph;
    const userProcesses = await this.userProcesses(job, graph);
    const options = jobOptions(this.config, job, userProcesses);
    return {
      jobId: job.id,
      run: job.run,
      graph,
      userProcesses,
      maxValues: options.max_values as number,
      chunkSize: options.chunk_size as number,
      budgetValues: job.budget === null ? null : valuesFor(job.budget),
      zonalBlockCacheBytes: this.config.zonalBlockCacheBytes,
      outDir,
      user: job.userId,
      udfTimeoutMs: (options.udf_timeout as number) * 1000,
    };
  }

  private userProcesses(job: JobRecord, graph: Graph): Promise<Record<string, UserProcess>> {
    const key = `${job.id}\n${job.run}`;
    let p = this.processesOfRun.get(key);
    if (!p) {
      p = userProcessesOf(this.store.processGraphs, this.remote, job.userId, graph);
      this.processesOfRun.set(key, p);
      // A failed read is not kept: the next chunk reads again.
      p.catch(() => this.processesOfRun.get(key) === p && this.processesOfRun.delete(key));
    }
    return p;
  }

  /** A canceled run with nothing done: back to created (from `from`), said in its log. */
  async canceledEmpty(a: RunRef, from: 'running' | 'canceled'): Promise<boolean> {
    if (!(await this.store.jobs.transition(a.jobId, [from], 'created'))) return false;
    void this.log({ id: a.jobId, logLevel: a.logLevel }, { level: 'info', message: 'Canceled before any part of the result was written; the job is back to created.' });
    return true;
  }

  /** The run failed: error, with the failure (and where in the graph) in the log. */
  async fail(a: RunRef, e: ErrorData, path: PathEntry[], from: 'running' | 'canceled' = 'running'): Promise<boolean> {
    if (!(await this.store.jobs.transition(a.jobId, [from], 'error'))) return false;
    log.info(`run ${a.run} ended in error (${e.code})`, { job: a.jobId });
    void this.log(
      { id: a.jobId, logLevel: a.logLevel },
      { level: 'error', code: e.code, message: messageOf(errorFromData(e), 'en').text, ...(path.length ? { path } : {}), ...(e.stacktrace ? { stacktrace: e.stacktrace } : {}) },
    );
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
    await this.store.jobResults.put(a.jobId, {
      run: a.run,
      partial: outcome.partial,
      assets,
      bbox: outcome.bbox,
      geometry: outcome.geometry,
      times: outcome.times,
      created: new Date().toISOString(),
    });
    const values = outcome.usage.values_read?.value ?? 0;
    // Kept for XEO_JOB_RESULT_TTL from now, when it is set (JobService sweeps them then).
    const ttl = this.config.jobResultTtlSeconds;
    const unpublished = ttl > 0 ? new Date(Date.now() + ttl * 1000).toISOString() : null;
    // A partial result belongs to a job set to canceled when it halted; it stays canceled.
    const moved = await (outcome.partial
      ? this.store.jobs.report(a.jobId, a.run, { usage: outcome.usage, costs: costsOf(values), unpublished }, 'canceled')
      : this.store.jobs.transition(a.jobId, ['running'], 'finished', { usage: outcome.usage, costs: costsOf(values), progress: 100, unpublished }));
    if (!moved) {
      // The same run settled first by another task (one taken over while still running, or a
      // cancel's partial result): theirs stands. Only a run that is gone takes its files along.
      const now = await this.store.jobs.byId(a.jobId);
      if (now && now.run === a.run) return;
      await this.store.jobResults.delete(a.jobId);
      await this.results.deleteTree(a.jobId);
      return;
    }
    const bytes = Object.values(assets).reduce((s, x) => s + x.bytes, 0);
    const u = outcome.usage;
    log.info(`run ${a.run} ${outcome.partial ? 'left a partial result' : 'finished'}: ${bytes} bytes in ${u.duration.value} s`, { job: a.jobId });
    void this.log(
      { id: a.jobId, logLevel: a.logLevel },
      {
        level: 'info',
        message: `${outcome.partial ? 'The partial result is written' : 'Finished'}: ${Object.keys(assets).join(', ')} (${bytes} bytes) in ${u.duration.value} s, ${u.cpu.value} CPU seconds, ${u.pixels.value} pixels, ${values} values read.`,
      },
    );
  }
}
