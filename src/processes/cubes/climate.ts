// Climatology on the temporal dimension: climatological_normal (the mean per day of year, month,
// season or tropical season over a span of years), anomaly (the data minus the normal of its
// period) and resample_cube_temporal (each target date takes the nearest source date). No child
// processes: the values are combined in plain typed-array loops, slice by slice.
import { ApiError } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import { type ProcessContext } from '../../core/process.js';
import { ProcessException } from '../../core/errors.js';
import { type Labels } from '../../core/labels.js';
import { DataCube, type Dimension } from '../../datacube/datacube.js';
import { LazyCube, cubeOf } from '../../data/lazy.js';
import { instantOf, labelInstants, periodOf, type Period } from './aggregate.js';
import { sameGrid } from './combine.js';
import { labelKey } from './dimensions.js';
import { intersectInterval } from './extents.js';
import { slicesOf } from './common.js';

const invalid = (process: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process, parameter, reason });
const product = (xs: number[]) => xs.reduce((a, b) => a * b, 1);
const DAY = 86_400_000;

/** The position of the only temporal dimension of a cube; anything else is refused. */
function onlyTemporal(cube: DataCube, processId: string, parameter: string): number {
  const found = cube.dims.flatMap((x, i) => (x.type === 'temporal' ? [i] : []));
  if (found.length !== 1) {
    throw invalid(processId, parameter, `a data cube with exactly one temporal dimension is expected, this one has ${found.length ? found.map((i) => cube.dims[i].name).join(', ') : 'none'}`);
  }
  return found[0];
}

/** First instant (UTC) of a year, proleptic (years below 100 stay as they are). */
function yearStart(y: number): number {
  const t = new Date(0);
  t.setUTCFullYear(y, 0, 1);
  return t.getTime();
}

/** Checks that the result stays within the value limit of the run. */
function checkSize(values: number, ctx: ProcessContext, what: string): void {
  const run = ctx.run;
  if (run && values > run.maxValues) throw new ApiError('ProcessGraphComplexity', {}, `${what} gives ${values} values, more than the ${run.maxValues} allowed here. ${run.limitAdvice}`);
}

// ---------------------------------------------------------------------------------------------
// climatological_normal

type NormalPeriod = 'day' | 'month' | 'season' | 'tropical-season' | 'climatology-period';
const NORMAL_PERIODS: NormalPeriod[] = ['day', 'month', 'season', 'tropical-season', 'climatology-period'];

const pad = (n: number, w: number) => String(n).padStart(w, '0');

/** The labels of the normals, in order (day 366 only when some date falls on it). */
function normalLabels(period: NormalPeriod, leapDay: boolean): string[] {
  switch (period) {
    case 'day':
      return Array.from({ length: leapDay ? 366 : 365 }, (_, i) => pad(i + 1, 3));
    case 'month':
      return Array.from({ length: 12 }, (_, i) => pad(i + 1, 2));
    case 'season':
      return ['djf', 'mam', 'jja', 'son'];
    case 'tropical-season':
      return ['ndjfma', 'mjjaso'];
    case 'climatology-period':
      return ['climatology-period'];
  }
}

/** The normals label of an instant: the period label without its year. */
function normalLabelOf(period: NormalPeriod, t: number): string {
  if (period === 'climatology-period') return 'climatology-period';
  const label = periodOf(period, t).label;
  return label.slice(label.indexOf('-', 1) + 1);
}

/** [first, last] year of the climatology period, as integers (integer strings are accepted too). */
function yearsOf(v: unknown): [number, number] {
  const P = 'climatological_normal';
  if (!Array.isArray(v) || v.length !== 2) throw invalid(P, 'climatology_period', 'two years [first, last] are expected');
  const ys = v.map((y) => {
    const n = typeof y === 'number' ? y : typeof y === 'string' && /^-?\d{1,6}$/.test(y.trim()) ? Number(y) : NaN;
    if (!Number.isInteger(n)) throw invalid(P, 'climatology_period', `'${String(y)}' is not a year`);
    return n;
  });
  if (ys[0] >= ys[1]) throw invalid(P, 'climatology_period', `the first year (${ys[0]}) must come before the last (${ys[1]})`);
  return [ys[0], ys[1]];
}

/**
 * Which dates count for the normals. A date inside [lo, hi) counts unless its season runs past hi
 * (the December of the last winter). The season that starts before lo and ends inside the span
 * (the first winter) counts, with its part before lo, only when the data has a date in that part.
 */
function climatologySelector(period: NormalPeriod, lo: number, hi: number, instants: number[]): (t: number) => boolean {
  if (period !== 'season' && period !== 'tropical-season') return (t) => t >= lo && t < hi;
  const first = periodOf(period, lo - 1);
  const straddles = first.next > lo;
  const leadIn = straddles && instants.some((t) => t >= first.start && t < lo);
  return (t) => {
    if (t < lo) return straddles && leadIn && t >= first.start;
    if (t >= hi) return false;
    const p = periodOf(period, t);
    if (p.next > hi) return false;
    if (straddles && p.start === first.start) return leadIn;
    return true;
  };
}

// ---------------------------------------------------------------------------------------------
// anomaly

/** The part of a data label that names its normal, per period. */
const PERIOD_LABEL: Partial<Record<Period, RegExp>> = {
  hour: /^-?\d{4,}-\d{2}-\d{2}-(\d{2})$/,
  day: /^-?\d{4,}-(\d{3})$/,
  week: /^-?\d{4,}-(\d{2})$/,
  dekad: /^-?\d{4,}-(\d{2})$/,
  month: /^-?\d{4,}-(\d{2})$/,
  season: /^-?\d{4,}-(djf|mam|jja|son)$/i,
  'tropical-season': /^-?\d{4,}-(ndjfma|mjjaso)$/i,
  year: /^(-?\d{4,})$/,
  decade: /^(-?\d{4,})$/,
  'decade-ad': /^(-?\d{4,})$/,
};

/** A key under which a normals label and the period part of a data label match ('01', '1' and 1 alike). */
function normalKey(v: string | number): string {
  const s = String(v).trim().toLowerCase();
  return /^-?\d+$/.test(s) ? `n:${Number(s)}` : `s:${s}`;
}

/** The normal key of a data label: a period label (`2020-06` for month) or a date, which is put in its period. */
function dataKey(period: Period, label: string | number): string | null {
  const re = PERIOD_LABEL[period]!;
  const s = String(label).trim();
  let m = re.exec(s);
  if (!m && typeof label === 'string') {
    const t = instantOf(label);
    if (!Number.isNaN(t)) m = re.exec(periodOf(period, t).label);
  }
  return m ? normalKey(m[1]) : null;
}

// ---------------------------------------------------------------------------------------------
// resample_cube_temporal

/** Milliseconds of the labels of a temporal dimension of the target cube. */
function targetInstants(dim: Dimension): number[] {
  return dim.labels.map((l) => {
    const t = instantOf(l);
    if (Number.isNaN(t)) throw invalid('resample_cube_temporal', 'target', `the label '${String(l)}' of the temporal dimension '${dim.name}' is not a date or date-time`);
    return t;
  });
}

/** Source positions for a target instant, nearest first; ties go to the earlier date, then to the earlier position. */
function byDistance(source: number[], t: number): number[] {
  return source.map((s, i) => i).sort((i, j) => Math.abs(source[i] - t) - Math.abs(source[j] - t) || source[i] - source[j] || i - j);
}

// ---------------------------------------------------------------------------------------------

export const processes: ProcessImpl[] = [
  implement('climatological_normal', async (a, ctx) => {
    const P = 'climatological_normal';
    const period = a.get<string>('period') as NormalPeriod;
    if (!NORMAL_PERIODS.includes(period)) throw invalid(P, 'period', `'${String(period)}' is not one of ${NORMAL_PERIODS.join(', ')}`);
    const [y0, y1] = yearsOf(a.get('climatology_period'));
    const lo = yearStart(y0);
    const hi = yearStart(y1 + 1);
    let data = a.get<unknown>('data');
    if (data instanceof LazyCube) {
      // Only the dates of the span (and of a winter beginning just before it) are read.
      const from = period === 'season' || period === 'tropical-season' ? Math.min(lo, periodOf(period, lo - 1).start) : lo;
      data = data.with({ temporal: intersectInterval(data.spec.temporal, [new Date(from).toISOString(), new Date(hi).toISOString()]) });
    }
    const cube = await cubeOf(data, ctx.run, P);
    const d = onlyTemporal(cube, P, 'data');
    const instants = labelInstants(cube.dims[d], P);
    const keep = climatologySelector(period, lo, hi, instants);
    const used = instants.map((t, i) => [t, i] as const).filter(([t]) => keep(t));
    if (!used.length) throw invalid(P, 'data', `no date of the data cube lies in the climatology period ${y0}-${y1}`);
    const years = used.map(([t]) => new Date(t).getUTCFullYear());
    if (Math.min(...years) > y0 || Math.max(...years) < y1) {
      ctx.run?.log('warning', `climatological_normal: the data covers only ${Math.max(y0, Math.min(...years))}-${Math.min(y1, Math.max(...years))} of the climatology period ${y0}-${y1}`);
    }
    const keyOf = used.map(([t]) => normalLabelOf(period, t));
    const labels = normalLabels(period, keyOf.includes('366'));
    const groups = new Map<string, number[]>(labels.map((l) => [l, []]));
    used.forEach(([, i], k) => groups.get(keyOf[k])!.push(i));

    const rest = product(cube.shape.filter((_, i) => i !== d));
    checkSize(labels.length * rest, ctx, 'climatological_normal');
    const { data: outer } = cube.outermost(d);
    const slices = slicesOf(outer, cube.shape[d], rest);
    const out = new Float32Array(labels.length * rest);
    const sum = new Float64Array(rest);
    const count = new Uint32Array(rest);
    labels.forEach((l, g) => {
      sum.fill(0);
      count.fill(0);
      for (const p of groups.get(l)!) {
        const s = slices[p];
        for (let i = 0; i < rest; i++) {
          const v = s[i];
          if (v === v) {
            sum[i] += v;
            count[i]++;
          }
        }
      }
      const o = g * rest;
      for (let i = 0; i < rest; i++) out[o + i] = count[i] ? sum[i] / count[i] : NaN;
    });
    const dims = cube.dims.map((x, i) => (i === d ? { ...x, labels } : x));
    return cube.with({
      dims,
      data: DataCube.fromOutermost(
        out,
        dims.map((x) => x.labels.length),
        d,
      ),
    });
  }),
  implement('anomaly', async (a, ctx) => {
    const P = 'anomaly';
    const period = a.get<string>('period');
    const single = period === 'climatology-period' || period === 'single-period';
    if (!single && !(period in PERIOD_LABEL)) throw invalid(P, 'period', `'${String(period)}' is not a period this process knows`);
    const cube = await cubeOf(a.get('data'), ctx.run, P, 'data');
    const normals = await cubeOf(a.get('normals'), ctx.run, P, 'normals');
    const dt = onlyTemporal(cube, P, 'data');
    const nt = onlyTemporal(normals, P, 'normals');
    const tdim = cube.dims[dt];
    const ndim = normals.dims[nt];

    // Temporal positions of the normals for every data label.
    let tmap: Int32Array;
    if (single) {
      if (ndim.labels.length !== 1) throw invalid(P, 'normals', `for '${period}' the normals need exactly one temporal label, not ${ndim.labels.length}`);
      tmap = new Int32Array(tdim.labels.length);
    } else {
      const at = new Map<string, number>();
      ndim.labels.forEach((l, i) => at.set(normalKey(l), i));
      tmap = Int32Array.from(tdim.labels, (l) => {
        const key = dataKey(period as Period, l);
        if (key === null) throw invalid(P, 'data', `the label '${String(l)}' of '${tdim.name}' is neither a ${period} label nor a date`);
        return at.get(key) ?? -1;
      });
      const missing = tdim.labels.filter((_, i) => tmap[i] < 0);
      if (missing.length === tdim.labels.length && missing.length > 0) {
        throw invalid(
          P,
          'normals',
          `none of the labels of the data (${tdim.labels.slice(0, 3).join(', ')}${tdim.labels.length > 3 ? ', ...' : ''}) has a ${period} normal among ${ndim.labels.slice(0, 12).join(', ')}`,
        );
      }
      if (missing.length) ctx.run?.log('warning', `anomaly: no ${period} normal for ${missing.length} label(s) (${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', ...' : ''}); they become no-data`);
    }

    // The other dimensions of the normals must be dimensions of the data, with the data's labels.
    for (const [k, nd] of normals.dims.entries()) {
      if (k === nt) continue;
      const e = cube.dim(nd.name);
      if (!e || e.type !== nd.type) throw invalid(P, 'normals', `the normals have a dimension '${nd.name}' (${nd.type}) that the data ${e ? `has as ${e.type}` : 'lacks'}`);
    }
    const normalsSpatial = normals.dims.some((x) => x.type === 'spatial');
    if (normalsSpatial && cube.grid && normals.grid && !sameGrid(cube.grid, normals.grid)) {
      throw invalid(P, 'normals', 'the normals lie on another raster grid than the data; align them with resample_cube_spatial first');
    }
    const maps: (Int32Array | null)[] = cube.dims.map((dim, k) => {
      if (k === dt) return tmap;
      const j = normals.index(dim.name);
      if (j < 0) return null;
      const at = new Map(normals.dims[j].labels.map((l, i) => [labelKey(dim.type, l), i]));
      return Int32Array.from(dim.labels, (l) => {
        const p = at.get(labelKey(dim.type, l));
        if (p === undefined) throw invalid(P, 'normals', `the normals have no label '${String(l)}' in '${dim.name}'`);
        return p;
      });
    });
    // Normals strides per data dimension (0 where the normals repeat).
    const nStride: number[] = [];
    {
      let acc = 1;
      const s = new Array<number>(normals.dims.length);
      for (let j = normals.dims.length - 1; j >= 0; j--) {
        s[j] = acc;
        acc *= normals.shape[j];
      }
      cube.dims.forEach((dim, k) => (nStride[k] = k === dt ? s[nt] : normals.index(dim.name) < 0 ? 0 : s[normals.index(dim.name)]));
    }
    // Trailing dimensions that both cubes end with, identically labelled, are copied as blocks.
    const n = cube.dims.length;
    let m = 0;
    while (m < n && m < normals.dims.length) {
      const k = n - 1 - m;
      const j = normals.dims.length - 1 - m;
      const map = maps[k];
      if (k === dt || !map || normals.dims[j].name !== cube.dims[k].name || map.length !== normals.shape[j] || !map.every((p, i) => p === i)) break;
      m++;
    }
    const K = n - m;
    const B = product(cube.shape.slice(K));
    const cells = product(cube.shape.slice(0, K));
    const out = new Float32Array(cube.size);
    const src = cube.data;
    const nd = normals.data;
    const coords = new Int32Array(K);
    for (let cell = 0; cell < cells; cell++) {
      let o = 0;
      for (let k = 0; k < K; k++) {
        const map = maps[k];
        if (!map) continue;
        const p = map[coords[k]];
        if (p < 0) {
          o = -1;
          break;
        }
        o += p * nStride[k];
      }
      const base = cell * B;
      if (o < 0) out.fill(NaN, base, base + B);
      else for (let i = 0; i < B; i++) out[base + i] = src[base + i] - nd[o + i];
      for (let k = K - 1; k >= 0; k--) {
        if (++coords[k] < cube.shape[k]) break;
        coords[k] = 0;
      }
    }
    return cube.with({ data: out });
  }),
  implement('resample_cube_temporal', async (a, ctx) => {
    const P = 'resample_cube_temporal';
    const name = a.get<string | null>('dimension');
    const within = a.get<number | null>('valid_within');
    if (within !== null && (typeof within !== 'number' || !Number.isFinite(within) || within < 0)) throw invalid(P, 'valid_within', 'a number of days, 0 or more, or null is expected');
    const targetV = a.get<unknown>('target');
    // A deferred target is not read: its dates are known from the load plan.
    const targetDims: Dimension[] = targetV instanceof LazyCube ? [{ name: 't', type: 'temporal', labels: targetV.plan().times }] : (await cubeOf(targetV, ctx.run, P, 'target')).dims;
    let data = a.get<unknown>('data');
    // The dimensions of a deferred load, without reading it (only names and types matter here).
    const lazyDims: Dimension[] = [
      { name: 't', type: 'temporal', labels: [] },
      { name: 'bands', type: 'bands', labels: [] },
      { name: 'y', type: 'spatial', axis: 'y', labels: [] },
      { name: 'x', type: 'spatial', axis: 'x', labels: [] },
    ];
    const dataDims: Dimension[] = data instanceof LazyCube ? lazyDims : (await cubeOf(data, ctx.run, P)).dims;

    let names: string[];
    if (name !== null) {
      const dd = dataDims.find((x) => x.name === name);
      const td = targetDims.find((x) => x.name === name);
      if (!dd || !td) throw new ProcessException('DimensionNotAvailable', `the ${!dd ? 'data' : 'target'} cube has no dimension '${name}'`);
      if (dd.type !== 'temporal' || td.type !== 'temporal')
        throw new ProcessException('DimensionMismatch', `the dimension '${name}' is ${dd.type} in the data and ${td.type} in the target; both must be temporal`);
      names = [name];
    } else {
      names = dataDims.filter((x) => x.type === 'temporal' && targetDims.some((y) => y.name === x.name && y.type === 'temporal')).map((x) => x.name);
      if (!names.length) throw new ProcessException('DimensionMismatch', 'the data and the target share no temporal dimension of the same name');
    }
    if (data instanceof LazyCube && within !== null) {
      // Only source dates within reach of some target date are read.
      const ts = targetInstants(targetDims.find((x) => x.name === 't')!);
      if (ts.length) {
        const w = within * DAY;
        const from = new Date(Math.min(...ts) - w).toISOString();
        const to = new Date(Math.max(...ts) + w + 1).toISOString();
        data = data.with({ temporal: intersectInterval(data.spec.temporal, [from, to]) });
      }
    }
    let cube = await cubeOf(data, ctx.run, P);
    for (const dimName of names) {
      const d = cube.index(dimName);
      const tdim = targetDims.find((x) => x.name === dimName)!;
      const source = labelInstants(cube.dims[d], P);
      const target = targetInstants(tdim);
      const labels: Labels = [...tdim.labels];
      const dims = cube.dims.map((x, i) => (i === d ? { ...x, labels } : x));
      const rest = product(cube.shape.filter((_, i) => i !== d));
      checkSize(labels.length * rest, ctx, 'resample_cube_temporal');
      if (within === null && source.length > 0) {
        const picked = target.map((t) => byDistance(source, t)[0]);
        cube = cube.select(d, picked).with({ dims });
        continue;
      }
      const { data: outer } = cube.outermost(d);
      const slices = slicesOf(outer, cube.shape[d], rest);
      const out = new Float32Array(labels.length * rest).fill(NaN);
      const w = (within ?? 0) * DAY;
      target.forEach((t, j) => {
        const o = j * rest;
        for (const p of byDistance(source, t)) {
          if (Math.abs(source[p] - t) > w) break;
          const s = slices[p];
          for (let i = 0; i < rest; i++) {
            const v = s[i];
            if (out[o + i] !== out[o + i] && Number.isFinite(v)) out[o + i] = v;
          }
        }
      });
      cube = cube.with({
        dims,
        data: DataCube.fromOutermost(
          out,
          dims.map((x) => x.labels.length),
          d,
        ),
      });
    }
    return cube;
  }),
];
