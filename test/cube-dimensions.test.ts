// Dimension processes: rename_labels, add_dimension, drop_dimension, dimension_labels,
// rename_dimension, trim_cube, create_data_cube, filter_labels — run through the evaluator on
// small hand-made cubes, values checked exactly.
import { describe, it, expect } from 'vitest';
import { evaluateGraph, rootScope, type EvalEnv } from '../src/graph/evaluate.js';
import type { RunContext } from '../src/core/run-context.js';
import { predefined } from '../src/processes/registry.js';
import type { ProcessDef } from '../src/core/process.js';
import { processes as mine } from '../src/processes/cubes/dimensions.js';
import { DataCube, spatialDims, type Dimension } from '../src/datacube/datacube.js';
import type { Grid } from '../src/core/grid.js';

const defs = new Map<string, ProcessDef>([...predefined.specs().map((s) => [s.id, predefined.get(s.id)!] as const), ...mine.map((d) => [d.id, predefined.get(d.id)!] as const)]);
const run: RunContext = { catalog: { collections: { get: () => null, items: () => [] } } as any, maxValues: 1e9, limitAdvice: '', results: [], log: () => {}, stats: { values: 0 } };
const env: EvalEnv = { predefined: (id) => defs.get(id), userProcess: () => null, run };
const call = (process_id: string, args: Record<string, unknown>, values: Record<string, unknown> = {}) =>
  evaluateGraph({ n: { process_id, arguments: args, result: true } }, env, rootScope(values)) as Promise<any>;

const grid: Grid = { epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], width: 5, height: 4 };
const T = ['2024-06-01T00:00:00Z', '2024-06-11T00:00:00Z', '2024-06-21T00:00:00Z'];

/** t=3, bands=2, y=4, x=5 with value t*1000 + b*100 + y*10 + x. */
function makeCube(times = T, bands = ['B1', 'B2'], g: Grid = grid): DataCube {
  const dims: Dimension[] = [{ name: 't', type: 'temporal', labels: times }, { name: 'bands', type: 'bands', labels: bands }, ...spatialDims(g)];
  const data = new Float32Array(times.length * bands.length * g.height * g.width);
  let i = 0;
  for (let t = 0; t < times.length; t++) for (let b = 0; b < bands.length; b++) for (let y = 0; y < g.height; y++) for (let x = 0; x < g.width; x++) data[i++] = t * 1000 + b * 100 + y * 10 + x;
  return new DataCube({ dims, data, grid: g, bandInfo: { B1: { common_name: 'red' }, B2: { common_name: 'nir' } } });
}
const cube = makeCube();
const data = { from_parameter: 'cube' };
const names = (c: DataCube) => c.dims.map((d) => d.name);

describe('rename_labels', () => {
  it('renames some labels by source and keeps values and band metadata', async () => {
    const r: DataCube = await call('rename_labels', { data, dimension: 'bands', source: ['B2'], target: ['nir'] }, { cube });
    expect(r.dim('bands')!.labels).toEqual(['B1', 'nir']);
    expect(r.data).toBe(cube.data);
    expect(r.bandInfo).toEqual({ B1: { common_name: 'red' }, nir: { common_name: 'nir' } });
    expect(cube.dim('bands')!.labels).toEqual(['B1', 'B2']); // input untouched
  });

  it('allows swapping labels', async () => {
    const r: DataCube = await call('rename_labels', { data, dimension: 'bands', source: ['B1', 'B2'], target: ['B2', 'B1'] }, { cube });
    expect(r.dim('bands')!.labels).toEqual(['B2', 'B1']);
    expect(r.bandInfo).toEqual({ B2: { common_name: 'red' }, B1: { common_name: 'nir' } });
  });

  it('renames enumerated labels without source', async () => {
    const c = new DataCube({ dims: [{ name: 'k', type: 'other', labels: [0, 1, 2] }], data: new Float32Array([5, 6, 7]) });
    const r: DataCube = await call('rename_labels', { data, dimension: 'k', target: ['a', 'b', 'c'] }, { cube: c });
    expect(r.dims[0].labels).toEqual(['a', 'b', 'c']);
    const part: DataCube = await call('rename_labels', { data, dimension: 'k', target: ['a'] }, { cube: c });
    expect(part.dims[0].labels).toEqual(['a', 1, 2]);
    await expect(call('rename_labels', { data, dimension: 'k', target: ['a', 'b', 'c', 'd'] }, { cube: c })).rejects.toMatchObject({ code: 'LabelMismatch' });
  });

  it('raises the exceptions of the definition', async () => {
    await expect(call('rename_labels', { data, dimension: 'bands', target: ['x', 'y'] }, { cube })).rejects.toMatchObject({ code: 'LabelsNotEnumerated' });
    await expect(call('rename_labels', { data, dimension: 'bands', source: ['B1', 'B2'], target: ['x'] }, { cube })).rejects.toMatchObject({ code: 'LabelMismatch' });
    await expect(call('rename_labels', { data, dimension: 'bands', source: ['B9'], target: ['x'] }, { cube })).rejects.toMatchObject({ code: 'LabelNotAvailable' });
    await expect(call('rename_labels', { data, dimension: 'bands', source: ['B1'], target: ['B2'] }, { cube })).rejects.toMatchObject({ code: 'LabelExists' });
    await expect(call('rename_labels', { data, dimension: 'zz', target: ['x'] }, { cube })).rejects.toMatchObject({ code: 'DimensionNotAvailable' });
  });

  it('renames temporal labels to any text, finding the source by instant; text labels are matched as text', async () => {
    const r: DataCube = await call('rename_labels', { data, dimension: 't', source: ['2024-06-11', T[0]], target: ['week 24', 'Woche 23'] }, { cube });
    expect(r.dim('t')!.labels).toEqual(['Woche 23', 'week 24', T[2]]);
    expect(r.data).toBe(cube.data);
    const back: DataCube = await call('rename_labels', { data, dimension: 't', source: ['week 24'], target: ['2024-06-11'] }, { cube: r });
    expect(back.dim('t')!.labels).toEqual(['Woche 23', '2024-06-11', T[2]]);
    await expect(call('rename_labels', { data, dimension: 't', source: ['Woche 23'], target: ['2024-06-21'] }, { cube: r })).rejects.toMatchObject({ code: 'LabelExists' });
  });

  it('refuses to rename the coordinates of x and y', async () => {
    await expect(call('rename_labels', { data, dimension: 'x', source: [600005], target: [1] }, { cube })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('add_dimension / drop_dimension', () => {
  it('adds the dimension first and keeps y, x last', async () => {
    const r: DataCube = await call('add_dimension', { data, name: 'run', label: 'a' }, { cube });
    expect(names(r)).toEqual(['run', 't', 'bands', 'y', 'x']);
    expect(r.dims[0]).toEqual({ name: 'run', type: 'other', labels: ['a'] });
    expect(r.shape).toEqual([1, 3, 2, 4, 5]);
    expect(r.grid).toEqual(grid);
    expect(r.data).toBe(cube.data);
  });

  it('gives added spatial dimensions the first free axis (z has none here)', async () => {
    const r: DataCube = await call('add_dimension', { data, name: 'height', label: 100, type: 'spatial' }, { cube });
    expect(r.dims[0]).toEqual({ name: 'height', type: 'spatial', labels: [100] });
    const empty = new DataCube({ dims: [], data: new Float32Array([NaN]) });
    const x: DataCube = await call('add_dimension', { data, name: 'east', label: 3, type: 'spatial' }, { cube: empty });
    expect(x.dims[0].axis).toBe('x');
    await expect(call('add_dimension', { data, name: 'h2', label: 1, type: 'spatial' }, { cube: r })).rejects.toMatchObject({ code: 'DimensionExists' });
  });

  it('checks names, temporal labels and geometry dimensions', async () => {
    await expect(call('add_dimension', { data, name: 't', label: '2020-01-01', type: 'temporal' }, { cube })).rejects.toMatchObject({ code: 'DimensionExists' });
    await expect(call('add_dimension', { data, name: 't2', label: 'yesterday', type: 'temporal' }, { cube })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(call('add_dimension', { data, name: 'g', label: 'p1', type: 'geometry' }, { cube })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    const ok: DataCube = await call('add_dimension', { data, name: 't2', label: '2010-01-01T00:00:00Z', type: 'temporal' }, { cube });
    expect(ok.dims[0]).toEqual({ name: 't2', type: 'temporal', labels: ['2010-01-01T00:00:00Z'] });
  });

  it('drops a dimension of one label only', async () => {
    const one = cube.select(0, [1]);
    const r: DataCube = await call('drop_dimension', { data, name: 't' }, { cube: one });
    expect(names(r)).toEqual(['bands', 'y', 'x']);
    expect(Array.from(r.data.slice(0, 3))).toEqual([1000, 1001, 1002]);
    expect(r.grid).toEqual(grid);
    await expect(call('drop_dimension', { data, name: 'bands' }, { cube: one })).rejects.toMatchObject({ code: 'DimensionLabelCountMismatch' });
    await expect(call('drop_dimension', { data, name: 'zz' }, { cube: one })).rejects.toMatchObject({ code: 'DimensionNotAvailable' });
  });

  it('leaves no grid when x is dropped', async () => {
    const column = cube.select(3, [2]).with({ grid: { ...grid, width: 1, transform: [600020, 10, 0, 5300000, 0, -10] } });
    const r: DataCube = await call('drop_dimension', { data, name: 'x' }, { cube: column });
    expect(names(r)).toEqual(['t', 'bands', 'y']);
    expect(r.grid).toBeNull();
    expect(Array.from(r.data.slice(0, 4))).toEqual([2, 12, 22, 32]);
  });

  it('builds a cube from create_data_cube and add_dimension', async () => {
    const g = {
      c: { process_id: 'create_data_cube', arguments: {} },
      a: { process_id: 'add_dimension', arguments: { data: { from_node: 'c' }, name: 'k', label: 'only' } },
      b: { process_id: 'add_dimension', arguments: { data: { from_node: 'a' }, name: 'bands', label: 'B1', type: 'bands' }, result: true },
    };
    const r = (await evaluateGraph(g, env, rootScope({}))) as DataCube;
    expect(r.dims).toEqual([
      { name: 'bands', type: 'bands', labels: ['B1'] },
      { name: 'k', type: 'other', labels: ['only'] },
    ]);
    expect(r.data.length).toBe(1);
    expect(Number.isNaN(r.data[0])).toBe(true);
    const empty: DataCube = await call('create_data_cube', {});
    expect(empty.dims).toEqual([]);
  });
});

describe('dimension_labels / rename_dimension', () => {
  it('lists labels', async () => {
    expect(await call('dimension_labels', { data, dimension: 't' }, { cube })).toEqual(T);
    expect(await call('dimension_labels', { data, dimension: 'x' }, { cube })).toEqual([600005, 600015, 600025, 600035, 600045]);
    expect(await call('dimension_labels', { data, dimension: 'y' }, { cube })).toEqual([5299995, 5299985, 5299975, 5299965]);
    await expect(call('dimension_labels', { data, dimension: 'time' }, { cube })).rejects.toMatchObject({ code: 'DimensionNotAvailable' });
  });

  it('renames a dimension and keeps everything else', async () => {
    const r: DataCube = await call('rename_dimension', { data, source: 't', target: 'time' }, { cube });
    expect(names(r)).toEqual(['time', 'bands', 'y', 'x']);
    expect(r.dims[0]).toEqual({ name: 'time', type: 'temporal', labels: T });
    expect(r.data).toBe(cube.data);
    expect(r.grid).toEqual(grid);
    await expect(call('rename_dimension', { data, source: 't', target: 'bands' }, { cube })).rejects.toMatchObject({ code: 'DimensionExists' });
    await expect(call('rename_dimension', { data, source: 'time', target: 'x2' }, { cube })).rejects.toMatchObject({ code: 'DimensionNotAvailable' });
  });
});

describe('trim_cube', () => {
  it('drops all-no-data labels: at the ends of ordered dimensions, anywhere along bands', async () => {
    const times = ['2024-01-01T00:00:00Z', '2024-01-02T00:00:00Z', '2024-01-03T00:00:00Z', '2024-01-04T00:00:00Z'];
    const c = makeCube(times, ['B1', 'B2', 'B3']);
    const d = c.data.slice();
    const at = (t: number, b: number, y: number, x: number) => ((t * 3 + b) * 4 + y) * 5 + x;
    for (let t = 0; t < 4; t++) {
      for (let b = 0; b < 3; b++) {
        for (let y = 0; y < 4; y++) {
          for (let x = 0; x < 5; x++) {
            // t1 and t3 empty (t1 is inside, stays); band B2 empty; column x0 and row y3 empty
            if (t === 1 || t === 3 || b === 1 || x === 0 || y === 3) d[at(t, b, y, x)] = NaN;
          }
        }
      }
    }
    const r: DataCube = await call('trim_cube', { data }, { cube: c.with({ data: d }) });
    expect(r.dim('t')!.labels).toEqual(times.slice(0, 3));
    expect(r.dim('bands')!.labels).toEqual(['B1', 'B3']);
    expect(r.shape).toEqual([3, 2, 3, 4]);
    expect(r.grid).toEqual({ epsg: 32633, transform: [600010, 10, 0, 5300000, 0, -10], width: 4, height: 3 });
    expect(r.dim('x')!.labels).toEqual([600015, 600025, 600035, 600045]);
    // t0, B3, first row: values 0*1000 + 2*100 + 0*10 + x for x = 1..4
    expect(Array.from(r.data.slice(12, 16))).toEqual([201, 202, 203, 204]);
    // t1 is kept but all no-data; t2 B1 row 2 = 2000 + 20 + x
    expect(r.data.subarray(24, 48).every((v) => Number.isNaN(v))).toBe(true);
    expect(Array.from(r.data.slice(48 + 8, 48 + 12))).toEqual([2021, 2022, 2023, 2024]);
  });

  it('returns the cube itself when nothing is empty', async () => {
    expect(await call('trim_cube', { data }, { cube })).toBe(cube);
  });
});

describe('filter_labels', () => {
  const cond = (pid: string, y: unknown) => ({ process_graph: { c: { process_id: pid, arguments: { x: { from_parameter: 'value' }, y }, result: true } } });

  it('keeps the labels for which the condition is true', async () => {
    const r: DataCube = await call('filter_labels', { data, dimension: 'bands', condition: cond('eq', 'B2') }, { cube });
    expect(r.dim('bands')!.labels).toEqual(['B2']);
    expect(r.shape).toEqual([3, 1, 4, 5]);
    expect(r.data[0]).toBe(100);
    expect(r.data[20]).toBe(1100);
  });

  it('passes the context', async () => {
    const condition = { process_graph: { c: { process_id: 'neq', arguments: { x: { from_parameter: 'value' }, y: { from_parameter: 'context' } }, result: true } } };
    const r: DataCube = await call('filter_labels', { data, dimension: 't', condition, context: T[1] }, { cube });
    expect(r.dim('t')!.labels).toEqual([T[0], T[2]]);
    expect(r.data[40]).toBe(2000);
  });

  it('crops the grid along x, and refuses gaps there', async () => {
    const r: DataCube = await call('filter_labels', { data, dimension: 'x', condition: cond('gt', 600020) }, { cube });
    expect(r.dim('x')!.labels).toEqual([600025, 600035, 600045]);
    expect(r.grid).toEqual({ epsg: 32633, transform: [600020, 10, 0, 5300000, 0, -10], width: 3, height: 4 });
    expect(Array.from(r.data.slice(0, 6))).toEqual([2, 3, 4, 12, 13, 14]);
    await expect(call('filter_labels', { data, dimension: 'x', condition: cond('neq', 600025) }, { cube })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(call('filter_labels', { data, dimension: 'zz', condition: cond('eq', 1) }, { cube })).rejects.toMatchObject({ code: 'DimensionNotAvailable' });
  });
});
