// A client of STAC APIs: the landing page (what the API conforms to, how it searches), a remote
// collection and its queryables, and item search with paging. Items found become ItemMeta for the
// loader, with their bands named as the collection's item_assets name them. Every document of a
// STAC API is fetched here (through http-client.ts), so the rules for outbound requests apply in one place.
import { requestJson, RemoteError } from './http-client.js';
import { checkUrl, OutboundRefused, TRUSTED, type OutboundPolicy } from './outbound.js';
import { transformBox } from '../geometry/crs.js';
import type { RasterInfo } from './cog-reader.js';

/** Reads the header of a raster (an item's first asset, when the item does not tell its projection). */
export type HeaderReader = (href: string, policy: OutboundPolicy) => Promise<RasterInfo>;
import type { BandMeta, FilterOp, ItemMeta, PropertyCondition } from '../core/catalog.js';

/** Why a STAC API could not answer (unreachable, an HTTP error, not a STAC document). */
export class StacApiError extends Error {
  constructor(
    readonly url: string,
    reason: string,
  ) {
    super(`${url}: ${reason}`);
  }
}

/** A search found more items than a load may use. */
export class ItemCapError extends Error {
  constructor(
    readonly cap: number,
    readonly found: number | null,
  ) {
    super(`the search finds ${found === null ? 'more than' : found} items, more than the ${cap} one load may use`);
  }
}

/**
 * A document of a STAC API, under `policy` (TRUSTED for the administrator's APIs). A refusal by the
 * outbound rules is thrown as it is (OutboundRefused): it is the user's mistake, not the API's.
 */
export async function fetchDoc(url: string, opts: { method?: 'GET' | 'POST'; body?: unknown; policy?: OutboundPolicy; kind?: 'search' | 'document' } = {}): Promise<any> {
  let res;
  try {
    res = await requestJson(url, opts);
  } catch (e) {
    if (e instanceof OutboundRefused) throw e;
    throw new StacApiError(url, `cannot be read (${e instanceof RemoteError ? e.reason : (e as Error).message})`);
  }
  if (res.status !== 200) throw new StacApiError(url, `answered HTTP ${res.status}`);
  if (!res.body || typeof res.body !== 'object') throw new StacApiError(url, 'did not answer a JSON object');
  return res.body;
}

const linkOf = (doc: any, rel: string, base: string, method?: string): any | null => {
  const l = (doc?.links ?? []).find((x: any) => x?.rel === rel && typeof x.href === 'string' && (!method || (x.method ?? 'GET').toUpperCase() === method));
  return l ? { ...l, href: new URL(l.href, base).href } : null;
};

/** What a STAC API says about itself on its landing page. */
export interface ApiInfo {
  /** The landing page URL (no trailing slash). */
  url: string;
  conformsTo: string[];
  /** The search endpoint and the method used: POST unless only GET is offered. */
  search: { href: string; method: 'GET' | 'POST' } | null;
  /** Whose API it is (default: the administrator's, trusted). */
  policy?: OutboundPolicy;
}

const CONF_ITEM_SEARCH = /\/item-search$/;
const CONF_FILTER = /(item-search#filter|ogcapi-features-3\/1\.0\/conf\/filter|cql2\/1\.0\/conf\/cql2-json)/;
const CONF_QUERY = /item-search#query/;

export const apiUrlOf = (url: string) => url.replace(/\/+$/, '');

export async function landingPage(apiUrl: string, policy: OutboundPolicy = TRUSTED): Promise<ApiInfo> {
  const url = apiUrlOf(apiUrl);
  const doc = await fetchDoc(`${url}/`, { policy });
  const conformsTo: string[] = Array.isArray(doc.conformsTo) ? doc.conformsTo.filter((c: unknown) => typeof c === 'string') : [];
  return { url, conformsTo, search: searchEndpoint(doc, `${url}/`, conformsTo), policy };
}

function searchEndpoint(landing: any, base: string, conformsTo: string[]): ApiInfo['search'] {
  const post = linkOf(landing, 'search', base, 'POST');
  if (post) return { href: post.href, method: 'POST' };
  const get = linkOf(landing, 'search', base);
  if (get) return { href: get.href, method: get.method?.toUpperCase() === 'POST' ? 'POST' : 'GET' };
  if (conformsTo.some((c) => CONF_ITEM_SEARCH.test(c))) return { href: new URL('search', base).href, method: 'POST' };
  return null;
}

export const filterSupport = (conformsTo: string[]): 'cql2' | 'query' | null => (conformsTo.some((c) => CONF_FILTER.test(c)) ? 'cql2' : conformsTo.some((c) => CONF_QUERY.test(c)) ? 'query' : null);

// --- bands of a remote collection ---------------------------------------------------------------

const isTiff = (a: any) => /tiff/i.test(String(a?.type ?? '')) || /\.tiff?$/i.test(String(a?.href ?? ''));
const isData = (a: any) => !Array.isArray(a?.roles) || a.roles.includes('data');

/** Bands of a collection or item: its GeoTIFF data assets, named by eo:bands or by the asset key. */
export function bandsOfAssets(assets: Record<string, any>): { bands: BandMeta[]; bandAssets: Record<string, string>; resolution: number | null } {
  const bands: BandMeta[] = [];
  const bandAssets: Record<string, string> = {};
  let resolution: number | null = null;
  for (const [key, a] of Object.entries(assets ?? {})) {
    if (!a || typeof a !== 'object' || !isTiff(a) || !isData(a)) continue;
    const eo = Array.isArray(a['eo:bands']) && a['eo:bands'].length === 1 ? a['eo:bands'][0] : null;
    const raster = Array.isArray(a['raster:bands']) && a['raster:bands'].length === 1 ? a['raster:bands'][0] : null;
    // Single-band assets only: a multi-band asset (a visual RGB image) is not a band.
    if ((Array.isArray(a['eo:bands']) && a['eo:bands'].length > 1) || (Array.isArray(a['raster:bands']) && a['raster:bands'].length > 1)) continue;
    const name = typeof eo?.name === 'string' && eo.name ? eo.name : key;
    if (bandAssets[name]) continue;
    bandAssets[name] = key;
    const gsd = Number(raster?.spatial_resolution ?? a.gsd);
    if (Number.isFinite(gsd) && gsd > 0) resolution = resolution === null ? gsd : Math.min(resolution, gsd);
    bands.push({
      name,
      ...(typeof eo?.common_name === 'string' ? { common_name: eo.common_name } : {}),
      ...(typeof eo?.center_wavelength === 'number' ? { center_wavelength: eo.center_wavelength } : {}),
      ...(typeof eo?.full_width_half_max === 'number' ? { full_width_half_max: eo.full_width_half_max } : {}),
      ...(typeof (eo?.description ?? a.title) === 'string' ? { description: eo?.description ?? a.title } : {}),
      data_type: typeof raster?.data_type === 'string' ? raster.data_type : 'float32',
      nodata: typeof raster?.nodata === 'number' ? raster.nodata : null,
      ...(a['classification:classes'] || raster?.['classification:classes'] ? { categorical: true } : {}),
    });
  }
  return { bands, bandAssets, resolution };
}

// --- item search --------------------------------------------------------------------------------

const QUERY_OPS: Record<FilterOp, string> = { '=': 'eq', '<>': 'neq', '<': 'lt', '<=': 'lte', '>': 'gt', '>=': 'gte' };

export function cql2Filter(conditions: PropertyCondition[]): unknown {
  const args = conditions.map((c) => ({ op: c.op, args: [{ property: c.property }, c.value] }));
  return args.length === 1 ? args[0] : { op: 'and', args };
}

export function queryFilter(conditions: PropertyCondition[]): Record<string, Record<string, unknown>> {
  const q: Record<string, Record<string, unknown>> = {};
  for (const c of conditions) (q[c.property] ??= {})[QUERY_OPS[c.op]] = c.value;
  return q;
}

export interface SearchRequest {
  collections?: string[];
  /** WGS84 [w, s, e, n]; null = anywhere. */
  bbox: [number, number, number, number] | null;
  /** STAC datetime interval (`start/end`, `..` for an open end); null = any time. */
  datetime: string | null;
  conditions: PropertyCondition[];
  /** Most items the caller will take; more is an ItemCapError. */
  maxItems: number;
  /** Extra members of the search (the query of a user's /search URL). */
  extra?: Record<string, unknown>;
}

export const PAGE_SIZE = 100;

/** The items of a search, following `next` links (GET and POST forms), at most maxItems of them. */
export async function searchItems(api: ApiInfo, q: SearchRequest): Promise<{ features: any[]; pages: number }> {
  if (!api.search) throw new StacApiError(api.url, 'offers no item search');
  const body: Record<string, unknown> = { ...q.extra, limit: Math.min(PAGE_SIZE, q.maxItems + 1) };
  if (q.collections) body.collections = q.collections;
  if (q.bbox) body.bbox = q.bbox.map((v) => Math.round(v * 1e7) / 1e7);
  if (q.datetime) body.datetime = q.datetime;
  if (q.conditions.length) {
    const how = filterSupport(api.conformsTo);
    if (how === 'cql2') {
      body.filter = cql2Filter(q.conditions);
      body['filter-lang'] = 'cql2-json';
    } else if (how === 'query') body.query = queryFilter(q.conditions);
  }
  const policy = api.policy ?? TRUSTED;
  let page = api.search.method === 'POST' ? await fetchDoc(api.search.href, { method: 'POST', body, policy, kind: 'search' }) : await fetchDoc(getUrl(api.search.href, body), { policy, kind: 'search' });
  const features: any[] = [];
  let pages = 1;
  let current = body;
  for (;;) {
    if (page.type !== 'FeatureCollection' || !Array.isArray(page.features)) throw new StacApiError(api.search.href, 'answered a search with something other than an ItemCollection');
    const matched = typeof page.numberMatched === 'number' ? page.numberMatched : typeof page.context?.matched === 'number' ? page.context.matched : null;
    if (matched !== null && matched > q.maxItems) throw new ItemCapError(q.maxItems, matched);
    features.push(...page.features);
    if (features.length > q.maxItems) throw new ItemCapError(q.maxItems, matched);
    const next = (page.links ?? []).find((l: any) => l?.rel === 'next' && typeof l.href === 'string');
    if (!next || page.features.length === 0) break;
    const href = new URL(next.href, api.search.href).href;
    if ((next.method ?? 'GET').toUpperCase() === 'POST') {
      current = next.body && typeof next.body === 'object' ? (next.merge ? { ...current, ...next.body } : next.body) : current;
      page = await fetchDoc(href, { method: 'POST', body: current, policy, kind: 'search' });
    } else page = await fetchDoc(href, { policy, kind: 'search' });
    pages++;
  }
  return { features, pages };
}

/** The GET form of a search body (arrays comma-separated, objects as JSON). */
function getUrl(href: string, body: Record<string, unknown>): string {
  const u = new URL(href);
  for (const [k, v] of Object.entries(body)) {
    if (v === undefined || v === null) continue;
    u.searchParams.set(k, Array.isArray(v) && v.every((x) => typeof x !== 'object') ? v.join(',') : typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  if (body.filter) u.searchParams.set('filter-lang', 'cql2-json');
  return u.href;
}

/** A STAC interval from a load's [start, end) (end excluded locally; the API's end is inclusive). */
export function stacInterval(temporal: [string | null, string | null] | null | undefined): string | null {
  if (!temporal || (!temporal[0] && !temporal[1])) return null;
  const iso = (s: string) => (/^\d{4}-\d{2}-\d{2}$/.test(s) ? `${s}T00:00:00Z` : new Date(s).toISOString());
  return `${temporal[0] ? iso(temporal[0]) : '..'}/${temporal[1] ? iso(temporal[1]) : '..'}`;
}

// --- items --------------------------------------------------------------------------------------

const epsgOf = (v: unknown): number | null => {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  const m = typeof v === 'string' ? /^EPSG:(\d+)$/i.exec(v) : null;
  return m ? Number(m[1]) : null;
};

/** Native bbox from a STAC `proj:transform` (affine order a, b, c, d, e, f) and `proj:shape` (rows, cols). */
function projBox(o: any): [number, number, number, number] | null {
  const t = o?.['proj:transform'];
  const s = o?.['proj:shape'];
  if (!Array.isArray(t) || t.length < 6 || !Array.isArray(s) || s.length !== 2 || t[1] !== 0 || t[3] !== 0) return null;
  const [a, , c, , e, f] = t.map(Number);
  const [rows, cols] = s.map(Number);
  if (![a, c, e, f, rows, cols].every(Number.isFinite)) return null;
  return [c, f + rows * e, c + cols * a, f];
}

/** The UTC day of a date-time: items of one acquisition day are one time step (mosaicked). */
export const dayOf = (datetime: string): string | null => {
  const t = Date.parse(datetime);
  return Number.isNaN(t) ? null : `${new Date(t).toISOString().slice(0, 10)}T00:00:00Z`;
};

/**
 * An item of a search as the loader sees it: its bands' assets (asset keys mapped to band names),
 * its native CRS and bbox (from the projection extension, else the first asset's header) and its
 * day. Items without any wanted asset, or without a date, are skipped (null).
 */
export async function itemOf(
  f: any,
  base: string,
  bandAssets: Record<string, string>,
  sign: (href: string) => Promise<string>,
  /** Reads the header of an asset, when the item does not tell its projection. */
  header: HeaderReader,
  policy: OutboundPolicy = TRUSTED,
): Promise<ItemMeta | null> {
  if (f?.type !== 'Feature' || !f.assets || typeof f.assets !== 'object') return null;
  const props = f.properties ?? {};
  const day = dayOf(String(props.datetime ?? props.start_datetime ?? ''));
  if (!day) return null;
  const assets: ItemMeta['assets'] = {};
  let first: any = null;
  for (const [band, key] of Object.entries(bandAssets)) {
    const a = f.assets[key];
    if (!a || typeof a.href !== 'string') continue;
    first ??= a;
    const href = /^[a-z][\w+.-]*:/i.test(a.href) ? a.href : new URL(a.href, base).href;
    // A user's asset: an allowed http(s) URL, never a path or another scheme (refused before any I/O).
    if (!policy.trusted) checkUrl(href, policy);
    assets[band] = { href: await sign(href), sample: 0 };
  }
  if (!first) return null;
  let epsg = epsgOf(first['proj:epsg'] ?? first['proj:code'] ?? props['proj:epsg'] ?? props['proj:code']);
  let bbox =
    epsg !== null ? (projBox(first) ?? projBox(props) ?? (Array.isArray(props['proj:bbox']) && props['proj:bbox'].length === 4 ? (props['proj:bbox'] as [number, number, number, number]) : null)) : null;
  if (epsg === null || !bbox) {
    // Without the projection extension, the header of one asset tells.
    const info = await header(Object.values(assets)[0].href, policy);
    const t = info.levels[0].transform;
    epsg = info.epsg;
    bbox = [t[0], t[3] + info.height * t[5], t[0] + info.width * t[1], t[3]];
  }
  const properties: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(props)) if (v === null || typeof v !== 'object') properties[k] = v;
  return { id: String(f.id ?? ''), datetime: day, epsg, bbox, bbox4326: transformBox(bbox, epsg, 4326), assets, properties };
}
