// The plainly valid polygons: a quick proof of validity for the usual field boundary (one ring, no
// holes, tens of vertices), so that checking thousands of them need not load JSTS and build its
// topology graph per polygon (datacube/validity.ts; 0.15-0.2 s for the 625 fields of
// bench/zonal.ts on a job thread, with the cores otherwise idle). The check only ever answers
// "valid" when JTS's IsValidOp would: a closed ring of finite coordinates, no vertex repeated
// back to back, no two edges that touch except neighbours at their shared vertex, and no
// neighbours that fold back onto each other. Whatever it cannot prove (holes, several parts, long
// rings, collinear or nearly touching edges) goes to JSTS, which also names the fault.
import { GeomType, PartKind, type GeometryColumn } from './geometry-column.js';

/** Rings longer than this go to JSTS (the check compares every pair of edges). */
const MAX_VERTICES = 256;

/**
 * The sign of the turn a -> b -> c, or 0 when the floating-point value is too close to zero to
 * trust (a bound far above the rounding error of the expression: doubt goes to JSTS).
 */
function turn(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): number {
  const l = (bx - ax) * (cy - ay);
  const r = (by - ay) * (cx - ax);
  const det = l - r;
  const doubt = 1e-12 * (Math.abs(l) + Math.abs(r));
  return det > doubt ? 1 : det < -doubt ? -1 : 0;
}

/** Whether segments p-q and r-s surely have no point in common. */
function apart(xy: Float64Array, p: number, q: number, r: number, s: number): boolean {
  // Plain locals: a destructured array literal made an array and an iterator at every call, and a
  // job's check calls this for every pair of edges of every field.
  const px = xy[2 * p],
    py = xy[2 * p + 1],
    qx = xy[2 * q],
    qy = xy[2 * q + 1];
  const rx = xy[2 * r],
    ry = xy[2 * r + 1],
    sx = xy[2 * s],
    sy = xy[2 * s + 1];
  if (Math.max(px, qx) < Math.min(rx, sx) || Math.max(rx, sx) < Math.min(px, qx)) return true;
  if (Math.max(py, qy) < Math.min(ry, sy) || Math.max(ry, sy) < Math.min(py, qy)) return true;
  const t1 = turn(px, py, qx, qy, rx, ry);
  const t2 = turn(px, py, qx, qy, sx, sy);
  if (t1 !== 0 && t1 === t2) return true;
  const t3 = turn(rx, ry, sx, sy, px, py);
  const t4 = turn(rx, ry, sx, sy, qx, qy);
  return t3 !== 0 && t3 === t4;
}

/** Whether ring `ring` of the column is surely a valid polygon shell by itself. */
function plainRing(c: GeometryColumn, ring: number): boolean {
  const v0 = c.ringStarts[ring];
  const end = c.ringStarts[ring + 1];
  const n = end - v0 - 1; // edges; the last vertex closes the ring
  if (n < 3 || n >= MAX_VERTICES) return false;
  const xy = c.xy;
  for (let v = v0; v < end; v++) if (!Number.isFinite(xy[2 * v]) || !Number.isFinite(xy[2 * v + 1])) return false;
  if (xy[2 * v0] !== xy[2 * (end - 1)] || xy[2 * v0 + 1] !== xy[2 * (end - 1) + 1]) return false;
  for (let i = 0; i < n; i++) {
    const a = v0 + i;
    const b = v0 + i + 1;
    const next = v0 + ((i + 1) % n) + 1; // the vertex after b, around the ring
    if (xy[2 * a] === xy[2 * b] && xy[2 * a + 1] === xy[2 * b + 1]) return false;
    // b's neighbours must turn, not run on straight or fold back
    if (turn(xy[2 * a], xy[2 * a + 1], xy[2 * b], xy[2 * b + 1], xy[2 * next], xy[2 * next + 1]) === 0) return false;
  }
  for (let i = 0; i < n; i++) {
    // edges i and j, not neighbours (edge 0 and edge n-1 meet at the closing vertex)
    for (let j = i + 2; j < n; j++) {
      if (i === 0 && j === n - 1) continue;
      if (!apart(xy, v0 + i, v0 + i + 1, v0 + j, v0 + j + 1)) return false;
    }
  }
  return true;
}

/**
 * Whether every polygon of the column is plainly valid (non-polygonal geometries count as valid,
 * as JSTS's check leaves them alone). False means "ask JSTS", not "invalid".
 */
export function allPlainlyValid(c: GeometryColumn): boolean {
  for (let g = 0; g < c.length; g++) {
    const type = c.types[g];
    if (type !== GeomType.Polygon && type !== GeomType.MultiPolygon && type !== GeomType.GeometryCollection) continue;
    const p = c.geomParts[g];
    if (type !== GeomType.Polygon || c.geomParts[g + 1] !== p + 1 || c.partKinds[p] !== PartKind.Polygon) return false;
    if (c.partRings[p + 1] !== c.partRings[p] + 1) return false; // holes
    if (!plainRing(c, c.partRings[p])) return false;
  }
  return true;
}
