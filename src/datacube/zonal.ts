// Zonal statistics on the kernels: the planes of a raster cube (one per combination of its
// non-spatial labels) reduced over the spans of geometries. The common reducers (mean, sum, count,
// min, max, sd, variance, median) run here in one or two passes over each plane's spans; any other
// reducer gets each geometry's values gathered by the kernels (zonalValues) and runs as a child
// process.
import { alloc, f32, f64 as f64View, i32, kernels, mark, ptrOf, release, u32 } from '../wasm/kernels.js';
import type { Spans } from './spans.js';

export type ZonalStat = 'mean' | 'sum' | 'count' | 'min' | 'max' | 'sd' | 'variance' | 'median';
export const ZONAL_STATS = new Set<ZonalStat>(['mean', 'sum', 'count', 'min', 'max', 'sd', 'variance', 'median']);

export interface ZonalResult {
  /** [label][plane]: the statistic, NaN for no-data. */
  values: Float32Array;
  /** [label]: pixels of each geometry (total_count). */
  total: Float64Array;
  /** [label][plane]: pixels that are not no-data (valid_count). */
  valid: Float64Array;
}

/** Kernel memory holding the spans, and each plane's pointer (copied in when not in kernel memory). */
function planePtr(data: Float32Array, offset: number, n: number): number {
  const p = ptrOf(data);
  if (p >= 0) return p + offset * 4;
  const q = alloc(n * 4);
  f32(q, n).set(data.subarray(offset, offset + n));
  return q;
}

/**
 * The spans copied into kernel memory in the order of their rows (the labels' own spans keep their
 * order). Made label by label, a plane would be swept a geometry at a time, jumping from row to
 * row; a chunk's planes are larger than the caches, so that sweep waited on memory for each span
 * and took twice as long. Answers the spans' pointer.
 */
function spansByRow(spans: Spans, height: number): number {
  const n = spans.count;
  const src = spans.data;
  const sp = alloc(n * 16);
  const dst = i32(sp, n * 4);
  // A counting sort by row: stable, in two passes.
  const next = new Uint32Array(height + 1);
  for (let i = 0; i < n; i++) next[src[4 * i + 1] + 1]++;
  for (let r = 0; r < height; r++) next[r + 1] += next[r];
  for (let i = 0; i < n; i++) {
    const o = 4 * next[src[4 * i + 1]]++;
    dst[o] = src[4 * i];
    dst[o + 1] = src[4 * i + 1];
    dst[o + 2] = src[4 * i + 2];
    dst[o + 3] = src[4 * i + 3];
  }
  return sp;
}

/**
 * A statistic per geometry and plane. `data` holds `planes` planes of width x height values, one
 * after the other; `ignoreNodata` false makes a geometry with any no-data pixel no-data (count then
 * counts every pixel).
 */
export function zonalStats(data: Float32Array, width: number, height: number, planes: number, spans: Spans, stat: ZonalStat, ignoreNodata = true): ZonalResult {
  const k = kernels();
  const L = spans.labels;
  const n = width * height;
  const values = new Float32Array(L * planes);
  const valid = new Float64Array(L * planes);
  const total = new Float64Array(L);
  for (let i = 0; i < spans.count; i++) total[spans.data[4 * i]] += spans.data[4 * i + 3] - spans.data[4 * i + 2];
  const m = mark();
  try {
    const sp = spansByRow(spans, height);
    const accPtr = alloc(L * 48);
    const acc = f64View(accPtr, L * 6);
    const meansPtr = alloc(L * 8);
    const means = f64View(meansPtr, L);
    let gathered: { cursors: number; out: number; starts: Uint32Array } | null = null;
    if (stat === 'median') {
      const starts = new Uint32Array(L + 1);
      for (let l = 0; l < L; l++) starts[l + 1] = starts[l] + total[l];
      const out = alloc(Math.max(1, starts[L]) * 4);
      gathered = { cursors: alloc(L * 4), out, starts };
    }
    for (let p = 0; p < planes; p++) {
      const inner = mark();
      const vp = planePtr(data, p * n, n);
      for (let l = 0; l < L; l++) {
        acc[6 * l] = 0;
        acc[6 * l + 1] = 0;
        acc[6 * l + 2] = 0;
        acc[6 * l + 3] = Infinity;
        acc[6 * l + 4] = -Infinity;
        acc[6 * l + 5] = 0;
      }
      k.zonalSums(vp, width, sp, spans.count, accPtr);
      if (stat === 'sd' || stat === 'variance') {
        for (let l = 0; l < L; l++) means[l] = acc[6 * l + 1] > 0 ? acc[6 * l + 2] / acc[6 * l + 1] : 0;
        k.zonalDeviations(vp, width, sp, spans.count, meansPtr, accPtr);
      }
      let medians: Float32Array | null = null;
      if (gathered) {
        u32(gathered.cursors, L).set(gathered.starts.subarray(0, L));
        k.zonalGather(vp, width, sp, spans.count, gathered.cursors, gathered.out);
        medians = mediansOf(f32(gathered.out, gathered.starts[L]), gathered.starts);
      }
      for (let l = 0; l < L; l++) {
        const tot = acc[6 * l];
        const nv = acc[6 * l + 1];
        valid[l * planes + p] = nv;
        const incomplete = !ignoreNodata && nv < tot;
        let v: number;
        switch (stat) {
          case 'count':
            v = ignoreNodata ? nv : tot;
            break;
          case 'sum':
            v = incomplete || nv === 0 ? NaN : acc[6 * l + 2];
            break;
          case 'mean':
            v = incomplete || nv === 0 ? NaN : acc[6 * l + 2] / nv;
            break;
          case 'min':
            v = incomplete || nv === 0 ? NaN : acc[6 * l + 3];
            break;
          case 'max':
            v = incomplete || nv === 0 ? NaN : acc[6 * l + 4];
            break;
          case 'variance':
            v = incomplete || nv < 2 ? NaN : acc[6 * l + 5] / (nv - 1);
            break;
          case 'sd':
            v = incomplete || nv < 2 ? NaN : Math.sqrt(acc[6 * l + 5] / (nv - 1));
            break;
          case 'median':
            v = incomplete ? NaN : medians![l];
            break;
        }
        values[l * planes + p] = v;
      }
      release(inner);
    }
  } finally {
    release(m);
  }
  return { values, total, valid };
}

/** The median of each label's values (NaN ones left out; NaN when none is left). */
function mediansOf(vals: Float32Array, starts: Uint32Array): Float32Array {
  const L = starts.length - 1;
  const out = new Float32Array(L);
  const buf = new Float32Array(vals.length);
  buf.set(vals);
  for (let l = 0; l < L; l++) {
    const part = buf.subarray(starts[l], starts[l + 1]);
    part.sort(); // NaN sorts last
    let nv = part.length;
    while (nv > 0 && Number.isNaN(part[nv - 1])) nv--;
    if (nv === 0) out[l] = NaN;
    else out[l] = nv % 2 ? part[(nv - 1) / 2] : (part[nv / 2 - 1] + part[nv / 2]) / 2;
  }
  return out;
}

/**
 * Each label's pixel values for every plane, for reducers run as child processes: per label an array
 * of pixel vectors (element k = pixel k, one value per plane), the shape reduceVectors takes.
 */
export function zonalValues(data: Float32Array, width: number, height: number, planes: number, spans: Spans): { counts: Float64Array; values(label: number): Float32Array[] } {
  const k = kernels();
  const L = spans.labels;
  const n = width * height;
  const counts = new Float64Array(L);
  for (let i = 0; i < spans.count; i++) counts[spans.data[4 * i]] += spans.data[4 * i + 3] - spans.data[4 * i + 2];
  const starts = new Uint32Array(L + 1);
  for (let l = 0; l < L; l++) starts[l + 1] = starts[l] + counts[l];
  const totalPx = starts[L];
  // [plane][pixel of all labels]
  const all = new Float32Array(totalPx * planes);
  const m = mark();
  try {
    // In the spans' own order: reducers such as first and last see each geometry's pixels as given.
    const sp = alloc(spans.count * 16);
    i32(sp, spans.count * 4).set(spans.data.subarray(0, spans.count * 4));
    const cursors = alloc(L * 4);
    const out = alloc(Math.max(1, totalPx) * 4);
    for (let p = 0; p < planes; p++) {
      const inner = mark();
      const vp = planePtr(data, p * n, n);
      u32(cursors, L).set(starts.subarray(0, L));
      k.zonalGather(vp, width, sp, spans.count, cursors, out);
      all.set(f32(out, totalPx), p * totalPx);
      release(inner);
    }
  } finally {
    release(m);
  }
  return {
    counts,
    values(label: number): Float32Array[] {
      const c = counts[label];
      const s = starts[label];
      const buf = new Float32Array(c * planes);
      for (let p = 0; p < planes; p++) for (let j = 0; j < c; j++) buf[j * planes + p] = all[p * totalPx + s + j];
      return Array.from({ length: c }, (_, j) => buf.subarray(j * planes, (j + 1) * planes));
    },
  };
}
