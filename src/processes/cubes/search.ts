// Loads of collections whose items are searched (STAC API collections, load_stac on a STAC API):
// the area, dates and property conditions of the load become one item search, and the items found
// become the in-memory catalog the lazy load reads, after their dates and properties are checked
// again here (an API may ignore a filter it does not know).
import { ApiError } from '../../core/errors.js';
import type { RunContext } from '../../core/run-context.js';
import type { Extent } from '../../data/load.js';
import { readerKey, type CatalogSnapshot, type CollectionMeta, type FilterOp, type ItemMeta, type PropertyCondition, type RemoteSearch, type SourceAccess } from '../../core/catalog.js';
import { transformBox } from '../../geometry/crs.js';
import { gridBox, type Box, type Grid } from '../../core/grid.js';
import type { Callback, ProcessArgs } from '../../core/process.js';

const OPS: Record<string, [FilterOp, FilterOp]> = {
  // process id -> [op with value as x, op with value as y]
  eq: ['=', '='],
  neq: ['<>', '<>'],
  lt: ['<', '>'],
  lte: ['<=', '>='],
  gt: ['>', '<'],
  gte: ['>=', '<='],
};

const isValueRef = (v: unknown) => !!v && typeof v === 'object' && (v as { from_parameter?: unknown }).from_parameter === 'value';
const isScalar = (v: unknown): v is string | number | boolean => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/**
 * The conditions of load_collection's `properties` that an item search can express: a child graph
 * of one comparison (eq, neq, lt, lte, gt, gte) of `value` with a literal, or `between`. Others are
 * only checked here, on the items found.
 */
export function searchConditions(properties: Record<string, unknown> | null): PropertyCondition[] {
  const out: PropertyCondition[] = [];
  for (const [property, v] of Object.entries(properties ?? {})) {
    const pg = (v as { process_graph?: Record<string, any> })?.process_graph;
    if (!pg || typeof pg !== 'object') continue;
    const nodes = Object.values(pg);
    if (nodes.length !== 1) continue;
    const { process_id: id, arguments: a = {} } = nodes[0] ?? {};
    if (id in OPS && a.delta === undefined && a.case_sensitive !== false) {
      if (isValueRef(a.x) && isScalar(a.y)) out.push({ property, op: OPS[id][0], value: a.y });
      else if (isValueRef(a.y) && isScalar(a.x)) out.push({ property, op: OPS[id][1], value: a.x });
    } else if (id === 'between' && isValueRef(a.x) && isScalar(a.min) && isScalar(a.max)) {
      out.push({ property, op: '>=', value: a.min }, { property, op: a.exclude_max === true ? '<' : '<=', value: a.max });
    }
  }
  return out;
}

const WEB_MERCATOR_HALF = 20037508.342789244;
/** A tile searches the area of its ancestor this many times larger (3 zoom levels up), so its neighbours reuse the search. */
const TILE_AREA_FACTOR = 8;

function intersect(a: Box, b: Box): Box | null {
  const r: Box = [Math.max(a[0], b[0]), Math.max(a[1], b[1]), Math.min(a[2], b[2]), Math.min(a[3], b[3])];
  return r[2] > r[0] && r[3] > r[1] ? r : null;
}

/** A Web Mercator region grown to the aligned block of TILE_AREA_FACTOR x TILE_AREA_FACTOR regions around it. */
function paddedArea(region: Grid): Box {
  const b = gridBox(region);
  if (region.epsg !== 3857) return transformBox(b, region.epsg, 4326);
  const cell = (b[2] - b[0]) * TILE_AREA_FACTOR;
  const o = -WEB_MERCATOR_HALF;
  const snap = (v: number, up: boolean) => Math.max(o, Math.min(-o, o + (up ? Math.ceil((v - o) / cell - 1e-9) : Math.floor((v - o) / cell + 1e-9)) * cell));
  return transformBox([snap(b[0], false), snap(b[1], false), snap(b[2], true), snap(b[3], true)], 3857, 4326);
}

const toInstant = (s: string) => (/^\d{4}-\d{2}-\d{2}$/.test(s) ? `${s}T00:00:00Z` : new Date(s).toISOString());

/** The catalog of one load of a searched collection: its items for the load's area, dates and properties. */
export async function searchedSource(
  access: SourceAccess | undefined,
  meta: CollectionMeta,
  o: { extent: Extent | null; temporal: [string | null, string | null] | null; properties: Record<string, unknown> | null; args: ProcessArgs; processId: string; run: RunContext },
  search: (req: Omit<RemoteSearch, 'collection'>) => Promise<ItemMeta[]>,
): Promise<CatalogSnapshot> {
  const mode = o.run.mode ?? 'sync';
  const wgs = o.extent ? transformBox([o.extent.west, o.extent.south, o.extent.east, o.extent.north], o.extent.crs ?? 4326, 4326) : null;
  if (mode === 'sync' && !wgs) {
    throw new ApiError(
      'ProcessGraphComplexity',
      {},
      `Collection '${meta.id}' is searched in a STAC API, which may hold millions of items: a synchronous ${o.processId} of it needs a spatial_extent. Give one, or run the graph as a batch job (its loads are bounded by the cap on items).`,
    );
  }
  let bbox: Box | null = wgs;
  let fallbackBbox: Box | null = null;
  if (mode === 'tile' && o.run.region) {
    const tile = transformBox(gridBox(o.run.region), o.run.region.epsg, 4326);
    const padded = paddedArea(o.run.region);
    if (wgs && wgs[2] - wgs[0] <= padded[2] - padded[0] && wgs[3] - wgs[1] <= padded[3] - padded[1]) {
      // A small extent (a service's area of interest) is searched whole: one search for all its tiles.
      bbox = intersect(tile, wgs) ? wgs : null;
    } else {
      bbox = wgs ? intersect(padded, wgs) : padded;
      fallbackBbox = wgs ? intersect(tile, wgs) : tile;
    }
  }
  const checks: [string, Callback][] = [];
  for (const [name, v] of Object.entries(o.properties ?? {})) {
    const cb = v && typeof v === 'object' && 'process_graph' in v ? o.args.callbackFor(v) : null;
    if (!cb) throw new ApiError('ProcessParameterInvalid', { process: o.processId, parameter: 'properties', reason: `the condition for '${name}' must be a child process` });
    checks.push([name, cb]);
  }
  // A tile whose area misses the load's extent searches nothing.
  const found = mode === 'tile' && !bbox ? [] : await search({ bbox, fallbackBbox, temporal: o.temporal, conditions: searchConditions(o.properties), mode });
  // Headers a service's warm-up read ahead for this thread: its files open without a round trip.
  for (const it of found) {
    if (!it.seeds) continue;
    for (const [href, seed] of Object.entries(it.seeds)) o.run.engine.blocks.seeds.set(readerKey(access?.trusted ?? true, href), seed);
    delete it.seeds;
  }
  const start = o.temporal?.[0] ? toInstant(o.temporal[0]) : null;
  const end = o.temporal?.[1] ? toInstant(o.temporal[1]) : null;
  const kept: ItemMeta[] = [];
  for (const it of found) {
    const t = Date.parse(String(it.properties?.datetime ?? it.datetime));
    if ((start && t < Date.parse(start)) || (end && t >= Date.parse(end))) continue;
    let ok = true;
    for (const [name, cb] of checks) {
      if ((await cb({ value: it.properties?.[name] ?? null })) !== true) {
        ok = false;
        break;
      }
    }
    if (ok) kept.push(it);
  }
  // Stable by day; within a day, the API's order (first valid pixel wins).
  const ordered = kept
    .map((it, i) => [it, i] as const)
    .sort((a, b) => (a[0].datetime < b[0].datetime ? -1 : a[0].datetime > b[0].datetime ? 1 : a[1] - b[1]))
    .map(([it]) => it);
  // A STAC API collection spans many CRSs (UTM zones): a load is native in the CRS most of its items have.
  const counts = new Map<number, number>();
  for (const it of ordered) counts.set(it.epsg, (counts.get(it.epsg) ?? 0) + 1);
  const epsg = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
  const loadMeta = epsg !== undefined && epsg !== meta.epsg ? { ...meta, epsg } : meta;
  return {
    // A user's STAC API (load_stac) stays under the outbound rules for its assets.
    access,
    collections: {
      get: (x) => (x === meta.id ? loadMeta : null),
      // Dates were checked above on the acquisition time; items carry their day (the time label).
      items: (x) => (x === meta.id ? ordered : []),
    },
  };
}
