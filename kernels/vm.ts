// Tier 0: a block VM that runs any fused pixel Program (src/compile/program.ts) at once. The host
// encodes the Program into an i32 table (src/compile/tier0.ts); each instruction then loops over a
// block of BLOCK values in linear memory, four lanes per step with SIMD. Where the reference (the
// JS processes: double precision from float32 operands, rounded once to float32) differs from plain
// float32 arithmetic, the VM computes in double precision too: f64x2 lanes for normdiff, linscale
// and the sums, scalar Math (f64) per lane for the transcendental ops, mod and log.
//
// Encoded program (i32 words; f32 immediates as their bits, f64 immediates as two words, low first):
//   header   MAGIC, nInputs, nSlots, nInstr, maxArgs
//   const    0,  dst, f32 value
//   unary    op, dst, a
//   binary   op, dst, a, b
//   clip     op, dst, a, f32 min, f32 max
//   linscale op, dst, a, f64 inMin, f64 inMax, f64 outMin, f64 outMax
//   if       op, dst, c, t, f
//   reducer  op, dst, count, arg 0 .. arg count-1
//   median   op, dst, count, arg 0 .. arg count-1, nPairs, pairs (byte offsets i*16, j*16 of a
//            comparator network sorting count values, i < j)
//   copy     OP_COPY, dst, a                          (VM-internal: output = an input)
// Opcodes are the indices of OPCODES in program.ts. Operands are ids: 0 .. nInputs-1 the inputs,
// nInputs .. nInputs+nSlots-1 scratch slots (BLOCK values each; the encoder reuses them once their
// register is dead, and gives constants slots of their own, filled once), nInputs+nSlots the output.
// An instruction may write the slot of one of its own operands (every op reads all its operands at
// a position before writing that position).
//
// Memory contract: the input arrays and the output must have room for n rounded up to a multiple of
// 4 values (the host's alloc() rounds to 16 bytes): the last block is processed in whole SIMD steps,
// reading up to 3 values past the end of the inputs and writing up to 3 past the end of the output.
// The scratch area (vmScratchBytes) must be 16-byte aligned.

const BLOCK: i32 = 1024;
const MAGIC: i32 = 0x30564d58; // 'XMV0'
const HEADER: usize = 20;

// Opcodes (OPCODES order of program.ts).
const OP_CONST = 0;
const OP_ABS = 1;
const OP_NEG = 2;
const OP_SQRT = 3;
const OP_EXP = 4;
const OP_LN = 5;
const OP_LOG10 = 6;
const OP_LOG2 = 7;
const OP_SIN = 8;
const OP_COS = 9;
const OP_TAN = 10;
const OP_ASIN = 11;
const OP_ACOS = 12;
const OP_ATAN = 13;
const OP_SINH = 14;
const OP_COSH = 15;
const OP_TANH = 16;
const OP_ASINH = 17;
const OP_ACOSH = 18;
const OP_ATANH = 19;
const OP_FLOOR = 20;
const OP_CEIL = 21;
const OP_TRUNC = 22;
const OP_ROUND = 23;
const OP_SGN = 24;
const OP_NOT = 25;
const OP_ISNODATA = 26;
const OP_ISVALID = 27;
const OP_ISINF = 28;
const OP_ADD = 29;
const OP_SUB = 30;
const OP_MUL = 31;
const OP_DIV = 32;
const OP_POW = 33;
const OP_MOD = 34;
const OP_ATAN2 = 35;
const OP_LOG = 36;
const OP_GT = 37;
const OP_GTE = 38;
const OP_LT = 39;
const OP_LTE = 40;
const OP_EQ = 41;
const OP_NEQ = 42;
const OP_AND = 43;
const OP_OR = 44;
const OP_XOR = 45;
const OP_NORMDIFF = 46;
const OP_CLIP = 47;
const OP_LINSCALE = 48;
const OP_IF = 49;
const OP_MEAN = 50;
const OP_SUM = 51;
const OP_PRODUCT = 52;
const OP_MIN = 53;
const OP_MAX = 54;
const OP_MEDIAN = 55;
const OP_SD = 56;
const OP_VARIANCE = 57;
const OP_COUNT = 58;
const OP_FIRST = 59;
const OP_LAST = 60;
const OP_COPY = 128;

/** Values per block. */
export function vmBlock(): i32 {
  return BLOCK;
}

// @ts-ignore: decorator
@inline
function align16(x: usize): usize {
  return (x + 15) & ~(<usize>15);
}

// @ts-ignore: decorator
@inline
function tableBytes(code: usize): usize {
  return align16(<usize>(load<i32>(code, 4) + load<i32>(code, 8) + 1) << 2);
}

// @ts-ignore: decorator
@inline
function argBytes(code: usize): usize {
  return align16(<usize>load<i32>(code, 16) << 2);
}

/** Bytes of scratch memory vmRun needs for the encoded program at `code`. */
export function vmScratchBytes(code: usize): i32 {
  return <i32>(tableBytes(code) + argBytes(code) + (argBytes(code) << 2) + (<usize>load<i32>(code, 8) * <usize>BLOCK << 2));
}

// ---------------------------------------------------------------------------------------------
// Lane helpers

// @ts-ignore: decorator
@inline
function lo64(v: v128): v128 {
  return f64x2.promote_low_f32x4(v);
}

// @ts-ignore: decorator
@inline
function hi64(v: v128): v128 {
  return f64x2.promote_low_f32x4(i64x2.shuffle(v, v, 1, 0));
}

// @ts-ignore: decorator
@inline
function join32(l: v128, h: v128): v128 {
  return i64x2.shuffle(f32x4.demote_f64x2_zero(l), f32x4.demote_f64x2_zero(h), 0, 2);
}

// @ts-ignore: decorator
@inline
function isNan4(x: v128): v128 {
  return f32x4.ne(x, x);
}

// @ts-ignore: decorator
@inline
function anyNan4(x: v128, y: v128): v128 {
  return v128.or(f32x4.ne(x, x), f32x4.ne(y, y));
}

// ---------------------------------------------------------------------------------------------
// Element-wise ops; nb is the byte count (a multiple of 16).

function fill(d: usize, v: f32, nb: usize): void {
  const x = f32x4.splat(v);
  for (let o: usize = 0; o < nb; o += 16) v128.store(d + o, x);
}

function copy(a: usize, d: usize, nb: usize): void {
  for (let o: usize = 0; o < nb; o += 16) v128.store(d + o, v128.load(a + o));
}

function simdUnary(op: i32, a: usize, d: usize, nb: usize): void {
  const zero = f32x4.splat(0);
  const one = f32x4.splat(1);
  switch (op) {
    case OP_ABS:
      for (let o: usize = 0; o < nb; o += 16) v128.store(d + o, f32x4.abs(v128.load(a + o)));
      break;
    case OP_NEG:
      for (let o: usize = 0; o < nb; o += 16) v128.store(d + o, f32x4.neg(v128.load(a + o)));
      break;
    case OP_SQRT:
      for (let o: usize = 0; o < nb; o += 16) v128.store(d + o, f32x4.sqrt(v128.load(a + o)));
      break;
    // floor, ceil and trunc give +0 for -0 results (as Math.floor(x) + 0 does).
    case OP_FLOOR:
      for (let o: usize = 0; o < nb; o += 16) v128.store(d + o, f32x4.add(f32x4.floor(v128.load(a + o)), zero));
      break;
    case OP_CEIL:
      for (let o: usize = 0; o < nb; o += 16) v128.store(d + o, f32x4.add(f32x4.ceil(v128.load(a + o)), zero));
      break;
    case OP_TRUNC:
      for (let o: usize = 0; o < nb; o += 16) v128.store(d + o, f32x4.add(f32x4.trunc(v128.load(a + o)), zero));
      break;
    case OP_ROUND:
      // Halves to even; a zero result is +0 unless x itself is a zero (which stays as it is).
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        v128.store(d + o, v128.bitselect(x, f32x4.add(f32x4.nearest(x), zero), f32x4.eq(x, zero)));
      }
      break;
    case OP_SGN: {
      const m1 = f32x4.splat(-1);
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        const r = v128.or(v128.and(f32x4.gt(x, zero), one), v128.and(f32x4.lt(x, zero), m1));
        v128.store(d + o, v128.bitselect(x, r, isNan4(x)));
      }
      break;
    }
    case OP_NOT:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        v128.store(d + o, v128.bitselect(x, v128.and(f32x4.eq(x, zero), one), isNan4(x)));
      }
      break;
    case OP_ISNODATA:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        v128.store(d + o, v128.and(isNan4(x), one));
      }
      break;
    case OP_ISVALID:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        v128.store(d + o, v128.and(f32x4.eq(f32x4.sub(x, x), zero), one));
      }
      break;
    case OP_ISINF: {
      const inf = f32x4.splat(Infinity);
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        // no-data is not infinite: 0 for NaN, as is_infinite(null) answers
        v128.store(d + o, v128.and(f32x4.eq(f32x4.abs(x), inf), one));
      }
      break;
    }
  }
}

// Scalar per lane, in double precision rounded once, as the reference computes (the Mathf versions
// are up to 2 ulps off, which comparisons and floor downstream can turn into different answers; and
// their sin, cos and tan reduce large arguments wrongly).
function scalarUnary(op: i32, a: usize, d: usize, nb: usize): void {
  switch (op) {
    case OP_EXP:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.exp(<f64>load<f32>(a + o)));
      break;
    case OP_LN:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.log(<f64>load<f32>(a + o)));
      break;
    case OP_LOG10:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.log10(<f64>load<f32>(a + o)));
      break;
    case OP_LOG2:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.log2(<f64>load<f32>(a + o)));
      break;
    case OP_SIN:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.sin(<f64>load<f32>(a + o)));
      break;
    case OP_COS:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.cos(<f64>load<f32>(a + o)));
      break;
    case OP_TAN:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.tan(<f64>load<f32>(a + o)));
      break;
    case OP_ASIN:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.asin(<f64>load<f32>(a + o)));
      break;
    case OP_ACOS:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.acos(<f64>load<f32>(a + o)));
      break;
    case OP_ATAN:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.atan(<f64>load<f32>(a + o)));
      break;
    case OP_SINH:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.sinh(<f64>load<f32>(a + o)));
      break;
    case OP_COSH:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.cosh(<f64>load<f32>(a + o)));
      break;
    case OP_TANH:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.tanh(<f64>load<f32>(a + o)));
      break;
    case OP_ASINH:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.asinh(<f64>load<f32>(a + o)));
      break;
    case OP_ACOSH:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.acosh(<f64>load<f32>(a + o)));
      break;
    case OP_ATANH:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.atanh(<f64>load<f32>(a + o)));
      break;
  }
}

function simdBinary(op: i32, a: usize, b: usize, d: usize, nb: usize): void {
  const zero = f32x4.splat(0);
  const one = f32x4.splat(1);
  const nan = f32x4.splat(NaN);
  switch (op) {
    case OP_ADD:
      for (let o: usize = 0; o < nb; o += 16) v128.store(d + o, f32x4.add(v128.load(a + o), v128.load(b + o)));
      break;
    case OP_SUB:
      for (let o: usize = 0; o < nb; o += 16) v128.store(d + o, f32x4.sub(v128.load(a + o), v128.load(b + o)));
      break;
    case OP_MUL:
      for (let o: usize = 0; o < nb; o += 16) v128.store(d + o, f32x4.mul(v128.load(a + o), v128.load(b + o)));
      break;
    case OP_DIV:
      for (let o: usize = 0; o < nb; o += 16) v128.store(d + o, f32x4.div(v128.load(a + o), v128.load(b + o)));
      break;
    // Comparisons: 1 or 0, NaN when an operand is NaN.
    case OP_GT:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        const y = v128.load(b + o);
        v128.store(d + o, v128.bitselect(nan, v128.and(f32x4.gt(x, y), one), anyNan4(x, y)));
      }
      break;
    case OP_GTE:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        const y = v128.load(b + o);
        v128.store(d + o, v128.bitselect(nan, v128.and(f32x4.ge(x, y), one), anyNan4(x, y)));
      }
      break;
    case OP_LT:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        const y = v128.load(b + o);
        v128.store(d + o, v128.bitselect(nan, v128.and(f32x4.lt(x, y), one), anyNan4(x, y)));
      }
      break;
    case OP_LTE:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        const y = v128.load(b + o);
        v128.store(d + o, v128.bitselect(nan, v128.and(f32x4.le(x, y), one), anyNan4(x, y)));
      }
      break;
    case OP_EQ:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        const y = v128.load(b + o);
        v128.store(d + o, v128.bitselect(nan, v128.and(f32x4.eq(x, y), one), anyNan4(x, y)));
      }
      break;
    case OP_NEQ:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        const y = v128.load(b + o);
        v128.store(d + o, v128.bitselect(nan, v128.and(f32x4.ne(x, y), one), anyNan4(x, y)));
      }
      break;
    // Three-valued logic: 0 false, other numbers true, NaN unknown.
    case OP_AND:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        const y = v128.load(b + o);
        const anyFalse = v128.or(f32x4.eq(x, zero), f32x4.eq(y, zero));
        v128.store(d + o, v128.andnot(v128.bitselect(nan, one, anyNan4(x, y)), anyFalse));
      }
      break;
    case OP_OR:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        const y = v128.load(b + o);
        const anyTrue = v128.or(f32x4.gt(f32x4.abs(x), zero), f32x4.gt(f32x4.abs(y), zero));
        v128.store(d + o, v128.bitselect(one, v128.and(nan, anyNan4(x, y)), anyTrue));
      }
      break;
    case OP_XOR:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        const y = v128.load(b + o);
        const r = v128.and(v128.xor(f32x4.ne(x, zero), f32x4.ne(y, zero)), one);
        v128.store(d + o, v128.bitselect(nan, r, anyNan4(x, y)));
      }
      break;
    // (x - y) / (x + y) in double precision, rounded once (as the reference computes it).
    case OP_NORMDIFF:
      for (let o: usize = 0; o < nb; o += 16) {
        const x = v128.load(a + o);
        const y = v128.load(b + o);
        const xl = lo64(x);
        const xh = hi64(x);
        const yl = lo64(y);
        const yh = hi64(y);
        const rl = f64x2.div(f64x2.sub(xl, yl), f64x2.add(xl, yl));
        const rh = f64x2.div(f64x2.sub(xh, yh), f64x2.add(xh, yh));
        v128.store(d + o, join32(rl, rh));
      }
      break;
  }
}

// @ts-ignore: decorator
@inline
function powOne(x32: f32, y32: f32): f32 {
  const x = <f64>x32;
  const y = <f64>y32;
  // No-data in, no-data out (wasm's pow would give pow(NaN, 0) = pow(1, NaN) = 1).
  if (x != x || y != y) return NaN;
  const r = Math.pow(x, y);
  // pow(1, ±Inf) and pow(-1, ±Inf) are 1.
  if (r != r && (x == 1 || (x == -1 && Math.abs(y) == Infinity))) return 1;
  return <f32>r;
}

// @ts-ignore: decorator
@inline
function modOne(x32: f32, y32: f32): f32 {
  const x = <f64>x32;
  const y = <f64>y32;
  if (y == 0) return x > 0 ? Infinity : x < 0 ? -Infinity : NaN;
  let r = x % y; // exact (fmod)
  if (r != 0 && (r < 0) != (y < 0)) r += y;
  return r == 0 ? 0 : <f32>r;
}

// @ts-ignore: decorator
@inline
function logOne(x32: f32, b32: f32): f32 {
  const x = <f64>x32;
  const b = <f64>b32;
  if (b == 10) return <f32>Math.log10(x);
  if (b == 2) return <f32>Math.log2(x);
  return <f32>(Math.log(x) / Math.log(b));
}

function scalarBinary(op: i32, a: usize, b: usize, d: usize, nb: usize): void {
  switch (op) {
    case OP_POW:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, powOne(load<f32>(a + o), load<f32>(b + o)));
      break;
    case OP_MOD:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, modOne(load<f32>(a + o), load<f32>(b + o)));
      break;
    case OP_ATAN2:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, <f32>Math.atan2(<f64>load<f32>(a + o), <f64>load<f32>(b + o)));
      break;
    case OP_LOG:
      for (let o: usize = 0; o < nb; o += 4) store<f32>(d + o, logOne(load<f32>(a + o), load<f32>(b + o)));
      break;
  }
}

function clip(a: usize, d: usize, nb: usize, min: f32, max: f32): void {
  const lo = f32x4.splat(min);
  const hi = f32x4.splat(max);
  for (let o: usize = 0; o < nb; o += 16) {
    const x = v128.load(a + o);
    // x < min ? min : x > max ? max : x (NaN stays NaN)
    const r = v128.bitselect(hi, x, f32x4.gt(x, hi));
    v128.store(d + o, v128.bitselect(lo, r, f32x4.lt(x, lo)));
  }
}

function linscale(a: usize, d: usize, nb: usize, inMin: f64, inMax: f64, outMin: f64, outMax: f64): void {
  // As the reference, in double precision: clip into the input range (either order), then
  // ((c - inMin) / (inMax - inMin)) * (outMax - outMin) + outMin.
  const up = inMin <= inMax;
  const L = f64x2.splat(up ? inMin : inMax);
  const H = f64x2.splat(up ? inMax : inMin);
  const lo = f64x2.splat(inMin);
  const span = f64x2.splat(inMax - inMin);
  const ospan = f64x2.splat(outMax - outMin);
  const olo = f64x2.splat(outMin);
  for (let o: usize = 0; o < nb; o += 16) {
    const x = v128.load(a + o);
    const xl = lo64(x);
    const xh = hi64(x);
    const cl = v128.bitselect(L, v128.bitselect(H, xl, f64x2.gt(xl, H)), f64x2.lt(xl, L));
    const ch = v128.bitselect(L, v128.bitselect(H, xh, f64x2.gt(xh, H)), f64x2.lt(xh, L));
    const rl = f64x2.add(f64x2.mul(f64x2.div(f64x2.sub(cl, lo), span), ospan), olo);
    const rh = f64x2.add(f64x2.mul(f64x2.div(f64x2.sub(ch, lo), span), ospan), olo);
    v128.store(d + o, join32(rl, rh));
  }
}

function select(c: usize, t: usize, f: usize, d: usize, nb: usize): void {
  const zero = f32x4.splat(0);
  for (let o: usize = 0; o < nb; o += 16) {
    // true: a number other than 0 (|c| > 0 is false for 0 and NaN)
    const m = f32x4.gt(f32x4.abs(v128.load(c + o)), zero);
    v128.store(d + o, v128.bitselect(v128.load(t + o), v128.load(f + o), m));
  }
}

// ---------------------------------------------------------------------------------------------
// Reducers over `cnt` registers whose block pointers are at argp (u32 each), skipping NaN.

// @ts-ignore: decorator
@inline
function argPtr(argp: usize, j: i32): usize {
  return <usize>load<u32>(argp + (<usize>j << 2));
}

// @ts-ignore: decorator
@inline
function neumaierC(s: v128, v: v128, t: v128, c: v128): v128 {
  // c += |s| >= |v| ? (s - t) + v : (v - t) + s
  const big = f64x2.ge(f64x2.abs(s), f64x2.abs(v));
  return f64x2.add(c, v128.bitselect(f64x2.add(f64x2.sub(s, t), v), f64x2.add(f64x2.sub(v, t), s), big));
}

/**
 * sum, mean, variance and sd as the reference computes them in double precision: a compensated
 * (Neumaier) sum, mean = sum / n, then a second pass (Σd² - (Σd)²/n) / (n - 1).
 * Fast path: a plain double sum of float32 values is exact (so equal to the compensated one) when
 * cnt * max|v| <= 2^28 * min|v| over the non-zero values (every partial sum is then a multiple of the
 * smallest value's ulp below 2^53 of them); only groups of pixels where that fails are summed again
 * with compensation.
 */
function moments(op: i32, d: usize, argp: usize, cnt: i32, nb: usize): void {
  const zero = f64x2.splat(0);
  const one = f64x2.splat(1);
  const nan = f64x2.splat(NaN);
  const zero32 = f32x4.splat(0);
  const inf32 = f32x4.splat(Infinity);
  const lim = f64x2.splat(268435456.0 / <f64>cnt);
  for (let o: usize = 0; o < nb; o += 16) {
    let sl = zero;
    let sh = zero;
    let nv = i32x4.splat(0);
    let mx = zero32;
    let mn = inf32;
    for (let j = 0; j < cnt; j++) {
      const v = v128.load(argPtr(argp, j) + o);
      const ok = f32x4.eq(v, v);
      nv = i32x4.sub(nv, ok);
      const vz = v128.and(v, ok); // NaN -> +0, which leaves the sum as it is
      const a = f32x4.abs(vz);
      mx = f32x4.pmax(mx, a);
      mn = f32x4.pmin(mn, v128.bitselect(a, inf32, f32x4.gt(a, zero32)));
      sl = f64x2.add(sl, lo64(vz));
      sh = f64x2.add(sh, hi64(vz));
    }
    const exactL = f64x2.le(lo64(mx), f64x2.mul(lo64(mn), lim));
    const exactH = f64x2.le(hi64(mx), f64x2.mul(hi64(mn), lim));
    if (!i64x2.all_true(v128.and(exactL, exactH))) {
      // Compensated: c += |s| >= |v| ? (s - t) + v : (v - t) + s, with t = s + v.
      sl = zero;
      sh = zero;
      let cl = zero;
      let ch = zero;
      for (let j = 0; j < cnt; j++) {
        const v = v128.load(argPtr(argp, j) + o);
        const vz = v128.and(v, f32x4.eq(v, v));
        const vl = lo64(vz);
        const vh = hi64(vz);
        const tl = f64x2.add(sl, vl);
        const th = f64x2.add(sh, vh);
        cl = neumaierC(sl, vl, tl, cl);
        ch = neumaierC(sh, vh, th, ch);
        sl = tl;
        sh = th;
      }
      const rl = f64x2.add(sl, cl);
      const rh = f64x2.add(sh, ch);
      // once the plain sum is infinite or NaN, the correction is meaningless: the plain sum
      sl = v128.bitselect(rl, sl, f64x2.eq(f64x2.sub(rl, rl), zero));
      sh = v128.bitselect(rh, sh, f64x2.eq(f64x2.sub(rh, rh), zero));
    }
    const nl = f64x2.convert_low_i32x4_s(nv);
    const nh = f64x2.convert_low_i32x4_s(i64x2.shuffle(nv, nv, 1, 0));
    if (op == OP_SUM) {
      v128.store(d + o, join32(v128.bitselect(nan, sl, f64x2.eq(nl, zero)), v128.bitselect(nan, sh, f64x2.eq(nh, zero))));
      continue;
    }
    const meanl = f64x2.div(sl, nl); // 0 / 0 = NaN without values
    const meanh = f64x2.div(sh, nh);
    if (op == OP_MEAN) {
      v128.store(d + o, join32(meanl, meanh));
      continue;
    }
    let ql = zero;
    let qh = zero;
    let el = zero;
    let eh = zero;
    for (let j = 0; j < cnt; j++) {
      const v = v128.load(argPtr(argp, j) + o);
      const ok = f32x4.eq(v, v);
      const dl = v128.and(f64x2.sub(lo64(v), meanl), i64x2.extend_low_i32x4_s(ok));
      const dh = v128.and(f64x2.sub(hi64(v), meanh), i64x2.extend_high_i32x4_s(ok));
      ql = f64x2.add(ql, f64x2.mul(dl, dl));
      qh = f64x2.add(qh, f64x2.mul(dh, dh));
      el = f64x2.add(el, dl);
      eh = f64x2.add(eh, dh);
    }
    let varl = f64x2.div(f64x2.sub(ql, f64x2.div(f64x2.mul(el, el), nl)), f64x2.sub(nl, one));
    let varh = f64x2.div(f64x2.sub(qh, f64x2.div(f64x2.mul(eh, eh), nh)), f64x2.sub(nh, one));
    if (op == OP_SD) {
      varl = f64x2.sqrt(varl);
      varh = f64x2.sqrt(varh);
    }
    v128.store(d + o, join32(varl, varh));
  }
}

function product(d: usize, argp: usize, cnt: i32, nb: usize): void {
  const one32 = f32x4.splat(1);
  const one = f64x2.splat(1);
  const nan = f32x4.splat(NaN);
  for (let o: usize = 0; o < nb; o += 16) {
    let pl = one;
    let ph = one;
    let any = i32x4.splat(0);
    for (let j = 0; j < cnt; j++) {
      const v = v128.load(argPtr(argp, j) + o);
      const ok = f32x4.eq(v, v);
      any = v128.or(any, ok);
      const v1 = v128.bitselect(v, one32, ok); // NaN -> 1
      pl = f64x2.mul(pl, lo64(v1));
      ph = f64x2.mul(ph, hi64(v1));
    }
    v128.store(d + o, v128.bitselect(join32(pl, ph), nan, any));
  }
}

function extreme(op: i32, d: usize, argp: usize, cnt: i32, nb: usize): void {
  const nan = f32x4.splat(NaN);
  const start = f32x4.splat(op == OP_MAX ? -Infinity : Infinity);
  for (let o: usize = 0; o < nb; o += 16) {
    let m = start;
    let any = i32x4.splat(0);
    if (op == OP_MAX) {
      for (let j = 0; j < cnt; j++) {
        const v = v128.load(argPtr(argp, j) + o);
        any = v128.or(any, f32x4.eq(v, v));
        m = v128.bitselect(v, m, f32x4.gt(v, m));
      }
    } else {
      for (let j = 0; j < cnt; j++) {
        const v = v128.load(argPtr(argp, j) + o);
        any = v128.or(any, f32x4.eq(v, v));
        m = v128.bitselect(v, m, f32x4.lt(v, m));
      }
    }
    v128.store(d + o, v128.bitselect(m, nan, any));
  }
}

function countValid(d: usize, argp: usize, cnt: i32, nb: usize): void {
  const zero = f32x4.splat(0);
  const one = f32x4.splat(1);
  for (let o: usize = 0; o < nb; o += 16) {
    let c = zero;
    for (let j = 0; j < cnt; j++) {
      const v = v128.load(argPtr(argp, j) + o);
      c = f32x4.add(c, v128.and(f32x4.eq(v, v), one)); // values other than NaN (±Inf count, as in the JS engine)
    }
    v128.store(d + o, c);
  }
}

function firstLast(op: i32, d: usize, argp: usize, cnt: i32, nb: usize): void {
  const nan = f32x4.splat(NaN);
  for (let o: usize = 0; o < nb; o += 16) {
    let r = nan;
    if (op == OP_FIRST) {
      for (let j = 0; j < cnt; j++) {
        const v = v128.load(argPtr(argp, j) + o);
        r = v128.bitselect(r, v, f32x4.eq(r, r));
      }
    } else {
      for (let j = 0; j < cnt; j++) {
        const v = v128.load(argPtr(argp, j) + o);
        r = v128.bitselect(v, r, f32x4.eq(v, v));
      }
    }
    v128.store(d + o, r);
  }
}

// @ts-ignore: decorator
@inline
function fromKey(key: i32): f64 {
  // sort keys (below) back to the value
  return <f64>reinterpret<f32>(key ^ ((key >> 31) & 0x7fffffff));
}

// @ts-ignore: decorator
@inline
function medianLane(keys: usize, lane: usize, k: i32): f32 {
  if (k == 0) return NaN;
  const h = k >> 1;
  const b = fromKey(load<i32>(keys + (<usize>h << 4) + lane));
  if (k & 1) return <f32>b;
  const a = fromKey(load<i32>(keys + (<usize>(h - 1) << 4) + lane));
  let m = (a + b) / 2;
  if (!(m - m == 0)) m = a / 2 + b / 2; // a + b overflowed (or an infinity: the same then)
  return <f32>m;
}

/**
 * Median of the valid values, four pixels at a time: the values become integer keys in the
 * order of the floats (-0 before +0; NaN as the key of +Inf, so past every valid value but equal
 * to a valid +Inf), sorted by the comparator network at `pairs` (byte offsets of v128 rows of
 * `keys`, from the encoder); each lane then reads its middle one or two of its k valid values.
 */
function median(d: usize, argp: usize, cnt: i32, pairs: usize, nPairs: i32, keys: usize, nb: usize): void {
  const inf = i32x4.splat(0x7f800000);
  const mag = i32x4.splat(0x7fffffff);
  const pend = pairs + (<usize>nPairs << 3);
  for (let o: usize = 0; o < nb; o += 16) {
    let k = i32x4.splat(0);
    for (let j = 0; j < cnt; j++) {
      const v = v128.load(argPtr(argp, j) + o);
      const ok = f32x4.eq(v, v);
      k = i32x4.sub(k, ok);
      const key = v128.xor(v, v128.and(i32x4.shr_s(v, 31), mag));
      v128.store(keys + (<usize>j << 4), v128.bitselect(key, inf, ok));
    }
    for (let q = pairs; q < pend; q += 8) {
      const x = keys + <usize>load<i32>(q);
      const y = keys + <usize>load<i32>(q, 4);
      const a = v128.load(x);
      const b = v128.load(y);
      v128.store(x, i32x4.min_s(a, b));
      v128.store(y, i32x4.max_s(a, b));
    }
    store<f32>(d + o, medianLane(keys, 0, i32x4.extract_lane(k, 0)));
    store<f32>(d + o, medianLane(keys, 4, i32x4.extract_lane(k, 1)), 4);
    store<f32>(d + o, medianLane(keys, 8, i32x4.extract_lane(k, 2)), 8);
    store<f32>(d + o, medianLane(keys, 12, i32x4.extract_lane(k, 3)), 12);
  }
}

// ---------------------------------------------------------------------------------------------
// The interpreter

/** Words of the instruction at pc. */
// @ts-ignore: decorator
@inline
function instrWords(op: i32, pc: usize): usize {
  if (op == OP_CONST) return 3;
  if (op <= OP_ISINF) return 3;
  if (op <= OP_NORMDIFF) return 4;
  if (op == OP_CLIP) return 5;
  if (op == OP_LINSCALE) return 11;
  if (op == OP_IF) return 5;
  if (op == OP_MEDIAN) {
    const cnt = <usize>load<i32>(pc, 8);
    return 4 + cnt + 2 * <usize>load<i32>(pc + 12 + (cnt << 2));
  }
  if (op <= OP_LAST) return 3 + <usize>load<i32>(pc, 8);
  return 3; // copy
}

/**
 * Runs the encoded program at `code` over n values: inputTable holds nInputs u32 pointers to the
 * input arrays, `out` receives the n results; scratch has vmScratchBytes(code) bytes.
 */
export function vmRun(code: usize, inputTable: usize, out: usize, n: i32, scratch: usize): void {
  if (load<i32>(code) != MAGIC) unreachable();
  const nIn = load<i32>(code, 4);
  const nSlots = load<i32>(code, 8);
  const nInstr = load<i32>(code, 12);
  const outId = nIn + nSlots;
  const ptrs = scratch;
  const argp = ptrs + tableBytes(code);
  const keys = argp + argBytes(code);
  const slots = keys + (argBytes(code) << 2);
  const slotBytes = <usize>BLOCK << 2;
  for (let s = 0; s < nSlots; s++) store<u32>(ptrs + (<usize>(nIn + s) << 2), <u32>(slots + <usize>s * slotBytes));
  // Constants other than the output have slots of their own: fill them once.
  let pc = code + HEADER;
  for (let k = 0; k < nInstr; k++) {
    const op = load<i32>(pc);
    if (op == OP_CONST) {
      const dst = load<i32>(pc, 4);
      if (dst != outId) fill(<usize>load<u32>(ptrs + (<usize>dst << 2)), reinterpret<f32>(load<i32>(pc, 8)), slotBytes);
    }
    pc += instrWords(op, pc) << 2;
  }
  for (let off = 0; off < n; off += BLOCK) {
    const m = min(BLOCK, n - off);
    const nb = (<usize>((m + 3) & ~3)) << 2;
    const byteOff = <usize>off << 2;
    for (let k = 0; k < nIn; k++) {
      store<u32>(ptrs + (<usize>k << 2), <u32>(<usize>load<u32>(inputTable + (<usize>k << 2)) + byteOff));
    }
    store<u32>(ptrs + (<usize>outId << 2), <u32>(out + byteOff));
    pc = code + HEADER;
    for (let k = 0; k < nInstr; k++) {
      const op = load<i32>(pc);
      const d = <usize>load<u32>(ptrs + (<usize>load<i32>(pc, 4) << 2));
      if (op == OP_CONST) {
        if (load<i32>(pc, 4) == outId) fill(d, reinterpret<f32>(load<i32>(pc, 8)), nb);
      } else if (op <= OP_ISINF) {
        const a = <usize>load<u32>(ptrs + (<usize>load<i32>(pc, 8) << 2));
        if (op >= OP_EXP && op <= OP_ATANH) scalarUnary(op, a, d, nb);
        else simdUnary(op, a, d, nb);
      } else if (op <= OP_NORMDIFF) {
        const a = <usize>load<u32>(ptrs + (<usize>load<i32>(pc, 8) << 2));
        const b = <usize>load<u32>(ptrs + (<usize>load<i32>(pc, 12) << 2));
        if (op >= OP_POW && op <= OP_LOG) scalarBinary(op, a, b, d, nb);
        else simdBinary(op, a, b, d, nb);
      } else if (op == OP_CLIP) {
        const a = <usize>load<u32>(ptrs + (<usize>load<i32>(pc, 8) << 2));
        clip(a, d, nb, load<f32>(pc, 12), load<f32>(pc, 16));
      } else if (op == OP_LINSCALE) {
        const a = <usize>load<u32>(ptrs + (<usize>load<i32>(pc, 8) << 2));
        linscale(a, d, nb, load<f64>(pc, 12), load<f64>(pc, 20), load<f64>(pc, 28), load<f64>(pc, 36));
      } else if (op == OP_IF) {
        const c = <usize>load<u32>(ptrs + (<usize>load<i32>(pc, 8) << 2));
        const t = <usize>load<u32>(ptrs + (<usize>load<i32>(pc, 12) << 2));
        const f = <usize>load<u32>(ptrs + (<usize>load<i32>(pc, 16) << 2));
        select(c, t, f, d, nb);
      } else if (op <= OP_LAST) {
        const cnt = load<i32>(pc, 8);
        for (let j = 0; j < cnt; j++) {
          const id = load<i32>(pc + 12 + (<usize>j << 2));
          store<u32>(argp + (<usize>j << 2), load<u32>(ptrs + (<usize>id << 2)));
        }
        if (op == OP_MEAN || op == OP_SUM || op == OP_SD || op == OP_VARIANCE) moments(op, d, argp, cnt, nb);
        else if (op == OP_PRODUCT) product(d, argp, cnt, nb);
        else if (op == OP_MIN || op == OP_MAX) extreme(op, d, argp, cnt, nb);
        else if (op == OP_MEDIAN) {
          const np = pc + 12 + (<usize>cnt << 2);
          median(d, argp, cnt, np + 4, load<i32>(np), keys, nb);
        } else if (op == OP_COUNT) countValid(d, argp, cnt, nb);
        else firstLast(op, d, argp, cnt, nb);
      } else if (op == OP_COPY) {
        copy(<usize>load<u32>(ptrs + (<usize>load<i32>(pc, 8) << 2)), d, nb);
      } else unreachable();
      pc += instrWords(op, pc) << 2;
    }
  }
}

// Double-precision sin, cos and tan (exact argument reduction, with the tables of this module's data),
// for modules sharing this memory that cannot have data segments of their own (tier 1 imports them).
export function mathSin(x: f64): f64 {
  return Math.sin(x);
}
export function mathCos(x: f64): f64 {
  return Math.cos(x);
}
export function mathTan(x: f64): f64 {
  return Math.tan(x);
}
