// Runs fused pixel Programs on the kernels, by tier 0 (the block VM of kernels/vm.ts) or by a tier-1
// compiled module (the engine's Tier1, given with each run); both work on the same linear memory, that of
// build/kernels.wasm. Inputs already in kernel memory (cube planes of the arena, see kernels.ts) are
// read where they are and the answer is written into a new arena plane: nothing is copied. Inputs
// elsewhere are copied in chunk by chunk (so memory stays bounded for huge rasters).
import type { Program } from './program.js';
import { programHash } from './program.js';
import { encodeProgram } from './tier0.js';
import { alloc, f32, i32, kernels, mark, plane, ptrOf, release, u32, u8 } from '../wasm/kernels.js';
import { addStage } from '../core/stages.js';
import type { KernelHelpers } from './kernel-threads.js';

/** A tier-1 module's entry point; pointers into kernel memory, inputTable a u32 table of input pointers. */
export interface CompiledKernel {
  /**
   * out[i] = program(inputs[i]) for i < n. Inputs and out are allocated with alloc() (so they have
   * room for n rounded up to a multiple of 4 values).
   */
  run(inputTable: number, out: number, n: number): void;
  /** The compiled module and the export that is `run`: set for kernels other threads may instantiate on the shared memory (kernel-threads.ts). */
  module?: object;
  name?: string;
}

/** Tier 1: compiled kernels by programHash, compiled in the background on request. */
export interface Tier1 {
  /** The compiled kernel of the program with this hash, or null when not (yet) compiled. */
  lookup(hash: string): CompiledKernel | null;
  /** Asks for the program to be compiled (asynchronously); called at most once per hash by the executor. */
  request(p: Program, hash: string): void;
}

declare module '../core/run-context.js' {
  interface EngineParts {
    /** The thread's tier-1 kernels (compiled in the background, cached on disk), or null for tier 0 only. */
    tier1: Tier1 | null;
  }
}

/** The programs asked of each tier 1 (compiles are requested once per program). */
const requested = new WeakMap<Tier1, Set<string>>();

export interface RunOptions {
  /** 0: the VM; 1: a compiled kernel (an error when there is none); 'auto' (default): tier 1 when compiled, else tier 0. */
  tier?: 0 | 1 | 'auto';
  /** Where compiled kernels come from (the run's engine); none: tier 0 only. */
  tier1?: Tier1 | null;
  /** Helper threads that share large runs of a compiled kernel (the run's engine); none: this thread alone. */
  helpers?: KernelHelpers | null;
}

/** Values per input copied into kernel memory at a time (at most). */
const CHUNK = 64 * 1024;
/** Bytes of inputs and output held in kernel memory at a time (at most, beyond one VM block each). */
const CHUNK_BYTES = 8 << 20;

// Per Program object: its encoding and its hash (computed on first need).
const encodings = new WeakMap<Program, Int32Array>();
const hashes = new WeakMap<Program, string>();

function encodingOf(p: Program): Int32Array {
  let e = encodings.get(p);
  if (!e) encodings.set(p, (e = encodeProgram(p)));
  return e;
}

function hashOf(p: Program): string {
  let h = hashes.get(p);
  if (!h) hashes.set(p, (h = programHash(p)));
  return h;
}

function compiledFor(p: Program, tier: 0 | 1 | 'auto', t: Tier1 | null): CompiledKernel | null {
  if (tier === 0) return null;
  if (!t) {
    if (tier === 1) throw new Error('tier 1 kernels are not available');
    return null;
  }
  const hash = hashOf(p);
  const k = t.lookup(hash);
  if (k) return k;
  let asked = requested.get(t);
  if (!asked) requested.set(t, (asked = new Set()));
  if (!asked.has(hash)) {
    asked.add(hash);
    t.request(p, hash);
  }
  if (tier === 1) throw new Error(`no tier-1 kernel compiled for program ${hash}`);
  return null;
}

/** Values per chunk for a program with `nInputs` inputs (a multiple of the VM block). */
function chunkSize(nInputs: number, n: number, block: number): number {
  const byBudget = Math.floor(CHUNK_BYTES / (4 * (nInputs + 1)) / block) * block;
  const c = Math.max(block, Math.min(CHUNK, byBudget));
  return Math.min(c, Math.ceil(n / block) * block);
}

/**
 * The program's answer for n pixels: out[i] = program(inputs[0][i], inputs[1][i], ...). Each input
 * has at least n values.
 */
export function runProgram(p: Program, inputs: Float32Array[], n: number, opts: RunOptions = {}): Float32Array {
  if (inputs.length !== p.inputs) throw new Error(`program takes ${p.inputs} inputs, got ${inputs.length}`);
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`runProgram: n = ${n}`);
  for (const [k, a] of inputs.entries()) if (a.length < n) throw new RangeError(`input ${k} has ${a.length} values, fewer than ${n}`);
  const t0 = performance.now();
  const code = encodingOf(p);
  const compiled = compiledFor(p, opts.tier ?? 'auto', opts.tier1 ?? null);
  // On the arena in an arena scope (so the next kernel, warp or encoder reads it in place).
  const result = plane(n);
  if (n === 0) return result;
  const k = kernels();
  const m0 = mark();
  try {
    const codePtr = alloc(code.length * 4);
    const table = alloc(Math.max(1, p.inputs) * 4);
    i32(codePtr, code.length).set(code);
    const scratch = compiled ? 0 : alloc(k.vmScratchBytes(codePtr));
    const inPlace = inputs.map((a) => ptrOf(a));
    const outPtr = ptrOf(result);
    if (outPtr >= 0 && inPlace.every((q) => q >= 0)) {
      // Everything in kernel memory: one call over all n values, reading and writing in place.
      u32(table, p.inputs).set(inPlace);
      // A large run of a compiled kernel is split by bands of rows over the kernel helper threads.
      if (compiled?.module && compiled.name && opts.helpers?.runSplit(compiled as Required<CompiledKernel>, table, p.inputs, outPtr, n)) return result;
      if (compiled) compiled.run(table, outPtr, n);
      else k.vmRun(codePtr, table, outPtr, n, scratch);
      return result;
    }
    const block = k.vmBlock();
    const chunk = chunkSize(p.inputs, n, block);
    // Identical input arrays share one copy; inputs in kernel memory are read in place.
    const firstOf = inputs.map((a) => inputs.indexOf(a));
    const ptrs = inputs.map((_, j) => (inPlace[j] >= 0 ? -2 : firstOf[j] === j ? alloc(chunk * 4) : -1));
    for (let j = 0; j < ptrs.length; j++) if (ptrs[j] === -1) ptrs[j] = ptrs[firstOf[j]]!;
    const out = outPtr >= 0 ? -1 : alloc(chunk * 4);
    const tablePtrs = u32(table, p.inputs);
    const mem = f32(0, k.memory.buffer.byteLength >>> 2);
    for (let off = 0; off < n; off += chunk) {
      const len = Math.min(chunk, n - off);
      for (let j = 0; j < inputs.length; j++) {
        if (ptrs[j] === -2) tablePtrs[j] = inPlace[j] + off * 4;
        else {
          tablePtrs[j] = ptrs[j]!;
          if (firstOf[j] === j) mem.set(inputs[j].subarray(off, off + len), ptrs[j] >>> 2);
        }
      }
      // Written in place, chunk by chunk: the arena block has room for the SIMD tail past n.
      const o = out >= 0 ? out : outPtr + off * 4;
      if (compiled) compiled.run(table, o, len);
      else k.vmRun(codePtr, table, o, len, scratch);
      if (out >= 0) result.set(mem.subarray(out >>> 2, (out >>> 2) + len), off);
    }
  } finally {
    release(m0);
    addStage('kernel', performance.now() - t0);
  }
  return result;
}

/**
 * One band to RGBA bytes through a 256-entry RGBA table (1024 bytes), in wasm: the same bytes as
 * src/output/colormap.ts colorize with that map's table (NaN transparent, values clamped to [min, max]).
 */
export function kernelColorize(values: Float32Array, table: Uint8Array, min: number, max: number): Uint8Array {
  if (table.length !== 1024) throw new Error(`a colour table has 256 RGBA entries (1024 bytes), got ${table.length} bytes`);
  if (!Number.isFinite(min) || !Number.isFinite(max) || max < min) throw new Error(`bad value range [${min}, ${max}]: need finite min <= max`);
  const n = values.length;
  const result = new Uint8Array(n * 4);
  if (n === 0) return result;
  const k = kernels();
  const chunk = Math.min(n, 256 * 1024);
  const m0 = mark();
  try {
    const t = alloc(1024);
    // Values already in kernel memory are read in place; the RGBA bytes are the image's own layout.
    const inPlace = ptrOf(values);
    const src = inPlace >= 0 ? -1 : alloc(chunk * 4);
    const out = alloc(chunk * 4);
    u8(t, 1024).set(table);
    for (let off = 0; off < n; off += chunk) {
      const len = Math.min(chunk, n - off);
      if (src >= 0) f32(src, len).set(values.subarray(off, off + len));
      k.colorizeRgba(src >= 0 ? src : inPlace + off * 4, len, t, min, max, out);
      result.set(u8(out, len * 4), off * 4);
    }
  } finally {
    release(m0);
  }
  return result;
}
