// The AssemblyScript runtime: a UDF written as AssemblyScript functions over pixel values, compiled
// by the compiler of our kernels (on the UDF host: as-compiler.ts) and run in the engine thread on
// the cube's planes. The user's source gets our driver appended (it calls their function in a loop
// over the pixels), so their function is inlined into the loop. Signatures by parent process:
//
//   apply             export function apply(x: f64): f64
//   reduce_dimension  export function reduce(values: Float64Array): f64
//   apply_dimension   export function apply_dimension(values: Float64Array, out: Float64Array): void
//
// No-data arrives as NaN. The numbers of `context` are read with contextValue(i) (a number is
// index 0, an array its elements, an object its number members in the order given) and
// contextLength(). The module has its own memory (never the kernels': user code may write
// anywhere in its memory), so values are copied in and out, in chunks of at most CHUNK pixels.
// Instances belong to one user (no user ever sees another's module-level state) and are reused
// for that user's next chunks and calls until their memory passes RETIRE_BYTES (the runtime is a
// bump allocator: what a UDF allocates is freed only with its instance), after a failure, or when
// pushed out of the thread's few. WebAssembly is the sandbox, a fuel counter (as-compiler.ts)
// stops a call at its deadline or on cancel, traps and aborts end the call with the UDF's message
// and line.
import { createHash } from 'node:crypto';
import { ApiError, ProcessException, RequestAborted } from '../core/errors.js';
import { DataCube } from '../datacube/datacube.js';
import { plane } from '../wasm/kernels.js';
import { addStage } from '../core/stages.js';
import { requireLink } from './client.js';
import { versionMatches } from './versions.js';
import { MAX_SOURCE_BYTES } from './as-compiler.js';
import type { UdfRunContext } from './python-cube.js';

export type AsKind = 'apply' | 'reduce' | 'apply_dimension';

const SIGNATURE: Record<AsKind, { fn: string; text: string }> = {
  apply: { fn: 'apply', text: 'export function apply(x: f64): f64' },
  reduce: { fn: 'reduce', text: 'export function reduce(values: Float64Array): f64' },
  apply_dimension: { fn: 'apply_dimension', text: 'export function apply_dimension(values: Float64Array, out: Float64Array): void' },
};

/** Pixels per call into the module (bounds its memory whatever the cube's size). */
const CHUNK = 64 * 1024;
/** Bumped when the driver changes: compiled modules are cached by a hash that includes it. */
const DRIVER_VERSION = 2;

function driver(kind: AsKind): string {
  const common = `
// ---- Xeo's driver, appended to the UDF's source ----
let __xeo_in = new StaticArray<f32>(0);
let __xeo_out = new StaticArray<f32>(0);
let __xeo_ctx = new StaticArray<f64>(0);
export function __xeo_prepare(nIn: i32, nOut: i32, nCtx: i32): void {
  if (__xeo_in.length < nIn) __xeo_in = new StaticArray<f32>(nIn);
  if (__xeo_out.length < nOut) __xeo_out = new StaticArray<f32>(nOut);
  if (__xeo_ctx.length != nCtx) __xeo_ctx = new StaticArray<f64>(nCtx);
}
export function __xeo_in_ptr(): usize { return changetype<usize>(__xeo_in); }
export function __xeo_out_ptr(): usize { return changetype<usize>(__xeo_out); }
export function __xeo_ctx_ptr(): usize { return changetype<usize>(__xeo_ctx); }
function contextValue(i: i32): f64 { return i >= 0 && i < __xeo_ctx.length ? unchecked(__xeo_ctx[i]) : NaN; }
function contextLength(): i32 { return __xeo_ctx.length; }
`;
  if (kind === 'apply') {
    return `${common}
export function __xeo_run(n: i32, m: i32): void {
  for (let i = 0; i < n; i++) unchecked(__xeo_out[i] = <f32>apply(<f64>unchecked(__xeo_in[i])));
}
`;
  }
  if (kind === 'reduce') {
    return `${common}
export function __xeo_run(n: i32, m: i32): void {
  const v = new Float64Array(m);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < m; k++) unchecked(v[k] = <f64>unchecked(__xeo_in[k * n + i]));
    unchecked(__xeo_out[i] = <f32>reduce(v));
  }
}
`;
  }
  return `${common}
export function __xeo_run(n: i32, m: i32): void {
  const v = new Float64Array(m);
  const o = new Float64Array(m);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < m; k++) {
      unchecked(v[k] = <f64>unchecked(__xeo_in[k * n + i]));
      unchecked(o[k] = NaN);
    }
    apply_dimension(v, o);
    for (let k = 0; k < m; k++) unchecked(__xeo_out[k * n + i] = <f32>unchecked(o[k]));
  }
}
`;
}

/** The numbers of a context, in the documented order. */
export function contextNumbers(context: unknown): number[] {
  if (typeof context === 'number') return [context];
  if (typeof context === 'boolean') return [context ? 1 : 0];
  if (Array.isArray(context)) return context.map((v) => (typeof v === 'number' ? v : typeof v === 'boolean' ? Number(v) : NaN));
  if (context && typeof context === 'object') return Object.values(context).filter((v): v is number => typeof v === 'number');
  return [];
}

interface Exports {
  memory: { buffer: ArrayBuffer };
  _initialize(): void;
  __xeo_prepare(nIn: number, nOut: number, nCtx: number): void;
  __xeo_in_ptr(): number;
  __xeo_out_ptr(): number;
  __xeo_ctx_ptr(): number;
  __xeo_run(n: number, m: number): void;
}

interface Call {
  deadline: number;
  timeoutMs: number;
  signal?: AbortSignal;
  traces: string[];
}

interface Instance {
  exports: Exports;
  /** The call under way: its deadline and cancellation, its trace lines (set for each call). */
  call: Call;
}

type WasmModule = object;
const WA = (
  globalThis as unknown as {
    WebAssembly: { Module: new (b: Uint8Array) => WasmModule; Instance: new (m: WasmModule, i: Record<string, Record<string, unknown>>) => { exports: unknown } };
  }
).WebAssembly;

/** Compiled modules of this thread, by hash (V8 keeps their optimised code with them). */
const modules = new Map<string, WasmModule>();
/** Instances by user and module (least recently used first). */
const instances = new Map<string, Instance>();
/** Instances kept per thread. */
const MAX_INSTANCES = 8;
/** An instance whose memory has grown past this is dropped after its chunk (a fresh one follows). */
const RETIRE_BYTES = 32 << 20;

class Stop extends Error {
  constructor(readonly error: ApiError) {
    super(error.message);
  }
}

function readString(mem: ArrayBuffer, ptr: number): string {
  if (!ptr || ptr < 4 || ptr > mem.byteLength) return '';
  const bytes = new Uint32Array(mem, ptr - 4, 1)[0];
  const len = Math.min(bytes >>> 1, 2000, (mem.byteLength - ptr) >>> 1);
  return String.fromCharCode(...new Uint16Array(mem, ptr, len));
}

/** A new instance: its module-level code runs under the call's deadline. */
function instantiate(module: WasmModule, call: Call): Instance {
  const inst: Instance = { exports: null as unknown as Exports, call };
  const mem = () => inst.exports.memory.buffer;
  const env = {
    abort: (msg: number, file: number, line: number, col: number) => {
      const text = readString(mem(), msg);
      const where = readString(mem(), file) === 'udf.ts' ? ` (line ${line}, column ${col} of the AssemblyScript source)` : '';
      throw new Stop(new ApiError('UdfFailed', { reason: `abort: ${text || 'no message'}${where}` }));
    },
    seed: () => Date.now(),
    trace: (msg: number, n: number, ...args: number[]) => {
      const c = inst.call;
      if (c.traces.length < 100) c.traces.push(`${readString(mem(), msg)}${n > 0 ? ' ' + args.slice(0, n).join(', ') : ''}`);
    },
    fuel_out: () => {
      const c = inst.call;
      if (c.signal?.aborted) throw new Stop(new RequestAborted());
      if (performance.now() > c.deadline) throw new Stop(new ApiError('UdfFailed', { reason: `it ran longer than the ${Math.round(c.timeoutMs / 1000)} s one call may take and was stopped` }));
    },
  };
  inst.exports = new WA.Instance(module, { env }).exports as Exports;
  inst.exports._initialize();
  return inst;
}

/** Wraps and compiles (on the host, cached there and here) a UDF for its parent process; with the key of its instances for this user. */
async function moduleFor(ctx: UdfRunContext, source: string, kind: AsKind): Promise<{ module: WasmModule; key: string }> {
  const installed = ctx.link?.assemblyScriptVersion ?? null;
  if (ctx.version && installed && !versionMatches(ctx.version, installed)) {
    throw new ProcessException('InvalidVersion', `the AssemblyScript runtime has no version '${ctx.version}' here (it is ${installed})`);
  }
  if (Buffer.byteLength(source, 'utf8') > MAX_SOURCE_BYTES) throw new ApiError('UdfInvalid', { reason: `the AssemblyScript source is larger than ${MAX_SOURCE_BYTES} bytes` });
  const sig = SIGNATURE[kind];
  if (!new RegExp(`export\\s+function\\s+${sig.fn}\\s*\\(`).test(source)) {
    throw new ApiError('UdfInvalid', { reason: `an AssemblyScript UDF here must define ${sig.text}` });
  }
  const wrapped = `${source}\n${driver(kind)}`;
  const hash = createHash('sha256').update(`${DRIVER_VERSION}\n${kind}\n${wrapped}`).digest('hex').slice(0, 32);
  let module = modules.get(hash);
  if (!module) {
    const wasm = await requireLink(ctx.link).compile(hash, wrapped, source.split('\n').length, ctx.signal);
    module = new WA.Module(wasm);
    if (modules.size >= 64) modules.delete(modules.keys().next().value!);
    modules.set(hash, module);
  }
  return { module, key: `${ctx.user}\n${hash}` };
}

/** Runs wasm code, turning traps, aborts and stops into the errors answered. */
function guarded<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof Stop) throw e.error;
    if (e instanceof RangeError && /call stack/i.test(e.message)) throw new ApiError('UdfFailed', { reason: 'the AssemblyScript UDF recursed too deep (stack overflow)' });
    const name = (e as { constructor?: { name?: string } })?.constructor?.name;
    if (name === 'RuntimeError') throw new ApiError('UdfFailed', { reason: `the AssemblyScript UDF trapped: ${(e as Error).message}` });
    throw e;
  }
}

/**
 * Runs the module over `n` pixels of `m` input vectors each, writing the output vectors:
 * inputs[k] and outputs[k] hold element k of every pixel.
 */
function runChunks(module: WasmModule, key: string, ctx: UdfRunContext, inputs: Float32Array[], outputs: Float32Array[], n: number, context: number[]): void {
  const m = inputs.length;
  const t0 = performance.now();
  const call: Call = { deadline: t0 + ctx.timeoutMs, timeoutMs: ctx.timeoutMs, signal: ctx.signal, traces: [] };
  try {
    const chunk = Math.max(1, Math.min(n, CHUNK));
    for (let p0 = 0; p0 < n; p0 += chunk) {
      const len = Math.min(chunk, n - p0);
      let inst = instances.get(key);
      if (inst) {
        instances.delete(key);
        inst.call = call;
      } else inst = instantiate(module, call);
      // Taken out of the thread's instances while it runs: a chunk that fails may leave the
      // module's state half-done, and its instance is not put back.
      const x = inst.exports;
      x.__xeo_prepare(len * m, len * outputs.length, context.length);
      new Float64Array(x.memory.buffer, x.__xeo_ctx_ptr(), context.length).set(context);
      const inView = new Float32Array(x.memory.buffer, x.__xeo_in_ptr(), len * m);
      for (let k = 0; k < m; k++) inView.set(inputs[k].subarray(p0, p0 + len), k * len);
      x.__xeo_run(len, m);
      const outView = new Float32Array(x.memory.buffer, x.__xeo_out_ptr(), len * outputs.length);
      for (let k = 0; k < outputs.length; k++) outputs[k].set(outView.subarray(k * len, (k + 1) * len), p0);
      if (x.memory.buffer.byteLength <= RETIRE_BYTES) {
        instances.set(key, inst);
        if (instances.size > MAX_INSTANCES) instances.delete(instances.keys().next().value!);
      }
    }
  } finally {
    for (const t of call.traces) ctx.log({ level: 'info', message: t });
    const ms = performance.now() - t0;
    addStage('udf', ms);
    addStage('udfCode', ms);
  }
}

/** Runs an AssemblyScript UDF on a cube in the way of its parent process. */
export async function assemblyScriptOnCube(ctx: UdfRunContext, source: string, kind: AsKind, cube: DataCube, opts: { dimension?: string; context: unknown }): Promise<DataCube> {
  const { module, key } = await moduleFor(ctx, source, kind);
  const context = contextNumbers(opts.context);
  const run = (inputs: Float32Array[], outputs: Float32Array[], n: number) => guarded(() => runChunks(module, key, ctx, inputs, outputs, n, context));
  if (kind === 'apply') {
    const out = plane(cube.size);
    run([cube.data], [out], cube.size);
    return cube.with({ data: out });
  }
  const d = cube.index(opts.dimension ?? '');
  if (d < 0)
    throw new ApiError('ProcessParameterInvalid', { process: kind === 'reduce' ? 'reduce_dimension' : 'apply_dimension', parameter: 'dimension', reason: `the data cube has no dimension '${opts.dimension}'` });
  const { data, rest } = cube.outermost(d);
  const m = cube.shape[d];
  const inputs = Array.from({ length: m }, (_, k) => data.subarray(k * rest, (k + 1) * rest));
  if (kind === 'reduce') {
    const out = plane(rest);
    run(inputs, [out], rest);
    const dims = cube.dims.filter((_, i) => i !== d);
    return cube.with({ dims, data: out, grid: cube.dims[d].type === 'spatial' ? null : cube.grid });
  }
  const joined = plane(m * rest);
  run(
    inputs,
    Array.from({ length: m }, (_, k) => joined.subarray(k * rest, (k + 1) * rest)),
    rest,
  );
  return cube.with({ data: DataCube.fromOutermost(joined, cube.shape, d) });
}

/** Runs an AssemblyScript UDF on plain numbers (run_udf outside a cube): apply on a number, reduce on an array. */
export async function assemblyScriptOnValues(ctx: UdfRunContext, source: string, data: unknown, context: unknown): Promise<unknown> {
  const array = Array.isArray(data);
  if (!array && typeof data !== 'number' && data !== null)
    throw new ApiError('ProcessParameterInvalid', { process: 'run_udf', parameter: 'data', reason: 'the AssemblyScript runtime takes a number, an array of numbers or a data cube' });
  const values = (array ? data : [data]).map((v) => (typeof v === 'number' ? v : NaN));
  const kind: AsKind = array ? 'reduce' : 'apply';
  const { module, key } = await moduleFor(ctx, source, kind);
  const out = new Float32Array(1);
  guarded(() =>
    runChunks(
      module,
      key,
      ctx,
      values.map((v) => Float32Array.of(v)),
      [out],
      1,
      contextNumbers(context),
    ),
  );
  return Number.isNaN(out[0]) ? null : out[0];
}
