// Which batch jobs may be cut into chunks (every process pixel-wise), the chunks themselves, where
// a failing graph failed (the `path` of a job's error log), and byte ranges of result downloads.
import { describe, it, expect } from 'vitest';
import { classifyGraph, chunkWindows, savedFormats, windowGrid, type ChunkingEnv } from '../src/jobs/chunking.js';
import { predefined } from '../src/processes/registry.js';
import { evaluateGraph, failurePath, rootScope } from '../src/graph/evaluate.js';
import { type Graph } from '../src/core/graph.js';
import { parseRange } from '../src/api/job-results.js';
import { engineEnv } from './engine-env.js';
import { ZONAL_CHUNK_VALUES, zonalCell } from '../src/jobs/zonal-plan.js';

const env = (udps: Record<string, Graph> = {}): ChunkingEnv => ({
  categories: (id) => predefined.get(id)?.spec.categories,
  userProcess: (id) => udps[id] ?? null,
});

const load = { process_id: 'load_collection', arguments: { id: 'C', spatial_extent: null, temporal_extent: null } };
const save = (from: string, format = 'GTiff') => ({ process_id: 'save_result', arguments: { data: { from_node: from }, format }, result: true });
const reducer = (id: string) => ({ process_graph: { r: { process_id: id, arguments: { data: { from_parameter: 'data' } }, result: true } } });

describe('classifyGraph', () => {
  it('accepts pixel-wise graphs: math in apply, reducers over t or bands, ndvi, masks, merges, filters on a load', () => {
    const graph = {
      l: load,
      b: { process_id: 'filter_bbox', arguments: { data: { from_node: 'l' }, extent: { west: 0, south: 0, east: 1, north: 1 } } },
      rs: { process_id: 'resample_spatial', arguments: { data: { from_node: 'b' }, resolution: 5 } },
      t: { process_id: 'filter_temporal', arguments: { data: { from_node: 'rs' }, extent: ['2024-01-01', '2025-01-01'] } },
      n: { process_id: 'ndvi', arguments: { data: { from_node: 't' } } },
      m: { process_id: 'reduce_dimension', arguments: { data: { from_node: 'n' }, dimension: 't', reducer: reducer('max') } },
      a: {
        process_id: 'apply',
        arguments: { data: { from_node: 'm' }, process: { process_graph: { x: { process_id: 'linear_scale_range', arguments: { x: { from_parameter: 'x' }, inputMin: -1, inputMax: 1 }, result: true } } } },
      },
      k: { process_id: 'mask', arguments: { data: { from_node: 'a' }, mask: { from_node: 'm' } } },
      g: { process_id: 'merge_cubes', arguments: { cube1: { from_node: 'k' }, cube2: { from_node: 'a' }, overlap_resolver: reducer('mean') } },
      s: save('g'),
    };
    expect(classifyGraph(graph, env())).toEqual({ local: true, reason: null });
  });

  it('refuses processes that look beyond a pixel, naming node and process', () => {
    for (const [pid, args] of [
      ['apply_kernel', { kernel: [[1]] }],
      ['apply_neighborhood', { process: reducer('mean'), size: [] }],
      ['aggregate_spatial', { geometries: {}, reducer: reducer('mean') }],
      ['resample_cube_spatial', { target: { from_node: 'l' } }],
      ['trim_cube', {}],
    ] as const) {
      const graph = { l: load, x: { process_id: pid, arguments: { data: { from_node: 'l' }, ...args } }, s: save('x') };
      const v = classifyGraph(graph, env());
      expect(v.local, pid).toBe(false);
      expect(v.reason).toContain(`'x' (${pid})`);
    }
  });

  it('tells reductions over space from reductions over time and bands', () => {
    const over = (dimension: unknown) => classifyGraph({ l: load, r: { process_id: 'reduce_dimension', arguments: { data: { from_node: 'l' }, dimension, reducer: reducer('mean') } }, s: save('r') }, env());
    expect(over('t').local).toBe(true);
    expect(over('bands').local).toBe(true);
    expect(over('x').local).toBe(false);
    expect(over('y').local).toBe(false);
    expect(over({ from_parameter: 'd' }).local).toBe(false);
    const applyDim = classifyGraph(
      { l: load, r: { process_id: 'apply_dimension', arguments: { data: { from_node: 'l' }, dimension: 't', target_dimension: 'x', process: reducer('mean') } }, s: save('r') },
      env(),
    );
    expect(applyDim.local).toBe(false);
  });

  it('accepts a filter or resampling folded into a load, refuses one on computed data', () => {
    const graph = (on: string) => ({
      l: load,
      a: { process_id: 'apply', arguments: { data: { from_node: 'l' }, process: { process_graph: { x: { process_id: 'absolute', arguments: { x: { from_parameter: 'x' } }, result: true } } } } },
      r: { process_id: 'resample_spatial', arguments: { data: { from_node: on }, resolution: 20 } },
      s: save('r'),
    });
    expect(classifyGraph(graph('l'), env()).local).toBe(true);
    const v = classifyGraph(graph('a'), env());
    expect(v.local).toBe(false);
    expect(v.reason).toMatch(/'r' \(resample_spatial\) changes the grid/);
  });

  it('looks into child processes and stored processes, and refuses unknown processes', () => {
    const nested = {
      l: load,
      a: {
        process_id: 'apply',
        arguments: { data: { from_node: 'l' }, process: { process_graph: { k: { process_id: 'apply_kernel', arguments: { data: { from_parameter: 'x' }, kernel: [[1]] }, result: true } } } },
      },
      s: save('a'),
    };
    expect(classifyGraph(nested, env()).local).toBe(false);
    const udp = { k: { process_id: 'apply_kernel', arguments: { data: { from_parameter: 'data' }, kernel: [[1]] }, result: true } };
    const calling = { l: load, u: { process_id: 'smooth', arguments: { data: { from_node: 'l' } } }, s: save('u') };
    expect(classifyGraph(calling, env({ smooth: udp })).reason).toMatch(/apply_kernel/);
    const fine = { k: { process_id: 'ndvi', arguments: { data: { from_parameter: 'data' } }, result: true } };
    expect(classifyGraph(calling, env({ smooth: fine })).local).toBe(true);
    expect(classifyGraph({ x: { process_id: 'no_such_thing', arguments: {}, result: true } }, env()).reason).toMatch(/no_such_thing/);
  });

  it('reads the formats of save_result', () => {
    expect(savedFormats({ l: load, s: save('l', 'gtiff') })).toEqual(['gtiff']);
    expect(savedFormats({ l: load, s: { process_id: 'save_result', arguments: { data: { from_node: 'l' }, format: { from_parameter: 'f' } }, result: true } })).toEqual([null]);
    expect(savedFormats({ l: { ...load, result: true } })).toEqual([]);
  });
});

describe('chunks', () => {
  it('cover the grid exactly, row by row, smaller at the right and bottom edges', () => {
    const w = chunkWindows(2500, 1100, 1024);
    expect(w.map((x) => [x.col, x.row, x.width, x.height])).toEqual([
      [0, 0, 1024, 1024],
      [1024, 0, 1024, 1024],
      [2048, 0, 452, 1024],
      [0, 1024, 1024, 76],
      [1024, 1024, 1024, 76],
      [2048, 1024, 452, 76],
    ]);
    expect(w.reduce((s, x) => s + x.width * x.height, 0)).toBe(2500 * 1100);
  });

  it("of a zonal job hold at most ZONAL_CHUNK_VALUES: a power of two within the job's chunk side, at least 256", () => {
    expect(zonalCell(1024, 1)).toBe(1024);
    expect(zonalCell(1024, 4)).toBe(1024);
    expect(zonalCell(1024, 12)).toBe(512); // 12 dates: 512^2 x 12 = 3 Mi values, 1024^2 x 12 would be 12 Mi
    expect(zonalCell(1024, 36)).toBe(256);
    expect(zonalCell(1024, 1000)).toBe(256);
    expect(zonalCell(64, 12)).toBe(64);
    for (const planes of [1, 5, 12, 17, 64]) {
      const c = zonalCell(4096, planes);
      if (c > 256) expect(c * c * planes).toBeLessThanOrEqual(ZONAL_CHUNK_VALUES);
      expect((2 * c) ** 2 * planes > ZONAL_CHUNK_VALUES || c === 4096).toBe(true);
    }
  });

  it('have the grid of their window', () => {
    const g = windowGrid({ epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], width: 3000, height: 3000 }, { col: 1024, row: 2048, width: 100, height: 50 });
    expect(g).toEqual({ epsg: 32633, transform: [610240, 10, 0, 5279520, 0, -10], width: 100, height: 50 });
  });
});

describe('failurePath', () => {
  it('names the failing node, then each node up to the root', async () => {
    const { env: e } = engineEnv();
    const graph: Graph = {
      a: { process_id: 'constant', arguments: { x: [1, 2] } },
      m: {
        process_id: 'array_apply',
        arguments: { data: { from_node: 'a' }, process: { process_graph: { bad: { process_id: 'array_element', arguments: { data: [1], index: 5 }, result: true } } } },
        result: true,
      },
    };
    const err = await evaluateGraph(graph, e, rootScope()).then(
      () => null,
      (x) => x,
    );
    expect(err).not.toBeNull();
    expect(failurePath(err)).toEqual([
      { node_id: 'bad', process_id: 'array_element' },
      { node_id: 'm', process_id: 'array_apply' },
    ]);
  });

  it('is empty for an error that did not come from a node', () => {
    expect(failurePath(new Error('x'))).toEqual([]);
  });
});

describe('parseRange', () => {
  it('reads single byte ranges and leaves the rest to a whole answer', () => {
    expect(parseRange('bytes=0-99', 1000)).toEqual({ start: 0, end: 99 });
    expect(parseRange('bytes=900-', 1000)).toEqual({ start: 900, end: 999 });
    expect(parseRange('bytes=-100', 1000)).toEqual({ start: 900, end: 999 });
    expect(parseRange('bytes=990-2000', 1000)).toEqual({ start: 990, end: 999 });
    expect(parseRange(undefined, 1000)).toBeNull();
    expect(parseRange('bytes=0-1,5-6', 1000)).toBeNull();
    expect(parseRange('items=0-1', 1000)).toBeNull();
    expect(parseRange('bytes=5-1', 1000)).toBeNull();
  });

  it('refuses a range that starts beyond the end with 416 and the size', () => {
    for (const h of ['bytes=1000-', 'bytes=-0']) {
      let err: any = null;
      try {
        parseRange(h, 1000);
      } catch (e) {
        err = e;
      }
      expect(err?.status).toBe(416);
      expect(err?.headers).toEqual({ 'Content-Range': 'bytes */1000' });
    }
  });
});
