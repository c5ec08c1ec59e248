// Tier 1: generated, compiled kernels compute what src/compile/program.ts's header says, bit for bit
// (to within an ulp or so for the transcendental functions, whose implementations differ), on every
// op, the special values and every tail length; the cache finds equal programs by their canonical
// hash, survives a restart on disk without compiling, and keeps compile failures away from callers.
//
// The compiler runs in a worker thread from the built dist/src/compile/asc-worker.js: `npm test`
// builds first (pretest); with vitest alone, run `npx tsc -p .` before.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import os from 'node:os';
import path from 'node:path';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { OPCODES, UNARY, REDUCERS, programHash, canonical, type Instr, type Program } from '../src/compile/program.js';
import { generateSource, sortingNetwork } from '../src/compile/codegen.js';
import { createTier1, compileNow, ascCompile, checkModule, inspectWasm, stopCompiler, type KernelCache } from '../src/compile/tier1.js';
import { compileSource } from '../src/compile/asc-worker.js';
import { runProgram, type CompiledKernel } from '../src/compile/executor.js';
import { KernelHelpers, SPLIT_MIN_PIXELS } from '../src/compile/kernel-threads.js';
import { alloc, arenaStats, f32, mark, plane, ptrOf, release, u32, withArena } from '../src/wasm/kernels.js';
import { Rng } from './rng.js';

const F = Math.fround;

// ---------------------------------------------------------------------------------------------
// The reference: program.ts's header, straightforwardly, on float32 registers.

const TRANSCENDENTAL = new Set(['exp', 'ln', 'log10', 'log2', 'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh', 'asinh', 'acosh', 'atanh', 'pow', 'atan2', 'log']);

function roundHalfEven(x: number): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  const f = Math.floor(x);
  const d = x - f;
  const r = d < 0.5 ? f : d > 0.5 ? f + 1 : f % 2 === 0 ? f : f + 1;
  return r + 0;
}

const truth = (x: number): boolean | null => (Number.isNaN(x) ? null : x !== 0);
const cmp = (a: number, b: number, r: boolean) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : r ? 1 : 0);

function unary(op: string, x: number): number {
  switch (op) {
    case 'abs':
      return Math.abs(x);
    case 'neg':
      return -x;
    case 'sqrt':
      return Math.sqrt(x);
    case 'exp':
      return Math.exp(x);
    case 'ln':
      return Math.log(x);
    case 'log10':
      return Math.log10(x);
    case 'log2':
      return Math.log2(x);
    case 'sin':
      return Math.sin(x);
    case 'cos':
      return Math.cos(x);
    case 'tan':
      return Math.tan(x);
    case 'asin':
      return Math.asin(x);
    case 'acos':
      return Math.acos(x);
    case 'atan':
      return Math.atan(x);
    case 'sinh':
      return Math.sinh(x);
    case 'cosh':
      return Math.cosh(x);
    case 'tanh':
      return Math.tanh(x);
    case 'asinh':
      return Math.asinh(x);
    case 'acosh':
      return Math.acosh(x);
    case 'atanh':
      return Math.atanh(x);
    case 'floor':
      return Math.floor(x) + 0;
    case 'ceil':
      return Math.ceil(x) + 0;
    case 'trunc':
      return Math.trunc(x) + 0;
    case 'round':
      return roundHalfEven(x);
    case 'sgn':
      return x > 0 ? 1 : x < 0 ? -1 : x === 0 ? 0 : NaN;
    case 'not':
      return Number.isNaN(x) ? NaN : x === 0 ? 1 : 0;
    case 'isnodata':
      return Number.isNaN(x) ? 1 : 0;
    case 'isvalid':
      return Number.isFinite(x) ? 1 : 0;
    case 'isinf':
      return Math.abs(x) === Infinity ? 1 : 0;
  }
  throw new Error(op);
}

function binary(op: string, a: number, b: number): number {
  switch (op) {
    case 'add':
      return a + b;
    case 'sub':
      return a - b;
    case 'mul':
      return a * b;
    case 'div':
      return a / b;
    case 'pow':
      if (a !== a || b !== b) return NaN;
      if (a === 1 || (a === -1 && (b === Infinity || b === -Infinity))) return 1;
      return Math.pow(a, b);
    case 'mod': {
      if (Number.isNaN(a) || Number.isNaN(b)) return NaN;
      if (b === 0) return a > 0 ? Infinity : a < 0 ? -Infinity : NaN;
      let r = a % b;
      if (r !== 0 && r < 0 !== b < 0) r += b;
      return r === 0 ? 0 : r;
    }
    case 'atan2':
      return Math.atan2(a, b);
    case 'log':
      return b === 10 ? Math.log10(a) : b === 2 ? Math.log2(a) : Math.log(a) / Math.log(b);
    case 'gt':
      return cmp(a, b, a > b);
    case 'gte':
      return cmp(a, b, a >= b);
    case 'lt':
      return cmp(a, b, a < b);
    case 'lte':
      return cmp(a, b, a <= b);
    case 'eq':
      return cmp(a, b, a === b);
    case 'neq':
      return cmp(a, b, a !== b);
    case 'and': {
      const x = truth(a);
      const y = truth(b);
      return x === false || y === false ? 0 : x === null || y === null ? NaN : 1;
    }
    case 'or': {
      const x = truth(a);
      const y = truth(b);
      return x === true || y === true ? 1 : x === null || y === null ? NaN : 0;
    }
    case 'xor': {
      const x = truth(a);
      const y = truth(b);
      return x === null || y === null ? NaN : x !== y ? 1 : 0;
    }
    case 'normdiff':
      // float32 arithmetic, float64 where an operand exceeds 2^126 (a - b or a + b could overflow)
      return Math.max(Math.abs(a), Math.abs(b)) > 2 ** 126 ? (a - b) / (a + b) : F(a - b) / F(a + b);
  }
  throw new Error(op);
}

function reduce(op: string, all: number[]): number {
  const v = all.filter((x) => !Number.isNaN(x));
  const n = v.length;
  if (op === 'count') return n;
  if (n === 0) return NaN;
  switch (op) {
    case 'min':
      return v.reduce((m, x) => (x < m ? x : m), Infinity);
    case 'max':
      return v.reduce((m, x) => (x > m ? x : m), -Infinity);
    case 'first':
      return v[0];
    case 'last':
      return v[n - 1];
    case 'product':
      return v.reduce((p, x) => p * x, 1);
    case 'median': {
      const s = Float64Array.from(v).sort();
      const h = n >> 1;
      return n & 1 ? s[h] : (s[h - 1] + s[h]) / 2;
    }
  }
  // Neumaier sum, as src/processes/statistics.ts
  let s = 0;
  let c = 0;
  for (const x of v) {
    const t = s + x;
    if (Math.abs(s) >= Math.abs(x)) c += s - t + x;
    else c += x - t + s;
    s = t;
  }
  const r = s + c;
  const sum = Number.isFinite(r) ? r : s;
  if (op === 'sum') return sum;
  const mean = sum / n;
  if (op === 'mean') return mean;
  let sq = 0;
  let dev = 0;
  for (const x of v) {
    const d = x - mean;
    sq += d * d;
    dev += d;
  }
  const variance = (sq - (dev * dev) / n) / (n - 1);
  if (op === 'variance') return variance;
  if (op === 'sd') return Math.sqrt(variance);
  throw new Error(op);
}

function step(ins: Instr, reg: number[]): number {
  if (ins.op === 'const') return ins.value;
  if ('args' in ins)
    return reduce(
      ins.op,
      ins.args.map((r) => reg[r]),
    );
  if ('c' in ins) {
    const c = reg[ins.c];
    return !Number.isNaN(c) && c !== 0 ? reg[ins.t] : reg[ins.f];
  }
  if (ins.op === 'clip') {
    const x = reg[ins.a];
    return x < ins.min ? ins.min : x > ins.max ? ins.max : x;
  }
  if (ins.op === 'linscale') {
    const { inMin: lo, inMax: hi, outMin, outMax } = ins;
    let c = reg[ins.a];
    if (lo <= hi) c = c < lo ? lo : c > hi ? hi : c;
    else c = c < hi ? hi : c > lo ? lo : c;
    return ((c - lo) / (hi - lo)) * (outMax - outMin) + outMin;
  }
  if ('b' in ins) return binary(ins.op, reg[ins.a], reg[ins.b]);
  return unary(ins.op, reg[(ins as { a: number }).a]);
}

function reference(p: Program, inputs: Float32Array[], n: number): Float32Array {
  const out = new Float32Array(n);
  const reg: number[] = [];
  for (let i = 0; i < n; i++) {
    reg.length = 0;
    for (let j = 0; j < p.inputs; j++) reg.push(inputs[j][i]);
    for (const ins of p.code) reg.push(F(step(ins, reg)));
    out[i] = reg[p.output];
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Inputs and comparison

const SPECIAL = [
  NaN,
  Infinity,
  -Infinity,
  0,
  -0,
  1,
  -1,
  2,
  -2,
  10,
  0.5,
  -0.5,
  1.5,
  -1.5,
  2.5,
  -2.5,
  3.5,
  4194304.5,
  -4194304.5,
  1e38,
  -1e38,
  3.4028234663852886e38,
  -3.4028234663852886e38,
  1e-45,
  -1e-45,
  1e-38,
  0.1,
  -0.1,
  100,
  -7,
  3,
  0.75,
  16777216,
  1e6,
  0.999,
  -0.999,
].map(F);

function values(rng: Rng, n: number, specialShare = 0.3): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const k = rng.next();
    a[i] = k < specialShare ? SPECIAL[rng.int(SPECIAL.length)] : k < specialShare + 0.2 ? rng.int(11) - 5 : (rng.next() - 0.5) * 2 * 10 ** (rng.int(9) - 3);
  }
  return a;
}

/** Exact agreement (any NaN matches any NaN; -0 and +0 must match too), or within `ulps` float32 steps. */
function same(a: number, b: number, ulps: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  if (Object.is(a, b)) return true;
  if (ulps === 0 || !Number.isFinite(a) || !Number.isFinite(b)) return false;
  const ia = new Int32Array(Float32Array.of(a).buffer)[0];
  const ib = new Int32Array(Float32Array.of(b).buffer)[0];
  if (ia < 0 !== ib < 0) return Math.abs(a - b) <= 2e-45 * ulps;
  return Math.abs(ia - ib) <= ulps;
}

function firstDifference(p: Program, inputs: Float32Array[], got: Float32Array, want: Float32Array, ulps: number): string | null {
  for (let i = 0; i < want.length; i++) {
    if (!same(got[i], want[i], ulps)) {
      const args = inputs.map((a) => a[i]);
      return `pixel ${i} of ${want.length} (inputs ${args.join(', ')}): kernel ${got[i]}, reference ${want[i]}\n${JSON.stringify(p)}`;
    }
  }
  return null;
}

/** Runs a kernel straight on kernel memory; checks it writes nothing past out[n - 1]. */
function runKernel(k: CompiledKernel, inputs: Float32Array[], n: number): Float32Array {
  const m = mark();
  try {
    const table = alloc(Math.max(1, inputs.length) * 4);
    const ptrs = inputs.map(() => alloc(n * 4 + 16));
    const out = alloc(n * 4 + 16);
    inputs.forEach((a, j) => f32(ptrs[j], n).set(a.subarray(0, n)));
    u32(table, inputs.length).set(ptrs);
    f32(out, n + 4).fill(12345);
    k.run(table, out, n);
    const guard = f32(out + n * 4, 4);
    if (guard.some((v) => v !== 12345)) throw new Error(`kernel wrote past n = ${n}`);
    return f32(out, n).slice();
  } finally {
    release(m);
  }
}

const usesTranscendental = (p: Program) => p.code.some((ins) => TRANSCENDENTAL.has(ins.op));

// ---------------------------------------------------------------------------------------------
// Programs

const UNARY_OPS: string[] = [...UNARY];
const BINARY_OPS = ['add', 'sub', 'mul', 'div', 'pow', 'mod', 'atan2', 'log', 'gt', 'gte', 'lt', 'lte', 'eq', 'neq', 'and', 'or', 'xor', 'normdiff'];

function opPrograms(): Program[] {
  const list: Program[] = [];
  for (const op of UNARY_OPS) list.push({ inputs: 1, code: [{ op, a: 0 } as Instr], output: 1 });
  for (const op of BINARY_OPS) list.push({ inputs: 2, code: [{ op, a: 0, b: 1 } as Instr], output: 2 });
  list.push({ inputs: 3, code: [{ op: 'if', c: 0, t: 1, f: 2 }], output: 3 });
  list.push({ inputs: 1, code: [{ op: 'clip', a: 0, min: -2.5, max: 0.1 }], output: 1 });
  list.push({ inputs: 1, code: [{ op: 'clip', a: 0, min: 0, max: 0 }], output: 1 });
  list.push({ inputs: 1, code: [{ op: 'linscale', a: 0, inMin: -2, inMax: 40, outMin: 0, outMax: 255 }], output: 1 });
  list.push({ inputs: 1, code: [{ op: 'linscale', a: 0, inMin: 0.3, inMax: -0.1, outMin: -1, outMax: 1 }], output: 1 });
  list.push({ inputs: 1, code: [{ op: 'linscale', a: 0, inMin: 3, inMax: 3, outMin: 0, outMax: 1 }], output: 1 });
  for (const op of REDUCERS) for (const k of [1, 2, 3, 5, 12]) list.push({ inputs: k, code: [{ op, args: Array.from({ length: k }, (_, i) => i) }], output: k });
  // median over many values (sorting network of 64), repeated registers, constants among the values
  list.push({ inputs: 40, code: [{ op: 'median', args: Array.from({ length: 64 }, (_, i) => i % 40) }], output: 40 });
  list.push({
    inputs: 2,
    code: [
      { op: 'const', value: 7 },
      { op: 'median', args: [0, 2, 1, 2] },
      { op: 'sd', args: [2, 0, 1] },
      { op: 'add', a: 3, b: 4 },
    ],
    output: 5,
  });
  // constants of every kind
  for (const value of [NaN, Infinity, -Infinity, -0, 0.1, 1e-45, 1e39, 3.4028234663852886e38])
    list.push({
      inputs: 1,
      code: [
        { op: 'const', value },
        { op: 'mul', a: 0, b: 1 },
      ],
      output: 2,
    });
  // an input as the answer
  list.push({ inputs: 3, code: [], output: 1 });
  return list;
}

/** Random programs over every op (expressions of depth <= 5). */
function randomProgram(rng: Rng): Program {
  const inputs = 1 + rng.int(6);
  const code: Instr[] = [];
  const pick = () => rng.int(inputs + code.length);
  const ops = OPCODES;
  const n = 1 + rng.int(12);
  for (let k = 0; k < n; k++) {
    const op = ops[rng.int(ops.length)];
    if (op === 'const') code.push({ op, value: SPECIAL[rng.int(SPECIAL.length)] });
    else if ((REDUCERS as readonly string[]).includes(op)) code.push({ op, args: Array.from({ length: 1 + rng.int(8) }, pick) } as Instr);
    else if (op === 'if') code.push({ op, c: pick(), t: pick(), f: pick() });
    else if (op === 'clip') {
      const lo = rng.int(21) - 10;
      code.push({ op, a: pick(), min: lo, max: lo + rng.int(20) });
    } else if (op === 'linscale') code.push({ op, a: pick(), inMin: rng.int(5) - 2, inMax: rng.int(50) - 10, outMin: 0, outMax: 255 });
    else if (BINARY_OPS.includes(op)) code.push({ op, a: pick(), b: pick() } as Instr);
    else code.push({ op, a: pick() } as Instr);
  }
  return { inputs, code, output: inputs + code.length - 1 };
}

// ---------------------------------------------------------------------------------------------

let dir: string;
let tier: KernelCache;

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'xeo-tier1-test-'));
  tier = createTier1({ cacheDir: path.join(dir, 'main'), maxEntries: 4096 });
});

afterAll(async () => {
  await stopCompiler();
  rmSync(dir, { recursive: true, force: true });
});

describe('tier-1 code generation', () => {
  it('sorting networks sort (0-1 principle, every size up to 16; random up to 64)', () => {
    for (let k = 1; k <= 16; k++) {
      const net = sortingNetwork(k);
      for (let bits = 0; bits < 1 << k; bits++) {
        const v = Array.from({ length: k }, (_, i) => (bits >> i) & 1);
        for (const [i, j] of net) if (v[i] > v[j]) [v[i], v[j]] = [v[j], v[i]];
        for (let i = 1; i < k; i++) if (v[i - 1] > v[i]) throw new Error(`network ${k} fails on ${bits.toString(2)}`);
      }
    }
    const rng = new Rng(5);
    for (const k of [17, 31, 33, 64, 100, 256]) {
      const net = sortingNetwork(k);
      for (let r = 0; r < 50; r++) {
        const v = Array.from({ length: k }, () => rng.next());
        for (const [i, j] of net) if (v[i] > v[j]) [v[i], v[j]] = [v[j], v[i]];
        expect(v).toEqual([...v].sort((a, b) => a - b));
      }
    }
  });

  it('is deterministic and depends only on the canonical program', () => {
    const a: Program = {
      inputs: 2,
      code: [
        { op: 'const', value: 3 },
        { op: 'add', a: 0, b: 1 },
        { op: 'sqrt', a: 0 },
        { op: 'mul', a: 3, b: 0 },
      ],
      output: 5,
    };
    const b: Program = {
      inputs: 2,
      code: [
        { op: 'add', a: 0, b: 1 },
        { op: 'mul', a: 2, b: 0 },
      ],
      output: 3,
    };
    expect(programHash(a)).toBe(programHash(b));
    expect(generateSource(a)).toBe(generateSource(b));
    expect(generateSource(canonical(a))).toBe(generateSource(a));
    expect(generateSource(b)).toBe(generateSource(JSON.parse(JSON.stringify(b))));
  });
});

describe('tier-1 kernels', () => {
  it('compile without data segments, start function or imports beyond memory and host math', async () => {
    const p: Program = {
      inputs: 2,
      code: [
        { op: 'sin', a: 0 },
        { op: 'exp', a: 1 },
        { op: 'pow', a: 2, b: 3 },
        { op: 'median', args: [0, 1, 2, 3] },
      ],
      output: 5,
    };
    const bytes = await ascCompile(generateSource(p));
    const info = inspectWasm(bytes);
    expect(info.dataSegments).toBe(0);
    expect(info.hasStart).toBe(false);
    expect(info.imports.map((i) => `${i.module}.${i.name}`).sort()).toEqual(['env.memory', 'env.sin']);
    expect(() => checkModule(bytes, ['run'])).not.toThrow();
    // and the check does catch a module with static data
    const withData = await compileSource('const T = memory.data<f64>([1.5, 2.5]);\nexport function run(a: usize, o: usize, n: i32): void { store<f64>(o, load<f64>(T)); }', {
      runtime: 'stub',
      importMemory: true,
      use: ['abort='],
      noAssert: true,
      optimizeLevel: 3,
    });
    expect(() => checkModule(withData, ['run'])).toThrow(/data segment/);
  }, 60_000);

  it('equal the reference on every op, the special values, halves and extremes', async () => {
    const programs = opPrograms();
    await tier.compileMany(programs);
    const rng = new Rng(42);
    const failures: string[] = [];
    for (const p of programs) {
      const k = tier.lookup(programHash(p));
      expect(k, JSON.stringify(p)).not.toBeNull();
      // every pair of special values for one and two inputs; random values with specials beyond
      let inputs: Float32Array[];
      let n: number;
      if (p.inputs === 1) {
        inputs = [Float32Array.from([...SPECIAL, ...values(rng, 997)])];
        n = inputs[0].length;
      } else if (p.inputs === 2) {
        const s = SPECIAL.length;
        n = s * s + 1001;
        const a = values(rng, n);
        const b = values(rng, n);
        for (let i = 0; i < s * s; i++) {
          a[i] = SPECIAL[i % s];
          b[i] = SPECIAL[Math.floor(i / s)];
        }
        inputs = [a, b];
      } else {
        n = 2003;
        inputs = Array.from({ length: p.inputs }, () => values(rng, n, 0.45));
      }
      const got = runKernel(k!, inputs, n);
      const want = reference(p, inputs, n);
      const d = firstDifference(p, inputs, got, want, usesTranscendental(p) ? 1 : 0);
      if (d) failures.push(d);
    }
    expect(failures.slice(0, 8).join('\n\n'), `${failures.length} of ${programs.length} programs differ`).toBe('');
  }, 120_000);

  it('equal the reference on random programs over every op', async () => {
    const rng = new Rng(7);
    const programs = Array.from({ length: 300 }, () => randomProgram(rng));
    await tier.compileMany(programs);
    const failures: string[] = [];
    let loose = 0;
    for (const p of programs) {
      const n = 203;
      const inputs = Array.from({ length: p.inputs }, () => values(rng, n));
      const got = runKernel(tier.lookup(programHash(p))!, inputs, n);
      const want = reference(p, inputs, n);
      // Transcendental results may differ in the last bit, which later ops (comparisons, floor) can magnify.
      const d = firstDifference(p, inputs, got, want, usesTranscendental(p) ? 1 : 0);
      if (d && !usesTranscendental(p)) failures.push(d);
      if (d && usesTranscendental(p)) loose++;
    }
    // Most programs with transcendental ops agree to an ulp too.
    expect(loose).toBeLessThan(programs.length / 20);
    expect(failures.slice(0, 5).join('\n\n'), `${failures.length} of ${programs.length} programs differ`).toBe('');
  }, 120_000);

  it('sum exactly as the compensated JS sum, on lanes that need the compensation and lanes that do not', async () => {
    const programs: Program[] = ['sum', 'mean', 'sd', 'variance'].map((op) => ({ inputs: 3, code: [{ op, args: [0, 1, 2] } as Instr], output: 3 }));
    await tier.compileMany(programs);
    const rows = [
      [1e38, 1, -1e38],
      [3, 0.1, -3],
      [1, 2, 3],
      [16777216, 1, 1],
      [1e-45, 1, -1],
      [NaN, 1e30, -1e30],
      [Infinity, 1, -Infinity],
      [3.4028234663852886e38, 3.4028234663852886e38, -3.4028234663852886e38],
      [-0, -0, NaN],
      [0.1, 0.2, 0.3],
      [1e20, 1e-20, -1e20],
      [5, NaN, NaN],
    ];
    const inputs = [0, 1, 2].map((j) => Float32Array.from(rows, (r) => r[j]));
    for (const p of programs) {
      const got = runKernel(tier.lookup(programHash(p))!, inputs, rows.length);
      expect(firstDifference(p, inputs, got, reference(p, inputs, rows.length), 0)).toBeNull();
    }
  }, 60_000);

  it('handle every tail length (n = 0, 1, 3, 4, 5, 1000, 4099) without writing past n', async () => {
    const p: Program = {
      inputs: 3,
      code: [
        { op: 'normdiff', a: 0, b: 1 },
        { op: 'exp', a: 2 },
        { op: 'median', args: [0, 1, 2, 3] },
        { op: 'gt', a: 3, b: 5 },
        { op: 'if', c: 6, t: 4, f: 5 },
        { op: 'linscale', a: 7, inMin: -1, inMax: 1, outMin: 0, outMax: 255 },
        { op: 'round', a: 8 },
      ],
      output: 9,
    };
    const k = await compileNow(p, tier);
    const rng = new Rng(3);
    for (const n of [0, 1, 3, 4, 5, 1000, 4099]) {
      const inputs = Array.from({ length: 3 }, () => values(rng, n));
      const got = runKernel(k, inputs, n);
      expect(got.length).toBe(n);
      expect(firstDifference(p, inputs, got, reference(p, inputs, n), 1)).toBeNull();
    }
  }, 60_000);

  it('run through the executor with tier 1', async () => {
    const p: Program = {
      inputs: 2,
      code: [
        { op: 'normdiff', a: 0, b: 1 },
        { op: 'clip', a: 2, min: -0.5, max: 0.5 },
      ],
      output: 3,
    };
    await compileNow(p, tier);
    const rng = new Rng(11);
    for (const n of [0, 5, 4099, 70_001]) {
      const inputs = [values(rng, n), values(rng, n)];
      const got = runProgram(p, inputs, n, { tier: 1, tier1: tier });
      expect(firstDifference(p, inputs, got, reference(p, inputs, n), 0)).toBeNull();
    }
  }, 60_000);
});

describe('tier-1 cache', () => {
  it('finds programs that differ only in dead code and register numbering under one hash', async () => {
    const a: Program = {
      inputs: 2,
      code: [
        { op: 'const', value: 9 },
        { op: 'sub', a: 0, b: 1 },
        { op: 'abs', a: 2 },
        { op: 'div', a: 3, b: 1 },
      ],
      output: 5,
    };
    const b: Program = {
      inputs: 2,
      code: [
        { op: 'sub', a: 0, b: 1 },
        { op: 'div', a: 2, b: 1 },
      ],
      output: 3,
    };
    await compileNow(a, tier);
    const k = tier.lookup(programHash(b));
    expect(k).not.toBeNull();
    const inputs = [Float32Array.of(5, 1, NaN, 0), Float32Array.of(2, 0, 1, 0)];
    expect(runKernel(k!, inputs, 4)).toEqual(reference(b, inputs, 4));
  }, 60_000);

  it('compiles in the background on request, once per program, and loads from disk after a restart without compiling', async () => {
    const cacheDir = path.join(dir, 'restart');
    let compiles = 0;
    const counting = (s: string) => {
      compiles++;
      return ascCompile(s);
    };
    const first = createTier1({ cacheDir, maxEntries: 8, compile: counting });
    const p: Program = {
      inputs: 2,
      code: [
        { op: 'const', value: 0.25 },
        { op: 'mul', a: 0, b: 2 },
        { op: 'add', a: 3, b: 1 },
      ],
      output: 4,
    };
    const hash = programHash(p);
    expect(first.lookup(hash)).toBeNull();
    first.request(p, hash);
    first.request(p, hash);
    expect(first.lookup(hash)).toBeNull(); // compiling in the background
    await first.idle();
    expect(first.lookup(hash)).not.toBeNull();
    expect(compiles).toBe(1);
    expect(existsSync(path.join(cacheDir, `${hash}.wasm`))).toBe(true);

    // A fresh instance (as after a restart) instantiates the module from disk, synchronously.
    const second = createTier1({ cacheDir, maxEntries: 8, compile: counting });
    const k = second.lookup(hash);
    expect(k).not.toBeNull();
    expect(compiles).toBe(1);
    expect(second.stats().diskLoads).toBe(1);
    const inputs = [Float32Array.of(4, -8, NaN), Float32Array.of(1, 2, 3)];
    expect(runKernel(k!, inputs, 3)).toEqual(reference(p, inputs, 3));
    // warm: from memory, neither compiled nor loaded again
    const before = second.stats();
    for (let i = 0; i < 1000; i++) expect(second.lookup(hash)).toBe(k);
    expect(second.stats()).toMatchObject({ hits: before.hits + 1000, diskLoads: 1, compiles: 0 });
  }, 60_000);

  it('keeps compile failures from the caller, logs them once and does not retry', async () => {
    const logs: string[] = [];
    let calls = 0;
    const broken = createTier1({
      cacheDir: path.join(dir, 'broken'),
      log: (_, m) => logs.push(m),
      compile: async () => {
        calls++;
        throw new Error('asc exploded');
      },
    });
    const p: Program = { inputs: 1, code: [{ op: 'neg', a: 0 }], output: 1 };
    const hash = programHash(p);
    expect(() => broken.request(p, hash)).not.toThrow();
    await broken.idle();
    expect(() => broken.request(p, hash)).not.toThrow();
    await broken.idle();
    expect(calls).toBe(1);
    expect(logs.length).toBe(1);
    expect(broken.failure(hash)).toMatch(/asc exploded/);
    expect(broken.lookup(hash)).toBeNull();
    await expect(compileNow(p, broken)).rejects.toThrow(/asc exploded/);
    expect(calls).toBe(1);

    // A program the code generator rejects (unknown op): no throw either.
    const bad = { inputs: 1, code: [{ op: 'frobnicate', a: 0 }], output: 1 } as unknown as Program;
    const real = createTier1({ cacheDir: path.join(dir, 'bad'), log: (_, m) => logs.push(m) });
    expect(() => real.request(bad, 'f'.repeat(32))).not.toThrow();
    await real.idle();
    expect(real.failure('f'.repeat(32))).toMatch(/frobnicate/);
    // A queue that is full drops requests instead of growing.
    const tiny = createTier1({ cacheDir: path.join(dir, 'tiny'), maxQueue: 1, compile: () => new Promise(() => {}) });
    for (let i = 0; i < 5; i++) tiny.request({ inputs: 1, code: [{ op: 'const', value: i }], output: 1 }, `${i}`.repeat(32));
    expect(tiny.stats().dropped).toBe(3);
  }, 60_000);

  it('with a start delay, background compiles wait, then both run; an explicit compile starts at once', async () => {
    // x op c, for a constant c
    const withConst = (op: 'add' | 'sub' | 'mul', value: number): Program => ({
      inputs: 1,
      code: [
        { op: 'const', value },
        { op, a: 0, b: 1 },
      ],
      output: 2,
    });
    let compiles = 0;
    const later = createTier1({
      cacheDir: path.join(dir, 'later'),
      startDelayMs: 300,
      compile: (s) => {
        compiles++;
        return ascCompile(s);
      },
    });
    const a = withConst('mul', 3);
    const b = withConst('add', 5);
    later.request(a, programHash(a));
    later.request(b, programHash(b));
    await new Promise((r) => setImmediate(r));
    expect(compiles).toBe(0); // not started on this turn of the event loop
    await later.idle();
    expect(compiles).toBe(2);
    expect(later.lookup(programHash(a))).not.toBeNull();
    expect(later.lookup(programHash(b))).not.toBeNull();
    const now = later.compile(withConst('sub', 7));
    expect(compiles).toBe(3); // asked of the compiler before compile() returned, not after the delay
    await now;
  }, 60_000);
});

describe('tier-1 kernels on the arena', () => {
  const p: Program = {
    inputs: 3,
    code: [
      { op: 'median', args: [0, 1, 2] },
      { op: 'sub', a: 3, b: 0 },
    ],
    output: 4,
  };
  const onArena = (v: Float32Array) => {
    const a = plane(v.length);
    a.set(v);
    return a;
  };

  it('read and write planes in place, across growth, NaN planes, and a recycled instance', async () => {
    await compileNow(p, tier);
    const rng = new Rng(41);
    const n = 70_001;
    const src = Array.from({ length: 3 }, () => values(rng, n));
    const want = reference(p, src, n);
    await withArena(() => {
      const inputs = src.map(onArena);
      const got = runProgram(p, inputs, n, { tier: 1, tier1: tier });
      expect(ptrOf(got)).toBeGreaterThanOrEqual(0);
      expect(firstDifference(p, src, got, want, 0)).toBeNull();
      // Growth in the middle of the request: the planes keep their values, the kernel runs on.
      plane((arenaStats().memoryBytes >>> 2) + 500_000).fill(1);
      expect(firstDifference(p, src, runProgram(p, inputs, n, { tier: 1, tier1: tier }), want, 0)).toBeNull();
      const nan = plane(n).fill(NaN);
      expect(runProgram(p, [nan, nan, nan], n, { tier: 1, tier1: tier }).every(Number.isNaN)).toBe(true);
      expect(firstDifference(p, [nan, src[1], nan], runProgram(p, [nan, inputs[1], nan], n, { tier: 1, tier1: tier }), reference(p, [nan, src[1], nan], n), 0)).toBeNull();
    });
    // Past what is kept: the instance and its memory are replaced; the compiled module follows.
    const g = arenaStats().generation;
    await withArena(() => void plane(8 << 20).fill(0), { keepBytes: 1 << 20 });
    expect(arenaStats().generation).toBe(g + 1);
    await withArena(() => {
      const got = runProgram(p, src.map(onArena), n, { tier: 1, tier1: tier });
      expect(firstDifference(p, src, got, want, 0)).toBeNull();
    });
    expect(firstDifference(p, src, runProgram(p, src, n, { tier: 1, tier1: tier }), want, 0)).toBeNull();
  }, 60_000);
});

describe('tier-1 kernels split over helper threads', () => {
  it('answer bit for bit as one thread, on NaN planes too, and follow a recycled memory', async () => {
    const p: Program = { inputs: 12, code: [{ op: 'mean', args: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] }], output: 12 };
    // A thread's two helpers, as an engine with XEO_KERNEL_THREADS=2 has them.
    const pair = new KernelHelpers(2);
    try {
      await compileNow(p, tier);
      const rng = new Rng(51);
      const n = SPLIT_MIN_PIXELS + 4099; // bands of unequal length, and an odd tail
      const src = Array.from({ length: 12 }, () => values(rng, n));
      const want = reference(p, src, n);
      const run = (inputs: Float32Array[], with2 = pair, arena?: { keepBytes: number }) =>
        withArena(
          () =>
            Float32Array.from(
              runProgram(
                p,
                inputs.map((v) => {
                  const a = plane(v.length);
                  a.set(v);
                  return a;
                }),
                n,
                { tier: 1, tier1: tier, helpers: with2 },
              ),
            ),
          arena,
        );
      const alone = await run(src, new KernelHelpers(0));
      const before = pair.stats();
      const split = await run(src);
      expect(pair.stats().splits).toBe(before.splits + 1);
      expect(new Int32Array(split.buffer)).toEqual(new Int32Array(alone.buffer));
      expect(firstDifference(p, src, split, want, 0)).toBeNull();
      const nan = Array.from({ length: 12 }, (_, j) => (j % 2 ? src[j] : new Float32Array(n).fill(NaN)));
      expect(firstDifference(p, nan, await run(nan), reference(p, nan, n), 0)).toBeNull();
      // The helpers work on the new memory after the instance is recycled.
      const g = arenaStats().generation;
      await run(src, pair, { keepBytes: 1 << 20 });
      expect(arenaStats().generation).toBeGreaterThan(g);
      expect(firstDifference(p, src, await run(src), want, 0)).toBeNull();
      // Below the threshold a run stays on this thread.
      const s = pair.stats().splits;
      await withArena(() =>
        runProgram(
          p,
          src.map((v) => {
            const a = plane(1000);
            a.set(v.subarray(0, 1000));
            return a;
          }),
          1000,
          { tier: 1, tier1: tier, helpers: pair },
        ),
      );
      expect(pair.stats().splits).toBe(s);
      expect(pair.stats().rescued).toBe(0);
    } finally {
      pair.stop();
    }
  }, 120_000);
});
