// Reprojection ("warp") of a source band onto a target grid, nearest or bilinear, NaN as no-data.
//
// Every target pixel centre maps to a point of the source: target pixel -> target CRS (dst.transform)
// -> source CRS (proj4) -> source pixel coordinates (inverse of src.grid.transform), where source pixel
// (c, r) covers [c, c+1) x [r, r+1). Like GDAL's approximate transformer, that mapping is computed
// exactly only on a lattice of target pixels and interpolated (bilinearly) in between, by the wasm
// kernels of kernels/warp.ts. The target is processed in blocks of BLOCK x BLOCK pixels; each block
// starts with a lattice step of START_STEP pixels and halves it (down to 1, i.e. exact per pixel) while
// the interpolated mapping is off the exact one by more than maxErrorPixels (|dx| + |dy|, in source
// pixels, as GDAL measures it) at the midpoints of a lattice cell's edges or at its centre. A cell
// whose points all fall well outside the source on one side needs no refinement (its pixels are
// outside whatever their exact position). Points the transform cannot map (NaN, infinite, or
// proj4 throwing) are outside. Same CRS: the mapping is affine, and a lattice of the target's four
// corners is exact, so no proj4 calls happen.
import { transformer } from '../geometry/crs.js';
import type { GeoTransform, Grid } from '../core/grid.js';
import { alloc, f32, f64, kernels, mark, plane, ptrOf, release } from '../wasm/kernels.js';
import { addStage } from '../core/stages.js';

export type Resampling = 'nearest' | 'bilinear';

/** A band on a grid: data has grid.width * grid.height values, row by row; NaN = no-data. */
export interface SourceRaster {
  grid: Grid;
  data: Float32Array;
}

export interface WarpOptions {
  /** Largest allowed error of the interpolated mapping, in source pixels (|dx| + |dy|); 0 = exact per pixel. Default 0.125. */
  maxErrorPixels?: number;
  /** When given, filled with how the mapping was approximated. */
  stats?: WarpStats;
  /** Where the answer goes (dst.width * dst.height values); a new plane (see kernels.ts plane()) when absent. */
  out?: Float32Array;
}

export interface WarpStats {
  /** Blocks of the target warped, each with one lattice. */
  blocks: number;
  /** Blocks by the lattice step they ended with (16 unrefined ... 1 exact per pixel). */
  steps: Record<number, number>;
  /** Points mapped exactly (through proj4 unless the CRSs are the same). */
  exactPoints: number;
}

/** A window of a grid in its pixels: columns [col, col+width), rows [row, row+height). */
export interface PixelWindow {
  col: number;
  row: number;
  width: number;
  height: number;
}

const BLOCK = 64;
const START_STEP = 16;
const DEFAULT_MAX_ERROR = 0.125;
/** Source pixels beyond the source edge after which a lattice cell counts as outside. */
const OUTSIDE_MARGIN = 2;
/** Stands in for a lattice node that could not be mapped: interpolating towards it leaves the source. */
const UNMAPPED = -1e30;

function invert(t: GeoTransform): GeoTransform {
  const det = t[1] * t[5] - t[2] * t[4];
  if (!(det !== 0) || !Number.isFinite(det)) throw new RangeError(`geotransform [${t.join(', ')}] cannot be inverted`);
  const i1 = t[5] / det;
  const i2 = -t[2] / det;
  const i4 = -t[4] / det;
  const i5 = t[1] / det;
  return [-(i1 * t[0] + i2 * t[3]), i1, i2, -(i4 * t[0] + i5 * t[3]), i4, i5];
}

/** Maps a (continuous) target pixel position to source pixel coordinates; writes NaN when unmappable. */
type PixelMap = (px: number, py: number, out: Float64Array, at: number) => void;

function pixelMap(dst: Grid, srcGrid: Grid): PixelMap {
  const [t0, t1, t2, t3, t4, t5] = dst.transform;
  const [i0, i1, i2, i3, i4, i5] = invert(srcGrid.transform);
  if (dst.epsg === srcGrid.epsg) {
    return (px, py, out, at) => {
      const x = t0 + px * t1 + py * t2;
      const y = t3 + px * t4 + py * t5;
      out[at] = i0 + x * i1 + y * i2;
      out[at + 1] = i3 + x * i4 + y * i5;
    };
  }
  const tr = transformer(dst.epsg, srcGrid.epsg);
  return (px, py, out, at) => {
    const x = t0 + px * t1 + py * t2;
    const y = t3 + px * t4 + py * t5;
    let X = NaN;
    let Y = NaN;
    try {
      [X, Y] = tr(x, y);
    } catch {
      /* unmappable */
    }
    if (Number.isFinite(X) && Number.isFinite(Y)) {
      out[at] = i0 + X * i1 + Y * i2;
      out[at + 1] = i3 + X * i4 + Y * i5;
    } else {
      out[at] = NaN;
      out[at + 1] = NaN;
    }
  };
}

/** Lattice positions 0, step, 2 step, ..., last (last always included). */
function positions(last: number, step: number): number[] {
  const p: number[] = [];
  for (let x = 0; x < last; x += step) p.push(x);
  p.push(last);
  return p;
}

/** One block's lattice, as the kernels take it. */
interface Lattice {
  /** Block position and size in the target. */
  bx: number;
  by: number;
  bw: number;
  bh: number;
  step: number;
  lastX: number;
  lastY: number;
  nx: number;
  ny: number;
  /** nx * ny f64 pairs (source column, row), row by row. */
  nodes: Float64Array;
  /** Every node lies well outside the source on the same side: so does every pixel of the block. */
  outside: boolean;
}

/**
 * Calls `fn` for each block of the target with a lattice fine enough for maxError. `fn` must copy
 * the nodes (the array is reused).
 */
function plan(dst: Grid, srcGrid: Grid, opts: WarpOptions, fn: (l: Lattice) => void): void {
  const maxError = opts.maxErrorPixels ?? DEFAULT_MAX_ERROR;
  if (!(maxError >= 0)) throw new RangeError(`maxErrorPixels must be >= 0, not ${maxError}`);
  const stats = opts.stats;
  if (stats) {
    stats.blocks = 0;
    stats.steps = {};
    stats.exactPoints = 0;
  }
  const srcW = srcGrid.width;
  const srcH = srcGrid.height;
  const outside = (c: number, r: number, side: number): boolean => (side === 0 ? c < -OUTSIDE_MARGIN : side === 1 ? c > srcW + OUTSIDE_MARGIN : side === 2 ? r < -OUTSIDE_MARGIN : r > srcH + OUTSIDE_MARGIN);
  const done = (l: Omit<Lattice, 'outside'>): void => {
    const n = l.nx * l.ny * 2;
    let out = false;
    for (let s = 0; s < 4 && !out; s++) {
      out = true;
      for (let q = 0; q < n && out; q += 2) out = outside(l.nodes[q], l.nodes[q + 1], s);
    }
    if (stats) {
      stats.blocks++;
      stats.steps[l.step] = (stats.steps[l.step] ?? 0) + 1;
    }
    fn({ ...l, outside: out });
  };
  const pixelToSource = pixelMap(dst, srcGrid);
  const map: PixelMap = stats
    ? (px, py, out, at) => {
        stats.exactPoints++;
        pixelToSource(px, py, out, at);
      }
    : pixelToSource;
  const w = dst.width;
  const h = dst.height;
  if (dst.epsg === srcGrid.epsg) {
    // Affine: the four corners interpolate every pixel exactly.
    const lastX = w - 1;
    const lastY = h - 1;
    const xs = positions(lastX, Math.max(1, lastX));
    const ys = positions(lastY, Math.max(1, lastY));
    const nodes = new Float64Array(xs.length * ys.length * 2);
    let k = 0;
    for (const y of ys) {
      for (const x of xs) {
        map(x + 0.5, y + 0.5, nodes, k);
        k += 2;
      }
    }
    done({ bx: 0, by: 0, bw: w, bh: h, step: Math.max(1, lastX, lastY), lastX, lastY, nx: xs.length, ny: ys.length, nodes });
    return;
  }

  // Exact values at doubled local positions (2x, 2y) within a block, so that cell midpoints that
  // fall on half pixels fit too; a stamp marks which are computed for the current block.
  const side = 2 * BLOCK + 1;
  const cache = new Float64Array(side * side * 2);
  const stamp = new Uint32Array(side * side);
  let gen = 0;
  let bx = 0;
  let by = 0;
  const exact = (x: number, y: number): number => {
    const key = 2 * y * side + 2 * x;
    if (stamp[key] !== gen) {
      map(bx + x + 0.5, by + y + 0.5, cache, key * 2);
      stamp[key] = gen;
    }
    return key * 2;
  };
  const nodes = new Float64Array((BLOCK + 1) * (BLOCK + 1) * 2);
  /** Whether the exact mapping of (px, py) is off the interpolated (ic, ir) by more than maxError. */
  const off = (px: number, py: number, ic: number, ir: number): boolean => {
    const at = exact(px, py);
    return !(Math.abs(ic - cache[at]) + Math.abs(ir - cache[at + 1]) <= maxError);
  };

  for (by = 0; by < h; by += BLOCK) {
    for (bx = 0; bx < w; bx += BLOCK) {
      gen++;
      const bw = Math.min(BLOCK, w - bx);
      const bh = Math.min(BLOCK, h - by);
      const lastX = Math.min(bx + BLOCK, w - 1) - bx;
      const lastY = Math.min(by + BLOCK, h - 1) - by;
      for (let step = START_STEP; ; step >>= 1) {
        const xs = positions(lastX, step);
        const ys = positions(lastY, step);
        const nx = xs.length;
        const ny = ys.length;
        for (let j = 0; j < ny; j++) {
          for (let i = 0; i < nx; i++) {
            const at = exact(xs[i], ys[j]);
            nodes[(j * nx + i) * 2] = cache[at];
            nodes[(j * nx + i) * 2 + 1] = cache[at + 1];
          }
        }
        let fine = true;
        if (step > 1) {
          cells: for (let j = 0; j + 1 < ny || (j === 0 && ny === 1); j++) {
            for (let i = 0; i + 1 < nx || (i === 0 && nx === 1); i++) {
              const i1 = Math.min(i + 1, nx - 1);
              const j1 = Math.min(j + 1, ny - 1);
              const a = (j * nx + i) * 2;
              const b = (j * nx + i1) * 2;
              const c = (j1 * nx + i) * 2;
              const d = (j1 * nx + i1) * 2;
              const x0 = xs[i];
              const x1 = xs[i1];
              const y0 = ys[j];
              const y1 = ys[j1];
              const xm = (x0 + x1) / 2;
              const ym = (y0 + y1) / 2;
              // Edge midpoints and centre, against the bilinear interpolation of the corners.
              const ac = nodes[a],
                ar = nodes[a + 1],
                bc = nodes[b],
                br = nodes[b + 1];
              const cc = nodes[c],
                cr = nodes[c + 1],
                dc = nodes[d],
                dr = nodes[d + 1];
              const wide = x1 > x0;
              const tall = y1 > y0;
              const bad =
                (wide && off(xm, y0, (ac + bc) / 2, (ar + br) / 2)) ||
                (wide && tall && off(xm, y1, (cc + dc) / 2, (cr + dr) / 2)) ||
                (tall && off(x0, ym, (ac + cc) / 2, (ar + cr) / 2)) ||
                (wide && tall && off(x1, ym, (bc + dc) / 2, (br + dr) / 2)) ||
                (wide && tall && off(xm, ym, (ac + bc + cc + dc) / 4, (ar + br + cr + dr) / 4));
              if (!bad) continue;
              // Too far off, unless everything lies well outside the source on one side (then so does
              // every interpolated point, a convex combination of the corners).
              const points = [ac, ar, bc, br, cc, cr, dc, dr];
              for (const [px, py] of [
                [xm, y0],
                [xm, y1],
                [x0, ym],
                [x1, ym],
                [xm, ym],
              ]) {
                const at = exact(px, py);
                points.push(cache[at], cache[at + 1]);
              }
              let out = false;
              for (let s = 0; s < 4 && !out; s++) {
                out = true;
                for (let q = 0; q < points.length && out; q += 2) out = Number.isFinite(points[q]) && Number.isFinite(points[q + 1]) && outside(points[q], points[q + 1], s);
              }
              if (!out) {
                fine = false;
                break cells;
              }
            }
          }
        }
        if (fine || step === 1) {
          done({ bx, by, bw, bh, step, lastX, lastY, nx, ny, nodes });
          break;
        }
      }
    }
  }
}

/** Copies a lattice into wasm memory at ptr, unmapped nodes replaced by UNMAPPED. */
function putNodes(view: Float64Array, l: Lattice): void {
  const n = l.nx * l.ny * 2;
  for (let i = 0; i < n; i++) {
    const v = l.nodes[i];
    view[i] = Number.isFinite(v) ? v : UNMAPPED;
  }
  // A NaN in one coordinate makes the point unmapped in both.
  for (let i = 0; i < n; i += 2) {
    if (view[i] === UNMAPPED || view[i + 1] === UNMAPPED) view[i] = view[i + 1] = UNMAPPED;
  }
}

function checkGrid(g: Grid, what: string): void {
  if (!(Number.isInteger(g.width) && Number.isInteger(g.height) && g.width > 0 && g.height > 0)) {
    throw new RangeError(`${what} grid has size ${g.width} x ${g.height}`);
  }
}

/** Resamples `src` onto `dst`: one f32 value per target pixel, NaN where the source has none. */
export function warp(src: SourceRaster, dst: Grid, method: Resampling, opts: WarpOptions = {}): Float32Array {
  const t0 = performance.now();
  try {
    return warpInner(src, dst, method, opts);
  } finally {
    addStage('warp', performance.now() - t0);
  }
}

function warpInner(src: SourceRaster, dst: Grid, method: Resampling, opts: WarpOptions): Float32Array {
  checkGrid(src.grid, 'source');
  checkGrid(dst, 'target');
  const srcW = src.grid.width;
  const srcH = src.grid.height;
  if (src.data.length !== srcW * srcH) throw new RangeError(`source has ${src.data.length} values for a ${srcW} x ${srcH} grid`);
  if (method !== 'nearest' && method !== 'bilinear') throw new RangeError(`unknown resampling method ${String(method)}`);
  const k = kernels();
  const kernel = method === 'nearest' ? k.warpNearest : k.warpBilinear;
  const n = dst.width * dst.height;
  const result = opts.out ?? plane(n);
  if (result.length !== n) throw new RangeError(`warp: out has ${result.length} values for a ${dst.width} x ${dst.height} target`);
  const m = mark();
  try {
    // The source and the target are read and written where they are when they live in kernel
    // memory (arena planes); otherwise they are copied in, or out.
    const srcIn = ptrOf(src.data);
    const srcPtr = srcIn >= 0 ? srcIn : alloc(src.data.length * 4);
    const outIn = ptrOf(result);
    const outPtr = outIn >= 0 ? outIn : alloc(n * 4);
    const nodesPtr = alloc((BLOCK + 1) * (BLOCK + 1) * 16);
    if (srcIn < 0) f32(srcPtr, src.data.length).set(src.data);
    // An affine lattice has at most 4 nodes, a block's at most (BLOCK+1)^2.
    const nodesView = f64(nodesPtr, (BLOCK + 1) * (BLOCK + 1) * 2);
    const outView = f32(outPtr, n);
    for (const l of planned(dst, src.grid, opts)) {
      if (l.outside) {
        for (let y = 0; y < l.bh; y++) {
          const row = (l.by + y) * dst.width + l.bx;
          outView.fill(NaN, row, row + l.bw);
        }
        continue;
      }
      putNodes(nodesView, l);
      kernel(srcPtr, srcW, srcH, nodesPtr, l.nx, l.step, l.lastX, l.lastY, outPtr + (l.by * dst.width + l.bx) * 4, dst.width, l.bw, l.bh);
    }
    if (outIn < 0) result.set(outView);
    return result;
  } finally {
    release(m);
  }
}

/**
 * The source pixel coordinates warp() samples at for each target pixel centre (interleaved column,
 * row; NaN where unmapped), as interpolated from the lattice. For checking the approximation.
 */
export function sourceCoordinates(dst: Grid, srcGrid: Grid, opts: WarpOptions = {}): Float64Array {
  checkGrid(srcGrid, 'source');
  checkGrid(dst, 'target');
  const k = kernels();
  const m = mark();
  try {
    const n = dst.width * dst.height * 2;
    const outPtr = alloc(n * 8);
    const nodesPtr = alloc((BLOCK + 1) * (BLOCK + 1) * 16);
    const nodesView = f64(nodesPtr, (BLOCK + 1) * (BLOCK + 1) * 2);
    plan(dst, srcGrid, opts, (l) => {
      putNodes(nodesView, l);
      k.warpCoordinates(nodesPtr, l.nx, l.step, l.lastX, l.lastY, outPtr + (l.by * dst.width + l.bx) * 16, dst.width, l.bw, l.bh);
    });
    const out = f64(outPtr, n).slice();
    for (let i = 0; i < n; i++) if (!(Math.abs(out[i]) < 1e29)) out[i] = NaN; // interpolated towards UNMAPPED
    return out;
  } finally {
    release(m);
  }
}

/** The exact source pixel coordinates of target pixel (col, row)'s centre: [column, row], NaN if unmapped. */
export function exactSourceCoordinates(dst: Grid, srcGrid: Grid): (col: number, row: number) => [number, number] {
  const map = pixelMap(dst, srcGrid);
  const p = new Float64Array(2);
  return (col, row) => {
    map(col + 0.5, row + 0.5, p, 0);
    return [p[0], p[1]];
  };
}

/**
 * The window of srcGrid that warping onto dst reads: the source pixels under the target's footprint
 * (found from its edges, sampled densely, and an interior grid of points), widened by `margin` source
 * pixels (1 covers bilinear's neighbours and the approximation), clipped to srcGrid. null when the
 * target does not overlap the source.
 */
export function sourceWindow(dst: Grid, srcGrid: Grid, margin = 1): PixelWindow | null {
  checkGrid(srcGrid, 'source');
  checkGrid(dst, 'target');
  // The bands and dates of one load share their grids: the footprint is mapped once for all.
  const key = `${gridKey(dst)}|${gridKey(srcGrid)}`;
  const known = footprints.get(key);
  if (known !== undefined) {
    remember(footprints, key, known);
    return known && clipWindow(known, srcGrid, margin);
  }
  const map = pixelMap(dst, srcGrid);
  const p = new Float64Array(2);
  let minC = Infinity;
  let minR = Infinity;
  let maxC = -Infinity;
  let maxR = -Infinity;
  const add = (px: number, py: number): void => {
    map(px, py, p, 0);
    if (!Number.isFinite(p[0]) || !Number.isFinite(p[1])) return;
    if (p[0] < minC) minC = p[0];
    if (p[0] > maxC) maxC = p[0];
    if (p[1] < minR) minR = p[1];
    if (p[1] > maxR) maxR = p[1];
  };
  const w = dst.width;
  const h = dst.height;
  if (dst.epsg === srcGrid.epsg) {
    for (const [px, py] of [
      [0, 0],
      [w, 0],
      [0, h],
      [w, h],
    ])
      add(px, py);
  } else {
    const ex = Math.min(w, 256);
    const ey = Math.min(h, 256);
    for (let i = 0; i <= ex; i++) {
      add((i / ex) * w, 0);
      add((i / ex) * w, h);
    }
    for (let j = 0; j <= ey; j++) {
      add(0, (j / ey) * h);
      add(w, (j / ey) * h);
    }
    const n = 16;
    for (let j = 1; j < n; j++) for (let i = 1; i < n; i++) add((i / n) * w, (j / n) * h);
  }
  const extremes = minC > maxC ? null : { minC, minR, maxC, maxR };
  remember(footprints, key, extremes);
  return extremes && clipWindow(extremes, srcGrid, margin);
}

/** The source window of sourceWindow from the extreme source coordinates, clipped; null when empty. */
function clipWindow(e: Extremes, srcGrid: Grid, margin: number): PixelWindow | null {
  const { minC, minR, maxC, maxR } = e;
  const col = Math.max(0, Math.floor(minC) - margin);
  const row = Math.max(0, Math.floor(minR) - margin);
  const colEnd = Math.min(srcGrid.width, Math.ceil(maxC) + margin);
  const rowEnd = Math.min(srcGrid.height, Math.ceil(maxR) + margin);
  if (colEnd <= col || rowEnd <= row) return null;
  return { col, row, width: colEnd - col, height: rowEnd - row };
}

/** The grid of a window of `g` (same CRS and pixel size, origin moved to the window's corner). */
export function windowGrid(g: Grid, win: PixelWindow): Grid {
  const [t0, t1, t2, t3, t4, t5] = g.transform;
  return {
    epsg: g.epsg,
    transform: [t0 + win.col * t1 + win.row * t2, t1, t2, t3 + win.col * t4 + win.row * t5, t4, t5],
    width: win.width,
    height: win.height,
  };
}

// ---------------------------------------------------------------------------------------------
// Memos: every band and date of a load (a tile, a chunk) warps between the same two grids, so the
// footprint and the lattices are computed once and reused. Small, bounded, least recent dropped.

const MEMO_ENTRIES = 64;
type Extremes = { minC: number; minR: number; maxC: number; maxR: number };
const footprints = new Map<string, Extremes | null>();
const lattices = new Map<string, Lattice[]>();

function gridKey(g: Grid): string {
  return `${g.epsg}:${g.transform.join(',')}:${g.width}x${g.height}`;
}

function remember<V>(memo: Map<string, V>, key: string, value: V): V {
  memo.delete(key);
  memo.set(key, value);
  if (memo.size > MEMO_ENTRIES) memo.delete(memo.keys().next().value!);
  return value;
}

/** The lattices of plan(), computed once per pair of grids (not when stats are asked for). */
function planned(dst: Grid, srcGrid: Grid, opts: WarpOptions): Lattice[] {
  const key = `${gridKey(dst)}|${gridKey(srcGrid)}|${opts.maxErrorPixels ?? DEFAULT_MAX_ERROR}`;
  const known = opts.stats ? undefined : lattices.get(key);
  if (known) return remember(lattices, key, known);
  const out: Lattice[] = [];
  plan(dst, srcGrid, opts, (l) => out.push({ ...l, nodes: l.nodes.slice(0, l.nx * l.ny * 2) }));
  return opts.stats ? out : remember(lattices, key, out);
}
