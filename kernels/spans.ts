// Geometries rasterised to spans of pixels (their reductions over raster planes are in zonal.ts).
//
// A span is four i32: (label, row, c0, c1), the pixels c0 <= c < c1 of a row that belong to the
// geometry `label`. Spans of one label come out sorted by row and column, without overlaps, so each
// pixel of a geometry is counted once; different labels may share pixels (geometries may overlap).
// A polygon's spans are a run-length label plane: one pass over the polygon's edges (an active edge
// list swept down the rows), then every plane of a cube is reduced by reading only those runs.
//
// Pixel rules (coordinates in pixels: pixel (c, r) covers [c, c+1) x [r, r+1), its centre is at
// (c + 0.5, r + 0.5)):
//   polygons  the pixels whose centre lies inside or on the boundary (even-odd over all rings, so
//             holes work; the boundary is closed: a centre on an edge or a vertex belongs);
//   lines     the pixels whose square the line passes through (those whose centre is nearest to
//             some point of the line);
//   points    the pixel holding the point.
//
// Parts (i32 x 4 each): kind (1 point, 2 line, 3 polygon), first ring, end ring (exclusive), label.
// Parts of one label must be consecutive. ringStarts: u32 vertex offsets (rings + 1 of them); xy:
// f64 pairs, the vertices in pixel coordinates.

const KIND_POINT = 1;
const KIND_LINE = 2;
const KIND_POLYGON = 3;

// Edge record in scratch (f64 x 4): ylo, yhi, x at ylo, dx/dy; next edge of the row bucket in a
// parallel i32 array.
const EDGE_BYTES: usize = 32;

let outPtr: usize = 0;
let outCount: i32 = 0;
let outCapacity: i32 = 0;
let overflow = false;

// @ts-ignore: decorator
@inline
function emit(label: i32, row: i32, c0: i32, c1: i32): void {
  if (outCount >= outCapacity) {
    overflow = true;
    return;
  }
  const p = outPtr + (<usize>outCount << 4);
  store<i32>(p, label);
  store<i32>(p, row, 4);
  store<i32>(p, c0, 8);
  store<i32>(p, c1, 12);
  outCount++;
}

/** Bytes of scratch zonalSpans needs for parts of at most `maxVertices` vertices and a grid of `height` rows. */
export function zonalScratchBytes(maxVertices: i32, height: i32): i32 {
  // edges (32 + 4 next + 4 active + 8 crossing) per vertex, bucket heads per row
  return maxVertices * 48 + (height + 2) * 4 + 64;
}

/**
 * Rasterises the parts into spans at `out` (capacity spans). Answers the number of spans, or -1 when
 * the capacity does not suffice (the host then grows it and calls again).
 */
export function zonalSpans(
  xy: usize, ringStarts: usize, parts: usize, nParts: i32,
  width: i32, height: i32,
  scratch: usize, out: usize, capacity: i32,
): i32 {
  outPtr = out;
  outCount = 0;
  outCapacity = capacity;
  overflow = false;
  let labelStart = 0;
  for (let p = 0; p < nParts; p++) {
    const q = parts + (<usize>p << 4);
    const kind = load<i32>(q);
    const r0 = load<i32>(q, 4);
    const r1 = load<i32>(q, 8);
    const label = load<i32>(q, 12);
    if (kind == KIND_POLYGON) polygonSpans(xy, ringStarts, r0, r1, label, width, height, scratch);
    else if (kind == KIND_LINE) {
      for (let r = r0; r < r1; r++) lineSpans(xy, load<u32>(ringStarts + (<usize>r << 2)), load<u32>(ringStarts + (<usize>(r + 1) << 2)), label, width, height);
    } else if (kind == KIND_POINT) {
      for (let r = r0; r < r1; r++) {
        const v1 = load<u32>(ringStarts + (<usize>(r + 1) << 2));
        for (let v = load<u32>(ringStarts + (<usize>r << 2)); v < v1; v++) {
          const x = load<f64>(xy + (<usize>v << 4));
          const y = load<f64>(xy + (<usize>v << 4), 8);
          if (!(x >= 0.0 && y >= 0.0 && x < <f64>width && y < <f64>height)) continue;
          const c = <i32>Math.floor(x);
          emit(label, <i32>Math.floor(y), c, c + 1);
        }
      }
    }
    if (overflow) return -1;
    const lastOfLabel = p + 1 == nParts || load<i32>(parts + (<usize>(p + 1) << 4), 12) != label;
    if (lastOfLabel) {
      normalise(labelStart, outCount);
      labelStart = outCount;
    }
  }
  return outCount;
}

// ---------------------------------------------------------------------------------------------
// Polygons: an active edge list swept down the pixel-centre rows

function polygonSpans(xy: usize, ringStarts: usize, r0: i32, r1: i32, label: i32, width: i32, height: i32, scratch: usize): void {
  // Edges of all rings, and the rows the polygon's centres can lie on.
  let nEdges = 0;
  let minY = Infinity;
  let maxY = -Infinity;
  const edges = scratch;
  for (let r = r0; r < r1; r++) {
    const v0 = load<u32>(ringStarts + (<usize>r << 2));
    const v1 = load<u32>(ringStarts + (<usize>(r + 1) << 2));
    for (let v = v0; v + 1 < v1; v++) {
      const ax = load<f64>(xy + (<usize>v << 4));
      const ay = load<f64>(xy + (<usize>v << 4), 8);
      const bx = load<f64>(xy + (<usize>(v + 1) << 4));
      const by = load<f64>(xy + (<usize>(v + 1) << 4), 8);
      if (ay < minY) minY = ay;
      if (ay > maxY) maxY = ay;
      // A vertex exactly on a pixel centre is on the boundary: its pixel belongs.
      if (ax - 0.5 == Math.floor(ax - 0.5) && ay - 0.5 == Math.floor(ay - 0.5)) pointSpan(ax, ay, label, width, height);
      if (ay == by) {
        // Horizontal edges count no crossing; one lying exactly on a row of centres is boundary.
        if (ay - 0.5 == Math.floor(ay - 0.5)) closedSpan(label, <i32>(ay - 0.5), Math.min(ax, bx), Math.max(ax, bx), width, height);
        continue;
      }
      const e = edges + <usize>nEdges * EDGE_BYTES;
      if (ay < by) {
        store<f64>(e, ay);
        store<f64>(e, by, 8);
        store<f64>(e, ax, 16);
      } else {
        store<f64>(e, by);
        store<f64>(e, ay, 8);
        store<f64>(e, bx, 16);
      }
      store<f64>(e, (bx - ax) / (by - ay), 24);
      nEdges++;
    }
  }
  if (nEdges == 0) return;
  // Rows whose centre cy = row + 0.5 lies in [minY, maxY].
  let rowA = <i32>Math.max(0.0, Math.ceil(minY - 0.5));
  let rowB = <i32>Math.min(<f64>(height - 1), Math.floor(maxY - 0.5));
  if (rowA > rowB) return;
  const nextOf = edges + <usize>nEdges * EDGE_BYTES; // i32 per edge
  const active = nextOf + (<usize>nEdges << 2); // i32 per edge
  const xs = (active + (<usize>nEdges << 2) + 7) & ~(<usize>7); // f64 per edge
  const heads = xs + (<usize>nEdges << 3); // i32 per row of rowA..rowB
  const rows = rowB - rowA + 1;
  for (let i = 0; i < rows; i++) store<i32>(heads + (<usize>i << 2), -1);
  // Bucket each edge by the first row it is active on (ylo <= cy < yhi).
  for (let k = 0; k < nEdges; k++) {
    const e = edges + <usize>k * EDGE_BYTES;
    const ylo = load<f64>(e);
    const yhi = load<f64>(e, 8);
    let first = <i32>Math.ceil(ylo - 0.5);
    if (first < rowA) first = rowA;
    if (<f64>first + 0.5 >= yhi || first > rowB) continue;
    const h = heads + (<usize>(first - rowA) << 2);
    store<i32>(nextOf + (<usize>k << 2), load<i32>(h));
    store<i32>(h, k);
  }
  let nActive = 0;
  for (let row = rowA; row <= rowB; row++) {
    const cy = <f64>row + 0.5;
    // Add the edges starting here, drop those that ended.
    let k = load<i32>(heads + (<usize>(row - rowA) << 2));
    while (k >= 0) {
      store<i32>(active + (<usize>nActive << 2), k);
      nActive++;
      k = load<i32>(nextOf + (<usize>k << 2));
    }
    let n = 0;
    for (let i = 0; i < nActive; i++) {
      const ek = load<i32>(active + (<usize>i << 2));
      const e = edges + <usize>ek * EDGE_BYTES;
      if (load<f64>(e, 8) <= cy) continue;
      store<i32>(active + (<usize>n << 2), ek);
      // crossing, kept sorted by insertion (rows hold few crossings)
      const x = load<f64>(e, 16) + (cy - load<f64>(e)) * load<f64>(e, 24);
      let j = n;
      while (j > 0 && load<f64>(xs + (<usize>(j - 1) << 3)) > x) {
        store<f64>(xs + (<usize>j << 3), load<f64>(xs + (<usize>(j - 1) << 3)));
        j--;
      }
      store<f64>(xs + (<usize>j << 3), x);
      n++;
    }
    nActive = n;
    // Pairs of crossings bound the inside; both ends closed, runs of one row never overlap.
    let lastEnd = -1;
    for (let i = 0; i + 1 < n; i += 2) {
      let c0 = <i32>Math.ceil(load<f64>(xs + (<usize>i << 3)) - 0.5);
      let c1 = <i32>Math.floor(load<f64>(xs + (<usize>(i + 1) << 3)) - 0.5) + 1;
      if (c0 < 0) c0 = 0;
      if (c1 > width) c1 = width;
      if (c0 < lastEnd) c0 = lastEnd;
      if (c0 < c1) {
        emit(label, row, c0, c1);
        lastEnd = c1;
      }
    }
  }
}

// @ts-ignore: decorator
@inline
function pointSpan(x: f64, y: f64, label: i32, width: i32, height: i32): void {
  if (!(x >= 0.0 && y >= 0.0 && x < <f64>width && y < <f64>height)) return;
  const c = <i32>Math.floor(x);
  emit(label, <i32>Math.floor(y), c, c + 1);
}

/** The centres of a row lying in the closed range [x0, x1]. */
function closedSpan(label: i32, row: i32, x0: f64, x1: f64, width: i32, height: i32): void {
  if (row < 0 || row >= height) return;
  let c0 = <i32>Math.ceil(x0 - 0.5);
  let c1 = <i32>Math.floor(x1 - 0.5) + 1;
  if (c0 < 0) c0 = 0;
  if (c1 > width) c1 = width;
  if (c0 < c1) emit(label, row, c0, c1);
}

// ---------------------------------------------------------------------------------------------
// Lines: the cells a segment passes through (Amanatides and Woo's traversal)

function lineSpans(xy: usize, v0: u32, v1: u32, label: i32, width: i32, height: i32): void {
  for (let v = v0; v + 1 < v1; v++) {
    const ax = load<f64>(xy + (<usize>v << 4));
    const ay = load<f64>(xy + (<usize>v << 4), 8);
    const bx = load<f64>(xy + (<usize>(v + 1) << 4));
    const by = load<f64>(xy + (<usize>(v + 1) << 4), 8);
    segmentCells(ax, ay, bx, by, label, width, height);
  }
  if (v1 - v0 == 1) pointSpan(load<f64>(xy + (<usize>v0 << 4)), load<f64>(xy + (<usize>v0 << 4), 8), label, width, height);
}

function segmentCells(ax: f64, ay: f64, bx: f64, by: f64, label: i32, width: i32, height: i32): void {
  // Clip to the grid first (Liang-Barsky), so the walk stays within it.
  let t0 = 0.0;
  let t1 = 1.0;
  const dx = bx - ax;
  const dy = by - ay;
  const W = <f64>width;
  const H = <f64>height;
  // p * t <= q for the four sides
  if (!clip(-dx, ax, t0, t1)) return;
  t0 = clipT0;
  t1 = clipT1;
  if (!clip(dx, W - ax, t0, t1)) return;
  t0 = clipT0;
  t1 = clipT1;
  if (!clip(-dy, ay, t0, t1)) return;
  t0 = clipT0;
  t1 = clipT1;
  if (!clip(dy, H - ay, t0, t1)) return;
  t0 = clipT0;
  t1 = clipT1;
  const sx = ax + dx * t0;
  const sy = ay + dy * t0;
  const ex = ax + dx * t1;
  const ey = ay + dy * t1;
  let c = <i32>Math.floor(sx);
  let r = <i32>Math.floor(sy);
  const cEnd = <i32>Math.floor(ex);
  const rEnd = <i32>Math.floor(ey);
  if (c >= width) c = width - 1;
  if (r >= height) r = height - 1;
  const stepC = dx > 0 ? 1 : dx < 0 ? -1 : 0;
  const stepR = dy > 0 ? 1 : dy < 0 ? -1 : 0;
  const ldx = ex - sx;
  const ldy = ey - sy;
  // t along the clipped segment at which the next column / row boundary is crossed
  let tMaxX = stepC > 0 ? (<f64>(c + 1) - sx) / ldx : stepC < 0 ? (<f64>c - sx) / ldx : Infinity;
  let tMaxY = stepR > 0 ? (<f64>(r + 1) - sy) / ldy : stepR < 0 ? (<f64>r - sy) / ldy : Infinity;
  const tDeltaX = stepC != 0 ? Math.abs(1.0 / ldx) : Infinity;
  const tDeltaY = stepR != 0 ? Math.abs(1.0 / ldy) : Infinity;
  let runRow = r;
  let runC0 = c;
  let runC1 = c + 1;
  const limit = width + height + 4;
  for (let i = 0; i < limit; i++) {
    if (c == cEnd && r == rEnd) break;
    if (tMaxX < tMaxY) {
      c += stepC;
      tMaxX += tDeltaX;
    } else if (tMaxY < tMaxX) {
      r += stepR;
      tMaxY += tDeltaY;
    } else {
      // Through a corner: the line touches the cells on both sides of it.
      if (c + stepC >= 0 && c + stepC < width) addRun(label, r, c + stepC, runRow, runC0, runC1);
      if (r + stepR >= 0 && r + stepR < height) addRun(label, r + stepR, c, runRow, runC0, runC1);
      c += stepC;
      r += stepR;
      tMaxX += tDeltaX;
      tMaxY += tDeltaY;
    }
    if (c < 0 || r < 0 || c >= width || r >= height) break;
    if (r == runRow && (c == runC1 || c == runC0 - 1)) {
      if (c == runC1) runC1++;
      else runC0--;
    } else {
      emit(label, runRow, runC0, runC1);
      runRow = r;
      runC0 = c;
      runC1 = c + 1;
    }
  }
  emit(label, runRow, runC0, runC1);
}

// @ts-ignore: decorator
@inline
function addRun(label: i32, r: i32, c: i32, runRow: i32, runC0: i32, runC1: i32): void {
  if (r == runRow && c >= runC0 && c < runC1) return;
  emit(label, r, c, c + 1);
}

let clipT0 = 0.0;
let clipT1 = 0.0;

function clip(p: f64, q: f64, t0: f64, t1: f64): bool {
  clipT0 = t0;
  clipT1 = t1;
  if (p == 0.0) return q >= 0.0;
  const t = q / p;
  if (p < 0.0) {
    if (t > t1) return false;
    if (t > t0) clipT0 = t;
  } else {
    if (t < t0) return false;
    if (t < t1) clipT1 = t;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Normalising the spans of one label: sorted by (row, c0), overlaps merged

// @ts-ignore: decorator
@inline
function spanLess(a: usize, b: usize): bool {
  const ra = load<i32>(a, 4);
  const rb = load<i32>(b, 4);
  return ra < rb || (ra == rb && load<i32>(a, 8) < load<i32>(b, 8));
}

// @ts-ignore: decorator
@inline
function swapSpans(a: usize, b: usize): void {
  const x = v128.load(a);
  v128.store(a, v128.load(b));
  v128.store(b, x);
}

function siftDown(base: usize, start: i32, end: i32): void {
  let root = start;
  for (;;) {
    let child = 2 * root + 1;
    if (child >= end) return;
    if (child + 1 < end && spanLess(base + (<usize>child << 4), base + (<usize>(child + 1) << 4))) child++;
    if (!spanLess(base + (<usize>root << 4), base + (<usize>child << 4))) return;
    swapSpans(base + (<usize>root << 4), base + (<usize>child << 4));
    root = child;
  }
}

function normalise(from: i32, to: i32): void {
  const n = to - from;
  if (n < 2) return;
  const base = outPtr + (<usize>from << 4);
  // Already sorted and disjoint (a plain polygon): nothing to do.
  let ordered = true;
  for (let i = 1; i < n; i++) {
    const a = base + (<usize>(i - 1) << 4);
    const b = base + (<usize>i << 4);
    const ra = load<i32>(a, 4);
    const rb = load<i32>(b, 4);
    if (rb < ra || (rb == ra && load<i32>(b, 8) < load<i32>(a, 12))) {
      ordered = false;
      break;
    }
  }
  if (ordered) return;
  // Heap sort by (row, c0), then merge runs that overlap or touch.
  for (let i = n / 2 - 1; i >= 0; i--) siftDown(base, i, n);
  for (let end = n - 1; end > 0; end--) {
    swapSpans(base, base + (<usize>end << 4));
    siftDown(base, 0, end);
  }
  let w = 0;
  for (let i = 1; i < n; i++) {
    const cur = base + (<usize>w << 4);
    const nx = base + (<usize>i << 4);
    if (load<i32>(nx, 4) == load<i32>(cur, 4) && load<i32>(nx, 8) <= load<i32>(cur, 12)) {
      if (load<i32>(nx, 12) > load<i32>(cur, 12)) store<i32>(cur, load<i32>(nx, 12), 12);
    } else {
      w++;
      if (w != i) v128.store(base + (<usize>w << 4), v128.load(nx));
    }
  }
  outCount = from + w + 1;
}
