// A bounded pool of compute threads. Work beyond the threads waits in a short queue; when that is
// full too, the caller gets 503 InfrastructureBusy with Retry-After at once instead of an
// unbounded backlog. A crashed thread fails its task and is replaced.
import { Worker } from 'node:worker_threads';
import { ApiError, errorFromData, type ErrorData } from '../core/errors.js';
import type { ExecuteRequest, ExecuteResult } from './execute.js';
import { withRunLogs, type RunLog } from '../core/run-context.js';
import type { ToWorker, WorkerInit } from './worker.js';
import { threadPorts } from './thread.js';
import { gauge, poolTasks, poolTaskSlot } from '../core/metrics.js';
import { log } from '../core/log.js';

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
  task: Task | null;
}

export interface PoolOptions extends WorkerInit {
  threads: number;
  queue: number;
}

/** What the rest of the server asks of compute: run a graph, and stop. */
export type Compute = Pick<ComputePool, 'run' | 'close' | 'health'>;

export class ComputePool {
  private readonly slots: Slot[] = [];
  private readonly waiting: Task[] = [];
  private nextId = 1;
  private closed = false;
  private unready = 0;
  private onReady: () => void = () => {};
  /** Resolves once every thread has warmed up (compute/warm-up.ts): the server listens after it. */
  readonly ready: Promise<void>;

  constructor(private readonly opts: PoolOptions) {
    this.unready = opts.threads;
    this.ready = new Promise((r) => (this.onReady = r));
    for (let i = 0; i < opts.threads; i++) this.slots.push(this.spawn());
    gauge('xeo_compute_threads', 'Compute threads (graphs of /result and tiles), busy or idle.', ['state'], () => {
      const busy = this.slots.filter((s) => s.task).length;
      return [
        { labels: { state: 'busy' }, value: busy },
        { labels: { state: 'idle' }, value: this.slots.length - busy },
      ];
    });
    gauge('xeo_compute_queue_length', 'Graphs waiting for a compute thread (XEO_COMPUTE_QUEUE bounds it).', [], () => [{ labels: {}, value: this.waiting.length }]);
  }

  /** For readiness: threads up and warmed, how many are busy and how many graphs wait. */
  health(): { ready: boolean; detail: string } {
    const busy = this.slots.filter((s) => s.task).length;
    const detail = `${this.slots.length} thread(s), ${busy} busy, ${this.waiting.length} waiting`;
    if (this.closed) return { ready: false, detail: 'closed' };
    if (this.unready > 0) return { ready: false, detail: `${this.unready} thread(s) still warming up` };
    return { ready: true, detail };
  }

  private spawn(): Slot {
    const { searchPort, udf, filesPort, metricsPort, log: logging, transferList } = threadPorts();
    const worker = new Worker(new URL('./worker.js', import.meta.url), {
      workerData: {
        dataDir: this.opts.dataDir,
        databaseUrl: this.opts.databaseUrl,
        database: this.opts.database,
        blockCacheBytes: this.opts.blockCacheBytes,
        outboundAllow: this.opts.outboundAllow,
        arenaKeepBytes: this.opts.arenaKeepBytes,
        kernelThreads: this.opts.kernelThreads,
        vector: this.opts.vector,
        searchPort,
        udf,
        filesPort,
        metricsPort,
        log: logging,
      } satisfies WorkerInit,
      transferList,
    });
    const slot: Slot = { worker, task: null };
    worker.on('message', (m: { type?: 'ready'; id: number; ok: boolean; result?: ExecuteResult & { body: Uint8Array }; error?: ErrorData; logs?: RunLog[] }) => {
      if (m.type === 'ready') {
        // Kept referenced until then, so a start-up awaiting `ready` has something to wait for.
        worker.unref();
        if (--this.unready === 0) this.onReady();
        return;
      }
      const t = slot.task;
      if (!t || t.id !== m.id) return;
      slot.task = null;
      if (m.ok) {
        poolTasks.inc(OK);
        t.resolve({ ...m.result!, body: Buffer.from(m.result!.body.buffer, m.result!.body.byteOffset, m.result!.body.byteLength) });
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
      const t = slot.task;
      slot.task = null;
      t?.reject(new ApiError('Internal'));
      if (this.closed) return;
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots[i] = this.spawn();
      this.pump();
    });
    return slot;
  }

  private pump(): void {
    for (const slot of this.slots) {
      if (slot.task || !this.waiting.length) continue;
      const t = this.waiting.shift()!;
      slot.task = t;
      t.slot = slot;
      slot.worker.postMessage({ id: t.id, type: 'execute', req: t.req } satisfies ToWorker);
    }
  }

  /** Runs a graph; `signal` (e.g. the client going away) cancels it. */
  run(req: ExecuteRequest, signal?: AbortSignal): Promise<ExecuteResult> {
    if (this.waiting.length >= this.opts.queue && this.slots.every((s) => s.task)) {
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
          else if (task.slot?.task === task) task.slot.worker.postMessage({ id: task.id, type: 'cancel' } satisfies ToWorker);
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
