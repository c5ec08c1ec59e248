// The deflate threads of a batch job thread: the COG's tiles are deflated on threads of the job's
// own instead of libuv's pool. Why: libuv's pool is one queue in arrival order, shared with the
// inflating of the blocks a job reads. A job that queues a whole chunk's tiles there makes its next
// chunk's reads wait behind them; one that queues few leaves the cores idle while it warps the next
// chunk. Here the tiles wait in the threads' own queues, a chunk or more of them, while the job
// thread reads and computes the next chunk (see docs/batch-jobs.md for the figures). The same
// threads read and inflate the blocks of local files the job reads, in one step each (the job
// thread takes the decoded block), and a thread takes those first: a block waits behind one tile
// at most. Started by the job thread, they share its lower priority; they end after a while
// without work, and start again with the next task.
import { Worker } from 'node:worker_threads';
import { builtFile } from '../core/built-file.js';
import type { BlockInflater } from '../data/cog-reader.js';
import { THREAD_NAMES } from '../core/thread-names.js';

/** A tile to deflate: `length` bytes at `offset` of a shared tile buffer. */
export interface DeflateAsk {
  kind: 'deflate';
  id: number;
  tile: SharedArrayBuffer;
  offset: number;
  length: number;
  level: number;
  memLevel: number;
}

/**
 * A block to read and inflate: `length` bytes at `offset` of a local file, `size` bytes decoded
 * (fewer for a short last strip); predictor 2 of 16-bit samples undone, `predictor16Width` a row,
 * when that is not 0.
 */
export interface InflateAsk {
  kind: 'inflate';
  id: number;
  file: string;
  /** The identity of the file the reader opened (core/file-identity.ts): another file at the path is refused. */
  identity: string;
  offset: number;
  length: number;
  size: number;
  predictor16Width: number;
}

/** The bytes made (the first `length` of `data`), or why there are none. */
export type DeflateAnswer = { id: number; data: ArrayBuffer; length: number } | { id: number; error: string };

interface Task {
  ask: DeflateAsk | InflateAsk;
  resolve(data: ArrayBuffer, length: number): void;
  reject(e: Error): void;
}

interface Thread {
  worker: Worker;
  /** Tasks handed to the thread, by id. */
  pending: Map<number, Task>;
}

/** How long the threads stay without work before they end (and give back their memory), by default. */
const IDLE_MS = 10_000;

/** A deflate thread allocates little besides its answers, which leave it: a small young generation keeps its heap small. */
const LIMITS = { maxYoungGenerationSizeMb: 2 };

declare module '../core/run-context.js' {
  interface EngineParts {
    /** A job thread's deflate threads for its COGs and the blocks it reads (XEO_JOB_DEFLATE_THREADS); null: libuv's pool. */
    deflate: DeflateThreads | null;
  }
}

const threadFile = (): URL | null => builtFile(import.meta.url, './deflate-thread.js');

/** The answers' buffers, each moved here from its thread: whoever took the answer owns it whole. */
const answers = new WeakSet<ArrayBuffer>();

/**
 * Gives back at once the memory of a deflate thread's answer whose last user is done with it
 * (the data is empty afterwards); any other buffer is left alone. A job's answers, about a tile's
 * size each, left to the garbage collector, had V8 collect twice as often (docs/batch-jobs.md).
 */
export function releaseAnswer(data: Uint8Array): void {
  const buf = data.buffer;
  if (!(buf instanceof ArrayBuffer) || !answers.delete(buf)) return;
  (buf as ArrayBuffer & { transfer(n: number): ArrayBuffer }).transfer(0);
}

export class DeflateThreads implements BlockInflater {
  private threads: (Thread | null)[];
  private next = 0;
  private ids = 0;
  private busy = 0;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly count: number,
    private readonly idleMs = IDLE_MS,
  ) {
    if (!(Number.isInteger(count) && count >= 1)) throw new RangeError(`DeflateThreads(${count})`);
    this.threads = Array.from({ length: count }, () => null);
  }

  /** Threads running now (they start with the first task and end after a while without work). */
  get running(): number {
    return this.threads.filter((t) => t).length;
  }

  /**
   * Deflates (zlib format) the bytes of `tile`, which must lie on a SharedArrayBuffer and stay
   * unchanged until the answer. Tasks are dealt to the threads in turn.
   */
  deflate(tile: Uint8Array, level: number, memLevel: number): Promise<Buffer> {
    if (!(tile.buffer instanceof SharedArrayBuffer)) return Promise.reject(new TypeError('DeflateThreads: the tile must lie on a SharedArrayBuffer'));
    const ask: DeflateAsk = { kind: 'deflate', id: ++this.ids, tile: tile.buffer, offset: tile.byteOffset, length: tile.byteLength, level, memLevel };
    return this.send(ask, (data, length) => {
      answers.add(data);
      return Buffer.from(data, 0, length);
    });
  }

  /** BlockInflater: reads and inflates a block of a local file (data/cog-reader.ts); a thread takes it before its tiles. */
  inflate(file: string, identity: string, offset: number, length: number, size: number, predictor16Width: number): Promise<ArrayBuffer> {
    return this.send({ kind: 'inflate', id: ++this.ids, file, identity, offset, length, size, predictor16Width }, (data) => data);
  }

  private send<T>(ask: DeflateAsk | InflateAsk, made: (data: ArrayBuffer, length: number) => T): Promise<T> {
    const slot = this.next++ % this.count;
    let thread: Thread;
    try {
      thread = this.threads[slot] ??= this.start(slot);
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.busy++;
    return new Promise<T>((resolve, reject) => {
      thread.pending.set(ask.id, { ask, resolve: (data, length) => resolve(made(data, length)), reject });
      thread.worker.postMessage(ask);
    }).finally(() => {
      if (--this.busy === 0) this.idleTimer = setTimeout(() => this.stop(), this.idleMs).unref();
    });
  }

  /** Ends the threads; tasks under way fail. Later tasks start them again. */
  stop(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    for (let i = 0; i < this.threads.length; i++) {
      const t = this.threads[i];
      this.threads[i] = null;
      if (t) void t.worker.terminate();
    }
  }

  private start(slot: number): Thread {
    const file = threadFile();
    if (!file) throw new Error('dist/src/output/deflate-thread.js not found (run npm run build)');
    const worker = new Worker(file, { name: THREAD_NAMES.deflate, resourceLimits: LIMITS });
    const thread: Thread = { worker, pending: new Map() };
    worker.unref();
    worker.on('message', (m: DeflateAnswer) => {
      const task = thread.pending.get(m.id);
      if (!task) return;
      thread.pending.delete(m.id);
      if ('error' in m) task.reject(new Error(`${task.ask.kind} failed: ${m.error}`));
      else task.resolve(m.data, m.length);
    });
    const fail = (why: string) => {
      if (this.threads[slot] === thread) this.threads[slot] = null;
      for (const t of thread.pending.values()) t.reject(new Error(`a deflate thread ${why}`));
      thread.pending.clear();
    };
    worker.on('error', (e) => fail(`failed: ${e.message}`));
    worker.on('exit', (code) => fail(`ended (exit code ${code})`));
    return thread;
  }
}
