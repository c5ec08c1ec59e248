// `xeo worker`: runs batch job work taken from the queue (task-queue.ts) on this machine's job
// threads, with the records in the shared database and files in the shared result store. Any
// number of workers on any number of machines take tasks side by side: a job is planned by one,
// its chunks computed and encoded for the COG by all (each kept in the result store until the
// assembly), and its COG assembled by one, placing each chunk's tiles as soon as it is done.
//
// Failures: a chunk that fails because of the job itself (its graph, its data, its budget) ends
// the job in error at once; any other failure (a thread that died, storage away) is tried again,
// up to XEO_CHUNK_ATTEMPTS, then ends the job in error with the last reason in its log. A worker
// that dies loses nothing: its task's lease runs out and another worker takes the task over.
import { mkdtempSync, mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { Worker as QueueWorker, WaitingError } from 'bullmq';
import { LRUCache } from 'lru-cache';
import type { Config } from '../core/config.js';
import { ApiError, errorFromData, errorToData, type ErrorData } from '../core/errors.js';
import { messageOf } from '../core/messages.js';
import type { BlobStore } from '../store/blobs.js';
import type { JobRecord, Store } from '../store/types.js';
import { costsOf, valuesFor } from '../compute/costs.js';
import type { PathEntry } from '../graph/evaluate.js';
import { JobThreads } from './pool.js';
import type { FromJobThread, JobTask } from './protocol.js';
import { jobThreadInit, RunRecords, type RunRef } from './records.js';
import type { EngineHost } from '../compute/ports.js';
import type { RemoteProcesses } from '../graph/remote-processes.js';
import { planWindows, usageOf, writeZonal } from './runner.js';
import { decodeVectorCube } from '../datacube/vector-blob.js';
import type { DataCube } from '../datacube/datacube.js';
import { cogSink, type CogSink } from './outputs.js';
import { readChunkBlob } from './chunk-blobs.js';
import { ASSEMBLE_QUEUE_NAME, QUEUE_NAME, redisOptions, TaskQueue, type Task, type TaskData, type TaskKind } from './task-queue.js';
import { log } from '../core/log.js';
import { askedGauge, gauge } from '../core/metrics.js';

/** Assemblies one worker writes at once (they mostly wait for chunks, and deflate on libuv's pool). */
const ASSEMBLIES = 2;
/** How often an assembly looks for chunks done. */
const ASSEMBLY_POLL_MS = 100;
/** How long a stop waits for a task's computation to halt before its thread is ended. */
const STOP_GRACE_MS = 500;
/** Memory for the chunks this worker keeps for its own assemblies. */
const OWN_CHUNK_BYTES = 256 * 1024 * 1024;
/** Failures that say nothing about the job: the task is tried again. */
const TRANSIENT = new Set(['Internal', 'StorageFailure', 'InfrastructureBusy', 'CollectionUnavailable']);

/** Where a run's chunk planes wait for the assembly, in the result store. */
export const chunkPrefix = (jobId: string, run: number) => `${jobId}/run-${run}`;
const chunkKey = (jobId: string, run: number, index: number) => `${chunkPrefix(jobId, run)}/chunk-${index}`;

interface Waiting {
  ref: RunRef;
  resolve(m: FromJobThread): void;
}

/** The worker is stopping (SIGTERM): the task is handed back to the queue, not finished here. */
class Drained extends Error {
  constructor() {
    super('the worker is stopping');
  }
}

export class JobWorker {
  private readonly threads: JobThreads;
  private readonly waiting = new Map<string, Waiting>();
  private readonly records: RunRecords;
  private readonly tmpRoot: string;
  private readonly queueWorkers: QueueWorker<TaskData, unknown, TaskKind>[] = [];
  /**
   * The chunks this worker stored lately, as stored: when it also assembles their run, it places
   * them without reading them back from the result store (the store's copy is what other workers,
   * and a worker taking over, read).
   */
  private readonly ownChunks = new LRUCache<string, Uint8Array>({ maxSize: OWN_CHUNK_BYTES, sizeCalculation: (b) => b.byteLength });
  /** Set by close(): running tasks stop and go back to the queue for another worker. */
  private draining = false;
  /** Tasks handed back to the queue by close(). */
  private handedBack = 0;
  /** Tasks taken from the queue that wait for a job thread. */
  private waitingForThread = 0;

  constructor(
    private readonly store: Store,
    private readonly results: BlobStore,
    private readonly config: Config,
    /** What job threads ask of the main thread (item searches, UDF runtimes, users' files). */
    host: EngineHost,
    /** Processes named by URL that jobs' graphs call. */
    remote: RemoteProcesses,
    private readonly tasks: TaskQueue,
    /** This worker's id, recorded on the runs it plans. */
    readonly node: string,
  ) {
    this.records = new RunRecords(store, results, config, remote);
    this.tmpRoot = path.join(config.dataDir, 'worker-tmp');
    this.threads = new JobThreads(config.jobThreads, jobThreadInit(config), host, { message: (m) => this.onMessage(m) });
    askedGauge('xeo_jobs_queued', 'Batch jobs waiting in the queue of the records (shared by every node on one database).', () => store.jobQueue.size());
    gauge('xeo_job_tasks_waiting', 'Tasks this worker took from the queue that wait for a free job thread.', [], () => [{ labels: {}, value: this.waitingForThread }]);
  }

  async start(): Promise<void> {
    await rm(this.tmpRoot, { recursive: true, force: true });
    mkdirSync(this.tmpRoot, { recursive: true });
    await this.tasks.onStop((jobId, run) => this.stopRun(jobId, run));
    const leaseMs = this.config.queueLeaseSeconds * 1000;
    const options = {
      connection: redisOptions(this.tasks.url),
      lockDuration: leaseMs,
      stalledInterval: leaseMs,
      // A task whose worker died this often is not the worker's fault alone: it fails (and is retried as a failure).
      maxStalledCount: 3,
    };
    // One task more than threads: a chunk is stored while the next one computes.
    this.queueWorkers.push(new QueueWorker<TaskData, unknown, TaskKind>(QUEUE_NAME, (task, token) => this.process(task, token), { ...options, concurrency: this.config.jobThreads + 1 }));
    this.queueWorkers.push(new QueueWorker<TaskData, unknown, TaskKind>(ASSEMBLE_QUEUE_NAME, (task, token) => this.process(task, token), { ...options, concurrency: ASSEMBLIES }));
    for (const w of this.queueWorkers) w.on('error', (e) => log.error(`the job queue: ${e.message}`, { worker: this.node }));
    await Promise.all(this.queueWorkers.map((w) => w.waitUntilReady()));
  }

  /** For readiness: the job threads. */
  health(): { ready: boolean; detail: string } {
    return this.draining ? { ready: false, detail: 'stopping' } : this.threads.health();
  }

  /** Pings the queue's Redis (readiness). */
  pingQueue(): Promise<void> {
    return this.tasks.ping();
  }

  /**
   * An orderly stop: no new task is taken; the tasks running here stop computing and go back to
   * the queue at once (not when their lease runs out), where other workers take them; then the
   * connections close. Answers how many tasks were handed back.
   */
  async close(graceMs: number): Promise<number> {
    this.draining = true;
    // shutting down: a queue connection that fails to close has nothing left to hand back
    const closing = Promise.all(this.queueWorkers.map((w) => w.close().catch(() => {})));
    // the thread may have ended already; threads.close() below ends every one anyway
    for (const ticket of [...this.waiting.keys()]) void this.threads.stopTicket(ticket, false, STOP_GRACE_MS).catch(() => {});
    // A task that cannot even hand itself back (Redis away) is not waited for past the grace time:
    // its lease runs out and another worker takes it over.
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([closing.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs)))]);
    clearTimeout(timer);
    // shutting down: a queue connection that fails to close has nothing left to hand back
    if (late) await Promise.all(this.queueWorkers.map((w) => w.close(true).catch(() => {})));
    await this.threads.close();
    await this.tasks.close();
    return this.handedBack;
  }

  private async process(task: Task, token?: string): Promise<void> {
    try {
      if (this.draining) throw new Drained();
      await this.perform(task);
    } catch (e) {
      if (e instanceof Drained || (this.draining && !(e instanceof Logged))) {
        // Back to the queue at once, its tries untouched: another worker starts it from the beginning.
        await task.moveToWait(token);
        this.handedBack++;
        log.info(`${task.name} task handed back to the queue`, { worker: this.node, job: task.data.jobId });
        throw new WaitingError();
      }
      // Told the job's log already (a computation that failed): only tried again.
      if (e instanceof Logged) throw e;
      // Storage or records away, say: tried again after a pause; the last try ends the job in error.
      const { jobId, run } = task.data;
      const tries = task.attemptsMade + 1;
      const last = tries >= (task.opts.attempts ?? 1);
      // records unreachable as well: the try is logged and the task tried again; only the last try ends the job
      const job = await this.store.jobs.byId(jobId).catch(() => null);
      if (job && job.run === run) {
        const ref = { jobId, run, logLevel: job.logLevel };
        const what = task.name === 'chunk' ? `chunk ${task.data.index! + 1}` : task.name === 'plan' ? 'planning the job' : 'writing the result';
        // The cause stays in the worker's log: users are told what failed, not the operator's addresses.
        if (!(e instanceof ApiError)) log.error(`${what} failed (try ${tries}): ${(e as Error).message}`, { worker: this.node, job: jobId });
        const reason = e instanceof ApiError ? messageOf(e, 'en').text : "The job's storage or records could not be reached.";
        try {
          await this.logTry(task, ref, what, reason, last ? 'error' : 'warning');
          if (last && (await this.records.fail(ref, errorToData(new ApiError('StorageFailure')), [], job.status === 'canceled' ? 'canceled' : 'running'))) await this.tasks.stop(jobId, run, 'error');
        } catch {
          // The records are away too: the job stays as it is until they are back.
        }
      }
      throw e;
    }
  }

  private async perform(task: Task): Promise<void> {
    const { jobId, run } = task.data;
    const partial = task.name === 'assemble' && task.data.partial === true;
    // A stopped run's tasks end here, except the assembly of a cancel's partial result.
    const word = await this.tasks.stopped(jobId, run);
    if (word && !(partial && word === 'cancel')) return;
    const job = await this.store.jobs.byId(jobId);
    if (!job || job.run !== run) return;
    const ref: RunRef = { jobId, run, logLevel: job.logLevel };
    if (task.name === 'plan') {
      if (job.status === 'queued') {
        const claimed = await this.store.jobQueue.claimRun(jobId, run, this.node);
        if (!claimed) return;
        void this.records.log(claimed, { level: 'info', message: `Running (run ${run}) on worker ${this.node}.` });
        log.info(`run ${run} planned here`, { worker: this.node, job: jobId });
      } else if (job.status !== 'running') return;
      return this.plan(task, ref, job);
    }
    if (task.name === 'chunk') return job.status === 'running' ? this.chunk(task, ref, job) : undefined;
    if (job.status === (partial ? 'canceled' : 'running')) return this.assemble(ref, partial);
  }

  private async plan(task: Task, ref: RunRef, job: JobRecord): Promise<void> {
    const { jobId, run } = ref;
    let plan = await this.tasks.getPlan(jobId, run);
    if (!plan) {
      const outDir = mkdtempSync(path.join(this.tmpRoot, 'plan-'));
      try {
        const started = Date.now();
        const m = await this.onThread({ type: 'plan', ticket: threadTicket(task), spec: await this.records.spec(job, outDir), started }, ref);
        if (m.type === 'failed') return this.failed(task, ref, m.error, m.path, 'planning the job');
        if (m.type !== 'planned') return;
        if (m.plan.kind === 'done') return await this.records.keep(ref, m.plan.outcome);
        plan = await this.tasks.putPlan(jobId, run, { chunks: m.plan.chunks, started });
      } finally {
        await rm(outDir, { recursive: true, force: true });
      }
    }
    const done = await this.tasks.doneChunks(jobId, run);
    const todo = Array.from({ length: plan.chunks.count }, (_, i) => i).filter((i) => !done.has(i));
    if (todo.length) await this.tasks.submitChunks(jobId, run, todo);
    await this.tasks.submitAssemble(jobId, run, false);
  }

  private async chunk(task: Task, ref: RunRef, job: JobRecord): Promise<void> {
    const { jobId, run } = ref;
    const index = task.data.index!;
    const plan = await this.tasks.getPlan(jobId, run);
    if (!plan) throw new Error(`chunk ${index} of job ${jobId} came before its plan`);
    const count = plan.chunks.count;
    if (!(await this.tasks.isDone(jobId, run, index))) {
      const budget = job.budget === null ? null : valuesFor(job.budget) - (await this.tasks.tally(jobId, run)).values;
      const m = await this.onThread({ type: 'chunk', ticket: threadTicket(task), spec: await this.records.spec(job, ''), plan: plan.chunks, index, budgetValues: budget }, ref);
      if (m.type === 'failed') return this.failed(task, ref, m.error, m.path, `chunk ${index + 1} of ${count}`);
      if (m.type !== 'chunk-done') return;
      // A stop said while the chunk ran: its planes are not wanted.
      if (await this.tasks.stopped(jobId, run)) return;
      const key = chunkKey(jobId, run, index);
      await this.results.write(key, oneBuffer(m.blob));
      this.ownChunks.set(key, m.blob);
      const t = await this.tasks.markDone(jobId, run, index, m.values, m.cpu);
      // The progress and the log line are records of the run, not its result: they do not hold up the next chunk.
      this.store.jobs.report(jobId, run, { progress: Math.floor((t.done * 1000) / count) / 10, costs: costsOf(t.values) }).catch(() => {});
      void this.records.log(job, { level: 'debug', message: `Chunk ${index + 1} of ${count} done on worker ${this.node} (${t.done} of ${count} in all).` });
      // the job was deleted meanwhile: chunks left behind belong to no job and are read by nobody
      if (!(await this.store.jobs.byId(jobId))) await this.results.deleteTree(chunkPrefix(jobId, run)).catch(() => {});
    }
  }

  /**
   * Writes the COG, each chunk as soon as it is done (in whatever order), so that when the last
   * chunk is in only it and the file's end remain; a canceled run's partial result takes the chunks
   * done. A stop word ends a full assembly (the cancel's own assembly writes what was done).
   */
  private async assemble(ref: RunRef, partial: boolean): Promise<void> {
    const { jobId, run } = ref;
    const plan = await this.tasks.getPlan(jobId, run);
    if (!plan) return;
    const windows = planWindows(plan.chunks);
    if (plan.chunks.zonal) return this.assembleZonal(ref, partial, plan);
    const outDir = mkdtempSync(path.join(this.tmpRoot, 'assemble-'));
    const written = new Set<number>();
    let sink: CogSink | null = null;
    const ms = { read: 0, write: 0 };
    const clock = () => performance.now();
    try {
      for (;;) {
        const done = await this.tasks.doneChunks(jobId, run);
        for (const i of [...done].sort((x, y) => x - y)) {
          if (written.has(i)) continue;
          let t = clock();
          const key = chunkKey(jobId, run, i);
          const own = this.ownChunks.get(key);
          this.ownChunks.delete(key);
          const { names, chunk } = readChunkBlob(own ? Buffer.from(own.buffer, own.byteOffset, own.byteLength) : await buffer(await this.results.read(key)));
          ms.read += clock() - t;
          t = clock();
          sink ??= await cogSink(outDir, 'result.tif', plan.chunks.grid, names, plan.chunks.options);
          await sink.writeEncoded(chunk);
          ms.write += clock() - t;
          written.add(i);
        }
        if (partial || written.size === windows.length) break;
        if (this.draining) throw new Drained();
        const job = await this.store.jobs.byId(jobId);
        if ((await this.tasks.stopped(jobId, run)) || !job || job.run !== run || job.status !== 'running') {
          // the run is over either way; a failed abort only leaves a partial upload that nothing links to
          await sink?.abort().catch(() => {});
          return;
        }
        await new Promise((r) => setTimeout(r, ASSEMBLY_POLL_MS));
      }
      if (!sink) {
        if (partial) await this.records.canceledEmpty(ref, 'canceled');
        return;
      }
      let t = clock();
      const file = await sink.finish(windows);
      const finishMs = clock() - t;
      const c = plan.chunks;
      const tally = await this.tasks.tally(jobId, run);
      void this.records.log(
        { id: jobId, logLevel: ref.logLevel },
        {
          level: 'debug',
          message: `Assembled on worker ${this.node}: ${written.size} chunks read in ${Math.round(ms.read)} ms and written in ${Math.round(ms.write)} ms; the file finished in ${Math.round(finishMs)} ms.`,
        },
      );
      t = clock();
      await this.records.keep(ref, { outputs: [file], partial, bbox: c.bbox, geometry: c.geometry, times: c.times, usage: usageOf(plan.started, tally.cpu, c.grid.width * c.grid.height, tally.values) });
      void this.records.log({ id: jobId, logLevel: ref.logLevel }, { level: 'debug', message: `The result was stored in ${Math.round(clock() - t)} ms.` });
      // the result is stored: chunks left behind are read by nobody, and must not fail the job
      await this.results.deleteTree(chunkPrefix(jobId, run)).catch(() => {});
      await this.tasks.forget(jobId, run);
    } catch (e) {
      // the error being thrown is the one to report; a failed abort only leaves a partial upload behind
      await sink?.abort().catch(() => {});
      throw e;
    } finally {
      await rm(outDir, { recursive: true, force: true });
    }
  }

  /**
   * A zonal job's file: once every chunk's part is in (or, for a cancel, those done), the parts are
   * joined in geometry order and written in the saved format. Parts are small: a few values per
   * geometry, with the geometries themselves.
   */
  private async assembleZonal(ref: RunRef, partial: boolean, plan: NonNullable<Awaited<ReturnType<TaskQueue['getPlan']>>>): Promise<void> {
    const { jobId, run } = ref;
    const count = plan.chunks.count;
    for (;;) {
      const done = await this.tasks.doneChunks(jobId, run);
      if (partial || done.size === count) break;
      const job = await this.store.jobs.byId(jobId);
      if ((await this.tasks.stopped(jobId, run)) || !job || job.run !== run || job.status !== 'running') return;
      await new Promise((r) => setTimeout(r, ASSEMBLY_POLL_MS));
    }
    const indices = [...(await this.tasks.doneChunks(jobId, run))].sort((a, b) => a - b);
    if (!indices.length) {
      if (partial) await this.records.canceledEmpty(ref, 'canceled');
      return;
    }
    const parts: DataCube[] = [];
    for (const i of indices) {
      const key = chunkKey(jobId, run, i);
      const own = this.ownChunks.get(key);
      this.ownChunks.delete(key);
      parts.push(decodeVectorCube(own ?? (await buffer(await this.results.read(key)))));
    }
    const outDir = mkdtempSync(path.join(this.tmpRoot, 'assemble-'));
    try {
      const file = await writeZonal(outDir, plan.chunks, parts, indices);
      const c = plan.chunks;
      const tally = await this.tasks.tally(jobId, run);
      await this.records.keep(ref, { outputs: [file], partial, bbox: c.bbox, geometry: c.geometry, times: c.times, usage: usageOf(plan.started, tally.cpu, 0, tally.values) });
      // the result is stored: chunks left behind are read by nobody, and must not fail the job
      await this.results.deleteTree(chunkPrefix(jobId, run)).catch(() => {});
      await this.tasks.forget(jobId, run);
    } finally {
      await rm(outDir, { recursive: true, force: true });
    }
  }

  /** A failed task: the job's own fault ends it now; anything else is tried again, up to the limit. */
  private async failed(task: Task, ref: RunRef, error: ErrorData, where: PathEntry[], what: string): Promise<void> {
    if (error.code === 'Internal') this.threads.recycle(threadTicket(task));
    if (TRANSIENT.has(error.code)) {
      const reason = messageOf(errorFromData(error), 'en').text;
      if (!(await this.logTry(task, ref, what, reason, 'warning'))) throw new Logged(`${what}: ${reason}`);
    }
    if (await this.records.fail(ref, error, where)) await this.tasks.stop(ref.jobId, ref.run, 'error');
  }

  /** One line in the job's log for a failed try; answers whether it was the last. */
  private async logTry(task: Task, ref: RunRef, what: string, reason: string, level: 'warning' | 'error'): Promise<boolean> {
    const tries = task.attemptsMade + 1;
    const attempts = task.opts.attempts ?? 1;
    const last = tries >= attempts;
    await this.records.log({ id: ref.jobId, logLevel: ref.logLevel }, { level, message: `${what} failed on worker ${this.node} (try ${tries} of ${attempts}): ${reason}${last ? '' : ' It is tried again.'}` });
    return last;
  }

  /** Runs a task on a job thread; answers its last message. */
  private async onThread(task: JobTask, ref: RunRef): Promise<FromJobThread> {
    // As many tasks run at once as there are threads; a thread still being replaced is waited for.
    this.waitingForThread++;
    try {
      while (this.threads.idle() === 0) {
        if (this.draining) throw new Drained();
        await this.threads.threadFreed();
      }
    } finally {
      this.waitingForThread--;
    }
    if (this.draining) throw new Drained();
    const m = await new Promise<FromJobThread>((resolve) => {
      this.waiting.set(task.ticket, { ref, resolve });
      if (!this.threads.startTask(task)) {
        this.waiting.delete(task.ticket);
        resolve({ type: 'failed', jobId: ref.jobId, run: ref.run, ticket: task.ticket, error: errorToData(new ApiError('Internal', {}, 'No job thread was free.')), path: [] });
      }
    });
    // Stopped (or cut short) because the worker is stopping: not an outcome of the task.
    if (this.draining && (m.type === 'stopped' || m.type === 'failed')) throw new Drained();
    return m;
  }

  private onMessage(m: FromJobThread): void {
    const w = this.waiting.get(m.ticket);
    if (!w) return;
    const job = { id: w.ref.jobId, logLevel: w.ref.logLevel };
    if (m.type === 'log') return void this.records.log(job, m.entry);
    if (m.type === 'progress') {
      // A job planned as one piece reports its own progress; chunks are counted by the queue.
      if (m.ticket.endsWith('.plan')) this.store.jobs.report(w.ref.jobId, w.ref.run, { progress: Math.floor((m.done * 1000) / m.total) / 10, costs: costsOf(m.values) }).catch(() => {});
      return;
    }
    if (m.type === 'halted') return;
    this.waiting.delete(m.ticket);
    w.resolve(m);
  }

  /** A stop word (cancel, delete, error): the run's tasks on this worker's threads stop now. */
  private stopRun(jobId: string, run: number): void {
    const prefix = `${chunkPrefix(jobId, run)}/`;
    for (const key of [...this.ownChunks.keys()]) if (key.startsWith(prefix)) this.ownChunks.delete(key);
    for (const [ticket, w] of this.waiting) {
      // a thread that has ended already has nothing left to stop
      if (w.ref.jobId === jobId && w.ref.run === run) void this.threads.stopTicket(ticket, false, STOP_GRACE_MS).catch(() => {});
    }
  }
}

/** A failure already in the job's log. */
class Logged extends Error {}

/** The ticket a task runs under on a job thread. */
function threadTicket(task: Task): string {
  const { jobId, run, index } = task.data;
  return task.name === 'chunk' ? `${jobId}.${run}.c${index}` : `${jobId}.${run}.${task.name}`;
}

async function* oneBuffer(bytes: Uint8Array): AsyncIterable<Buffer> {
  yield Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
