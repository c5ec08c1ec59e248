// Coordinate reference systems by EPSG code, with proj4 doing the maths. Definitions come from the
// epsg-index package (one small JSON file per code, read on first use) and are cached.
import proj4 from 'proj4';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const indexDir = path.join(path.dirname(require.resolve('epsg-index/package.json')), 's');

export class CrsUnknownError extends Error {
  constructor(readonly epsg: number) {
    super(`EPSG:${epsg} is not a coordinate reference system we know`);
  }
}

const known = new Set<number>([4326, 3857]);

/** Makes `EPSG:code` known to proj4; throws CrsUnknownError for codes without a definition. */
export function ensureCrs(epsg: number): string {
  const name = `EPSG:${epsg}`;
  if (known.has(epsg)) return name;
  if (!Number.isInteger(epsg) || epsg <= 0) throw new CrsUnknownError(epsg);
  let def: string | undefined;
  try {
    def = (JSON.parse(readFileSync(path.join(indexDir, `${epsg}.json`), 'utf8')) as { proj4?: string }).proj4;
  } catch {
    def = undefined;
  }
  if (!def) throw new CrsUnknownError(epsg);
  proj4.defs(name, def.replace(/\s*\+type=crs/, ''));
  known.add(epsg);
  return name;
}

export interface CrsInfo {
  epsg: number;
  name: string;
  /** Geographic (degrees, lon/lat) rather than projected. */
  geographic: boolean;
}

export function crsInfo(epsg: number): CrsInfo {
  ensureCrs(epsg);
  let name = `EPSG:${epsg}`;
  try {
    name = (JSON.parse(readFileSync(path.join(indexDir, `${epsg}.json`), 'utf8')) as { name: string }).name;
  } catch {
    /* 4326 and 3857 always exist in the index; keep the code as name otherwise */
  }
  const def = proj4.defs(`EPSG:${epsg}`) as { projName?: string } | undefined;
  return { epsg, name, geographic: def?.projName === 'longlat' };
}

export type Transform = (x: number, y: number) => [number, number];

const transforms = new Map<string, Transform>();

/** A point transform from one EPSG code to another (x/y order: lon/lat for geographic CRSs). */
export function transformer(from: number, to: number): Transform {
  const key = `${from}>${to}`;
  let t = transforms.get(key);
  if (!t) {
    if (from === to) t = (x, y) => [x, y];
    else {
      const conv = proj4(ensureCrs(from), ensureCrs(to));
      t = (x, y) => conv.forward<[number, number]>([x, y]);
    }
    transforms.set(key, t);
  }
  return t;
}

/**
 * The box in `to` that holds `box` (in `from`), found by transforming points densely along its
 * edges (a projected box's edges are curves in the other CRS).
 */
export function transformBox(box: [number, number, number, number], from: number, to: number, steps = 21): [number, number, number, number] {
  // The same boxes come back many times (an item's box for every chunk of a job, and every band):
  // the last ones are kept, by their exact numbers.
  const key = `${from}>${to}/${steps}:${box[0]},${box[1]},${box[2]},${box[3]}`;
  const kept = boxesDone.get(key);
  if (kept) return [...kept];
  const out = transformBoxPoints(box, from, to, steps);
  if (boxesDone.size >= BOXES_KEPT) boxesDone.delete(boxesDone.keys().next().value!);
  boxesDone.set(key, out);
  return [...out];
}

/** Boxes transformed lately (transformBox), oldest first. */
const boxesDone = new Map<string, [number, number, number, number]>();
const BOXES_KEPT = 4096;

function transformBoxPoints(box: [number, number, number, number], from: number, to: number, steps: number): [number, number, number, number] {
  const t = transformer(from, to);
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  const [x0, y0, x1, y1] = box;
  for (let i = 0; i < steps; i++) {
    const f = i / (steps - 1);
    for (const [x, y] of [
      [x0 + (x1 - x0) * f, y0],
      [x0 + (x1 - x0) * f, y1],
      [x0, y0 + (y1 - y0) * f],
      [x1, y0 + (y1 - y0) * f],
    ]) {
      const [px, py] = t(x, y);
      if (!Number.isFinite(px) || !Number.isFinite(py)) continue;
      if (px < minX) minX = px;
      if (py < minY) minY = py;
      if (px > maxX) maxX = px;
      if (py > maxY) maxY = py;
    }
  }
  return [minX, minY, maxX, maxY];
}

/**
 * The CRS as OGC WKT 1 (GDAL's flavour), from the epsg-index entry; for formats that carry the CRS
 * as text (netCDF's spatial_ref / crs_wkt). Throws CrsUnknownError when the index has no WKT.
 */
export function crsWkt(epsg: number): string {
  if (!Number.isInteger(epsg) || epsg <= 0) throw new CrsUnknownError(epsg);
  let wkt: string | undefined;
  try {
    wkt = (JSON.parse(readFileSync(path.join(indexDir, `${epsg}.json`), 'utf8')) as { wkt?: string }).wkt;
  } catch {
    wkt = undefined;
  }
  if (!wkt) throw new CrsUnknownError(epsg);
  return wkt;
}

/** The unit of a CRS's coordinates as proj4 names it ('m', 'degrees', 'us-ft', ...). */
export function crsUnits(epsg: number): string {
  ensureCrs(epsg);
  const def = proj4.defs(`EPSG:${epsg}`) as { units?: string; projName?: string } | undefined;
  return def?.units ?? (def?.projName === 'longlat' ? 'degrees' : 'm');
}

/** The EPSG code named by a WKT (its outermost ID or AUTHORITY), or null when it names none. */
export function epsgOfWkt(wkt: string): number | null {
  // The last ID/AUTHORITY at the outermost level is the CRS's own (nested ones name its parts).
  let depth = 0;
  let found: number | null = null;
  const re = /(ID|AUTHORITY)\[\s*"EPSG"\s*,\s*"?(\d+)"?\s*\]|\[|\]/gi;
  for (const m of wkt.matchAll(re)) {
    if (m[0] === '[') depth++;
    else if (m[0] === ']') depth--;
    else if (depth === 1) found = Number(m[2]);
  }
  return found;
}
