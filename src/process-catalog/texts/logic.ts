// Our words for the processes implemented in src/processes/logic.ts.
import type { ProcessTexts } from '../spec.js';

const operands = { x: 'The first value to compare.', y: 'The second value to compare.' };

export const texts: Record<string, ProcessTexts> = {
  and: {
    summary: 'Logical AND',
    description:
      'True when both `x` and `y` are true, false as soon as one of them is false. When no-data is involved and the other value does not decide the outcome alone (true and no-data, or no-data twice), the result is no-data (`null`).',
    parameters: { x: 'First boolean operand, or no-data.', y: 'Second boolean operand, or no-data.' },
    returns: 'The conjunction of `x` and `y`, or `null` if it cannot be decided.',
  },
  or: {
    summary: 'Logical OR',
    description:
      'True as soon as `x` or `y` is true, false when both are false. When no-data is involved and the other value does not decide the outcome alone (false and no-data, or no-data twice), the result is no-data (`null`).',
    parameters: { x: 'First boolean operand, or no-data.', y: 'Second boolean operand, or no-data.' },
    returns: 'The disjunction of `x` and `y`, or `null` if it cannot be decided.',
  },
  xor: {
    summary: 'Logical exclusive OR',
    description: 'True when exactly one of `x` and `y` is true, false when both are true or both are false. The outcome always depends on both operands, so no-data in either one gives no-data (`null`).',
    parameters: { x: 'First boolean operand, or no-data.', y: 'Second boolean operand, or no-data.' },
    returns: 'The exclusive disjunction of `x` and `y`, or `null` if an operand is no-data.',
  },
  not: {
    summary: 'Logical negation',
    description: 'Turns true into false and false into true. No-data (`null`) stays no-data.',
    parameters: { x: 'The boolean to negate, or no-data.' },
    returns: 'The negated boolean, or `null` for no-data.',
  },
  if: {
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
  between: {
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
  eq: {
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
  neq: {
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
  gt: {
    summary: 'Greater than',
    description:
      'True if the number `x` is strictly greater than the number `y`. No-data in either operand gives no-data (`null`); a comparison with NaN, or of operands that are not both numbers (strings, including dates and times, and booleans), gives false.',
    parameters: operands,
    returns: 'Whether `x` > `y`, or `null` if an operand is no-data.',
  },
  gte: {
    summary: 'Greater than or equal',
    description:
      'True if the number `x` is greater than or equal to the number `y`, or if the operands are equal in the sense of `eq` (so equal strings or booleans give true). No-data in either operand gives no-data (`null`); NaN, and unequal operands that are not both numbers, give false. Date and time strings are compared as plain strings.',
    parameters: operands,
    returns: 'Whether `x` >= `y`, or `null` if an operand is no-data.',
  },
  lt: {
    summary: 'Less than',
    description:
      'True if the number `x` is strictly less than the number `y`. No-data in either operand gives no-data (`null`); a comparison with NaN, or of operands that are not both numbers (strings, including dates and times, and booleans), gives false.',
    parameters: operands,
    returns: 'Whether `x` < `y`, or `null` if an operand is no-data.',
  },
  lte: {
    summary: 'Less than or equal',
    description:
      'True if the number `x` is less than or equal to the number `y`, or if the operands are equal in the sense of `eq` (so equal strings or booleans give true). No-data in either operand gives no-data (`null`); NaN, and unequal operands that are not both numbers, give false. Date and time strings are compared as plain strings.',
    parameters: operands,
    returns: 'Whether `x` <= `y`, or `null` if an operand is no-data.',
  },
  is_nan: {
    summary: 'Test for NaN',
    description: 'True only for the IEEE 754 value NaN (not a number). Every other value gives false: numbers, no-data (`null`), strings, booleans, arrays and objects.',
    parameters: { x: 'The value to test; any type.' },
    returns: 'Whether `x` is NaN.',
  },
  is_nodata: {
    summary: 'Test for no-data',
    description:
      'True if `x` is the no-data value (`null`), false for any other value. NaN is a number, not no-data, here; an array is never no-data, whatever it contains. In data cubes, the no-data pixels reach this process as no-data.',
    parameters: { x: 'The value to test; any type.' },
    returns: 'Whether `x` is no-data.',
  },
  is_valid: {
    summary: 'Test for a usable value',
    description: 'False for no-data (`null`), NaN and positive or negative infinity; true for every finite number and for any other value such as strings, booleans, arrays and objects, whatever they contain.',
    parameters: { x: 'The value to test; any type.' },
    returns: 'Whether `x` is a valid value.',
  },
  is_infinite: {
    summary: 'Test for infinity',
    description: 'True if `x` is positive or negative infinity in the IEEE 754 sense. NaN, finite numbers, no-data (`null`) and values of other types give false.',
    parameters: { x: 'The value to test; any type.' },
    returns: 'Whether `x` is an infinite number.',
  },
};
