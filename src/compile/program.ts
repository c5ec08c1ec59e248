// A fused pixel program: what a pixel-wise child graph (apply, reduce_dimension, ...) compiles to,
// and what both kernel tiers run (tier 0 interprets it block by block in the wasm VM, tier 1
// generates one AssemblyScript function from it). SSA form: registers 0..inputs-1 hold the input
// vectors, register inputs + k the result of code[k]; `output` names the answer.
//
// Semantics, per pixel, on float32 values where NaN is no-data (these equal the scalar processes
// of src/processes with NaN read as null, results stored as float32; booleans are 1 and 0):
//   arithmetic and math     IEEE 754 (NaN propagates; x/0 = ±Inf or NaN)
//   mod                     floored modulo, sign of the divisor; mod(x, 0) = +Inf (x > 0), -Inf (x < 0), NaN (x = 0)
//   pow                     as Math.pow, but pow(±1, ±Inf) = 1; NaN if an operand is NaN
//   log(x, base)            ln(x) / ln(base); log10 and log2 exact
//   round                   to the nearest integer, halves to even (only p = 0 is fused)
//   sgn                     -1, 0, 1 (NaN stays NaN)
//   gt gte lt lte eq neq    1 or 0; NaN if an operand is NaN
//   and or xor not          three-valued: 0 is false, other numbers true, NaN unknown;
//                           and(0, NaN) = 0, or(1, NaN) = 1, otherwise NaN with a NaN operand
//   if(c, t, f)             t when c is a number other than 0 (NaN counts as false), else f
//   isnodata                1 for NaN, else 0;  isvalid: 0 for NaN and ±Inf, else 1; isinf: 1 for ±Inf, else 0
//   constants               float32, like every cube value (the engine rounds literals used on pixels too)
//   clip(a, min, max)       clamps; NaN stays NaN
//   linscale                clips a into [inMin, inMax] (either order) then maps linearly onto [outMin, outMax]
//   reducers                over the listed registers, skipping NaN (ignore_nodata = true):
//                           mean, sum, product, min, max, median (mean of the middle two for an even
//                           count), sd and variance (sample, n - 1; NaN below 2 values), count (of
//                           valid values, 0 when none), first and last (first/last valid); every
//                           reducer but count gives NaN when no value is valid
import { createHash } from 'node:crypto';

export const UNARY = [
  'abs',
  'neg',
  'sqrt',
  'exp',
  'ln',
  'log10',
  'log2',
  'sin',
  'cos',
  'tan',
  'asin',
  'acos',
  'atan',
  'sinh',
  'cosh',
  'tanh',
  'asinh',
  'acosh',
  'atanh',
  'floor',
  'ceil',
  'trunc',
  'round',
  'sgn',
  'not',
  'isnodata',
  'isvalid',
  'isinf',
] as const;
export const BINARY = ['add', 'sub', 'mul', 'div', 'pow', 'mod', 'atan2', 'log', 'gt', 'gte', 'lt', 'lte', 'eq', 'neq', 'and', 'or', 'xor', 'normdiff'] as const;
export const REDUCERS = ['mean', 'sum', 'product', 'min', 'max', 'median', 'sd', 'variance', 'count', 'first', 'last'] as const;

export type UnaryOp = (typeof UNARY)[number];
export type BinaryOp = (typeof BINARY)[number];
export type ReduceOp = (typeof REDUCERS)[number];

export type Instr =
  | { op: 'const'; value: number }
  | { op: UnaryOp; a: number }
  | { op: BinaryOp; a: number; b: number }
  | { op: 'clip'; a: number; min: number; max: number }
  | { op: 'linscale'; a: number; inMin: number; inMax: number; outMin: number; outMax: number }
  | { op: 'if'; c: number; t: number; f: number }
  | { op: ReduceOp; args: number[] };

export interface Program {
  inputs: number;
  code: Instr[];
  output: number;
}

/** Opcodes shared with kernels/vm.ts (the order is the wire format: append only). */
export const OPCODES: string[] = ['const', ...UNARY, ...BINARY, 'clip', 'linscale', 'if', ...REDUCERS];
export const opcode = (op: string): number => {
  const k = OPCODES.indexOf(op);
  if (k < 0) throw new Error(`unknown op ${op}`);
  return k;
};

export const isUnary = (op: string): op is UnaryOp => (UNARY as readonly string[]).includes(op);
export const isBinary = (op: string): op is BinaryOp => (BINARY as readonly string[]).includes(op);
export const isReducer = (op: string): op is ReduceOp => (REDUCERS as readonly string[]).includes(op);

/** Checks register references (each instruction may only read earlier registers). */
export function checkProgram(p: Program): void {
  const bad = (k: number, r: number) => {
    throw new Error(`instruction ${k} reads register ${r}, not defined before it`);
  };
  p.code.forEach((ins, k) => {
    const limit = p.inputs + k;
    const regs = 'args' in ins ? ins.args : 'c' in ins ? [ins.c, ins.t, ins.f] : 'b' in ins ? [ins.a, ins.b] : 'a' in ins ? [ins.a] : [];
    for (const r of regs) if (!Number.isInteger(r) || r < 0 || r >= limit) bad(k, r);
    if ('args' in ins && ins.args.length === 0) throw new Error(`instruction ${k}: a reducer needs at least one register`);
  });
  if (!Number.isInteger(p.output) || p.output < 0 || p.output >= p.inputs + p.code.length) throw new Error(`output register ${p.output} does not exist`);
}

/**
 * The program with unused instructions dropped and registers renumbered in order, so equal
 * computations have equal programs whatever the graph's node names, key order or descriptions.
 */
export function canonical(p: Program): Program {
  const used = new Set<number>();
  const mark = (r: number) => {
    if (used.has(r)) return;
    used.add(r);
    if (r >= p.inputs) {
      const ins = p.code[r - p.inputs];
      if ('args' in ins) ins.args.forEach(mark);
      else if ('c' in ins) [ins.c, ins.t, ins.f].forEach(mark);
      else if ('b' in ins) [ins.a, ins.b].forEach(mark);
      else if ('a' in ins) mark(ins.a);
    }
  };
  mark(p.output);
  const map = new Map<number, number>();
  for (let r = 0; r < p.inputs; r++) map.set(r, r);
  const code: Instr[] = [];
  p.code.forEach((ins, k) => {
    const r = p.inputs + k;
    if (!used.has(r)) return;
    const m = (x: number) => map.get(x)!;
    let out: Instr;
    if ('args' in ins) out = { op: ins.op, args: ins.args.map(m) };
    else if ('c' in ins) out = { op: 'if', c: m(ins.c), t: m(ins.t), f: m(ins.f) };
    else if ('b' in ins) out = { op: ins.op, a: m(ins.a), b: m(ins.b) };
    else if (ins.op === 'clip') out = { op: 'clip', a: m(ins.a), min: ins.min, max: ins.max };
    else if (ins.op === 'linscale') out = { op: 'linscale', a: m(ins.a), inMin: ins.inMin, inMax: ins.inMax, outMin: ins.outMin, outMax: ins.outMax };
    else if ('a' in ins) out = { op: ins.op, a: m(ins.a) };
    else out = { op: 'const', value: ins.value };
    map.set(r, p.inputs + code.length);
    code.push(out);
  });
  return { inputs: p.inputs, code, output: map.get(p.output)! };
}

/** A stable text form (numbers in full precision; NaN and infinities spelled out). */
export function programText(p: Program): string {
  const num = (x: number) => (Number.isNaN(x) ? 'NaN' : x === Infinity ? 'Inf' : x === -Infinity ? '-Inf' : Object.is(x, -0) ? '-0' : String(x));
  const lines = p.code.map((ins, k) => {
    const r = `r${p.inputs + k}`;
    if (ins.op === 'const') return `${r} = const ${num(ins.value)}`;
    if ('args' in ins) return `${r} = ${ins.op} ${ins.args.map((x) => `r${x}`).join(' ')}`;
    if ('c' in ins) return `${r} = if r${ins.c} r${ins.t} r${ins.f}`;
    if (ins.op === 'clip') return `${r} = clip r${ins.a} ${num(ins.min)} ${num(ins.max)}`;
    if (ins.op === 'linscale') return `${r} = linscale r${ins.a} ${[ins.inMin, ins.inMax, ins.outMin, ins.outMax].map(num).join(' ')}`;
    if ('b' in ins) return `${r} = ${ins.op} r${ins.a} r${ins.b}`;
    return `${r} = ${ins.op} r${(ins as { a: number }).a}`;
  });
  return [`inputs ${p.inputs}`, ...lines, `out r${p.output}`].join('\n');
}

/** The cache key of a program: its canonical form, hashed. */
export function programHash(p: Program): string {
  return createHash('sha256')
    .update(programText(canonical(p)))
    .digest('hex')
    .slice(0, 32);
}
