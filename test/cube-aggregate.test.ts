// aggregate_temporal, aggregate_temporal_period and aggregate_spatial on small hand-made cubes,
// checked against values computed by hand; and on loads of an engine's own records, run through
// execute() on an engine built as a compute thread builds it.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { evaluateGraph, rootScope } from '../src/graph/evaluate.js';
import { type Graph } from '../src/core/graph.js';
import type { RunContext } from '../src/core/run-context.js';
import { predefined } from '../src/processes/registry.js';
import type { ProcessDef } from '../src/core/process.js';
import { processes as temporal } from '../src/processes/cubes/aggregate.js';
import { processes as zonal } from '../src/processes/cubes/zonal.js';
const mine = [...temporal, ...zonal];
import { DataCube, spatialDims } from '../src/datacube/datacube.js';
import { transformer } from '../src/geometry/crs.js';
import type { Grid } from '../src/core/grid.js';
import { createEngine, type Engine } from '../src/engine/engine.js';
import { execute } from '../src/engine/execute.js';
import { openStore } from '../src/store/db.js';
import { importFiles } from '../src/ingest/import.js';
import { writeCog } from '../src/output/cog-writer.js';
import { featuresFromGeoJson } from '../src/datacube/geojson-in.js';
import { testEngine } from './engine-env.js';

const defs = new Map<string, ProcessDef>([...predefined.specs().map((s) => [s.id, predefined.get(s.id)!] as [string, ProcessDef]), ...mine.map((d) => [d.id, predefined.get(d.id)!] as [string, ProcessDef])]);
const run: RunContext = { engine: testEngine(), catalog: { collections: { get: () => null, items: () => [] } } as any, maxValues: 1e9, limitAdvice: '', results: [], log: () => {}, stats: { values: 0 } };
const env = { predefined: (id: string) => defs.get(id), userProcess: () => null, run };

const reducer = (id: string, args: Record<string, unknown> = {}) => ({ process_graph: { r: { process_id: id, arguments: { data: { from_parameter: 'data' }, ...args }, result: true } } });
const MEAN = reducer('mean');
const COUNT = reducer('count');

/** Runs one process on `cube`; `params` are further values the arguments can read with from_parameter. */
async function call(id: string, args: Record<string, unknown>, cube: unknown, params: Record<string, unknown> = {}): Promise<DataCube> {
  const graph: Graph = { n: { process_id: id, arguments: { data: { from_parameter: 'cube' }, ...args }, result: true } };
  return (await evaluateGraph(graph, env, rootScope({ cube, ...params }))) as DataCube;
}

const GRID: Grid = { epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], width: 5, height: 4 };
const T3 = ['2024-01-05T10:00:00Z', '2024-01-20T10:00:00Z', '2024-02-10T10:00:00Z'];

/** t=3, bands=2, y=4, x=5 with value t*1000 + b*100 + row*10 + col. */
function cube(times = T3): DataCube {
  const nt = times.length;
  const data = new Float32Array(nt * 2 * 4 * 5);
  for (let t = 0; t < nt; t++) for (let b = 0; b < 2; b++) for (let r = 0; r < 4; r++) for (let c = 0; c < 5; c++) data[((t * 2 + b) * 4 + r) * 5 + c] = t * 1000 + b * 100 + r * 10 + c;
  return new DataCube({
    dims: [{ name: 't', type: 'temporal', labels: times }, { name: 'bands', type: 'bands', labels: ['B1', 'B2'] }, ...spatialDims(GRID)],
    data,
    grid: GRID,
  });
}

/** A cube with only a temporal dimension, one value 1 per date. */
function timeline(times: string[], name = 't'): DataCube {
  return new DataCube({ dims: [{ name, type: 'temporal', labels: times }], data: new Float32Array(times.length).fill(1) });
}

/** The expected t x bands x y x x data: f(group, b, r, c). */
function expected(groups: number, f: (g: number, b: number, r: number, c: number) => number): number[] {
  const out: number[] = [];
  for (let g = 0; g < groups; g++) for (let b = 0; b < 2; b++) for (let r = 0; r < 4; r++) for (let c = 0; c < 5; c++) out.push(Math.fround(f(g, b, r, c)));
  return out;
}

describe('aggregate_temporal', () => {
  const intervals = [
    ['2024-01-01', '2024-02-01'],
    ['2024-02-01', '2024-03-01'],
    ['2024-03-01', '2024-04-01'],
  ];

  it('reduces the dates of each interval; the starts are the labels; an empty interval gives no-data', async () => {
    const out = await call('aggregate_temporal', { intervals, reducer: MEAN }, cube());
    expect(out.dims.map((d) => d.name)).toEqual(['t', 'bands', 'y', 'x']);
    expect(out.dims[0]).toMatchObject({ type: 'temporal', labels: ['2024-01-01', '2024-02-01', '2024-03-01'] });
    expect(out.grid).toEqual(GRID);
    // January: dates 0 and 1 -> mean of t*1000 is 500; February: date 2 -> 2000; March: none.
    expect([...out.data]).toEqual(expected(3, (g, b, r, c) => (g === 0 ? 500 : g === 1 ? 2000 : NaN) + b * 100 + r * 10 + c));
  });

  it('gives the reducer of each interval the dates inside it', async () => {
    const out = await call('aggregate_temporal', { intervals, reducer: COUNT }, cube());
    expect([...out.data]).toEqual(expected(3, (g) => [2, 1, 0][g]));
  });

  it('takes user labels, overlapping intervals and a named dimension', async () => {
    const out = await call(
      'aggregate_temporal',
      {
        intervals: [
          ['2024-01-01T00:00:00Z', '2024-03-01T00:00:00Z'],
          ['2024-01-10', '2024-02-11'],
        ],
        labels: ['all', 'late'],
        dimension: 't',
        reducer: MEAN,
      },
      cube(),
    );
    expect(out.dims[0].labels).toEqual(['all', 'late']);
    // all: dates 0, 1, 2 -> 1000; late: dates 1, 2 -> 1500.
    expect([...out.data]).toEqual(expected(2, (g, b, r, c) => (g === 0 ? 1000 : 1500) + b * 100 + r * 10 + c));
  });

  it('matches times of day, wrapping over midnight', async () => {
    const times = ['2024-01-01T05:00:00Z', '2024-01-01T10:00:00Z', '2024-01-02T20:00:00Z'];
    const out = await call(
      'aggregate_temporal',
      {
        intervals: [
          ['06:00:00', '18:00:00'],
          ['18:00:00', '06:00:00'],
        ],
        labels: ['day', 'night'],
        reducer: MEAN,
      },
      cube(times),
    );
    // day: date 1 -> 1000; night: dates 0 and 2 -> 1000 as well, but from (0 + 2000) / 2.
    expect(out.dims[0].labels).toEqual(['day', 'night']);
    expect([...out.data]).toEqual(expected(2, (_g, b, r, c) => 1000 + b * 100 + r * 10 + c));
  });

  it('refuses empty intervals, equal starts without labels and a wrong number of labels', async () => {
    await expect(call('aggregate_temporal', { intervals: [['2024-02-01', '2024-01-01']], reducer: MEAN }, cube())).rejects.toMatchObject({ code: 'TemporalExtentEmpty' });
    await expect(
      call(
        'aggregate_temporal',
        {
          intervals: [
            ['2024-01-01', '2024-02-01'],
            ['2024-01-01T00:00:00Z', '2024-03-01'],
          ],
          reducer: MEAN,
        },
        cube(),
      ),
    ).rejects.toMatchObject({ code: 'DistinctDimensionLabelsRequired' });
    await expect(call('aggregate_temporal', { intervals, labels: ['a', 'b'], reducer: MEAN }, cube())).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(call('aggregate_temporal', { intervals, dimension: 'bands', reducer: MEAN }, cube())).rejects.toMatchObject({ code: 'DimensionNotAvailable' });
    await expect(call('aggregate_temporal', { intervals, dimension: 'time', reducer: MEAN }, cube())).rejects.toMatchObject({ code: 'DimensionNotAvailable' });
  });
});

describe('aggregate_temporal_period', () => {
  async function periods(period: string, times: string[]) {
    const out = await call('aggregate_temporal_period', { period, reducer: COUNT }, timeline(times));
    return { labels: out.dims[0].labels, counts: [...out.data] };
  }

  it('month: reduces each month, labels YYYY-MM, months without dates in between give no-data', async () => {
    const times = ['2024-01-05T10:00:00Z', '2024-01-20T10:00:00Z', '2024-03-10T10:00:00Z'];
    const out = await call('aggregate_temporal_period', { period: 'month', reducer: MEAN }, cube(times));
    expect(out.dims[0]).toMatchObject({ name: 't', type: 'temporal', labels: ['2024-01', '2024-02', '2024-03'] });
    expect([...out.data]).toEqual(expected(3, (g, b, r, c) => (g === 0 ? 500 : g === 1 ? NaN : 2000) + b * 100 + r * 10 + c));
  });

  it('gives the reducer of each period its dates', async () => {
    const times = ['2024-01-05T10:00:00Z', '2024-01-20T10:00:00Z', '2024-04-10T10:00:00Z'];
    const out = await call('aggregate_temporal_period', { period: 'month', reducer: COUNT }, cube(times));
    // January (2 dates), February and March (none), April (1).
    expect(out.dims[0].labels).toEqual(['2024-01', '2024-02', '2024-03', '2024-04']);
    expect([...out.data]).toEqual(expected(4, (g) => [2, 0, 0, 1][g]));
  });

  it('hour', async () => {
    expect(await periods('hour', ['2020-06-01T00:00:00Z', '2020-06-01T00:59:59Z', '2020-06-01T01:00:00Z', '2020-06-01T01:30:00Z', '2020-06-01T04:00:00Z'])).toEqual({
      labels: ['2020-06-01-00', '2020-06-01-01', '2020-06-01-02', '2020-06-01-03', '2020-06-01-04'],
      counts: [2, 2, 0, 0, 1],
    });
  });

  it('day: day of the year, complete from the first to the last date', async () => {
    const { labels, counts } = await periods('day', ['2020-01-01T00:00:00Z', '2020-01-03T12:00:00Z', '2020-12-31T23:00:00Z']);
    expect(labels.length).toBe(366); // 2020 is a leap year
    expect(labels.slice(0, 3)).toEqual(['2020-001', '2020-002', '2020-003']);
    expect(labels[365]).toBe('2020-366');
    expect(counts.slice(0, 3)).toEqual([1, 0, 1]);
    expect(counts[365]).toBe(1);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(3);
  });

  it('week: ISO weeks and week-years', async () => {
    expect(await periods('week', ['2022-12-06T12:00:00Z', '2022-12-07T12:00:00Z', '2022-12-12T00:00:00Z', '2022-12-18T23:59:59Z', '2023-01-01T12:00:00Z'])).toEqual({
      labels: ['2022-49', '2022-50', '2022-51', '2022-52'],
      counts: [2, 2, 0, 1],
    });
    // 2020-12-31 (Thursday) is in week 53 of 2020; 2021-01-03 (Sunday) too; 2021-01-04 starts week 1.
    expect(await periods('week', ['2020-12-31T00:00:00Z', '2021-01-03T00:00:00Z', '2021-01-04T00:00:00Z'])).toEqual({ labels: ['2020-53', '2021-01'], counts: [2, 1] });
  });

  it('dekad: 1-10, 11-20, 21-end of month, numbered 01-36', async () => {
    expect(await periods('dekad', ['2024-01-28', '2024-01-31', '2024-02-01', '2024-02-10', '2024-02-29'])).toEqual({
      labels: ['2024-03', '2024-04', '2024-05', '2024-06'],
      counts: [2, 2, 0, 1],
    });
    expect((await periods('dekad', ['2023-12-25'])).labels).toEqual(['2023-36']);
  });

  it('season: a winter spans December to February and has the year of its December', async () => {
    expect(await periods('season', ['2023-12-28', '2024-02-29', '2024-03-01', '2024-04-10', '2024-11-30'])).toEqual({
      labels: ['2023-djf', '2024-mam', '2024-jja', '2024-son'],
      counts: [2, 2, 0, 1],
    });
    expect(await periods('season', ['2024-01-15', '2024-12-01'])).toEqual({ labels: ['2023-djf', '2024-mam', '2024-jja', '2024-son', '2024-djf'], counts: [1, 0, 0, 0, 1] });
  });

  it('tropical-season: November-April (year of its November) and May-October', async () => {
    expect(await periods('tropical-season', ['2023-11-01', '2024-04-30', '2024-05-01', '2024-10-10', '2024-11-30'])).toEqual({
      labels: ['2023-ndjfma', '2024-mjjaso', '2024-ndjfma'],
      counts: [2, 2, 1],
    });
  });

  it('year, decade and decade-ad', async () => {
    expect(await periods('year', ['2020-01-01', '2020-06-01', '2022-01-01', '2022-12-31', '2023-06-28T12:55:12Z'])).toEqual({ labels: ['2020', '2021', '2022', '2023'], counts: [2, 0, 2, 1] });
    expect(await periods('decade', ['2020-01-01', '2029-12-31T23:48:59Z', '2030-01-01', '2039-12-31T23:59:59Z'])).toEqual({ labels: ['2020', '2030'], counts: [2, 2] });
    expect(await periods('decade-ad', ['2020-01-01', '2021-01-01', '2030-12-31T23:48:59Z', '2041-01-01', '2050-12-31T23:59:59Z'])).toEqual({
      labels: ['2011', '2021', '2031', '2041'],
      counts: [1, 2, 0, 2],
    });
  });

  it('finds the temporal dimension by type or name and refuses ambiguity', async () => {
    const two = new DataCube({
      dims: [
        { name: 't', type: 'temporal', labels: ['2024-01-01'] },
        { name: 't2', type: 'temporal', labels: ['2024-01-01', '2024-02-01'] },
      ],
      data: new Float32Array([1, 2]),
    });
    await expect(call('aggregate_temporal_period', { period: 'month', reducer: MEAN }, two)).rejects.toMatchObject({ code: 'TooManyDimensions' });
    const out = await call('aggregate_temporal_period', { period: 'year', reducer: MEAN, dimension: 't2' }, two);
    expect(out.dims.map((d) => [d.name, d.labels])).toEqual([
      ['t', ['2024-01-01']],
      ['t2', ['2024']],
    ]);
    expect([...out.data]).toEqual([1.5]);
    const flat = new DataCube({ dims: [{ name: 'bands', type: 'bands', labels: ['a'] }], data: new Float32Array([1]) });
    await expect(call('aggregate_temporal_period', { period: 'month', reducer: MEAN }, flat)).rejects.toMatchObject({ code: 'DimensionNotAvailable' });
    await expect(call('aggregate_temporal_period', { period: 'month', reducer: MEAN, dimension: 'time' }, cube())).rejects.toMatchObject({ code: 'DimensionNotAvailable' });
  });
});

describe('aggregate_spatial', () => {
  const toLonLat = transformer(32633, 4326);
  /** A polygon around a UTM box (corners mapped to lon/lat). */
  const box = (x0: number, y0: number, x1: number, y1: number) => ({
    type: 'Polygon',
    coordinates: [[toLonLat(x0, y0), toLonLat(x1, y0), toLonLat(x1, y1), toLonLat(x0, y1), toLonLat(x0, y0)]],
  });
  // Columns 0-1, rows 0-1: 4 pixels.
  const A = box(600000, 5299980, 600020, 5300000);
  // Column 3, row 3: the pixel holding the point.
  const B = { type: 'Point', coordinates: toLonLat(600035, 5299965) };
  // Far away: no pixel.
  const C = {
    type: 'Polygon',
    coordinates: [
      [
        [10, 10],
        [10.1, 10],
        [10.1, 10.1],
        [10, 10],
      ],
    ],
  };
  const features = { type: 'FeatureCollection', features: [A, B, C].map((geometry, i) => ({ type: 'Feature', properties: { i }, geometry })) };

  it('gives a vector cube: geometry first, then the other dimensions', async () => {
    const out = await call('aggregate_spatial', { geometries: features, reducer: MEAN }, cube());
    expect(out.dims.map((d) => [d.name, d.type])).toEqual([
      ['geometry', 'geometry'],
      ['t', 'temporal'],
      ['bands', 'bands'],
    ]);
    expect(out.dims[0].labels).toEqual([0, 1, 2]);
    expect([0, 1, 2].map((g) => out.features!.geometries.toGeoJSON(g))).toEqual([A, B, C]);
    expect(out.features!.properties.column('i')).toEqual([0, 1, 2]);
    expect(out.grid).toBeNull();
    const want: number[] = [];
    // A: mean of row*10 + col over rows 0-1, cols 0-1 = (0 + 1 + 10 + 11) / 4 = 5.5; B: 33; C: no-data.
    for (const g of [5.5, 33, NaN]) for (let t = 0; t < 3; t++) for (let b = 0; b < 2; b++) want.push(t * 1000 + b * 100 + g);
    expect([...out.data]).toEqual(want);
  });

  it('gives the reducer of each geometry its pixels', async () => {
    const out = await call('aggregate_spatial', { geometries: features, reducer: COUNT }, cube());
    // A holds 4 pixels and B 1, for each of 3 dates x 2 bands; C none (no-data).
    expect([...out.data]).toEqual([...Array(6).fill(4), ...Array(6).fill(1), ...Array(6).fill(NaN)]);
  });

  it('adds value, total_count and valid_count with target_dimension', async () => {
    const c = cube();
    const data = c.data.slice();
    data[1] = NaN; // t 0, band 0, row 0, col 1
    const out = await call('aggregate_spatial', { geometries: features, reducer: MEAN, target_dimension: 'stats' }, c.with({ data }));
    expect(out.dims.map((d) => d.name)).toEqual(['geometry', 't', 'bands', 'stats']);
    expect(out.dims[3]).toEqual({ name: 'stats', type: 'other', labels: ['value', 'total_count', 'valid_count'] });
    const want: number[] = [];
    for (let t = 0; t < 3; t++) for (let b = 0; b < 2; b++) want.push(...(t === 0 && b === 0 ? [Math.fround(21 / 3), 4, 3] : [t * 1000 + b * 100 + 5.5, 4, 4]));
    for (let t = 0; t < 3; t++) for (let b = 0; b < 2; b++) want.push(t * 1000 + b * 100 + 33, 1, 1);
    for (let t = 0; t < 3; t++) for (let b = 0; b < 2; b++) want.push(NaN, 0, 0);
    expect([...out.data]).toEqual(want);
  });

  it("counts pixel centres on a polygon's boundary, and the pixels a line passes through", async () => {
    const utm = (coordinates: unknown, type = 'Polygon') => ({
      type: 'FeatureCollection',
      crs: { type: 'name', properties: { name: 'EPSG:32633' } },
      features: [{ type: 'Feature', properties: {}, geometry: { type, coordinates } }],
    });
    // A square whose edges run through pixel centres (columns 0-2, rows 0-2): all nine belong.
    const onCentres = utm([
      [
        [600005, 5299995],
        [600025, 5299995],
        [600025, 5299975],
        [600005, 5299975],
        [600005, 5299995],
      ],
    ]);
    const count = await call('aggregate_spatial', { geometries: onCentres, reducer: COUNT }, cube());
    expect(count.data[0]).toBe(9);
    // A line along row 1 from column 0.2 to column 3.5: columns 0-3 of that row.
    const line = utm(
      [
        [600002, 5299985],
        [600035, 5299985],
      ],
      'LineString',
    );
    const crossed = await call('aggregate_spatial', { geometries: line, reducer: MEAN, target_dimension: 'stats' }, cube());
    expect([...crossed.data.slice(0, 3)]).toEqual([Math.fround((10 + 11 + 12 + 13) / 4), 4, 4]);
    // A point on a pixel's corner belongs to the pixel right and below it.
    const point = utm([600010, 5299990], 'Point');
    expect((await call('aggregate_spatial', { geometries: point, reducer: MEAN }, cube())).data[0]).toBe(11);
  });

  it('takes a bare geometry and a vector cube (keeping its labels), and refuses an existing target dimension', async () => {
    const one = await call('aggregate_spatial', { geometries: A, reducer: COUNT }, cube());
    expect([...one.data]).toEqual([4, 4, 4, 4, 4, 4]);
    const features = featuresFromGeoJson({ type: 'FeatureCollection', features: [A, B].map((geometry) => ({ type: 'Feature', properties: {}, geometry })) }, { processId: 'test', parameter: 'x' });
    const vector = new DataCube({ dims: [{ name: 'geometry', type: 'geometry', labels: ['field-a', 'field-b'] }], data: new Float32Array(2), features });
    const out = await call('aggregate_spatial', { geometries: { from_parameter: 'vector' }, reducer: MEAN }, cube(), { vector });
    expect(out.dims[0].labels).toEqual(['field-a', 'field-b']);
    expect(out.data[0]).toBe(5.5);
    await expect(call('aggregate_spatial', { geometries: A, reducer: MEAN, target_dimension: 't' }, cube())).rejects.toMatchObject({ code: 'TargetDimensionExists' });
  });
});

describe('aggregating a deferred load, through an engine built as a compute thread builds it', () => {
  // A 32 x 32 COG of 10 m pixels with value row * 32 + col, imported as two dates of a collection
  // of the engine's own records; graphs run through execute(), as /result runs them.
  let dir: string;
  let engine: Engine;
  const N = 32;
  const X0 = 600000;
  const Y0 = 5300320;
  const box: [number, number, number, number] = [X0, Y0 - N * 10, X0 + N * 10, Y0];
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'xeo-aggregate-'));
    const band = new Float32Array(N * N);
    for (let i = 0; i < N * N; i++) band[i] = i;
    const files = ['b1_20240101.tif', 'b1_20240201.tif'].map((f) => path.join(dir, f));
    for (const file of files) await writeCog(file, { width: N, height: N, epsg: 32633, transform: [X0, 10, 0, Y0, 0, -10], bands: [band], tileSize: 16, nodata: null });
    const store = await openStore(dir);
    try {
      await importFiles(store, files, { collection: 'T', bands: ['B1'] });
    } finally {
      await store.close();
    }
    engine = createEngine({ dataDir: dir, databaseUrl: null, blockCacheBytes: 64 << 20, outboundAllow: '' });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs load_collection of T, then `id` on it; answers the vector cube (kept) or the raster's planes. */
  const run = (id: string, args: Record<string, unknown>, kind: 'kept' | 'planes') =>
    execute(
      {
        graph: {
          l: { process_id: 'load_collection', arguments: { id: 'T', spatial_extent: { west: box[0], south: box[1], east: box[2], north: box[3], crs: 32633 }, temporal_extent: null } },
          n: { process_id: id, arguments: { data: { from_node: 'l' }, ...args }, result: true },
        },
        userProcesses: {},
        maxValues: 1e9,
        limitAdvice: '',
        answer: { kind },
      },
      engine,
    );

  it('aggregate_spatial reads only around the geometries', async () => {
    const toLonLat = transformer(32633, 4326);
    const corners = [
      [X0 + 20, Y0 - 60],
      [X0 + 40, Y0 - 60],
      [X0 + 40, Y0 - 40],
      [X0 + 20, Y0 - 40],
      [X0 + 20, Y0 - 60],
    ];
    const polygon = { type: 'Polygon', coordinates: [corners.map(([x, y]) => toLonLat(x, y))] };
    const out = await run('aggregate_spatial', { geometries: polygon, reducer: MEAN, target_dimension: 'stats' }, 'kept');
    if (out.kind !== 'kept' || !out.kept) throw new Error(`no vector cube: ${out.kind}`);
    expect(out.kept.dims.map((d) => d.name)).toEqual(['geometry', 't', 'bands', 'stats']);
    // Rows 4-5, columns 2-3: (130 + 131 + 162 + 163) / 4, for both dates.
    expect([...out.kept.data]).toEqual([146.5, 4, 4, 146.5, 4, 4]);
    expect(out.values).toBeLessThan(2 * 8 * 8);
  });

  it('aggregate_temporal loads only the dates its intervals cover', async () => {
    const out = await run('aggregate_temporal', { intervals: [['2024-01-15', '2024-03-01']], reducer: MEAN }, 'planes');
    if (out.kind !== 'planes') throw new Error(`no raster: ${out.kind}`);
    // One date left (the interval's start), one band: one plane.
    expect(out.raw.planes).toHaveLength(1);
    expect(out.raw.grid.width).toBe(N);
    expect(out.raw.planes[0][N + 1]).toBe(N + 1);
    expect(out.values).toBe(N * N);
  });
});
