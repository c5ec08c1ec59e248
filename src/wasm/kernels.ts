// The WebAssembly kernels (kernels/*.ts, built into build/kernels.wasm) and the one place where their
// linear memory is managed: the thread's arena. The module is compiled once per thread and
// instantiated on first use (a worker thread gets its own instance and memory).
//
// The memory is SHARED memory (asc --sharedMemory): its buffer is a SharedArrayBuffer, and a view
// taken on it stays valid when the memory grows (growing a non-shared memory detaches every view).
// So a Float32Array on the arena can be held by a data cube for as long as it likes: no growth can
// invalidate it, by construction. Nothing else shares it: no other thread ever sees this memory.
//
// The arena hands out blocks in size classes (2^k and 3*2^(k-1) bytes; waste at most a third) with a
// free list per class (a request may take a free block up to twice its class), new blocks coming
// from the top, which grows the memory with memory.grow.
// Two kinds of owners:
//   - temporaries: alloc() ... release(mark()) around synchronous kernel calls (strictly nested);
//   - planes: plane(n) gives a Float32Array on the arena owned by the current arena scope
//     (withArena(), carried across awaits by AsyncLocalStorage, so concurrent requests on one
//     thread each free only their own); the scope's blocks go back to the free lists when it ends,
//     failed or not, and the next request reuses them. Outside any scope, plane(n) is a plain
//     Float32Array (nothing to free).
// When the last scope ends and the memory has grown past keepBytes (a large request has passed),
// the instance is recycled: a new instance with a new, small memory; the old memory is freed by
// the garbage collector once no view on it is left. Tier-1 modules re-instantiate on the new memory
// (memoryGeneration() tells them).
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AsyncLocalStorage } from 'node:async_hooks';

// The TypeScript lib this project compiles against (ES2022, no DOM) has no WebAssembly types; these
// are the few parts used here.
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
const WebAssembly = (
  globalThis as unknown as {
    WebAssembly: {
      Module: new (bytes: Uint8Array) => object;
      Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { exports: unknown };
    };
  }
).WebAssembly;

/** The functions build/kernels.wasm exports; pointers and sizes are byte offsets and counts. */
export interface KernelExports {
  memory: WasmMemory;
  heapBase(): number;
  add(a: number, b: number, out: number, n: number): void;
  subtract(a: number, b: number, out: number, n: number): void;
  multiply(a: number, b: number, out: number, n: number): void;
  divide(a: number, b: number, out: number, n: number): void;
  normalizedDifference(a: number, b: number, out: number, n: number): void;
  linearScale(a: number, out: number, n: number, inMin: number, inMax: number, outMin: number, outMax: number): void;
  /**
   * Warps a w x h block: src is a srcW x srcH f32 band (NaN = no-data); nodes holds f64 pairs (source
   * column, row) of the target pixel centres at local positions (min(i*step, lastX), min(j*step, lastY)),
   * node (i, j) at nodes + (j*nodeStride + i)*16; out gets f32 rows outStride values apart.
   */
  warpNearest(src: number, srcW: number, srcH: number, nodes: number, nodeStride: number, step: number, lastX: number, lastY: number, out: number, outStride: number, w: number, h: number): void;
  warpBilinear(src: number, srcW: number, srcH: number, nodes: number, nodeStride: number, step: number, lastX: number, lastY: number, out: number, outStride: number, w: number, h: number): void;
  /** As the warps, but writes the interpolated source coordinates (f64 pairs) instead of sampling. */
  warpCoordinates(nodes: number, nodeStride: number, step: number, lastX: number, lastY: number, out: number, outStride: number, w: number, h: number): void;
  /**
   * Tier 0 (kernels/vm.ts): runs the program encoded at `code` (src/compile/tier0.ts) over n values;
   * inputTable holds u32 pointers to the inputs. Inputs and out need room for n rounded up to a
   * multiple of 4 values; scratch (16-byte aligned) vmScratchBytes(code) bytes.
   */
  vmRun(code: number, inputTable: number, out: number, n: number, scratch: number): void;
  vmScratchBytes(code: number): number;
  /** Values per VM block. */
  vmBlock(): number;
  /** n f32 values to RGBA words through a 256-word RGBA table, as src/output/colormap.ts colorize. */
  colorizeRgba(values: number, n: number, table: number, min: number, max: number, out: number): void;
  /**
   * Zonal work (kernels/zonal.ts): rasterises parts (i32 quads: kind, first ring, end ring, label) of
   * geometries in pixel coordinates (f64 pairs at xy, u32 ring starts) to spans (i32 quads: label,
   * row, c0, c1) at out; answers their number, or -1 when `capacity` spans do not suffice.
   */
  zonalSpans(xy: number, ringStarts: number, parts: number, nParts: number, width: number, height: number, scratch: number, out: number, capacity: number): number;
  zonalScratchBytes(maxVertices: number, height: number): number;
  /** Adds one f32 plane over spans to f64 x 6 accumulators per label (total, valid, sum, min, max, deviations). */
  zonalSums(values: number, width: number, spans: number, nSpans: number, acc: number): void;
  zonalDeviations(values: number, width: number, spans: number, nSpans: number, means: number, acc: number): void;
  /** Copies each label's pixel values to out at its u32 cursor (advanced). */
  zonalGather(values: number, width: number, spans: number, nSpans: number, cursors: number, out: number): void;
  zonalFillU8(spans: number, nSpans: number, width: number, value: number, out: number): void;
  /**
   * Random forests (kernels/forest.ts): walks the forest over n pixels whose p predictor planes are
   * listed (u32 pointers) at table, in rows of `cols` pixels (0: no rows; a pixel equal to its left
   * or upper neighbour takes its answer, so the answer is how many pixels it walked); mode 0 mean value, 1 class of highest probability, 2 class
   * probabilities (width planes). Nodes are 8-byte records with a leaf index per node, roots and
   * depths i32 per tree; see src/compile/forest-kernel.ts.
   */
  forestRun(
    table: number,
    p: number,
    n: number,
    cols: number,
    nodes: number,
    leafOf: number,
    roots: number,
    depths: number,
    nTrees: number,
    leaves: number,
    width: number,
    classes: number,
    mode: number,
    out: number,
    scratch: number,
  ): number;
  forestScratchBytes(p: number, width: number): number;
  /** Floats per leaf in the leaves forestRun reads (2 to 4 classes padded to 4 for SIMD). */
  forestLeafStride(width: number): number;
  /** A band of a split prediction (kernels/forest.ts forestBand): parameters at `params`, scratch by `slot`. */
  forestBand(table: number, out: number, n: number, params: number, slot: number): void;
  /**
   * Decoded raster samples to cube values (kernels/samples.ts): h rows of w pixels of `kind` (0 u8,
   * 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 f64) at src, a pixel `stride` samples after the
   * previous, rows srcPitch samples apart, to f32 rows outPitch values apart at out; samples equal to
   * nodata (when hasNodata is 1) become NaN.
   */
  samplesToF32(src: number, kind: number, srcPitch: number, stride: number, w: number, h: number, out: number, outPitch: number, hasNodata: number, nodata: number): void;
  /** Undoes TIFF predictor 2 of `rows` rows of `width` one-sample 16-bit values at `p`, in place (kernels/samples.ts). */
  undoPredictor16(p: number, width: number, rows: number): void;
  /** Count, sum, sum of squares, min and max (five f64 at out) of the finite values of n f32 at `values` (kernels/stats.ts). */
  bandStats(values: number, n: number, out: number): void;
  /** Math.sin, cos, tan in double precision (for tier-1 modules to import: they have no data segments for the tables). */
  mathSin(x: number): number;
  mathCos(x: number): number;
  mathTan(x: number): number;
}

const PAGE = 65536;

/** build/kernels.wasm: from dist/src/wasm/kernels.js it is ../../../build; from src/wasm (tests run on sources) ../../build. */
function wasmPath(): string {
  const candidates = ['../../../build/kernels.wasm', '../../build/kernels.wasm'].map((p) => fileURLToPath(new URL(p, import.meta.url)));
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`build/kernels.wasm not found (looked at ${candidates.join(', ')}); run npm run build:kernels`);
  return found;
}

let module: object | undefined;
let exports: KernelExports | undefined;
let base = 0;
let top = 0;
let generation = 0;
/** The SharedArrayBuffers of the current instance's memory (one per size it had): what ptrOf() recognises. */
let buffers = new WeakSet<object>();
/** Free blocks by size class (bytes). */
let free = new Map<number, number[]>();
/** Temporaries (alloc) in allocation order: [ptr, class bytes]. */
const temps: number[] = [];
let activeScopes = 0;
const counters = { grows: 0, recycles: 0, reused: 0, fresh: 0 };

/** The kernel functions (loading the module on first call). */
export function kernels(): KernelExports {
  if (!exports) {
    module ??= new WebAssembly.Module(readFileSync(wasmPath()));
    const instance = new WebAssembly.Instance(module, {
      env: {
        abort: () => {
          throw new Error('wasm kernel aborted');
        },
      },
    });
    exports = instance.exports as KernelExports;
    base = exports.heapBase();
    top = base;
    buffers = new WeakSet();
    free = new Map();
    temps.length = 0;
  }
  return exports;
}

/** Bumped each time the instance (and so its memory) is replaced: tier-1 modules instantiate anew. */
export function memoryGeneration(): number {
  kernels();
  return generation;
}

/** How a thread's arena is kept between requests. */
export interface ArenaSettings {
  /** Bytes above the arena that are kept when idle (XEO_KERNEL_ARENA_KEEP_BYTES); more is given back by recycling. */
  keepBytes: number;
}

export const DEFAULT_ARENA: ArenaSettings = Object.freeze({ keepBytes: 256 << 20 });

declare module '../core/run-context.js' {
  interface EngineParts {
    /** How the thread's kernel memory is kept between runs (withArena). */
    arena: ArenaSettings;
  }
}

/** The size class of a request: 2^k or 3*2^(k-1) bytes, at least 64, plus 16 bytes so SIMD reads and writes past n (up to 3 values) stay in the block. */
function sizeClass(bytes: number): number {
  const need = Math.max(64, Math.ceil(bytes / 16) * 16 + 16);
  const p = 2 ** Math.ceil(Math.log2(need));
  return (p / 4) * 3 >= need ? (p / 4) * 3 : p;
}

/**
 * A block of class `cls`, recorded in `owner` as (pointer, the class it really has): a free one of
 * that class, else a free one of the smallest larger class up to twice the size (requests of many
 * sizes, a zonal job's windows say, then reuse each other's blocks instead of growing the memory
 * class by class), else a new one from the top. Nothing is recorded when the memory cannot grow.
 */
function take(cls: number, owner: number[]): number {
  const k = kernels();
  const list = free.get(cls);
  if (list && list.length > 0) {
    counters.reused++;
    const ptr = list.pop()!;
    owner.push(ptr, cls);
    return ptr;
  }
  let larger = 0;
  for (const [c, l] of free) if (c > cls && c <= 2 * cls && l.length > 0 && (larger === 0 || c < larger)) larger = c;
  if (larger > 0) {
    counters.reused++;
    const ptr = free.get(larger)!.pop()!;
    owner.push(ptr, larger);
    return ptr;
  }
  const ptr = top;
  const end = ptr + cls;
  const have = k.memory.buffer.byteLength;
  if (end > have) {
    try {
      k.memory.grow(Math.ceil((end - have) / PAGE));
      counters.grows++;
    } catch (e) {
      throw new RangeError(`kernel memory cannot grow to ${end} bytes: ${(e as Error).message}`, { cause: e });
    }
  }
  counters.fresh++;
  top = end;
  owner.push(ptr, cls);
  return ptr;
}

function give(ptr: number, cls: number): void {
  let list = free.get(cls);
  if (!list) free.set(cls, (list = []));
  list.push(ptr);
}

/** Reserves a temporary block of at least `bytes` (16-byte aligned, with 16 bytes of slack); freed by release(). */
export function alloc(bytes: number): number {
  if (!(bytes >= 0) || !Number.isFinite(bytes)) throw new RangeError(`alloc(${bytes})`);
  return take(sizeClass(bytes), temps);
}

/** A mark to give back to release(): the temporaries allocated after it are freed then. */
export function mark(): number {
  kernels();
  return temps.length;
}

/** Frees every temporary allocated since `m` was taken by mark(). */
export function release(m: number): void {
  if (!(m >= 0 && m <= temps.length && m % 2 === 0)) throw new RangeError(`release(${m}) outside [0, ${temps.length}]`);
  while (temps.length > m) {
    const cls = temps.pop()!;
    give(temps.pop()!, cls);
  }
}

/** Frees every temporary (the memory stays as large as it grew). */
export function reset(): void {
  kernels();
  release(0);
}

// ---------------------------------------------------------------------------------------------
// Planes: arena blocks owned by a scope

class ArenaScope {
  /** [ptr, class bytes] pairs; ptr -1 once freed early. */
  readonly blocks: number[] = [];
  readonly byPtr = new Map<number, number>();
  constructor(
    readonly generation: number,
    readonly keepBytes: number,
  ) {}
}

const scopes = new AsyncLocalStorage<ArenaScope>();

/**
 * Runs fn in a new arena scope: the planes it allocates (plane()) are freed when it settles, and the
 * next scope reuses them. Scopes nest (an inner one frees only its own planes) and interleave
 * across awaits (each async context has its own).
 */
export async function withArena<T>(fn: () => Promise<T> | T, settings: ArenaSettings = DEFAULT_ARENA): Promise<T> {
  if (!(settings.keepBytes >= 0)) throw new RangeError(`keepBytes ${settings.keepBytes}`);
  kernels();
  const scope = new ArenaScope(generation, settings.keepBytes);
  activeScopes++;
  try {
    return await scopes.run(scope, fn);
  } finally {
    activeScopes--;
    endScope(scope);
  }
}

/** Whether the caller runs in an arena scope (its planes are then freed when that scope ends). */
export function inArena(): boolean {
  return scopes.getStore() !== undefined;
}

function endScope(scope: ArenaScope): void {
  if (scope.generation === generation && exports) {
    const b = scope.blocks;
    for (let i = 0; i < b.length; i += 2) if (b[i] >= 0) give(b[i], b[i + 1]);
  }
  scope.blocks.length = 0;
  scope.byPtr.clear();
  if (activeScopes === 0 && exports && temps.length === 0 && exports.memory.buffer.byteLength - base > scope.keepBytes) recycle();
}

/** Replaces the instance and its memory (the old memory lives on while views on it do, then is collected). */
function recycle(): void {
  exports = undefined;
  generation++;
  counters.recycles++;
  kernels();
}

/**
 * n float32 values for a cube plane: on the arena when in a scope (freed with the scope), else a
 * plain Float32Array. The values are NOT initialised on the arena (a reused block holds old values).
 */
export function plane(n: number): Float32Array {
  if (!(Number.isInteger(n) && n >= 0)) throw new RangeError(`plane(${n})`);
  const scope = scopes.getStore();
  if (!scope || n === 0) return new Float32Array(n);
  if (scope.generation !== generation) return new Float32Array(n); // an instance recycled under a scope: cannot happen while it runs, kept for safety
  // Large planes start at staggered offsets (a "colour" of 64-byte steps): blocks of a size class
  // are page multiples apart, and a kernel streaming many planes at equal offsets modulo 4 KiB
  // makes them compete for the same cache sets (a third slower on the mean of 12 planes).
  const bytes = n * 4;
  const shift = bytes >= COLOUR_MIN_BYTES ? (colour++ % COLOURS) * 64 : 0;
  const cls = sizeClass(bytes + (bytes >= COLOUR_MIN_BYTES ? COLOURS * 64 : 0));
  const index = scope.blocks.length;
  let ptr: number;
  try {
    ptr = take(cls, scope.blocks);
  } catch (e) {
    // Past what wasm32 memory can hold (4 GiB): this plane lives in the JS heap, and kernels copy it in.
    if (e instanceof RangeError) return new Float32Array(n);
    throw e;
  }
  scope.byPtr.set(ptr + shift, index);
  return new Float32Array(memoryBuffer(), ptr + shift, n);
}

const COLOURS = 16;
const COLOUR_MIN_BYTES = 64 * 1024;
let colour = 0;

/** Gives a plane of the current scope back early (a temporary read window, say); anything else is left alone. */
export function freePlane(p: Float32Array): void {
  const scope = scopes.getStore();
  if (!scope || scope.generation !== generation || !buffers.has(p.buffer)) return;
  const at = scope.byPtr.get(p.byteOffset);
  if (at === undefined) return;
  scope.byPtr.delete(p.byteOffset);
  give(scope.blocks[at], scope.blocks[at + 1]);
  scope.blocks[at] = -1;
}

/** The current memory's buffer, remembered so that ptrOf() knows views on it. */
function memoryBuffer(): ArrayBufferLike {
  const b = kernels().memory.buffer;
  buffers.add(b);
  return b;
}

/**
 * The byte offset in kernel memory of a view on it (of the current instance), else -1: then the
 * values are elsewhere and must be copied in. Views from plane(), f32() and friends qualify.
 */
export function ptrOf(a: ArrayBufferView): number {
  if (!exports) return -1;
  return buffers.has(a.buffer) ? a.byteOffset : -1;
}

/** Arena figures: memory size, blocks reused or new, growths and recycles. */
export function arenaStats(): { memoryBytes: number; top: number; freeBlocks: number; activeScopes: number; generation: number; grows: number; recycles: number; reused: number; fresh: number } {
  const k = kernels();
  let freeBlocks = 0;
  for (const l of free.values()) freeBlocks += l.length;
  return { memoryBytes: k.memory.buffer.byteLength, top, freeBlocks, activeScopes, generation, ...counters };
}

/** Float32 view of n values at ptr (a view on shared memory: it survives growth). */
export function f32(ptr: number, n: number): Float32Array {
  return new Float32Array(memoryBuffer(), ptr, n);
}

/** Float64 view of n values at ptr. */
export function f64(ptr: number, n: number): Float64Array {
  return new Float64Array(memoryBuffer(), ptr, n);
}

/**
 * The kernels module's linear memory (a WebAssembly.Memory): what tier-1 modules import, so they
 * run on the same memory as tier 0.
 */
export function kernelMemory(): WasmMemory {
  return kernels().memory;
}

/**
 * Undoes TIFF predictor 2 of `rows` rows of `width` one-sample 16-bit values at the start of
 * `bytes`, in place: copied into kernel memory, undone there eight samples a step
 * (kernels/samples.ts) and copied back, which costs less than a loop in JavaScript.
 */
export function undoPredictor16(bytes: Uint8Array, width: number, rows: number): void {
  const n = width * rows * 2;
  if (!(n > 0)) return;
  const m = mark();
  try {
    const at = alloc(n);
    u8(at, n).set(bytes.subarray(0, n));
    kernels().undoPredictor16(at, width, rows);
    bytes.set(u8(at, n));
  } finally {
    release(m);
  }
}

/** Uint8 view of n bytes at ptr. */
export function u8(ptr: number, n: number): Uint8Array {
  return new Uint8Array(memoryBuffer(), ptr, n);
}

/** Int32 view of n values at ptr. */
export function i32(ptr: number, n: number): Int32Array {
  return new Int32Array(memoryBuffer(), ptr, n);
}

/** Uint32 view of n values at ptr. */
export function u32(ptr: number, n: number): Uint32Array {
  return new Uint32Array(memoryBuffer(), ptr, n);
}
