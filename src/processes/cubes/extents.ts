// Spatial and temporal extents as users write them (bounding boxes with a CRS, GeoJSON,
// left-closed time intervals with open ends) turned into what the data layer takes.
import { ApiError } from '../../core/errors.js';
import { ensureCrs, CrsUnknownError, transformBox } from '../../geometry/crs.js';
import type { Extent } from '../../data/load.js';
import { gridBox, type Grid } from '../../core/grid.js';
import { ProcessException } from '../../core/errors.js';

const invalid = (processId: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process: processId, parameter, reason });

/** An EPSG code from a `crs` value (integer code, "EPSG:code" or a URN); WKT is not understood. */
export function epsgOf(crs: unknown, processId: string, parameter: string): number {
  let code: number | null = null;
  if (typeof crs === 'number') code = crs;
  else if (typeof crs === 'string') {
    const m = /(?:^|EPSG:{1,2}|\/EPSG\/0\/)(\d{4,6})$/i.exec(crs.trim());
    if (m) code = Number(m[1]);
  }
  if (code === null) throw invalid(processId, parameter, 'the CRS must be given as an EPSG code');
  try {
    ensureCrs(code);
  } catch (e) {
    if (e instanceof CrsUnknownError) throw invalid(processId, parameter, `EPSG:${code} is not a CRS this back-end knows`);
    throw e;
  }
  return code;
}

/** A bounding box argument ({west, south, east, north, crs}). */
export function bboxOf(v: unknown, processId: string, parameter: string): Extent {
  const o = v as Record<string, unknown>;
  const n = (k: string) => {
    if (typeof o[k] !== 'number' || !Number.isFinite(o[k])) throw invalid(processId, parameter, `'${k}' must be a number`);
    return o[k];
  };
  const e: Extent = { west: n('west'), south: n('south'), east: n('east'), north: n('north'), crs: o.crs === undefined || o.crs === null ? 4326 : epsgOf(o.crs, processId, parameter) };
  if (e.west >= e.east || e.south >= e.north) throw invalid(processId, parameter, 'west must be less than east and south less than north');
  return e;
}

const instant = (s: string) => Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(s) ? `${s}T00:00:00Z` : /^\d{4}$/.test(s) ? `${s}-01-01T00:00:00Z` : s);

/** A left-closed temporal interval [start, end) with open ends as null, checked and normalised. */
export function intervalOf(v: unknown, processId: string, parameter: string): [string | null, string | null] {
  if (!Array.isArray(v) || v.length !== 2) throw invalid(processId, parameter, 'an array of two dates (start included, end excluded) is expected');
  const [a, b] = v as unknown[];
  for (const x of [a, b]) {
    if (x !== null && (typeof x !== 'string' || Number.isNaN(instant(x)))) throw invalid(processId, parameter, `'${String(x)}' is not a date or date-time`);
  }
  if (a === null && b === null) throw invalid(processId, parameter, 'at least one end of the interval must be given');
  if (a !== null && b !== null && instant(a as string) >= instant(b as string)) {
    throw new ProcessException('TemporalExtentEmpty', 'the end of the temporal interval must be later than its start');
  }
  const iso = (x: unknown) => (x === null ? null : new Date(instant(x as string)).toISOString());
  return [iso(a), iso(b)];
}

/** Whether an instant (ms) lies in [start, end). */
export function inInterval(t: number, [start, end]: [string | null, string | null]): boolean {
  return (start === null || t >= Date.parse(start)) && (end === null || t < Date.parse(end));
}

/** Intersection of two intervals (null ends are open). */
export function intersectInterval(a: [string | null, string | null] | null, b: [string | null, string | null]): [string | null, string | null] {
  if (!a) return b;
  const max = (x: string | null, y: string | null) => (x === null ? y : y === null ? x : Date.parse(x) >= Date.parse(y) ? x : y);
  const min = (x: string | null, y: string | null) => (x === null ? y : y === null ? x : Date.parse(x) <= Date.parse(y) ? x : y);
  return [max(a[0], b[0]), min(a[1], b[1])];
}

/** The columns and rows of a grid whose pixel centres lie inside an extent. */
export function windowOf(grid: Grid, extent: Extent): { col0: number; col1: number; row0: number; row1: number } {
  const box = transformBox([extent.west, extent.south, extent.east, extent.north], extent.crs ?? 4326, grid.epsg);
  const t = grid.transform;
  // centre of column c: t0 + (c + 0.5) * t1 ; inside when box0 <= centre <= box2
  const col0 = Math.max(0, Math.ceil((box[0] - t[0]) / t[1] - 0.5));
  const col1 = Math.min(grid.width - 1, Math.floor((box[2] - t[0]) / t[1] - 0.5));
  const row0 = Math.max(0, Math.ceil((box[3] - t[3]) / t[5] - 0.5));
  const row1 = Math.min(grid.height - 1, Math.floor((box[1] - t[3]) / t[5] - 0.5));
  return { col0, col1, row0, row1 };
}

export { gridBox };
