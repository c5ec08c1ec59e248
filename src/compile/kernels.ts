// The WebAssembly kernels (kernels/*.ts, built into build/kernels.wasm) and the one place where their
// linear memory is managed. The module is compiled and instantiated synchronously on first use, once
// per thread (a worker thread gets its own instance and memory). Memory above heapBase() is handed
// out by a bump allocator: alloc() moves the top up (16-byte aligned, growing memory as needed),
// mark()/release() and reset() move it back. Nothing is freed individually.
//
// Typed views (f32(), f64()) are cheap and must be taken AFTER the allocations a computation needs:
// growing the memory detaches every view taken before.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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
  /** Math.sin, cos, tan in double precision (for tier-1 modules to import: they have no data segments for the tables). */
  mathSin(x: number): number;
  mathCos(x: number): number;
  mathTan(x: number): number;
}

const PAGE = 65536;

/** build/kernels.wasm: from dist/src/compile/kernels.js it is ../../../build; from src/compile (tests run on sources) ../../build. */
function wasmPath(): string {
  const candidates = ['../../../build/kernels.wasm', '../../build/kernels.wasm'].map((p) => fileURLToPath(new URL(p, import.meta.url)));
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`build/kernels.wasm not found (looked at ${candidates.join(', ')}); run npm run build:kernels`);
  return found;
}

let exports: KernelExports | undefined;
let base = 0;
let top = 0;

/** The kernel functions (loading the module on first call). */
export function kernels(): KernelExports {
  if (!exports) {
    const module = new WebAssembly.Module(readFileSync(wasmPath()));
    const instance = new WebAssembly.Instance(module, {
      env: {
        abort: () => {
          throw new Error('wasm kernel aborted');
        },
      },
    });
    exports = instance.exports as unknown as KernelExports;
    base = exports.heapBase();
    top = base;
  }
  return exports;
}

/** Reserves `bytes` (16-byte aligned) and returns the pointer; grows the memory when needed. */
export function alloc(bytes: number): number {
  const k = kernels();
  if (!(bytes >= 0) || !Number.isFinite(bytes)) throw new RangeError(`alloc(${bytes})`);
  const ptr = top;
  const end = ptr + Math.ceil(bytes / 16) * 16;
  const have = k.memory.buffer.byteLength;
  if (end > have) {
    try {
      k.memory.grow(Math.ceil((end - have) / PAGE));
    } catch (e) {
      throw new RangeError(`kernel memory cannot grow to ${end} bytes: ${(e as Error).message}`);
    }
  }
  top = end;
  return ptr;
}

/** The current top, to give back to release(). */
export function mark(): number {
  kernels();
  return top;
}

/** Frees everything allocated since `m` was taken by mark(). */
export function release(m: number): void {
  if (m < base || m > top) throw new RangeError(`release(${m}) outside [${base}, ${top}]`);
  top = m;
}

/** Frees everything (the memory stays as large as it grew). */
export function reset(): void {
  kernels();
  top = base;
}

/** Float32 view of n values at ptr (valid until the next alloc that grows the memory). */
export function f32(ptr: number, n: number): Float32Array {
  return new Float32Array(kernels().memory.buffer, ptr, n);
}

/** Float64 view of n values at ptr (valid until the next alloc that grows the memory). */
export function f64(ptr: number, n: number): Float64Array {
  return new Float64Array(kernels().memory.buffer, ptr, n);
}

/**
 * The kernels module's linear memory (a WebAssembly.Memory): what tier-1 modules import, so they
 * run on the same memory as tier 0.
 */
export function kernelMemory(): WasmMemory {
  return kernels().memory;
}

/** Uint8 view of n bytes at ptr (valid until the next alloc that grows the memory). */
export function u8(ptr: number, n: number): Uint8Array {
  return new Uint8Array(kernels().memory.buffer, ptr, n);
}

/** Int32 view of n values at ptr (valid until the next alloc that grows the memory). */
export function i32(ptr: number, n: number): Int32Array {
  return new Int32Array(kernels().memory.buffer, ptr, n);
}

/** Uint32 view of n values at ptr (valid until the next alloc that grows the memory). */
export function u32(ptr: number, n: number): Uint32Array {
  return new Uint32Array(kernels().memory.buffer, ptr, n);
}
