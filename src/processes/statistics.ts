// Statistics over arrays of numbers: the reducers (min, max, sum, product, mean, median, variance,
// sd), extrema, quantiles and the cumulative processes (cummax, cummin, cumsum, cumproduct).
//
// Shared rules (from the openEO definitions):
//   - no-data is `null`; with `ignore_nodata` true (the default) it is skipped, with false any
//     null makes the answer null (cumulative processes: null from that element on);
//   - an empty array, or one holding only nulls, gives null (extrema [null, null], quantiles one
//     null per requested quantile);
//   - NaN is a number and propagates (IEEE 754), e.g. max([NaN, 1]) is NaN.
// These run once per pixel inside reducers: plain loops, no closures or sorting where one pass
// does. The `data` array may be a buffer the caller reuses for the next pixel, so nothing here
// keeps it or sorts it in place.
import { ApiError } from '../core/errors.js';
import { implementScalar, type ProcessImpl } from './implement.js';
import { ProcessException } from '../core/errors.js';
import { labelsOf, withLabels } from '../core/labels.js';

type Data = readonly unknown[];

function notArray(processId: string, v: unknown): ApiError {
  return new ApiError('ProcessParameterInvalid', {
    process: processId,
    parameter: 'data',
    reason: `an array of numbers is expected, not ${v === null ? 'null' : typeof v}`,
  });
}

function notNumber(processId: string, v: unknown): ApiError {
  return new ApiError('ProcessParameterInvalid', {
    process: processId,
    parameter: 'data',
    reason: `the array may hold only numbers and null, but holds ${Array.isArray(v) ? 'an array' : typeof v === 'string' ? `the string '${v}'` : typeof v}`,
  });
}

function dataOf(processId: string, v: unknown): Data {
  if (!Array.isArray(v)) throw notArray(processId, v);
  return v;
}

/** Whether nulls are skipped (anything but an explicit `false`). */
const skipsNodata = (v: unknown): boolean => v !== false;

// ---------------------------------------------------------------------------------------------
// min, max, extrema

function maxOf(data: Data, skip: boolean): number | null {
  let m = -Infinity;
  let n = 0;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v === null || v === undefined) {
      if (!skip) return null;
      continue;
    }
    if (typeof v !== 'number') throw notNumber('max', v);
    // `v !== v`: NaN wins and then stays (nothing compares greater than NaN).
    if (v > m || v !== v) m = v;
    n++;
  }
  return n === 0 ? null : m;
}

function minOf(data: Data, skip: boolean): number | null {
  let m = Infinity;
  let n = 0;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v === null || v === undefined) {
      if (!skip) return null;
      continue;
    }
    if (typeof v !== 'number') throw notNumber('min', v);
    if (v < m || v !== v) m = v;
    n++;
  }
  return n === 0 ? null : m;
}

function extremaOf(data: Data, skip: boolean): [number, number] | [null, null] {
  let lo = Infinity;
  let hi = -Infinity;
  let n = 0;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v === null || v === undefined) {
      if (!skip) return [null, null];
      continue;
    }
    if (typeof v !== 'number') throw notNumber('extrema', v);
    if (v !== v) {
      lo = hi = v;
    } else {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    n++;
  }
  return n === 0 ? [null, null] : [lo, hi];
}

// ---------------------------------------------------------------------------------------------
// sum, mean, variance (sd), product

const SUM = 0;
const MEAN = 1;
const VARIANCE = 2;

/**
 * Sum, mean or sample variance of the numbers of `data`; null for a null under `skip` false or
 * when there is no number. The sum is compensated (Neumaier): the exact sum rounded once in the
 * common case, e.g. 0.1 + 0.2 + 0.3 = 0.6; infinities and NaN give what plain IEEE addition
 * gives. The variance takes a second pass over the deviations from the mean, with the rounding
 * correction (Σd)²/n, divided by n - 1: one value gives 0/0 = NaN, an infinity NaN.
 */
function moments(what: number, processId: string, data: Data, skip: boolean): number | null {
  let s = 0;
  let c = 0;
  let n = 0;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v === null || v === undefined) {
      if (!skip) return null;
      continue;
    }
    if (typeof v !== 'number') throw notNumber(processId, v);
    const t = s + v;
    if (Math.abs(s) >= Math.abs(v)) c += s - t + v;
    else c += v - t + s;
    s = t;
    n++;
  }
  if (n === 0) return null;
  const r = s + c;
  // Once the running sum is infinite or NaN the correction is NaN: the plain sum is the answer.
  const sum = Number.isFinite(r) ? r : s;
  if (what === SUM) return sum;
  const mean = sum / n;
  if (what === MEAN) return mean;
  let sq = 0;
  let dev = 0;
  for (let i = 0; i < data.length; i++) {
    const v = data[i] as number | null | undefined;
    if (v === null || v === undefined) continue; // only reached when nulls are skipped
    const d = v - mean;
    sq += d * d;
    dev += d;
  }
  return (sq - (dev * dev) / n) / (n - 1);
}

function productOf(data: Data, skip: boolean): number | null {
  let p = 1;
  let n = 0;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v === null || v === undefined) {
      if (!skip) return null;
      continue;
    }
    if (typeof v !== 'number') throw notNumber('product', v);
    p *= v;
    n++;
  }
  return n === 0 ? null : p;
}

// ---------------------------------------------------------------------------------------------
// median, quantiles

/**
 * The valid numbers of `data`, sorted ascending, in a fresh buffer. Answers null for a null
 * under `skip` false, NAN_FOUND if a NaN is among the values (the statistic is then NaN).
 */
const NAN_FOUND = 1;
function sortedCopy(processId: string, data: Data, skip: boolean): Float64Array | null | typeof NAN_FOUND {
  const buf = new Float64Array(data.length);
  let k = 0;
  let nan = false;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v === null || v === undefined) {
      if (!skip) return null;
      continue;
    }
    if (typeof v !== 'number') throw notNumber(processId, v);
    if (v !== v) nan = true;
    buf[k++] = v;
  }
  if (nan) return NAN_FOUND;
  const s = k === buf.length ? buf : buf.subarray(0, k);
  s.sort(); // typed arrays sort numerically
  return s;
}

function medianOf(data: Data, skip: boolean): number | null {
  const s = sortedCopy('median', data, skip);
  if (s === null) return null;
  if (s === NAN_FOUND) return NaN;
  const n = s.length;
  if (n === 0) return null;
  const h = n >> 1;
  if (n & 1) return s[h];
  const a = s[h - 1];
  const b = s[h];
  const m = (a + b) / 2;
  // a + b may overflow although the mean does not; halves first then (±Inf stay as they are).
  return Number.isFinite(m) ? m : a / 2 + b / 2;
}

/** Type 7 (Hyndman & Fan) sample quantile at position h = (n - 1) p of the sorted values. */
function quantileAt(s: Float64Array, h: number): number {
  const n = s.length;
  const lo = Math.floor(h);
  const v = s[lo];
  const f = h - lo;
  if (f <= 0 || lo + 1 >= n) return v;
  const w = s[lo + 1];
  if (v === w) return v;
  const r = v + f * (w - v);
  // w - v overflows for huge values of opposite sign, and is infinite next to an infinity: the
  // weighted form gives the limit then (-Inf..5 stays -Inf, -Inf..Inf is NaN).
  return Number.isFinite(r) ? r : (1 - f) * v + f * w;
}

function invalid(parameter: string, reason: string): ApiError {
  return new ApiError('ProcessParameterInvalid', { process: 'quantiles', parameter, reason });
}

function intervals(parameter: string, q: unknown): number {
  if (typeof q !== 'number' || !Number.isInteger(q) || q < 2) throw invalid(parameter, 'the number of intervals must be an integer of at least 2');
  return q;
}

function quantilesOf(a: Record<string, any>): (number | null)[] {
  const probabilities = a.probabilities as unknown;
  const hasP = probabilities !== null && probabilities !== undefined;
  const hasQ = a.q !== null && a.q !== undefined;
  if (!hasP && !hasQ) throw new ProcessException('QuantilesParameterMissing', 'quantiles needs either `probabilities` or `q` (deprecated).');
  if (hasP && hasQ) throw new ProcessException('QuantilesParameterConflict', 'quantiles takes `probabilities` or `q`, not both.');

  // Either explicit probabilities or q equal intervals (probabilities k/q, k = 1..q-1).
  let list: readonly unknown[] | null = null;
  let q = 0;
  if (hasP && Array.isArray(probabilities)) {
    list = probabilities;
    for (let i = 0; i < list.length; i++) {
      const p = list[i];
      if (typeof p !== 'number' || !(p >= 0 && p <= 1)) throw invalid('probabilities', 'each probability must be a number from 0 to 1');
      if (i > 0 && p < (list[i - 1] as number)) {
        throw new ProcessException('AscendingProbabilitiesRequired', `the probabilities must be in ascending order, but ${p} follows ${list[i - 1] as number}.`);
      }
    }
  } else {
    q = hasP ? intervals('probabilities', probabilities) : intervals('q', a.q);
  }
  const m = list ? list.length : q - 1;
  const data = dataOf('quantiles', a.data);

  const s = sortedCopy('quantiles', data, skipsNodata(a.ignore_nodata));
  const out = new Array<number | null>(m);
  if (s === null || (s !== NAN_FOUND && s.length === 0)) return out.fill(null);
  if (s === NAN_FOUND) return out.fill(NaN);
  const last = s.length - 1;
  if (list) for (let i = 0; i < m; i++) out[i] = quantileAt(s, last * (list[i] as number));
  else for (let k = 1; k <= m; k++) out[k - 1] = quantileAt(s, (last * k) / q);
  return out;
}

// ---------------------------------------------------------------------------------------------
// cumulative processes: same length as the input, labels kept; nulls stay null in place and are
// skipped, or (ignore_nodata false) end the accumulation: everything from the first null is null.

const CUMMAX = 0;
const CUMMIN = 1;
const CUMSUM = 2;
const CUMPRODUCT = 3;
const CUM_IDS = ['cummax', 'cummin', 'cumsum', 'cumproduct'];

function cumulative(kind: number, data: Data, skip: boolean): (number | null)[] {
  const n = data.length;
  const out = new Array<number | null>(n);
  let acc = 0;
  let c = 0; // cumsum: Neumaier correction
  let started = false;
  let i = 0;
  for (; i < n; i++) {
    const v = data[i];
    if (v === null || v === undefined) {
      out[i] = null;
      if (!skip) break;
      continue;
    }
    if (typeof v !== 'number') throw notNumber(CUM_IDS[kind], v);
    if (!started) {
      started = true;
      acc = v;
    } else if (kind === CUMMAX) {
      if (v > acc || v !== v) acc = v;
    } else if (kind === CUMMIN) {
      if (v < acc || v !== v) acc = v;
    } else if (kind === CUMSUM) {
      const t = acc + v;
      if (Math.abs(acc) >= Math.abs(v)) c += acc - t + v;
      else c += v - t + acc;
      acc = t;
    } else {
      acc *= v;
    }
    if (kind === CUMSUM) {
      const r = acc + c;
      out[i] = Number.isFinite(r) ? r : acc;
    } else out[i] = acc;
  }
  for (; i < n; i++) out[i] = null;
  const labels = labelsOf(data);
  return labels ? withLabels(out, [...labels]) : out;
}

// ---------------------------------------------------------------------------------------------

export const processes: ProcessImpl[] = [
  implementScalar('max', (a) => maxOf(dataOf('max', a.data), skipsNodata(a.ignore_nodata))),
  implementScalar('min', (a) => minOf(dataOf('min', a.data), skipsNodata(a.ignore_nodata))),
  implementScalar('extrema', (a) => extremaOf(dataOf('extrema', a.data), skipsNodata(a.ignore_nodata))),
  implementScalar('sum', (a) => moments(SUM, 'sum', dataOf('sum', a.data), skipsNodata(a.ignore_nodata))),
  implementScalar('product', (a) => productOf(dataOf('product', a.data), skipsNodata(a.ignore_nodata))),
  implementScalar('mean', (a) => moments(MEAN, 'mean', dataOf('mean', a.data), skipsNodata(a.ignore_nodata))),
  implementScalar('median', (a) => medianOf(dataOf('median', a.data), skipsNodata(a.ignore_nodata))),
  implementScalar('variance', (a) => moments(VARIANCE, 'variance', dataOf('variance', a.data), skipsNodata(a.ignore_nodata))),
  implementScalar('sd', (a) => {
    const v = moments(VARIANCE, 'sd', dataOf('sd', a.data), skipsNodata(a.ignore_nodata));
    return v === null ? null : Math.sqrt(v);
  }),
  implementScalar('quantiles', quantilesOf),
  implementScalar('cummax', (a) => cumulative(CUMMAX, dataOf('cummax', a.data), skipsNodata(a.ignore_nodata))),
  implementScalar('cummin', (a) => cumulative(CUMMIN, dataOf('cummin', a.data), skipsNodata(a.ignore_nodata))),
  implementScalar('cumsum', (a) => cumulative(CUMSUM, dataOf('cumsum', a.data), skipsNodata(a.ignore_nodata))),
  implementScalar('cumproduct', (a) => cumulative(CUMPRODUCT, dataOf('cumproduct', a.data), skipsNodata(a.ignore_nodata))),
];
