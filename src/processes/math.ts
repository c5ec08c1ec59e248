// Arithmetic, rounding, trigonometric, exponential and constant processes on plain numbers.
// Every process here calls no child process, so each is a synchronous scalar form that the
// evaluator lifts over pixel vectors. Hot paths test `typeof v === 'number'` first and fall back to
// one shared slow path for no-data (null in, null out) and for values that are not numbers.
import { ApiError } from '../core/errors.js';
import { defineScalar } from './define.js';
import { type ProcessDef } from '../core/process.js';
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

const NODATA = 'No-data (null) gives null.';
const NODATA_ANY = 'If either argument is no-data (null), the result is null.';
const IEEE = 'Results follow IEEE 754 double arithmetic (NaN and ±Infinity pass through).';

export const processes: ProcessDef[] = [
  // --- arithmetic ---------------------------------------------------------------------------
  defineScalar(
    'absolute',
    {
      summary: 'Absolute value',
      description: `Returns x without its sign: x for x ≥ 0, -x otherwise. ${NODATA}`,
      parameters: { x: 'The number.' },
      returns: 'The magnitude of x (never negative), or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.abs(x) : noData('absolute', a, X);
    },
  ),
  defineScalar(
    'add',
    {
      summary: 'Sum of two numbers',
      description: `Returns x + y. ${NODATA_ANY} ${IEEE}`,
      parameters: { x: 'First term of the sum.', y: 'Second term of the sum.' },
      returns: 'x plus y, or null.',
    },
    (a) => {
      const x = a.x;
      const y = a.y;
      return typeof x === 'number' && typeof y === 'number' ? x + y : noData('add', a, XY);
    },
  ),
  defineScalar(
    'subtract',
    {
      summary: 'Difference of two numbers',
      description: `Returns x - y. ${NODATA_ANY} ${IEEE}`,
      parameters: { x: 'The number to subtract from.', y: 'The number subtracted from x.' },
      returns: 'x minus y, or null.',
    },
    (a) => {
      const x = a.x;
      const y = a.y;
      return typeof x === 'number' && typeof y === 'number' ? x - y : noData('subtract', a, XY);
    },
  ),
  defineScalar(
    'multiply',
    {
      summary: 'Product of two numbers',
      description: `Returns x × y. ${NODATA_ANY} ${IEEE}`,
      parameters: { x: 'First factor.', y: 'Second factor.' },
      returns: 'x times y, or null.',
      exceptions: { MultiplicandMissing: 'Both factors x and y must be given.' },
    },
    (a) => {
      const x = a.x;
      const y = a.y;
      return typeof x === 'number' && typeof y === 'number' ? x * y : noData('multiply', a, XY);
    },
  ),
  defineScalar(
    'divide',
    {
      summary: 'Quotient of two numbers',
      description:
        `Returns x / y. ${NODATA_ANY} Division by zero follows IEEE 754 and does not fail: ` +
        '+Infinity for x > 0, -Infinity for x < 0 (the other way round for a divisor of -0) and NaN for x = 0.',
      parameters: { x: 'The numerator.', y: 'The denominator.' },
      returns: 'x divided by y, or null.',
      exceptions: { DivisionByZero: 'Dividing by zero is not possible here.' },
    },
    (a) => {
      const x = a.x;
      const y = a.y;
      return typeof x === 'number' && typeof y === 'number' ? x / y : noData('divide', a, XY);
    },
  ),
  defineScalar(
    'mod',
    {
      summary: 'Floored remainder of a division',
      description:
        `Returns the remainder of x / y with the sign of the divisor y (floored modulo, as in Python), ` +
        `for integers and decimals alike, e.g. mod(-27, 5) = 3. ${NODATA_ANY} ` +
        'For y = 0 the result is +Infinity for x > 0, -Infinity for x < 0 and NaN for x = 0.',
      parameters: { x: 'The dividend.', y: 'The divisor; its sign is the sign of the result.' },
      returns: 'The remainder, or null.',
      exceptions: { DivisionByZero: 'Taking a remainder of a division by zero is not possible here.' },
    },
    (a) => {
      const x = a.x;
      const y = a.y;
      if (typeof x !== 'number' || typeof y !== 'number') return noData('mod', a, XY);
      if (y === 0) return x > 0 ? Infinity : x < 0 ? -Infinity : NaN;
      let r = x % y;
      if (r !== 0 && r < 0 !== y < 0) r += y;
      return r === 0 ? 0 : r;
    },
  ),
  defineScalar(
    'normalized_difference',
    {
      summary: 'Normalized difference of two values',
      description:
        'Returns (x - y) / (x + y), the ratio behind indices such as NDVI (x: near infrared, y: red). ' +
        'A no-data (null) value in either gives null; x + y = 0 gives ±Infinity or, for x = y = 0, NaN.',
      parameters: { x: 'Value of the first band.', y: 'Value of the second band.' },
      returns: 'The normalized difference, within [-1, 1] for non-negative inputs.',
    },
    (a) => {
      const x = a.x;
      const y = a.y;
      return typeof x === 'number' && typeof y === 'number' ? (x - y) / (x + y) : noData('normalized_difference', a, XY);
    },
  ),
  defineScalar(
    'clip',
    {
      summary: 'Limit a number to a range',
      description:
        `Returns min for x < min, max for x > max and x otherwise. ${NODATA} NaN stays NaN. ` +
        'Fails with MinMaxSwapped when min is greater than max.',
      parameters: { x: 'The number to limit.', min: 'Lower limit of the range.', max: 'Upper limit of the range.' },
      returns: 'x limited to [min, max], or null.',
      exceptions: { MinMaxSwapped: 'The lower limit min must not be greater than the upper limit max.' },
    },
    (a) => {
      const x = a.x;
      const min = a.min;
      const max = a.max;
      if (typeof min !== 'number' || typeof max !== 'number') return boundsNoData('clip', a, CLIP_ARGS);
      if (min > max) throw new ProcessException('MinMaxSwapped', `the lower limit ${min} is greater than the upper limit ${max}`);
      if (typeof x !== 'number') return noData('clip', a, X);
      return x < min ? min : x > max ? max : x;
    },
  ),
  defineScalar(
    'linear_scale_range',
    {
      summary: 'Map a number from one range to another',
      description:
        'Limits x to the input range [inputMin, inputMax], then maps it linearly so that inputMin becomes outputMin ' +
        'and inputMax becomes outputMax: (x - inputMin) / (inputMax - inputMin) × (outputMax - outputMin) + outputMin. ' +
        `The output therefore stays within the output range; inverted ranges are allowed. ${NODATA} ` +
        'An empty input range (inputMin = inputMax) gives NaN.',
      parameters: {
        x: 'The number to map; values outside the input range are limited to it first.',
        inputMin: 'The input value that maps to outputMin.',
        inputMax: 'The input value that maps to outputMax.',
        outputMin: 'The output value for inputMin (default 0).',
        outputMax: 'The output value for inputMax (default 1).',
      },
      returns: 'The mapped number, or null.',
    },
    (a) => {
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
    },
  ),

  // --- rounding -------------------------------------------------------------------------------
  defineScalar(
    'ceil',
    {
      summary: 'Round up to an integer',
      description: `Returns the smallest integer not less than x, e.g. 3 for 2.1 and -2 for -2.9. ${NODATA} NaN and ±Infinity are returned unchanged.`,
      parameters: { x: 'The number to round up.' },
      returns: 'The integer, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.ceil(x) + 0 : noData('ceil', a, X);
    },
  ),
  defineScalar(
    'floor',
    {
      summary: 'Round down to an integer',
      description:
        `Returns the greatest integer not greater than x, e.g. 2 for 2.9 and -3 for -2.1 (unlike int, which drops the fraction). ` +
        `${NODATA} NaN and ±Infinity are returned unchanged.`,
      parameters: { x: 'The number to round down.' },
      returns: 'The integer, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.floor(x) + 0 : noData('floor', a, X);
    },
  ),
  defineScalar(
    'int',
    {
      summary: 'Integer part of a number',
      description:
        `Drops the fractional part of x, rounding toward zero: 2 for 2.9 and -2 for -2.9 (unlike floor). ` +
        `${NODATA} NaN and ±Infinity are returned unchanged.`,
      parameters: { x: 'The number to truncate.' },
      returns: 'The integer part, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.trunc(x) + 0 : noData('int', a, X);
    },
  ),
  defineScalar(
    'round',
    {
      summary: 'Round to a number of decimals',
      description:
        'Rounds x to the nearest multiple of 10^-p; values exactly halfway go to the even neighbour ' +
        '(banker\'s rounding: -2.5 gives -2, 0.35 with p = 1 gives 0.4). Halfway is judged on the decimal value of x, ' +
        `and negative p rounds to tens, hundreds, and so on. ${NODATA} NaN and ±Infinity are returned unchanged.`,
      parameters: {
        x: 'The number to round.',
        p: 'Decimals to keep (default 0); a negative value rounds left of the decimal point, -2 to hundreds.',
      },
      returns: 'The rounded number, or null.',
    },
    (a) => {
      const x = a.x;
      const p = a.p;
      if (typeof p !== 'number' || !Number.isInteger(p)) throw invalid('round', 'p', p, 'an integer');
      return typeof x === 'number' ? roundTo(x, p) : noData('round', a, X);
    },
  ),
  defineScalar(
    'sgn',
    {
      summary: 'Sign of a number',
      description: `Returns 1 for positive x, -1 for negative x and 0 for zero. ${NODATA} NaN stays NaN.`,
      parameters: { x: 'The number whose sign is wanted.' },
      returns: '-1, 0 or 1, or null.',
    },
    (a) => {
      const x = a.x;
      if (typeof x !== 'number') return noData('sgn', a, X);
      return x > 0 ? 1 : x < 0 ? -1 : x === 0 ? 0 : NaN;
    },
  ),

  // --- exponential and logarithmic ------------------------------------------------------------
  defineScalar(
    'exp',
    {
      summary: 'e to the power of p',
      description: `Returns Euler's number raised to the power p. ${NODATA}`,
      parameters: { p: 'The exponent.' },
      returns: 'e^p (positive, or 0 on underflow), or null.',
    },
    (a) => {
      const p = a.p;
      return typeof p === 'number' ? Math.exp(p) : noData('exp', a, P);
    },
  ),
  defineScalar(
    'ln',
    {
      summary: 'Natural logarithm',
      description: `Returns the logarithm of x to base e. ${NODATA} ln(0) is -Infinity and negative x gives NaN.`,
      parameters: { x: 'A non-negative number.' },
      returns: 'The natural logarithm, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.log(x) : noData('ln', a, X);
    },
  ),
  defineScalar(
    'log',
    {
      summary: 'Logarithm to a base',
      description:
        `Returns the logarithm of x to the given base, i.e. the power the base must be raised to to give x. ${NODATA_ANY} ` +
        'x = 0 gives -Infinity (for a base above 1), negative x or base gives NaN, and base 1 gives ±Infinity or NaN.',
      parameters: { x: 'A non-negative number.', base: 'The base of the logarithm.' },
      returns: 'The logarithm, or null.',
    },
    (a) => {
      const x = a.x;
      const base = a.base;
      if (typeof x !== 'number' || typeof base !== 'number') return noData('log', a, X_BASE);
      if (base === 10) return Math.log10(x);
      if (base === 2) return Math.log2(x);
      return Math.log(x) / Math.log(base);
    },
  ),
  defineScalar(
    'power',
    {
      summary: 'A base raised to a power',
      description:
        `Returns base raised to the power p; a negative base with a fractional exponent gives NaN. ${NODATA_ANY} ` +
        'As in IEEE 754 pow, any base to the power 0 is 1 and 1 to any power is 1.',
      parameters: { base: 'The base.', p: 'The exponent.' },
      returns: 'base^p, or null.',
    },
    (a) => {
      const base = a.base;
      const p = a.p;
      if (typeof base !== 'number' || typeof p !== 'number') return noData('power', a, BASE_P);
      const r = Math.pow(base, p);
      // JS gives NaN where IEEE 754 pow gives 1: pow(1, NaN | ±Infinity), pow(-1, ±Infinity).
      if (r !== r && (base === 1 || (base === -1 && (p === Infinity || p === -Infinity)))) return 1;
      return r;
    },
  ),
  defineScalar(
    'sqrt',
    {
      summary: 'Square root',
      description: `Returns the non-negative number whose square is x. ${NODATA} Negative x gives NaN.`,
      parameters: { x: 'The number to take the square root of.' },
      returns: 'The square root, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.sqrt(x) : noData('sqrt', a, X);
    },
  ),

  // --- trigonometric --------------------------------------------------------------------------
  defineScalar(
    'sin',
    {
      summary: 'Sine',
      description: `Returns the sine of the angle x given in radians. ${NODATA}`,
      parameters: { x: 'Angle in radians.' },
      returns: 'The sine, in [-1, 1], or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.sin(x) : noData('sin', a, X);
    },
  ),
  defineScalar(
    'cos',
    {
      summary: 'Cosine',
      description: `Returns the cosine of the angle x given in radians. ${NODATA}`,
      parameters: { x: 'Angle in radians.' },
      returns: 'The cosine, in [-1, 1], or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.cos(x) : noData('cos', a, X);
    },
  ),
  defineScalar(
    'tan',
    {
      summary: 'Tangent',
      description:
        `Returns the tangent (sine over cosine) of the angle x given in radians. ${NODATA} ` +
        'Near odd multiples of π/2 the result becomes very large in magnitude.',
      parameters: { x: 'Angle in radians.' },
      returns: 'The tangent, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.tan(x) : noData('tan', a, X);
    },
  ),
  defineScalar(
    'arcsin',
    {
      summary: 'Inverse sine',
      description: `Returns the angle in radians, in [-π/2, π/2], whose sine is x. ${NODATA} x outside [-1, 1] gives NaN.`,
      parameters: { x: 'A sine value in [-1, 1].' },
      returns: 'The angle in radians, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.asin(x) : noData('arcsin', a, X);
    },
  ),
  defineScalar(
    'arccos',
    {
      summary: 'Inverse cosine',
      description: `Returns the angle in radians, in [0, π], whose cosine is x. ${NODATA} x outside [-1, 1] gives NaN.`,
      parameters: { x: 'A cosine value in [-1, 1].' },
      returns: 'The angle in radians, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.acos(x) : noData('arccos', a, X);
    },
  ),
  defineScalar(
    'arctan',
    {
      summary: 'Inverse tangent',
      description: `Returns the angle in radians, in (-π/2, π/2), whose tangent is x. ${NODATA}`,
      parameters: { x: 'A tangent value.' },
      returns: 'The angle in radians, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.atan(x) : noData('arctan', a, X);
    },
  ),
  defineScalar(
    'arctan2',
    {
      summary: 'Angle of a point from two coordinates',
      description:
        'Returns the angle in radians, in [-π, π], between the positive x axis and the point (x, y): like arctan(y / x), ' +
        `but the signs of both arguments select the quadrant, and x = 0 is allowed. ${NODATA_ANY}`,
      parameters: { y: 'The y coordinate (numerator of y / x).', x: 'The x coordinate (denominator of y / x).' },
      returns: 'The angle in radians, or null.',
    },
    (a) => {
      const y = a.y;
      const x = a.x;
      return typeof x === 'number' && typeof y === 'number' ? Math.atan2(y, x) : noData('arctan2', a, Y_X);
    },
  ),
  defineScalar(
    'sinh',
    {
      summary: 'Hyperbolic sine',
      description: `Returns (e^x - e^-x) / 2. ${NODATA}`,
      parameters: { x: 'Hyperbolic angle.' },
      returns: 'The hyperbolic sine, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.sinh(x) : noData('sinh', a, X);
    },
  ),
  defineScalar(
    'cosh',
    {
      summary: 'Hyperbolic cosine',
      description: `Returns (e^x + e^-x) / 2, which is at least 1. ${NODATA}`,
      parameters: { x: 'Hyperbolic angle.' },
      returns: 'The hyperbolic cosine, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.cosh(x) : noData('cosh', a, X);
    },
  ),
  defineScalar(
    'tanh',
    {
      summary: 'Hyperbolic tangent',
      description: `Returns sinh(x) / cosh(x), which lies in (-1, 1) (reaching ±1 only by rounding for large |x|). ${NODATA}`,
      parameters: { x: 'Hyperbolic angle.' },
      returns: 'The hyperbolic tangent, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.tanh(x) : noData('tanh', a, X);
    },
  ),
  defineScalar(
    'arsinh',
    {
      summary: 'Inverse hyperbolic sine',
      description: `Returns the hyperbolic angle whose hyperbolic sine is x. ${NODATA}`,
      parameters: { x: 'Any number.' },
      returns: 'The hyperbolic angle, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.asinh(x) : noData('arsinh', a, X);
    },
  ),
  defineScalar(
    'arcosh',
    {
      summary: 'Inverse hyperbolic cosine',
      description: `Returns the non-negative hyperbolic angle whose hyperbolic cosine is x. ${NODATA} x below 1 gives NaN.`,
      parameters: { x: 'A number of at least 1.' },
      returns: 'The hyperbolic angle (≥ 0), or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.acosh(x) : noData('arcosh', a, X);
    },
  ),
  defineScalar(
    'artanh',
    {
      summary: 'Inverse hyperbolic tangent',
      description:
        `Returns the hyperbolic angle whose hyperbolic tangent is x. ${NODATA} ` +
        'x = 1 gives +Infinity, x = -1 gives -Infinity and x outside [-1, 1] gives NaN.',
      parameters: { x: 'A number between -1 and 1.' },
      returns: 'The hyperbolic angle, or null.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' ? Math.atanh(x) : noData('artanh', a, X);
    },
  ),

  // --- constants ------------------------------------------------------------------------------
  defineScalar(
    'constant',
    {
      summary: 'Name a fixed value',
      description: 'Returns its argument unchanged, whatever its type (null and labeled arrays included), so that one value can be referenced from several nodes.',
      parameters: { x: 'The value to pass on.' },
      returns: 'The value of x.',
    },
    (a) => a.x,
  ),
  defineScalar(
    'e',
    {
      summary: "Euler's number",
      description: 'Returns e ≈ 2.718281828459045, the base of the natural logarithm (ln(e) = 1).',
      parameters: {},
      returns: 'The number e.',
    },
    () => Math.E,
  ),
  defineScalar(
    'pi',
    {
      summary: 'The number π',
      description: "Returns π ≈ 3.141592653589793, a circle's circumference divided by its diameter.",
      parameters: {},
      returns: 'The number π.',
    },
    () => Math.PI,
  ),
  defineScalar(
    'nan',
    {
      summary: 'Not a number',
      description: 'Returns the IEEE 754 floating-point value NaN, which is neither a finite number nor an infinity. JSON cannot encode it, so a NaN result that leaves the back-end as JSON appears as null.',
      parameters: {},
      returns: 'NaN.',
    },
    () => NaN,
  ),
];
