// The batch job threads: a fixed number, separate from the compute threads of /result and tiles
// (so tiles stay fast while jobs run), each running one task at a time (a whole job; or, on a
// worker, the plan of a job or one of its chunks), known by its ticket. Stopping a job asks its
// thread first and terminates the thread when the work has not halted within the grace time, so a
// stop never waits on a long computation. A thread starts with the first task it is given (a node
// that runs no job never loads the engine a second time, and its start does not wait for that);
// one that ends, dies or is recycled is replaced the same way, by a fresh one for the next task.
import { stat } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { ENGINE_THREAD_LIMITS, threadPorts, type EngineHost } from '../compute/ports.js';
import { ApiError, errorToData } from '../core/errors.js';
import { isFinal, type FromJobThread, type JobTask, type JobThreadInit, type ToJobThread } from './protocol.js';
import type { JobSpec } from './runner.js';
import { gauge, poolTasks, poolTaskSlot } from '../core/metrics.js';
import { log } from '../core/log.js';
import { THREAD_NAMES } from '../core/thread-names.js';

const OUTCOME: Record<string, number> = {
  done: poolTaskSlot('jobs', 'ok'),
  planned: poolTaskSlot('jobs', 'ok'),
  'chunk-done': poolTaskSlot('jobs', 'ok'),
  stopped: poolTaskSlot('jobs', 'canceled'),
  failed: poolTaskSlot('jobs', 'failed'),
};
const SHED = poolTaskSlot('jobs', 'shed');

export interface JobThreadEvents {
  /** Every message of a running job's thread. */
  message(m: FromJobThread): void;
}

interface Slot {
  /** Null until the slot's first task. */
  worker: Worker | null;
  job: { jobId: string; run: number; ticket: string } | null;
  /** The ticket of the task it ran last. */
  last?: string;
  /** Set while a stop waits for the thread to halt. */
  halted?: () => void;
  terminating?: boolean;
}

export class JobThreads {
  private readonly slots: Slot[] = [];
  private closed = false;
  /** Callers waiting for a thread to become idle. */
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly threads: number,
    private readonly init: JobThreadInit,
    /** What the threads ask of the main thread (item searches, UDF runtimes, users' files). */
    private readonly host: EngineHost,
    private readonly events: JobThreadEvents,
  ) {
    for (let i = 0; i < threads; i++) this.slots.push({ worker: null, job: null });
    gauge('xeo_job_threads', 'Batch job threads (whole jobs, or plans and chunks on a worker), busy or idle.', ['state'], () => {
      const busy = this.slots.filter((s) => s.job).length;
      return [
        { labels: { state: 'busy' }, value: busy },
        { labels: { state: 'idle' }, value: this.slots.length - busy },
      ];
    });
  }

  /** For readiness: how many threads there are and how many are busy. */
  health(): { ready: boolean; detail: string } {
    if (this.closed) return { ready: false, detail: 'closed' };
    const started = this.slots.filter((s) => s.worker).length;
    return { ready: true, detail: `${this.slots.length} thread(s), ${started} started, ${this.slots.filter((s) => s.job).length} busy` };
  }

  /** Starts the thread of an empty slot. */
  private spawn(slot: Slot): Worker {
    // Job threads run at a lower priority (worker.ts), and a thread inherits the priority of the one
    // that starts it. libuv starts its pool with the first task given to it: one from here makes
    // sure that is the main thread, not a job thread, so the pool keeps the process's priority.
    void stat('.').catch(() => {});
    const { searchPort, udf, filesPort, metricsPort, log: logging, transferList } = threadPorts(this.host);
    const worker = new Worker(new URL('./worker.js', import.meta.url), {
      name: THREAD_NAMES.job,
      workerData: { ...this.init, searchPort, udf, filesPort, metricsPort, log: logging },
      transferList,
      resourceLimits: ENGINE_THREAD_LIMITS,
    });
    slot.worker = worker;
    worker.on('message', (m: FromJobThread) => {
      const j = slot.job;
      if (!j || j.ticket !== m.ticket) return;
      if (m.type === 'halted') slot.halted?.();
      if (isFinal(m)) {
        slot.job = null;
        slot.halted?.();
        poolTasks.inc(OUTCOME[m.type]);
      }
      this.events.message(m);
      if (isFinal(m)) this.wakeIdleWaiters();
    });
    worker.on('error', (e) => log.error('a job thread failed', { err: e }));
    worker.on('exit', () => {
      const j = slot.job;
      slot.job = null;
      slot.halted?.();
      // At shutdown the owner settles its jobs itself.
      if (this.closed) return;
      if (j) {
        // Terminated on purpose (a stop that did not halt in time), or died.
        if (slot.terminating) this.events.message({ type: 'stopped', ...j });
        else this.events.message({ type: 'failed', ...j, error: errorToData(new ApiError('Internal', {}, 'The job thread ended unexpectedly.')), path: [] });
      }
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots[i] = { worker: null, job: null };
      this.wakeIdleWaiters();
    });
    worker.unref();
    return worker;
  }

  /** Threads without a job. */
  idle(): number {
    return this.closed ? 0 : this.slots.filter((s) => !s.job && !s.terminating).length;
  }

  /** Resolves when a thread may have become idle (a task ended, a thread was replaced, or closing). */
  threadFreed(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private wakeIdleWaiters(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Starts a whole job on an idle thread (its ticket is `jobId.run`); false when none is idle. */
  start(spec: JobSpec): boolean {
    return this.startTask({ type: 'run', ticket: `${spec.jobId}.${spec.run}`, spec });
  }

  /** Starts a task on an idle thread; false when none is idle. */
  startTask(task: JobTask): boolean {
    const slot = this.slots.find((s) => !s.job && !s.terminating);
    if (!slot || this.closed) {
      poolTasks.inc(SHED);
      return false;
    }
    slot.job = { jobId: task.spec.jobId, run: task.spec.run, ticket: task.ticket };
    slot.last = task.ticket;
    // A thread still starting takes the message once it runs.
    (slot.worker ?? this.spawn(slot)).postMessage(task satisfies ToJobThread);
    return true;
  }

  /**
   * Replaces the thread that ran `ticket` (now idle) with a fresh one: after a failure of our own
   * making, nothing the task left behind in that thread may spoil the next task.
   */
  recycle(ticket: string): void {
    const slot = this.slots.find((s) => s.last === ticket && !s.job && !s.terminating);
    if (!slot || this.closed) return;
    slot.terminating = true;
    void slot.worker?.terminate();
  }

  isRunning(jobId: string): boolean {
    return this.slots.some((s) => s.job?.jobId === jobId);
  }

  /**
   * Stops a job's computation: resolves once it halted (then a partial result may still be
   * written, if `keepPartial`) or, after `graceMs`, once its thread was terminated.
   */
  async stop(jobId: string, keepPartial: boolean, graceMs: number): Promise<'halted' | 'terminated' | 'idle'> {
    const slot = this.slots.find((s) => s.job?.jobId === jobId);
    return slot?.job ? this.stopTicket(slot.job.ticket, keepPartial, graceMs) : 'idle';
  }

  /** Stops the task of a ticket, the same way. */
  async stopTicket(ticket: string, keepPartial: boolean, graceMs: number): Promise<'halted' | 'terminated' | 'idle'> {
    const slot = this.slots.find((s) => s.job?.ticket === ticket);
    if (!slot || !slot.job) return 'idle';
    const halted = new Promise<void>((resolve) => (slot.halted = resolve));
    slot.worker!.postMessage({ type: 'stop', ticket, keepPartial } satisfies ToJobThread);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), graceMs)));
    const first = await Promise.race([halted.then(() => 'halted' as const), late]);
    clearTimeout(timer);
    slot.halted = undefined;
    if (first === 'halted') return 'halted';
    slot.terminating = true;
    await slot.worker!.terminate();
    return 'terminated';
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wakeIdleWaiters();
    await Promise.all(this.slots.flatMap((s) => (s.worker ? [s.worker.terminate()] : [])));
  }
}
