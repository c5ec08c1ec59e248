// Logic and comparison processes: three-valued boolean logic (null = no-data = unknown), equality
// and ordering with the strict typing of the openEO definitions, and the value checks
// (is_nan, is_nodata, is_valid, is_infinite).
//
// Inside the child processes of cube processes, booleans travel as numbers (1 = true, 0 = false,
// NaN = no-data, which reaches the scalar forms as null). The logic processes therefore read a
// number as a boolean: 0 is false, any other number true, NaN no-data.
import { ApiError } from '../core/errors.js';
import { implementScalar, type ProcessImpl } from './implement.js';

const invalid = (process: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process, parameter, reason });

const kind = (v: unknown) => (v === undefined ? 'undefined' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`);

/** A boolean argument as true / false / null (no-data). */
function truth(v: unknown, process: string, parameter: string): boolean | null {
  if (v === true || v === false) return v;
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return v !== v ? null : v !== 0;
  throw invalid(process, parameter, `a boolean or no-data is expected, got ${kind(v)}`);
}

/** Whether a comparison operand has one of the types the comparison processes admit. */
const comparable = (v: unknown) => v === null || typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean';

function checkOperands(process: string, x: unknown, y: unknown): void {
  if (!comparable(x)) throw invalid(process, 'x', `a number, boolean, string or no-data is expected, got ${kind(x)}`);
  if (!comparable(y)) throw invalid(process, 'y', `a number, boolean, string or no-data is expected, got ${kind(y)}`);
}

/**
 * Strict equality of two non-null operands of any type: numbers (optionally within `delta`),
 * strings (optionally ignoring case), booleans; operands of different types are never equal.
 * Anything else (arrays, objects) is equal only to itself.
 */
function same(x: unknown, y: unknown, delta: unknown, caseSensitive: unknown): boolean {
  if (typeof x === 'number') {
    if (typeof y !== 'number') return false;
    if (x === y) return true;
    return typeof delta === 'number' && Math.abs(x - y) <= delta;
  }
  if (typeof x === 'string') {
    if (typeof y !== 'string') return false;
    if (x === y) return true;
    return caseSensitive === false && x.toLowerCase() === y.toLowerCase();
  }
  return x === y;
}

/** eq without the type check of its operands (also used by gte/lte and between). */
function equal(x: unknown, y: unknown, delta: unknown, caseSensitive: unknown): boolean | null {
  if (x === null || y === null || x === undefined || y === undefined) return null;
  return same(x, y, delta, caseSensitive);
}

// The orderings without the operand type check: null for no-data, the IEEE comparison for two
// numbers (false with NaN), otherwise false -- except that gte/lte are true for equal operands.
function greater(x: unknown, y: unknown): boolean | null {
  if (typeof x === 'number' && typeof y === 'number') return x > y;
  return x === null || y === null || x === undefined || y === undefined ? null : false;
}
function less(x: unknown, y: unknown): boolean | null {
  if (typeof x === 'number' && typeof y === 'number') return x < y;
  return x === null || y === null || x === undefined || y === undefined ? null : false;
}
function greaterOrEqual(x: unknown, y: unknown): boolean | null {
  if (typeof x === 'number' && typeof y === 'number') return x >= y;
  return equal(x, y, null, true);
}
function lessOrEqual(x: unknown, y: unknown): boolean | null {
  if (typeof x === 'number' && typeof y === 'number') return x <= y;
  return equal(x, y, null, true);
}

/** Three-valued AND of values already read as booleans. */
function and3(x: boolean | null, y: boolean | null): boolean | null {
  if (x === false || y === false) return false;
  return x === null || y === null ? null : true;
}

export const processes: ProcessImpl[] = [
  implementScalar('and', (a) => {
    const x = truth(a.x, 'and', 'x');
    if (x === false) return false;
    const y = truth(a.y, 'and', 'y');
    if (y === false) return false;
    return x === null || y === null ? null : true;
  }),

  implementScalar('or', (a) => {
    const x = truth(a.x, 'or', 'x');
    if (x === true) return true;
    const y = truth(a.y, 'or', 'y');
    if (y === true) return true;
    return x === null || y === null ? null : false;
  }),

  implementScalar('xor', (a) => {
    const x = truth(a.x, 'xor', 'x');
    const y = truth(a.y, 'xor', 'y');
    return x === null || y === null ? null : x !== y;
  }),

  implementScalar('not', (a) => {
    const x = truth(a.x, 'not', 'x');
    return x === null ? null : !x;
  }),

  implementScalar('if', (a) => {
    const v = a.value;
    return v === true || (typeof v === 'number' && v !== 0 && v === v) ? a.accept : a.reject;
  }),

  implementScalar('between', (a) => {
    const x = a.x;
    const min = a.min;
    const max = a.max;
    if (x === null || x === undefined) return null;
    if (typeof x === 'number' && typeof min === 'number' && typeof max === 'number') {
      if (min > max) return false;
      return x >= min && (a.exclude_max === true ? x < max : x <= max);
    }
    if (typeof min === 'number' && typeof max === 'number' && min > max) return false;
    return and3(greaterOrEqual(x, min), a.exclude_max === true ? less(x, max) : lessOrEqual(x, max));
  }),

  implementScalar('eq', (a) => {
    const x = a.x;
    const y = a.y;
    if (typeof x === 'number' && typeof y === 'number' && a.delta === null) return x === y;
    checkOperands('eq', x, y);
    return equal(x, y, a.delta, a.case_sensitive);
  }),

  implementScalar('neq', (a) => {
    const x = a.x;
    const y = a.y;
    if (typeof x === 'number' && typeof y === 'number' && a.delta === null) return x !== y;
    checkOperands('neq', x, y);
    const e = equal(x, y, a.delta, a.case_sensitive);
    return e === null ? null : !e;
  }),

  implementScalar('gt', (a) => {
    const x = a.x;
    const y = a.y;
    if (typeof x === 'number' && typeof y === 'number') return x > y;
    checkOperands('gt', x, y);
    return greater(x, y);
  }),

  implementScalar('gte', (a) => {
    const x = a.x;
    const y = a.y;
    if (typeof x === 'number' && typeof y === 'number') return x >= y;
    checkOperands('gte', x, y);
    return greaterOrEqual(x, y);
  }),

  implementScalar('lt', (a) => {
    const x = a.x;
    const y = a.y;
    if (typeof x === 'number' && typeof y === 'number') return x < y;
    checkOperands('lt', x, y);
    return less(x, y);
  }),

  implementScalar('lte', (a) => {
    const x = a.x;
    const y = a.y;
    if (typeof x === 'number' && typeof y === 'number') return x <= y;
    checkOperands('lte', x, y);
    return lessOrEqual(x, y);
  }),

  implementScalar('is_nan', (a) => {
    const x = a.x;
    return typeof x === 'number' && x !== x;
  }),

  implementScalar('is_nodata', (a) => a.x === null || a.x === undefined),

  implementScalar('is_valid', (a) => {
    const x = a.x;
    if (typeof x === 'number') return x - x === 0; // false for NaN and both infinities
    return x !== null && x !== undefined;
  }),

  implementScalar('is_infinite', (a) => {
    const x = a.x;
    return x === Infinity || x === -Infinity;
  }),
];
