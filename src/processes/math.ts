// Arithmetic, rounding, trigonometric, exponential and constant processes on plain numbers.
// Every process here calls no child process, so each is a synchronous scalar form that the
// evaluator lifts over pixel vectors. Hot paths test `typeof v === 'number'` first and fall back to
// one shared slow path for no-data (null in, null out) and for values that are not numbers.
import { ApiError } from '../core/errors.js';
import { implementScalar, type ProcessImpl } from './implement.js';
import { ProcessException } from '../core/errors.js';

// ---------------------------------------------------------------------------------------------
// Slow paths (never taken for two numbers)

const X = ['x'] as const;
const XY = ['x', 'y'] as const;
const P = ['p'] as const;
const X_BASE = ['x', 'base'] as const;
const BASE_P = ['base', 'p'] as const;
const Y_X = ['y', 'x'] as const;

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`;
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

function invalid(id: string, name: string, v: unknown, expected = 'a number or null (no-data)'): ApiError {
  return new ApiError('ProcessParameterInvalid', { process: id, parameter: name, reason: `expected ${expected}, got ${describe(v)}` });
}

/**
 * Called when some argument among `names` is not a number: no-data (null) if every such argument is
 * null, otherwise a ProcessParameterInvalid for the first one that is neither number nor null.
 */
function noData(id: string, a: Record<string, any>, names: readonly string[]): null {
  for (let i = 0; i < names.length; i++) {
    const v = a[names[i]];
    if (typeof v !== 'number' && v !== null) throw invalid(id, names[i], v);
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// round: half to even at `p` decimals

/** 10^i as the nearest double (exact up to 10^22). */
const POW10: number[] = Array.from({ length: 309 }, (_, i) => Number(`1e${i}`));
const TWO_52 = 4503599627370496;

/**
 * Whether the halfway decimal (n + 1/2)·10^-p (nearest double `h`) is the shortest decimal that reads
 * back as the float32 `a`, ties going to the decimal nearest to `a` (`a` is within 0.05·10^-p of it
 * when called): it reads back as `a`, and neither neighbouring multiple of 10^-p does (no decimal
 * with fewer digits lies between them, and the values reading back as `a` form an interval).
 */
function halfwayAsFloat32(a: number, h: number, n: number, p: number): boolean {
  if (Math.fround(h) !== a) return false;
  const lo = p >= 0 ? n / POW10[p] : n * POW10[-p];
  const hi = p >= 0 ? (n + 1) / POW10[p] : (n + 1) * POW10[-p];
  return Math.fround(lo) !== a && Math.fround(hi) !== a;
}

/**
 * Rounds x to a multiple of 10^-p, halfway cases to the even multiple. Halfway means halfway in
 * decimal: x is halfway when the decimal (n + 1/2)·10^-p is the shortest decimal that reads back as
 * x, as a double or, when x is a float32 (as pixel values are), as a float32. So 0.35 (really 0.34999999999999997…) and
 * float32(0.35) = 0.3499999940395355 both round to 0.4 at p = 1, as the decimal 0.35 does.
 */
function roundTo(x: number, p: number): number {
  if (x === 0 || x - x !== 0) return x; // zero, NaN, ±Infinity
  const a = x < 0 ? -x : x;
  let scaled: number;
  if (p === 0) scaled = a;
  else if (p > 0) {
    if (p > 308) return x;
    scaled = a * POW10[p];
  } else {
    if (p < -308) return 0;
    scaled = a / POW10[-p];
  }
  if (scaled >= TWO_52) return x; // no digits below the precision (also overflow to Infinity)
  let n = Math.floor(scaled);
  const diff = scaled - n - 0.5;
  // Farther than `tol` from one half, the scaled value decides; nearer, compare with the halfway decimal.
  const f32 = Math.fround(a) === a;
  const tol = f32 ? Math.min(scaled * 1.2e-7, 0.05) : scaled * 1e-15;
  if (diff > tol) n += 1;
  else if (diff >= -tol) {
    // the double nearest to (n + 1/2)·10^-p (exact operands: one correctly rounded operation)
    const h = p >= 0 ? (n + 0.5) / POW10[p] : (n + 0.5) * POW10[-p];
    if (h === a || (f32 && halfwayAsFloat32(a, h, n, p))) n += n % 2;
    else if (a > h) n += 1;
  }
  if (n === 0) return 0;
  const r = p === 0 ? n : p > 0 ? n / POW10[p] : n * POW10[-p];
  return x < 0 ? -r : r;
}

// ---------------------------------------------------------------------------------------------
// Bounds of clip and linear_scale_range: numbers; null (a no-data pixel) gives null.

function boundsNoData(id: string, a: Record<string, any>, names: readonly string[]): null {
  for (let i = 0; i < names.length; i++) {
    const v = a[names[i]];
    if (typeof v !== 'number' && v !== null) throw invalid(id, names[i], v, names[i] === 'x' ? undefined : 'a number');
  }
  return null; // called only when some argument is not a number: here, one is null
}

const CLIP_ARGS = ['x', 'min', 'max'] as const;
const LSR_ARGS = ['x', 'inputMin', 'inputMax', 'outputMin', 'outputMax'] as const;

// ---------------------------------------------------------------------------------------------

export const processes: ProcessImpl[] = [
  // --- arithmetic ---------------------------------------------------------------------------
  implementScalar('absolute', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.abs(x) : noData('absolute', a, X);
  }),
  implementScalar('add', (a) => {
    const x = a.x;
    const y = a.y;
    return typeof x === 'number' && typeof y === 'number' ? x + y : noData('add', a, XY);
  }),
  implementScalar('subtract', (a) => {
    const x = a.x;
    const y = a.y;
    return typeof x === 'number' && typeof y === 'number' ? x - y : noData('subtract', a, XY);
  }),
  implementScalar('multiply', (a) => {
    const x = a.x;
    const y = a.y;
    return typeof x === 'number' && typeof y === 'number' ? x * y : noData('multiply', a, XY);
  }),
  implementScalar('divide', (a) => {
    const x = a.x;
    const y = a.y;
    return typeof x === 'number' && typeof y === 'number' ? x / y : noData('divide', a, XY);
  }),
  implementScalar('mod', (a) => {
    const x = a.x;
    const y = a.y;
    if (typeof x !== 'number' || typeof y !== 'number') return noData('mod', a, XY);
    if (y === 0) return x > 0 ? Infinity : x < 0 ? -Infinity : NaN;
    let r = x % y;
    if (r !== 0 && r < 0 !== y < 0) r += y;
    return r === 0 ? 0 : r;
  }),
  implementScalar('normalized_difference', (a) => {
    const x = a.x;
    const y = a.y;
    return typeof x === 'number' && typeof y === 'number' ? (x - y) / (x + y) : noData('normalized_difference', a, XY);
  }),
  implementScalar('clip', (a) => {
    const x = a.x;
    const min = a.min;
    const max = a.max;
    if (typeof min !== 'number' || typeof max !== 'number') return boundsNoData('clip', a, CLIP_ARGS);
    if (min > max) throw new ProcessException('MinMaxSwapped', `the lower limit ${min} is greater than the upper limit ${max}`);
    if (typeof x !== 'number') return noData('clip', a, X);
    return x < min ? min : x > max ? max : x;
  }),
  implementScalar('linear_scale_range', (a) => {
    const x = a.x;
    const lo = a.inputMin;
    const hi = a.inputMax;
    const outLo = a.outputMin;
    const outHi = a.outputMax;
    if (typeof x !== 'number' || typeof lo !== 'number' || typeof hi !== 'number' || typeof outLo !== 'number' || typeof outHi !== 'number') {
      return boundsNoData('linear_scale_range', a, LSR_ARGS);
    }
    let c = x;
    if (lo <= hi) c = c < lo ? lo : c > hi ? hi : c;
    else c = c < hi ? hi : c > lo ? lo : c;
    return ((c - lo) / (hi - lo)) * (outHi - outLo) + outLo;
  }),

  // --- rounding -------------------------------------------------------------------------------
  implementScalar('ceil', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.ceil(x) + 0 : noData('ceil', a, X);
  }),
  implementScalar('floor', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.floor(x) + 0 : noData('floor', a, X);
  }),
  implementScalar('int', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.trunc(x) + 0 : noData('int', a, X);
  }),
  implementScalar('round', (a) => {
    const x = a.x;
    const p = a.p;
    if (typeof p !== 'number' || !Number.isInteger(p)) throw invalid('round', 'p', p, 'an integer');
    return typeof x === 'number' ? roundTo(x, p) : noData('round', a, X);
  }),
  implementScalar('sgn', (a) => {
    const x = a.x;
    if (typeof x !== 'number') return noData('sgn', a, X);
    return x > 0 ? 1 : x < 0 ? -1 : x === 0 ? 0 : NaN;
  }),

  // --- exponential and logarithmic ------------------------------------------------------------
  implementScalar('exp', (a) => {
    const p = a.p;
    return typeof p === 'number' ? Math.exp(p) : noData('exp', a, P);
  }),
  implementScalar('ln', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.log(x) : noData('ln', a, X);
  }),
  implementScalar('log', (a) => {
    const x = a.x;
    const base = a.base;
    if (typeof x !== 'number' || typeof base !== 'number') return noData('log', a, X_BASE);
    if (base === 10) return Math.log10(x);
    if (base === 2) return Math.log2(x);
    return Math.log(x) / Math.log(base);
  }),
  implementScalar('power', (a) => {
    const base = a.base;
    const p = a.p;
    if (typeof base !== 'number' || typeof p !== 'number') return noData('power', a, BASE_P);
    const r = Math.pow(base, p);
    // JS gives NaN where IEEE 754 pow gives 1: pow(1, NaN | ±Infinity), pow(-1, ±Infinity).
    if (r !== r && (base === 1 || (base === -1 && (p === Infinity || p === -Infinity)))) return 1;
    return r;
  }),
  implementScalar('sqrt', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.sqrt(x) : noData('sqrt', a, X);
  }),

  // --- trigonometric --------------------------------------------------------------------------
  implementScalar('sin', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.sin(x) : noData('sin', a, X);
  }),
  implementScalar('cos', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.cos(x) : noData('cos', a, X);
  }),
  implementScalar('tan', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.tan(x) : noData('tan', a, X);
  }),
  implementScalar('arcsin', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.asin(x) : noData('arcsin', a, X);
  }),
  implementScalar('arccos', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.acos(x) : noData('arccos', a, X);
  }),
  implementScalar('arctan', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.atan(x) : noData('arctan', a, X);
  }),
  implementScalar('arctan2', (a) => {
    const y = a.y;
    const x = a.x;
    return typeof x === 'number' && typeof y === 'number' ? Math.atan2(y, x) : noData('arctan2', a, Y_X);
  }),
  implementScalar('sinh', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.sinh(x) : noData('sinh', a, X);
  }),
  implementScalar('cosh', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.cosh(x) : noData('cosh', a, X);
  }),
  implementScalar('tanh', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.tanh(x) : noData('tanh', a, X);
  }),
  implementScalar('arsinh', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.asinh(x) : noData('arsinh', a, X);
  }),
  implementScalar('arcosh', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.acosh(x) : noData('arcosh', a, X);
  }),
  implementScalar('artanh', (a) => {
    const x = a.x;
    return typeof x === 'number' ? Math.atanh(x) : noData('artanh', a, X);
  }),

  // --- constants ------------------------------------------------------------------------------
  implementScalar('constant', (a) => a.x),
  implementScalar('e', () => Math.E),
  implementScalar('pi', () => Math.PI),
  implementScalar('nan', () => NaN),
];
