// A vector cube seen as a table, the shape every vector writer starts from: one row per geometry
// and date (labels of the temporal dimensions), one value column per label of the other
// dimensions (bands; labels of several dimensions joined by ~, as flatten_dimensions does), and
// the features' properties. Numbers are written as float32 values are: the shortest decimal that
// reads back as the same float32 (0.1, not 0.10000000149011612).
import { DataCube } from '../datacube/datacube.js';
import type { VectorFeatures } from '../datacube/features.js';
import { ProcessException } from '../core/errors.js';

export const SEPARATOR = '~';

export interface VectorTable {
  features: VectorFeatures;
  /** Labels of the row dimension(s) besides the geometry (dates), joined; [] when there is none. */
  rows: string[];
  /** Name of the date column ('date' for a temporal dimension), or null when there is no row dimension. */
  rowName: string | null;
  /** Value column names. */
  columns: string[];
  /** The value at geometry g, row r, column c (NaN = no-data). */
  value(g: number, r: number, c: number): number;
}

/** Index strides of a cube's dimensions (last fastest). */
function strides(shape: number[]): number[] {
  const out = new Array<number>(shape.length);
  let s = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    out[d] = s;
    s *= shape[d];
  }
  return out;
}

/** Offsets of every combination of labels of some dimensions, first fastest last, and their joined labels. */
function combos(cube: DataCube, dims: number[], st: number[]): { offsets: number[]; names: string[] } {
  let offsets = [0];
  let names = [''];
  for (const d of dims) {
    const labels = cube.dims[d].labels;
    const next: number[] = [];
    const nextNames: string[] = [];
    offsets.forEach((o, i) =>
      labels.forEach((l, k) => {
        next.push(o + k * st[d]);
        nextNames.push(names[i] ? `${names[i]}${SEPARATOR}${l}` : String(l));
      }),
    );
    offsets = next;
    names = nextNames;
  }
  return { offsets, names };
}

export function vectorTable(cube: DataCube, format: string): VectorTable {
  const features = cube.features;
  const g = cube.dims.findIndex((d) => d.type === 'geometry');
  if (!features || g < 0) throw new ProcessException('FormatUnsuitable', `${format} stores vector data cubes (with a geometry dimension); this cube has none: write raster cubes as GTiff or netCDF`);
  const st = strides(cube.shape);
  const others = cube.dims.map((_, i) => i).filter((i) => i !== g);
  const rowDims = others.filter((i) => cube.dims[i].type === 'temporal');
  const colDims = others.filter((i) => cube.dims[i].type !== 'temporal');
  const r = combos(cube, rowDims, st);
  const c = combos(cube, colDims, st);
  const data = cube.data;
  const gs = st[g];
  return {
    features,
    rows: rowDims.length ? r.names : [],
    rowName: rowDims.length === 0 ? null : rowDims.length === 1 && cube.dims[rowDims[0]].name !== 't' ? cube.dims[rowDims[0]].name : 'date',
    columns: colDims.length ? c.names : ['value'],
    value: (gi, ri, ci) => data[gi * gs + r.offsets[ri] + c.offsets[ci]],
  };
}

/** Rows of the table per geometry (1 without a date dimension). */
export const rowCount = (t: VectorTable) => Math.max(1, t.rows.length);

/** A float32 value as the shortest decimal text that reads back as the same float32; '' for NaN. */
export function f32Text(v: number): string {
  if (v !== v) return '';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  const f = Math.fround(v);
  for (let p = 6; p < 9; p++) {
    const s = f.toPrecision(p);
    if (Math.fround(Number(s)) === f) return String(Number(s));
  }
  return String(Number(f.toPrecision(9)));
}

/** A float32 value as the shortest double that prints like it (for JSON); null for NaN and infinities. */
export function f32Json(v: number): number | null {
  if (!Number.isFinite(v)) return null;
  return Number(f32Text(v));
}
