// Batch jobs on the main thread: the state machine of the openEO job status (created -> queued ->
// running -> finished | error | canceled), the queue, handing jobs to the job threads, keeping
// their logs, progress and results, and what happens when the server stops or restarts.
//
// Restart policy: a job found `running` when the server starts was cut short by a crash or kill;
// it is queued again (ahead of jobs queued after it) and starts from the beginning, with a
// warning in its log. After MAX_INTERRUPTIONS such restarts of one run it is set to `error`
// instead, so a job that brings the server down cannot do so forever. An orderly stop queues
// running jobs again too, without counting it against them.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { ApiError, errorToData } from '../core/errors.js';
import path from 'node:path';
import type { Config } from '../core/config.js';
import type { BlobStore } from '../store/blobs.js';
import type { JobRecord, LogEntry, Store } from '../store/types.js';
import type { LogLevel } from '../core/run-context.js';
import { costsOf } from '../compute/costs.js';
import { JobThreads } from './pool.js';
import { LinkSigner } from './signing.js';
import type { FromJobThread } from './protocol.js';
import { jobLogOwner, jobThreadInit, RunRecords } from './records.js';
import { sweepJobFiles } from './orphans.js';
import type { TaskQueue } from './task-queue.js';
import { log } from '../core/log.js';
import type { EngineHost } from '../compute/ports.js';
import type { RemoteProcesses } from '../graph/remote-processes.js';
import { askedGauge } from '../core/metrics.js';

export { jobLogOwner };
/** Restarts of one run after the server died under it, before the job is given up. */
export const MAX_INTERRUPTIONS = 2;
/** How long a delete or shutdown waits for the computation to halt before terminating its thread. */
const STOP_GRACE_MS = 800;
/** How often the results kept past their `unpublished` time are looked for (XEO_JOB_RESULT_TTL). */
const UNPUBLISH_EVERY_MS = 3600_000;
/**
 * A cancel waits longer: the chunks done are kept as a partial result only if the computation
 * halts at a chunk's end, and on a loaded machine one chunk can take seconds.
 */
const CANCEL_GRACE_MS = 3000;

interface Active {
  jobId: string;
  run: number;
  logLevel: LogLevel;
  runDir: string;
  /** Why the run is being stopped, once it is. */
  stop?: 'cancel' | 'delete' | 'shutdown';
  ended: Promise<void>;
  end(): void;
}

export type JobFields = Pick<JobRecord, 'title' | 'description' | 'process' | 'plan' | 'budget' | 'logLevel' | 'options'>;

/** What the API asks of batch jobs (another implementation may take its place). */
export type Jobs = Pick<JobService, 'create' | 'start' | 'cancel' | 'remove' | 'lastError' | 'links' | 'results' | 'close' | 'health' | 'pingQueue'>;

export class JobService {
  private readonly active = new Map<string, Active>();
  private readonly threads: JobThreads;
  private readonly runRoot: string;
  private closed = false;
  private readonly records: RunRecords;
  /** Asks for one more round of the queue after the one under way (pump). */
  private pumping: Promise<void> | null = null;
  private pumpAgain = false;
  /** This node's id (kept in its data dir): the runs it claims are its to settle after a restart. */
  private readonly node: string;
  private unpublishTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: Store,
    /** Where finished result files live, under `<job id>/<asset>`. */
    readonly results: BlobStore,
    private readonly config: Config,
    /** Signs the links of result documents and files. */
    readonly links: LinkSigner,
    /** What job threads ask of the main thread (item searches, UDF runtimes, users' files). */
    host: EngineHost,
    /** Processes named by URL that jobs' graphs call. */
    remote: RemoteProcesses,
    /** The queue of `xeo worker` processes: when given, jobs run there, not on this node's threads. */
    private readonly tasks: TaskQueue | null = null,
  ) {
    this.runRoot = path.join(config.dataDir, 'jobs-tmp');
    this.records = new RunRecords(store, results, config, remote);
    this.node = nodeId(config.dataDir);
    this.threads = new JobThreads(tasks ? 0 : config.jobThreads, jobThreadInit(config), host, { message: (m) => this.onMessage(m) });
    askedGauge('xeo_jobs_queued', 'Batch jobs waiting in the queue of the records (shared by every node on one database).', () => store.jobQueue.size());
  }

  /** Settles what a previous server left behind, then starts queued jobs. */
  async init(): Promise<void> {
    if (this.config.jobResultTtlSeconds > 0) {
      this.unpublish();
      // Hourly, or as often as results expire when they are kept for less than an hour.
      this.unpublishTimer = setInterval(() => this.unpublish(), Math.min(UNPUBLISH_EVERY_MS, Math.max(1000, this.config.jobResultTtlSeconds * 1000)));
      this.unpublishTimer.unref();
    }
    // With workers, runs are the queue's: a node that starts has nothing of its own to settle. A
    // queued job whose task is missing (records moved from an embedded installation, a queue
    // that lost its data) gets it; a task still there is not added twice.
    if (this.tasks) {
      for (const job of await this.store.jobs.withStatus('queued')) {
        await this.tasks.submitPlan(job.id, job.run).catch((e: unknown) => log.warn('a queued job could not be handed to the queue at start', { job: job.id, err: e }));
      }
      this.sweep();
      return;
    }
    // Only this node's runs: another node sharing the database may be running its own right now.
    for (const job of (await this.store.jobs.withStatus('running')).filter((j) => j.node === this.node || j.node === null)) {
      const interruptions = job.interruptions + 1;
      if (interruptions > MAX_INTERRUPTIONS) {
        await this.store.jobs.transition(job.id, ['running'], 'error', { interruptions });
        void this.log(job, { level: 'error', code: 'Internal', message: `The server stopped ${interruptions} times while this job ran, so it is not started again. Start it again to retry.` });
      } else {
        await this.store.jobs.transition(job.id, ['running'], 'queued', { interruptions, progress: 0, costs: 0 });
        void this.log(job, { level: 'warning', message: `The server stopped while this job ran (run ${job.run}). It is queued again and starts from the beginning; nothing of the interrupted run is kept.` });
      }
    }
    // Canceled while its partial result was being written: that result is lost.
    for (const job of await this.store.jobs.withStatus('canceled')) {
      if (!(await this.store.jobResults.get(job.id)) && (await this.store.jobs.transition(job.id, ['canceled'], 'created'))) {
        void this.log(job, { level: 'warning', message: 'The server stopped before the partial result of the canceled run was written; the job is back to created.' });
      }
    }
    this.sweep();
    await mkdir(this.runRoot, { recursive: true });
    this.pump();
  }

  /** For readiness: this node's job threads (none when workers run the jobs). */
  health(): { ready: boolean; detail: string } {
    if (this.closed) return { ready: false, detail: 'closed' };
    return this.tasks ? { ready: true, detail: 'jobs run on workers (xeo worker)' } : this.threads.health();
  }

  /** Pings the queue's Redis (readiness); null without one. */
  pingQueue(): Promise<void> | null {
    return this.tasks ? this.tasks.ping() : null;
  }

  /** The last error of a job's log (what GET results answers for a failed job). */
  async lastError(jobId: string): Promise<LogEntry | null> {
    const errors = await this.store.logs.page(jobLogOwner(jobId), null, 'error', Number.MAX_SAFE_INTEGER);
    return errors[errors.length - 1] ?? null;
  }

  /** Removes the results whose `unpublished` time has passed (in the background; any node may do it, once counts). */
  private unpublish(): void {
    const run = async () => {
      for (const job of await this.store.jobs.unpublishedBefore(new Date().toISOString())) {
        if (!(await this.store.jobResults.delete(job.id))) continue;
        await this.results.deleteTree(job.id);
        void this.log(job, { level: 'info', message: `The results were removed: they were kept until ${job.unpublished} (XEO_JOB_RESULT_TTL). Start the job again for new ones.` });
      }
    };
    run().catch((e: unknown) => console.error(`[xeo] could not remove results past their time: ${(e as Error).message}`));
  }

  /** Job files no record accounts for (orphans.ts), swept in the background: a large bucket takes a while to list. */
  private sweep(): void {
    sweepJobFiles(this.store, this.results).then(
      (n) => n > 0 && log.info(`removed ${n} job file(s) that no record accounts for`),
      (e: unknown) => log.error(`could not sweep the job files: ${(e as Error).message}`),
    );
  }

  /** Adds a log entry when its level reaches the job's log level. */
  log(job: { id: string; logLevel: LogLevel }, entry: Omit<LogEntry, 'id' | 'time'>): Promise<void> {
    return this.records.log(job, entry);
  }

  async create(id: string, userId: string, fields: JobFields): Promise<JobRecord> {
    const job = await this.store.jobs.create({ id, userId, ...fields });
    await this.log(job, { level: 'info', message: 'Created. Start it with POST /jobs/{job_id}/results.' });
    return job;
  }

  /**
   * Queues a job (created, or a restart of a canceled, finished or failed one, whose results are
   * discarded first). A queued or running job is left as it is: answers false.
   */
  async start(job: JobRecord): Promise<boolean> {
    if (job.status === 'queued' || job.status === 'running') return false;
    // A canceled run may still be writing its partial result: let it end first.
    await this.active.get(job.id)?.ended;
    const restart = job.status !== 'created';
    if ((await this.store.jobResults.delete(job.id)) || restart) await this.results.deleteTree(job.id);
    const run = job.run + 1;
    if (!(await this.store.jobQueue.enqueue(job.id, { run, progress: 0, costs: 0, usage: null, interruptions: 0 }))) return false;
    if (this.tasks) {
      try {
        await this.tasks.guard(this.tasks.submitPlan(job.id, run));
      } catch (e) {
        // Not queued after all: the job stays as a retry will find it.
        await this.store.jobQueue.withdraw(job.id);
        throw e;
      }
    }
    const waiting = await this.store.jobQueue.size();
    void this.log(job, {
      level: 'info',
      message: `${restart ? `Restarted from status ${job.status}; the results of the previous run are discarded. ` : ''}Queued (run ${run}); ${waiting} job(s) wait.`,
    });
    this.pump();
    return true;
  }

  /**
   * Cancels: a queued job goes back to created. A running one stops computing at the end of the
   * chunk under way (or its thread is ended after CANCEL_GRACE_MS) and answers then: it becomes
   * canceled when chunks were done (their partial result, no-data
   * elsewhere, is written next and listed once written), else created. Other statuses: nothing.
   */
  async cancel(job: JobRecord): Promise<void> {
    if (job.status === 'queued') {
      if (await this.store.jobQueue.withdraw(job.id)) await this.log(job, { level: 'info', message: 'Canceled while queued; the job is back to created.' });
      return;
    }
    if (job.status !== 'running') return;
    if (this.tasks) return this.cancelOnWorkers(job);
    const a = this.active.get(job.id);
    if (!a) {
      await this.store.jobs.transition(job.id, ['running'], 'created');
      return;
    }
    a.stop ??= 'cancel';
    const how = await this.threads.stop(job.id, true, CANCEL_GRACE_MS);
    if (how === 'terminated') {
      void this.log(job, { level: 'warning', message: `The computation did not halt within ${CANCEL_GRACE_MS} ms, so its thread was ended.` });
      await a.ended;
    }
  }

  /**
   * Cancels a run on the workers: every worker hears the stop at once and ends the run's tasks
   * (within half a second, or their threads are ended); chunks done become a partial result
   * assembled by one of them, or the job is back to created when none was done.
   */
  private async cancelOnWorkers(job: JobRecord): Promise<void> {
    const tasks = this.tasks!;
    await tasks.guard(tasks.stop(job.id, job.run, 'cancel'));
    const { done } = await tasks.guard(tasks.tally(job.id, job.run));
    if (done === 0) return void (await this.records.canceledEmpty({ jobId: job.id, run: job.run, logLevel: job.logLevel }, 'running'));
    if (!(await this.store.jobs.transition(job.id, ['running'], 'canceled'))) return;
    void this.log(job, { level: 'info', message: `Canceled after ${done} chunk(s). Their partial result (no-data elsewhere) is written now and then listed by GET /jobs/{job_id}/results?partial=true.` });
    await tasks.guard(tasks.submitAssemble(job.id, job.run, true));
  }

  /** Deletes a job: stops its computation, then its records and files. */
  async remove(job: JobRecord): Promise<void> {
    if (this.tasks && (job.status === 'running' || job.status === 'queued' || job.status === 'canceled')) await this.tasks.guard(this.tasks.stop(job.id, job.run, 'delete'));
    const a = this.active.get(job.id);
    if (a) {
      a.stop = 'delete';
      await this.threads.stop(job.id, false, STOP_GRACE_MS);
      await a.ended;
    }
    await this.store.jobs.delete(job.id);
    await this.store.logs.deleteOwner(jobLogOwner(job.id));
    await this.results.deleteTree(job.id);
  }

  /**
   * Starts queued jobs while threads are free. One round at a time (a round claims from the
   * records); a call during a round asks for one more after it, so no call is lost.
   */
  private pump(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = this.pumpRound()
      .catch((e: unknown) => log.error(`could not start queued jobs: ${(e as Error).message}`))
      .finally(() => {
        this.pumping = null;
        if (this.pumpAgain) {
          this.pumpAgain = false;
          this.pump();
        }
      });
  }

  private async pumpRound(): Promise<void> {
    while (!this.closed && this.threads.idle() > this.starting) {
      const job = await this.store.jobQueue.claim(this.node);
      if (!job) return;
      await this.dispatch(job);
    }
  }

  /** Claimed runs whose thread is not started yet (their spec is being read). */
  private starting = 0;

  private async dispatch(job: JobRecord): Promise<void> {
    const runDir = path.join(this.runRoot, `${job.id}.${job.run}`);
    let end!: () => void;
    const ended = new Promise<void>((r) => (end = r));
    const a: Active = { jobId: job.id, run: job.run, logLevel: job.logLevel, runDir, ended, end };
    this.active.set(job.id, a);
    void this.log(job, { level: 'info', message: `Running (run ${job.run}).` });
    log.info(`run ${job.run} started on this node`, { job: job.id });
    this.starting++;
    try {
      await mkdir(runDir, { recursive: true });
      const spec = await this.records.spec(job, runDir);
      if (a.stop) throw new Error('stopped before it started');
      this.threads.start(spec);
    } catch (e) {
      // The run never reached a thread (its stored processes could not be read, say): it fails.
      if (!a.stop) await this.records.fail(a, errorToData(e instanceof ApiError ? e : new ApiError('Internal')), []).catch(() => {});
      if (this.active.get(job.id) === a) this.active.delete(job.id);
      a.end();
    } finally {
      this.starting--;
    }
  }

  private onMessage(m: FromJobThread): void {
    const a = this.active.get(m.jobId);
    if (!a || a.run !== m.run) return;
    const job = { id: a.jobId, logLevel: a.logLevel };
    switch (m.type) {
      case 'log':
        return void this.log(job, m.entry);
      case 'progress':
        // A report that does not reach the records is overtaken by the next one, or by the end.
        this.store.jobs.report(a.jobId, a.run, { progress: Math.floor((m.done * 1000) / m.total) / 10, costs: costsOf(m.values) }).catch(() => {});
        return;
      case 'halted':
        return void this.halted(a, m.done).catch((e: unknown) => log.error(`the cancel could not be recorded: ${(e as Error).message}`, { job: a.jobId }));
      case 'done':
        return void this.settle(a, () => this.records.keep(a, m.outcome));
      case 'stopped':
        return void this.settle(a, async () => this.stoppedEmpty(a));
      case 'failed':
        return void this.settle(a, async () => {
          // A failure after a stop request (the computation cut short) is the stop's outcome.
          if (a.stop) return this.stoppedEmpty(a);
          await this.records.fail(a, m.error, m.path);
        });
    }
  }

  /** A canceled run stopped computing: canceled with the chunks done, or back to created without any. */
  private async halted(a: Active, done: number): Promise<void> {
    if (a.stop !== 'cancel') return;
    const job = { id: a.jobId, logLevel: a.logLevel };
    if (done > 0 && (await this.store.jobs.transition(a.jobId, ['running'], 'canceled'))) {
      void this.log(job, { level: 'info', message: `Canceled after ${done} chunk(s). Their partial result (no-data elsewhere) is written now and then listed by GET /jobs/{job_id}/results?partial=true.` });
    } else if (done === 0) await this.stoppedEmpty(a);
  }

  /** A canceled run that left nothing (or could not write its partial result): back to created. */
  private async stoppedEmpty(a: Active): Promise<void> {
    if (a.stop !== 'cancel') return;
    if (!(await this.records.canceledEmpty(a, 'running')) && (await this.store.jobs.transition(a.jobId, ['canceled'], 'created'))) {
      void this.log({ id: a.jobId, logLevel: a.logLevel }, { level: 'warning', message: 'The partial result could not be written; the job is back to created.' });
    }
  }

  /** Runs the end of a run once, then frees its slot for the next job. */
  private async settle(a: Active, fn: () => Promise<void>): Promise<void> {
    try {
      if (a.stop !== 'delete' && a.stop !== 'shutdown') await fn();
    } catch (e) {
      log.error('ending the run failed', { job: a.jobId, err: e });
      // records unreachable: the failure is logged above; a run left running is settled when its node starts again
      if (await this.store.jobs.transition(a.jobId, ['running'], 'error').catch(() => false)) {
        void this.log({ id: a.jobId, logLevel: a.logLevel }, { level: 'error', code: 'StorageFailure', message: 'The results could not be stored.' });
      }
    } finally {
      await rm(a.runDir, { recursive: true, force: true }).catch((e: unknown) => log.warn('the run folder could not be removed', { job: a.jobId, err: e }));
      if (this.active.get(a.jobId) === a) this.active.delete(a.jobId);
      a.end();
      this.pump();
    }
  }

  /** Stops the job threads; running jobs are queued again (they start over on the next start). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.unpublishTimer) clearInterval(this.unpublishTimer);
    const running = [...this.active.values()];
    for (const a of running) a.stop = 'shutdown';
    await this.threads.close();
    // A round of the queue under way ends first: it may be starting a run.
    await this.pumping;
    for (const a of running) {
      try {
        await this.stopRun(a);
      } catch (e) {
        log.error(`the stop could not be recorded (it is settled when a node starts): ${(e as Error).message}`, { job: a.jobId });
      }
      a.end();
    }
    this.active.clear();
    await this.tasks?.close();
  }

  /** What an orderly stop leaves of a run: queued again, or a canceled one without its partial result back to created. */
  private async stopRun(a: Active): Promise<void> {
    const job = { id: a.jobId, logLevel: a.logLevel };
    if (!(await this.store.jobResults.get(a.jobId)) && (await this.store.jobs.transition(a.jobId, ['canceled'], 'created'))) {
      await this.log(job, { level: 'warning', message: 'The server was stopped before the partial result of the canceled run was written; the job is back to created.' });
    }
    if (await this.store.jobs.transition(a.jobId, ['running'], 'queued', { progress: 0, costs: 0 })) {
      log.info('queued again: this node is stopping', { job: a.jobId });
      await this.log(job, { level: 'info', message: 'The server was stopped; the job is queued again and starts from the beginning when the server is back.' });
    }
  }
}

/** A random id made once per data dir, so a node keeps it across restarts. */
export function nodeId(dataDir: string): string {
  const file = path.join(dataDir, 'node-id');
  mkdirSync(dataDir, { recursive: true });
  try {
    writeFileSync(file, randomBytes(9).toString('base64url'), { flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  return readFileSync(file, 'utf8').trim();
}
