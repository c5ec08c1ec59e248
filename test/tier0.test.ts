// Tier 0 (the block VM of kernels/vm.ts, run through src/compile/executor.ts) against a plain JS
// implementation of the Program semantics of src/compile/program.ts: every op on special values
// (NaN, ±Inf, ±0, extremes, subnormals, halves), block and chunk boundaries, long programs, reducers
// over 1..40 registers, the tier-1 plumbing, and the wasm colour mapping against colorize.
import { describe, it, expect } from 'vitest';
import { runProgram, kernelColorize, type Tier1, type CompiledKernel } from '../src/compile/executor.js';
import { encodeProgram, MAX_MEDIAN_ARGS } from '../src/compile/tier0.js';
import { BINARY, UNARY, REDUCERS, programHash, type Instr, type Program } from '../src/compile/program.js';
import { kernels, kernelMemory, alloc, arenaStats, mark, plane, ptrOf, release, withArena } from '../src/wasm/kernels.js';
import { colorize, colorTable, COLOR_MAPS } from '../src/output/colormap.js';
import { Rng } from './rng.js';

const f = Math.fround;
const BLOCK = kernels().vmBlock();

// ---------------------------------------------------------------------------------------------
// The reference: each instruction in double precision from float32 operands, rounded to float32.

function roundHalfEven(x: number): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  const n = Math.floor(x);
  const d = x - n;
  const r = d > 0.5 ? n + 1 : d < 0.5 ? n : n % 2 === 0 ? n : n + 1;
  return r === 0 ? 0 : r;
}

const truthy = (x: number) => x !== 0 && x === x;

function unaryRef(op: string, x: number): number {
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
      return x !== x ? NaN : x === 0 ? 1 : 0;
    case 'isnodata':
      return x !== x ? 1 : 0;
    case 'isvalid':
      return Number.isFinite(x) ? 1 : 0;
    case 'isinf':
      return Math.abs(x) === Infinity ? 1 : 0;
  }
  throw new Error(op);
}

function binaryRef(op: string, x: number, y: number): number {
  const nan = x !== x || y !== y;
  switch (op) {
    case 'add':
      return x + y;
    case 'sub':
      return x - y;
    case 'mul':
      return x * y;
    case 'div':
      return x / y;
    case 'pow': {
      if (x !== x || y !== y) return NaN;
      const r = Math.pow(x, y);
      if (r !== r && (x === 1 || (x === -1 && Math.abs(y) === Infinity))) return 1;
      return r;
    }
    case 'mod': {
      if (nan) return NaN;
      if (y === 0) return x > 0 ? Infinity : x < 0 ? -Infinity : NaN;
      let r = x % y;
      if (r !== 0 && r < 0 !== y < 0) r += y;
      return r === 0 ? 0 : r;
    }
    case 'atan2':
      return Math.atan2(x, y);
    case 'log':
      return y === 10 ? Math.log10(x) : y === 2 ? Math.log2(x) : Math.log(x) / Math.log(y);
    case 'gt':
      return nan ? NaN : x > y ? 1 : 0;
    case 'gte':
      return nan ? NaN : x >= y ? 1 : 0;
    case 'lt':
      return nan ? NaN : x < y ? 1 : 0;
    case 'lte':
      return nan ? NaN : x <= y ? 1 : 0;
    case 'eq':
      return nan ? NaN : x === y ? 1 : 0;
    case 'neq':
      return nan ? NaN : x !== y ? 1 : 0;
    case 'and':
      return x === 0 || y === 0 ? 0 : nan ? NaN : 1;
    case 'or':
      return truthy(x) || truthy(y) ? 1 : nan ? NaN : 0;
    case 'xor':
      return nan ? NaN : (x !== 0) !== (y !== 0) ? 1 : 0;
    case 'normdiff':
      return (x - y) / (x + y);
  }
  throw new Error(op);
}

/** Sum, mean, sample variance as the statistics processes compute them (compensated sum, two passes). */
function moments(what: 'sum' | 'mean' | 'variance', v: number[]): number {
  if (v.length === 0) return NaN;
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
  if (what === 'sum') return sum;
  const mean = sum / v.length;
  if (what === 'mean') return mean;
  let sq = 0;
  let dev = 0;
  for (const x of v) {
    const d = x - mean;
    sq += d * d;
    dev += d;
  }
  return (sq - (dev * dev) / v.length) / (v.length - 1);
}

function reduceRef(op: string, all: number[]): number {
  const v = all.filter((x) => x === x);
  switch (op) {
    case 'sum':
    case 'mean':
    case 'variance':
      return moments(op, v);
    case 'sd':
      return Math.sqrt(moments('variance', v));
    case 'product':
      return v.length ? v.reduce((p, x) => p * x, 1) : NaN;
    case 'min': {
      let m = Infinity;
      for (const x of v) if (x < m) m = x;
      return v.length ? m : NaN;
    }
    case 'max': {
      let m = -Infinity;
      for (const x of v) if (x > m) m = x;
      return v.length ? m : NaN;
    }
    case 'median': {
      if (!v.length) return NaN;
      const s = Float64Array.from(v).sort();
      const h = s.length >> 1;
      if (s.length & 1) return s[h];
      const m = (s[h - 1] + s[h]) / 2;
      return Number.isFinite(m) ? m : s[h - 1] / 2 + s[h] / 2;
    }
    case 'count':
      return v.length; // NaN skipped, ±Inf counted (as the JS engine does)
    case 'first':
      return v.length ? v[0] : NaN;
    case 'last':
      return v.length ? v[v.length - 1] : NaN;
  }
  throw new Error(op);
}

function instrRef(ins: Instr, r: Float64Array): number {
  if (ins.op === 'const') return ins.value;
  if ('args' in ins)
    return reduceRef(
      ins.op,
      ins.args.map((k) => r[k]),
    );
  if (ins.op === 'if') return truthy(r[ins.c]) ? r[ins.t] : r[ins.f];
  if (ins.op === 'clip') {
    const x = r[ins.a];
    return x < ins.min ? ins.min : x > ins.max ? ins.max : x;
  }
  if (ins.op === 'linscale') {
    const { inMin: lo, inMax: hi, outMin, outMax } = ins;
    let c = r[ins.a];
    if (lo <= hi) c = c < lo ? lo : c > hi ? hi : c;
    else c = c < hi ? hi : c > lo ? lo : c;
    return ((c - lo) / (hi - lo)) * (outMax - outMin) + outMin;
  }
  if ('b' in ins) return binaryRef(ins.op, r[ins.a], r[ins.b]);
  return unaryRef(ins.op, r[(ins as { a: number }).a]);
}

function reference(p: Program, inputs: Float32Array[], n: number): Float32Array {
  const out = new Float32Array(n);
  const r = new Float64Array(p.inputs + p.code.length);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < p.inputs; k++) r[k] = inputs[k][i];
    p.code.forEach((ins, k) => {
      r[p.inputs + k] = f(instrRef(ins, r));
    });
    out[i] = r[p.output];
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Comparison

const bits = new Int32Array(1);
const fl = new Float32Array(bits.buffer);
function ordered(x: number): number {
  fl[0] = x;
  const b = bits[0];
  return b < 0 ? -(b & 0x7fffffff) : b;
}
/** Distance in float32 ulps (across zero too). */
const ulps = (a: number, b: number) => Math.abs(ordered(a) - ordered(b));

/** Ops whose VM results are the correctly rounded reference (bit for bit). */
const APPROX = new Set(['exp', 'ln', 'log10', 'log2', 'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh', 'asinh', 'acosh', 'atanh', 'pow', 'atan2', 'log']);

function same(a: number, b: number, approx: boolean): boolean {
  if (a !== a || b !== b) return a !== a && b !== b;
  if (Object.is(a, b)) return true;
  if (!approx) return false;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  return ulps(a, b) <= 4 || Math.abs(a - b) <= 1e-6 * Math.max(Math.abs(a), Math.abs(b));
}

function check(p: Program, inputs: Float32Array[], n: number, approx = false, got = runProgram(p, inputs, n, { tier: 0 })): void {
  const want = reference(p, inputs, n);
  expect(got.length).toBe(n);
  for (let i = 0; i < n; i++) {
    if (!same(got[i], want[i], approx)) {
      const args = inputs.map((a) => a[i]);
      throw new Error(`pixel ${i} of ${n}: got ${Object.is(got[i], -0) ? '-0' : got[i]}, want ${Object.is(want[i], -0) ? '-0' : want[i]} for inputs [${args.join(', ')}]\n${JSON.stringify(p)}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Inputs

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
  -3.5,
  4.5,
  1e38,
  -1e38,
  3.4028234663852886e38,
  -3.4028234663852886e38,
  1e-45,
  -1e-45,
  1.1754943508222875e-38,
  0.1,
  -0.1,
  0.9999999403953552,
  1.0000001192092896,
  88.7,
  -88.7,
  89.5,
  100,
  -100,
  1e6,
  8388607.5,
  8388608,
  -8388609,
  16777217,
  Math.PI,
  -Math.PI / 2,
  0.7853981633974483,
  1e-10,
  3,
  -7,
  12345.678,
];

function values(rng: Rng, n: number): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const k = rng.next();
    a[i] = k < 0.3 ? SPECIAL[rng.int(SPECIAL.length)] : k < 0.45 ? rng.int(21) - 10 : k < 0.55 ? (rng.int(41) - 20) / 2 : k < 0.75 ? rng.next() * 2 - 1 : (rng.next() - 0.5) * 2 * 10 ** (rng.int(16) - 6);
  }
  return a;
}

/** Every pair of special values, then random pairs. */
function pairs(rng: Rng, extra: number): [Float32Array, Float32Array] {
  const S = SPECIAL.length;
  const n = S * S + extra;
  const a = new Float32Array(n);
  const b = new Float32Array(n);
  for (let i = 0; i < S; i++)
    for (let j = 0; j < S; j++) {
      a[i * S + j] = SPECIAL[i];
      b[i * S + j] = SPECIAL[j];
    }
  a.set(values(rng, extra), S * S);
  b.set(values(rng, extra), S * S);
  return [a, b];
}

// ---------------------------------------------------------------------------------------------

describe('tier 0 VM', () => {
  it('computes every unary op as the reference', () => {
    const rng = new Rng(1);
    const x = new Float32Array(SPECIAL.length + 3000);
    x.set(SPECIAL);
    x.set(values(rng, 3000), SPECIAL.length);
    for (const op of UNARY) {
      check({ inputs: 1, code: [{ op, a: 0 }], output: 1 }, [x], x.length, APPROX.has(op));
    }
  });

  it('computes every binary op as the reference, on every pair of special values', () => {
    const rng = new Rng(2);
    const [a, b] = pairs(rng, 3000);
    for (const op of BINARY) {
      check({ inputs: 2, code: [{ op, a: 0, b: 1 }], output: 2 }, [a, b], a.length, APPROX.has(op));
      // the same register twice
      check({ inputs: 1, code: [{ op, a: 0, b: 0 }], output: 1 }, [a], a.length, APPROX.has(op));
    }
  });

  it('pow(±1, ±Inf) is 1; x^0 is 1; no-data stays no-data', () => {
    const a = Float32Array.from([1, 1, 1, -1, -1, NaN, 0, -1, 2]);
    const b = Float32Array.from([Infinity, -Infinity, NaN, Infinity, -Infinity, 0, 0, NaN, 0.5]);
    const got = runProgram({ inputs: 2, code: [{ op: 'pow', a: 0, b: 1 }], output: 2 }, [a, b], a.length, { tier: 0 });
    expect(Array.from(got)).toEqual([1, 1, NaN, 1, 1, NaN, 1, NaN, f(Math.SQRT2)]);
  });

  it('mod is floored with the sign of the divisor; mod(x, 0) is ±Inf or NaN', () => {
    const a = Float32Array.from([-27, 27, -27, 27, 5, -5, 0, 7.5, -0, 1e-45, -1e38]);
    const b = Float32Array.from([5, -5, -5, 5, 0, 0, 0, 2, 3, Infinity, 3]);
    const got = runProgram({ inputs: 2, code: [{ op: 'mod', a: 0, b: 1 }], output: 2 }, [a, b], a.length, { tier: 0 });
    expect(Array.from(got)).toEqual([3, -3, -2, 2, Infinity, -Infinity, NaN, 1.5, 0, f(1e-45), f(binaryRef('mod', f(-1e38), 3))]);
  });

  it('rounds halves to even and keeps the sign of zeros as the process does', () => {
    const x = Float32Array.from([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.3, -0, 0, 8388607.5, 2.4999998, Infinity, NaN]);
    const got = runProgram({ inputs: 1, code: [{ op: 'round', a: 0 }], output: 1 }, [x], x.length, { tier: 0 });
    expect(Array.from(got).map((v) => (Object.is(v, -0) ? '-0' : v))).toEqual([0, 2, 2, 0, -2, -2, 0, '-0', 0, 8388608, 2, Infinity, NaN]);
  });

  it('clip, linscale (both orders, empty range, huge bounds) and if', () => {
    const rng = new Rng(3);
    const x = new Float32Array(SPECIAL.length + 2000);
    x.set(SPECIAL);
    x.set(values(rng, 2000), SPECIAL.length);
    const clips: [number, number][] = [
      [0, 1],
      [-10, 10],
      [0.1, 0.3],
      [-1e38, 1e38],
      [5, 5],
      [-Infinity, 0],
      [0, Infinity],
      [-0, 0],
    ];
    for (const [min, max] of clips) check({ inputs: 1, code: [{ op: 'clip', a: 0, min, max }], output: 1 }, [x], x.length);
    const scales: [number, number, number, number][] = [
      [0, 1, 0, 255],
      [1, 0, 0, 255],
      [-2, 40, 0, 255],
      [0.1, 0.7, -1, 1],
      [5, 5, 0, 1],
      [-1e38, 1e38, 0, 1],
      [0, 10000, 255, 0],
      [3, -7, 1e30, -1e30],
    ];
    for (const [inMin, inMax, outMin, outMax] of scales) {
      check({ inputs: 1, code: [{ op: 'linscale', a: 0, inMin, inMax, outMin, outMax }], output: 1 }, [x], x.length);
    }
    const [a, b] = pairs(rng, 1000);
    const c = values(rng, a.length);
    check({ inputs: 3, code: [{ op: 'if', c: 0, t: 1, f: 2 }], output: 3 }, [a, b, c], a.length);
    check({ inputs: 3, code: [{ op: 'if', c: 2, t: 0, f: 1 }], output: 3 }, [a, b, c], a.length);
  });

  it('reduces over 1..40 registers, skipping NaN (sample sd and variance, median of the valid values)', () => {
    const rng = new Rng(4);
    const n = 203;
    for (let count = 1; count <= 40; count++) {
      const inputs = Array.from({ length: count }, () => {
        const v = values(rng, n);
        // plenty of NaN, and pixels where every value is NaN
        for (let i = 0; i < n; i++) if (rng.next() < 0.3 || i % 29 === 0) v[i] = NaN;
        return v;
      });
      for (const op of REDUCERS) {
        const args = Array.from({ length: count }, (_, k) => k);
        check({ inputs: count, code: [{ op, args }], output: count }, inputs, n);
        // arguments repeated, out of order, mixed with computed registers
        const mixed = [count, ...args.slice().reverse(), 0, count];
        check(
          {
            inputs: count,
            code: [
              { op: 'mul', a: 0, b: count - 1 },
              { op, args: mixed },
            ],
            output: count + 1,
          },
          inputs,
          n,
        );
      }
    }
  });

  it('reducers of values that cancel, overflow in float32 or are all infinite', () => {
    const cols = [
      [1e38, 5, -1e38],
      [3.4028234663852886e38, 3.4028234663852886e38, -3.4028234663852886e38],
      [Infinity, 1, 2],
      [Infinity, -Infinity, 1],
      [0.1, 0.2, 0.3],
      [-0, 0, NaN],
      [1e-45, 1e-45, -1e-45],
      [3.4028234663852886e38, 3.4028234663852886e38, NaN],
      [-Infinity, -Infinity, -Infinity],
      [2, NaN, NaN],
    ];
    const inputs = [0, 1, 2].map((k) => Float32Array.from(cols.map((c) => c[k])));
    for (const op of REDUCERS) {
      check({ inputs: 3, code: [{ op, args: [0, 1, 2] }], output: 3 }, inputs, cols.length);
      // each case alone (filling a group of 4 pixels)
      cols.forEach((_, i) =>
        check(
          { inputs: 3, code: [{ op, args: [0, 1, 2] }], output: 3 },
          inputs.map((a) => new Float32Array(4).fill(a[i])),
          4,
        ),
      );
    }
  });

  it('sums exactly as the compensated reference on both paths (plain sum exact, or not: per group of 4 pixels)', () => {
    const rng = new Rng(12);
    const n = 4 * 300;
    for (const count of [1, 2, 3, 12, 40]) {
      // reflectance-like values (the plain double sum is exact), with a few pixels whose values
      // span many magnitudes (it is not) scattered among them, so groups mix both kinds
      const inputs = Array.from({ length: count }, () => {
        const v = new Float32Array(n);
        for (let i = 0; i < n; i++) {
          v[i] = i % 37 === 5 ? (rng.next() - 0.5) * 10 ** (rng.int(30) - 15) : i % 41 === 3 ? NaN : 0.01 + rng.next();
        }
        return v;
      });
      const args = Array.from({ length: count }, (_, k) => k);
      for (const op of ['sum', 'mean', 'variance', 'sd'] as const) check({ inputs: count, code: [{ op, args }], output: count }, inputs, n);
    }
  });

  it('handles block tails and boundaries (n = 0, 1, 3, BLOCK-1, BLOCK, BLOCK+1, 3*BLOCK+5)', () => {
    const rng = new Rng(5);
    const p: Program = {
      inputs: 3,
      code: [
        { op: 'normdiff', a: 0, b: 1 },
        { op: 'sin', a: 2 },
        { op: 'median', args: [0, 1, 2, 3] },
        { op: 'add', a: 3, b: 5 },
        { op: 'mean', args: [0, 1, 2] },
        { op: 'if', c: 6, t: 7, f: 4 },
      ],
      output: 8,
    };
    for (const n of [0, 1, 2, 3, 4, 5, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK - 3, 3 * BLOCK + 5]) {
      const inputs = [values(rng, n), values(rng, n), values(rng, n)];
      check(p, inputs, n, true);
      // inputs longer than n: only n values are read and written
      const longer = inputs.map((a) => Float32Array.from([...a, 1, 2, 3, 4, 5]));
      check(p, longer, n, true);
    }
  });

  it('handles chunk boundaries of the executor, with few and with many inputs', () => {
    const rng = new Rng(6);
    for (const [nIn, n] of [
      [2, 200_003],
      [40, 150_001],
    ] as const) {
      const inputs = Array.from({ length: nIn }, () => values(rng, n));
      const p: Program = {
        inputs: nIn,
        code: [
          { op: 'sub', a: 0, b: 1 },
          { op: 'sum', args: Array.from({ length: nIn }, (_, k) => k) },
          { op: 'normdiff', a: nIn, b: nIn + 1 },
        ],
        output: nIn + 2,
      };
      check(p, inputs, n);
    }
  });

  it('runs long random programs (30 to 120 instructions) exactly as the reference', () => {
    const rng = new Rng(7);
    const exactUnary = UNARY.filter((op) => !APPROX.has(op));
    const exactBinary = BINARY.filter((op) => !APPROX.has(op));
    const consts = [0, 1, -1, 2, 0.5, 255, 1e38, -0, NaN, 0.1, 3];
    for (let t = 0; t < 60; t++) {
      const nIn = 1 + rng.int(6);
      const len = 30 + rng.int(91);
      const code: Instr[] = [];
      const pick = () => {
        const top = nIn + code.length;
        return rng.next() < 0.6 ? Math.max(0, top - 1 - rng.int(4)) : rng.int(top);
      };
      for (let k = 0; k < len; k++) {
        const r = rng.next();
        if (r < 0.08) code.push({ op: 'const', value: consts[rng.int(consts.length)] });
        else if (r < 0.3) code.push({ op: exactUnary[rng.int(exactUnary.length)], a: pick() });
        else if (r < 0.75) code.push({ op: exactBinary[rng.int(exactBinary.length)], a: pick(), b: pick() });
        else if (r < 0.8) code.push({ op: 'clip', a: pick(), min: -rng.int(5), max: rng.int(300) });
        else if (r < 0.85) code.push({ op: 'linscale', a: pick(), inMin: rng.int(5) - 2, inMax: rng.int(50) - 10, outMin: 0, outMax: 255 });
        else if (r < 0.9) code.push({ op: 'if', c: pick(), t: pick(), f: pick() });
        else code.push({ op: REDUCERS[rng.int(REDUCERS.length)], args: Array.from({ length: 1 + rng.int(8) }, pick) });
      }
      // the output: the last register, or sometimes an earlier one (dead code after it)
      const output = rng.next() < 0.8 ? nIn + len - 1 : rng.int(nIn + len);
      const n = 1 + rng.int(3 * BLOCK);
      const inputs = Array.from({ length: nIn }, () => values(rng, n));
      check({ inputs: nIn, code, output }, inputs, n);
    }
  });

  it('runs programs answering an input, a constant, or reading the output register again', () => {
    const rng = new Rng(8);
    const n = BLOCK + 7;
    const a = values(rng, n);
    const b = values(rng, n);
    check({ inputs: 2, code: [], output: 1 }, [a, b], n);
    check({ inputs: 2, code: [{ op: 'add', a: 0, b: 1 }], output: 0 }, [a, b], n);
    check({ inputs: 1, code: [{ op: 'const', value: 0.1 }], output: 1 }, [a], n);
    check(
      {
        inputs: 1,
        code: [
          { op: 'const', value: NaN },
          { op: 'const', value: 2 },
          { op: 'mul', a: 0, b: 2 },
        ],
        output: 1,
      },
      [a],
      n,
    );
    check(
      {
        inputs: 2,
        code: [
          { op: 'add', a: 0, b: 1 },
          { op: 'mul', a: 2, b: 2 },
          { op: 'sub', a: 3, b: 2 },
        ],
        output: 2,
      },
      [a, b],
      n,
    );
    // the same array passed twice
    check({ inputs: 2, code: [{ op: 'sub', a: 0, b: 1 }], output: 2 }, [a, a], n);
  });

  it('reuses scratch slots: a long chain needs only a few', () => {
    const code: Instr[] = [{ op: 'const', value: 1 }];
    for (let k = 0; k < 200; k++) code.push({ op: 'add', a: k === 0 ? 0 : k + 1, b: 1 });
    const p: Program = { inputs: 1, code, output: code.length };
    const enc = encodeProgram(p);
    expect(enc[2]).toBeLessThanOrEqual(2); // the constant's slot and one for the chain
    const x = values(new Rng(9), 100);
    check(p, [x], 100);
  });

  it('refuses a median over more than 256 values; other reducers take any number', () => {
    const args = Array.from({ length: MAX_MEDIAN_ARGS + 1 }, (_, k) => k);
    expect(() => encodeProgram({ inputs: args.length, code: [{ op: 'median', args }], output: args.length })).toThrow(/median/);
    const rng = new Rng(10);
    const inputs = args.map(() => values(rng, 9));
    check({ inputs: args.length, code: [{ op: 'mean', args }], output: args.length }, inputs, 9);
    check({ inputs: 256, code: [{ op: 'median', args: args.slice(0, 256) }], output: 256 }, inputs.slice(0, 256), 9);
  });

  it('rejects bad programs and inputs', () => {
    expect(() => runProgram({ inputs: 1, code: [{ op: 'add', a: 0, b: 1 }], output: 1 }, [new Float32Array(4)], 4)).toThrow(/register/);
    expect(() => runProgram({ inputs: 2, code: [], output: 0 }, [new Float32Array(4)], 4)).toThrow(/inputs/);
    expect(() => runProgram({ inputs: 1, code: [], output: 0 }, [new Float32Array(3)], 4)).toThrow(/fewer/);
  });
});

describe('executor tiers', () => {
  it("'auto' runs tier 0 and requests tier 1 once per program; then uses the compiled kernel", () => {
    const p: Program = { inputs: 2, code: [{ op: 'sub', a: 0, b: 1 }], output: 2 };
    const hash = programHash(p);
    const requests: string[] = [];
    const compiled = new Map<string, CompiledKernel>();
    let runs = 0;
    const t: Tier1 = {
      lookup: (h) => compiled.get(h) ?? null,
      request: (q, h) => {
        requests.push(h);
        expect(programHash(q)).toBe(h);
      },
    };
    const a = Float32Array.from([5, 6, 7, 8, 9]);
    const b = Float32Array.from([1, 1, 1, 1, 1]);
    expect(Array.from(runProgram(p, [a, b], 5, { tier1: t }))).toEqual([4, 5, 6, 7, 8]);
    expect(Array.from(runProgram(p, [a, b], 5, { tier1: t }))).toEqual([4, 5, 6, 7, 8]);
    expect(requests).toEqual([hash]);
    expect(() => runProgram(p, [a, b], 5, { tier: 1, tier1: t })).toThrow(/tier-1/);
    // a "compiled" kernel working on kernel memory: out = a - b + 100 (to tell it apart)
    compiled.set(hash, {
      run(table, out, n) {
        runs++;
        const buf = kernelMemory().buffer;
        const [pa, pb] = new Uint32Array(buf, table, 2);
        const A = new Float32Array(buf, pa, n);
        const B = new Float32Array(buf, pb, n);
        const O = new Float32Array(buf, out, n);
        for (let i = 0; i < n; i++) O[i] = A[i] - B[i] + 100;
      },
    });
    expect(Array.from(runProgram(p, [a, b], 5, { tier1: t }))).toEqual([104, 105, 106, 107, 108]);
    expect(Array.from(runProgram(p, [a, b], 5, { tier: 1, tier1: t }))).toEqual([104, 105, 106, 107, 108]);
    expect(Array.from(runProgram(p, [a, b], 5, { tier: 0, tier1: t }))).toEqual([4, 5, 6, 7, 8]);
    expect(runs).toBe(2);
    // Without a tier 1, as on an engine without one:
    expect(() => runProgram(p, [a, b], 5, { tier: 1 })).toThrow(/not available/);
    expect(Array.from(runProgram(p, [a, b], 5))).toEqual([4, 5, 6, 7, 8]);
  });

  it('leaves the kernel memory allocator where it found it', async () => {
    const { mark } = await import('../src/wasm/kernels.js');
    const m = mark();
    runProgram({ inputs: 1, code: [{ op: 'neg', a: 0 }], output: 1 }, [new Float32Array(5000)], 5000);
    expect(() => runProgram({ inputs: 1, code: [{ op: 'neg', a: 0 }], output: 1 }, [new Float32Array(3)], 5)).toThrow();
    expect(mark()).toBe(m);
  });
});

describe('wasm colour mapping', () => {
  it('equals colorize byte for byte', () => {
    const rng = new Rng(11);
    const v = new Float32Array(SPECIAL.length + 5000);
    v.set(SPECIAL);
    v.set(values(rng, 5000), SPECIAL.length);
    // values right at the rounding steps of a 0..255 stretch
    for (let i = 0; i < 600; i++) v[SPECIAL.length + i] = (i - 50) / 2;
    for (const map of COLOR_MAPS) {
      for (const [min, max] of [
        [0, 255],
        [-1, 1],
        [0, 1],
        [0.1, 0.1],
        [-1e38, 1e38],
        [100, 3000],
        [-0, 0],
        [5, 5.000001],
      ]) {
        const want = colorize(v, { min, max, map });
        const got = kernelColorize(v, colorTable(map), min, max);
        expect(got.length).toBe(want.length);
        for (let i = 0; i < want.length; i++) {
          if (got[i] !== want[i]) throw new Error(`${map} [${min}, ${max}] value ${v[i >> 2]}: byte ${i & 3} is ${got[i]}, colorize gives ${want[i]}`);
        }
      }
    }
    expect(kernelColorize(new Float32Array(0), colorTable('greys'), 0, 1).length).toBe(0);
    expect(() => kernelColorize(v, colorTable('greys'), 1, 0)).toThrow(/range/);
    expect(() => kernelColorize(v, new Uint8Array(10), 0, 1)).toThrow(/1024/);
  });
});

// ---------------------------------------------------------------------------------------------
// The arena (src/compile/kernels.ts): cube planes in kernel memory, read and written in place.

describe('arena', () => {
  const NDVI_CLIP: Program = {
    inputs: 2,
    code: [
      { op: 'normdiff', a: 0, b: 1 },
      { op: 'clip', a: 2, min: -0.5, max: 0.5 },
    ],
    output: 3,
  };
  const MEAN3: Program = { inputs: 3, code: [{ op: 'mean', args: [0, 1, 2] }], output: 3 };

  /** A plane of the current scope holding a copy of `v`. */
  const onArena = (v: Float32Array): Float32Array => {
    const p = plane(v.length);
    p.set(v);
    return p;
  };

  it('runs in place on planes and answers a plane, bit for bit as the copying path', async () => {
    const rng = new Rng(21);
    const n = 3 * BLOCK + 5;
    const heap = [values(rng, n), values(rng, n)];
    const copied = runProgram(NDVI_CLIP, heap, n, { tier: 0 });
    expect(ptrOf(copied)).toBe(-1); // outside a scope: a plain array
    await withArena(() => {
      const inputs = heap.map(onArena);
      const got = runProgram(NDVI_CLIP, inputs, n, { tier: 0 });
      expect(ptrOf(got)).toBeGreaterThanOrEqual(0);
      expect(new Int32Array(Float32Array.from(got).buffer)).toEqual(new Int32Array(copied.buffer));
      check(NDVI_CLIP, inputs, n, false, got);
      // Mixed: one input on the arena, one not.
      check(NDVI_CLIP, [inputs[0], heap[1]], n, false, runProgram(NDVI_CLIP, [inputs[0], heap[1]], n, { tier: 0 }));
      // A subarray of a plane (a band of a cube) is read in place too.
      const cube = plane(2 * n);
      cube.set(heap[0], 0);
      cube.set(heap[1], n);
      check(NDVI_CLIP, [cube.subarray(0, n), cube.subarray(n)], n, false, runProgram(NDVI_CLIP, [cube.subarray(0, n), cube.subarray(n)], n, { tier: 0 }));
    });
  });

  it('keeps every view valid when the memory grows during a request', async () => {
    const rng = new Rng(22);
    const n = 10_000;
    await withArena(() => {
      const a = onArena(values(rng, n));
      const b = onArena(values(rng, n));
      const want = reference(NDVI_CLIP, [a, b], n);
      const before = arenaStats();
      // Larger than everything so far: the memory must grow to place it.
      const big = plane((before.memoryBytes >>> 2) + 1_000_000);
      big.fill(7);
      const after = arenaStats();
      expect(after.memoryBytes).toBeGreaterThan(before.memoryBytes);
      expect(after.grows).toBeGreaterThan(before.grows);
      // The planes taken before the growth still read and write their values.
      expect(a.length).toBe(n);
      const got = runProgram(NDVI_CLIP, [a, b], n, { tier: 0 });
      for (let i = 0; i < n; i++) expect(same(got[i], want[i], false)).toBe(true);
      a[0] = 1;
      b[0] = 0;
      expect(runProgram(NDVI_CLIP, [a, b], 1, { tier: 0 })[0]).toBe(0.5);
      expect(big[big.length - 1]).toBe(7);
    });
  });

  it("frees a failed request's planes and reuses them, with no old values leaking into answers", async () => {
    const n = 50_000;
    await expect(
      withArena(() => {
        plane(n).fill(123);
        plane(n).fill(456);
        throw new Error('the request fails');
      }),
    ).rejects.toThrow('the request fails');
    const s0 = arenaStats();
    expect(s0.activeScopes).toBe(0);
    const rng = new Rng(23);
    await withArena(() => {
      const inputs = [onArena(values(rng, n)), onArena(values(rng, n))];
      expect(arenaStats().reused - s0.reused).toBe(2); // the failed request's two blocks, reused
      expect(arenaStats().top).toBe(s0.top); // nothing new from the top
      check(NDVI_CLIP, inputs, n);
      check(NDVI_CLIP, inputs, n, false, runProgram(NDVI_CLIP, inputs, n, { tier: 0 }));
    });
  });

  it('keeps concurrent requests on one thread apart', async () => {
    const n = 20_000;
    const tick = () => new Promise<void>((r) => setImmediate(r));
    const request = (seed: number) =>
      withArena(async () => {
        const rng = new Rng(seed);
        const src = [values(rng, n), values(rng, n), values(rng, n)];
        const inputs: Float32Array[] = [];
        for (const s of src) {
          await tick(); // the other requests allocate meanwhile
          inputs.push(onArena(s));
        }
        await tick();
        const out = runProgram(MEAN3, inputs, n, { tier: 0 });
        await tick();
        // Nobody else wrote into this request's planes while it waited.
        for (let j = 0; j < 3; j++) expect(inputs[j]).toEqual(src[j]);
        check(MEAN3, src, n, false, out);
        return inputs.concat(out).map((p) => [ptrOf(p), ptrOf(p) + p.byteLength] as const);
      });
    const spans = (await Promise.all([31, 32, 33, 34].map(request))).flat();
    // The blocks of requests alive at the same time never overlap.
    spans.sort((x, y) => x[0] - y[0]);
    for (let i = 1; i < spans.length; i++) expect(spans[i][0]).toBeGreaterThanOrEqual(spans[i - 1][1]);
    expect(arenaStats().activeScopes).toBe(0);
  });

  it('computes NaN planes (all no-data, and no-data in every lane position) in place', async () => {
    const n = 2 * BLOCK + 3;
    await withArena(() => {
      const nan = plane(n).fill(NaN);
      const rng = new Rng(24);
      const mixed = onArena(values(rng, n));
      for (let i = 0; i < n; i += 3) mixed[i] = NaN;
      for (const p of [NDVI_CLIP, MEAN3]) {
        const inputs = p.inputs === 2 ? [nan, mixed] : [nan, mixed, nan];
        check(p, inputs, n, false, runProgram(p, inputs, n, { tier: 0 }));
      }
      expect(runProgram(NDVI_CLIP, [nan, nan], n, { tier: 0 }).every(Number.isNaN)).toBe(true);
      expect(runProgram(MEAN3, [nan, nan, nan], n, { tier: 0 }).every(Number.isNaN)).toBe(true);
    });
  });

  it('gives the memory back after a large request, and old views keep their values', async () => {
    const g0 = arenaStats().generation;
    let kept: Float32Array | null = null;
    await withArena(
      () => {
        kept = plane(4 << 20).fill(3); // 16 MiB, past what is kept
        kept[0] = 42;
      },
      { keepBytes: 1 << 20 },
    );
    const s = arenaStats();
    expect(s.generation).toBe(g0 + 1);
    expect(s.memoryBytes).toBeLessThan(4 << 20);
    // A view on the old memory still reads (the garbage collector frees it once nothing holds one)...
    expect(kept![0]).toBe(42);
    // ...and is no longer taken for kernel memory: it is copied in like any array.
    expect(ptrOf(kept!)).toBe(-1);
    const rng = new Rng(25);
    await withArena(() => {
      const inputs = [kept!.subarray(0, 999), onArena(values(rng, 999))];
      check(NDVI_CLIP, inputs, 999, false, runProgram(NDVI_CLIP, inputs, 999, { tier: 0 }));
    });
  });

  it('reuses a free block of a larger class for windows of many sizes, and never one past twice the size', async () => {
    // Windows of a zonal job: each a little larger or smaller than the one before.
    await withArena(() => void plane(3 << 20).fill(1)); // 12 MiB and its colour margin: a block of the 16 MiB class
    const s0 = arenaStats();
    await withArena(() => {
      const p = plane(2_200_000); // 8.8 MB: the 12 MiB class, served by the free 16 MiB block
      p.fill(2);
    });
    await withArena(() => {
      const p = plane(1_900_000); // 7.6 MB: the 8 MiB class, served by it too (twice the class)
      p.fill(3);
      expect(p[0]).toBe(3);
    });
    expect(arenaStats().top).toBe(s0.top);
    expect(arenaStats().memoryBytes).toBe(s0.memoryBytes);
    // Two at once: the second finds no free block and comes from the top.
    await withArena(() => {
      const a = plane(1_900_000).fill(4);
      const b = plane(1_900_000).fill(5);
      expect(ptrOf(b)).not.toBe(ptrOf(a));
      expect(a[a.length - 1]).toBe(4);
    });
    expect(arenaStats().top).toBeGreaterThan(s0.top);
    // A small request never takes a block past twice its class: 1 MiB is not served by a 16 MiB one.
    const s1 = arenaStats();
    await withArena(() => void plane(1 << 18).fill(6));
    expect(arenaStats().top).toBeGreaterThan(s1.top);
  });

  it('keeps the temporaries of alloc/mark/release strictly nested and reuses them', () => {
    const m = mark();
    const a = alloc(1000);
    const inner = mark();
    const b = alloc(5000);
    expect(b).not.toBe(a);
    release(inner);
    expect(alloc(5000)).toBe(b); // the same size class, back from the free list
    release(m);
    expect(mark()).toBe(m);
    expect(() => release(m + 2)).toThrow(RangeError);
  });
});
