// GeoJSON geometries against raster grids: parsing what users send (Geometry, Feature,
// FeatureCollection, GeometryCollection), bounding boxes, and rasterization by pixel centre:
// a pixel belongs to a polygon when its centre lies inside (even-odd rule, so holes work); to a
// point or line when the point or a vertex of the line falls in it.
import { ApiError } from '../core/errors.js';
import { transformBox, transformer } from '../data/crs.js';
import type { Grid } from '../core/grid.js';
import type { Geometry } from './datacube.js';

export interface FeatureLike {
  geometry: Geometry;
  properties: Record<string, unknown>;
}

const GEOMETRY_TYPES = new Set(['Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon', 'GeometryCollection']);

/** The features of a GeoJSON value (a bare geometry becomes a feature without properties). */
export function featuresOf(v: unknown, processId: string, parameter: string): FeatureLike[] {
  const bad = (reason: string) => new ApiError('ProcessParameterInvalid', { process: processId, parameter, reason });
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw bad('GeoJSON is expected');
  const o = v as Record<string, any>;
  if (o.type === 'FeatureCollection') {
    if (!Array.isArray(o.features) || o.features.length === 0) throw bad('the FeatureCollection has no features');
    return o.features.flatMap((f: unknown) => featuresOf(f, processId, parameter));
  }
  if (o.type === 'Feature') {
    checkGeometry(o.geometry, bad);
    return [{ geometry: o.geometry, properties: o.properties ?? {} }];
  }
  checkGeometry(o, bad);
  return [{ geometry: o as Geometry, properties: {} }];
}

function checkGeometry(g: any, bad: (r: string) => Error): void {
  if (!g || !GEOMETRY_TYPES.has(g.type)) throw bad(`'${g?.type}' is not a GeoJSON geometry type`);
  if (g.type === 'GeometryCollection') {
    if (!Array.isArray(g.geometries)) throw bad('a GeometryCollection needs geometries');
    g.geometries.forEach((x: unknown) => checkGeometry(x, bad));
    return;
  }
  const depth = { Point: 0, MultiPoint: 1, LineString: 1, MultiLineString: 2, Polygon: 2, MultiPolygon: 3 }[g.type as string]!;
  const ok = (c: unknown, d: number): boolean =>
    d === 0 ? Array.isArray(c) && c.length >= 2 && c.every((n) => typeof n === 'number' && Number.isFinite(n)) : Array.isArray(c) && c.every((x) => ok(x, d - 1));
  if (!ok(g.coordinates, depth)) throw bad(`the coordinates of the ${g.type} are malformed`);
}

/** Every coordinate pair of a geometry. */
function* positions(g: Geometry): Generator<number[]> {
  if (g.type === 'GeometryCollection') {
    for (const x of g.geometries ?? []) yield* positions(x);
    return;
  }
  const walk = function* (c: unknown): Generator<number[]> {
    if (Array.isArray(c) && typeof c[0] === 'number') yield c as number[];
    else if (Array.isArray(c)) for (const x of c) yield* walk(x);
  };
  yield* walk(g.coordinates);
}

export function geometriesBox(geoms: Geometry[]): [number, number, number, number] {
  const b: [number, number, number, number] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const g of geoms) {
    for (const [x, y] of positions(g)) {
      b[0] = Math.min(b[0], x);
      b[1] = Math.min(b[1], y);
      b[2] = Math.max(b[2], x);
      b[3] = Math.max(b[3], y);
    }
  }
  return b;
}

/** Rings (polygons) and points (points, line vertices) of a geometry, in pixel coordinates of `grid`. */
function toPixels(g: Geometry, grid: Grid, fromEpsg: number): { rings: number[][][]; points: number[][] } {
  const f = fromEpsg === grid.epsg ? (x: number, y: number) => [x, y] : transformer(fromEpsg, grid.epsg);
  const t = grid.transform;
  const px = (c: number[]) => {
    const [x, y] = f(c[0], c[1]);
    return [(x - t[0]) / t[1], (y - t[3]) / t[5]];
  };
  const rings: number[][][] = [];
  const points: number[][] = [];
  const add = (geom: Geometry) => {
    const c = geom.coordinates as any;
    switch (geom.type) {
      case 'Polygon':
        for (const r of c) rings.push(r.map(px));
        break;
      case 'MultiPolygon':
        for (const p of c) for (const r of p) rings.push(r.map(px));
        break;
      case 'Point':
        points.push(px(c));
        break;
      case 'MultiPoint':
      case 'LineString':
        for (const p of c) points.push(px(p));
        break;
      case 'MultiLineString':
        for (const l of c) for (const p of l) points.push(px(p));
        break;
      case 'GeometryCollection':
        for (const x of geom.geometries ?? []) add(x);
    }
  };
  add(g);
  return { rings, points };
}

/**
 * Marks the pixels of `grid` that belong to the geometry: `out[i] = value` for each of them.
 * Polygons by scanline over pixel-centre rows, with the even-odd rule across all rings.
 */
export function rasterize(g: Geometry, grid: Grid, out: Uint8Array | Int32Array, value: number, fromEpsg = 4326): number {
  const { rings, points } = toPixels(g, grid, fromEpsg);
  const w = grid.width;
  const h = grid.height;
  let count = 0;
  if (rings.length) {
    let minRow = Infinity;
    let maxRow = -Infinity;
    for (const r of rings) for (const p of r) (minRow = Math.min(minRow, p[1])), (maxRow = Math.max(maxRow, p[1]));
    const r0 = Math.max(0, Math.floor(minRow - 0.5));
    const r1 = Math.min(h - 1, Math.ceil(maxRow - 0.5));
    const xs: number[] = [];
    for (let row = r0; row <= r1; row++) {
      const cy = row + 0.5;
      xs.length = 0;
      for (const ring of rings) {
        for (let k = 0, j = ring.length - 1; k < ring.length; j = k++) {
          const [xa, ya] = ring[j];
          const [xb, yb] = ring[k];
          if (ya > cy !== yb > cy) xs.push(xa + ((cy - ya) * (xb - xa)) / (yb - ya));
        }
      }
      xs.sort((a, b) => a - b);
      for (let k = 0; k + 1 < xs.length; k += 2) {
        // pixel centres c + 0.5 inside [xs[k], xs[k+1])
        const c0 = Math.max(0, Math.ceil(xs[k] - 0.5));
        const c1 = Math.min(w - 1, Math.ceil(xs[k + 1] - 0.5) - 1);
        for (let c = c0; c <= c1; c++) {
          const i = row * w + c;
          if (out[i] !== value) count++;
          out[i] = value;
        }
      }
    }
  }
  for (const [x, y] of points) {
    const c = Math.floor(x);
    const r = Math.floor(y);
    if (c < 0 || r < 0 || c >= w || r >= h) continue;
    if (out[r * w + c] !== value) count++;
    out[r * w + c] = value;
  }
  return count;
}

/** 1 where a pixel belongs to any of the geometries (EPSG:4326). */
export function rasterizeMask(geoms: Geometry[], grid: Grid): Uint8Array {
  const out = new Uint8Array(grid.width * grid.height);
  for (const g of geoms) rasterize(g, grid, out, 1);
  return out;
}

/**
 * Columns and rows [c0, r0, c1, r1] of the grid that can hold the geometry (EPSG:4326), one pixel
 * of margin; the whole grid when its box cannot be mapped.
 */
export function windowFor(g: Geometry, grid: Grid): [number, number, number, number] {
  const whole: [number, number, number, number] = [0, 0, grid.width - 1, grid.height - 1];
  try {
    const b = transformBox(geometriesBox([g]), 4326, grid.epsg);
    if (!b.every(Number.isFinite)) return whole;
    const t = grid.transform;
    const cA = (b[0] - t[0]) / t[1], cB = (b[2] - t[0]) / t[1];
    const rA = (b[3] - t[3]) / t[5], rB = (b[1] - t[3]) / t[5];
    return [
      Math.max(0, Math.floor(Math.min(cA, cB)) - 1),
      Math.max(0, Math.floor(Math.min(rA, rB)) - 1),
      Math.min(grid.width - 1, Math.ceil(Math.max(cA, cB)) + 1),
      Math.min(grid.height - 1, Math.ceil(Math.max(rA, rB)) + 1),
    ];
  } catch {
    return whole;
  }
}
