// Spatial resampling: to a resolution and/or CRS (resample_spatial) or onto the grid of another
// cube (resample_cube_spatial). On a deferred load these only change what the load reads (target
// CRS, pixel size and so the overview level), so coarse results never read full resolution. On a
// loaded cube every (date, band) plane is warped on its own: nearest or bilinear through
// src/data/warp.ts, average by block means when the pixel size grows by a whole factor in the same CRS.
import { ApiError } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import { DataCube, spatialDims } from '../../datacube/datacube.js';
import { LazyCube, cubeOf } from '../../data/lazy.js';
import { transformBox } from '../../geometry/crs.js';
import { gridBox, type Box, type Grid } from '../../core/grid.js';
import { collectionOf, type Extent } from '../../data/load.js';
import { warp, type Resampling } from '../../data/warp.js';
import { epsgOf } from './extents.js';

const invalid = (processId: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process: processId, parameter, reason });

export type Method = 'near' | 'bilinear' | 'average';
const METHODS: Method[] = ['near', 'bilinear', 'average'];

function methodOf(v: unknown, processId: string): Method {
  if (!METHODS.includes(v as Method)) {
    throw invalid(processId, 'method', `the method '${String(v)}' is not supported by this back-end; supported are ${METHODS.join(', ')}`);
  }
  return v as Method;
}

/** The warp method a load uses for a method (averaging comes from the averaged overviews). */
const loadResampling = (m: Method): Resampling => (m === 'bilinear' ? 'bilinear' : 'nearest');

function resolutionOf(v: unknown, processId: string): [number, number] {
  const ok = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x >= 0;
  if (ok(v)) return [v, v];
  if (Array.isArray(v) && v.length === 2 && ok(v[0]) && ok(v[1])) return [v[0], v[1]];
  throw invalid(processId, 'resolution', 'a resolution >= 0 or an array [x, y] of them is expected');
}

function requireGrid(cube: DataCube, processId: string, parameter = 'data'): Grid {
  if (!cube.grid) throw invalid(processId, parameter, 'the data cube has no spatial dimensions');
  return cube.grid;
}

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
const whole = (x: number) => Math.abs(x - Math.round(x)) < 1e-6;

export type Align = 'upper-left' | 'lower-left' | 'upper-right' | 'lower-right';

/**
 * The grid of resample_spatial: the extent of `src` (carried into `epsg`), covered by pixels of
 * rx by ry (0 = keep the pixel size; in another CRS the size giving about as many pixels), starting
 * at the given corner of the extent. Pixels overhang the extent on the opposite sides.
 */
export function targetGrid(src: Grid, epsg: number, rx: number, ry: number, align: Align): Grid {
  const srcBox = gridBox(src);
  let box: Box = srcBox;
  let sx = Math.abs(src.transform[1]);
  let sy = Math.abs(src.transform[5]);
  if (epsg !== src.epsg) {
    box = transformBox(srcBox, src.epsg, epsg);
    // Square pixels, as many as the source has.
    sx = sy = Math.sqrt(((box[2] - box[0]) * (box[3] - box[1])) / (src.width * src.height));
  }
  const resX = rx > 0 ? rx : sx;
  const resY = ry > 0 ? ry : sy;
  const width = Math.max(1, Math.ceil((box[2] - box[0]) / resX - 1e-9));
  const height = Math.max(1, Math.ceil((box[3] - box[1]) / resY - 1e-9));
  const left = align === 'upper-left' || align === 'lower-left';
  const upper = align === 'upper-left' || align === 'upper-right';
  const x0 = left ? box[0] : box[2] - width * resX;
  const y0 = upper ? box[3] : box[1] + height * resY;
  return { epsg, transform: [x0, resX, 0, y0, 0, -resY], width, height };
}

function sameGrid(a: Grid, b: Grid): boolean {
  return a.epsg === b.epsg && a.width === b.width && a.height === b.height && a.transform.every((v, i) => close(v, b.transform[i]));
}

/** Source pixels per target pixel and the target origin in source pixels, when dst is src coarsened by whole factors. */
function blockLayout(src: Grid, dst: Grid): { kx: number; ky: number; col0: number; row0: number } | null {
  const s = src.transform;
  const d = dst.transform;
  if (src.epsg !== dst.epsg || s[2] !== 0 || s[4] !== 0 || d[2] !== 0 || d[4] !== 0) return null;
  const fx = d[1] / s[1];
  const fy = d[5] / s[5];
  const col = (d[0] - s[0]) / s[1];
  const row = (d[3] - s[3]) / s[5];
  if (!(fx >= 1 - 1e-9 && fy >= 1 - 1e-9 && whole(fx) && whole(fy) && whole(col) && whole(row))) return null;
  return { kx: Math.round(fx), ky: Math.round(fy), col0: Math.round(col), row0: Math.round(row) };
}

/** Mean of the valid source pixels in each target pixel's block (NaN when there are none). */
function blockAverage(plane: Float32Array, src: Grid, dst: Grid, l: { kx: number; ky: number; col0: number; row0: number }, out: Float32Array): void {
  const sum = new Float64Array(dst.width);
  const cnt = new Uint32Array(dst.width);
  for (let R = 0; R < dst.height; R++) {
    sum.fill(0);
    cnt.fill(0);
    const rFrom = Math.max(0, l.row0 + R * l.ky);
    const rTo = Math.min(src.height, l.row0 + (R + 1) * l.ky);
    for (let r = rFrom; r < rTo; r++) {
      const row = r * src.width;
      for (let C = 0; C < dst.width; C++) {
        const cFrom = Math.max(0, l.col0 + C * l.kx);
        const cTo = Math.min(src.width, l.col0 + (C + 1) * l.kx);
        for (let c = cFrom; c < cTo; c++) {
          const v = plane[row + c];
          if (v === v) {
            sum[C] += v;
            cnt[C]++;
          }
        }
      }
    }
    for (let C = 0; C < dst.width; C++) out[R * dst.width + C] = cnt[C] ? sum[C] / cnt[C] : NaN;
  }
}

/** Copies a plane onto a grid of the same CRS and pixel size shifted by whole pixels (NaN outside). */
function shiftCopy(plane: Float32Array, src: Grid, dst: Grid, col0: number, row0: number, out: Float32Array): void {
  out.fill(NaN);
  for (let R = 0; R < dst.height; R++) {
    const r = row0 + R;
    if (r < 0 || r >= src.height) continue;
    const cFrom = Math.max(0, -col0);
    const cTo = Math.min(dst.width, src.width - col0);
    if (cTo <= cFrom) continue;
    out.set(plane.subarray(r * src.width + col0 + cFrom, r * src.width + col0 + cTo), R * dst.width + cFrom);
  }
}

/** The cube with its y/x dimensions resampled onto `dst`, plane by plane. */
export function resampleCube(cube: DataCube, dst: Grid, method: Method, processId: string): DataCube {
  const src = requireGrid(cube, processId);
  if (sameGrid(src, dst)) return cube;
  const plane = src.width * src.height;
  const dplane = dst.width * dst.height;
  const planes = cube.size / plane;
  const out = new Float32Array(planes * dplane);
  const layout = blockLayout(src, dst);
  const planeAt = (p: number) => cube.data.subarray(p * plane, (p + 1) * plane);
  const outAt = (p: number) => out.subarray(p * dplane, (p + 1) * dplane);
  if (method === 'average') {
    if (!layout) {
      throw invalid(
        processId,
        'method',
        'average is supported only for enlarging the pixel size by a whole factor in the same CRS, with the new grid on pixel edges of the old one; use near or bilinear otherwise',
      );
    }
    for (let p = 0; p < planes; p++) blockAverage(planeAt(p), src, dst, layout, outAt(p));
  } else if (layout && layout.kx === 1 && layout.ky === 1) {
    // Same pixels, shifted: a crop and/or pad, which is what either method gives at pixel centres.
    for (let p = 0; p < planes; p++) shiftCopy(planeAt(p), src, dst, layout.col0, layout.row0, outAt(p));
  } else {
    const m = loadResampling(method);
    for (let p = 0; p < planes; p++) out.set(warp({ grid: src, data: planeAt(p) }, dst, m), p * dplane);
  }
  const [ydim, xdim] = spatialDims(dst);
  return cube.with({ dims: [...cube.dims.slice(0, -2), ydim, xdim], data: out, grid: dst });
}

/** The part of a load's extent inside a box (in `epsg`); the extent itself when they do not meet. */
function narrowExtent(cur: Extent | null, box: Box, epsg: number): Extent {
  const boxExtent: Extent = { west: box[0], south: box[1], east: box[2], north: box[3], crs: epsg };
  if (!cur) return boxExtent;
  let c: Box;
  try {
    c = transformBox([cur.west, cur.south, cur.east, cur.north], cur.crs ?? 4326, epsg);
  } catch {
    return cur;
  }
  const e: Extent = { west: Math.max(box[0], c[0]), south: Math.max(box[1], c[1]), east: Math.min(box[2], c[2]), north: Math.min(box[3], c[3]), crs: epsg };
  return e.west < e.east && e.south < e.north ? e : cur;
}

/** The grid of a cube argument, without loading a deferred one. */
function gridOf(v: unknown, processId: string, parameter: string): Grid {
  if (v instanceof LazyCube) return v.plan().grid;
  if (v instanceof DataCube) return requireGrid(v, processId, parameter);
  throw invalid(processId, parameter, 'a data cube is expected');
}

export const processes: ProcessImpl[] = [
  implement('resample_spatial', async (a, ctx) => {
    const id = 'resample_spatial';
    const [rx, ry] = resolutionOf(a.get('resolution'), id);
    const projection = a.get<unknown>('projection');
    const epsg = projection === null || projection === undefined ? null : epsgOf(projection, id, 'projection');
    const method = methodOf(a.get('method'), id);
    const align = a.get<Align>('align');
    let data = a.get<unknown>('data');
    if (data instanceof LazyCube) {
      const cur = data.spec.target;
      const native = cur.epsg ?? collectionOf(data.spec.source, data.spec.collection).epsg;
      const to = epsg ?? native;
      const kept = to === native ? cur.resolution : undefined;
      if (rx === ry) return data.with({ target: { epsg: to, resolution: rx > 0 ? rx : kept }, resampling: loadResampling(method) });
      // Different x and y sizes: load at the finer one, then resample in memory.
      const finer = Math.min(...[rx, ry].filter((r) => r > 0));
      data = data.with({ target: { epsg: to, resolution: rx > 0 && ry > 0 ? finer : kept }, resampling: loadResampling(method) });
    }
    if (epsg === null && rx === 0 && ry === 0) return data;
    const cube = await cubeOf(data, ctx.run, id);
    const src = requireGrid(cube, id);
    return resampleCube(cube, targetGrid(src, epsg ?? src.epsg, rx, ry, align), method, id);
  }),
  implement('resample_cube_spatial', async (a, ctx) => {
    const id = 'resample_cube_spatial';
    let method = methodOf(a.get('method'), id);
    const dst = gridOf(a.get('target'), id, 'target');
    let data = a.get<unknown>('data');
    if (data instanceof LazyCube) {
      const res = Math.min(Math.abs(dst.transform[1]), Math.abs(dst.transform[5]));
      // One target pixel of margin, so bilinear has neighbours at the edges.
      const b = gridBox(dst);
      const box: Box = [b[0] - res, b[1] - res, b[2] + res, b[3] + res];
      data = data.with({ extent: narrowExtent(data.spec.extent, box, dst.epsg), target: { epsg: dst.epsg, resolution: res }, resampling: loadResampling(method) });
      // The load has averaged already (overviews); what is left is fitting the grid.
      if (method === 'average') method = 'near';
    }
    const cube = await cubeOf(data, ctx.run, id);
    return resampleCube(cube, dst, method, id);
  }),
];
