// Combining cubes: merge_cubes, mask, mask_polygon, apply_kernel, apply_neighborhood — run through
// the evaluator on small hand-made cubes, values checked exactly.
import { describe, it, expect } from 'vitest';
import { evaluateGraph, rootScope, type EvalEnv } from '../src/graph/evaluate.js';
import type { RunContext } from '../src/core/run-context.js';
import { predefined } from '../src/processes/registry.js';
import type { ProcessDef } from '../src/core/process.js';
import { processes as combine } from '../src/processes/cubes/combine.js';
import { processes as dimensions } from '../src/processes/cubes/dimensions.js';
import { processes as apply } from '../src/processes/cubes/apply.js';
import { DataCube, spatialDims, type Dimension } from '../src/datacube/datacube.js';
import type { Grid } from '../src/core/grid.js';
import { testEngine } from './engine-env.js';

const defs = new Map<string, ProcessDef>([...predefined.specs().map((s) => [s.id, predefined.get(s.id)!] as const), ...[...apply, ...dimensions, ...combine].map((d) => [d.id, predefined.get(d.id)!] as const)]);
const run: RunContext = { engine: testEngine(), catalog: { collections: { get: () => null, items: () => [] } } as any, maxValues: 1e9, limitAdvice: '', results: [], log: () => {}, stats: { values: 0 } };
const env: EvalEnv = { predefined: (id) => defs.get(id), userProcess: () => null, run };
const call = (process_id: string, args: Record<string, unknown>, values: Record<string, unknown> = {}) =>
  evaluateGraph({ n: { process_id, arguments: args, result: true } }, env, rootScope(values)) as Promise<any>;
const P = (name: string) => ({ from_parameter: name });
/** A child process of one node `pid(x, y)` on its parameters x and y. */
const binary = (pid: string) => ({ process_graph: { r: { process_id: pid, arguments: { x: P('x'), y: P('y') }, result: true } } });

const grid: Grid = { epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], width: 5, height: 4 };
const D = ['2024-06-01T00:00:00Z', '2024-06-11T00:00:00Z', '2024-06-21T00:00:00Z'];

/** A t x bands x y x x cube with value f(t, b, y, x). */
function makeCube(times: string[], bands: string[], f: (t: number, b: number, y: number, x: number) => number, g: Grid = grid): DataCube {
  const dims: Dimension[] = [{ name: 't', type: 'temporal', labels: times }, { name: 'bands', type: 'bands', labels: bands }, ...spatialDims(g)];
  const data = new Float32Array(times.length * bands.length * g.height * g.width);
  let i = 0;
  for (let t = 0; t < times.length; t++) for (let b = 0; b < bands.length; b++) for (let y = 0; y < g.height; y++) for (let x = 0; x < g.width; x++) data[i++] = f(t, b, y, x);
  return new DataCube({ dims, data, grid: g });
}
const base = (t: number, b: number, y: number, x: number) => t * 1000 + b * 100 + y * 10 + x;
/** The value of a cube at named label positions. */
const at = (c: DataCube, pos: Record<string, number>) => {
  let o = 0;
  c.dims.forEach((d, i) => (o = o * c.shape[i] + (pos[d.name] ?? 0)));
  return c.data[o];
};
const plane = (c: DataCube, lead: number) => Array.from(c.data.slice(lead * 20, lead * 20 + 20));

describe('merge_cubes', () => {
  it('appends the bands of cube2 when nothing overlaps', async () => {
    const c1 = makeCube(D, ['B1', 'B2'], base);
    const c2 = makeCube(D, ['B3'], (t, b, y, x) => -base(t, b, y, x));
    const r: DataCube = await call('merge_cubes', { cube1: P('a'), cube2: P('b') }, { a: c1, b: c2 });
    expect(r.dim('bands')!.labels).toEqual(['B1', 'B2', 'B3']);
    expect(r.shape).toEqual([3, 3, 4, 5]);
    expect(r.grid).toEqual(grid);
    expect(at(r, { t: 2, bands: 1, y: 3, x: 4 })).toBe(2134);
    expect(at(r, { t: 2, bands: 2, y: 3, x: 4 })).toBe(-2034);
    expect(at(r, { t: 0, bands: 2, y: 1, x: 1 })).toBe(-11);
  });

  it('sorts united dates and fills cells neither cube has with no-data', async () => {
    const c1 = makeCube([D[0], D[2]], ['B1'], (t) => t + 1); // 1, 2
    const c2 = makeCube([D[1]], ['B2'], () => 7);
    const r: DataCube = await call('merge_cubes', { cube1: P('a'), cube2: P('b') }, { a: c1, b: c2 });
    expect(r.dim('t')!.labels).toEqual(D);
    expect(r.dim('bands')!.labels).toEqual(['B1', 'B2']);
    expect(at(r, { t: 0, bands: 0 })).toBe(1);
    expect(at(r, { t: 2, bands: 0 })).toBe(2);
    expect(at(r, { t: 1, bands: 1 })).toBe(7);
    expect(at(r, { t: 1, bands: 0 })).toBeNaN();
    expect(at(r, { t: 0, bands: 1 })).toBeNaN();
  });

  it('needs an overlap resolver where labels overlap, and runs it on the overlapping values', async () => {
    const c1 = makeCube([D[0], D[1]], ['B1'], base);
    const c2 = makeCube(['2024-06-11', D[2]], ['B1', 'B2'], (t, b, y, x) => 0.5 * (y * 10 + x) + b);
    await expect(call('merge_cubes', { cube1: P('a'), cube2: P('b') }, { a: c1, b: c2 })).rejects.toMatchObject({ code: 'OverlapResolverMissing' });
    const r: DataCube = await call('merge_cubes', { cube1: P('a'), cube2: P('b'), overlap_resolver: binary('subtract') }, { a: c1, b: c2 });
    expect(r.dim('t')!.labels).toEqual([D[0], D[1], D[2]]);
    expect(r.dim('bands')!.labels).toEqual(['B1', 'B2']);
    expect(at(r, { t: 0, bands: 0, y: 2, x: 3 })).toBe(23); // cube1 only
    expect(at(r, { t: 0, bands: 1, y: 2, x: 3 })).toBeNaN(); // neither
    expect(at(r, { t: 1, bands: 0, y: 2, x: 3 })).toBe(1023 - 11.5); // both: x - y
    expect(at(r, { t: 1, bands: 1, y: 2, x: 3 })).toBe(12.5); // cube2 only
    expect(at(r, { t: 2, bands: 0, y: 2, x: 3 })).toBe(11.5);
  });

  it('passes the context to the resolver', async () => {
    const c = makeCube([D[0]], ['B1'], base);
    const resolver = { process_graph: { r: { process_id: 'add', arguments: { x: P('x'), y: P('context') }, result: true } } };
    const r: DataCube = await call('merge_cubes', { cube1: P('a'), cube2: P('a'), overlap_resolver: resolver, context: 1000 }, { a: c });
    expect(plane(r, 0)[7]).toBe(1012);
  });

  it('repeats a cube with fewer dimensions along the others', async () => {
    const c1 = makeCube(D, ['B1', 'B2'], base);
    const dem = new DataCube({ dims: spatialDims(grid), data: Float32Array.from({ length: 20 }, (_, i) => i * 0.5), grid });
    await expect(call('merge_cubes', { cube1: P('a'), cube2: P('b') }, { a: c1, b: dem })).rejects.toMatchObject({ code: 'OverlapResolverMissing' });
    const r: DataCube = await call('merge_cubes', { cube1: P('a'), cube2: P('b'), overlap_resolver: binary('add') }, { a: c1, b: dem });
    expect(r.shape).toEqual([3, 2, 4, 5]);
    expect(at(r, { t: 2, bands: 1, y: 1, x: 2 })).toBe(2112 + 3.5);
    // cube1 lower-dimensional: it is still `x` for the resolver, the order of cube2's dimensions wins
    const s: DataCube = await call('merge_cubes', { cube1: P('b'), cube2: P('a'), overlap_resolver: binary('subtract') }, { a: c1, b: dem });
    expect(s.dims.map((d) => d.name)).toEqual(['t', 'bands', 'y', 'x']);
    expect(at(s, { t: 1, bands: 0, y: 0, x: 1 })).toBe(0.5 - 1001);
  });

  it('matches dimensions by name when their order differs', async () => {
    const c1 = makeCube([D[0]], ['B1'], base);
    const swapped = new DataCube({
      dims: [{ name: 'bands', type: 'bands', labels: ['B2', 'B3'] }, { name: 't', type: 'temporal', labels: [D[0]] }, ...spatialDims(grid)],
      data: Float32Array.from({ length: 40 }, (_, i) => (i < 20 ? 2 : 3)),
      grid,
    });
    const r: DataCube = await call('merge_cubes', { cube1: P('a'), cube2: P('b') }, { a: c1, b: swapped });
    expect(r.dim('bands')!.labels).toEqual(['B1', 'B2', 'B3']);
    expect(r.dims.map((d) => d.name)).toEqual(['t', 'bands', 'y', 'x']);
    expect([at(r, { bands: 0, y: 1, x: 1 }), at(r, { bands: 1, y: 1, x: 1 }), at(r, { bands: 2, y: 1, x: 1 })]).toEqual([11, 2, 3]);
  });

  it('refuses cubes on different grids or with unrelated dimensions', async () => {
    const c1 = makeCube(D, ['B1'], base);
    const other = makeCube(D, ['B2'], base, { ...grid, transform: [600010, 10, 0, 5300000, 0, -10] });
    await expect(call('merge_cubes', { cube1: P('a'), cube2: P('b') }, { a: c1, b: other })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    const odd = new DataCube({ dims: [{ name: 'k', type: 'other', labels: [1] }, ...spatialDims(grid)], data: new Float32Array(20), grid });
    await expect(call('merge_cubes', { cube1: P('a'), cube2: P('b') }, { a: c1, b: odd })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('mask', () => {
  // 1 = replace, 0 = keep, NaN (no-data) = keep
  const m = [1, 0, 0, 0, 1, 0, NaN, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, -1];
  const maskCube = new DataCube({ dims: spatialDims(grid), data: Float32Array.from(m), grid });

  it('replaces values where the mask is non-zero, on every date and band', async () => {
    const c = makeCube(D, ['B1', 'B2'], base);
    const r: DataCube = await call('mask', { data: P('a'), mask: P('m') }, { a: c, m: maskCube });
    const masked = (i: number) => m[i] !== 0 && !Number.isNaN(m[i]);
    for (let lead = 0; lead < 6; lead++) {
      const t = Math.floor(lead / 2);
      const b = lead % 2;
      expect(plane(r, lead)).toEqual(m.map((_, i) => (masked(i) ? NaN : base(t, b, Math.floor(i / 5), i % 5))));
    }
    const zero: DataCube = await call('mask', { data: P('a'), mask: P('m'), replacement: -5 }, { a: c, m: maskCube });
    expect(plane(zero, 3).slice(0, 7)).toEqual([-5, 1101, 1102, 1103, -5, 1110, 1111]);
  });

  it('takes mask values per label of the dimensions the mask has', async () => {
    const c = makeCube(D, ['B1', 'B2'], base);
    // mask with bands in the other order: B2 masked fully, B1 not at all
    const bm = new DataCube({ dims: [{ name: 'bands', type: 'bands', labels: ['B2', 'B1'] }, ...spatialDims(grid)], data: Float32Array.from({ length: 40 }, (_, i) => (i < 20 ? 1 : 0)), grid });
    const r: DataCube = await call('mask', { data: P('a'), mask: P('m'), replacement: 0 }, { a: c, m: bm });
    expect(plane(r, 4)).toEqual(Array.from({ length: 20 }, (_, i) => 2000 + Math.floor(i / 5) * 10 + (i % 5)));
    expect(plane(r, 5)).toEqual(new Array(20).fill(0));
  });

  it('raises IncompatibleDataCubes for masks that do not fit', async () => {
    const c = makeCube(D, ['B1'], base);
    const shifted = new DataCube({ dims: spatialDims({ ...grid, transform: [0, 10, 0, 0, 0, -10] }), data: new Float32Array(20), grid: { ...grid, transform: [0, 10, 0, 0, 0, -10] } });
    await expect(call('mask', { data: P('a'), mask: P('m') }, { a: c, m: shifted })).rejects.toMatchObject({ code: 'IncompatibleDataCubes' });
    const extra = new DataCube({ dims: [{ name: 'k', type: 'other', labels: [1] }, ...spatialDims(grid)], data: new Float32Array(20), grid });
    await expect(call('mask', { data: P('a'), mask: P('m') }, { a: c, m: extra })).rejects.toMatchObject({ code: 'IncompatibleDataCubes' });
    const fewer = makeCube([D[0]], ['B1'], () => 1);
    await expect(call('mask', { data: P('a'), mask: P('m') }, { a: c, m: fewer })).rejects.toMatchObject({ code: 'IncompatibleDataCubes' });
  });
});

describe('mask_polygon', () => {
  // A grid in EPSG:4326: pixel centres x = 10.05 + 0.1 c, y = 49.95 - 0.1 r.
  const g4326: Grid = { epsg: 4326, transform: [10, 0.1, 0, 50, 0, -0.1], width: 5, height: 4 };
  const square = {
    type: 'Polygon',
    coordinates: [
      [
        [10.1, 49.7],
        [10.3, 49.7],
        [10.3, 49.9],
        [10.1, 49.9],
        [10.1, 49.7],
      ],
    ],
  };
  const inSquare = (i: number) => [1, 2].includes(i % 5) && [1, 2].includes(Math.floor(i / 5));

  it('replaces the pixels outside the polygons (or inside) and leaves no-data alone', async () => {
    const c = makeCube([D[0]], ['B1'], (t, b, y, x) => (y === 0 && x === 0 ? NaN : y * 10 + x), g4326);
    const out: DataCube = await call('mask_polygon', { data: P('a'), mask: square, replacement: -1 }, { a: c });
    expect(plane(out, 0)).toEqual(Array.from({ length: 20 }, (_, i) => (i === 0 ? NaN : inSquare(i) ? Math.floor(i / 5) * 10 + (i % 5) : -1)));
    const feature = { type: 'FeatureCollection', features: [{ type: 'Feature', properties: {}, geometry: square }] };
    const ins: DataCube = await call('mask_polygon', { data: P('a'), mask: feature, inside: true }, { a: c });
    expect(plane(ins, 0)).toEqual(Array.from({ length: 20 }, (_, i) => (i === 0 || inSquare(i) ? NaN : Math.floor(i / 5) * 10 + (i % 5))));
  });

  it('accepts only polygons', async () => {
    const c = makeCube([D[0]], ['B1'], base, g4326);
    await expect(call('mask_polygon', { data: P('a'), mask: { type: 'Point', coordinates: [10.1, 49.9] } }, { a: c })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('apply_kernel', () => {
  // one plane, y=3, x=4: 1..12
  const g: Grid = { epsg: 32633, transform: [0, 10, 0, 30, 0, -10], width: 4, height: 3 };
  const c = new DataCube({ dims: spatialDims(g), data: Float32Array.from({ length: 12 }, (_, i) => i + 1), grid: g });
  const rows = (r: DataCube) => [0, 1, 2].map((y) => Array.from(r.data.slice(y * 4, y * 4 + 4)));
  const k = (kernel: number[][], extra: Record<string, unknown> = {}) => call('apply_kernel', { data: P('a'), kernel, ...extra }, { a: c }) as Promise<DataCube>;
  // weight in the left column: each pixel takes its left neighbour (the kernel is not flipped)
  const left = [
    [0, 0, 0],
    [1, 0, 0],
    [0, 0, 0],
  ];
  const left2 = [[1, 0, 0, 0, 0]];

  it('lines the kernel up with x and y without flipping it, with a constant border', async () => {
    expect(rows(await k(left))).toEqual([
      [0, 1, 2, 3],
      [0, 5, 6, 7],
      [0, 9, 10, 11],
    ]);
    expect(
      rows(
        await k(
          [
            [0, 1, 0],
            [0, 0, 0],
            [0, 0, 0],
          ],
          { border: 100 },
        ),
      ),
    ).toEqual([
      [100, 100, 100, 100],
      [1, 2, 3, 4],
      [5, 6, 7, 8],
    ]);
  });

  it('extends the borders per mode', async () => {
    expect((await k(left, { border: 'replicate' })).data[4]).toBe(5);
    expect((await k(left, { border: 'reflect' })).data[4]).toBe(5);
    expect((await k(left, { border: 'reflect_pixel' })).data[4]).toBe(6);
    expect((await k(left, { border: 'wrap' })).data[4]).toBe(8);
    // two to the left: positions -2 and -1 for columns 0 and 1 of row 0 (values 1 2 3 4)
    expect(rows(await k(left2, { border: 'replicate' }))[0]).toEqual([1, 1, 1, 2]);
    expect(rows(await k(left2, { border: 'reflect' }))[0]).toEqual([2, 1, 1, 2]);
    expect(rows(await k(left2, { border: 'reflect_pixel' }))[0]).toEqual([3, 2, 1, 2]);
    expect(rows(await k(left2, { border: 'wrap' }))[0]).toEqual([3, 4, 1, 2]);
  });

  it('sums the weighted window, applies the factor and replaces invalid values', async () => {
    const box = [
      [1, 1, 1],
      [1, 1, 1],
      [1, 1, 1],
    ];
    // corner (0,0): 1+2+5+6 = 14; centre (1,1): 1+2+3+5+6+7+9+10+11 = 54
    const r = await k(box, { factor: 0.5 });
    expect(r.data[0]).toBe(7);
    expect(r.data[5]).toBe(27);
    const holes = c.with({ data: Float32Array.from(c.data, (v) => (v === 6 ? NaN : v === 7 ? Infinity : v)) });
    const s: DataCube = await call('apply_kernel', { data: P('a'), kernel: box, replace_invalid: 1 }, { a: holes });
    expect(s.data[5]).toBe(54 - 6 - 7 + 2);
    expect(s.data[0]).toBe(14 - 6 + 1);
  });

  it('works plane by plane', async () => {
    const cube = makeCube(D, ['B1'], base);
    const r: DataCube = await call('apply_kernel', { data: P('a'), kernel: left }, { a: cube });
    expect(plane(r, 2).slice(0, 5)).toEqual([0, 2000, 2001, 2002, 2003]);
  });

  it('checks the kernel', async () => {
    await expect(k([[1, 1]])).rejects.toMatchObject({ code: 'KernelDimensionsUneven' });
    await expect(k([[1], [1]])).rejects.toMatchObject({ code: 'KernelDimensionsUneven' });
    await expect(k([[1, 1, 1], [1]] as number[][])).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(k(left, { border: 'mirror' })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('apply_neighborhood', () => {
  const px = (dimension: string, value: number | null, unit: string | null = 'px') => ({ dimension, value, unit });
  const kernelChild = (kernel: number[][]) => ({
    process_graph: { k: { process_id: 'apply_kernel', arguments: { data: P('data'), kernel }, result: true } },
  });
  const left = [
    [0, 0, 0],
    [1, 0, 0],
    [0, 0, 0],
  ];

  it('runs the child on blocks with overlap: a kernel then sees across block edges', async () => {
    const cube = makeCube(D, ['B1', 'B2'], base);
    const whole: DataCube = await call('apply_kernel', { data: P('a'), kernel: left }, { a: cube });
    const blocks: DataCube = await call('apply_neighborhood', { data: P('a'), process: kernelChild(left), size: [px('x', 2), px('y', 2)], overlap: [px('x', 1), px('y', 1)] }, { a: cube });
    expect(Array.from(blocks.data)).toEqual(Array.from(whole.data));
    expect(blocks.dims).toEqual(cube.dims);
    // without overlap, column 2 starts a block and sees no left neighbour
    const cut: DataCube = await call('apply_neighborhood', { data: P('a'), process: kernelChild(left), size: [px('x', 2), px('y', 2)] }, { a: cube });
    expect(plane(cut, 0).slice(0, 5)).toEqual([0, 0, 0, 2, 0]);
  });

  it('hands the child cubes with the coordinates of the block, metres by default on x and y', async () => {
    const cube = makeCube([D[0]], ['B1'], base);
    // the child answers, for every pixel, the first x label of the block it got
    const child = {
      process_graph: {
        l: { process_id: 'dimension_labels', arguments: { data: P('data'), dimension: 'x' } },
        r: {
          process_id: 'apply',
          arguments: { data: P('data'), context: { from_node: 'l' }, process: { process_graph: { e: { process_id: 'array_element', arguments: { data: P('context'), index: 0 }, result: true } } } },
          result: true,
        },
      },
    };
    const r: DataCube = await call('apply_neighborhood', { data: P('a'), process: child, size: [px('x', 20, null), px('y', 40, 'm')], overlap: [px('x', 1)] }, { a: cube });
    // blocks of 2 columns (20 m) widened by one column each side: label 0 is the column left of the block
    expect(plane(r, 0).slice(0, 5)).toEqual([599995, 599995, 600015, 600015, 600035]);
  });

  it('gives a whole dimension to the child as an array for all pixels at once', async () => {
    const cube = makeCube(D, ['B1'], base);
    const noBands = new DataCube({ dims: [cube.dims[0], cube.dims[2], cube.dims[3]], data: cube.data, grid });
    const sorted = { process_graph: { s: { process_id: 'sort', arguments: { data: P('data'), asc: false }, result: true } } };
    const r: DataCube = await call('apply_neighborhood', { data: P('a'), process: sorted, size: [px('x', 1), px('y', 1), px('t', null)] }, { a: noBands });
    expect([at(r, { t: 0, y: 1, x: 2 }), at(r, { t: 1, y: 1, x: 2 }), at(r, { t: 2, y: 1, x: 2 })]).toEqual([2012, 1012, 12]);
    const one = { process_graph: { s: { process_id: 'array_element', arguments: { data: P('data'), index: 0 }, result: true } } };
    await expect(call('apply_neighborhood', { data: P('a'), process: one, size: [px('x', 1), px('y', 1)] }, { a: noBands })).rejects.toMatchObject({ code: 'DataCubePropertiesImmutable' });
  });

  it('raises the exceptions of the definition', async () => {
    const cube = makeCube(D, ['B1'], base);
    const reduce = {
      process_graph: {
        r: {
          process_id: 'reduce_dimension',
          arguments: { data: P('data'), dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: P('data') }, result: true } } } },
          result: true,
        },
      },
    };
    await expect(call('apply_neighborhood', { data: P('a'), process: reduce, size: [px('x', 2), px('y', 2)] }, { a: cube })).rejects.toMatchObject({ code: 'DataCubePropertiesImmutable' });
    await expect(call('apply_neighborhood', { data: P('a'), process: kernelChild(left), size: [px('z', 2)] }, { a: cube })).rejects.toMatchObject({ code: 'DimensionNotAvailable' });
    await expect(call('apply_neighborhood', { data: P('a'), process: kernelChild(left), size: [{ dimension: 't', value: 'P5D' }] }, { a: cube })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});
