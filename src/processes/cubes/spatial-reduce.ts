// Reductions over the spatial dimensions: reduce_spatial (all pixels of each x/y plane) and
// aggregate_spatial_window (non-overlapping windows of pixels). Both are zonal statistics over
// spans that need no rasterising (a window is its rows), so the common reducers run on the
// kernels (datacube/zonal.ts) and any other as a child process on the gathered values.
import { ApiError } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import type { Callback, ProcessContext } from '../../core/process.js';
import { DataCube, spatialDims } from '../../datacube/datacube.js';
import { cubeOf } from '../../data/lazy.js';
import type { Spans } from '../../datacube/spans.js';
import { zonalStats, zonalValues } from '../../datacube/zonal.js';
import type { Grid } from '../../core/grid.js';
import { reduceVectors, requireCallback } from './common.js';
import { zonalStatOf } from './zonal.js';

const invalid = (process: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process, parameter, reason });

/**
 * The reducer over each label's pixels, for every plane: [label][plane]. `padding[l]` no-data
 * pixels are added to label l (windows reaching past the grid).
 */
async function reduceLabels(cube: DataCube, spans: Spans, cb: Callback, context: unknown, process: string, padding?: Int32Array): Promise<Float32Array> {
  const grid = cube.grid!;
  const plane = grid.width * grid.height;
  const planes = plane === 0 ? 0 : cube.size / plane;
  const L = spans.labels;
  const kernel = zonalStatOf(cb);
  if (kernel && (!padding || kernel.ignoreNodata)) {
    // Padding is no-data, which these reducers leave out.
    return zonalStats(cube.data, grid.width, grid.height, planes, spans, kernel.stat, kernel.ignoreNodata).values;
  }
  const zv = zonalValues(cube.data, grid.width, grid.height, planes, spans);
  const out = new Float32Array(L * planes);
  for (let l = 0; l < L; l++) {
    const items = zv.values(l);
    for (let k = 0; k < (padding?.[l] ?? 0); k++) items.push(new Float32Array(planes).fill(NaN));
    const v = await reduceVectors(cb, items, null, planes, context, process);
    out.set(v, l * planes);
  }
  return out;
}

function checkSize(values: number, ctx: ProcessContext): void {
  if (ctx.run && values > ctx.run.maxValues) throw new ApiError('ProcessGraphComplexity', {}, `The result would hold ${values} values, more than the ${ctx.run.maxValues} allowed here. ${ctx.run.limitAdvice}`);
}

export const processes: ProcessImpl[] = [
  implement('reduce_spatial', async (a, ctx) => {
    const P = 'reduce_spatial';
    const cb = requireCallback(a.callback('reducer'), P, 'reducer');
    const cube = await cubeOf(a.get('data'), ctx.run, P);
    const grid = cube.grid;
    if (!grid) throw invalid(P, 'data', 'a raster data cube (with x and y) is expected');
    const data = new Int32Array(grid.height * 4);
    for (let r = 0; r < grid.height; r++) data.set([0, r, 0, grid.width], 4 * r);
    const values = await reduceLabels(cube, { data, count: grid.height, labels: 1 }, cb, a.get('context'), P);
    return new DataCube({ dims: cube.dims.slice(0, -2), data: values, bandInfo: cube.bandInfo });
  }),
  implement('aggregate_spatial_window', async (a, ctx) => {
    const P = 'aggregate_spatial_window';
    const cb = requireCallback(a.callback('reducer'), P, 'reducer');
    const size = a.get<number[]>('size');
    if (!Array.isArray(size) || size.length !== 2 || !size.every((v) => Number.isInteger(v) && v >= 1)) throw invalid(P, 'size', 'two positive integers [x, y] are expected');
    const [sx, sy] = size;
    const boundary = a.get<string>('boundary');
    const align = a.get<string>('align');
    if (boundary !== 'pad' && boundary !== 'trim') throw invalid(P, 'boundary', "'pad' or 'trim' is expected");
    if (!['upper-left', 'lower-left', 'upper-right', 'lower-right'].includes(align)) throw invalid(P, 'align', 'upper-left, lower-left, upper-right or lower-right is expected');
    const cube = await cubeOf(a.get('data'), ctx.run, P);
    const grid = cube.grid;
    if (!grid) throw invalid(P, 'data', 'a raster data cube (with x and y) is expected');
    const W = grid.width;
    const H = grid.height;
    const nx = boundary === 'pad' ? Math.ceil(W / sx) : Math.floor(W / sx);
    const ny = boundary === 'pad' ? Math.ceil(H / sy) : Math.floor(H / sy);
    if (nx === 0 || ny === 0) throw invalid(P, 'size', `the window (${sx} x ${sy}) is larger than the grid (${W} x ${H}) and boundary is trim`);
    // Offset of the first window: windows start at the aligned corner; the rest pads or trims at the other side.
    const ox = align.endsWith('right') ? W - nx * sx : 0;
    const oy = align.startsWith('lower') ? H - ny * sy : 0;
    const planes = cube.size / (W * H);
    checkSize(nx * ny * planes, ctx);
    const spans: number[] = [];
    const padding = new Int32Array(nx * ny);
    for (let j = 0; j < ny; j++) {
      for (let i = 0; i < nx; i++) {
        const label = j * nx + i;
        const c0 = ox + i * sx;
        const r0 = oy + j * sy;
        const cc0 = Math.max(0, c0);
        const cc1 = Math.min(W, c0 + sx);
        let inside = 0;
        for (let r = Math.max(0, r0); r < Math.min(H, r0 + sy); r++) {
          if (cc0 < cc1) {
            spans.push(label, r, cc0, cc1);
            inside += cc1 - cc0;
          }
        }
        padding[label] = sx * sy - inside;
      }
    }
    const values = await reduceLabels(cube, { data: Int32Array.from(spans), count: spans.length / 4, labels: nx * ny }, cb, a.get('context'), P, boundary === 'pad' ? padding : undefined);
    // [label][plane] -> [plane][row][col]
    const out = new Float32Array(planes * nx * ny);
    for (let l = 0; l < nx * ny; l++) for (let p = 0; p < planes; p++) out[p * nx * ny + l] = values[l * planes + p];
    const t = grid.transform;
    const g: Grid = { epsg: grid.epsg, transform: [t[0] + ox * t[1], t[1] * sx, 0, t[3] + oy * t[5], 0, t[5] * sy], width: nx, height: ny };
    return cube.with({ dims: [...cube.dims.slice(0, -2), ...spatialDims(g)], data: out, grid: g });
  }),
];
