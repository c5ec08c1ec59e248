// resample_spatial and resample_cube_spatial on small hand-made cubes (values checked by hand), and
// on a deferred load of a small COG: the load itself changes, reading the averaged overview.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { evaluateGraph, rootScope } from '../src/graph/evaluate.js';
import { type Graph } from '../src/core/graph.js';
import type { RunContext } from '../src/core/run-context.js';
import { predefined } from '../src/processes/registry.js';
import type { ProcessDef } from '../src/core/process.js';
import { processes as mine } from '../src/processes/cubes/resample.js';
import { DataCube, spatialDims } from '../src/datacube/datacube.js';
import { LazyCube } from '../src/data/lazy.js';
import { transformBox, transformer } from '../src/geometry/crs.js';
import type { Grid } from '../src/core/grid.js';
import type { CatalogSnapshot } from '../src/core/catalog.js';
import { writeCog } from '../src/output/cog-writer.js';
import { testEngine } from './engine-env.js';

const defs = new Map<string, ProcessDef>([...predefined.specs().map((s) => [s.id, predefined.get(s.id)!] as [string, ProcessDef]), ...mine.map((d) => [d.id, predefined.get(d.id)!] as [string, ProcessDef])]);
const newRun = (): RunContext => ({
  engine: testEngine(),
  catalog: { collections: { get: () => null, items: () => [] } } as any,
  maxValues: 1e9,
  limitAdvice: '',
  results: [],
  log: () => {},
  stats: { values: 0 },
});
let run = newRun();
const env = {
  predefined: (id: string) => defs.get(id),
  userProcess: () => null,
  get run() {
    return run;
  },
};

/** Runs one process on `cube`; `params` are further values the arguments can read with from_parameter. */
async function call(id: string, args: Record<string, unknown>, cube: unknown, params: Record<string, unknown> = {}): Promise<unknown> {
  const graph: Graph = { n: { process_id: id, arguments: { data: { from_parameter: 'cube' }, ...args }, result: true } };
  return evaluateGraph(graph, env, rootScope({ cube, ...params }));
}

const grid = (w: number, h: number, res = 10, x0 = 600000, y0 = 5300000): Grid => ({ epsg: 32633, transform: [x0, res, 0, y0, 0, -res], width: w, height: h });

/** t=2, bands=2 over a grid, with value t*1000 + b*100 + f(row, col). */
function cube(g: Grid, f: (r: number, c: number) => number = (r, c) => r * 10 + c): DataCube {
  const data = new Float32Array(4 * g.width * g.height);
  for (let p = 0; p < 4; p++) {
    const base = Math.floor(p / 2) * 1000 + (p % 2) * 100;
    for (let r = 0; r < g.height; r++) for (let c = 0; c < g.width; c++) data[(p * g.height + r) * g.width + c] = base + f(r, c);
  }
  return new DataCube({
    dims: [{ name: 't', type: 'temporal', labels: ['2024-01-01T00:00:00Z', '2024-02-01T00:00:00Z'] }, { name: 'bands', type: 'bands', labels: ['B1', 'B2'] }, ...spatialDims(g)],
    data,
    grid: g,
  });
}

/** Expected data of a 2 x 2 x h x w cube: t*1000 + b*100 + f(row, col), as float32. */
function planes(w: number, h: number, f: (r: number, c: number) => number): number[] {
  const out: number[] = [];
  for (let p = 0; p < 4; p++) for (let r = 0; r < h; r++) for (let c = 0; c < w; c++) out.push(Math.fround(Math.floor(p / 2) * 1000 + (p % 2) * 100 + f(r, c)));
  return out;
}

describe('resample_spatial on a loaded cube', () => {
  it('average: block means for a whole factor, skipping no-data', async () => {
    const c = cube(grid(4, 4));
    const out = (await call('resample_spatial', { resolution: 20, method: 'average' }, c)) as DataCube;
    expect(out.grid).toEqual(grid(2, 2, 20));
    expect(out.dims.map((d) => d.name)).toEqual(['t', 'bands', 'y', 'x']);
    expect(out.dims[3].labels).toEqual([600010, 600030]);
    expect(out.dims[2].labels).toEqual([5299990, 5299970]);
    // (0 + 1 + 10 + 11) / 4, (2 + 3 + 12 + 13) / 4, ...
    const blocks = [
      [5.5, 7.5],
      [25.5, 27.5],
    ];
    expect([...out.data]).toEqual(planes(2, 2, (r, col) => blocks[r][col]));
    const holed = c.data.slice();
    holed[0] = NaN;
    const out2 = (await call('resample_spatial', { resolution: 20, method: 'average' }, c.with({ data: holed }))) as DataCube;
    expect(out2.data[0]).toBe(Math.fround(22 / 3));
    expect([...out2.data.subarray(1)]).toEqual(planes(2, 2, (r, col) => blocks[r][col]).slice(1));
  });

  it('average: partial blocks at the side away from the alignment corner', async () => {
    const c = cube(grid(5, 4));
    const ul = (await call('resample_spatial', { resolution: 20, method: 'average' }, c)) as DataCube;
    expect(ul.grid).toEqual(grid(3, 2, 20));
    // The third column holds only source column 4: (4 + 14) / 2 and (24 + 34) / 2.
    expect([...ul.data.subarray(0, 6)]).toEqual([5.5, 7.5, 9, 25.5, 27.5, 29]);
    const lr = (await call('resample_spatial', { resolution: 20, method: 'average', align: 'lower-right' }, c)) as DataCube;
    expect(lr.grid).toEqual(grid(3, 2, 20, 599990));
    // Now the first column holds only source column 0.
    expect([...lr.data.subarray(0, 6)]).toEqual([5, 6.5, 8.5, 25, 26.5, 28.5]);
  });

  it('near: the pixel that holds each new pixel centre', async () => {
    const out = (await call('resample_spatial', { resolution: 20 }, cube(grid(4, 4)))) as DataCube;
    // New centres fall on the corner between source pixels; ties go right and down: (1,1), (1,3), (3,1), (3,3).
    const picked = [
      [11, 13],
      [31, 33],
    ];
    expect([...out.data]).toEqual(planes(2, 2, (r, c) => picked[r][c]));
  });

  it('bilinear: interpolates between pixel centres, renormalising at the edges', async () => {
    const out = (await call(
      'resample_spatial',
      { resolution: 5, method: 'bilinear' },
      cube(grid(4, 4), (_r, c) => c * 10),
    )) as DataCube;
    expect(out.grid).toEqual(grid(8, 8, 5));
    // New centres at source columns 0.25, 0.75, ..., 3.75; only one neighbour inside at both ends.
    const row = [0, 2.5, 7.5, 12.5, 17.5, 22.5, 27.5, 30];
    expect([...out.data]).toEqual(planes(8, 8, (_r, c) => row[c]));
  });

  it('projection: warps to another CRS, each pixel from the source pixel holding its centre', async () => {
    const c = cube(grid(4, 4));
    const out = (await call('resample_spatial', { projection: 4326 }, c)) as DataCube;
    const g = out.grid!;
    expect(g.epsg).toBe(4326);
    expect(out.dims.slice(0, 2)).toEqual(c.dims.slice(0, 2));
    // About as many pixels as before, square.
    expect(g.transform[1]).toBeCloseTo(-g.transform[5], 12);
    expect(g.width * g.height).toBeGreaterThanOrEqual(16);
    expect(g.width * g.height).toBeLessThanOrEqual(30);
    const toUtm = transformer(4326, 32633);
    let inside = 0;
    for (let r = 0; r < g.height; r++) {
      for (let col = 0; col < g.width; col++) {
        const [x, y] = toUtm(g.transform[0] + (col + 0.5) * g.transform[1], g.transform[3] + (r + 0.5) * g.transform[5]);
        const sc = Math.floor((x - 600000) / 10);
        const sr = Math.floor((5300000 - y) / 10);
        const want = sc >= 0 && sc < 4 && sr >= 0 && sr < 4 ? sr * 10 + sc : NaN;
        if (want === want) inside++;
        expect(out.data[r * g.width + col]).toEqual(want);
        expect(out.data[(3 * g.height + r) * g.width + col]).toEqual(want === want ? 1100 + want : NaN);
      }
    }
    expect(inside).toBeGreaterThan(8);
  });

  it('leaves the cube alone without resolution and projection, and refuses what it cannot do', async () => {
    const c = cube(grid(4, 4));
    expect(await call('resample_spatial', {}, c)).toBe(c);
    expect(await call('resample_spatial', { resolution: 10, projection: 'EPSG:32633' }, c)).toBe(c);
    await expect(call('resample_spatial', { resolution: 20, method: 'cubic' }, c)).rejects.toMatchObject({
      code: 'ProcessParameterInvalid',
      params: { parameter: 'method', reason: expect.stringContaining('near, bilinear, average') },
    });
    // Average needs a whole factor.
    await expect(call('resample_spatial', { resolution: 15, method: 'average' }, c)).rejects.toMatchObject({ code: 'ProcessParameterInvalid', params: { parameter: 'method' } });
    await expect(call('resample_spatial', { projection: 'PROJCS["x"]' }, c)).rejects.toMatchObject({ code: 'ProcessParameterInvalid', params: { parameter: 'projection' } });
  });

  it('takes separate x and y resolutions', async () => {
    const out = (await call('resample_spatial', { resolution: [20, 10], method: 'average' }, cube(grid(4, 4)))) as DataCube;
    expect(out.grid).toEqual({ epsg: 32633, transform: [600000, 20, 0, 5300000, 0, -10], width: 2, height: 4 });
    expect([...out.data.subarray(0, 8)]).toEqual([0.5, 2.5, 10.5, 12.5, 20.5, 22.5, 30.5, 32.5]);
  });
});

describe('resample_cube_spatial on a loaded cube', () => {
  it('crops and pads to a target grid of the same pixels', async () => {
    const target = cube(grid(6, 6, 10, 599990, 5300010));
    const out = (await call('resample_cube_spatial', { target: { from_parameter: 'target' } }, cube(grid(4, 4)), { target })) as DataCube;
    expect(out.grid).toEqual(target.grid);
    expect(out.dims.slice(2)).toEqual(target.dims.slice(2));
    // Target pixel (r, c) is source pixel (r - 1, c - 1); the ring around is outside.
    expect([...out.data]).toEqual(planes(6, 6, (r, c) => (r >= 1 && r <= 4 && c >= 1 && c <= 4 ? (r - 1) * 10 + (c - 1) : NaN)));
  });

  it('near and bilinear onto a grid shifted by half a pixel, average onto a coarser one', async () => {
    const target = cube(grid(4, 4, 10, 600005));
    const src = cube(grid(4, 4));
    const near = (await call('resample_cube_spatial', { target: { from_parameter: 'target' } }, src, { target })) as DataCube;
    // Target centres fall on the edge between source columns c and c+1: near takes c+1 (none for the last).
    expect([...near.data]).toEqual(planes(4, 4, (r, c) => (c < 3 ? r * 10 + c + 1 : NaN)));
    const bil = (await call('resample_cube_spatial', { target: { from_parameter: 'target' }, method: 'bilinear' }, src, { target })) as DataCube;
    expect([...bil.data]).toEqual(planes(4, 4, (r, c) => (c < 3 ? r * 10 + c + 0.5 : NaN)));
    const coarse = cube(grid(2, 2, 20));
    const avg = (await call('resample_cube_spatial', { target: { from_parameter: 'target' }, method: 'average' }, src, { target: coarse })) as DataCube;
    expect([...avg.data]).toEqual(
      planes(
        2,
        2,
        (r, c) =>
          [
            [5.5, 7.5],
            [25.5, 27.5],
          ][r][c],
      ),
    );
  });
});

describe('resampling a deferred load', () => {
  // A 32 x 32 COG of 10 m pixels, value row * 32 + col, with one 16 x 16 overview of 2 x 2 means.
  let dir: string;
  let source: CatalogSnapshot;
  const N = 32;
  const X0 = 600000;
  const Y0 = 5300320;
  const box: [number, number, number, number] = [X0, Y0 - N * 10, X0 + N * 10, Y0];
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'xeo-resample-'));
    const file = path.join(dir, 'b1.tif');
    const band = new Float32Array(N * N);
    for (let i = 0; i < N * N; i++) band[i] = i;
    await writeCog(file, { width: N, height: N, epsg: 32633, transform: [X0, 10, 0, Y0, 0, -10], bands: [band], tileSize: 16, nodata: null });
    const meta = { id: 'T', title: 'T', description: '', license: 'proprietary', epsg: 32633, resolution: [10, 10] as [number, number], bands: [{ name: 'B1', data_type: 'float32', nodata: null }] };
    const item = { id: 'i1', datetime: '2024-01-01T00:00:00Z', epsg: 32633, bbox: box, bbox4326: transformBox(box, 32633, 4326), assets: { B1: { href: file, sample: 0 } } };
    source = { collections: { get: (id: string) => (id === 'T' ? meta : null), items: () => [item] } };
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const lazy = () =>
    new LazyCube({ source, collection: 'T', extent: { west: box[0], south: box[1], east: box[2], north: box[3], crs: 32633 }, temporal: null, bands: null, target: {}, resampling: 'nearest', mask: null });

  it('resample_spatial changes the load, which then reads the averaged overview', async () => {
    run = newRun();
    const out = await call('resample_spatial', { resolution: 20, method: 'average' }, lazy());
    expect(out).toBeInstanceOf(LazyCube);
    const l = out as LazyCube;
    expect(l.spec.target).toEqual({ epsg: 32633, resolution: 20 });
    expect(l.spec.resampling).toBe('nearest');
    expect(run.stats.values).toBe(0); // nothing read
    const c = await l.materialize(run);
    expect(c.grid).toEqual({ epsg: 32633, transform: [X0, 20, 0, Y0, 0, -20], width: 16, height: 16 });
    // The 2 x 2 mean of row*32 + col over rows 2R..2R+1, cols 2C..2C+1 is 64R + 2C + 16.5.
    const want: number[] = [];
    for (let r = 0; r < 16; r++) for (let col = 0; col < 16; col++) want.push(64 * r + 2 * col + 16.5);
    expect([...c.data]).toEqual(want);
    expect(run.stats.values).toBe(256);
    // Bilinear and a new CRS go to the load as well.
    const b = (await call('resample_spatial', { projection: 3857, resolution: 30, method: 'bilinear' }, lazy())) as LazyCube;
    expect(b.spec.target).toEqual({ epsg: 3857, resolution: 30 });
    expect(b.spec.resampling).toBe('bilinear');
  });

  it('resample_cube_spatial loads the target area at the target pixel size and fits the target grid exactly', async () => {
    run = newRun();
    // 3 x 2 pixels of 20 m; the last column lies east of the data.
    const tg: Grid = { epsg: 32633, transform: [X0 + 280, 20, 0, Y0 - 40, 0, -20], width: 3, height: 2 };
    const target = new DataCube({ dims: [{ name: 't', type: 'temporal', labels: ['x'] }, ...spatialDims(tg)], data: new Float32Array(6), grid: tg });
    const out = (await call('resample_cube_spatial', { target: { from_parameter: 'target' }, method: 'average' }, lazy(), { target })) as DataCube;
    expect(out.grid).toEqual(tg);
    expect(out.dims.map((d) => d.name)).toEqual(['t', 'bands', 'y', 'x']);
    // Overview pixel (R + 2, C + 14): 64 (R + 2) + 2 (C + 14) + 16.5.
    expect([...out.data]).toEqual([172.5, 174.5, NaN, 236.5, 238.5, NaN]);
    // Only the target area (with a pixel of margin) was read, not the 16 x 16 overview.
    expect(run.stats.values).toBeLessThanOrEqual(5 * 4);
  });
});
