// Geometries on a raster grid as spans (kernels/zonal.ts): runs of pixels per geometry, made by the
// kernels in one pass over each polygon's edges. Masks, filter_spatial, apply_polygon and
// aggregate_spatial all start from them. Coordinates are reprojected to the grid's CRS vertex by
// vertex (cached per geometry column and CRS, so the chunks of a job reproject once per thread).
import type { Grid } from '../core/grid.js';
import { alloc, i32, kernels, mark, release, u32, f64 as f64View, u8 } from '../wasm/kernels.js';
import { GeometryColumn, PartKind } from '../geometry/geometry-column.js';

/** Spans as i32 quads (label, row, c0, c1 exclusive); `count` of them. */
export interface Spans {
  data: Int32Array;
  count: number;
  /** Labels 0 .. labels-1 (positions in the selection). */
  labels: number;
}

const reprojected = new WeakMap<GeometryColumn, Map<number, GeometryColumn>>();

/** The column in another CRS, computed once per column and CRS. */
export function inCrs(col: GeometryColumn, epsg: number): GeometryColumn {
  if (col.epsg === epsg) return col;
  let byCrs = reprojected.get(col);
  if (!byCrs) reprojected.set(col, (byCrs = new Map()));
  let out = byCrs.get(epsg);
  if (!out) byCrs.set(epsg, (out = col.reproject(epsg)));
  return out;
}

/**
 * The spans of geometries `select` (positions in `col`; all when absent) on `grid`; label k is the
 * k-th geometry of the selection. The rules are those of kernels/zonal.ts: polygons by pixel centre
 * (boundary included), lines by the pixels they cross, points by the pixel that holds them.
 */
export function spansOf(col: GeometryColumn, grid: Grid, select?: ArrayLike<number>): Spans {
  const c = inCrs(col, grid.epsg);
  const sel = select ?? { length: c.length };
  const at = (k: number) => (select ? select[k] : k);
  const n = sel.length;
  const t = grid.transform;
  // Inverse of the affine transform: pixel coordinates of a point.
  const det = t[1] * t[5] - t[2] * t[4];
  if (det === 0) throw new Error('a grid without area');
  let nParts = 0;
  let nRings = 0;
  let nVertices = 0;
  let maxPartVertices = 1;
  let estimate = 16;
  const boxes = c.bboxes();
  for (let k = 0; k < n; k++) {
    const g = at(k);
    for (let p = c.geomParts[g]; p < c.geomParts[g + 1]; p++) {
      nParts++;
      const r0 = c.partRings[p];
      const r1 = c.partRings[p + 1];
      nRings += r1 - r0;
      const verts = c.ringStarts[r1] - c.ringStarts[r0];
      nVertices += verts;
      if (verts > maxPartVertices) maxPartVertices = verts;
    }
    // rows the geometry can cover, times a few runs per row
    const dy = Math.abs((boxes[4 * g + 3] - boxes[4 * g + 1]) / t[5]);
    estimate += Math.min(grid.height, Number.isFinite(dy) ? Math.ceil(dy) + 2 : 2) * 2;
  }
  estimate += nVertices;
  const k = kernels();
  const m = mark();
  try {
    const xyPtr = alloc(nVertices * 16);
    const ringPtr = alloc((nRings + 1) * 4);
    const partPtr = alloc(Math.max(1, nParts) * 16);
    const xy = f64View(xyPtr, nVertices * 2);
    const rings = u32(ringPtr, nRings + 1);
    const parts = i32(partPtr, nParts * 4);
    let v = 0;
    let r = 0;
    let p = 0;
    rings[0] = 0;
    const ix = t[5] / det,
      iy = -t[2] / det,
      jx = -t[4] / det,
      jy = t[1] / det;
    for (let q = 0; q < n; q++) {
      const g = at(q);
      for (let part = c.geomParts[g]; part < c.geomParts[g + 1]; part++) {
        parts[4 * p] = c.partKinds[part];
        parts[4 * p + 1] = r;
        for (let ring = c.partRings[part]; ring < c.partRings[part + 1]; ring++) {
          for (let vv = c.ringStarts[ring]; vv < c.ringStarts[ring + 1]; vv++) {
            const dx = c.xy[2 * vv] - t[0];
            const dy = c.xy[2 * vv + 1] - t[3];
            xy[2 * v] = dx * ix + dy * iy;
            xy[2 * v + 1] = dx * jx + dy * jy;
            v++;
          }
          r++;
          rings[r] = v;
        }
        parts[4 * p + 2] = r;
        parts[4 * p + 3] = q;
        p++;
      }
    }
    const scratch = alloc(k.zonalScratchBytes(maxPartVertices, grid.height));
    for (let capacity = Math.max(64, estimate); ; capacity *= 2) {
      const inner = mark();
      const out = alloc(capacity * 16);
      const count = k.zonalSpans(xyPtr, ringPtr, partPtr, nParts, grid.width, grid.height, scratch, out, capacity);
      if (count >= 0) {
        const data = Int32Array.from(i32(out, count * 4));
        return { data, count, labels: n };
      }
      release(inner);
    }
  } finally {
    release(m);
  }
}

/** Pixels per label (each counted once per label). */
export function pixelCounts(s: Spans): Float64Array {
  const out = new Float64Array(s.labels);
  for (let i = 0; i < s.count; i++) out[s.data[4 * i]] += s.data[4 * i + 3] - s.data[4 * i + 2];
  return out;
}

/** A u8 plane of the grid: 1 where any span lies. */
export function spansMask(s: Spans, grid: Grid): Uint8Array {
  const k = kernels();
  const m = mark();
  try {
    const n = grid.width * grid.height;
    const outPtr = alloc(n);
    const plane = u8(outPtr, n);
    plane.fill(0);
    const sp = alloc(s.count * 16);
    i32(sp, s.count * 4).set(s.data.subarray(0, s.count * 4));
    k.zonalFillU8(sp, s.count, grid.width, 1, outPtr);
    return Uint8Array.from(plane);
  } finally {
    release(m);
  }
}

/** The pixel box [c0, r0, c1, r1] (inclusive) of each label's spans; c0 = -1 for a label without pixels. */
export function spanBoxes(s: Spans): Int32Array {
  const out = new Int32Array(s.labels * 4);
  for (let l = 0; l < s.labels; l++) out.set([-1, -1, -1, -1], 4 * l);
  for (let i = 0; i < s.count; i++) {
    const l = s.data[4 * i];
    const row = s.data[4 * i + 1];
    const c0 = s.data[4 * i + 2];
    const c1 = s.data[4 * i + 3] - 1;
    const b = 4 * l;
    if (out[b] < 0) {
      out[b] = c0;
      out[b + 1] = row;
      out[b + 2] = c1;
      out[b + 3] = row;
    } else {
      if (c0 < out[b]) out[b] = c0;
      if (row < out[b + 1]) out[b + 1] = row;
      if (c1 > out[b + 2]) out[b + 2] = c1;
      if (row > out[b + 3]) out[b + 3] = row;
    }
  }
  return out;
}

export { PartKind };
