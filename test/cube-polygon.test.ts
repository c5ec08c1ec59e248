// apply_polygon and inspect, run through the evaluator on small hand-made cubes; the pixels of the
// polygons are worked out by hand in the comments. What a child process gets is read from what
// inspect logs of it, as a user would. Also: the quick proof of polygon validity agrees with JSTS.
import { describe, it, expect } from 'vitest';
import { evaluateGraph, rootScope, type EvalEnv } from '../src/graph/evaluate.js';
import { DataCube, spatialDims, type Dimension } from '../src/datacube/datacube.js';
import { LazyCube } from '../src/data/lazy.js';
import { transformBox } from '../src/geometry/crs.js';
import type { Grid } from '../src/core/grid.js';
import { engineEnv } from './engine-env.js';
import { allPlainlyValid } from '../src/geometry/plain-polygons.js';
import { DEFAULT_GEOMETRY_LIMITS } from '../src/geometry/geometry-column.js';
import { featuresFromGeoJson } from '../src/datacube/geojson-in.js';
import { mulberry32 } from '../src/core/random.js';

const { env, run, logs } = engineEnv();
/** What inspect logged of the cut-outs a child process got (its summary: shape, dimensions, statistics). */
const cutOuts = () => logs.filter((l) => l.message === 'cut-out').map((l) => l.data.data);
const P = (name: string) => ({ from_parameter: name });
const call = (process_id: string, args: Record<string, unknown>, values: Record<string, unknown> = {}, e: EvalEnv = env) =>
  evaluateGraph({ n: { process_id, arguments: args, result: true } }, e, rootScope(values)) as Promise<any>;

// A grid in EPSG:4326: pixel centres x = 10.05 + 0.1 c (c = 0..4), y = 49.95 - 0.1 r (r = 0..3).
const g: Grid = { epsg: 4326, transform: [10, 0.1, 0, 50, 0, -0.1], width: 5, height: 4 };

/** t(2) x bands(1) x y x x: value t*100 + r*10 + c. */
function cube(): DataCube {
  const dims: Dimension[] = [{ name: 't', type: 'temporal', labels: ['2024-06-01T00:00:00Z', '2024-06-11T00:00:00Z'] }, { name: 'bands', type: 'bands', labels: ['B1'] }, ...spatialDims(g)];
  return new DataCube({ dims, data: Float32Array.from({ length: 40 }, (_, i) => Math.floor(i / 20) * 100 + Math.floor((i % 20) / 5) * 10 + (i % 5)), grid: g });
}

const poly = (ring: number[][]) => ({ type: 'Polygon', coordinates: [ring] });
// Columns 0-1, rows 0-1.
const A = poly([
  [10, 49.8],
  [10.2, 49.8],
  [10.2, 50],
  [10, 50],
  [10, 49.8],
]);
// A triangle right of the line from (10.2, 50) to (10.5, 49.6), x = 10.2 + 0.75 (50 - y):
// row 0 (y 49.95): x > 10.2375 -> columns 2, 3, 4; row 1: x > 10.3125 -> 3, 4; row 2: x > 10.3875 -> 4;
// row 3: x > 10.4625 -> none.
const B = poly([
  [10.2, 50],
  [10.5, 50],
  [10.5, 49.6],
  [10.2, 50],
]);
const inA = (r: number, c: number) => r <= 1 && c <= 1;
const inB = (r: number, c: number) => (r === 0 && c >= 2) || (r === 1 && c >= 3) || (r === 2 && c === 4);

/** Child process: log the cut-out, then add 1000 to every value. */
const ADD = {
  process_graph: {
    s: { process_id: 'inspect', arguments: { data: P('data'), message: 'cut-out' } },
    a: { process_id: 'apply', arguments: { data: { from_node: 's' }, process: { process_graph: { p: { process_id: 'add', arguments: { x: P('x'), y: 1000 }, result: true } } } }, result: true },
  },
};

const expected = (fill: number) =>
  Array.from({ length: 40 }, (_, i) => {
    const r = Math.floor((i % 20) / 5);
    const c = i % 5;
    const v = Math.floor(i / 20) * 100 + r * 10 + c;
    return inA(r, c) || inB(r, c) ? v + 1000 : fill;
  });

describe('apply_polygon', () => {
  it('runs the child process on each cut-out and writes back the pixels inside the polygons', async () => {
    logs.length = 0;
    const fc = { type: 'FeatureCollection', features: [A, B].map((geometry) => ({ type: 'Feature', properties: {}, geometry })) };
    const out: DataCube = await call('apply_polygon', { data: P('c'), geometries: fc, process: ADD }, { c: cube() });
    expect(out.dims).toEqual(cube().dims);
    expect(out.grid).toEqual(g);
    expect(Array.from(out.data)).toEqual(expected(NaN));
    // The cut-outs: A is columns 0-1, rows 0-1, all inside; B columns 2-4, rows 0-2, no-data outside the triangle.
    const [a, b] = cutOuts();
    expect(cutOuts()).toHaveLength(2);
    expect(a.shape).toEqual([2, 1, 2, 2]);
    expect(a['cube:dimensions'].x).toMatchObject({ extent: [10, 10.2], step: 0.1, count: 2 });
    // 0, 1, 10, 11 and 100 more for the second date
    expect(a.statistics).toEqual({ values: 8, nodata: 0, min: 0, max: 111, mean: 55.5 });
    expect(b.shape).toEqual([2, 1, 3, 3]);
    expect(b['cube:dimensions'].x.extent[0]).toBeCloseTo(10.2, 12);
    // 2, 3, 4, 13, 14, 24 inside (3 of 9 outside), and 100 more for the second date: mean 720 / 12
    expect(b.statistics).toEqual({ values: 18, nodata: 6, min: 2, max: 124, mean: 60 });
  });

  it('puts mask_value outside the polygons, in the cut-outs and in the result', async () => {
    logs.length = 0;
    const out: DataCube = await call('apply_polygon', { data: P('c'), geometries: { type: 'MultiPolygon', coordinates: [B.coordinates] }, process: ADD, mask_value: -1 }, { c: cube() });
    // The cut-out of B with -1 for the 6 pixels outside the triangle: (720 - 6) / 18
    expect(cutOuts()[0].statistics).toEqual({ values: 18, nodata: 0, min: -1, max: 124, mean: 714 / 18 });
    expect(Array.from(out.data)).toEqual(expected(-1).map((v, i) => (inA(Math.floor((i % 20) / 5), i % 5) ? -1 : v)));
    const yes: DataCube = await call('apply_polygon', { data: P('c'), geometries: B, process: ADD, mask_value: true }, { c: cube() });
    expect(yes.data[5]).toBe(1); // row 1, column 0: outside
    await expect(call('apply_polygon', { data: P('c'), geometries: B, process: ADD, mask_value: 'x' }, { c: cube() })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });

  it('ignores empty polygons and polygons without pixels; the child process may rename labels', async () => {
    logs.length = 0;
    const outside = poly([
      [20, 40],
      [20.1, 40],
      [20.1, 40.1],
      [20, 40],
    ]);
    const empty = { type: 'Polygon', coordinates: [] };
    const rename = {
      process_graph: {
        s: { process_id: 'inspect', arguments: { data: P('data'), message: 'cut-out' } },
        r: { process_id: 'rename_labels', arguments: { data: { from_node: 's' }, dimension: 'bands', target: ['other'], source: ['B1'] }, result: true },
      },
    };
    const fc = { type: 'FeatureCollection', features: [empty, outside, A].map((geometry) => ({ type: 'Feature', properties: {}, geometry })) };
    const out: DataCube = await call('apply_polygon', { data: P('c'), geometries: fc, process: rename }, { c: cube() });
    expect(cutOuts()).toHaveLength(1);
    expect(out.dims[1].labels).toEqual(['B1']);
    expect(Array.from(out.data.slice(0, 10))).toEqual([0, 1, NaN, NaN, NaN, 10, 11, NaN, NaN, NaN]);
  });

  it('raises GeometriesOverlap when a pixel centre lies in two polygons', async () => {
    // columns 1-2, rows 1-2: pixel (1, 1) is in A too
    const C = poly([
      [10.1, 49.7],
      [10.3, 49.7],
      [10.3, 49.9],
      [10.1, 49.9],
      [10.1, 49.7],
    ]);
    await expect(
      call('apply_polygon', { data: P('c'), geometries: { type: 'FeatureCollection', features: [A, C].map((geometry) => ({ type: 'Feature', properties: {}, geometry })) }, process: ADD }, { c: cube() }),
    ).rejects.toMatchObject({
      code: 'GeometriesOverlap',
    });
    // touching polygons (A and B share the edge x = 10.2) do not overlap
    await expect(
      call('apply_polygon', { data: P('c'), geometries: { type: 'FeatureCollection', features: [A, B].map((geometry) => ({ type: 'Feature', properties: {}, geometry })) }, process: ADD }, { c: cube() }),
    ).resolves.toBeInstanceOf(DataCube);
  });

  it('refuses other geometries and child processes that change the cube', async () => {
    await expect(call('apply_polygon', { data: P('c'), geometries: { type: 'Point', coordinates: [10.05, 49.95] }, process: ADD }, { c: cube() })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(call('apply_polygon', { data: P('c'), geometries: { type: 'Polygon', coordinates: [] }, process: ADD }, { c: cube() })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    const reduce = {
      process_graph: {
        r: {
          process_id: 'reduce_dimension',
          arguments: { data: P('data'), dimension: 'bands', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: P('data') }, result: true } } } },
          result: true,
        },
      },
    };
    await expect(call('apply_polygon', { data: P('c'), geometries: A, process: reduce }, { c: cube() })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    const number = { process_graph: { r: { process_id: 'constant', arguments: { x: 1 }, result: true } } };
    await expect(call('apply_polygon', { data: P('c'), geometries: A, process: number }, { c: cube() })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('inspect', () => {
  it('logs a summary of a cube with message, code and level, and passes the cube on', async () => {
    logs.length = 0;
    const c = cube();
    c.data[0] = NaN;
    const out = await call('inspect', { data: P('c'), message: 'after load', code: 'C1', level: 'warning' }, { c });
    expect(out).toBe(c);
    expect(logs).toHaveLength(1);
    const e = logs[0];
    expect(e.level).toBe('warning');
    expect(e.message).toBe('after load');
    expect(e.data.code).toBe('C1');
    const s = e.data.data;
    expect(s.type).toBe('datacube');
    expect(s.shape).toEqual([2, 1, 4, 5]);
    expect(s['cube:dimensions'].t).toEqual({ type: 'temporal', extent: ['2024-06-01T00:00:00Z', '2024-06-11T00:00:00Z'], count: 2, values: ['2024-06-01T00:00:00Z', '2024-06-11T00:00:00Z'] });
    expect(s['cube:dimensions'].bands).toEqual({ type: 'bands', count: 1, values: ['B1'] });
    expect(s['cube:dimensions'].x).toEqual({ type: 'spatial', axis: 'x', extent: [10, 10.5], step: 0.1, reference_system: 4326, count: 5 });
    expect(s['cube:dimensions'].y.extent[0]).toBeCloseTo(49.6, 12);
    // values 1..134 without the first (0 -> NaN): min 1, max 134, mean (sum of all - 0) / 39
    const sum = Array.from(cube().data).reduce((a, b) => a + b, 0);
    expect(s.statistics).toEqual({ values: 40, nodata: 1, min: 1, max: 134, mean: sum / 39 });
    expect(JSON.parse(JSON.stringify(e.data))).toEqual(e.data);
  });

  it('describes a deferred load by its plan without reading it', async () => {
    logs.length = 0;
    const meta = { id: 'T', title: 'T', description: '', license: 'proprietary', epsg: 32633, resolution: [10, 10] as [number, number], bands: [{ name: 'B1', data_type: 'float32', nodata: null }] };
    const box: [number, number, number, number] = [600000, 5299000, 601000, 5300000];
    const item = { id: 'a', datetime: '2020-01-04T00:00:00Z', epsg: 32633, bbox: box, bbox4326: transformBox(box, 32633, 4326), assets: { B1: { href: '/nonexistent.tif', sample: 0 } } };
    const source = { collections: { get: (id: string) => (id === 'T' ? (meta as any) : null), items: () => [item] } };
    const lazy = new LazyCube({
      source,
      collection: 'T',
      extent: { west: box[0], south: box[1], east: box[2], north: box[3], crs: 32633 },
      temporal: null,
      bands: null,
      target: {},
      resampling: 'nearest',
      mask: null,
    });
    // (its one item is a file that does not exist: a read would fail)
    const out = await call('inspect', { data: P('c') }, { c: lazy });
    expect(out).toBe(lazy);
    expect(run.stats.values).toBe(0);
    expect(logs).toHaveLength(1);
    expect(logs[0].level).toBe('info');
    expect(logs[0].data.code).toBe('User');
    const s = logs[0].data.data;
    expect(s).toMatchObject({ type: 'datacube', loaded: false, collection: 'T' });
    expect(s.plan).toEqual({ dates: ['2020-01-04T00:00:00Z'], bands: ['B1'], grid: { epsg: 32633, width: 100, height: 100, transform: [600000, 10, 0, 5300000, 0, -10] }, values: 10000 });
  });

  it('shortens long arrays, passes plain values, and checks the level', async () => {
    logs.length = 0;
    const long = Array.from({ length: 30 }, (_, i) => i);
    expect(await call('inspect', { data: long, message: 'm' })).toEqual(long);
    expect(logs[0].data.data).toEqual({ count: 30, first: [0, 1, 2, 3, 4], last: [25, 26, 27, 28, 29] });
    expect(await call('inspect', { data: { a: 1, b: [null, 'x'] } })).toEqual({ a: 1, b: [null, 'x'] });
    expect(logs[1].data.data).toEqual({ a: 1, b: [null, 'x'] });
    expect(logs[1].message).toContain('inspect');
    await expect(call('inspect', { data: 1, level: 'fatal' })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    // without a run nothing is logged, the value still passes
    const quiet: EvalEnv = { ...env, run: undefined };
    expect(await call('inspect', { data: 5 }, {}, quiet)).toBe(5);
    expect(logs).toHaveLength(2);
  });

  it('inside a child process on pixels passes the data on without an entry per pixel', async () => {
    logs.length = 0;
    const child = {
      process_graph: {
        i: { process_id: 'inspect', arguments: { data: P('x'), message: 'pixel' } },
        a: { process_id: 'add', arguments: { x: { from_node: 'i' }, y: 1 }, result: true },
      },
    };
    const c = cube();
    const out: DataCube = await call('apply', { data: P('c'), process: child }, { c });
    expect(Array.from(out.data)).toEqual(Array.from(c.data).map((v) => v + 1));
    expect(logs.filter((l) => l.message === 'pixel')).toHaveLength(0);
  });
});

describe('plainly valid polygons: a quick proof of validity before JSTS', () => {
  const limits = DEFAULT_GEOMETRY_LIMITS;
  const columnOf = (rings: number[][][]) =>
    featuresFromGeoJson(
      { type: 'FeatureCollection', features: rings.map((r) => ({ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [r] } })) },
      { processId: 'test', parameter: 'g', limits },
    ).geometries;

  it('never calls valid what JSTS calls invalid, and proves the usual fields valid', async () => {
    const { polygonFault } = await import('../src/datacube/validity.js');
    const r = mulberry32(7);
    const rings: number[][][] = [];
    for (let k = 0; k < 600; k++) {
      const n = 3 + Math.floor(r() * 14);
      const pts: number[][] = [];
      if (k % 3 === 0) {
        // a star around a centre, as bench/zonal.ts draws fields: valid
        for (let i = 0; i < n; i++) {
          const a = ((i + (r() - 0.5) * 0.6) * 2 * Math.PI) / n;
          const rad = 100 * (1 + (r() - 0.5) * 0.4);
          pts.push([600000 + rad * Math.cos(a), 5400000 + rad * Math.sin(a)]);
        }
      } else if (k % 3 === 1) {
        // random vertices in a box: mostly self-intersecting
        for (let i = 0; i < n; i++) pts.push([Math.floor(r() * 8), Math.floor(r() * 8)]);
      } else {
        // a star with one vertex pulled onto, or across, another edge: touching and crossing cases
        for (let i = 0; i < n; i++) pts.push([Math.round(10 * Math.cos((i * 2 * Math.PI) / n)), Math.round(10 * Math.sin((i * 2 * Math.PI) / n))]);
        const j = Math.floor(r() * n);
        pts[j] = [...pts[(j + 2) % n]];
      }
      rings.push([...pts, pts[0]]);
    }
    // hand-made: bow-tie, a spike folding back, collinear run, a triangle, a figure-8 touching at a vertex
    rings.push([
      [0, 0],
      [2, 2],
      [2, 0],
      [0, 2],
      [0, 0],
    ]);
    rings.push([
      [0, 0],
      [4, 0],
      [4, 4],
      [4, 2],
      [0, 4],
      [0, 0],
    ]);
    rings.push([
      [0, 0],
      [1, 0],
      [2, 0],
      [2, 2],
      [0, 0],
    ]);
    rings.push([
      [0, 0],
      [3, 0],
      [0, 3],
      [0, 0],
    ]);
    rings.push([
      [0, 0],
      [2, 1],
      [4, 0],
      [4, 2],
      [2, 1],
      [0, 2],
      [0, 0],
    ]);
    let proved = 0;
    for (const ring of rings) {
      const c = columnOf([ring]);
      const plain = allPlainlyValid(c);
      if (plain) {
        proved++;
        expect(polygonFault(c, 0), JSON.stringify(ring)).toBeNull();
      }
    }
    // every star of the first kind is proved valid, and nothing invalid is
    expect(proved).toBeGreaterThanOrEqual(200);
    expect(allPlainlyValid(columnOf(rings.filter((_, k) => k % 3 === 0 && k < 600)))).toBe(true);
    expect(
      allPlainlyValid(
        columnOf([
          [
            [0, 0],
            [2, 2],
            [2, 0],
            [0, 2],
            [0, 0],
          ],
        ]),
      ),
    ).toBe(false);
  });
});
