// inspect: writes a message and a short description of a value to the run's log and passes the
// value on untouched. Cubes are described like the `cube:dimensions` of a collection plus a few
// statistics; a deferred load is described by what it will read, without reading it.
import { ApiError } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import type { ProcessContext } from '../../core/process.js';
import type { LogLevel } from '../../core/run-context.js';
import { DataCube, type Dimension } from '../../datacube/datacube.js';
import { LazyCube } from '../../data/lazy.js';
import { PixelArray } from '../../datacube/pixels.js';

const LEVELS: LogLevel[] = ['error', 'warning', 'info', 'debug'];
/** Labels, array elements and object keys listed in full up to this count. */
const LIST = 20;

/** Count of values, of no-data (NaN) among them, and min, max and mean of the others. */
function statistics(arrays: Float32Array[]): { values: number; nodata: number; min: number | null; max: number | null; mean: number | null } {
  let values = 0;
  let nodata = 0;
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  for (const a of arrays) {
    values += a.length;
    for (let i = 0; i < a.length; i++) {
      const v = a[i];
      if (v !== v) {
        nodata++;
        continue;
      }
      if (v < min) min = v;
      if (v > max) max = v;
      sum += v;
    }
  }
  const valid = values - nodata;
  return { values, nodata, min: valid ? min : null, max: valid ? max : null, mean: valid ? sum / valid : null };
}

/** A short list: all items up to LIST, else the first and last few with the count. */
function shortList<T>(xs: readonly T[]): T[] | { count: number; first: T[]; last: T[] } {
  if (xs.length <= LIST) return [...xs];
  return { count: xs.length, first: xs.slice(0, 5), last: xs.slice(-5) };
}

function dimensionSummary(cube: DataCube, dim: Dimension): Record<string, unknown> {
  const n = dim.labels.length;
  if (dim.type === 'spatial' && cube.grid && (dim.axis === 'x' || dim.axis === 'y')) {
    const t = cube.grid.transform;
    const [origin, step, count] = dim.axis === 'x' ? [t[0], t[1], cube.grid.width] : [t[3], t[5], cube.grid.height];
    const edge = origin + count * step;
    return { type: 'spatial', axis: dim.axis, extent: [Math.min(origin, edge), Math.max(origin, edge)], step: Math.abs(step), reference_system: cube.grid.epsg, count: n };
  }
  const out: Record<string, unknown> = { type: dim.type };
  if (dim.axis) out.axis = dim.axis;
  if (dim.type === 'temporal' && n > 0) {
    const sorted = dim.labels.map(String).sort();
    out.extent = [sorted[0], sorted[n - 1]];
  }
  out.count = n;
  out.values = shortList(dim.labels);
  return out;
}

function cubeSummary(cube: DataCube): Record<string, unknown> {
  const dims: Record<string, unknown> = {};
  for (const d of cube.dims) dims[d.name] = dimensionSummary(cube, d);
  const out: Record<string, unknown> = { type: 'datacube', 'cube:dimensions': dims, shape: [...cube.shape], statistics: statistics([cube.data]) };
  if (cube.grid) out.grid = { epsg: cube.grid.epsg, width: cube.grid.width, height: cube.grid.height, transform: [...cube.grid.transform] };
  if (cube.features) out.geometries = cube.features.length;
  return out;
}

/** What a deferred load will read: the request and its plan (dates, bands, grid, value count). */
function lazySummary(c: LazyCube): Record<string, unknown> {
  const s = c.spec;
  const out: Record<string, unknown> = {
    type: 'datacube',
    loaded: false,
    collection: s.collection,
    extent: s.extent,
    temporal: s.temporal,
    bands: s.bands,
    target: s.target,
    resampling: s.resampling,
    masks: s.mask ? s.mask.length : 0,
  };
  try {
    const p = c.plan();
    out.plan = {
      dates: shortList(p.times),
      bands: p.bands.map((b) => b.name),
      grid: { epsg: p.grid.epsg, width: p.grid.width, height: p.grid.height, transform: [...p.grid.transform] },
      values: p.values,
    };
  } catch (e) {
    out.plan = { error: e instanceof Error ? e.message : String(e) };
  }
  return out;
}

/** A compact, JSON-friendly description of any value a process graph can hold. */
export function summarize(v: unknown, depth = 0): unknown {
  if (v instanceof LazyCube) return lazySummary(v);
  if (v instanceof DataCube) return cubeSummary(v);
  if (v instanceof Float32Array) return { type: 'pixel values', pixels: v.length, statistics: statistics([v]) };
  if (v instanceof PixelArray) return { type: 'pixel arrays', pixels: v.pixels, length: v.items.length, labels: v.labels ? shortList(v.labels) : null, statistics: statistics(v.items) };
  if (v === undefined) return null;
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (v === null || typeof v !== 'object') return v;
  if (depth >= 3) return Array.isArray(v) ? { type: 'array', length: v.length } : { type: 'object' };
  if (Array.isArray(v)) {
    const labels = (v as { labels?: unknown[] }).labels;
    const items = v.length <= LIST ? v.map((x) => summarize(x, depth + 1)) : { count: v.length, first: v.slice(0, 5).map((x) => summarize(x, depth + 1)), last: v.slice(-5).map((x) => summarize(x, depth + 1)) };
    return labels ? { labels: shortList(labels), values: items } : items;
  }
  const keys = Object.keys(v);
  const out: Record<string, unknown> = {};
  for (const k of keys.slice(0, LIST)) out[k] = summarize((v as Record<string, unknown>)[k], depth + 1);
  if (keys.length > LIST) out['...'] = `${keys.length - LIST} more keys`;
  return out;
}

/**
 * Contexts that have logged already. Inside a child process on pixels, a process without a pixel
 * form runs once per pixel with the same context: only the first of those calls writes a log entry.
 */
const logged = new WeakSet<ProcessContext>();

export const processes: ProcessImpl[] = [
  implement('inspect', (a, ctx) => {
    const data = a.get<unknown>('data');
    const level = a.get<LogLevel>('level');
    if (!LEVELS.includes(level)) throw new ApiError('ProcessParameterInvalid', { process: 'inspect', parameter: 'level', reason: `'${String(level)}' is not one of ${LEVELS.join(', ')}` });
    const message = a.get<unknown>('message');
    const code = a.get<unknown>('code');
    if (typeof message !== 'string') throw new ApiError('ProcessParameterInvalid', { process: 'inspect', parameter: 'message', reason: 'a string is expected' });
    if (typeof code !== 'string') throw new ApiError('ProcessParameterInvalid', { process: 'inspect', parameter: 'code', reason: 'a string is expected' });
    const run = ctx.run;
    if (!run || logged.has(ctx)) return data;
    logged.add(ctx);
    run.log(level, message || `inspect (node ${ctx.nodeId})`, { code, data: summarize(data) });
    return data;
  }),
];
