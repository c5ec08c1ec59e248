// Array processes: building, reading, searching, filtering, sorting and gap-filling arrays, plus the
// array reducers first/last/count/all/any. Labeled arrays carry their labels as a non-enumerable
// property (withLabels/labelsOf); a process keeps them where its definition gives a labeled result.
// Scalar forms may be handed one reused input array per pixel: they never return or change it.
import { ApiError } from '../core/errors.js';
import { define, defineScalar } from './define.js';
import { type ProcessDef } from '../core/process.js';
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

/** A single value where an array is asked for (array_concat): a number, string, boolean or null. */
const ONE_VALUE = { type: ['number', 'string', 'boolean', 'null'] };

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

const ARRAY_LABEL_CONFLICT = 'A label occurs in both arrays; rename or remove it first.';

export const processes: ProcessDef[] = [
  defineScalar(
    'array_append',
    {
      summary: 'Add a value at the end of an array',
      description:
        'Returns a new array with `value` after the last element. For a labeled array the new element gets `label`, or the next index as a number when `label` is null; a label already in use raises LabelExists. A label for an unlabeled array raises ArrayNotLabeled.',
      parameters: {
        data: 'The array to extend.',
        value: 'The value to add at the end.',
        label: 'Label of the new element (labeled arrays only); null uses the next index.',
      },
      returns: 'A new array one element longer, labeled if the input is labeled.',
      exceptions: {
        LabelExists: 'The array already has an element with this label.',
        ArrayNotLabeled: 'A label was given but the array has no labels.',
      },
    },
    (a) => {
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
    },
  ),

  define(
    'array_apply',
    {
      summary: 'Map a child process over an array',
      description:
        'Runs the child process once per element, with the element, its index, its label (null for unlabeled arrays) and the context, and collects the answers in order. The result has as many elements as the input and keeps its labels.',
      parameters: {
        data: 'The array whose elements are processed.',
        process: 'Child process that turns one element into the new value.',
        context: 'Any value handed to the child process unchanged.',
      },
      returns: 'An array of the child process answers, labeled like the input.',
    },
    async (args) => {
      const data = arrayArg(args.get('data'), 'array_apply');
      const cb = args.callback('process');
      if (!cb) throw invalid('array_apply', 'process', 'a child process is required');
      const labels = labelsOf(data);
      const context = args.get('context');
      const out = new Array<unknown>(data.length);
      for (let i = 0; i < data.length; i++) {
        out[i] = await cb({ x: data[i], index: i, label: labels ? labels[i] ?? null : null, context });
      }
      return withLabels(out, labels);
    },
  ),

  {
    ...defineScalar(
      'array_concat',
      {
        summary: 'Join two arrays',
        description:
          'Returns the elements of the first array followed by those of the second. Labels are kept only when both arrays are labeled, and then a label found in both raises ArrayLabelConflict; otherwise the result is unlabeled. A single value (a number, a string, a boolean or null) in place of an array counts as an array of that one value, as the clients write `array_concat(data, ndvi)` in a child process.',
        parameters: {
          array1: 'The array that comes first.',
          array2: 'The array appended after it.',
        },
        returns: 'The joined array.',
        exceptions: {
          ArrayLabelConflict: ARRAY_LABEL_CONFLICT,
        },
      },
      (a) => {
        const a1 = oneOrArray(a.array1, 'array1');
        const a2 = oneOrArray(a.array2, 'array2');
        const out = a1.concat(a2);
        const l1 = labelsOf(a1);
        const l2 = labelsOf(a2);
        if (!l1 || !l2) return out;
        const seen = new Set<string | number>(l1);
        for (const l of l2) if (seen.has(l)) throw new ProcessException('ArrayLabelConflict', `both arrays have the label '${String(l)}'`);
        return withLabels(out, [...l1, ...l2]);
      },
    ),
    // A single value counts as an array of one (validation lets it through).
    accepts: { array1: ONE_VALUE, array2: ONE_VALUE },
  },

  defineScalar(
    'array_contains',
    {
      summary: 'Test whether an array holds a value',
      description:
        'True if an element equals `value` with the strict typing of eq (no type conversion, case-sensitive strings, dates compared as plain text, NaN equal to nothing), false otherwise. A null value, or an array or object, is never found, and nested arrays are not searched.',
      parameters: {
        data: 'The array to search.',
        value: 'The value to look for; null always gives false.',
      },
      returns: 'Whether the value occurs in the array.',
    },
    (a) => {
      const data = arrayArg(a.data, 'array_contains');
      const value = a.value;
      if (!comparable(value)) return false;
      for (let i = 0; i < data.length; i++) if (data[i] === value) return true;
      return false;
    },
  ),

  defineScalar(
    'array_create',
    {
      summary: 'Build a new array',
      description:
        'Returns a new unlabeled array holding the elements of `data`, repeated `repeat` times one after the other. Without arguments the array is empty.',
      parameters: {
        data: 'The elements of the new array (default: none).',
        repeat: 'How many times the elements are written in a row, at least 1.',
      },
      returns: 'The new array.',
    },
    (a) => {
      const data = arrayArg(a.data ?? [], 'array_create');
      const repeat = a.repeat ?? 1;
      if (typeof repeat !== 'number' || !Number.isInteger(repeat) || repeat < 1) throw invalid('array_create', 'repeat', 'an integer of at least 1 is required');
      const n = data.length;
      const out = new Array<unknown>(n * repeat);
      for (let r = 0, o = 0; r < repeat; r++) for (let i = 0; i < n; i++) out[o++] = data[i];
      return out;
    },
  ),

  defineScalar(
    'array_element',
    {
      summary: 'Pick one element of an array',
      description:
        'Returns the element at the zero-based `index`, or the element with the given `label` of a labeled array; exactly one of the two must be given. A missing element raises ArrayElementNotAvailable, or gives null when `return_nodata` is true.',
      parameters: {
        data: 'The array to read from.',
        index: 'Zero-based position of the element.',
        label: 'Label of the element (labeled arrays only).',
        return_nodata: 'Give null instead of an error when there is no such element.',
      },
      returns: 'The selected element.',
      exceptions: {
        ArrayElementNotAvailable: 'The array has no element at this index or with this label.',
        ArrayElementParameterMissing: 'Give either `index` or `label` to select an element.',
        ArrayElementParameterConflict: 'Give only one of `index` and `label`, not both.',
        ArrayNotLabeled: 'The array has no labels, so `label` cannot be used; select by `index`.',
      },
    },
    (a) => {
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
    },
  ),

  define(
    'array_filter',
    {
      summary: 'Keep the elements passing a condition',
      description:
        'Runs the condition child process per element (with value, index, label and context) and keeps, in order, the elements for which it answers true; false or null drops them. Labels of the kept elements are kept.',
      parameters: {
        data: 'The array to filter.',
        condition: 'Child process answering true for elements to keep.',
        context: 'Any value handed to the condition unchanged.',
      },
      returns: 'The kept elements, labeled if the input is labeled.',
    },
    async (args) => {
      const data = arrayArg(args.get('data'), 'array_filter');
      const cb = args.callback('condition');
      if (!cb) throw invalid('array_filter', 'condition', 'a child process is required');
      const labels = labelsOf(data);
      const context = args.get('context');
      const out: unknown[] = [];
      const kept: Labels | null = labels ? [] : null;
      for (let i = 0; i < data.length; i++) {
        const label = labels ? labels[i] ?? null : null;
        if ((await cb({ x: data[i], index: i, label, context })) === true) {
          out.push(data[i]);
          if (kept) kept.push(labels![i]);
        }
      }
      return withLabels(out, kept);
    },
  ),

  defineScalar(
    'array_find',
    {
      summary: 'Index of a value in an array',
      description:
        'Returns the zero-based index of the first element equal to `value` (the last one with `reverse`), or null if there is none. Equality is strict as in eq (no type conversion, case-sensitive, NaN matches nothing); a null, array or object value always gives null.',
      parameters: {
        data: 'The array to search.',
        value: 'The value to look for.',
        reverse: 'Search from the end and give the index of the last match.',
      },
      returns: 'The index of the match, or null.',
    },
    (a) => {
      const data = arrayArg(a.data, 'array_find');
      const value = a.value;
      if (!comparable(value)) return null;
      if (a.reverse === true) {
        for (let i = data.length - 1; i >= 0; i--) if (data[i] === value) return i;
      } else {
        for (let i = 0; i < data.length; i++) if (data[i] === value) return i;
      }
      return null;
    },
  ),

  defineScalar(
    'array_interpolate_linear',
    {
      summary: 'Fill inner gaps by linear interpolation',
      description:
        'Replaces every null or NaN that lies between two numbers with the value on the straight line through its nearest numerical neighbours; leading and trailing gaps stay as they are. The x positions are the labels when they are all numbers or all dates/date-times (assumed sorted), otherwise the indices. Labels are kept.',
      parameters: {
        data: 'Numbers with gaps (null or NaN) to fill; labels, if numeric or temporal, give the positions.',
      },
      returns: 'The array with its inner gaps filled, labeled like the input.',
    },
    (a) => interpolateLinear(arrayArg(a.data, 'array_interpolate_linear')),
  ),

  defineScalar(
    'array_labels',
    {
      summary: 'Labels of an array',
      description: 'Returns the labels of a labeled array in element order, or the zero-based indices 0..n-1 for an unlabeled array.',
      parameters: {
        data: 'The array whose labels are wanted.',
      },
      returns: 'The labels, or the indices.',
    },
    (a) => {
      const data = arrayArg(a.data, 'array_labels');
      const labels = labelsOf(data);
      if (labels) return labels.slice();
      const out = new Array<number>(data.length);
      for (let i = 0; i < out.length; i++) out[i] = i;
      return out;
    },
  ),

  define(
    'count',
    {
      summary: 'Count array elements',
      description:
        'Counts the valid elements by default (condition null): all but null, NaN and ±infinity, so strings, booleans, arrays and objects count. With condition `true` every element counts; with a child process only the elements for which it answers true count.',
      parameters: {
        data: 'The array whose elements are counted.',
        condition: 'null to count valid elements, true to count all, or a child process selecting elements.',
        context: 'Any value handed to the condition unchanged.',
      },
      returns: 'The number of counted elements.',
    },
    (args) => {
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
    },
  ),

  defineScalar(
    'first',
    {
      summary: 'First element of an array',
      description:
        'Returns the first element that is not null, or null if there is none (including for an empty array). With `ignore_nodata` false it returns the first element whatever it is.',
      parameters: {
        data: 'The array to read.',
        ignore_nodata: 'Skip null elements (default); false takes the first element as it is.',
      },
      returns: 'The first (non-null) element, or null.',
    },
    (a) => {
      const data = arrayArg(a.data, 'first');
      if (a.ignore_nodata === false) return data.length ? data[0] ?? null : null;
      for (let i = 0; i < data.length; i++) if (data[i] !== null && data[i] !== undefined) return data[i];
      return null;
    },
  ),

  defineScalar(
    'last',
    {
      summary: 'Last element of an array',
      description:
        'Returns the last element that is not null, or null if there is none (including for an empty array). With `ignore_nodata` false it returns the last element whatever it is.',
      parameters: {
        data: 'The array to read.',
        ignore_nodata: 'Skip null elements (default); false takes the last element as it is.',
      },
      returns: 'The last (non-null) element, or null.',
    },
    (a) => {
      const data = arrayArg(a.data, 'last');
      if (a.ignore_nodata === false) return data.length ? data[data.length - 1] ?? null : null;
      for (let i = data.length - 1; i >= 0; i--) if (data[i] !== null && data[i] !== undefined) return data[i];
      return null;
    },
  ),

  defineScalar(
    'order',
    {
      summary: 'Sorting permutation of an array',
      description:
        'Returns the zero-based indices of the elements in sorted order (ascending, or descending with `asc` false); equal values keep their original order. Dates and date-times are compared as points in time. null and NaN count as no-data: dropped by default, put last with `nodata` true or first with false, in their original order.',
      parameters: {
        data: 'Numbers, dates or date-times (and no-data) to rank.',
        asc: 'Ascending order (default); false for descending.',
        nodata: 'Where no-data goes: null drops it, true puts it last, false first.',
      },
      returns: 'The permutation, as zero-based indices into the input.',
    },
    (a) => {
      const data = arrayArg(a.data, 'order');
      const p = permutation(data, a.asc !== false, a.nodata === true ? true : a.nodata === false ? false : null, 'order');
      const out = new Array<number>(p.length);
      for (let i = 0; i < p.length; i++) out[i] = p[i];
      return out;
    },
  ),

  defineScalar(
    'rearrange',
    {
      summary: 'Reorder an array by a permutation',
      description:
        'Returns the elements of `data` at the zero-based positions listed in `order`, in that order; positions may be left out or repeated. The result is unlabeled; a position outside the array is an invalid argument.',
      parameters: {
        data: 'The array to reorder.',
        order: 'Zero-based positions into `data`, e.g. from order().',
      },
      returns: 'The reordered array.',
    },
    (a) => {
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
    },
  ),

  defineScalar(
    'sort',
    {
      summary: 'Sort an array',
      description:
        'Returns the elements in ascending order (descending with `asc` false); equal values keep their original order. Dates and date-times are compared as points in time. null and NaN count as no-data: dropped by default, put last with `nodata` true or first with false. The result is unlabeled.',
      parameters: {
        data: 'Numbers, dates or date-times (and no-data) to sort.',
        asc: 'Ascending order (default); false for descending.',
        nodata: 'Where no-data goes: null drops it, true puts it last, false first.',
      },
      returns: 'The sorted array.',
    },
    (a) => {
      const data = arrayArg(a.data, 'sort');
      const p = permutation(data, a.asc !== false, a.nodata === true ? true : a.nodata === false ? false : null, 'sort');
      const out = new Array<unknown>(p.length);
      for (let i = 0; i < p.length; i++) out[i] = data[p[i]] ?? null;
      return out;
    },
  ),

  defineScalar(
    'all',
    {
      summary: 'Whether every value is true',
      description:
        'False if any value is false, otherwise true; an empty array gives true. null values are skipped by default; with `ignore_nodata` false a null makes the answer null unless a false is present. Numbers count as booleans (0 false, others true), as in data cubes.',
      parameters: {
        data: 'Booleans (or null) to combine.',
        ignore_nodata: 'Skip null values (default); false lets them make the answer null.',
      },
      returns: 'true, false, or null.',
    },
    (a) => {
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
    },
  ),

  defineScalar(
    'any',
    {
      summary: 'Whether at least one value is true',
      description:
        'True if any value is true, otherwise false; an empty array gives false. null values are skipped by default; with `ignore_nodata` false a null makes the answer null unless a true is present. Numbers count as booleans (0 false, others true), as in data cubes.',
      parameters: {
        data: 'Booleans (or null) to combine.',
        ignore_nodata: 'Skip null values (default); false lets them make the answer null.',
      },
      returns: 'true, false, or null.',
    },
    (a) => {
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
    },
  ),

  // Proposals (experimental)

  defineScalar(
    'array_create_labeled',
    {
      summary: 'Build a labeled array',
      description:
        'Pairs the values of `data` with the labels of `labels`, position by position, into a labeled array. Both must have the same length (else ArrayLengthMismatch), and labels must be unique.',
      parameters: {
        data: 'The values of the new array.',
        labels: 'One unique label (number or string) per value.',
      },
      returns: 'The labeled array.',
      exceptions: {
        ArrayLengthMismatch: '`data` and `labels` have different numbers of elements.',
      },
    },
    (a) => {
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
    },
  ),

  defineScalar(
    'array_find_label',
    {
      summary: 'Index of a label in a labeled array',
      description: 'Returns the zero-based index of the element carrying `label` (strict comparison, so 1 and "1" differ), or null if no element has it or the array is not labeled.',
      parameters: {
        data: 'The labeled array to search.',
        label: 'The label to look for.',
      },
      returns: 'The index of the label, or null.',
    },
    (a) => {
      const labels = labelsOf(arrayArg(a.data, 'array_find_label'));
      if (!labels) return null;
      const k = labelIndex(labels, a.label);
      return k >= 0 ? k : null;
    },
  ),

  defineScalar(
    'array_modify',
    {
      summary: 'Insert, replace or remove array elements',
      description:
        'Removes `length` elements (fewer at the end of the array) starting at `index` and inserts `values` there; an index beyond the array end raises ArrayElementNotAvailable. Labels are kept when both arrays are labeled or one of them is empty; a label of `values` already carried by a kept element raises ArrayLabelConflict. Otherwise the result is unlabeled.',
      parameters: {
        data: 'The array to change.',
        values: 'The elements to insert at `index` (may be empty).',
        index: 'Zero-based position where elements are removed and inserted; the array length appends.',
        length: 'How many elements to remove from `index` on (default 0).',
      },
      returns: 'The changed array.',
      exceptions: {
        ArrayElementNotAvailable: 'The index lies beyond the end of the array.',
        ArrayLabelConflict: ARRAY_LABEL_CONFLICT,
      },
    },
    (a) => {
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
    },
  ),
];
