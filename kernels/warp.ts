// Reprojection ("warp") inner loops. The host computes where target pixel centres fall in the
// source (in source pixel coordinates: pixel (c, r) covers [c, c+1) x [r, r+1)) exactly only on a
// coarse lattice of target pixels, and these loops interpolate between lattice nodes and sample.
//
// Lattice: f64 pairs (source column, source row) for the target pixel centres at local target
// positions (min(i*step, lastX), min(j*step, lastY)); node (i, j) sits at
// nodes + (j*nodeStride + i)*16 bytes. lastX >= w-1 and lastY >= h-1 (the last node may lie past the
// block being warped, when the block is part of a larger target). Output rows are outStride
// values apart. Sampling follows GDAL's warp kernel: a point is inside the source when
// 0 <= x < srcW and 0 <= y < srcH; outside, the output is NaN. NaN in the source is no-data.

const MODE_NEAREST = 0;
const MODE_BILINEAR = 1;
const MODE_COORDS = 2;

// @ts-ignore: decorator
@inline
function nearest(src: usize, srcW: i32, srcH: i32, sx: f64, sy: f64): f32 {
  // The pixel containing the point (GDAL adds 1e-10 before truncating, so do we: ties go right/down).
  if (!(sx >= 0.0 && sy >= 0.0)) return NaN; // also NaN coordinates
  const x = sx + 1e-10;
  const y = sy + 1e-10;
  if (!(x < <f64>srcW && y < <f64>srcH)) return NaN;
  return load<f32>(src + ((<usize>(<i32>y * srcW + <i32>x)) << 2));
}

// @ts-ignore: decorator
@inline
function bilinear(src: usize, srcW: i32, srcH: i32, sx: f64, sy: f64): f32 {
  // As GDAL: NaN outside the source and where the pixel containing the point is NaN; otherwise the
  // weights over the four neighbouring pixel centres, renormalised over those that exist and are not
  // NaN (the containing pixel is one of them, with a weight of at least 1/4).
  if (!(sx >= 0.0 && sy >= 0.0)) return NaN;
  const x = sx + 1e-10;
  const y = sy + 1e-10;
  if (!(x < <f64>srcW && y < <f64>srcH)) return NaN;
  const u = sx - 0.5;
  const v = sy - 0.5;
  const fu = Math.floor(u);
  const fv = Math.floor(v);
  const c0 = <i32>fu;
  const r0 = <i32>fv;
  const fx = u - fu;
  const fy = v - fv;
  const gx = 1.0 - fx;
  const gy = 1.0 - fy;
  if (c0 >= 0 && r0 >= 0 && c0 + 1 < srcW && r0 + 1 < srcH) {
    const p = src + ((<usize>(r0 * srcW + c0)) << 2);
    const rs = (<usize>srcW) << 2;
    const a = <f64>load<f32>(p);
    const b = <f64>load<f32>(p, 4);
    const c = <f64>load<f32>(p + rs);
    const d = <f64>load<f32>(p + rs, 4);
    const r = (a * gx + b * fx) * gy + (c * gx + d * fx) * fy;
    if (r == r) return <f32>r; // all four valid (a NaN anywhere makes r NaN)
  }
  if (isNaN(load<f32>(src + ((<usize>(<i32>y * srcW + <i32>x)) << 2)))) return NaN;
  let sum = 0.0;
  let wsum = 0.0;
  for (let k = 0; k < 4; k++) {
    const c = c0 + (k & 1);
    const r = r0 + (k >> 1);
    if (c < 0 || r < 0 || c >= srcW || r >= srcH) continue;
    const val = <f64>load<f32>(src + ((<usize>(r * srcW + c)) << 2));
    if (isNaN(val)) continue;
    const w = ((k & 1) ? fx : gx) * ((k >> 1) ? fy : gy);
    sum += val * w;
    wsum += w;
  }
  return <f32>(sum / wsum);
}

// @ts-ignore: decorator
@inline
function put(mode: i32, src: usize, srcW: i32, srcH: i32, o: usize, x: i32, sx: f64, sy: f64): void {
  if (mode == MODE_COORDS) {
    const q = o + ((<usize>x) << 4);
    store<f64>(q, sx);
    store<f64>(q, sy, 8);
  } else if (mode == MODE_NEAREST) {
    store<f32>(o + ((<usize>x) << 2), nearest(src, srcW, srcH, sx, sy));
  } else {
    store<f32>(o + ((<usize>x) << 2), bilinear(src, srcW, srcH, sx, sy));
  }
}

// @ts-ignore: decorator
@inline
function warpLoop(
  mode: i32,
  src: usize, srcW: i32, srcH: i32,
  nodes: usize, nodeStride: i32, step: i32, lastX: i32, lastY: i32,
  out: usize, outStride: i32, w: i32, h: i32,
): void {
  const ny = lastY == 0 ? 1 : (lastY + step - 1) / step + 1;
  const rowBytes = (<usize>nodeStride) << 4;
  for (let y = 0; y < h; y++) {
    let j = y / step;
    if (j > ny - 2) j = ny - 2;
    if (j < 0) j = 0;
    const y0 = j * step;
    const y1 = min(y0 + step, lastY);
    const ty: f64 = y1 > y0 ? <f64>(y - y0) / <f64>(y1 - y0) : 0.0;
    const uy = 1.0 - ty;
    const rowA = nodes + <usize>j * rowBytes;
    const rowB = y1 > y0 ? rowA + rowBytes : rowA;
    const o = out + ((<usize>y * <usize>outStride) << (mode == MODE_COORDS ? 4 : 2));
    let x = 0;
    for (let k = 0; x < w; k++) {
      const x0 = k * step;
      const x1 = min(x0 + step, lastX);
      const n0 = <usize>k << 4;
      const n1 = x1 > x0 ? n0 + 16 : n0;
      const ax = load<f64>(rowA + n0) * uy + load<f64>(rowB + n0) * ty;
      const ay = load<f64>(rowA + n0, 8) * uy + load<f64>(rowB + n0, 8) * ty;
      const bx = load<f64>(rowA + n1) * uy + load<f64>(rowB + n1) * ty;
      const by = load<f64>(rowA + n1, 8) * uy + load<f64>(rowB + n1, 8) * ty;
      const inv: f64 = x1 > x0 ? 1.0 / <f64>(x1 - x0) : 0.0;
      const dx = (bx - ax) * inv;
      const dy = (by - ay) * inv;
      // The segment's pixels from x0 (inclusive) to x1 (exclusive), except the last segment, which
      // also holds x1 (= lastX, when inside the block). That node gets its value as is: no rounding,
      // and an unmapped node (a huge negative stand-in) cannot cancel out against its neighbour.
      const xEnd = x1 >= lastX ? w : min(x1, w);
      const xLin = min(xEnd, x1);
      for (; x < xLin; x++) {
        const i = <f64>(x - x0);
        put(mode, src, srcW, srcH, o, x, ax + dx * i, ay + dy * i);
      }
      if (x < xEnd) {
        put(mode, src, srcW, srcH, o, x, bx, by);
        x++;
      }
    }
  }
}

/** Nearest-neighbour warp of a w x h block of f32 output (NaN outside the source or on no-data). */
export function warpNearest(
  src: usize, srcW: i32, srcH: i32,
  nodes: usize, nodeStride: i32, step: i32, lastX: i32, lastY: i32,
  out: usize, outStride: i32, w: i32, h: i32,
): void {
  warpLoop(MODE_NEAREST, src, srcW, srcH, nodes, nodeStride, step, lastX, lastY, out, outStride, w, h);
}

/** Bilinear warp (weights renormalised over non-NaN neighbours, as GDAL's bilinear). */
export function warpBilinear(
  src: usize, srcW: i32, srcH: i32,
  nodes: usize, nodeStride: i32, step: i32, lastX: i32, lastY: i32,
  out: usize, outStride: i32, w: i32, h: i32,
): void {
  warpLoop(MODE_BILINEAR, src, srcW, srcH, nodes, nodeStride, step, lastX, lastY, out, outStride, w, h);
}

/** The interpolated source coordinates themselves: f64 pairs (column, row) per output pixel. */
export function warpCoordinates(
  nodes: usize, nodeStride: i32, step: i32, lastX: i32, lastY: i32,
  out: usize, outStride: i32, w: i32, h: i32,
): void {
  warpLoop(MODE_COORDS, 0, 0, 0, nodes, nodeStride, step, lastX, lastY, out, outStride, w, h);
}
