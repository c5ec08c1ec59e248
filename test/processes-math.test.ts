// Edge cases of the math processes that the examples of the definitions do not cover: no-data,
// NaN and infinities, signs of zero, exceptions, values that are not numbers, and the pixel path
// (float32 vectors, NaN = no-data).
import { describe, it, expect } from 'vitest';
import { evaluateGraph, rootScope } from '../src/graph/evaluate.js';
import { predefined } from '../src/processes/registry.js';
import { labelsOf, withLabels } from '../src/core/labels.js';

const env = { predefined: (id: string) => predefined.get(id), userProcess: () => null };

/** Runs one process; arguments given in `params` are passed by reference (NaN, Infinity, typed arrays). */
function run(id: string, args: Record<string, unknown>, params: Record<string, unknown> = {}): Promise<unknown> {
  const a: Record<string, unknown> = { ...args };
  for (const k of Object.keys(params)) a[k] = { from_parameter: k };
  return evaluateGraph({ n: { process_id: id, arguments: a, result: true } }, env, rootScope(params));
}

const UNARY = ['absolute', 'arccos', 'arcosh', 'arcsin', 'arctan', 'arsinh', 'artanh', 'ceil', 'cos', 'cosh', 'floor', 'int', 'ln', 'round', 'sgn', 'sin', 'sinh', 'sqrt', 'tan', 'tanh'];
const BINARY = ['add', 'subtract', 'multiply', 'divide', 'mod', 'normalized_difference'];

describe('math: no-data and NaN', () => {
  it('passes null through every unary process (exp takes p)', async () => {
    for (const id of UNARY) expect(await run(id, { x: null }), id).toBeNull();
    expect(await run('exp', { p: null })).toBeNull();
  });

  it('gives null when either operand of a binary process is null', async () => {
    for (const id of BINARY) {
      expect(await run(id, { x: null, y: 2 }), id).toBeNull();
      expect(await run(id, { x: 2, y: null }), id).toBeNull();
      expect(await run(id, { x: null, y: null }), id).toBeNull();
    }
    expect(await run('arctan2', { y: 1, x: null })).toBeNull();
    expect(await run('log', { x: null, base: 10 })).toBeNull();
    expect(await run('log', { x: 10, base: null })).toBeNull();
    expect(await run('power', { base: 2, p: null })).toBeNull();
  });

  it('propagates NaN', async () => {
    for (const id of UNARY) expect(await run(id, {}, { x: NaN }), id).toBeNaN();
    for (const id of BINARY) expect(await run(id, { y: 2 }, { x: NaN }), id).toBeNaN();
    expect(await run('clip', { min: 0, max: 1 }, { x: NaN })).toBeNaN();
    expect(await run('linear_scale_range', { inputMin: 0, inputMax: 1 }, { x: NaN })).toBeNaN();
  });

  it('refuses values that are neither numbers nor null', async () => {
    await expect(run('add', { x: 'a', y: 1 })).rejects.toMatchObject({ code: 'ProcessParameterInvalid', params: { parameter: 'x' } });
    await expect(run('add', { x: null, y: 'b' })).rejects.toMatchObject({ code: 'ProcessParameterInvalid', params: { parameter: 'y' } });
    await expect(run('absolute', { x: [1, 2] })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(run('sqrt', { x: true })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(run('clip', { x: 1, min: '0', max: 2 })).rejects.toMatchObject({ code: 'ProcessParameterInvalid', params: { parameter: 'min' } });
    await expect(run('linear_scale_range', { x: 1, inputMin: 0, inputMax: 2, outputMax: {} })).rejects.toMatchObject({
      code: 'ProcessParameterInvalid',
      params: { parameter: 'outputMax' },
    });
    await expect(run('round', { x: 1.25, p: 0.5 })).rejects.toMatchObject({ code: 'ProcessParameterInvalid', params: { parameter: 'p' } });
  });
});

describe('math: arithmetic', () => {
  it('divides by zero as IEEE 754 does', async () => {
    expect(await run('divide', { x: 1, y: 0 })).toBe(Infinity);
    expect(await run('divide', { x: -1, y: 0 })).toBe(-Infinity);
    expect(await run('divide', { x: 0, y: 0 })).toBeNaN();
  });

  it('mod: sign of the divisor, division by zero per the definition', async () => {
    expect(await run('mod', { x: -1, y: 3 })).toBe(2);
    expect(await run('mod', { x: 1, y: -3 })).toBe(-2);
    expect(await run('mod', { x: 5.5, y: 2 })).toBe(1.5);
    expect(await run('mod', { x: -5.5, y: 2 })).toBe(0.5);
    expect(Object.is(await run('mod', { x: -10, y: 5 }), 0)).toBe(true);
    expect(await run('mod', { x: 3, y: 0 })).toBe(Infinity);
    expect(await run('mod', { x: -3, y: 0 })).toBe(-Infinity);
    expect(await run('mod', { x: 0, y: 0 })).toBeNaN();
  });

  it('normalized_difference', async () => {
    expect(await run('normalized_difference', { x: 0.8, y: 0.2 })).toBeCloseTo(0.6, 12);
    expect(await run('normalized_difference', { x: 0.2, y: 0.8 })).toBeCloseTo(-0.6, 12);
    expect(await run('normalized_difference', { x: 0, y: 0 })).toBeNaN();
  });

  it('clip: bounds included, MinMaxSwapped even for no-data', async () => {
    expect(await run('clip', { x: 3, min: 3, max: 3 })).toBe(3);
    expect(await run('clip', { x: 1, min: 3, max: 3 })).toBe(3);
    expect(await run('clip', { min: 0, max: 1 }, { x: Infinity })).toBe(1);
    await expect(run('clip', { x: 0.5, min: 1, max: 0 })).rejects.toMatchObject({ code: 'MinMaxSwapped' });
    await expect(run('clip', { x: null, min: 1, max: 0 })).rejects.toMatchObject({ code: 'MinMaxSwapped' });
  });

  it('linear_scale_range: clipped input, default output 0..1, inverted and empty ranges', async () => {
    expect(await run('linear_scale_range', { x: -5, inputMin: 0, inputMax: 10 })).toBe(0);
    expect(await run('linear_scale_range', { x: 15, inputMin: 0, inputMax: 10 })).toBe(1);
    expect(await run('linear_scale_range', { x: 5, inputMin: 0, inputMax: 10, outputMin: 255, outputMax: 0 })).toBe(127.5);
    // an inverted input range: still limited to the values between the two bounds
    expect(await run('linear_scale_range', { x: 0, inputMin: 10, inputMax: 0 })).toBe(1);
    expect(await run('linear_scale_range', { x: 20, inputMin: 10, inputMax: 0 })).toBe(0);
    expect(await run('linear_scale_range', { x: 7, inputMin: 10, inputMax: 0 })).toBeCloseTo(0.3, 12);
    expect(await run('linear_scale_range', { x: 5, inputMin: 3, inputMax: 3 })).toBeNaN();
  });
});

describe('math: rounding', () => {
  it('ceil, floor, int and sgn never give -0', async () => {
    expect(Object.is(await run('ceil', { x: -0.4 }), 0)).toBe(true);
    expect(Object.is(await run('int', { x: -0.4 }), 0)).toBe(true);
    expect(Object.is(await run('sgn', { x: -0 }), 0)).toBe(true);
    expect(await run('floor', { x: -0.4 })).toBe(-1);
    expect(await run('int', { x: -3.99 })).toBe(-3);
    expect(await run('ceil', {}, { x: -Infinity })).toBe(-Infinity);
  });

  it('round: halfway to even, at any p', async () => {
    const cases: [number, number, number][] = [
      [0.5, 0, 0],
      [1.5, 0, 2],
      [2.5, 0, 2],
      [-0.5, 0, 0],
      [-1.5, 0, -2],
      [2.4999, 0, 2],
      [2.5001, 0, 3],
      [0.125, 2, 0.12],
      [0.375, 2, 0.38],
      [1.005, 2, 1],
      [1.015, 2, 1.02],
      [2.675, 2, 2.68],
      [-2.675, 2, -2.68],
      [0.45, 1, 0.4],
      [0.55, 1, 0.6],
      [1250, -2, 1200],
      [1350, -2, 1400],
      [-1250, -2, -1200],
      [1249.99, -2, 1200],
      [5, -1, 0],
      [15, -1, 20],
      [123.456, 5, 123.456],
      [0.1 + 0.2, 1, 0.3],
    ];
    for (const [x, p, expected] of cases) expect(await run('round', { x, p }), `round(${x}, ${p})`).toBe(expected);
    expect(Object.is(await run('round', { x: -0.4 }), 0)).toBe(true);
  });

  it('round: very large, tiny and non-finite values', async () => {
    expect(await run('round', { x: 1e300, p: 2 })).toBe(1e300);
    expect(await run('round', { x: 1e300, p: -2 })).toBe(1e300);
    // eslint-disable-next-line no-loss-of-precision -- on purpose: 2^53 + 1, which no double holds
    expect(await run('round', { x: 9007199254740993, p: 0 })).toBe(9007199254740993);
    expect(await run('round', { x: 1e-320, p: 2 })).toBe(0);
    expect(await run('round', { x: 123, p: -400 })).toBe(0);
    expect(await run('round', { x: 0.123, p: 400 })).toBe(0.123);
    expect(await run('round', { p: 1 }, { x: Infinity })).toBe(Infinity);
    expect(await run('round', { p: 1 }, { x: -Infinity })).toBe(-Infinity);
  });

  it('round: float32 pixel values are halfway when their float32 decimal is', async () => {
    const x = Float32Array.from([0.35, 0.45, 0.25, -0.35, 1.15, 3.14159, NaN]);
    const got = (await run('round', { p: 1 }, { x })) as Float32Array;
    expect(got).toBeInstanceOf(Float32Array);
    expect(Array.from(got)).toEqual([0.4, 0.4, 0.2, -0.4, 1.2, 3.1, NaN].map(Math.fround));
    // the same float32 value as a plain number (e.g. from a pixel read pixel by pixel)
    expect(await run('round', { x: Math.fround(0.35), p: 1 })).toBe(0.4);
    // a double that is not a float32: its own decimal decides
    expect(await run('round', { x: 0.34999999, p: 1 })).toBe(0.3);
  });
});

describe('math: exponential, logarithmic and trigonometric edges', () => {
  it('logarithms', async () => {
    expect(await run('log', { x: 1000, base: 10 })).toBe(3);
    expect(await run('log', { x: 8, base: 2 })).toBe(3);
    expect(await run('log', { x: 0, base: 10 })).toBe(-Infinity);
    expect(await run('log', { x: -1, base: 10 })).toBeNaN();
    expect(await run('log', { x: 2, base: 1 })).toBe(Infinity);
    expect(await run('log', { x: 27, base: 3 })).toBeCloseTo(3, 12);
    expect(await run('ln', { x: 0 })).toBe(-Infinity);
    expect(await run('ln', { x: -1 })).toBeNaN();
    expect(await run('exp', { p: 1 })).toBe(Math.E);
    expect(await run('exp', {}, { p: -Infinity })).toBe(0);
  });

  it('power', async () => {
    expect(await run('power', { base: -8, p: 1 / 3 })).toBeNaN();
    expect(await run('power', { base: -2, p: 3 })).toBe(-8);
    expect(await run('power', { base: 0, p: -1 })).toBe(Infinity);
    expect(await run('power', { base: 1 }, { p: NaN })).toBe(1);
    expect(await run('power', { base: 1 }, { p: Infinity })).toBe(1);
    expect(await run('power', { base: -1 }, { p: -Infinity })).toBe(1);
    expect(await run('power', { p: 0 }, { base: NaN })).toBe(1);
    expect(await run('power', { base: 2 }, { p: NaN })).toBeNaN();
  });

  it('out-of-domain inputs give NaN, domain ends give infinities', async () => {
    expect(await run('sqrt', { x: -1 })).toBeNaN();
    expect(await run('arccos', { x: 1.5 })).toBeNaN();
    expect(await run('arcsin', { x: -1.5 })).toBeNaN();
    expect(await run('arcosh', { x: 0.5 })).toBeNaN();
    expect(await run('artanh', { x: 2 })).toBeNaN();
    expect(await run('artanh', { x: 1 })).toBe(Infinity);
    expect(await run('artanh', { x: -1 })).toBe(-Infinity);
    expect(await run('arccos', { x: -1 })).toBe(Math.PI);
    expect(await run('arcsin', { x: 1 })).toBe(Math.PI / 2);
  });

  it('arctan2 takes the quadrant from both signs', async () => {
    expect(await run('arctan2', { y: 1, x: -1 })).toBeCloseTo((3 * Math.PI) / 4, 12);
    expect(await run('arctan2', { y: -1, x: -1 })).toBeCloseTo((-3 * Math.PI) / 4, 12);
    expect(await run('arctan2', { y: 1, x: 0 })).toBeCloseTo(Math.PI / 2, 12);
  });
});

describe('math: constants', () => {
  it('e, pi and nan', async () => {
    expect(await run('e', {})).toBe(Math.E);
    expect(await run('pi', {})).toBe(Math.PI);
    expect(await run('nan', {})).toBeNaN();
  });

  it('constant returns any value as it is, labels included', async () => {
    expect(await run('constant', { x: null })).toBeNull();
    expect(await run('constant', { x: 'text' })).toBe('text');
    expect(await run('constant', { x: { a: [1, 2] } })).toEqual({ a: [1, 2] });
    const labeled = withLabels([1, 2], ['B04', 'B08']);
    const got = await run('constant', {}, { x: labeled });
    expect(got).toBe(labeled);
    expect(labelsOf(got)).toEqual(['B04', 'B08']);
  });
});

describe('math: pixel vectors (NaN = no-data)', () => {
  it('lifts the scalar forms over float32 vectors', async () => {
    const x = Float32Array.from([-2, 0.5, 3, NaN]);
    expect(Array.from((await run('clip', { min: 0, max: 1 }, { x })) as Float32Array)).toEqual([0, 0.5, 1, NaN]);
    expect(Array.from((await run('linear_scale_range', { inputMin: -2, inputMax: 2, outputMax: 100 }, { x })) as Float32Array)).toEqual([0, 62.5, 100, NaN]);
    expect(Array.from((await run('mod', { y: 2 }, { x })) as Float32Array)).toEqual([0, 0.5, 1, NaN]);
    expect(Array.from((await run('absolute', {}, { x })) as Float32Array)).toEqual([2, 0.5, 3, NaN]);
    const y = Float32Array.from([2, 0.5, NaN, 1]);
    expect(Array.from((await run('normalized_difference', {}, { x, y })) as Float32Array)).toEqual([-Infinity, 0, NaN, NaN]);
  });

  it('raises MinMaxSwapped from the pixel path too', async () => {
    await expect(run('clip', { min: 1, max: 0 }, { x: Float32Array.from([1, 2]) })).rejects.toMatchObject({ code: 'MinMaxSwapped' });
  });
});
