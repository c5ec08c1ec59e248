// The data cube: named dimensions with labels over one Float32 array (NaN = no-data), last
// dimension fastest. Raster cubes carry a grid for their `y` and `x` dimensions, which are always
// the last two; vector cubes carry the features (geometries with their CRS, ids and properties) of
// their dimension of type `geometry` (datacube/features.ts). Cubes are
// immutable values: operations return new cubes (sharing arrays where nothing changes). In an
// arena scope (src/wasm/kernels.ts) the arrays are planes of the kernels' memory.
import type { Grid } from '../core/grid.js';
import type { Labels } from '../core/labels.js';
import { plane } from '../wasm/kernels.js';
import type { VectorFeatures } from './features.js';
import type { GeoJsonGeometry } from '../geometry/geometry-column.js';

export type DimensionType = 'spatial' | 'temporal' | 'bands' | 'other' | 'geometry';

export interface Dimension {
  name: string;
  type: DimensionType;
  /** For spatial dimensions. */
  axis?: 'x' | 'y';
  /** Labels; for x and y the pixel-centre coordinates of the grid. */
  labels: Labels;
}

/** A GeoJSON geometry object. */
export type Geometry = GeoJsonGeometry;

export interface CubeInit {
  dims: Dimension[];
  data: Float32Array;
  grid?: Grid | null;
  /** The features of the geometry dimension (vector cubes). */
  features?: VectorFeatures | null;
  /** Band metadata carried along for writers (e.g. common names). */
  bandInfo?: Record<string, { common_name?: string; center_wavelength?: number }>;
}

export class DataCube {
  readonly dims: Dimension[];
  readonly data: Float32Array;
  readonly grid: Grid | null;
  readonly features: VectorFeatures | null;
  readonly bandInfo: Record<string, { common_name?: string; center_wavelength?: number }>;
  readonly shape: number[];

  constructor(init: CubeInit) {
    // Features belong to a geometry dimension: a cube that lost it (reduced, dropped) loses them.
    const gd = init.features ? init.dims.find((d) => d.type === 'geometry') : undefined;
    if (init.features && gd && gd.labels.length !== init.features.length) throw new Error(`a vector cube with ${init.features.length} features has ${gd.labels.length} geometry labels`);
    this.dims = init.dims;
    this.data = init.data;
    this.grid = init.grid ?? null;
    this.features = gd ? init.features! : null;
    this.bandInfo = init.bandInfo ?? {};
    this.shape = this.dims.map((d) => d.labels.length);
    const n = this.shape.reduce((a, b) => a * b, 1);
    if (n !== this.data.length) throw new Error(`cube shape ${this.shape.join('x')} does not match ${this.data.length} values`);
  }

  get size(): number {
    return this.data.length;
  }

  has(name: string): boolean {
    return this.dims.some((d) => d.name === name);
  }

  index(name: string): number {
    return this.dims.findIndex((d) => d.name === name);
  }

  dim(name: string): Dimension | undefined {
    return this.dims.find((d) => d.name === name);
  }

  /** The first dimension of a type (e.g. the temporal one), if any. */
  ofType(type: DimensionType, axis?: 'x' | 'y'): Dimension | undefined {
    return this.dims.find((d) => d.type === type && (axis === undefined || d.axis === axis));
  }

  with(init: Partial<CubeInit>): DataCube {
    return new DataCube({
      dims: init.dims ?? this.dims,
      data: init.data ?? this.data,
      grid: init.grid !== undefined ? init.grid : this.grid,
      features: init.features !== undefined ? init.features : this.features,
      bandInfo: init.bandInfo ?? this.bandInfo,
    });
  }

  /**
   * The cube with dimension `d` moved first: slice i of it is then the contiguous range
   * [i * rest, (i + 1) * rest). Returns this cube when `d` is already first.
   */
  outermost(d: number): { data: Float32Array; rest: number } {
    const n = this.shape[d];
    const rest = this.size / Math.max(1, n);
    const outer = this.shape.slice(0, d).reduce((a, b) => a * b, 1);
    // Dimensions before d of size 1 change nothing in the layout (e.g. bands after a single date).
    if (d === 0 || outer === 1) return { data: this.data, rest };
    const inner = this.shape.slice(d + 1).reduce((a, b) => a * b, 1);
    const out = plane(this.size);
    // source index (o, i, r) -> target (i, o, r): runs of `inner` values stay contiguous
    for (let o = 0; o < outer; o++) {
      for (let i = 0; i < n; i++) {
        const src = (o * n + i) * inner;
        out.set(this.data.subarray(src, src + inner), i * rest + o * inner);
      }
    }
    return { data: out, rest };
  }

  /** Inverse of `outermost`: data laid out with dimension `d` (of size n) first, back into place. */
  static fromOutermost(data: Float32Array, shape: number[], d: number): Float32Array {
    const outer = shape.slice(0, d).reduce((a, b) => a * b, 1);
    if (d === 0 || outer === 1) return data;
    const n = shape[d];
    const inner = shape.slice(d + 1).reduce((a, b) => a * b, 1);
    const rest = outer * inner;
    const out = plane(data.length);
    for (let o = 0; o < outer; o++) {
      for (let i = 0; i < n; i++) {
        const dst = (o * n + i) * inner;
        out.set(data.subarray(i * rest + o * inner, i * rest + o * inner + inner), dst);
      }
    }
    return out;
  }

  /** Keeps the given label positions of dimension `d`, in that order. */
  select(d: number, positions: number[]): DataCube {
    const outer = this.shape.slice(0, d).reduce((a, b) => a * b, 1);
    const n = this.shape[d];
    const inner = this.shape.slice(d + 1).reduce((a, b) => a * b, 1);
    const out = plane(outer * positions.length * inner);
    for (let o = 0; o < outer; o++) {
      positions.forEach((p, k) => {
        const src = (o * n + p) * inner;
        out.set(this.data.subarray(src, src + inner), (o * positions.length + k) * inner);
      });
    }
    const dims = this.dims.map((dim, i) => (i === d ? { ...dim, labels: positions.map((p) => dim.labels[p]) } : dim));
    return this.with({ dims, data: out, ...(dims[d].type === 'geometry' && this.features ? { features: this.features.select(positions) } : {}) });
  }
}

/** Pixel-centre coordinates of a grid's columns and rows. */
export function gridLabels(grid: Grid): { x: number[]; y: number[] } {
  const t = grid.transform;
  const x = Array.from({ length: grid.width }, (_, c) => t[0] + (c + 0.5) * t[1]);
  const y = Array.from({ length: grid.height }, (_, r) => t[3] + (r + 0.5) * t[5]);
  return { x, y };
}

/** The x and y dimensions of a grid. */
export function spatialDims(grid: Grid): [Dimension, Dimension] {
  const { x, y } = gridLabels(grid);
  return [
    { name: 'y', type: 'spatial', axis: 'y', labels: y },
    { name: 'x', type: 'spatial', axis: 'x', labels: x },
  ];
}
