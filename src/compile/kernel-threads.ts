// One large kernel run on several threads: the engine thread and its kernel helper threads
// (kernel-helper.ts) run bands of rows of the same tier-1 kernel on the same kernel memory. This
// works because that memory is shared (src/wasm/kernels.ts): each helper instantiates the compiled module on
// it, so nothing is copied; the bands are contiguous ranges of pixels, i.e. bands of rows of the
// planes. Helpers sleep in Atomics.wait between jobs and claim bands with a compare-exchange; the
// engine thread claims bands too and waits only for bands a helper has claimed. A band a helper
// could not run (its module or memory had not arrived) is run by the engine thread; a helper that
// does not report within RESCUE_MS has its bands run again by the engine thread (kernels are pure:
// the same values are written twice).
import { builtFile } from '../core/built-file.js';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { alloc, kernelMemory, memoryGeneration, u32 } from '../wasm/kernels.js';
import { C, CTRL_WORDS, MAX_BANDS, claim, type HelperMessage } from './kernel-threads-protocol.js';
import { THREAD_NAMES } from '../core/thread-names.js';

/** A tier-1 kernel as the helpers need it: its module (to instantiate on the shared memory) and export. */
export interface SplittableKernel {
  /** `arg` and `slot` are for kernels that take them (runSplit's `arg`; the thread's slot, 0 here). */
  run(inputTable: number, out: number, n: number, arg?: number, slot?: number): void;
  module: object;
  name: string;
}

/** Runs below this many pixels stay on one thread (the hand-over costs tens of microseconds). */
export const SPLIT_MIN_PIXELS = 1 << 20;
/** Pixels per band at least. */
const MIN_BAND = 1 << 16;
const RESCUE_MS = 5000;

const moduleIds = new WeakMap<object, number>();
let nextModuleId = 1;

/** The built helper file: beside this file (dist), or dist/src/compile when running from src. */
const helperFile = (): URL | null => builtFile(import.meta.url, './kernel-helper.js');

declare module '../core/run-context.js' {
  interface EngineParts {
    /** The thread's kernel helper threads (XEO_KERNEL_THREADS; none: kernels run on the thread alone). */
    kernelHelpers: KernelHelpers;
  }
}

/**
 * The kernel helper threads of one engine thread (XEO_KERNEL_THREADS of them; 0: kernels run on
 * the engine thread alone), started by the first split run.
 */
export class KernelHelpers {
  private helpers: { worker: Worker; port: MessagePort; generation: number; modules: Set<number> }[] = [];
  private ctrl: Int32Array | null = null;
  private job = 0;
  private readonly counters = { splits: 0, bandsByHelpers: 0, rescued: 0 };

  constructor(readonly count: number) {
    if (!(Number.isInteger(count) && count >= 0)) throw new RangeError(`kernel threads: ${count}`);
  }

  /** Split runs, bands run by helpers, bands the engine thread had to run again. */
  stats(): { splits: number; bandsByHelpers: number; rescued: number } {
    return { ...this.counters };
  }

  /** Ends the helper threads (they start again on the next split run). */
  stop(): void {
    if (this.ctrl) {
      Atomics.store(this.ctrl, C.STOP, 1);
      Atomics.notify(this.ctrl, C.CLAIM);
    }
    for (const h of this.helpers) {
      h.port.close();
      void h.worker.terminate();
    }
    this.helpers = [];
    this.ctrl = null;
  }

  private start(): boolean {
    if (this.ctrl) return true;
    const file = helperFile();
    if (!file) return false;
    const ctrl = (this.ctrl = new Int32Array(new SharedArrayBuffer(CTRL_WORDS * 4)));
    for (let s = 1; s <= this.count; s++) {
      const { port1, port2 } = new MessageChannel();
      const worker = new Worker(file, { name: THREAD_NAMES.kernel, workerData: { ctrl, port: port2, slot: s }, transferList: [port2] });
      worker.unref();
      worker.on('error', () => undefined); // its bands are rescued by the engine thread
      this.helpers.push({ worker, port: port1, generation: -1, modules: new Set() });
    }
    return true;
  }

  /**
   * out[i] = kernel(inputs[i]) for i < n on this thread and the helpers, by bands of pixels. `inTable`
   * holds the u32 input pointers (kernel memory); inputs and out are in kernel memory. Answers false
   * (nothing done) when there are no helpers or n is small: then the caller runs the kernel itself.
   * `arg` goes to every band's call as is (a parameter block, say); `minPixels` is the least run
   * worth splitting (heavier kernels per pixel pay the hand-over sooner).
   */
  runSplit(k: SplittableKernel, inTable: number, nIn: number, out: number, n: number, arg = 0, minPixels = SPLIT_MIN_PIXELS): boolean {
    if (this.count === 0 || n < minPixels || !this.start()) return false;
    const c = this.ctrl!;
    const helpers = this.helpers;
    const stats = this.counters;
    const generation = memoryGeneration();
    let id = moduleIds.get(k.module);
    if (id === undefined) moduleIds.set(k.module, (id = nextModuleId++));
    for (const h of helpers) {
      if (h.generation !== generation) {
        h.port.postMessage({ type: 'memory', memory: kernelMemory(), generation } satisfies HelperMessage);
        h.generation = generation;
      }
      if (!h.modules.has(id)) {
        h.port.postMessage({ type: 'module', id, module: k.module, name: k.name } satisfies HelperMessage);
        h.modules.add(id);
      }
    }
    const threads = helpers.length + 1;
    const count = Math.max(1, Math.min(MAX_BANDS, threads * 4, Math.ceil(n / MIN_BAND)));
    const band = Math.ceil(n / count / 16) * 16;
    const bands = Math.ceil(n / band);
    const tables = alloc(threads * nIn * 4);
    c[C.MODULE] = id;
    c[C.INTAB] = inTable;
    c[C.TABLES] = tables;
    c[C.OUT] = out;
    c[C.N] = n;
    c[C.BAND] = band;
    c[C.NIN] = nIn;
    c[C.GEN] = generation;
    c[C.ARG] = arg;
    c[C.DONE] = 0;
    for (let b = 0; b < bands; b++) c[C.STATE + b] = 0;
    const job = (this.job = (this.job + 1) & 0x7f);
    // Publishing the claim word hands the job over (Atomics orders the plain writes before it).
    Atomics.store(c, C.CLAIM, (job << 24) | (bands << 12));
    Atomics.notify(c, C.CLAIM);
    stats.splits++;
    const mem = u32(0, 0).buffer;
    const runBand = (b: number): void => {
      const view = new Uint32Array(mem);
      for (let j = 0; j < nIn; j++) view[(tables >>> 2) + j] = view[(inTable >>> 2) + j] + b * band * 4;
      k.run(tables, out + b * band * 4, Math.min(band, n - b * band), arg, 0);
    };
    let mine = 0;
    for (let b = claim(c, job); b >= 0; b = claim(c, job)) {
      runBand(b);
      c[C.STATE + b] = 1;
      mine++;
      Atomics.add(c, C.DONE, 1);
    }
    const t0 = performance.now();
    for (let done = Atomics.load(c, C.DONE); done < bands; done = Atomics.load(c, C.DONE)) {
      Atomics.wait(c, C.DONE, done, 50);
      if (performance.now() - t0 > RESCUE_MS) break;
    }
    for (let b = 0; b < bands; b++) {
      if (Atomics.load(c, C.STATE + b) !== 1) {
        runBand(b);
        stats.rescued++;
      }
    }
    stats.bandsByHelpers += bands - mine;
    return true;
  }
}
