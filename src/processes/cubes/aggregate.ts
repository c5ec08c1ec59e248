// Aggregations over time by user intervals (aggregate_temporal) or calendar periods
// (aggregate_temporal_period; aggregate_spatial is in zonal.ts). The reducer runs once per interval
// or period, on pixel vectors: each call sees the values of one group for every position of the
// other dimensions at once.
import { ApiError } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import { type Callback, type ProcessContext } from '../../core/process.js';
import { ProcessException } from '../../core/errors.js';
import { type Labels } from '../../core/labels.js';
import { DataCube, type Dimension } from '../../datacube/datacube.js';
import { LazyCube, cubeOf } from '../../data/lazy.js';
import { dimIndex, joinSlices, reduceVectors, requireCallback, slicesOf } from './common.js';
import { intersectInterval } from './extents.js';

const invalid = (processId: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process: processId, parameter, reason });

// ---------------------------------------------------------------------------------------------
// Shared: the temporal dimension, instants, grouping

/** The temporal dimension to aggregate: the named one, or the only temporal one. */
function temporalDim(cube: DataCube, name: string | null): number {
  if (name !== null) {
    const d = dimIndex(cube, name);
    if (cube.dims[d].type !== 'temporal') throw new ProcessException('DimensionNotAvailable', `the dimension '${name}' is of type ${cube.dims[d].type}, not temporal`);
    return d;
  }
  const found = cube.dims.flatMap((x, i) => (x.type === 'temporal' ? [i] : []));
  if (found.length === 0) throw new ProcessException('DimensionNotAvailable', 'the data cube has no temporal dimension');
  if (found.length > 1) {
    throw new ProcessException('TooManyDimensions', `the data cube has ${found.length} temporal dimensions (${found.map((i) => cube.dims[i].name).join(', ')}); name one in \`dimension\``);
  }
  return found[0];
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const ZONE = /(Z|[+-]\d{2}:?\d{2})$/i;

/** Milliseconds of a date or date-time (UTC when no zone is given); NaN if it is neither. */
export function instantOf(v: string | number): number {
  if (typeof v === 'number') return v;
  const s = v.trim();
  if (DATE.test(s)) return Date.parse(`${s}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/i.test(s)) return NaN;
  return Date.parse(ZONE.test(s) ? s : `${s}Z`);
}

/** The instants of a temporal dimension's labels; a label that is no date is refused. */
export function labelInstants(dim: Dimension, processId: string): number[] {
  return dim.labels.map((l) => {
    const t = instantOf(l);
    if (Number.isNaN(t)) throw invalid(processId, 'data', `the label '${String(l)}' of the temporal dimension '${dim.name}' is not a date or date-time`);
    return t;
  });
}

interface Group {
  label: string | number;
  /** Positions along the dimension, in cube order. */
  positions: number[];
}

const product = (xs: number[]) => xs.reduce((a, b) => a * b, 1);

/** Checks that the aggregated cube stays within the value limit of the run. */
function checkSize(groups: number, rest: number, ctx: ProcessContext): void {
  const run = ctx.run;
  if (run && groups * rest > run.maxValues) {
    throw new ApiError('ProcessGraphComplexity', {}, `The aggregation gives ${groups} labels x ${rest} values (${groups * rest}), more than the ${run.maxValues} allowed here. ${run.limitAdvice}`);
  }
}

/**
 * Replaces dimension d by one label per group: the reducer gets, for each group, the slices of
 * its positions (labelled as in the cube). Empty groups share one call on an empty array.
 */
async function aggregateGroups(cube: DataCube, d: number, groups: Group[], cb: Callback, context: unknown, processId: string, ctx: ProcessContext): Promise<DataCube> {
  const rest = product(cube.shape.filter((_, i) => i !== d));
  checkSize(groups.length, rest, ctx);
  const { data } = cube.outermost(d);
  const slices = slicesOf(data, cube.shape[d], rest);
  const labels = cube.dims[d].labels;
  const out: Float32Array[] = [];
  let empty: Float32Array | null = null;
  for (const g of groups) {
    if (g.positions.length === 0) {
      empty ??= await reduceVectors(cb, [], [], rest, context, processId);
      out.push(empty);
    } else {
      out.push(
        await reduceVectors(
          cb,
          g.positions.map((p) => slices[p]),
          g.positions.map((p) => labels[p]),
          rest,
          context,
          processId,
        ),
      );
    }
  }
  const dims = cube.dims.map((x, i) => (i === d ? { ...x, labels: groups.map((g) => g.label) } : x));
  return cube.with({
    dims,
    data: DataCube.fromOutermost(
      joinSlices(out, rest),
      dims.map((x) => x.labels.length),
      d,
    ),
  });
}

// ---------------------------------------------------------------------------------------------
// aggregate_temporal: user intervals

/** One end of an interval: an instant (ms), a time of day (ms since midnight), or open. */
type Bound = { kind: 'instant'; ms: number; text: string } | { kind: 'time'; ms: number; text: string } | null;

const DAY = 86_400_000;

function boundOf(v: unknown, processId: string): Bound {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string') throw invalid(processId, 'intervals', `'${String(v)}' is not a date, date-time or time`);
  const time = /^(\d{2}):(\d{2}):(\d{2})$/.exec(v.trim());
  if (time) {
    const [h, m, s] = time.slice(1).map(Number);
    if (h > 23 || m > 59 || s > 59) throw invalid(processId, 'intervals', `'${v}' is not a valid time of day`);
    return { kind: 'time', ms: ((h * 60 + m) * 60 + s) * 1000, text: v };
  }
  const ms = instantOf(v);
  if (Number.isNaN(ms)) throw invalid(processId, 'intervals', `'${v}' is not a date, date-time or time`);
  return { kind: 'instant', ms, text: v };
}

interface Interval {
  start: Bound;
  end: Bound;
  contains(t: number): boolean;
}

function intervalsOf(v: unknown, processId: string): Interval[] {
  if (!Array.isArray(v) || v.length === 0) throw invalid(processId, 'intervals', 'a non-empty array of [start, end] intervals is expected');
  return v.map((iv, k) => {
    if (!Array.isArray(iv) || iv.length !== 2) throw invalid(processId, 'intervals', `interval ${k} must be an array [start, end]`);
    const start = boundOf(iv[0], processId);
    const end = boundOf(iv[1], processId);
    if (!start && !end) throw invalid(processId, 'intervals', `interval ${k} has neither start nor end`);
    if (start && end && start.kind !== end.kind) throw invalid(processId, 'intervals', `interval ${k} mixes a time of day with a date`);
    const kind = (start ?? end)!.kind;
    const s = start?.ms ?? (kind === 'time' ? 0 : -Infinity);
    const e = end?.ms ?? (kind === 'time' ? DAY : Infinity);
    if (kind === 'instant') {
      if (!(s < e)) throw new ProcessException('TemporalExtentEmpty', `interval ${k} is empty: its end must be later than its start`);
      return { start, end, contains: (t: number) => t >= s && t < e };
    }
    // Times of day: an end before the start wraps over midnight.
    if (s === e) throw new ProcessException('TemporalExtentEmpty', `interval ${k} is empty: start and end are the same time`);
    const tod = (t: number) => ((t % DAY) + DAY) % DAY;
    return { start, end, contains: s < e ? (t: number) => tod(t) >= s && tod(t) < e : (t: number) => tod(t) >= s || tod(t) < e };
  });
}

/** The labels of the intervals: the given ones, else the starts (which must then differ). */
function intervalLabels(intervals: Interval[], given: Labels, processId: string): Labels {
  if (given.length > 0) {
    if (given.length !== intervals.length) throw invalid(processId, 'labels', `${given.length} labels for ${intervals.length} intervals; give one label per interval`);
    const seen = new Set(given.map((l) => `${typeof l}:${l}`));
    if (seen.size !== given.length) throw new ProcessException('DistinctDimensionLabelsRequired', 'the labels must all differ');
    return given;
  }
  const seen = new Set<string>();
  return intervals.map((iv, k) => {
    if (!iv.start) throw invalid(processId, 'labels', `interval ${k} has an open start, so it needs a label in \`labels\``);
    const key = `${iv.start.kind}:${iv.start.ms}`;
    if (seen.has(key)) throw new ProcessException('DistinctDimensionLabelsRequired', `several intervals start at ${iv.start.text}; give distinct labels in \`labels\``);
    seen.add(key);
    return iv.start.text;
  });
}

// ---------------------------------------------------------------------------------------------
// aggregate_temporal_period: calendar periods

export type Period = 'hour' | 'day' | 'week' | 'dekad' | 'month' | 'season' | 'tropical-season' | 'year' | 'decade' | 'decade-ad';
const PERIODS: Period[] = ['hour', 'day', 'week', 'dekad', 'month', 'season', 'tropical-season', 'year', 'decade', 'decade-ad'];

/** UTC instant of a (proleptic) date; month and day may overflow as in Date.UTC, years 0-99 stay as they are. */
function utc(y: number, m: number, d = 1, h = 0): number {
  const t = new Date(0);
  t.setUTCFullYear(y, m, d);
  t.setUTCHours(h, 0, 0, 0);
  return t.getTime();
}

const pad = (n: number, w: number) => (n < 0 ? '-' + String(-n).padStart(w, '0') : String(n).padStart(w, '0'));

/** The period holding instant `ms`: its label, start and the start of the next period. */
export function periodOf(period: Period, ms: number): { label: string; start: number; next: number } {
  const t = new Date(ms);
  const y = t.getUTCFullYear();
  const m = t.getUTCMonth();
  const d = t.getUTCDate();
  const Y = pad(y, 4);
  switch (period) {
    case 'hour': {
      const start = utc(y, m, d, t.getUTCHours());
      return { label: `${Y}-${pad(m + 1, 2)}-${pad(d, 2)}-${pad(t.getUTCHours(), 2)}`, start, next: start + 3_600_000 };
    }
    case 'day': {
      const start = utc(y, m, d);
      return { label: `${Y}-${pad(Math.round((start - utc(y, 0, 1)) / DAY) + 1, 3)}`, start, next: utc(y, m, d + 1) };
    }
    case 'week': {
      // ISO 8601: weeks start on Monday; a week belongs to the year of its Thursday.
      const start = utc(y, m, d - ((t.getUTCDay() + 6) % 7));
      const thursday = new Date(start + 3 * DAY);
      const wy = thursday.getUTCFullYear();
      const week = Math.floor(Math.round((thursday.getTime() - utc(wy, 0, 1)) / DAY) / 7) + 1;
      return { label: `${pad(wy, 4)}-${pad(week, 2)}`, start, next: utc(y, m, d - ((t.getUTCDay() + 6) % 7) + 7) };
    }
    case 'dekad': {
      const k = d <= 10 ? 0 : d <= 20 ? 1 : 2;
      return { label: `${Y}-${pad(m * 3 + k + 1, 2)}`, start: utc(y, m, 1 + 10 * k), next: k < 2 ? utc(y, m, 11 + 10 * k) : utc(y, m + 1, 1) };
    }
    case 'month':
      return { label: `${Y}-${pad(m + 1, 2)}`, start: utc(y, m, 1), next: utc(y, m + 1, 1) };
    case 'season': {
      // Seasons start in December, March, June and September; a winter is labelled by the year of its December.
      const first = m === 11 ? 11 : m < 2 ? -1 : m - ((m - 2) % 3);
      const names: Record<number, string> = { [-1]: 'djf', 11: 'djf', 2: 'mam', 5: 'jja', 8: 'son' };
      return { label: `${pad(first === -1 ? y - 1 : y, 4)}-${names[first]}`, start: utc(y, first, 1), next: utc(y, first + 3, 1) };
    }
    case 'tropical-season': {
      // November to April (labelled by the year of its November) and May to October.
      const first = m >= 4 && m <= 9 ? 4 : m >= 10 ? 10 : -2;
      const label = first === 4 ? `${Y}-mjjaso` : `${pad(first === -2 ? y - 1 : y, 4)}-ndjfma`;
      return { label, start: utc(y, first, 1), next: utc(y, first + 6, 1) };
    }
    case 'year':
      return { label: Y, start: utc(y, 0, 1), next: utc(y + 1, 0, 1) };
    case 'decade': {
      const y0 = Math.floor(y / 10) * 10;
      return { label: pad(y0, 4), start: utc(y0, 0, 1), next: utc(y0 + 10, 0, 1) };
    }
    case 'decade-ad': {
      const y0 = Math.floor((y - 1) / 10) * 10 + 1;
      return { label: pad(y0, 4), start: utc(y0, 0, 1), next: utc(y0 + 10, 0, 1) };
    }
  }
}

/** Every period from the one of the earliest label to the one of the latest, with the positions in each. */
function periodGroups(period: Period, instants: number[]): Group[] {
  if (instants.length === 0) return [];
  const lo = Math.min(...instants);
  const hi = Math.max(...instants);
  const groups: Group[] = [];
  const byLabel = new Map<string, Group>();
  for (let p = periodOf(period, lo); p.start <= hi; p = periodOf(period, p.next)) {
    const g = { label: p.label, positions: [] };
    groups.push(g);
    byLabel.set(p.label, g);
  }
  instants.forEach((t, i) => byLabel.get(periodOf(period, t).label)!.positions.push(i));
  return groups;
}

export const processes: ProcessImpl[] = [
  implement('aggregate_temporal', async (a, ctx) => {
    const id = 'aggregate_temporal';
    const cb = requireCallback(a.callback('reducer'), id, 'reducer');
    const intervals = intervalsOf(a.get('intervals'), id);
    const labels = intervalLabels(intervals, a.get<Labels | null>('labels') ?? [], id);
    const name = a.get<string | null>('dimension');
    let data = a.get<unknown>('data');
    // A deferred load only needs the dates that some interval covers.
    if (data instanceof LazyCube && (name === null || name === 't') && intervals.every((iv) => iv.start?.kind === 'instant' && iv.end?.kind === 'instant')) {
      const lo = Math.min(...intervals.map((iv) => iv.start!.ms));
      const hi = Math.max(...intervals.map((iv) => iv.end!.ms));
      data = data.with({ temporal: intersectInterval(data.spec.temporal, [new Date(lo).toISOString(), new Date(hi).toISOString()]) });
    }
    const cube = await cubeOf(data, ctx.run, id);
    const d = temporalDim(cube, name);
    const instants = labelInstants(cube.dims[d], id);
    const groups: Group[] = intervals.map((iv, k) => ({ label: labels[k], positions: instants.flatMap((t, i) => (iv.contains(t) ? [i] : [])) }));
    return aggregateGroups(cube, d, groups, cb, a.get('context'), id, ctx);
  }),
  implement('aggregate_temporal_period', async (a, ctx) => {
    const id = 'aggregate_temporal_period';
    const cb = requireCallback(a.callback('reducer'), id, 'reducer');
    const period = a.get<string>('period') as Period;
    if (!PERIODS.includes(period)) throw invalid(id, 'period', `'${String(period)}' is not one of ${PERIODS.join(', ')}`);
    const cube = await cubeOf(a.get('data'), ctx.run, id);
    const d = temporalDim(cube, a.get<string | null>('dimension'));
    const groups = periodGroups(period, labelInstants(cube.dims[d], id));
    return aggregateGroups(cube, d, groups, cb, a.get('context'), id, ctx);
  }),
];
