// Array processes: building, reading, searching, filtering, sorting and gap-filling arrays, plus the
// array reducers first/last/count/all/any. Labeled arrays carry their labels as a non-enumerable
// property (withLabels/labelsOf); a process keeps them where its definition gives a labeled result.
// Scalar forms may be handed one reused input array per pixel: they never return or change it.
import { ApiError } from '../core/errors.js';
import { implement, implementScalar, type ProcessImpl } from './implement.js';
import { ProcessException } from '../core/errors.js';
import { dateTimeMs, labelsOf, withLabels, type Labels } from '../core/labels.js';

// ---------------------------------------------------------------------------------------------
// Helpers

function invalid(process: string, parameter: string, reason: string): ApiError {
  return new ApiError('ProcessParameterInvalid', { process, parameter, reason });
}

/** The argument as an array, or a ProcessParameterInvalid error naming it. */
function arrayArg(v: unknown, process: string, parameter = 'data'): unknown[] {
  if (!Array.isArray(v)) throw invalid(process, parameter, 'an array is required');
  return v;
}

/** An array argument of array_concat, a single value counting as an array of one. */
function oneOrArray(v: unknown, parameter: string): unknown[] {
  if (Array.isArray(v)) return v;
  if (v === null || typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return [v];
  throw invalid('array_concat', parameter, 'an array (or a single value) is required');
}

/** The position of `label` among `labels` (strict equality), or -1. */
function labelIndex(labels: Labels, label: unknown): number {
  for (let i = 0; i < labels.length; i++) if (labels[i] === label) return i;
  return -1;
}

/** Whether `v` is a scalar that eq() can compare: a number, boolean or string. */
const comparable = (v: unknown): boolean => typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean';

// ---------------------------------------------------------------------------------------------
// Sorting: a stable sort of element indices by numeric keys (no comparator closures).

const INSERTION_MAX = 24;

/** Sorts idx[0..m) stably by keys, ascending or descending. */
function sortIndices(idx: Int32Array, m: number, keys: Float64Array, desc: boolean): void {
  if (m <= INSERTION_MAX) {
    insertionSort(idx, 0, m, keys, desc);
    return;
  }
  for (let s = 0; s < m; s += INSERTION_MAX) insertionSort(idx, s, Math.min(s + INSERTION_MAX, m), keys, desc);
  let src: Int32Array = idx;
  let dst: Int32Array = new Int32Array(m);
  for (let width = INSERTION_MAX; width < m; width *= 2) {
    for (let lo = 0; lo < m; lo += 2 * width) {
      const mid = Math.min(lo + width, m);
      const hi = Math.min(lo + 2 * width, m);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) {
        // take from the right run only when strictly before: ties keep their original order
        const a = src[i];
        const b = src[j];
        const rightFirst = desc ? keys[b] > keys[a] : keys[b] < keys[a];
        dst[k++] = rightFirst ? b : a;
        if (rightFirst) j++;
        else i++;
      }
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    const t = src;
    src = dst;
    dst = t;
  }
  if (src !== idx) idx.set(src.subarray(0, m));
}

function insertionSort(idx: Int32Array, from: number, to: number, keys: Float64Array, desc: boolean): void {
  for (let i = from + 1; i < to; i++) {
    const cur = idx[i];
    const key = keys[cur];
    let j = i - 1;
    while (j >= from && (desc ? key > keys[idx[j]] : key < keys[idx[j]])) {
      idx[j + 1] = idx[j];
      j--;
    }
    idx[j + 1] = cur;
  }
}

/**
 * The permutation that sorts `data` (numbers, dates and date-times; null and NaN are no-data):
 * sorted valid elements, with the no-data elements dropped (nodata null), appended (true) or
 * prepended (false) in their original order.
 */
function permutation(data: unknown[], asc: boolean, nodata: boolean | null, process: string): Int32Array {
  const n = data.length;
  const keys = new Float64Array(n);
  const valid = new Int32Array(n);
  let m = 0;
  let missing = 0;
  for (let i = 0; i < n; i++) {
    const v = data[i];
    let k: number;
    if (typeof v === 'number') k = v;
    else if (v === null || v === undefined) k = NaN;
    else if (typeof v === 'string') {
      k = dateTimeMs(v);
      if (k !== k) throw invalid(process, 'data', `'${v}' is neither a number nor a date or date-time`);
    } else throw invalid(process, 'data', `only numbers, dates, date-times and no-data can be sorted, not ${Array.isArray(v) ? 'an array' : typeof v}`);
    keys[i] = k;
    if (k === k) valid[m++] = i;
    else missing++;
  }
  sortIndices(valid, m, keys, !asc);
  if (nodata === null || missing === 0) return m === n ? valid : valid.slice(0, m);
  const out = new Int32Array(n);
  let o = nodata ? m : 0;
  for (let i = 0; i < n; i++) if (keys[i] !== keys[i]) out[o++] = i;
  out.set(valid.subarray(0, m), nodata ? 0 : missing);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Interpolation positions of labeled arrays (computed once per labels list).

const positionCache = new WeakMap<Labels, Float64Array | null>();

/** Positions of the labels on the x axis (numbers, or dates as milliseconds), or null for indices. */
function labelPositions(labels: Labels): Float64Array | null {
  let pos = positionCache.get(labels);
  if (pos !== undefined && (pos === null || pos.length === labels.length)) return pos;
  pos = new Float64Array(labels.length);
  let numbers = 0;
  let dates = 0;
  for (let i = 0; i < labels.length; i++) {
    const l = labels[i];
    let p = NaN;
    if (typeof l === 'number') {
      p = l;
      numbers++;
    } else if (typeof l === 'string') {
      p = dateTimeMs(l);
      dates++;
    }
    if (!Number.isFinite(p)) {
      pos = null;
      break;
    }
    pos[i] = p;
  }
  if (pos && numbers > 0 && dates > 0) pos = null; // mixed kinds have no common axis
  positionCache.set(labels, pos);
  return pos;
}

/** A gap to fill: no-data or NaN. */
const isGap = (v: unknown): boolean => v === null || v === undefined || (typeof v === 'number' && v !== v);

function interpolateLinear(data: unknown[]): unknown[] {
  const n = data.length;
  const labels = labelsOf(data);
  const out = new Array<unknown>(n);
  for (let i = 0; i < n; i++) out[i] = data[i];
  const pos = labels && labels.length === n ? labelPositions(labels) : null;
  let prev = -1; // index of the last numerical value seen
  for (let i = 0; i < n; i++) {
    const v = data[i];
    if (typeof v !== 'number' || v !== v) continue;
    if (prev >= 0 && i - prev > 1) {
      const y0 = data[prev] as number;
      const y1 = v;
      const x0 = pos ? pos[prev] : prev;
      const dx = pos ? pos[i] - x0 : i - prev;
      for (let k = prev + 1; k < i; k++) {
        if (!isGap(data[k])) continue;
        if (y0 === y1) {
          out[k] = y0;
          continue;
        }
        const t = dx !== 0 ? ((pos ? pos[k] : k) - x0) / dx : (k - prev) / (i - prev);
        out[k] = y0 + (y1 - y0) * t;
      }
    }
    prev = i;
  }
  return withLabels(out, labels);
}

// ---------------------------------------------------------------------------------------------
// Processes

export const processes: ProcessImpl[] = [
  implementScalar('array_append', (a) => {
    const data = arrayArg(a.data, 'array_append');
    const labels = labelsOf(data);
    let label = a.label as string | number | null;
    if (!labels) {
      if (label !== null && label !== undefined) throw new ProcessException('ArrayNotLabeled', `the array is not labeled, so label '${String(label)}' cannot be used`);
      const out = data.slice();
      out.push(a.value);
      return out;
    }
    if (label === null || label === undefined) label = data.length;
    if (labelIndex(labels, label) >= 0) throw new ProcessException('LabelExists', `the array already has the label '${String(label)}'`);
    const out = data.slice();
    out.push(a.value);
    return withLabels(out, [...labels, label]);
  }),

  implement('array_apply', async (args) => {
    const data = arrayArg(args.get('data'), 'array_apply');
    const cb = args.callback('process');
    if (!cb) throw invalid('array_apply', 'process', 'a child process is required');
    const labels = labelsOf(data);
    const context = args.get('context');
    const out = new Array<unknown>(data.length);
    for (let i = 0; i < data.length; i++) {
      out[i] = await cb({ x: data[i], index: i, label: labels ? (labels[i] ?? null) : null, context });
    }
    return withLabels(out, labels);
  }),

  implementScalar('array_concat', (a) => {
    const a1 = oneOrArray(a.array1, 'array1');
    const a2 = oneOrArray(a.array2, 'array2');
    const out = a1.concat(a2);
    const l1 = labelsOf(a1);
    const l2 = labelsOf(a2);
    if (!l1 || !l2) return out;
    const seen = new Set<string | number>(l1);
    for (const l of l2) if (seen.has(l)) throw new ProcessException('ArrayLabelConflict', `both arrays have the label '${String(l)}'`);
    return withLabels(out, [...l1, ...l2]);
  }),

  implementScalar('array_contains', (a) => {
    const data = arrayArg(a.data, 'array_contains');
    const value = a.value;
    if (!comparable(value)) return false;
    for (let i = 0; i < data.length; i++) if (data[i] === value) return true;
    return false;
  }),

  implementScalar('array_create', (a) => {
    const data = arrayArg(a.data ?? [], 'array_create');
    const repeat = a.repeat ?? 1;
    if (typeof repeat !== 'number' || !Number.isInteger(repeat) || repeat < 1) throw invalid('array_create', 'repeat', 'an integer of at least 1 is required');
    const n = data.length;
    const out = new Array<unknown>(n * repeat);
    for (let r = 0, o = 0; r < repeat; r++) for (let i = 0; i < n; i++) out[o++] = data[i];
    return out;
  }),

  implementScalar('array_element', (a) => {
    const data = arrayArg(a.data, 'array_element');
    const index = a.index;
    const label = a.label;
    const byIndex = index !== null && index !== undefined;
    const byLabel = label !== null && label !== undefined;
    if (byIndex && byLabel) throw new ProcessException('ArrayElementParameterConflict', 'both `index` and `label` are given; use one of them');
    if (!byIndex && !byLabel) throw new ProcessException('ArrayElementParameterMissing', 'neither `index` nor `label` is given');
    let k: number;
    if (byIndex) k = typeof index === 'number' && Number.isInteger(index) && index >= 0 && index < data.length ? index : -1;
    else {
      const labels = labelsOf(data);
      if (!labels) throw new ProcessException('ArrayNotLabeled', `the array is not labeled, so label '${String(label)}' cannot be used`);
      k = labelIndex(labels, label);
    }
    if (k >= 0) return data[k];
    if (a.return_nodata === true) return null;
    throw new ProcessException('ArrayElementNotAvailable', byIndex ? `the array has no element at index ${String(index)}` : `the array has no element labeled '${String(label)}'`);
  }),

  implement('array_filter', async (args) => {
    const data = arrayArg(args.get('data'), 'array_filter');
    const cb = args.callback('condition');
    if (!cb) throw invalid('array_filter', 'condition', 'a child process is required');
    const labels = labelsOf(data);
    const context = args.get('context');
    const out: unknown[] = [];
    const kept: Labels | null = labels ? [] : null;
    for (let i = 0; i < data.length; i++) {
      const label = labels ? (labels[i] ?? null) : null;
      if ((await cb({ x: data[i], index: i, label, context })) === true) {
        out.push(data[i]);
        if (kept) kept.push(labels![i]);
      }
    }
    return withLabels(out, kept);
  }),

  implementScalar('array_find', (a) => {
    const data = arrayArg(a.data, 'array_find');
    const value = a.value;
    if (!comparable(value)) return null;
    if (a.reverse === true) {
      for (let i = data.length - 1; i >= 0; i--) if (data[i] === value) return i;
    } else {
      for (let i = 0; i < data.length; i++) if (data[i] === value) return i;
    }
    return null;
  }),

  implementScalar('array_interpolate_linear', (a) => interpolateLinear(arrayArg(a.data, 'array_interpolate_linear'))),

  implementScalar('array_labels', (a) => {
    const data = arrayArg(a.data, 'array_labels');
    const labels = labelsOf(data);
    if (labels) return labels.slice();
    const out = new Array<number>(data.length);
    for (let i = 0; i < out.length; i++) out[i] = i;
    return out;
  }),

  implement('count', (args) => {
    const data = arrayArg(args.get('data'), 'count');
    const cb = args.callback('condition');
    if (cb) {
      const context = args.get('context');
      return (async () => {
        let n = 0;
        for (let i = 0; i < data.length; i++) {
          if ((await cb({ x: data[i], context })) === true) n++;
        }
        return n;
      })();
    }
    const condition = args.get('condition');
    if (condition === true) return data.length;
    if (condition !== null && condition !== undefined) throw invalid('count', 'condition', 'use null, true or a child process');
    let n = 0;
    for (let i = 0; i < data.length; i++) {
      const v = data[i];
      if (v === null || v === undefined) continue;
      if (typeof v === 'number' && !Number.isFinite(v)) continue;
      n++;
    }
    return n;
  }),

  implementScalar('first', (a) => {
    const data = arrayArg(a.data, 'first');
    if (a.ignore_nodata === false) return data.length ? (data[0] ?? null) : null;
    for (let i = 0; i < data.length; i++) if (data[i] !== null && data[i] !== undefined) return data[i];
    return null;
  }),

  implementScalar('last', (a) => {
    const data = arrayArg(a.data, 'last');
    if (a.ignore_nodata === false) return data.length ? (data[data.length - 1] ?? null) : null;
    for (let i = data.length - 1; i >= 0; i--) if (data[i] !== null && data[i] !== undefined) return data[i];
    return null;
  }),

  implementScalar('order', (a) => {
    const data = arrayArg(a.data, 'order');
    const p = permutation(data, a.asc !== false, a.nodata === true ? true : a.nodata === false ? false : null, 'order');
    const out = new Array<number>(p.length);
    for (let i = 0; i < p.length; i++) out[i] = p[i];
    return out;
  }),

  implementScalar('rearrange', (a) => {
    const data = arrayArg(a.data, 'rearrange');
    const order = arrayArg(a.order, 'rearrange', 'order');
    const out = new Array<unknown>(order.length);
    for (let i = 0; i < order.length; i++) {
      const k = order[i];
      if (typeof k !== 'number' || !Number.isInteger(k) || k < 0 || k >= data.length) {
        throw invalid('rearrange', 'order', `${JSON.stringify(k)} is not a position in an array of ${data.length} elements`);
      }
      out[i] = data[k];
    }
    return out;
  }),

  implementScalar('sort', (a) => {
    const data = arrayArg(a.data, 'sort');
    const p = permutation(data, a.asc !== false, a.nodata === true ? true : a.nodata === false ? false : null, 'sort');
    const out = new Array<unknown>(p.length);
    for (let i = 0; i < p.length; i++) out[i] = data[p[i]] ?? null;
    return out;
  }),

  implementScalar('all', (a) => {
    const data = arrayArg(a.data, 'all');
    let sawNull = false;
    for (let i = 0; i < data.length; i++) {
      const v = data[i];
      if (v === false || v === 0) return false;
      if (v === true || (typeof v === 'number' && v === v)) continue;
      if (v === null || v === undefined || v !== v) sawNull = true;
      else throw invalid('all', 'data', `only booleans and no-data can be combined, not ${Array.isArray(v) ? 'an array' : typeof v}`);
    }
    return sawNull && a.ignore_nodata === false ? null : true;
  }),

  implementScalar('any', (a) => {
    const data = arrayArg(a.data, 'any');
    let sawNull = false;
    for (let i = 0; i < data.length; i++) {
      const v = data[i];
      if (v === true || (typeof v === 'number' && v === v && v !== 0)) return true;
      if (v === false || v === 0) continue;
      if (v === null || v === undefined || v !== v) sawNull = true;
      else throw invalid('any', 'data', `only booleans and no-data can be combined, not ${Array.isArray(v) ? 'an array' : typeof v}`);
    }
    return sawNull && a.ignore_nodata === false ? null : false;
  }),

  // Proposals (experimental)

  implementScalar('array_create_labeled', (a) => {
    const data = arrayArg(a.data, 'array_create_labeled');
    const labels = arrayArg(a.labels, 'array_create_labeled', 'labels');
    if (data.length !== labels.length) throw new ProcessException('ArrayLengthMismatch', `${data.length} values but ${labels.length} labels`);
    const seen = new Set<unknown>();
    for (const l of labels) {
      if (typeof l !== 'number' && typeof l !== 'string') throw invalid('array_create_labeled', 'labels', 'labels must be numbers or strings');
      if (seen.has(l)) throw invalid('array_create_labeled', 'labels', `the label '${String(l)}' occurs more than once`);
      seen.add(l);
    }
    return withLabels(data.slice(), labels.slice() as Labels);
  }),

  implementScalar('array_find_label', (a) => {
    const labels = labelsOf(arrayArg(a.data, 'array_find_label'));
    if (!labels) return null;
    const k = labelIndex(labels, a.label);
    return k >= 0 ? k : null;
  }),

  implementScalar('array_modify', (a) => {
    const data = arrayArg(a.data, 'array_modify');
    const values = arrayArg(a.values, 'array_modify', 'values');
    const index = a.index;
    const length = a.length ?? 0;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0) throw invalid('array_modify', 'index', 'a non-negative integer is required');
    if (typeof length !== 'number' || !Number.isInteger(length) || length < 0) throw invalid('array_modify', 'length', 'a non-negative integer is required');
    if (index > data.length) throw new ProcessException('ArrayElementNotAvailable', `index ${index} is beyond the end of an array of ${data.length} elements`);
    const end = Math.min(index + length, data.length);
    const out = data.slice(0, index).concat(values, data.slice(end));
    const ld = labelsOf(data);
    const lv = labelsOf(values);
    let labels: Labels | null = null;
    if (ld && lv) {
      const kept = new Set<string | number>();
      for (let i = 0; i < ld.length; i++) if (i < index || i >= end) kept.add(ld[i]);
      for (const l of lv) if (kept.has(l)) throw new ProcessException('ArrayLabelConflict', `the label '${String(l)}' is already in the array`);
      labels = ld.slice(0, index).concat(lv, ld.slice(end));
    } else if (ld && values.length === 0) labels = ld.slice(0, index).concat(ld.slice(end));
    else if (lv && data.length === 0) labels = lv.slice();
    return withLabels(out, labels);
  }),
];
