// Our words for the processes implemented in src/processes/math.ts.
import type { ProcessTexts } from '../spec.js';

const NODATA = 'No-data (null) gives null.';
const NODATA_ANY = 'If either argument is no-data (null), the result is null.';
const IEEE = 'Results follow IEEE 754 double arithmetic (NaN and ±Infinity pass through).';

export const texts: Record<string, ProcessTexts> = {
  absolute: {
    summary: 'Absolute value',
    description: `Returns x without its sign: x for x ≥ 0, -x otherwise. ${NODATA}`,
    parameters: { x: 'The number.' },
    returns: 'The magnitude of x (never negative), or null.',
  },
  add: {
    summary: 'Sum of two numbers',
    description: `Returns x + y. ${NODATA_ANY} ${IEEE}`,
    parameters: { x: 'First term of the sum.', y: 'Second term of the sum.' },
    returns: 'x plus y, or null.',
  },
  subtract: {
    summary: 'Difference of two numbers',
    description: `Returns x - y. ${NODATA_ANY} ${IEEE}`,
    parameters: { x: 'The number to subtract from.', y: 'The number subtracted from x.' },
    returns: 'x minus y, or null.',
  },
  multiply: {
    summary: 'Product of two numbers',
    description: `Returns x × y. ${NODATA_ANY} ${IEEE}`,
    parameters: { x: 'First factor.', y: 'Second factor.' },
    returns: 'x times y, or null.',
    exceptions: { MultiplicandMissing: 'Both factors x and y must be given.' },
  },
  divide: {
    summary: 'Quotient of two numbers',
    description: `Returns x / y. ${NODATA_ANY} Division by zero follows IEEE 754 and does not fail: ` + '+Infinity for x > 0, -Infinity for x < 0 (the other way round for a divisor of -0) and NaN for x = 0.',
    parameters: { x: 'The numerator.', y: 'The denominator.' },
    returns: 'x divided by y, or null.',
    exceptions: { DivisionByZero: 'Dividing by zero is not possible here.' },
  },
  mod: {
    summary: 'Floored remainder of a division',
    description:
      `Returns the remainder of x / y with the sign of the divisor y (floored modulo, as in Python), ` +
      `for integers and decimals alike, e.g. mod(-27, 5) = 3. ${NODATA_ANY} ` +
      'For y = 0 the result is +Infinity for x > 0, -Infinity for x < 0 and NaN for x = 0.',
    parameters: { x: 'The dividend.', y: 'The divisor; its sign is the sign of the result.' },
    returns: 'The remainder, or null.',
    exceptions: { DivisionByZero: 'Taking a remainder of a division by zero is not possible here.' },
  },
  normalized_difference: {
    summary: 'Normalized difference of two values',
    description:
      'Returns (x - y) / (x + y), the ratio behind indices such as NDVI (x: near infrared, y: red). ' + 'A no-data (null) value in either gives null; x + y = 0 gives ±Infinity or, for x = y = 0, NaN.',
    parameters: { x: 'Value of the first band.', y: 'Value of the second band.' },
    returns: 'The normalized difference, within [-1, 1] for non-negative inputs.',
  },
  clip: {
    summary: 'Limit a number to a range',
    description: `Returns min for x < min, max for x > max and x otherwise. ${NODATA} NaN stays NaN. ` + 'Fails with MinMaxSwapped when min is greater than max.',
    parameters: { x: 'The number to limit.', min: 'Lower limit of the range.', max: 'Upper limit of the range.' },
    returns: 'x limited to [min, max], or null.',
    exceptions: { MinMaxSwapped: 'The lower limit min must not be greater than the upper limit max.' },
  },
  linear_scale_range: {
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
  ceil: {
    summary: 'Round up to an integer',
    description: `Returns the smallest integer not less than x, e.g. 3 for 2.1 and -2 for -2.9. ${NODATA} NaN and ±Infinity are returned unchanged.`,
    parameters: { x: 'The number to round up.' },
    returns: 'The integer, or null.',
  },
  floor: {
    summary: 'Round down to an integer',
    description: `Returns the greatest integer not greater than x, e.g. 2 for 2.9 and -3 for -2.1 (unlike int, which drops the fraction). ` + `${NODATA} NaN and ±Infinity are returned unchanged.`,
    parameters: { x: 'The number to round down.' },
    returns: 'The integer, or null.',
  },
  int: {
    summary: 'Integer part of a number',
    description: `Drops the fractional part of x, rounding toward zero: 2 for 2.9 and -2 for -2.9 (unlike floor). ` + `${NODATA} NaN and ±Infinity are returned unchanged.`,
    parameters: { x: 'The number to truncate.' },
    returns: 'The integer part, or null.',
  },
  round: {
    summary: 'Round to a number of decimals',
    description:
      'Rounds x to the nearest multiple of 10^-p; values exactly halfway go to the even neighbour ' +
      "(banker's rounding: -2.5 gives -2, 0.35 with p = 1 gives 0.4). Halfway is judged on the decimal value of x, " +
      `and negative p rounds to tens, hundreds, and so on. ${NODATA} NaN and ±Infinity are returned unchanged.`,
    parameters: {
      x: 'The number to round.',
      p: 'Decimals to keep (default 0); a negative value rounds left of the decimal point, -2 to hundreds.',
    },
    returns: 'The rounded number, or null.',
  },
  sgn: {
    summary: 'Sign of a number',
    description: `Returns 1 for positive x, -1 for negative x and 0 for zero. ${NODATA} NaN stays NaN.`,
    parameters: { x: 'The number whose sign is wanted.' },
    returns: '-1, 0 or 1, or null.',
  },
  exp: {
    summary: 'e to the power of p',
    description: `Returns Euler's number raised to the power p. ${NODATA}`,
    parameters: { p: 'The exponent.' },
    returns: 'e^p (positive, or 0 on underflow), or null.',
  },
  ln: {
    summary: 'Natural logarithm',
    description: `Returns the logarithm of x to base e. ${NODATA} ln(0) is -Infinity and negative x gives NaN.`,
    parameters: { x: 'A non-negative number.' },
    returns: 'The natural logarithm, or null.',
  },
  log: {
    summary: 'Logarithm to a base',
    description:
      `Returns the logarithm of x to the given base, i.e. the power the base must be raised to to give x. ${NODATA_ANY} ` +
      'x = 0 gives -Infinity (for a base above 1), negative x or base gives NaN, and base 1 gives ±Infinity or NaN.',
    parameters: { x: 'A non-negative number.', base: 'The base of the logarithm.' },
    returns: 'The logarithm, or null.',
  },
  power: {
    summary: 'A base raised to a power',
    description: `Returns base raised to the power p; a negative base with a fractional exponent gives NaN. ${NODATA_ANY} ` + 'As in IEEE 754 pow, any base to the power 0 is 1 and 1 to any power is 1.',
    parameters: { base: 'The base.', p: 'The exponent.' },
    returns: 'base^p, or null.',
  },
  sqrt: {
    summary: 'Square root',
    description: `Returns the non-negative number whose square is x. ${NODATA} Negative x gives NaN.`,
    parameters: { x: 'The number to take the square root of.' },
    returns: 'The square root, or null.',
  },
  sin: {
    summary: 'Sine',
    description: `Returns the sine of the angle x given in radians. ${NODATA}`,
    parameters: { x: 'Angle in radians.' },
    returns: 'The sine, in [-1, 1], or null.',
  },
  cos: {
    summary: 'Cosine',
    description: `Returns the cosine of the angle x given in radians. ${NODATA}`,
    parameters: { x: 'Angle in radians.' },
    returns: 'The cosine, in [-1, 1], or null.',
  },
  tan: {
    summary: 'Tangent',
    description: `Returns the tangent (sine over cosine) of the angle x given in radians. ${NODATA} ` + 'Near odd multiples of π/2 the result becomes very large in magnitude.',
    parameters: { x: 'Angle in radians.' },
    returns: 'The tangent, or null.',
  },
  arcsin: {
    summary: 'Inverse sine',
    description: `Returns the angle in radians, in [-π/2, π/2], whose sine is x. ${NODATA} x outside [-1, 1] gives NaN.`,
    parameters: { x: 'A sine value in [-1, 1].' },
    returns: 'The angle in radians, or null.',
  },
  arccos: {
    summary: 'Inverse cosine',
    description: `Returns the angle in radians, in [0, π], whose cosine is x. ${NODATA} x outside [-1, 1] gives NaN.`,
    parameters: { x: 'A cosine value in [-1, 1].' },
    returns: 'The angle in radians, or null.',
  },
  arctan: {
    summary: 'Inverse tangent',
    description: `Returns the angle in radians, in (-π/2, π/2), whose tangent is x. ${NODATA}`,
    parameters: { x: 'A tangent value.' },
    returns: 'The angle in radians, or null.',
  },
  arctan2: {
    summary: 'Angle of a point from two coordinates',
    description:
      'Returns the angle in radians, in [-π, π], between the positive x axis and the point (x, y): like arctan(y / x), ' +
      `but the signs of both arguments select the quadrant, and x = 0 is allowed. ${NODATA_ANY}`,
    parameters: { y: 'The y coordinate (numerator of y / x).', x: 'The x coordinate (denominator of y / x).' },
    returns: 'The angle in radians, or null.',
  },
  sinh: {
    summary: 'Hyperbolic sine',
    description: `Returns (e^x - e^-x) / 2. ${NODATA}`,
    parameters: { x: 'Hyperbolic angle.' },
    returns: 'The hyperbolic sine, or null.',
  },
  cosh: {
    summary: 'Hyperbolic cosine',
    description: `Returns (e^x + e^-x) / 2, which is at least 1. ${NODATA}`,
    parameters: { x: 'Hyperbolic angle.' },
    returns: 'The hyperbolic cosine, or null.',
  },
  tanh: {
    summary: 'Hyperbolic tangent',
    description: `Returns sinh(x) / cosh(x), which lies in (-1, 1) (reaching ±1 only by rounding for large |x|). ${NODATA}`,
    parameters: { x: 'Hyperbolic angle.' },
    returns: 'The hyperbolic tangent, or null.',
  },
  arsinh: {
    summary: 'Inverse hyperbolic sine',
    description: `Returns the hyperbolic angle whose hyperbolic sine is x. ${NODATA}`,
    parameters: { x: 'Any number.' },
    returns: 'The hyperbolic angle, or null.',
  },
  arcosh: {
    summary: 'Inverse hyperbolic cosine',
    description: `Returns the non-negative hyperbolic angle whose hyperbolic cosine is x. ${NODATA} x below 1 gives NaN.`,
    parameters: { x: 'A number of at least 1.' },
    returns: 'The hyperbolic angle (≥ 0), or null.',
  },
  artanh: {
    summary: 'Inverse hyperbolic tangent',
    description: `Returns the hyperbolic angle whose hyperbolic tangent is x. ${NODATA} ` + 'x = 1 gives +Infinity, x = -1 gives -Infinity and x outside [-1, 1] gives NaN.',
    parameters: { x: 'A number between -1 and 1.' },
    returns: 'The hyperbolic angle, or null.',
  },
  constant: {
    summary: 'Name a fixed value',
    description: 'Returns its argument unchanged, whatever its type (null and labeled arrays included), so that one value can be referenced from several nodes.',
    parameters: { x: 'The value to pass on.' },
    returns: 'The value of x.',
  },
  e: {
    summary: "Euler's number",
    description: 'Returns e ≈ 2.718281828459045, the base of the natural logarithm (ln(e) = 1).',
    parameters: {},
    returns: 'The number e.',
  },
  pi: {
    summary: 'The number π',
    description: "Returns π ≈ 3.141592653589793, a circle's circumference divided by its diameter.",
    parameters: {},
    returns: 'The number π.',
  },
  nan: {
    summary: 'Not a number',
    description: 'Returns the IEEE 754 floating-point value NaN, which is neither a finite number nor an infinity. JSON cannot encode it, so a NaN result that leaves the back-end as JSON appears as null.',
    parameters: {},
    returns: 'NaN.',
  },
};
