// Edge cases of the statistics processes that the definitions' examples do not cover: empty and
// all-null arrays, NaN and infinities, rounding, quantiles' exceptions and parameter forms, the
// cumulative processes' null rules and labels, and the per-pixel path (a reused input buffer).
import { describe, it, expect } from 'vitest';
import { evaluateGraph, rootScope } from '../src/graph/evaluate.js';
import { predefined } from '../src/processes/registry.js';
import { labelsOf, withLabels } from '../src/core/labels.js';
import { PixelArray } from '../src/datacube/pixels.js';

const env = { predefined: (id: string) => predefined.get(id), userProcess: () => null };
const run = (id: string, args: Record<string, unknown>) => evaluateGraph({ n: { process_id: id, arguments: args, result: true } }, env, rootScope());
/** Runs a process with `data` passed as a parameter value (labeled arrays, pixel arrays). */
const runWith = (id: string, data: unknown, args: Record<string, unknown> = {}) =>
  evaluateGraph({ n: { process_id: id, arguments: { data: { from_parameter: 'data' }, ...args }, result: true } }, env, rootScope({ data }));

const REDUCERS = ['max', 'min', 'sum', 'product', 'mean', 'median', 'variance', 'sd'];
const CUMULATIVE = ['cummax', 'cummin', 'cumsum', 'cumproduct'];

describe('reducers: no-data and empty arrays', () => {
  for (const id of REDUCERS) {
    it(`${id}: empty and all-null arrays give null, with or without ignore_nodata`, async () => {
      expect(await run(id, { data: [] })).toBeNull();
      expect(await run(id, { data: [null, null] })).toBeNull();
      expect(await run(id, { data: [null], ignore_nodata: false })).toBeNull();
      expect(await run(id, { data: [], ignore_nodata: false })).toBeNull();
    });
    it(`${id}: with ignore_nodata false a null anywhere (even after a NaN) gives null`, async () => {
      expect(await run(id, { data: [1, 2, 3, null], ignore_nodata: false })).toBeNull();
      expect(await run(id, { data: [null, 1, 2, 3], ignore_nodata: false })).toBeNull();
      expect(await run(id, { data: [NaN, 1, null], ignore_nodata: false })).toBeNull();
    });
    it(`${id}: a NaN among the values gives NaN`, async () => {
      expect(await run(id, { data: [NaN, 1, 2, 3] })).toBeNaN();
      expect(await run(id, { data: [1, 2, 3, NaN] })).toBeNaN();
      expect(await run(id, { data: [1, null, NaN, 2] })).toBeNaN();
    });
    it(`${id}: refuses data that is not an array of numbers`, async () => {
      await expect(run(id, { data: [1, 'two', 3] })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
      await expect(run(id, { data: 5 })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    });
  }
});

describe('min, max, extrema', () => {
  it('handle infinities and negative numbers', async () => {
    expect(await run('max', { data: [1, 2, Infinity, 3] })).toBe(Infinity);
    expect(await run('max', { data: [1, -Infinity, 2, 3] })).toBe(3);
    expect(await run('min', { data: [1, -Infinity, 2, 3] })).toBe(-Infinity);
    expect(await run('min', { data: [-5, -7, -6] })).toBe(-7);
    expect(await run('max', { data: [-5, -7, -6] })).toBe(-5);
    expect(await run('max', { data: [null, -1] })).toBe(-1);
    expect(await run('max', { data: [1.12345678901, 1.12345678903, 1.12345678902] })).toBe(1.12345678903);
  });
  it('extrema: empty, all-null, single value, NaN, infinities', async () => {
    expect(await run('extrema', { data: [] })).toEqual([null, null]);
    expect(await run('extrema', { data: [null, null] })).toEqual([null, null]);
    expect(await run('extrema', { data: [null], ignore_nodata: false })).toEqual([null, null]);
    expect(await run('extrema', { data: [4] })).toEqual([4, 4]);
    expect(await run('extrema', { data: [3, -Infinity, Infinity, 1] })).toEqual([-Infinity, Infinity]);
    expect(await run('extrema', { data: [3, NaN, 1] })).toEqual([NaN, NaN]);
    expect(await run('extrema', { data: [3, NaN, null], ignore_nodata: false })).toEqual([null, null]);
  });
});

describe('sum, product, mean', () => {
  it('sum follows IEEE 754 with little rounding error', async () => {
    expect(await run('sum', { data: [0.1, 0.2, 0.3] })).toBe(0.6);
    expect(await run('sum', { data: [1e16, 1, -1e16] })).toBe(1);
    expect(await run('sum', { data: [Infinity, 1] })).toBe(Infinity);
    expect(await run('sum', { data: [Infinity, -Infinity] })).toBeNaN();
    expect(await run('sum', { data: [1e308, 1e308] })).toBe(Infinity);
    expect(await run('sum', { data: [0] })).toBe(0);
  });
  it('product follows IEEE 754', async () => {
    expect(await run('product', { data: [0, Infinity] })).toBeNaN();
    expect(await run('product', { data: [-2, Infinity] })).toBe(-Infinity);
    expect(await run('product', { data: [null, 3, null, 2] })).toBe(6);
    expect(await run('product', { data: [0] })).toBe(0);
  });
  it('mean counts only the values that are not null', async () => {
    expect(await run('mean', { data: [null, 4, null, 2] })).toBe(3);
    expect(await run('mean', { data: [0.1, 0.2, 0.3, 0.4] })).toBe(0.25);
    expect(await run('mean', { data: [-Infinity, 5] })).toBe(-Infinity);
  });
});

describe('median', () => {
  it('sorts a copy: unsorted input, odd and even counts, the input left as it was', async () => {
    const data = [9, 1, 8, 3, null, 2];
    expect(await run('median', { data })).toBe(3);
    expect(data).toEqual([9, 1, 8, 3, null, 2]);
    expect(await run('median', { data: [4, 1, 3, 2] })).toBe(2.5);
    expect(await run('median', { data: [7] })).toBe(7);
    expect(await run('median', { data: [-3, -1] })).toBe(-2);
  });
  it('infinities and overflow', async () => {
    expect(await run('median', { data: [-Infinity, 5] })).toBe(-Infinity);
    expect(await run('median', { data: [-Infinity, Infinity] })).toBeNaN();
    expect(await run('median', { data: [1.5e308, 1.7e308] })).toBe(1.6e308);
  });
});

describe('variance, sd (sample, divisor n - 1)', () => {
  it('sample statistics', async () => {
    expect(await run('variance', { data: [2, 4, 4, 4, 5, 5, 7, 9] })).toBeCloseTo(32 / 7, 12);
    expect(await run('sd', { data: [2, 4, 4, 4, 5, 5, 7, 9] })).toBeCloseTo(Math.sqrt(32 / 7), 12);
    expect(await run('variance', { data: [2.5, 2.5, 2.5] })).toBe(0);
    expect(await run('sd', { data: [null, 1, null, 3] })).toBeCloseTo(Math.SQRT2, 12);
  });
  it('stay exact for values far from zero', async () => {
    expect(await run('variance', { data: [1e9 + 1, 1e9 + 2, 1e9 + 3] })).toBe(1);
    expect(await run('variance', { data: [1e15 + 2, 1e15 + 4, 1e15 + 6] })).toBe(4);
  });
  it('a single value, or an infinity, gives NaN', async () => {
    expect(await run('variance', { data: [5] })).toBeNaN();
    expect(await run('sd', { data: [null, 5, null] })).toBeNaN();
    expect(await run('variance', { data: [-1, 0, Infinity] })).toBeNaN();
    expect(await run('variance', { data: [-Infinity, 5] })).toBeNaN();
  });
});

describe('quantiles', () => {
  const data = [2, 4, 4, 4, 5, 5, 7, 9];
  it('needs exactly one of probabilities and q', async () => {
    await expect(run('quantiles', { data })).rejects.toMatchObject({ code: 'QuantilesParameterMissing' });
    await expect(run('quantiles', { data, probabilities: null, q: null })).rejects.toMatchObject({ code: 'QuantilesParameterMissing' });
    await expect(run('quantiles', { data, probabilities: [0.5], q: 2 })).rejects.toMatchObject({ code: 'QuantilesParameterConflict' });
    await expect(run('quantiles', { data, probabilities: 4, q: 4 })).rejects.toMatchObject({ code: 'QuantilesParameterConflict' });
  });
  it('requires ascending probabilities', async () => {
    await expect(run('quantiles', { data, probabilities: [0.5, 0.1] })).rejects.toMatchObject({ code: 'AscendingProbabilitiesRequired' });
    // also when there is nothing to compute
    await expect(run('quantiles', { data: [], probabilities: [0.9, 0.1] })).rejects.toMatchObject({ code: 'AscendingProbabilitiesRequired' });
  });
  it('refuses probabilities outside [0, 1] and interval counts below 2', async () => {
    await expect(run('quantiles', { data, probabilities: [0.5, 1.5] })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(run('quantiles', { data, probabilities: [-0.1] })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(run('quantiles', { data, probabilities: 1 })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(run('quantiles', { data, probabilities: 2.5 })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(run('quantiles', { data, q: 1 })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
  it('the deprecated q gives the same as an integer probabilities', async () => {
    expect(await run('quantiles', { data, q: 4 })).toEqual([4, 4.5, 5.5]);
    expect(await run('quantiles', { data: [1, 2, 3, 4, 5, 6, 7], q: 3 })).toEqual([3, 5]);
    expect(await run('quantiles', { data: [1, 2, 3, 4, 5, 6, 7], probabilities: 3 })).toEqual([3, 5]);
  });
  it('type 7: 0 and 1 give min and max, unsorted input and nulls', async () => {
    expect(await run('quantiles', { data: [9, null, 2, 5], probabilities: [0, 0.25, 0.5, 1] })).toEqual([2, 3.5, 5, 9]);
    expect(await run('quantiles', { data: [7], probabilities: [0, 0.3, 1] })).toEqual([7, 7, 7]);
    expect(await run('quantiles', { data, probabilities: [] })).toEqual([]);
  });
  it('empty, all-null, null with ignore_nodata false, NaN', async () => {
    expect(await run('quantiles', { data: [null, null], probabilities: 4 })).toEqual([null, null, null]);
    expect(await run('quantiles', { data: [], q: 2 })).toEqual([null]);
    expect(await run('quantiles', { data: [1, 2, null], probabilities: [0.5], ignore_nodata: false })).toEqual([null]);
    expect(await run('quantiles', { data: [1, NaN, 2], probabilities: [0.1, 0.9] })).toEqual([NaN, NaN]);
  });
  it('infinities', async () => {
    expect(await run('quantiles', { data: [-Infinity, 5], probabilities: [0, 0.5, 1] })).toEqual([-Infinity, -Infinity, 5]);
    expect(await run('quantiles', { data: [1, 3, Infinity], probabilities: [0.25, 0.75] })).toEqual([2, Infinity]);
  });
});

describe('cumulative processes', () => {
  it('empty and all-null arrays keep their length', async () => {
    for (const id of CUMULATIVE) {
      expect(await run(id, { data: [] })).toEqual([]);
      expect(await run(id, { data: [null, null] })).toEqual([null, null]);
      expect(await run(id, { data: [null, null], ignore_nodata: false })).toEqual([null, null]);
    }
  });
  it('leading nulls stay null and are skipped', async () => {
    expect(await run('cumsum', { data: [null, 2, null, 3] })).toEqual([null, 2, null, 5]);
    expect(await run('cummin', { data: [null, 2, null, 3, 1] })).toEqual([null, 2, null, 2, 1]);
    expect(await run('cummax', { data: [null, -2, -3] })).toEqual([null, -2, -2]);
    expect(await run('cumproduct', { data: [null, 2, 0.5] })).toEqual([null, 2, 1]);
    expect(await run('cumsum', { data: [null, 2, 3], ignore_nodata: false })).toEqual([null, null, null]);
  });
  it('NaN and infinities', async () => {
    expect(await run('cummax', { data: [1, NaN, 5] })).toEqual([1, NaN, NaN]);
    expect(await run('cummin', { data: [1, NaN, -5] })).toEqual([1, NaN, NaN]);
    expect(await run('cumsum', { data: [1, Infinity, -Infinity] })).toEqual([1, Infinity, NaN]);
    expect(await run('cumproduct', { data: [2, Infinity, 0] })).toEqual([2, Infinity, NaN]);
  });
  it('cumsum rounds like sum', async () => {
    const r = (await run('cumsum', { data: [0.1, 0.2, 0.3] })) as number[];
    expect(r[2]).toBe(0.6);
  });
  it('keep the labels of a labeled array', async () => {
    for (const id of CUMULATIVE) {
      const r = await runWith(id, withLabels([1, null, 3], ['a', 'b', 'c']));
      expect(labelsOf(r)).toEqual(['a', 'b', 'c']);
    }
    expect(labelsOf(await runWith('cumsum', [1, 2]))).toBeNull();
  });
});

describe('per pixel (reducers on pixel arrays)', () => {
  // Three elements along a dimension, four pixels; NaN is no-data in a pixel vector.
  const items = [new Float32Array([3, NaN, 1, NaN]), new Float32Array([1, NaN, 2, 5]), new Float32Array([2, NaN, NaN, 4])];
  const pixels = () => new PixelArray(items, ['t1', 't2', 't3'], 4);
  it('median and sum run per pixel without touching the shared input', async () => {
    expect(Array.from((await runWith('median', pixels())) as Float32Array)).toEqual([2, NaN, 1.5, 4.5]);
    expect(Array.from((await runWith('sum', pixels())) as Float32Array)).toEqual([6, NaN, 3, 9]);
    expect(Array.from((await runWith('max', pixels(), { ignore_nodata: false })) as Float32Array)).toEqual([3, NaN, NaN, NaN]);
    expect(Array.from(items[0])).toEqual([3, NaN, 1, NaN]);
  });
  it('array results become pixel arrays', async () => {
    const r = (await runWith('quantiles', pixels(), { probabilities: [0, 1] })) as PixelArray;
    expect(r).toBeInstanceOf(PixelArray);
    expect(Array.from(r.items[0])).toEqual([1, NaN, 1, 4]);
    expect(Array.from(r.items[1])).toEqual([3, NaN, 2, 5]);
    const c = (await runWith('cumsum', pixels())) as PixelArray;
    expect(c.labels).toEqual(['t1', 't2', 't3']);
    expect(Array.from(c.items[2])).toEqual([6, NaN, NaN, 9]);
  });
});
