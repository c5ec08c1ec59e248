// Logic and comparison processes: three-valued boolean logic (null = no-data = unknown), equality
// and ordering with the strict typing of the openEO definitions, and the value checks
// (is_nan, is_nodata, is_valid, is_infinite).
//
// Inside the child processes of cube processes, booleans travel as numbers (1 = true, 0 = false,
// NaN = no-data, which reaches the scalar forms as null). The logic processes therefore read a
// number as a boolean: 0 is false, any other number true, NaN no-data.
import { ApiError } from '../core/errors.js';
import { defineScalar } from './define.js';
import type { ProcessDef } from '../core/process.js';

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

const operands = { x: 'The first value to compare.', y: 'The second value to compare.' };

export const processes: ProcessDef[] = [
  defineScalar(
    'and',
    {
      summary: 'Logical AND',
      description:
        'True when both `x` and `y` are true, false as soon as one of them is false. When no-data is involved and the other value does not decide the outcome alone (true and no-data, or no-data twice), the result is no-data (`null`).',
      parameters: { x: 'First boolean operand, or no-data.', y: 'Second boolean operand, or no-data.' },
      returns: 'The conjunction of `x` and `y`, or `null` if it cannot be decided.',
    },
    (a) => {
      const x = truth(a.x, 'and', 'x');
      if (x === false) return false;
      const y = truth(a.y, 'and', 'y');
      if (y === false) return false;
      return x === null || y === null ? null : true;
    },
  ),

  defineScalar(
    'or',
    {
      summary: 'Logical OR',
      description:
        'True as soon as `x` or `y` is true, false when both are false. When no-data is involved and the other value does not decide the outcome alone (false and no-data, or no-data twice), the result is no-data (`null`).',
      parameters: { x: 'First boolean operand, or no-data.', y: 'Second boolean operand, or no-data.' },
      returns: 'The disjunction of `x` and `y`, or `null` if it cannot be decided.',
    },
    (a) => {
      const x = truth(a.x, 'or', 'x');
      if (x === true) return true;
      const y = truth(a.y, 'or', 'y');
      if (y === true) return true;
      return x === null || y === null ? null : false;
    },
  ),

  defineScalar(
    'xor',
    {
      summary: 'Logical exclusive OR',
      description:
        'True when exactly one of `x` and `y` is true, false when both are true or both are false. The outcome always depends on both operands, so no-data in either one gives no-data (`null`).',
      parameters: { x: 'First boolean operand, or no-data.', y: 'Second boolean operand, or no-data.' },
      returns: 'The exclusive disjunction of `x` and `y`, or `null` if an operand is no-data.',
    },
    (a) => {
      const x = truth(a.x, 'xor', 'x');
      const y = truth(a.y, 'xor', 'y');
      return x === null || y === null ? null : x !== y;
    },
  ),

  defineScalar(
    'not',
    {
      summary: 'Logical negation',
      description: 'Turns true into false and false into true. No-data (`null`) stays no-data.',
      parameters: { x: 'The boolean to negate, or no-data.' },
      returns: 'The negated boolean, or `null` for no-data.',
    },
    (a) => {
      const x = truth(a.x, 'not', 'x');
      return x === null ? null : !x;
    },
  ),

  defineScalar(
    'if',
    {
      summary: 'Choose between two values',
      description:
        'Gives `accept` when `value` is true and `reject` in every other case, including false and no-data. Without `reject` the result in those cases is no-data (`null`). Inside data cubes, where booleans are stored as numbers, a non-zero number counts as true.',
      parameters: {
        value: 'The condition deciding which value is returned.',
        accept: 'The result when the condition is true; any type.',
        reject: 'The result when the condition is false or no-data; any type, no-data if omitted.',
      },
      returns: 'Either `accept` or `reject`, unchanged.',
    },
    (a) => {
      const v = a.value;
      return v === true || (typeof v === 'number' && v !== 0 && v === v) ? a.accept : a.reject;
    },
  ),

  defineScalar(
    'between',
    {
      summary: 'Test whether a value lies in a range',
      description:
        'True if `x` is at least `min` and at most `max` (strictly below `max` when `exclude_max` is true), combined like `and(gte(x, min), lte(x, max))`. A no-data `x` gives no-data (`null`); NaN and values that are not numbers give false. If `min` is greater than `max` the range is empty and the result is false.',
      parameters: {
        x: 'The value to test; any type.',
        min: 'The lower bound, always included.',
        max: 'The upper bound, included unless `exclude_max` is true.',
        exclude_max: 'Whether `max` itself is outside the range (default false).',
      },
      returns: 'Whether `x` is in the range, or `null` if `x` is no-data.',
    },
    (a) => {
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
    },
  ),

  defineScalar(
    'eq',
    {
      summary: 'Test two values for equality',
      description:
        'True if `x` and `y` have the same type and value; a string, a boolean and a number are never equal to each other, while integers and decimals compare as numbers. Two numbers may differ by up to `delta`, and strings can be compared ignoring case. No-data in either operand gives no-data (`null`); NaN is equal to nothing, not even NaN. Date and time strings are compared as plain strings.',
      parameters: {
        ...operands,
        delta: 'For two numbers: the largest difference still counted as equal (none if null).',
        case_sensitive: 'For two strings: whether upper and lower case differ (default true).',
      },
      returns: 'Whether the operands are equal, or `null` if one is no-data.',
    },
    (a) => {
      const x = a.x;
      const y = a.y;
      if (typeof x === 'number' && typeof y === 'number' && a.delta === null) return x === y;
      checkOperands('eq', x, y);
      return equal(x, y, a.delta, a.case_sensitive);
    },
  ),

  defineScalar(
    'neq',
    {
      summary: 'Test two values for inequality',
      description:
        'The negation of `eq` with the same options: true if `x` and `y` differ in type or value (beyond `delta` for numbers, ignoring case if asked for strings). No-data in either operand gives no-data (`null`); NaN differs from every value, NaN included. Date and time strings are compared as plain strings.',
      parameters: {
        ...operands,
        delta: 'For two numbers: the largest difference still counted as equal (none if null).',
        case_sensitive: 'For two strings: whether upper and lower case differ (default true).',
      },
      returns: 'Whether the operands differ, or `null` if one is no-data.',
    },
    (a) => {
      const x = a.x;
      const y = a.y;
      if (typeof x === 'number' && typeof y === 'number' && a.delta === null) return x !== y;
      checkOperands('neq', x, y);
      const e = equal(x, y, a.delta, a.case_sensitive);
      return e === null ? null : !e;
    },
  ),

  defineScalar(
    'gt',
    {
      summary: 'Greater than',
      description:
        'True if the number `x` is strictly greater than the number `y`. No-data in either operand gives no-data (`null`); a comparison with NaN, or of operands that are not both numbers (strings, including dates and times, and booleans), gives false.',
      parameters: operands,
      returns: 'Whether `x` > `y`, or `null` if an operand is no-data.',
    },
    (a) => {
      const x = a.x;
      const y = a.y;
      if (typeof x === 'number' && typeof y === 'number') return x > y;
      checkOperands('gt', x, y);
      return greater(x, y);
    },
  ),

  defineScalar(
    'gte',
    {
      summary: 'Greater than or equal',
      description:
        'True if the number `x` is greater than or equal to the number `y`, or if the operands are equal in the sense of `eq` (so equal strings or booleans give true). No-data in either operand gives no-data (`null`); NaN, and unequal operands that are not both numbers, give false. Date and time strings are compared as plain strings.',
      parameters: operands,
      returns: 'Whether `x` >= `y`, or `null` if an operand is no-data.',
    },
    (a) => {
      const x = a.x;
      const y = a.y;
      if (typeof x === 'number' && typeof y === 'number') return x >= y;
      checkOperands('gte', x, y);
      return greaterOrEqual(x, y);
    },
  ),

  defineScalar(
    'lt',
    {
      summary: 'Less than',
      description:
        'True if the number `x` is strictly less than the number `y`. No-data in either operand gives no-data (`null`); a comparison with NaN, or of operands that are not both numbers (strings, including dates and times, and booleans), gives false.',
      parameters: operands,
      returns: 'Whether `x` < `y`, or `null` if an operand is no-data.',
    },
    (a) => {
      const x = a.x;
      const y = a.y;
      if (typeof x === 'number' && typeof y === 'number') return x < y;
      checkOperands('lt', x, y);
      return less(x, y);
    },
  ),

  defineScalar(
    'lte',
    {
      summary: 'Less than or equal',
      description:
        'True if the number `x` is less than or equal to the number `y`, or if the operands are equal in the sense of `eq` (so equal strings or booleans give true). No-data in either operand gives no-data (`null`); NaN, and unequal operands that are not both numbers, give false. Date and time strings are compared as plain strings.',
      parameters: operands,
      returns: 'Whether `x` <= `y`, or `null` if an operand is no-data.',
    },
    (a) => {
      const x = a.x;
      const y = a.y;
      if (typeof x === 'number' && typeof y === 'number') return x <= y;
      checkOperands('lte', x, y);
      return lessOrEqual(x, y);
    },
  ),

  defineScalar(
    'is_nan',
    {
      summary: 'Test for NaN',
      description:
        'True only for the IEEE 754 value NaN (not a number). Every other value gives false: numbers, no-data (`null`), strings, booleans, arrays and objects.',
      parameters: { x: 'The value to test; any type.' },
      returns: 'Whether `x` is NaN.',
    },
    (a) => {
      const x = a.x;
      return typeof x === 'number' && x !== x;
    },
  ),

  defineScalar(
    'is_nodata',
    {
      summary: 'Test for no-data',
      description:
        'True if `x` is the no-data value (`null`), false for any other value. NaN is a number, not no-data, here; an array is never no-data, whatever it contains. In data cubes, the no-data pixels reach this process as no-data.',
      parameters: { x: 'The value to test; any type.' },
      returns: 'Whether `x` is no-data.',
    },
    (a) => a.x === null || a.x === undefined,
  ),

  defineScalar(
    'is_valid',
    {
      summary: 'Test for a usable value',
      description:
        'False for no-data (`null`), NaN and positive or negative infinity; true for every finite number and for any other value such as strings, booleans, arrays and objects, whatever they contain.',
      parameters: { x: 'The value to test; any type.' },
      returns: 'Whether `x` is a valid value.',
    },
    (a) => {
      const x = a.x;
      if (typeof x === 'number') return x - x === 0; // false for NaN and both infinities
      return x !== null && x !== undefined;
    },
  ),

  defineScalar(
    'is_infinite',
    {
      summary: 'Test for infinity',
      description: 'True if `x` is positive or negative infinity in the IEEE 754 sense. NaN, finite numbers, no-data (`null`) and values of other types give false.',
      parameters: { x: 'The value to test; any type.' },
      returns: 'Whether `x` is an infinite number.',
    },
    (a) => {
      const x = a.x;
      return x === Infinity || x === -Infinity;
    },
  ),
];
