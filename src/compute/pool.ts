// A bounded pool of compute threads. Work beyond the threads waits in a short queue; when that is
// full too, the caller gets 503 InfrastructureBusy with Retry-After at once instead of an
// unbounded backlog. A crashed thread fails its tasks and is replaced.
//
// Map tiles share threads: a thread draws up to `tilesPerThread` tiles at once, so while one waits
// for its remote data (a search, headers, blocks: round trips of tens of milliseconds each) the
// others compute or wait alongside, instead of a burst of tiles taking its round trips one tile
// after another. Other graphs (/result) get a thread of their own, and while one waits no tile
// joins a busy thread, so tiles never starve it.
import { Worker } from 'node:worker_threads';
import { ApiError, errorFromData, type ErrorData } from '../core/errors.js';
import type { AnswerOf, ExecuteRequest, ExecuteResult } from '../engine/execute.js';
import { withRunLogs, type RunLog } from '../core/run-context.js';
import type { ToWorker, WorkerInit } from '../engine/compute-thread.js';
import { ENGINE_THREAD_LIMITS, threadPorts, type EngineHost } from './ports.js';
import { gauge, poolTasks, poolTaskSlot } from '../core/metrics.js';
import { log } from '../core/log.js';
import { THREAD_NAMES } from '../core/thread-names.js';

const OK = poolTaskSlot('compute', 'ok');
const FAILED = poolTaskSlot('compute', 'failed');
const CANCELED = poolTaskSlot('compute', 'canceled');
const SHED = poolTaskSlot('compute', 'shed');

interface Task {
  id: number;
  req: ExecuteRequest;
  resolve(r: ExecuteResult): void;
  reject(e: unknown): void;
  slot?: Slot;
}

interface Slot {
  worker: Worker;
  /** The tasks it runs: one graph, or up to tilesPerThread tiles. */
  tasks: Map<number, Task>;
}

export interface PoolOptions extends Omit<WorkerInit, 'searchPort' | 'udf' | 'filesPort' | 'metricsPort' | 'log'> {
  /** What the threads ask of the main thread (item searches, UDF runtimes, users' files). */
  host: EngineHost;
  threads: number;
  queue: number;
  /** Map tiles one thread draws at once (default 1: one task per thread). */
  tilesPerThread?: number;
}

const isTile = (t: Task) => t.req.mode === 'tile';
/** Whether a slot runs tiles only: a graph that is no tile only ever goes to an idle thread, so the first task tells. */
const runsTiles = (s: Slot) => {
  const first = s.tasks.values().next();
  return first.done || isTile(first.value);
};

/** What the rest of the server asks of compute: run a graph, and stop. */
export type Compute = Pick<ComputePool, 'run' | 'close' | 'health'>;

export class ComputePool {
  private readonly slots: Slot[] = [];
  private readonly waiting: Task[] = [];
  private nextId = 1;
  private closed = false;
  private unready = 0;
  private onReady: () => void = () => {};
  /** Resolves once every thread has warmed up (engine/warm-up.ts): the server listens after it. */
  readonly ready: Promise<void>;

  constructor(private readonly opts: PoolOptions) {
    this.unready = opts.threads;
    this.ready = new Promise((r) => (this.onReady = r));
    for (let i = 0; i < opts.threads; i++) this.slots.push(this.spawn());
    gauge('xeo_compute_threads', 'Compute threads (graphs of /result and tiles), busy or idle.', ['state'], () => {
      const busy = this.slots.filter((s) => s.tasks.size).length;
      return [
        { labels: { state: 'busy' }, value: busy },
        { labels: { state: 'idle' }, value: this.slots.length - busy },
      ];
    });
    gauge('xeo_compute_queue_length', 'Graphs waiting for a compute thread (XEO_COMPUTE_QUEUE bounds it).', [], () => [{ labels: {}, value: this.waiting.length }]);
  }

  /** For readiness: threads up and warmed, how many are busy and how many graphs wait. */
  health(): { ready: boolean; detail: string } {
    const busy = this.slots.filter((s) => s.tasks.size).length;
    const detail = `${this.slots.length} thread(s), ${busy} busy, ${this.waiting.length} waiting`;
    if (this.closed) return { ready: false, detail: 'closed' };
    if (this.unready > 0) return { ready: false, detail: `${this.unready} thread(s) still warming up` };
    return { ready: true, detail };
  }

  private spawn(): Slot {
    const { searchPort, udf, filesPort, metricsPort, log: logging, transferList } = threadPorts(this.opts.host);
    const worker = new Worker(new URL('../engine/compute-thread.js', import.meta.url), {
      name: THREAD_NAMES.compute,
      workerData: {
        dataDir: this.opts.dataDir,
        databaseUrl: this.opts.databaseUrl,
        database: this.opts.database,
        blockCacheBytes: this.opts.blockCacheBytes,
        outboundAllow: this.opts.outboundAllow,
        arenaKeepBytes: this.opts.arenaKeepBytes,
        kernelThreads: this.opts.kernelThreads,
        vector: this.opts.vector,
        models: this.opts.models,
        ml: this.opts.ml,
        searchPort,
        udf,
        filesPort,
        metricsPort,
        log: logging,
      } satisfies WorkerInit,
      transferList,
      resourceLimits: ENGINE_THREAD_LIMITS,
    });
    const slot: Slot = { worker, tasks: new Map() };
    worker.on('message', (m: { type?: 'ready'; id: number; ok: boolean; result?: ExecuteResult; error?: ErrorData; logs?: RunLog[] }) => {
      if (m.type === 'ready') {
        // Kept referenced until then, so a start-up awaiting `ready` has something to wait for.
        worker.unref();
        if (--this.unready === 0) this.onReady();
        return;
      }
      const t = slot.tasks.get(m.id);
      if (!t) return;
      slot.tasks.delete(m.id);
      if (m.ok) {
        poolTasks.inc(OK);
        const r = m.result!;
        // The bytes crossed as a Uint8Array: a Buffer again, on the same memory.
        t.resolve(r.kind === 'encoded' ? { ...r, body: Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength) } : r);
      } else {
        poolTasks.inc(m.error!.code === 'ClientClosedRequest' ? CANCELED : FAILED);
        t.reject(withRunLogs(errorFromData(m.error!), m.logs));
      }
      this.pump();
    });
    worker.on('error', (e) => {
      log.error('a compute thread failed', { err: e });
    });
    worker.on('exit', () => {
      for (const t of slot.tasks.values()) t.reject(new ApiError('Internal'));
      slot.tasks.clear();
      if (this.closed) return;
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots[i] = this.spawn();
      this.pump();
    });
    return slot;
  }

  /**
   * The thread a task may go to now: an idle one, or for a tile the thread with the fewest tiles
   * that runs only tiles and has room, unless a graph that is no tile waits (`otherWaits`): that
   * graph gets the next idle thread, so tiles never starve it.
   */
  private slotFor(req: ExecuteRequest, otherWaits: boolean): Slot | undefined {
    const idle = this.slots.find((s) => s.tasks.size === 0);
    if (idle || req.mode !== 'tile' || otherWaits) return idle;
    const perThread = this.opts.tilesPerThread ?? 1;
    let best: Slot | undefined;
    for (const s of this.slots) {
      if (s.tasks.size >= perThread || (best && s.tasks.size >= best.tasks.size)) continue;
      if (runsTiles(s)) best = s;
    }
    return best;
  }

  /** Hands waiting tasks to threads, oldest first (slotFor). */
  private pump(): void {
    let otherWaits = false;
    for (let i = 0; i < this.waiting.length;) {
      const t = this.waiting[i];
      const slot = this.slotFor(t.req, otherWaits);
      if (!slot) {
        otherWaits ||= !isTile(t);
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      slot.tasks.set(t.id, t);
      t.slot = slot;
      slot.worker.postMessage({ id: t.id, type: 'execute', req: t.req } satisfies ToWorker);
    }
  }

  /** Runs a graph; `signal` (e.g. the client going away) cancels it. */
  run<R extends ExecuteRequest>(req: R, signal?: AbortSignal): Promise<AnswerOf<R['answer']['kind']>> {
    return this.runAny(req, signal) as Promise<AnswerOf<R['answer']['kind']>>;
  }

  private runAny(req: ExecuteRequest, signal?: AbortSignal): Promise<ExecuteResult> {
    // Shed when it would wait and the queue is full.
    if (
      this.waiting.length >= this.opts.queue &&
      !this.slotFor(
        req,
        this.waiting.some((w) => !isTile(w)),
      )
    ) {
      poolTasks.inc(SHED);
      const e = new ApiError('InfrastructureBusy');
      e.headers = { 'Retry-After': '2' };
      return Promise.reject(e);
    }
    return new Promise<ExecuteResult>((resolve, reject) => {
      const task: Task = { id: this.nextId++, req, resolve, reject };
      signal?.addEventListener(
        'abort',
        () => {
          const i = this.waiting.indexOf(task);
          if (i >= 0) this.waiting.splice(i, 1);
          else if (task.slot?.tasks.get(task.id) === task) task.slot.worker.postMessage({ id: task.id, type: 'cancel' } satisfies ToWorker);
          reject(signal.reason);
        },
        { once: true },
      );
      this.waiting.push(task);
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.waiting.splice(0)) t.reject(new ApiError('InfrastructureMaintenance'));
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}
