// Processes that combine a cube with another cube, with geometries or with its neighbourhood:
// merge_cubes, mask, mask_polygon, apply_kernel and apply_neighborhood. Cubes are combined block
// by block: the trailing dimensions both cubes share with identical labels (at least y and x of
// one raster grid) form contiguous blocks that are copied whole; only the outer dimensions are
// matched label by label.
import { ApiError } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import { ProcessException } from '../../core/errors.js';
import { labelStart, type Labels } from '../../core/labels.js';
import { DataCube, spatialDims, type Dimension } from '../../datacube/datacube.js';
import { VectorFeatures } from '../../datacube/features.js';
import { PartKind } from '../../geometry/geometry-column.js';
import { PixelArray, broadcast } from '../../datacube/pixels.js';
import { LazyCube, cubeOf } from '../../data/lazy.js';
import { rasterizeMask } from '../../datacube/geometry.js';
import type { Grid } from '../../core/grid.js';
import { geometriesArg } from './filters.js';
import { dimIndex, joinSlices, requireCallback, slicesOf } from './common.js';
import { labelKey } from './dimensions.js';
import { runUdfChild, udfChild } from '../udf.js';
import { vectorLimits } from '../../datacube/vector-limits.js';

const invalid = (process: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process, parameter, reason });

export function sameGrid(a: Grid, b: Grid): boolean {
  return a.epsg === b.epsg && a.width === b.width && a.height === b.height && a.transform.every((v, i) => Math.abs(v - b.transform[i]) <= 1e-9 * Math.max(1, Math.abs(v)));
}

const product = (xs: number[]) => xs.reduce((p, x) => p * x, 1);

function stridesOf(shape: number[]): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

/**
 * How the cells of an output (dims `out`) find their values in an input cube: for each output
 * dimension the input's label position per output label (-1 = the input lacks that label), or
 * null when the input lacks the whole dimension (its values repeat along it).
 */
type LabelMap = (Int32Array | null)[];

/**
 * The number of trailing output dimensions that are trailing dimensions of every input too, in the
 * same order and with the same labels: along them input and output blocks are laid out alike.
 */
function sharedSuffix(out: Dimension[], inputs: { cube: DataCube; map: LabelMap }[]): number {
  let m = 0;
  for (let j = 1; j <= out.length; j++) {
    const k = out.length - j;
    const ok = inputs.every(({ cube, map }) => {
      const d = cube.dims.length - j;
      const idx = map[k];
      if (d < 0 || !idx || cube.dims[d].name !== out[k].name || idx.length !== cube.shape[d]) return false;
      for (let i = 0; i < idx.length; i++) if (idx[i] !== i) return false;
      return true;
    });
    if (!ok) break;
    m = j;
  }
  return m;
}

/**
 * Visits the blocks of the output: for output block `cell` (outer dimensions 0..K-1), the block
 * index of each input, or -1 where the input has no such labels.
 */
function walkBlocks(out: Dimension[], K: number, inputs: { cube: DataCube; map: LabelMap }[], B: number, visit: (cell: number, offsets: Int32Array) => void): void {
  const shape = out.slice(0, K).map((d) => d.labels.length);
  const strides = inputs.map(({ cube }) => {
    const s = stridesOf(cube.shape);
    return out.slice(0, K).map((d) => {
      const i = cube.index(d.name);
      return i < 0 ? 0 : s[i] / B;
    });
  });
  const coords = new Int32Array(K);
  const offsets = new Int32Array(inputs.length);
  const cells = product(shape);
  for (let cell = 0; cell < cells; cell++) {
    for (let n = 0; n < inputs.length; n++) {
      let o = 0;
      const map = inputs[n].map;
      for (let k = 0; k < K; k++) {
        const idx = map[k];
        if (!idx) continue;
        const p = idx[coords[k]];
        if (p < 0) {
          o = -1;
          break;
        }
        o += p * strides[n][k];
      }
      offsets[n] = o;
    }
    visit(cell, offsets);
    for (let k = K - 1; k >= 0; k--) {
      if (++coords[k] < shape[k]) break;
      coords[k] = 0;
    }
  }
}

/** Label positions of `cube`'s dimension `name` for each of `labels` (-1 where missing), or null without that dimension. */
function labelMap(cube: DataCube, dim: Dimension, labels: Labels): Int32Array | null {
  const d = cube.index(dim.name);
  if (d < 0) return null;
  const at = new Map(cube.dims[d].labels.map((l, i) => [labelKey(dim.type, l), i]));
  return Int32Array.from(labels, (l) => at.get(labelKey(dim.type, l)) ?? -1);
}

/** Point, line or polygon: what merge_cubes means by the base type of a geometry. */
function baseTypes(f: VectorFeatures | null, into: Set<string>): void {
  const names: Record<number, string> = { [PartKind.Point]: 'Point', [PartKind.Line]: 'LineString', [PartKind.Polygon]: 'Polygon' };
  for (const k of f?.geometries.kinds() ?? []) into.add(names[k]);
}

/** The number a replacement value stands for in a cube (null = no-data). */
function replacementOf(v: unknown, processId: string): number {
  if (v === null || v === undefined) return NaN;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return v;
  throw invalid(processId, 'replacement', 'this back-end stores numbers in data cubes: give a number, a boolean or null');
}

/** Copies the box `size` at `srcLo` of an array of shape `srcShape` to `dstLo` of one of shape `dstShape`. */
function copyBox(src: Float32Array, srcShape: number[], srcLo: number[], dst: Float32Array, dstShape: number[], dstLo: number[], size: number[]): void {
  const n = size.length;
  if (size.some((s) => s <= 0)) return;
  if (n === 0) {
    dst[0] = src[0];
    return;
  }
  const ss = stridesOf(srcShape);
  const ds = stridesOf(dstShape);
  const run = size[n - 1];
  const coords = new Int32Array(n - 1);
  const rows = product(size.slice(0, n - 1));
  for (let r = 0; r < rows; r++) {
    let so = srcLo[n - 1];
    let doff = dstLo[n - 1];
    for (let k = 0; k < n - 1; k++) {
      so += (srcLo[k] + coords[k]) * ss[k];
      doff += (dstLo[k] + coords[k]) * ds[k];
    }
    dst.set(src.subarray(so, so + run), doff);
    for (let k = n - 2; k >= 0; k--) {
      if (++coords[k] < size[k]) break;
      coords[k] = 0;
    }
  }
}

type Border = number | 'replicate' | 'reflect' | 'reflect_pixel' | 'wrap';

/** The position inside [0, n) that position i outside of it takes under a border mode, or -1 for a constant. */
function borderIndex(i: number, n: number, mode: Border): number {
  if (i >= 0 && i < n) return i;
  const mod = (a: number, m: number) => ((a % m) + m) % m;
  switch (mode) {
    case 'replicate':
      return i < 0 ? 0 : n - 1;
    case 'reflect': {
      const m = mod(i, 2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    case 'reflect_pixel': {
      if (n === 1) return 0;
      const m = mod(i, 2 * n - 2);
      return m < n ? m : 2 * n - 2 - m;
    }
    case 'wrap':
      return mod(i, n);
    default:
      return -1;
  }
}

/** Most child-process calls apply_neighborhood makes for one cube. */
const MAX_NEIGHBORHOODS = 20000;

/** Block sizes or overlaps in labels per dimension position, from `[{dimension, value, unit}]`. */
function chunkSizes(v: unknown, cube: DataCube, parameter: 'size' | 'overlap'): Map<number, number | null> {
  const out = new Map<number, number | null>();
  if (v === null || v === undefined) return out;
  if (!Array.isArray(v)) throw invalid('apply_neighborhood', parameter, 'an array of {dimension, value, unit} is expected');
  for (const e of v as Record<string, unknown>[]) {
    const name = e?.dimension;
    if (typeof name !== 'string') throw invalid('apply_neighborhood', parameter, 'each entry needs a dimension name');
    const d = dimIndex(cube, name);
    const dim = cube.dims[d];
    const value = e.value ?? null;
    const unit = e.unit ?? null;
    if (value === null) {
      out.set(d, parameter === 'size' ? null : 0);
      continue;
    }
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw invalid('apply_neighborhood', parameter, `the ${parameter} of '${name}' must be a number of labels (or pixels, or metres for x and y); durations are not supported here`);
    }
    let labels = value;
    const grid = cube.grid && dim.type === 'spatial' && (dim.axis === 'x' || dim.axis === 'y') ? cube.grid : null;
    if (unit === 'm' || (unit === null && grid)) {
      if (!grid) throw invalid('apply_neighborhood', parameter, `'${name}' is not a spatial dimension of the raster grid; give its ${parameter} in labels (unit px)`);
      labels = value / Math.abs(dim.axis === 'x' ? grid.transform[1] : grid.transform[5]);
      if (Math.abs(labels - Math.round(labels)) < 1e-6) labels = Math.round(labels);
    } else if (unit !== 'px' && unit !== null) {
      throw invalid('apply_neighborhood', parameter, `unknown unit '${String(unit)}' (px or m)`);
    }
    if (!Number.isInteger(labels)) throw invalid('apply_neighborhood', parameter, `the ${parameter} of '${name}' must be a whole number of pixels (it is ${labels})`);
    if (parameter === 'size' && labels < 1) throw invalid('apply_neighborhood', parameter, `the size of '${name}' must be at least one pixel`);
    out.set(d, labels);
  }
  return out;
}

function sameDims(a: DataCube, b: DataCube): boolean {
  return (
    a.dims.length === b.dims.length &&
    a.dims.every((d, i) => {
      const e = b.dims[i];
      return d.name === e.name && d.type === e.type && d.labels.length === e.labels.length && d.labels.every((l, k) => labelKey(d.type, l) === labelKey(d.type, e.labels[k]));
    })
  );
}

export const processes: ProcessImpl[] = [
  implement('merge_cubes', async (a, ctx) => {
    const P = 'merge_cubes';
    const c1 = await cubeOf(a.get('cube1'), ctx.run, P, 'cube1');
    const c2 = await cubeOf(a.get('cube2'), ctx.run, P, 'cube2');
    const vector1 = c1.dims.some((d) => d.type === 'geometry');
    const vector2 = c2.dims.some((d) => d.type === 'geometry');
    if (vector1 !== vector2 || !!c1.grid !== !!c2.grid) throw invalid(P, 'cube2', 'a raster and a vector data cube (or a cube without raster grid) cannot be merged');
    if (c1.grid && c2.grid && !sameGrid(c1.grid, c2.grid)) {
      throw invalid(P, 'cube2', 'the cubes lie on different raster grids (CRS, resolution or extent); align cube2 to cube1 with resample_cube_spatial first');
    }
    if (vector1 && vector2) {
      const kinds = new Set<string>();
      baseTypes(c1.features, kinds);
      baseTypes(c2.features, kinds);
      if (kinds.size > 1) throw new ProcessException('IncompatibleGeometryTypes', `the cubes hold geometries of different kinds (${[...kinds].join(', ')})`);
    }
    for (const d of c1.dims) {
      const e = c2.dim(d.name);
      if (e && (e.type !== d.type || e.axis !== d.axis)) throw invalid(P, 'cube2', `the dimension '${d.name}' is of type ${d.type} in cube1 but ${e.type} in cube2`);
    }
    const in1 = c2.dims.every((d) => c1.has(d.name));
    const in2 = c1.dims.every((d) => c2.has(d.name));
    if (!in1 && !in2) {
      throw invalid(P, 'cube2', `the dimensions of one cube must all be dimensions of the other (cube1: ${c1.dims.map((d) => d.name).join(', ')}; cube2: ${c2.dims.map((d) => d.name).join(', ')})`);
    }
    // The output dimensions, in the order of the cube that has them all, with united labels.
    const order = in1 ? c1.dims : c2.dims;
    // Where each geometry label's feature is: [cube (0 or 1), position].
    const geomOf = new Map<string, [number, number]>();
    const dims: Dimension[] = order.map((dim) => {
      const x = c1.dim(dim.name);
      const y = c2.dim(dim.name);
      if (!x || !y) return dim;
      const keys = new Set(x.labels.map((l) => labelKey(dim.type, l)));
      const extra = y.labels.filter((l) => !keys.has(labelKey(dim.type, l)));
      if (dim.type === 'spatial' && (extra.length || x.labels.length !== y.labels.length)) {
        throw invalid(P, 'cube2', `the cubes have different labels along '${dim.name}'; align cube2 to cube1 with resample_cube_spatial first`);
      }
      let labels: Labels = [...x.labels, ...extra];
      if (dim.type === 'temporal' && extra.length) {
        // In time order when every label is a time; text labels (weeks, names) keep cube1's order, then cube2's.
        const starts = labels.map(labelStart);
        if (!starts.some(Number.isNaN))
          labels = labels
            .map((l, i) => [l, starts[i]] as const)
            .sort((p, q) => p[1] - q[1])
            .map((p) => p[0]);
      }
      if (dim.type === 'geometry') {
        x.labels.forEach((l, i) => c1.features && geomOf.set(labelKey('geometry', l), [0, i]));
        y.labels.forEach((l, i) => c2.features && !geomOf.has(labelKey('geometry', l)) && geomOf.set(labelKey('geometry', l), [1, i]));
      }
      return { ...x, labels };
    });
    const inputs = [c1, c2].map((cube) => ({ cube, map: dims.map((d) => labelMap(cube, d, d.labels)) }));
    const m = sharedSuffix(dims, inputs);
    const K = dims.length - m;
    const B = product(dims.slice(K).map((d) => d.labels.length));
    const total = product(dims.map((d) => d.labels.length));
    if (ctx.run && total > ctx.run.maxValues) {
      throw new ApiError('ProcessGraphComplexity', {}, `merge_cubes would make a cube of ${total} values, more than the ${ctx.run.maxValues} allowed here. ${ctx.run.limitAdvice}`);
    }
    const out = new Float32Array(total).fill(NaN);
    const overlap: number[] = [];
    walkBlocks(dims, K, inputs, B, (cell, [o1, o2]) => {
      if (o1 >= 0 && o2 >= 0) overlap.push(cell, o1, o2);
      else if (o1 >= 0) out.set(c1.data.subarray(o1 * B, (o1 + 1) * B), cell * B);
      else if (o2 >= 0) out.set(c2.data.subarray(o2 * B, (o2 + 1) * B), cell * B);
    });
    if (overlap.length) {
      const cb = a.callback('overlap_resolver');
      if (!cb) throw new ProcessException('OverlapResolverMissing', 'the cubes have values for the same labels; give an overlap_resolver to combine them');
      const n = overlap.length / 3;
      const x = new Float32Array(n * B);
      const y = new Float32Array(n * B);
      for (let k = 0; k < n; k++) {
        x.set(c1.data.subarray(overlap[3 * k + 1] * B, (overlap[3 * k + 1] + 1) * B), k * B);
        y.set(c2.data.subarray(overlap[3 * k + 2] * B, (overlap[3 * k + 2] + 1) * B), k * B);
      }
      const r = broadcast(await cb({ x, y, context: a.get('context') }), n * B, P);
      if (r instanceof PixelArray) throw invalid(P, 'overlap_resolver', 'the overlap resolver must answer a single value per pixel');
      for (let k = 0; k < n; k++) out.set(r.subarray(k * B, (k + 1) * B), overlap[3 * k] * B);
    }
    const gdim = dims.find((d) => d.type === 'geometry');
    let features: VectorFeatures | null = null;
    if (gdim && c1.features && c2.features) {
      const f2 = c2.features.epsg === c1.features.epsg ? c2.features : c2.features.reproject(c1.features.epsg);
      const both = VectorFeatures.concat([c1.features, f2]);
      features = both.select(
        gdim.labels.map((l) => {
          const [c, i] = geomOf.get(labelKey('geometry', l))!;
          return c === 0 ? i : c1.features!.length + i;
        }),
      );
    }
    return new DataCube({
      dims,
      data: out,
      grid: c1.grid,
      features,
      bandInfo: { ...c2.bandInfo, ...c1.bandInfo },
    });
  }),
  implement('mask', async (a, ctx) => {
    const P = 'mask';
    const cube = await cubeOf(a.get('data'), ctx.run, P, 'data');
    const mask = await cubeOf(a.get('mask'), ctx.run, P, 'mask');
    const rep = replacementOf(a.get('replacement'), P);
    if (!cube.grid) throw invalid(P, 'data', 'a raster data cube (with x and y) is expected');
    if (!mask.grid) throw new ProcessException('IncompatibleDataCubes', 'the mask must be a raster data cube with x and y');
    if (!sameGrid(cube.grid, mask.grid)) {
      throw new ProcessException('IncompatibleDataCubes', 'the mask lies on another raster grid (CRS, resolution or extent) than the data; align it with resample_cube_spatial first');
    }
    for (const d of mask.dims) {
      const e = cube.dim(d.name);
      if (!e || e.type !== d.type) throw new ProcessException('IncompatibleDataCubes', `the mask has a dimension '${d.name}' (${d.type}) that the data cube ${e ? `has as ${e.type}` : 'lacks'}`);
    }
    const map = cube.dims.map((d) => {
      const idx = labelMap(mask, d, d.labels);
      const missing = idx ? d.labels.findIndex((_, i) => idx[i] < 0) : -1;
      if (missing >= 0) throw new ProcessException('IncompatibleDataCubes', `the mask has no label '${d.labels[missing]}' in '${d.name}'`);
      return idx;
    });
    const identity = cube.dims.map((_, k) => Int32Array.from(cube.dims[k].labels, (_l, i) => i));
    const inputs = [
      { cube, map: identity },
      { cube: mask, map },
    ];
    const m = sharedSuffix(cube.dims, inputs);
    const K = cube.dims.length - m;
    const B = product(cube.shape.slice(K));
    const out = cube.data.slice();
    const md = mask.data;
    walkBlocks(cube.dims, K, inputs, B, (cell, offsets) => {
      const o = cell * B;
      const mo = offsets[1] * B;
      for (let i = 0; i < B; i++) {
        const v = md[mo + i];
        if (v !== 0 && v === v) out[o + i] = rep;
      }
    });
    return cube.with({ data: out });
  }),
  implement('mask_polygon', async (a, ctx) => {
    const P = 'mask_polygon';
    const geoms = await geometriesArg(a.get('mask'), P, vectorLimits(ctx.run), 'mask');
    const cols = geoms.geometries;
    for (let g = 0; g < cols.length; g++) {
      const t = cols.typeName(g);
      if (t !== null && t !== 'Polygon' && t !== 'MultiPolygon') throw invalid(P, 'mask', `only polygons can mask, not a ${t} (feature ${g})`);
    }
    const keep = Array.from({ length: cols.length }, (_, g) => g).filter((g) => !cols.isEmpty(g));
    if (!keep.length) throw invalid(P, 'mask', 'there is no (non-empty) polygon');
    const polygons = keep.length === cols.length ? geoms : geoms.select(keep);
    const rep = replacementOf(a.get('replacement'), P);
    const inside = a.get<boolean>('inside') === true;
    const data = a.get<unknown>('data');
    // Outside masked to no-data is what a load's own mask does: no pixel outside gets read.
    if (data instanceof LazyCube && !inside && Number.isNaN(rep)) return data.with({ mask: [...(data.spec.mask ?? []), polygons] });
    const cube = await cubeOf(data, ctx.run, P, 'data');
    if (!cube.grid) throw invalid(P, 'data', 'a raster data cube (with x and y) is expected');
    const hit = rasterizeMask(polygons, cube.grid);
    const plane = hit.length;
    const masked = inside ? 1 : 0;
    const out = cube.data.slice();
    for (let o = 0; o < out.length; o += plane) {
      for (let i = 0; i < plane; i++) if (hit[i] === masked && out[o + i] === out[o + i]) out[o + i] = rep;
    }
    return cube.with({ data: out });
  }),
  implement('apply_kernel', async (a, ctx) => {
    const P = 'apply_kernel';
    const kernel = a.get<unknown>('kernel');
    if (!Array.isArray(kernel) || !kernel.every((row) => Array.isArray(row) && row.every((w) => typeof w === 'number' && Number.isFinite(w)))) {
      throw invalid(P, 'kernel', 'a two-dimensional array of numbers is expected');
    }
    const rows = kernel as number[][];
    const kw = rows.length ? rows[0].length : 0;
    if (rows.some((r) => r.length !== kw)) throw invalid(P, 'kernel', 'all rows of the kernel must have the same length');
    if (rows.length % 2 === 0 || kw % 2 === 0) throw new ProcessException('KernelDimensionsUneven', `the kernel is ${rows.length} x ${kw}; both counts must be odd`);
    const factor = a.get<number>('factor');
    const replace = a.get<number>('replace_invalid');
    const border = a.get<Border>('border');
    if (typeof border !== 'number' && !['replicate', 'reflect', 'reflect_pixel', 'wrap'].includes(border)) throw invalid(P, 'border', `unknown border mode '${String(border)}'`);
    const cube = await cubeOf(a.get('data'), ctx.run, P, 'data');
    if (!cube.grid) throw invalid(P, 'data', 'a raster data cube (with x and y) is expected');
    const W = cube.grid.width;
    const H = cube.grid.height;
    const ry = (rows.length - 1) / 2;
    const rx = (kw - 1) / 2;
    const PW = W + 2 * rx;
    const PH = H + 2 * ry;
    const rowSrc = Int32Array.from({ length: PH }, (_, r) => borderIndex(r - ry, H, border));
    const colSrc = Int32Array.from({ length: PW }, (_, c) => borderIndex(c - rx, W, border));
    const constant = typeof border === 'number' ? (Number.isFinite(border) ? border : replace) : 0;
    // Non-zero weights as offsets into the padded plane.
    const taps: number[] = [];
    const weights: number[] = [];
    rows.forEach((row, i) => row.forEach((w, j) => w !== 0 && (taps.push(i * PW + j), weights.push(w))));
    const padded = new Float64Array(PH * PW);
    const out = new Float32Array(cube.size);
    const plane = W * H;
    for (let base = 0; base < cube.size; base += plane) {
      for (let pr = 0; pr < PH; pr++) {
        const sr = rowSrc[pr];
        for (let pc = 0; pc < PW; pc++) {
          const sc = colSrc[pc];
          let v = sr < 0 || sc < 0 ? constant : cube.data[base + sr * W + sc];
          if (!Number.isFinite(v)) v = replace;
          padded[pr * PW + pc] = v;
        }
      }
      for (let r = 0; r < H; r++) {
        for (let c = 0; c < W; c++) {
          const o = r * PW + c;
          let sum = 0;
          for (let t = 0; t < taps.length; t++) sum += weights[t] * padded[o + taps[t]];
          out[base + r * W + c] = sum * factor;
        }
      }
    }
    return cube.with({ data: out });
  }),
  implement('apply_neighborhood', async (a, ctx) => {
    const P = 'apply_neighborhood';
    const cube = await cubeOf(a.get('data'), ctx.run, P, 'data');
    const cb = requireCallback(a.callback('process'), P, 'process');
    const context = a.get('context');
    if (!cube.grid) throw invalid(P, 'data', 'a raster data cube (with x and y) is expected');
    // A UDF gets each block as a cube (never the per-pixel arrays of the shortcut below).
    const udf = udfChild(cb, 'data', context);
    const sizes = chunkSizes(a.get('size'), cube, 'size');
    const overlaps = chunkSizes(a.get('overlap'), cube, 'overlap');
    const n = cube.dims.length;
    const shape = cube.shape;
    if (cube.size === 0) return cube;
    const size = shape.map((s, d) => Math.min(s, sizes.get(d) ?? s));
    const ov = shape.map((s, d) => (size[d] === s && !sizes.has(d) ? 0 : ((overlaps.get(d) as number | undefined) ?? 0)));
    const grid = cube.grid;
    const isGrid = cube.dims.map((d) => d.type === 'spatial' && (d.axis === 'x' || d.axis === 'y'));

    // One dimension whole and blocks of one label along all others: an array per pixel, all pixels at once.
    const wide = shape
      .map((_, d) => size[d] + 2 * ov[d])
      .map((l, d) => (l > 1 ? d : -1))
      .filter((d) => d >= 0);
    if (!udf && wide.length === 1 && size[wide[0]] === shape[wide[0]] && ov[wide[0]] === 0) {
      const d = wide[0];
      const { data, rest } = cube.outermost(d);
      const v = await cb({ data: new PixelArray(slicesOf(data, shape[d], rest), cube.dims[d].labels, rest), context });
      const r = broadcast(v, rest, P);
      const items = r instanceof PixelArray ? r.items : [r];
      if (items.length !== shape[d]) {
        throw new ProcessException('DataCubePropertiesImmutable', `the child process answered ${items.length} values per pixel for the ${shape[d]} labels of '${cube.dims[d].name}'`);
      }
      return cube.with({ data: DataCube.fromOutermost(joinSlices(items, rest), shape, d) });
    }

    const counts = shape.map((s, d) => Math.ceil(s / size[d]));
    const blocks = product(counts);
    if (blocks > MAX_NEIGHBORHOODS) {
      throw invalid(P, 'size', `the sizes make ${blocks} neighbourhoods, more than the ${MAX_NEIGHBORHOODS} this back-end runs the child process for; choose larger sizes`);
    }
    const out = new Float32Array(cube.size).fill(NaN);
    const b = new Int32Array(n);
    for (let k = 0; k < blocks; k++) {
      const start = shape.map((_, d) => b[d] * size[d]);
      const core = shape.map((s, d) => Math.min(size[d], s - start[d]));
      // The block widened by the overlap: past the raster edge for x and y, clipped elsewhere.
      const lo = shape.map((_, d) => (isGrid[d] ? start[d] - ov[d] : Math.max(0, start[d] - ov[d])));
      const hi = shape.map((s, d) => (isGrid[d] ? start[d] + core[d] + ov[d] : Math.min(s, start[d] + core[d] + ov[d])));
      const len = shape.map((_, d) => hi[d] - lo[d]);
      const sub = new Float32Array(product(len)).fill(NaN);
      const inLo = lo.map((l) => Math.max(0, l));
      const inHi = hi.map((h, d) => Math.min(shape[d], h));
      copyBox(
        cube.data,
        shape,
        inLo,
        sub,
        len,
        inLo.map((l, d) => l - lo[d]),
        inLo.map((l, d) => inHi[d] - l),
      );
      const xi = cube.dims.findIndex((d) => d.type === 'spatial' && d.axis === 'x');
      const yi = cube.dims.findIndex((d) => d.type === 'spatial' && d.axis === 'y');
      const t = grid.transform;
      const subGrid: Grid = { epsg: grid.epsg, transform: [t[0] + lo[xi] * t[1], t[1], 0, t[3] + lo[yi] * t[5], 0, t[5]], width: len[xi], height: len[yi] };
      const [ydim, xdim] = spatialDims(subGrid);
      const dims = cube.dims.map((dim, d) => (d === xi ? { ...dim, labels: xdim.labels } : d === yi ? { ...dim, labels: ydim.labels } : { ...dim, labels: dim.labels.slice(lo[d], hi[d]) }));
      const block = cube.with({ dims, data: sub, grid: subGrid });
      const answer = udf ? await runUdfChild(udf, ctx, 'neighborhood', block) : await cb({ data: block, context });
      if (!(answer instanceof DataCube) || !sameDims(answer, block)) {
        throw new ProcessException('DataCubePropertiesImmutable', 'the child process must answer a data cube with the dimensions and labels of the block it got');
      }
      copyBox(
        answer.data,
        len,
        start.map((s, d) => s - lo[d]),
        out,
        shape,
        start,
        core,
      );
      for (let d = n - 1; d >= 0; d--) {
        if (++b[d] < counts[d]) break;
        b[d] = 0;
      }
    }
    return cube.with({ data: out });
  }),
];
