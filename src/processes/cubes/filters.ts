// Filters: on a deferred load they narrow what will be read; on a loaded cube they select labels
// or crop the grid.
import { ApiError } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import { ProcessException } from '../../core/errors.js';
import { DataCube, spatialDims } from '../../datacube/datacube.js';
import { LazyCube, cubeOf, intersectExtent, lazyWithGeometries } from '../../data/lazy.js';
import { geometriesArg, rasterizeMask } from '../../datacube/geometry.js';
import { filterBboxVector } from './vector-ops.js';
import { bandsOf, collectionOf } from '../../data/load.js';
import type { Grid } from '../../core/grid.js';
import { labelStart } from '../../core/labels.js';
import { bboxOf, inInterval, intersectInterval, intervalOf, windowOf } from './extents.js';
import { dimIndex } from './common.js';
import { vectorLimits } from '../../datacube/vector-limits.js';

/** A raster cube cut to columns col0..col1 and rows row0..row1 (inclusive). */
export function cropCube(cube: DataCube, col0: number, col1: number, row0: number, row1: number): DataCube {
  const grid = cube.grid;
  if (!grid) throw new ApiError('ProcessParameterInvalid', { process: 'filter_bbox', parameter: 'data', reason: 'the data cube has no spatial dimensions' });
  const w = Math.max(0, col1 - col0 + 1);
  const h = Math.max(0, row1 - row0 + 1);
  const t = grid.transform;
  const g: Grid = { epsg: grid.epsg, transform: [t[0] + col0 * t[1], t[1], 0, t[3] + row0 * t[5], 0, t[5]], width: w, height: h };
  const planes = cube.size / (grid.width * grid.height);
  const out = new Float32Array(planes * w * h);
  for (let p = 0; p < planes; p++) {
    for (let r = 0; r < h; r++) {
      const src = p * grid.width * grid.height + (row0 + r) * grid.width + col0;
      out.set(cube.data.subarray(src, src + w), (p * h + r) * w);
    }
  }
  const [ydim, xdim] = spatialDims(g);
  return cube.with({ dims: [...cube.dims.slice(0, -2), ydim, xdim], data: out, grid: g });
}

export const processes: ProcessImpl[] = [
  implement('filter_bbox', async (a, ctx) => {
    const data = a.get<unknown>('data');
    const extent = bboxOf(a.get('extent'), 'filter_bbox', 'extent');
    if (data instanceof LazyCube) return data.with({ extent: intersectExtent(data.spec.extent, extent) });
    const cube = await cubeOf(data, ctx.run, 'filter_bbox');
    if (cube.features) return filterBboxVector(cube, extent);
    if (!cube.grid) throw new ApiError('ProcessParameterInvalid', { process: 'filter_bbox', parameter: 'data', reason: 'the data cube has no spatial dimensions' });
    const w = windowOf(cube.grid, extent);
    return cropCube(cube, w.col0, w.col1, w.row0, w.row1);
  }),
  implement('filter_temporal', async (a, ctx) => {
    const data = a.get<unknown>('data');
    const interval = intervalOf(a.get('extent'), 'filter_temporal', 'extent');
    const name = a.get<string | null>('dimension');
    if (data instanceof LazyCube && (name === null || name === 't')) return data.with({ temporal: intersectInterval(data.spec.temporal, interval) });
    let cube = await cubeOf(data, ctx.run, 'filter_temporal');
    const dims =
      name === null
        ? cube.dims
            .map((d, i) => [d, i] as const)
            .filter(([d]) => d.type === 'temporal')
            .map(([, i]) => i)
        : [dimIndex(cube, name)];
    for (const d of dims) {
      const dim = cube.dims[d];
      const starts = dim.labels.map(labelStart);
      const text = dim.labels.find((_, i) => Number.isNaN(starts[i]));
      if (text !== undefined) {
        throw new ApiError('ProcessParameterInvalid', {
          process: 'filter_temporal',
          parameter: 'data',
          reason: `the label '${text}' of '${dim.name}' is no date or time, so no interval holds it; choose such labels with filter_labels`,
        });
      }
      const keep = starts.flatMap((t, i) => (inInterval(t, interval) ? [i] : []));
      cube = cube.select(d, keep);
    }
    return cube;
  }),
  implement('filter_bands', async (a, ctx) => {
    const data = a.get<unknown>('data');
    const names = a.get<string[] | null>('bands') ?? [];
    const ranges = a.get<[number, number][] | null>('wavelengths') ?? [];
    if (!names.length && !ranges.length) throw new ProcessException('BandFilterParameterMissing', 'give band names or wavelength ranges');
    const info = (cubeBands: string[], meta: (n: string) => { common_name?: string; center_wavelength?: number } | undefined): string[] => {
      const picked: string[] = [];
      const add = (b: string) => !picked.includes(b) && picked.push(b);
      for (const n of names) {
        if (cubeBands.includes(n)) add(n);
        else {
          const matches = cubeBands.filter((b) => meta(b)?.common_name === n);
          if (!matches.length) throw new ApiError('ProcessParameterInvalid', { process: 'filter_bands', parameter: 'bands', reason: `the cube has no band '${n}'` });
          matches.forEach(add);
        }
      }
      for (const [lo, hi] of ranges) {
        for (const b of cubeBands) {
          const w = meta(b)?.center_wavelength;
          if (w !== undefined && w >= lo && w <= hi) add(b);
        }
      }
      return picked;
    };
    if (data instanceof LazyCube) {
      const meta = collectionOf(data.spec.source, data.spec.collection);
      const current = bandsOf(meta, data.spec.bands).map((b) => b.name);
      return data.with({ bands: info(current, (n) => meta.bands.find((b) => b.name === n)) });
    }
    const cube = await cubeOf(data, ctx.run, 'filter_bands');
    const d = cube.dims.findIndex((x) => x.type === 'bands');
    if (d < 0) throw new ProcessException('DimensionMissing', 'the data cube has no dimension of type bands');
    const labels = cube.dims[d].labels.map(String);
    const picked = info(labels, (n) => cube.bandInfo[n]);
    return cube.select(
      d,
      picked.map((p) => labels.indexOf(p)),
    );
  }),
  implement('filter_spatial', async (a, ctx) => {
    const data = a.get<unknown>('data');
    const geoms = await geometriesArg(a.get('geometries'), 'filter_spatial', vectorLimits(ctx.run));
    if (data instanceof LazyCube) return lazyWithGeometries(data, geoms);
    const cube = await cubeOf(data, ctx.run, 'filter_spatial');
    if (!cube.grid) throw new ApiError('ProcessParameterInvalid', { process: 'filter_spatial', parameter: 'data', reason: 'the data cube has no spatial dimensions' });
    const inside = rasterizeMask(geoms, cube.grid);
    const out = cube.data.slice();
    const plane = inside.length;
    for (let o = 0; o < out.length; o += plane) for (let i = 0; i < plane; i++) if (!inside[i]) out[o + i] = NaN;
    let c0 = cube.grid.width,
      c1 = -1,
      r0 = cube.grid.height,
      r1 = -1;
    for (let i = 0; i < plane; i++) {
      if (!inside[i]) continue;
      const r = Math.floor(i / cube.grid.width);
      const c = i % cube.grid.width;
      c0 = Math.min(c0, c);
      c1 = Math.max(c1, c);
      r0 = Math.min(r0, r);
      r1 = Math.max(r1, r);
    }
    return cropCube(cube.with({ data: out }), c0, c1, r0, r1);
  }),
];

export { geometriesArg };
