// STAC documents of collections, derived from what the catalog keeps: the collection's metadata
// and its items (extent, dates). Nothing here knows about HTTP; links come from a base URL.
import type { CollectionMeta, ItemMeta } from '../core/catalog.js';

export const DATACUBE_EXT = 'https://stac-extensions.github.io/datacube/v2.2.0/schema.json';
export const EO_EXT = 'https://stac-extensions.github.io/eo/v1.1.0/schema.json';
export const PROJ_EXT = 'https://stac-extensions.github.io/projection/v1.1.0/schema.json';
export const WEB_MAP_LINKS_EXT = 'https://stac-extensions.github.io/web-map-links/v1.2.0/schema.json';
export const QUERYABLES_REL = 'http://www.opengis.net/def/rel/ogc/1.0/queryables';

export interface CollectionExtent {
  /** Native bbox [minx, miny, maxx, maxy] and WGS84 bbox [w, s, e, n] over all items. */
  native: [number, number, number, number] | null;
  wgs84: [number, number, number, number] | null;
  start: string | null;
  end: string | null;
  dates: string[];
}

export function extentOf(items: ItemMeta[]): CollectionExtent {
  if (!items.length) return { native: null, wgs84: null, start: null, end: null, dates: [] };
  const union = (a: number[], b: number[]) => [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[2], b[2]), Math.max(a[3], b[3])] as [number, number, number, number];
  let native = items[0].bbox;
  let wgs84 = items[0].bbox4326;
  for (const it of items.slice(1)) {
    native = union(native, it.bbox);
    wgs84 = union(wgs84, it.bbox4326);
  }
  const dates = [...new Set(items.map((i) => i.datetime))].sort();
  return { native, wgs84, start: dates[0], end: dates[dates.length - 1], dates };
}

export interface StacOptions {
  stacVersion: string;
  /** URL of /collections (no trailing slash). */
  collectionsUrl: string;
  rootUrl: string;
  /** Include summaries and cube:dimensions (the single-collection answer does, lists do not). */
  full: boolean;
  queryables: boolean;
  /** Links to the collection on a map (rel xyz, wmts, alternate), made by the API that serves them. */
  mapLinks?: Record<string, unknown>[];
}

export function stacCollection(meta: CollectionMeta, ext: CollectionExtent, o: StacOptions): Record<string, unknown> {
  const self = `${o.collectionsUrl}/${encodeURIComponent(meta.id)}`;
  const doc: Record<string, unknown> = {
    stac_version: o.stacVersion,
    stac_extensions: [DATACUBE_EXT, EO_EXT, PROJ_EXT, ...(o.mapLinks?.length ? [WEB_MAP_LINKS_EXT] : [])],
    type: 'Collection',
    id: meta.id,
    title: meta.title,
    description: meta.description,
    ...(meta.keywords ? { keywords: meta.keywords } : {}),
    license: meta.license,
    ...(meta.providers ? { providers: meta.providers } : {}),
    extent: {
      spatial: { bbox: [ext.wgs84 ?? [-180, -90, 180, 90]] },
      temporal: { interval: [[ext.start, ext.end]] },
    },
    links: [
      { rel: 'self', href: self, type: 'application/json' },
      { rel: 'root', href: `${o.rootUrl}/`, type: 'application/json' },
      { rel: 'parent', href: `${o.rootUrl}/`, type: 'application/json' },
      ...(o.queryables ? [{ rel: QUERYABLES_REL, href: `${self}/queryables`, type: 'application/schema+json', title: 'Queryables' }] : []),
      ...(o.mapLinks ?? []),
      ...(meta.links ?? []),
    ],
  };
  if (!o.full) return doc;
  const [rx, ry] = meta.resolution;
  doc['cube:dimensions'] = {
    x: { type: 'spatial', axis: 'x', extent: ext.native ? [ext.native[0], ext.native[2]] : [null, null], step: rx, reference_system: meta.epsg },
    y: { type: 'spatial', axis: 'y', extent: ext.native ? [ext.native[1], ext.native[3]] : [null, null], step: ry, reference_system: meta.epsg },
    t: { type: 'temporal', extent: [ext.start, ext.end], values: ext.dates, step: null },
    bands: { type: 'bands', values: meta.bands.map((b) => b.name) },
  };
  doc.summaries = {
    'eo:bands': meta.bands.map((b) => ({
      name: b.name,
      ...(b.common_name ? { common_name: b.common_name } : {}),
      ...(b.center_wavelength !== undefined ? { center_wavelength: b.center_wavelength } : {}),
      ...(b.full_width_half_max !== undefined ? { full_width_half_max: b.full_width_half_max } : {}),
      ...(b.description ? { description: b.description } : {}),
    })),
    'proj:epsg': [meta.epsg],
    gsd: [rx],
    ...meta.summaries,
  };
  return doc;
}

/** JSON Schema of the item properties usable in load_collection's `properties` filter. */
export function queryables(meta: CollectionMeta, items: ItemMeta[], url: string): Record<string, unknown> {
  const properties: Record<string, unknown> = {
    datetime: { title: 'Acquisition time', type: 'string', format: 'date-time' },
  };
  const seen = new Map<string, Set<string>>();
  for (const it of items) {
    for (const [k, v] of Object.entries(it.properties ?? {})) {
      if (!seen.has(k)) seen.set(k, new Set());
      seen.get(k)!.add(typeof v);
    }
  }
  for (const [k, types] of seen) {
    if (k === 'eo:cloud_cover') properties[k] = { title: 'Cloud cover', type: 'number', minimum: 0, maximum: 100 };
    else if (types.size === 1) properties[k] = { type: [...types][0] === 'number' ? 'number' : [...types][0] };
  }
  return {
    $schema: 'https://json-schema.org/draft/2019-09/schema',
    $id: url,
    type: 'object',
    title: `Queryables of ${meta.title}`,
    properties,
    additionalProperties: false,
  };
}

/** The queryables of a STAC API collection: those its API lists (under our URL), else datetime alone. */
export function remoteQueryables(meta: CollectionMeta, url: string): Record<string, unknown> {
  const remote = meta.remote?.queryables;
  const properties = remote && typeof remote.properties === 'object' && remote.properties ? remote.properties : { datetime: { title: 'Acquisition time', type: 'string', format: 'date-time' } };
  return {
    $schema: typeof remote?.$schema === 'string' ? remote.$schema : 'https://json-schema.org/draft/2019-09/schema',
    $id: url,
    type: 'object',
    title: `Queryables of ${meta.title}`,
    properties,
    additionalProperties: remote?.additionalProperties ?? true,
  };
}
