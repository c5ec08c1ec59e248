// climatological_normal, anomaly and resample_cube_temporal on small hand-made cubes, run through
// the evaluator; expected values are worked out by hand in the comments.
import { describe, it, expect, vi } from 'vitest';
import { evaluateGraph, rootScope } from '../src/graph/evaluate.js';
import { DataCube, spatialDims, type Dimension } from '../src/datacube/datacube.js';
import { LazyCube } from '../src/data/lazy.js';
import type { Grid } from '../src/core/grid.js';
import { transformBox } from '../src/geometry/crs.js';
import { engineEnv } from './engine-env.js';

const { env, logs } = engineEnv();
const P = (name: string) => ({ from_parameter: name });
const call = (process_id: string, args: Record<string, unknown>, values: Record<string, unknown> = {}) =>
  evaluateGraph({ n: { process_id, arguments: args, result: true } }, env, rootScope(values)) as Promise<any>;

const grid: Grid = { epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], width: 2, height: 2 };
/** Offsets b*100 + r*10 + c of the 8 values (bands x y x x) of one date. */
const OFF = [0, 1, 10, 11, 100, 101, 110, 111];

// Dates with values that are powers of two, so that every mean is easy to check by hand.
const DATES: [string, number][] = [
  ['2000-06-15T00:00:00Z', 1], // before the period
  ['2000-12-15T00:00:00Z', 2], // December before the period: counts for djf / ndjfma
  ['2001-01-15T00:00:00Z', 4],
  ['2001-06-15T00:00:00Z', 8],
  ['2002-01-15T00:00:00Z', 16],
  ['2002-06-15T00:00:00Z', 32],
  ['2003-01-15T00:00:00Z', 64],
  ['2003-06-15T00:00:00Z', 128],
  ['2003-12-15T00:00:00Z', 256], // last December: counts for month, never for djf
  ['2004-01-15T00:00:00Z', 512], // after the period
];

/** t x bands(2) x y(2) x x(2): value V[t] + b*100 + r*10 + c, and no-data at t=2 (Jan 2001), b=0, r=0, c=0. */
function series(dates: [string, number][] = DATES): DataCube {
  const data = new Float32Array(dates.length * 8);
  dates.forEach(([d, v], t) => OFF.forEach((o, k) => (data[t * 8 + k] = d.startsWith('2001-01') && k === 0 ? NaN : v + o)));
  const dims: Dimension[] = [{ name: 't', type: 'temporal', labels: dates.map((d) => d[0]) }, { name: 'bands', type: 'bands', labels: ['B1', 'B2'] }, ...spatialDims(grid)];
  return new DataCube({ dims, data, grid });
}

/** The 8 values of temporal position t. */
const valuesAt = (c: DataCube, t: number) => Array.from(c.data.slice(t * 8, t * 8 + 8));
const plus = (mean: number, first = mean + 0) => OFF.map((o, k) => Math.fround(k === 0 ? first : mean + o));
const labelsOf = (c: DataCube) => c.dims[0].labels;

describe('climatological_normal', () => {
  const normal = (period: string, cube = series(), extra: Record<string, unknown> = { climatology_period: [2001, 2003] }) =>
    call('climatological_normal', { data: P('c'), period, ...extra }, { c: cube }) as Promise<DataCube>;

  it('averages per month over the years of the period, ignoring no-data', async () => {
    const out = await normal('month');
    expect(labelsOf(out)).toEqual(['01', '02', '03', '04', '05', '06', '07', '08', '09', '10', '11', '12']);
    expect(out.dims.map((d) => [d.name, d.type])).toEqual([
      ['t', 'temporal'],
      ['bands', 'bands'],
      ['y', 'spatial'],
      ['x', 'spatial'],
    ]);
    expect(out.grid).toEqual(grid);
    // January: (4 + 16 + 64) / 3 = 28; the pixel without Jan 2001: (16 + 64) / 2 = 40
    expect(valuesAt(out, 0)).toEqual(plus(28, 40));
    // June: (8 + 32 + 128) / 3 = 56; December: only Dec 2003 (Dec 2000 is before the period)
    expect(valuesAt(out, 5)).toEqual(plus(56));
    expect(valuesAt(out, 11)).toEqual(plus(256));
    expect(valuesAt(out, 1)).toEqual(Array(8).fill(NaN));
  });

  it('counts the winter that begins before the period, never the one that begins in its last year', async () => {
    const out = await normal('season');
    expect(labelsOf(out)).toEqual(['djf', 'mam', 'jja', 'son']);
    // djf: Dec 2000, Jan 2001, Jan 2002, Jan 2003 = (2 + 4 + 16 + 64) / 4 = 21.5 (Dec 2003 left out);
    // without Jan 2001: (2 + 16 + 64) / 3
    expect(valuesAt(out, 0)).toEqual(plus(21.5, 82 / 3));
    expect(valuesAt(out, 1)).toEqual(Array(8).fill(NaN));
    expect(valuesAt(out, 2)).toEqual(plus(56));
    const tropical = await normal('tropical-season');
    expect(labelsOf(tropical)).toEqual(['ndjfma', 'mjjaso']);
    expect(valuesAt(tropical, 0)).toEqual(plus(21.5, 82 / 3));
    expect(valuesAt(tropical, 1)).toEqual(plus(56));
  });

  it('leaves out the first winter entirely when the data has no date before the period', async () => {
    const noDec = series(DATES.filter(([d]) => !d.startsWith('2000-12')));
    const out = await normal('season', noDec);
    // djf: Jan 2002 and Jan 2003 only (Jan 2001 belongs to the winter 2000/01): (16 + 64) / 2 = 40
    expect(valuesAt(out, 0)).toEqual(plus(40, 40));
  });

  it('averages the whole period and per day of the year', async () => {
    const whole = await normal('climatology-period');
    expect(labelsOf(whole)).toEqual(['climatology-period']);
    // (4 + 8 + 16 + 32 + 64 + 128 + 256) / 7 = 508 / 7; without Jan 2001: 504 / 6 = 84
    const v = valuesAt(whole, 0);
    expect(v[0]).toBe(84);
    OFF.slice(1).forEach((o, k) => expect(v[k + 1]).toBe(Math.fround((508 + 7 * o) / 7)));
    const day = await normal('day');
    expect(labelsOf(day)).toHaveLength(365);
    expect(labelsOf(day)[0]).toBe('001');
    expect(labelsOf(day)[364]).toBe('365');
    expect(valuesAt(day, 14)).toEqual(plus(28, 40)); // 015: 15 January
    expect(valuesAt(day, 165)).toEqual(plus(56)); // 166: 15 June (no leap year)
    expect(valuesAt(day, 348)).toEqual(plus(256)); // 349: 15 December
    expect(valuesAt(day, 0)).toEqual(Array(8).fill(NaN));
  });

  it('takes years as integer strings too, and 1981-2010 by default (warning about the coverage)', async () => {
    const s = await normal('month', series(), { climatology_period: ['2001', '2003'] });
    expect(valuesAt(s, 0)).toEqual(plus(28, 40));
    logs.length = 0;
    const c = series([
      ['1990-01-15T00:00:00Z', 10],
      ['2000-01-15T00:00:00Z', 20],
      ['2011-01-15T00:00:00Z', 99],
    ]);
    const out = await normal('month', c, {});
    expect(valuesAt(out, 0)).toEqual(plus(15));
    expect(logs).toHaveLength(1);
    expect(logs[0].level).toBe('warning');
    expect(logs[0].message).toContain('1990-2000');
  });

  it('refuses bad periods, years and cubes', async () => {
    await expect(normal('month', series(), { climatology_period: [2003, 2001] })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(normal('month', series(), { climatology_period: [2001] })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(normal('week')).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(normal('month', series(), { climatology_period: [1950, 1960] })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    const twoTimes = new DataCube({
      dims: [
        { name: 't', type: 'temporal', labels: ['2001-01-01'] },
        { name: 't2', type: 'temporal', labels: ['2001-01-01'] },
      ],
      data: new Float32Array(1),
    });
    await expect(normal('month', twoTimes)).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('anomaly', () => {
  it('subtracts the monthly normals computed by climatological_normal, matching dates to months', async () => {
    const graph = {
      normals: { process_id: 'climatological_normal', arguments: { data: P('c'), period: 'month', climatology_period: [2001, 2003] } },
      a: { process_id: 'anomaly', arguments: { data: P('c'), normals: { from_node: 'normals' }, period: 'month' }, result: true },
    };
    const out = (await evaluateGraph(graph, env, rootScope({ c: series() }))) as DataCube;
    expect(out.dims).toEqual(series().dims);
    // normals: Jan 28 (40 at pixel 0), Jun 56, Dec 256; the offsets cancel
    const jan = (v: number) => [v - 40, ...Array(7).fill(v - 28)];
    expect(valuesAt(out, 0)).toEqual(Array(8).fill(1 - 56));
    expect(valuesAt(out, 1)).toEqual(Array(8).fill(2 - 256));
    expect(valuesAt(out, 2)).toEqual([NaN, ...Array(7).fill(4 - 28)]);
    expect(valuesAt(out, 4)).toEqual(jan(16));
    expect(valuesAt(out, 7)).toEqual(Array(8).fill(128 - 56));
    expect(valuesAt(out, 9)).toEqual(jan(512));
  });

  // data: t x y x x (2 x 2), value 5000 + t*100 + r*10 + c
  const dataCube = (labels: string[]) => {
    const data = Float32Array.from({ length: labels.length * 4 }, (_, i) => 5000 + Math.floor(i / 4) * 100 + Math.floor((i % 4) / 2) * 10 + (i % 2));
    return new DataCube({ dims: [{ name: 't', type: 'temporal', labels }, ...spatialDims(grid)], data, grid });
  };

  it('matches period labels (seasons) and repeats normals along dimensions they lack', async () => {
    // data with bands: t(3) x bands(2) x y x x; normals t(4 seasons) x y x x: value s*1000 + r*10 + c
    const labels = ['2020-djf', '2020-jja', '2021-djf'];
    const data = Float32Array.from({ length: 3 * 2 * 4 }, (_, i) => 5000 + Math.floor(i / 8) * 100 + Math.floor((i % 8) / 4) * 7);
    const cube = new DataCube({ dims: [{ name: 't', type: 'temporal', labels }, { name: 'bands', type: 'bands', labels: ['a', 'b'] }, ...spatialDims(grid)], data, grid });
    const nd = Float32Array.from({ length: 16 }, (_, i) => Math.floor(i / 4) * 1000 + Math.floor((i % 4) / 2) * 10 + (i % 2));
    const normals = new DataCube({ dims: [{ name: 't', type: 'temporal', labels: ['djf', 'mam', 'jja', 'son'] }, ...spatialDims(grid)], data: nd, grid });
    const out: DataCube = await call('anomaly', { data: P('d'), normals: P('n'), period: 'season' }, { d: cube, n: normals });
    // 2020-djf, band a: 5000 - (0 + r*10 + c); band b: 5007 - ...
    expect(Array.from(out.data.slice(0, 8))).toEqual([5000, 4999, 4990, 4989, 5007, 5006, 4997, 4996]);
    // 2020-jja: 5100 - (2000 + r*10 + c)
    expect(Array.from(out.data.slice(8, 12))).toEqual([3100, 3099, 3090, 3089]);
    // 2021-djf: 5200 - (0 + ...)
    expect(Array.from(out.data.slice(16, 20))).toEqual([5200, 5199, 5190, 5189]);
  });

  it('matches numeric normals labels and normals with dimensions in another order', async () => {
    const cube = dataCube(['2001-01', '2001-06']);
    // normals laid out y x t: value 100 * month + r*10 + c at months 1 and 6
    const months = [1, 6];
    const nd = new Float32Array(8);
    for (let r = 0; r < 2; r++) for (let c = 0; c < 2; c++) for (let m = 0; m < 2; m++) nd[(r * 2 + c) * 2 + m] = 100 * months[m] + r * 10 + c;
    const normals = new DataCube({ dims: [...spatialDims(grid), { name: 't', type: 'temporal', labels: months }], data: nd, grid });
    const out: DataCube = await call('anomaly', { data: P('d'), normals: P('n'), period: 'month' }, { d: cube, n: normals });
    // 5000 + r*10 + c - (100 + r*10 + c) = 4900; 5100 - 600 = 4500
    expect(Array.from(out.data)).toEqual([4900, 4900, 4900, 4900, 4500, 4500, 4500, 4500]);
  });

  it('uses the one normal for every date with climatology-period and single-period', async () => {
    const cube = dataCube(['2001-01-01T00:00:00Z', '2005-07-01T00:00:00Z']);
    const normals = new DataCube({ dims: [{ name: 't', type: 'temporal', labels: ['climatology-period'] }, ...spatialDims(grid)], data: Float32Array.from([1, 2, 3, 4]), grid });
    for (const period of ['climatology-period', 'single-period']) {
      const out: DataCube = await call('anomaly', { data: P('d'), normals: P('n'), period }, { d: cube, n: normals });
      expect(Array.from(out.data)).toEqual([4999, 4999, 5007, 5007, 5099, 5099, 5107, 5107]);
    }
    const two = new DataCube({ dims: [{ name: 't', type: 'temporal', labels: ['a', 'b'] }], data: new Float32Array(2) });
    await expect(call('anomaly', { data: P('d'), normals: P('n'), period: 'single-period' }, { d: cube, n: two })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });

  it('gives no-data (and a warning) for dates without a normal, and refuses what does not fit', async () => {
    const cube = dataCube(['2020-01', '2020-02']);
    const normals = new DataCube({ dims: [{ name: 't', type: 'temporal', labels: ['01'] }], data: Float32Array.from([1000]) });
    logs.length = 0;
    const out: DataCube = await call('anomaly', { data: P('d'), normals: P('n'), period: 'month' }, { d: cube, n: normals });
    expect(Array.from(out.data)).toEqual([4000, 4001, 4010, 4011, NaN, NaN, NaN, NaN]);
    expect(logs.map((l) => l.level)).toEqual(['warning']);
    const run = (d: DataCube, n: DataCube, period = 'month') => call('anomaly', { data: P('d'), normals: P('n'), period }, { d, n });
    // no label matches at all
    await expect(run(dataCube(['2020-03']), normals)).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    // a label that is neither a month label nor a date
    await expect(run(dataCube(['spring']), normals)).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    // normals with a dimension the data lacks
    const extra = new DataCube({
      dims: [
        { name: 't', type: 'temporal', labels: ['01'] },
        { name: 'bands', type: 'bands', labels: ['a'] },
      ],
      data: new Float32Array(1),
    });
    await expect(run(cube, extra)).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    // normals on another grid
    const other: Grid = { ...grid, transform: [600010, 10, 0, 5300000, 0, -10] };
    const shifted = new DataCube({ dims: [{ name: 't', type: 'temporal', labels: ['01'] }, ...spatialDims(other)], data: new Float32Array(4), grid: other });
    await expect(run(cube, shifted)).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(run(cube, normals, 'fortnight')).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('resample_cube_temporal', () => {
  const SRC = ['2020-01-01T00:00:00Z', '2020-01-05T00:00:00Z', '2020-01-11T00:00:00Z'];
  /** t(3) x y(1) x x(2): the first pixel 1, 2, 3 (no-data at 2020-01-05), the second 10, 20, 30. */
  const g1: Grid = { epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], width: 2, height: 1 };
  const source = new DataCube({ dims: [{ name: 't', type: 'temporal', labels: SRC }, ...spatialDims(g1)], data: Float32Array.from([1, 10, NaN, 20, 3, 30]), grid: g1 });
  const target = (labels: string[], name = 't') =>
    new DataCube({
      dims: [
        { name, type: 'temporal', labels },
        { name: 'bands', type: 'bands', labels: ['x'] },
      ],
      data: new Float32Array(labels.length),
    });
  const TGT = ['2020-01-03T00:00:00Z', '2020-01-04T00:00:00Z', '2020-01-20T00:00:00Z', '2019-12-01'];
  const resample = (t: unknown, extra: Record<string, unknown> = {}) => call('resample_cube_temporal', { data: P('s'), target: P('t'), ...extra }, { s: source, t }) as Promise<DataCube>;

  it('takes the nearest source date for each target date (the earlier one on a tie), values as they are', async () => {
    const out = await resample(target(TGT));
    expect(out.dims[0]).toEqual({ name: 't', type: 'temporal', labels: TGT });
    expect(out.dims.slice(1)).toEqual(source.dims.slice(1));
    // 01-03: tie between 01-01 and 01-05 -> 01-01; 01-04 -> 01-05 (no-data kept); 01-20 -> 01-11; 2019-12-01 -> 01-01
    expect(Array.from(out.data)).toEqual([1, 10, NaN, 20, 3, 30, 1, 10]);
  });

  it('with valid_within looks for the nearest valid value per pixel within that many days', async () => {
    const two = await resample(target(TGT), { valid_within: 2 });
    // 01-03: 01-01 and 01-05 are both 2 days away, 01-01 first: 1, 10
    // 01-04: 01-05 (1 day) is no-data for the first pixel, 01-01 is 3 days away: no-data; 20
    // 01-20 and 2019-12-01: nothing within 2 days
    expect(Array.from(two.data)).toEqual([1, 10, NaN, 20, NaN, NaN, NaN, NaN]);
    const three = await resample(target(TGT), { valid_within: 3 });
    expect(Array.from(three.data)).toEqual([1, 10, 1, 20, NaN, NaN, NaN, NaN]);
    await expect(resample(target(TGT), { valid_within: -1 })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });

  it('reads only the dates of a deferred target, not its pixels', async () => {
    const meta = { id: 'T', title: 'T', description: '', license: 'proprietary', epsg: 32633, resolution: [10, 10] as [number, number], bands: [{ name: 'B1', data_type: 'float32', nodata: null }] };
    const box: [number, number, number, number] = [600000, 5299000, 601000, 5300000];
    const item = (id: string, datetime: string) => ({ id, datetime, epsg: 32633, bbox: box, bbox4326: transformBox(box, 32633, 4326), assets: { B1: { href: '/nonexistent.tif', sample: 0 } } });
    const src = { collections: { get: (id: string) => (id === 'T' ? (meta as any) : null), items: () => [item('a', '2020-01-04T00:00:00Z'), item('b', '2020-01-12T00:00:00Z')] } };
    const lazy = new LazyCube({
      source: src,
      collection: 'T',
      extent: { west: box[0], south: box[1], east: box[2], north: box[3], crs: 32633 },
      temporal: null,
      bands: null,
      target: {},
      resampling: 'nearest',
      mask: null,
    });
    const spy = vi.spyOn(lazy, 'materialize');
    const out = await resample(lazy);
    expect(spy).not.toHaveBeenCalled();
    expect(out.dims[0].labels).toEqual(['2020-01-04T00:00:00Z', '2020-01-12T00:00:00Z']);
    expect(Array.from(out.data)).toEqual([NaN, 20, 3, 30]);
  });

  it('checks the dimensions', async () => {
    await expect(resample(target(TGT), { dimension: 'time' })).rejects.toMatchObject({ code: 'DimensionNotAvailable' });
    await expect(resample(target(TGT, 'time'))).rejects.toMatchObject({ code: 'DimensionMismatch' });
    const withBands = new DataCube({ dims: [...source.dims.slice(0, 1), { name: 'x', type: 'other', labels: [0] }], data: new Float32Array(3) });
    await expect(resample(withBands, { dimension: 'x' })).rejects.toMatchObject({ code: 'DimensionMismatch' });
    const ok = await resample(target(TGT), { dimension: 't' });
    expect(ok.dims[0].labels).toEqual(TGT);
  });
});
