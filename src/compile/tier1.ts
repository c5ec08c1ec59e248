// Tier 1: Programs compiled to their own wasm module (src/compile/codegen.ts generates the
// AssemblyScript, asc compiles it in a worker thread: src/compile/asc-worker.ts) and swapped in
// when ready. Compiled modules import the kernels module's memory (src/wasm/kernels.ts
// kernelMemory()), so they run on the inputs tier 0 would run on.
//
// Caching, by programHash (the canonical program's hash):
//   - in memory: an LRU of instantiated kernels (maxEntries);
//   - on disk: <cacheDir>/<hash>.wasm (written to a temporary name, then renamed), tagged with the
//     code generator's fingerprint (a custom section: codegenTag()), so a restart instantiates from
//     disk without compiling (synchronously, on lookup) and a changed code generator does not use
//     stale modules.
// request() compiles in the background: one compile at a time, deduplicated per hash, at most
// maxQueue waiting (later requests are dropped: the executor runs tier 0 meanwhile); a program
// whose compile fails is logged once and never tried again by this instance.
//
// Every module is inspected before use: it may import only env.memory and the host math functions
// (codegen.ts HOST_IMPORTS), must have no data segment (it would overwrite the kernels' memory on
// instantiation) and no start function.
//
// The worker file: from dist/src/compile/tier1.js it is ./asc-worker.js beside it. When tier1.ts runs
// from its TypeScript source (vitest), the built copy in dist/src/compile is used (so `npm test`,
// which builds first, or `npx tsc -p .` before vitest); without either, compiles run in the calling
// thread (slower to answer, same result), with one warning.
import { log } from '../core/log.js';
import { mkdirSync, readFileSync, unlinkSync } from 'node:fs';
import { rename, writeFile, mkdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { builtFile } from '../core/built-file.js';
import { Worker } from 'node:worker_threads';
import { LRUCache } from 'lru-cache';
import { createHash } from 'node:crypto';
import { BINARY, REDUCERS, UNARY, canonical, programHash, type Instr, type Program } from './program.js';
import { CODEGEN_VERSION, HOST_IMPORTS, generateFunction, generateSource, PRELUDE } from './codegen.js';
import { kernelMemory, memoryGeneration } from '../wasm/kernels.js';
import type { CompiledKernel, Tier1 } from './executor.js';
import { compileSource, WORKER_MARKER, type CompileReply, type CompileRequest } from './asc-worker.js';
import { THREAD_NAMES } from '../core/thread-names.js';

// The TypeScript lib of this project (ES2022, no DOM) has no WebAssembly types: the parts used here.
interface WasmModule {
  readonly __brand?: 'module';
}
const WA = (
  globalThis as unknown as {
    WebAssembly: {
      Module: { new (bytes: Uint8Array): WasmModule; customSections(m: WasmModule, name: string): ArrayBuffer[] };
      Instance: new (module: WasmModule, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> };
    };
  }
).WebAssembly;

/** asc options of every tier-1 module (shrink level 1: the table-free math of the standard library). */
export const ASC_OPTIONS: Record<string, unknown> = {
  optimizeLevel: 3,
  shrinkLevel: 1,
  runtime: 'stub',
  enable: ['simd', 'threads'],
  noAssert: true,
  importMemory: true,
  noExportMemory: true,
  initialMemory: 0,
  // The kernels' memory is shared (src/wasm/kernels.ts): the import must say so, with its maximum.
  sharedMemory: true,
  maximumMemory: 65536,
  use: ['abort='],
};

type Log = (level: 'info' | 'warn' | 'error', message: string) => void;
const defaultLog: Log = (level, message) => {
  if (level !== 'info') log[level](message);
};

export interface Tier1Options {
  /** Directory of the compiled modules (<hash>.wasm); created when needed. */
  cacheDir: string;
  /** Instantiated kernels kept in memory (LRU). Default 256. */
  maxEntries?: number;
  /** Background compiles waiting at most; requests beyond are dropped. Default 64. */
  maxQueue?: number;
  /** Where failures go (default: stderr for warnings and errors). */
  log?: Log;
  /** The compiler, AssemblyScript source to wasm bytes (default: asc in the worker thread, ascCompile). */
  compile?: (source: string) => Promise<Uint8Array>;
  /**
   * Milliseconds a background compile waits after the request that queued it, when none is under
   * way (default 0: it starts at once): the runs that asked first go on tier 0 without sharing the
   * cores with the compiler.
   */
  startDelayMs?: number;
}

export interface Tier1Stats {
  /** Modules compiled by this instance (single programs; a compileMany batch counts once). */
  compiles: number;
  /** Kernels instantiated from disk. */
  diskLoads: number;
  /** Lookups answered from memory / not answered. */
  hits: number;
  misses: number;
  /** Programs whose compile failed (not retried). */
  failures: number;
  /** Requests dropped because the queue was full. */
  dropped: number;
  /** The last compile: generate + asc + check + instantiate, ms (NaN before the first). */
  lastCompileMs: number;
  /** The asc part of it, ms. */
  lastAscMs: number;
  /** The last kernel instantiated from disk (read + check + instantiate), ms. */
  lastDiskLoadMs: number;
}

/** Milliseconds of the most recent tier-1 compile in this thread (any instance), for the bench. */
export let lastCompileMs = Number.NaN;

// ---------------------------------------------------------------------------------------------
// Module checks

export interface WasmInfo {
  imports: { module: string; name: string; kind: number }[];
  exports: string[];
  dataSegments: number;
  hasStart: boolean;
  customSections: string[];
}

/** Reads the sections of a wasm binary that matter for safety (imports, exports, data, start). */
export function inspectWasm(bytes: Uint8Array): WasmInfo {
  let off = 0;
  const fail = (why: string): never => {
    throw new Error(`not a valid wasm module: ${why}`);
  };
  const u8 = () => (off < bytes.length ? bytes[off++] : fail('truncated'));
  const leb = () => {
    let r = 0;
    let shift = 0;
    for (;;) {
      const b = u8();
      r += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return r;
      shift += 7;
      if (shift > 35) fail('bad LEB128');
    }
  };
  const name = () => {
    const n = leb();
    if (off + n > bytes.length) fail('truncated name');
    const s = Buffer.from(bytes.buffer, bytes.byteOffset + off, n).toString('utf8');
    off += n;
    return s;
  };
  const limits = () => {
    const flags = u8();
    leb();
    if (flags & 1) leb();
  };
  if (bytes.length < 8 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) fail('no wasm magic');
  off = 8;
  const info: WasmInfo = { imports: [], exports: [], dataSegments: 0, hasStart: false, customSections: [] };
  while (off < bytes.length) {
    const id = u8();
    const size = leb();
    const end = off + size;
    if (end > bytes.length) fail('section past the end');
    if (id === 0) info.customSections.push(name());
    else if (id === 2) {
      for (let k = leb(); k > 0; k--) {
        const module = name();
        const field = name();
        const kind = u8();
        if (kind === 0) leb();
        else if (kind === 1) {
          u8();
          limits();
        } else if (kind === 2) limits();
        else if (kind === 3) {
          u8();
          u8();
        } else fail(`import kind ${kind}`);
        info.imports.push({ module, name: field, kind });
      }
    } else if (id === 7) {
      for (let k = leb(); k > 0; k--) {
        info.exports.push(name());
        u8();
        leb();
      }
    } else if (id === 8) info.hasStart = true;
    else if (id === 11 || id === 12) info.dataSegments = Math.max(info.dataSegments, leb());
    off = end;
  }
  return info;
}

/** Throws unless the module is safe to instantiate on the kernels' memory and exports `names`. */
export function checkModule(bytes: Uint8Array, names: string[]): void {
  const info = inspectWasm(bytes);
  if (info.dataSegments > 0) throw new Error(`the module has ${info.dataSegments} data segment(s), which would overwrite kernel memory`);
  if (info.hasStart) throw new Error('the module has a start function');
  for (const im of info.imports) {
    const ok = im.module === 'env' && ((im.name === 'memory' && im.kind === 2) || ((HOST_IMPORTS as readonly string[]).includes(im.name) && im.kind === 0));
    if (!ok) throw new Error(`the module imports ${im.module}.${im.name}`);
  }
  for (const n of names) if (!info.exports.includes(n)) throw new Error(`the module does not export ${n}`);
}

const TAG = 'xeo-kernel';

let generatorTag: string | undefined;

/**
 * What the modules on disk must have been made by: a hash of the code generator's output for a
 * program using every op, its prelude, the asc options and CODEGEN_VERSION. Any change to the
 * generated code makes older files stale (they are then compiled anew and replaced).
 */
export function codegenTag(): string {
  if (generatorTag) return generatorTag;
  const code: Instr[] = [{ op: 'const', value: 0.1 }];
  for (const op of UNARY) code.push({ op, a: 0 });
  for (const op of BINARY) code.push({ op, a: 0, b: 1 });
  code.push({ op: 'clip', a: 0, min: -1, max: 1 }, { op: 'linscale', a: 0, inMin: 0, inMax: 2, outMin: 0, outMax: 255 }, { op: 'if', c: 0, t: 1, f: 2 });
  for (const op of REDUCERS) code.push({ op, args: [0, 1, 2] });
  const probe = generateFunction({ inputs: 3, code, output: 3 }, 'probe');
  generatorTag = createHash('sha256')
    .update(`${CODEGEN_VERSION}\n${JSON.stringify(ASC_OPTIONS)}\n${PRELUDE}\n${probe}`)
    .digest('hex')
    .slice(0, 16);
  return generatorTag;
}

function lebBytes(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}

/** The module with a custom section naming the code generator's version and the program hash. */
function tagged(bytes: Uint8Array, hash: string): Uint8Array {
  const nameBytes = Buffer.from(TAG, 'utf8');
  const payload = Buffer.from(JSON.stringify({ codegen: codegenTag(), hash }), 'utf8');
  const body = [...lebBytes(nameBytes.length), ...nameBytes, ...payload];
  const section = Uint8Array.from([0, ...lebBytes(body.length), ...body]);
  const out = new Uint8Array(bytes.length + section.length);
  out.set(bytes);
  out.set(section, bytes.length);
  return out;
}

function tagOf(module: WasmModule): { codegen?: string; hash?: string } | null {
  const s = WA.Module.customSections(module, TAG);
  if (s.length !== 1) return null;
  try {
    return JSON.parse(Buffer.from(s[0]).toString('utf8'));
  } catch {
    return null;
  }
}

/** Instantiates a checked module on the kernels' memory; its exports by name. */
function instantiate(module: WasmModule): Record<string, unknown> {
  const host: Record<string, unknown> = { memory: kernelMemory() };
  for (const h of HOST_IMPORTS) host[h] = Math[h];
  return new WA.Instance(module, { env: host }).exports;
}

/** A module's instance on the current kernel memory: made anew when the arena recycles its instance (memoryGeneration). */
const instances = new WeakMap<WasmModule, { generation: number; exports: Record<string, unknown> }>();
function exportsOf(module: WasmModule): Record<string, unknown> {
  const g = memoryGeneration();
  let i = instances.get(module);
  if (!i || i.generation !== g) instances.set(module, (i = { generation: g, exports: instantiate(module) }));
  return i.exports;
}

function kernelOf(module: WasmModule, name: string): CompiledKernel {
  let generation = -1;
  let fn: ((inputTable: number, out: number, n: number) => void) | null = null;
  const resolve = () => {
    const run = exportsOf(module)[name];
    if (typeof run !== 'function') throw new Error(`the module does not export ${name}`);
    fn = run as (inputTable: number, out: number, n: number) => void;
    generation = memoryGeneration();
  };
  resolve();
  return {
    module,
    name,
    run(inputTable: number, out: number, n: number): void {
      if (generation !== memoryGeneration()) resolve();
      fn!(inputTable, out, n);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The compiler thread (one per thread that compiles, started on first use)

let worker: Worker | null = null;
let nextJob = 1;
const jobs = new Map<number, { resolve: (b: Uint8Array) => void; reject: (e: Error) => void }>();
let warnedInThread = false;

/** The built worker file: beside this file (dist), or dist/src/compile when running from src. */
const workerFile = (): URL | null => builtFile(import.meta.url, './asc-worker.js');

function failAll(e: Error): void {
  const pending = [...jobs.values()];
  jobs.clear();
  for (const j of pending) j.reject(e);
}

function startWorker(file: URL): Worker {
  const w = new Worker(file, { name: THREAD_NAMES.compiler, workerData: WORKER_MARKER });
  w.on('message', (m: CompileReply) => {
    const job = jobs.get(m.id);
    if (!job) return;
    jobs.delete(m.id);
    if (jobs.size === 0) w.unref();
    if (m.binary) job.resolve(m.binary);
    else job.reject(new Error(m.error ?? 'asc worker: no answer'));
  });
  w.on('error', (e) => {
    if (worker === w) worker = null;
    failAll(e instanceof Error ? e : new Error(String(e)));
  });
  w.on('exit', (code) => {
    if (worker === w) worker = null;
    failAll(new Error(`asc worker exited (code ${code})`));
  });
  w.unref();
  return w;
}

/** AssemblyScript source to wasm bytes with ASC_OPTIONS, in the compiler thread. */
export function ascCompile(source: string): Promise<Uint8Array> {
  const file = worker ? null : workerFile();
  if (!worker && !file) {
    if (!warnedInThread) {
      warnedInThread = true;
      log.warn('tier 1: dist/src/compile/asc-worker.js not found (run npm run build:ts); compiling in the calling thread');
    }
    return compileSource(source, ASC_OPTIONS);
  }
  worker ??= startWorker(file!);
  const w = worker;
  const id = nextJob++;
  return new Promise<Uint8Array>((resolve, reject) => {
    jobs.set(id, { resolve, reject });
    w.ref();
    const req: CompileRequest = { id, source, options: ASC_OPTIONS };
    w.postMessage(req);
  });
}

/** Stops the compiler thread (it is restarted on the next compile). Pending compiles fail. */
export async function stopCompiler(): Promise<void> {
  const w = worker;
  worker = null;
  if (w) await w.terminate();
}

// ---------------------------------------------------------------------------------------------
// The cache

let lastCreated: KernelCache | null = null;

export class KernelCache implements Tier1 {
  readonly cacheDir: string;
  private readonly lru: LRUCache<string, CompiledKernel>;
  private readonly maxQueue: number;
  private readonly log: Log;
  private readonly compiler: (source: string) => Promise<Uint8Array>;
  /** Hashes known not to be on disk (cleared when written; bounded). */
  private readonly notOnDisk = new Set<string>();
  private readonly failed = new Map<string, string>();
  private readonly inflight = new Map<string, Promise<CompiledKernel>>();
  private readonly queue: { p: Program; hash: string }[] = [];
  private readonly queued = new Set<string>();
  private busy = false;
  private readonly startDelayMs: number;
  private startTimer: NodeJS.Timeout | null = null;
  private idleWaiters: (() => void)[] = [];
  private readonly counters: Tier1Stats = {
    compiles: 0,
    diskLoads: 0,
    hits: 0,
    misses: 0,
    failures: 0,
    dropped: 0,
    lastCompileMs: Number.NaN,
    lastAscMs: Number.NaN,
    lastDiskLoadMs: Number.NaN,
  };

  constructor(opts: Tier1Options) {
    if (!opts.cacheDir) throw new Error('createTier1: cacheDir is required');
    this.cacheDir = opts.cacheDir;
    this.lru = new LRUCache({ max: Math.max(1, opts.maxEntries ?? 256) });
    this.maxQueue = Math.max(0, opts.maxQueue ?? 64);
    this.log = opts.log ?? defaultLog;
    this.compiler = opts.compile ?? ascCompile;
    this.startDelayMs = Math.max(0, opts.startDelayMs ?? 0);
  }

  /** The compiled kernel (from memory, else from disk), or null. Never compiles. */
  lookup(hash: string): CompiledKernel | null {
    const k = this.lru.get(hash);
    if (k) {
      this.counters.hits++;
      return k;
    }
    const fromDisk = this.failed.has(hash) || this.inflight.has(hash) || this.notOnDisk.has(hash) ? null : this.loadFromDisk(hash);
    if (fromDisk) {
      this.counters.hits++;
      return fromDisk;
    }
    this.counters.misses++;
    return null;
  }

  /** Compiles the program in the background (unless compiled, failed, queued or the queue is full). Never throws. */
  request(p: Program, hash: string): void {
    try {
      if (this.lru.has(hash) || this.failed.has(hash) || this.inflight.has(hash) || this.queued.has(hash)) return;
      if (this.queue.length >= this.maxQueue) {
        this.counters.dropped++;
        return;
      }
      this.queue.push({ p, hash });
      this.queued.add(hash);
      this.start();
    } catch (e) {
      this.fail(hash, e);
    }
  }

  /** Compiles the program now (or answers the cached kernel); rejects when compiling fails. */
  compile(p: Program, hash = programHash(p)): Promise<CompiledKernel> {
    const have = this.lookup(hash);
    if (have) return Promise.resolve(have);
    const failure = this.failed.get(hash);
    if (failure !== undefined) return Promise.reject(new Error(failure));
    let job = this.inflight.get(hash);
    if (!job) {
      job = this.build(p, hash);
      this.inflight.set(hash, job);
      const done = () => this.inflight.delete(hash);
      job.then(done, (e) => {
        done();
        this.fail(hash, e);
      });
    }
    return job;
  }

  /**
   * Compiles many programs as one module (one asc run: far faster than one by one), into memory
   * only (not written to disk). Programs already compiled or failed are skipped; when the batch
   * does not compile, each program is compiled on its own.
   */
  async compileMany(programs: Program[]): Promise<void> {
    const todo = new Map<string, Program>();
    for (const p of programs) {
      const hash = programHash(p);
      if (todo.has(hash) || this.lru.has(hash) || this.failed.has(hash)) continue;
      todo.set(hash, canonical(p));
    }
    if (todo.size === 0) return;
    const list = [...todo.entries()];
    const functions: string[] = [];
    const ok: [string, string][] = [];
    for (const [hash, p] of list) {
      const name = `run_${ok.length}`;
      try {
        functions.push(generateFunction(p, name));
        ok.push([hash, name]);
      } catch (e) {
        this.fail(hash, e);
      }
    }
    if (ok.length === 0) return;
    const t = performance.now();
    try {
      const bytes = await this.compiler(PRELUDE + '\n' + functions.join('\n'));
      checkModule(
        bytes,
        ok.map(([, n]) => n),
      );
      const module = new WA.Module(bytes);
      for (const [hash, name] of ok) this.lru.set(hash, kernelOf(module, name));
      this.counters.compiles++;
      this.timed(performance.now() - t, Number.NaN);
    } catch (e) {
      this.log('warn', `tier 1: batch of ${ok.length} programs did not compile (${(e as Error).message.split('\n')[0]}); compiling one by one`);
      // compile() logs each failure itself
      for (const [hash] of ok) await this.compile(todo.get(hash)!, hash).catch(() => undefined);
    }
  }

  /** Resolves when no background compile is queued or running. */
  idle(): Promise<void> {
    if (!this.busy && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Whether the program's compile failed (and why). */
  failure(hash: string): string | undefined {
    return this.failed.get(hash);
  }

  stats(): Tier1Stats {
    return { ...this.counters };
  }

  /** The file of a compiled module. */
  fileOf(hash: string): string {
    return path.join(this.cacheDir, `${hash}.wasm`);
  }

  // -------------------------------------------------------------------------------------------

  /** Starts the queue's compiles, after startDelayMs when none is under way or about to start. */
  private start(): void {
    if (this.startDelayMs === 0) return this.pump();
    if (this.busy || this.startTimer) return;
    this.startTimer = setTimeout(() => {
      this.startTimer = null;
      this.pump();
    }, this.startDelayMs);
    this.startTimer.unref();
  }

  private pump(): void {
    if (this.busy) return;
    const next = this.queue.shift();
    if (!next) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
      return;
    }
    this.queued.delete(next.hash);
    this.busy = true;
    // Another thread or process may have compiled it meanwhile.
    this.notOnDisk.delete(next.hash);
    const job = this.lru.has(next.hash) || this.loadFromDisk(next.hash) ? Promise.resolve() : this.compile(next.p, next.hash);
    job
      .catch(() => undefined) // failures are logged by compile()
      .finally(() => {
        this.busy = false;
        this.pump();
      });
  }

  private async build(p: Program, hash: string): Promise<CompiledKernel> {
    const t = performance.now();
    const source = generateSource(p);
    const ta = performance.now();
    const raw = await this.compiler(source);
    const ascMs = performance.now() - ta;
    checkModule(raw, ['run']);
    const bytes = tagged(raw, hash);
    const kernel = kernelOf(new WA.Module(bytes), 'run');
    this.lru.set(hash, kernel);
    this.counters.compiles++;
    this.timed(performance.now() - t, ascMs);
    await this.store(hash, bytes);
    return kernel;
  }

  private timed(ms: number, ascMs: number): void {
    this.counters.lastCompileMs = ms;
    this.counters.lastAscMs = ascMs;
    lastCompileMs = ms;
  }

  private async store(hash: string, bytes: Uint8Array): Promise<void> {
    const file = this.fileOf(hash);
    const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      await mkdir(this.cacheDir, { recursive: true });
      await writeFile(tmp, bytes);
      await rename(tmp, file);
      this.notOnDisk.delete(hash);
    } catch (e) {
      // the temporary file may never have been made; the failure is logged below
      await unlink(tmp).catch(() => undefined);
      this.log('warn', `tier 1: could not store ${file}: ${(e as Error).message}`);
    }
  }

  private loadFromDisk(hash: string): CompiledKernel | null {
    if (!/^[0-9a-f]{8,64}$/.test(hash)) return null;
    const file = this.fileOf(hash);
    const t = performance.now();
    let bytes: Uint8Array;
    try {
      bytes = readFileSync(file);
    } catch {
      if (this.notOnDisk.size >= 10000) this.notOnDisk.clear();
      this.notOnDisk.add(hash);
      return null;
    }
    try {
      checkModule(bytes, ['run']);
      const module = new WA.Module(bytes);
      const tag = tagOf(module);
      if (!tag || tag.codegen !== codegenTag() || tag.hash !== hash) {
        // Made by another version of the code generator (or not ours): compile anew, replacing it.
        this.notOnDisk.add(hash);
        return null;
      }
      const kernel = kernelOf(module, 'run');
      this.lru.set(hash, kernel);
      this.counters.diskLoads++;
      this.counters.lastDiskLoadMs = performance.now() - t;
      return kernel;
    } catch (e) {
      this.log('warn', `tier 1: ignoring ${file}: ${(e as Error).message}`);
      try {
        unlinkSync(file);
      } catch {
        // another thread may have removed or replaced it
      }
      this.notOnDisk.add(hash);
      return null;
    }
  }

  private fail(hash: string, e: unknown): void {
    if (this.failed.has(hash)) return;
    const message = e instanceof Error ? e.message : String(e);
    this.failed.set(hash, message);
    this.counters.failures++;
    this.log('warn', `tier 1: program ${hash} does not compile, it stays on tier 0: ${message.split('\n').slice(0, 6).join('\n')}`);
  }
}

/** A tier-1 compiler and cache (an engine's, src/engine/engine.ts). */
export function createTier1(opts: Tier1Options): KernelCache {
  mkdirSync(opts.cacheDir, { recursive: true });
  const t = new KernelCache(opts);
  lastCreated = t;
  return t;
}

/**
 * Compiles the program now into `into` (default: the tier 1 created last), so that later lookups
 * find it; without any, compiles and instantiates without caching.
 */
export async function compileNow(p: Program, into: KernelCache | null = lastCreated): Promise<CompiledKernel> {
  if (into) return into.compile(p);
  const t = performance.now();
  const bytes = await ascCompile(generateSource(p));
  checkModule(bytes, ['run']);
  const kernel = kernelOf(new WA.Module(bytes), 'run');
  lastCompileMs = performance.now() - t;
  return kernel;
}

/** Compiles many programs in one module into `into` (default as compileNow); see KernelCache.compileMany. */
export async function compileMany(programs: Program[], into: KernelCache | null = lastCreated): Promise<void> {
  if (!into) throw new Error('compileMany: no tier 1 (createTier1 first)');
  await into.compileMany(programs);
}
