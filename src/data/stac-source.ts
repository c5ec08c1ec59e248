// A catalog read from a STAC document on the web, for load_stac: a STAC Item, an ItemCollection,
// a static Collection (its `item` links) or an API collection (its `items` link, paged with
// `next`). The items' GeoTIFF assets become bands; the result is an in-memory CatalogSource that
// the loader reads like the SQLite catalog.
import { ApiError } from '../core/errors.js';
import type { BandMeta, CatalogSource, CollectionMeta, ItemMeta, RemoteSource } from '../core/catalog.js';
import { ImportError, parseStacItem, type Parsed } from './items.js';
import { bandsOfAssets, landingPage } from './stac-api.js';
import { fetchJson as fetchRemoteJson, RemoteError } from './http-client.js';
import { checkUrl, OutboundRefused, type OutboundPolicy } from './outbound.js';
import { RasterFormatError } from './cog-reader.js';
import type { ReadParts } from './load.js';

const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;
const MAX_ITEMS = 2000;
/** Item assets opened at once (their headers are read to learn grids and sample types). */
const OPEN_AT_ONCE = 8;

const bad = (reason: string) => new ApiError('ProcessParameterInvalid', { process: 'load_stac', parameter: 'url', reason });

/** A user's failure to read, as the 400 of load_stac's url: refused by the outbound rules, unreadable, invalid. */
function asBad(e: unknown): unknown {
  if (e instanceof OutboundRefused || e instanceof RemoteError || e instanceof ImportError || e instanceof RasterFormatError) return bad(e.message);
  return e;
}

/** A STAC document named by a user (or found in one): fetched under the outbound rules. */
async function fetchJson(url: string, policy: OutboundPolicy): Promise<any> {
  try {
    checkUrl(url, policy);
    return await fetchRemoteJson(url, policy, MAX_DOCUMENT_BYTES);
  } catch (e) {
    throw asBad(e);
  }
}

/** A link's href resolved against its document; one that is no URL at all is the user's 400. */
const resolve = (href: string, base: string): string => {
  try {
    return new URL(href, base).href;
  } catch {
    throw bad(`'${href}' in ${base} is not a URL`);
  }
};

const linkOf = (doc: any, rel: string, base: string): string | null => {
  const l = (doc?.links ?? []).find((x: any) => x?.rel === rel && typeof x.href === 'string');
  return l ? resolve(l.href, base) : null;
};

/** The item documents behind a STAC URL, each with the URL its relative links resolve against. */
async function itemDocuments(url: string, doc: any, policy: OutboundPolicy): Promise<{ doc: any; base: string }[]> {
  if (doc?.type === 'Feature') return [{ doc, base: url }];
  const out: { doc: any; base: string }[] = [];
  const fromFeatureCollection = async (first: any, firstUrl: string) => {
    let page: any = first;
    let pageUrl = firstUrl;
    for (;;) {
      for (const f of page.features ?? []) out.push({ doc: f, base: pageUrl });
      const next = linkOf(page, 'next', pageUrl);
      if (!next || out.length >= MAX_ITEMS) return;
      pageUrl = next;
      page = await fetchJson(next, policy);
    }
  };
  if (doc?.type === 'FeatureCollection') {
    await fromFeatureCollection(doc, url);
    return out;
  }
  if (doc?.type === 'Collection' || doc?.type === 'Catalog') {
    const api = linkOf(doc, 'items', url);
    if (api) {
      await fromFeatureCollection(await fetchJson(api, policy), api);
      return out;
    }
    for (const l of (doc.links ?? []).filter((x: any) => x?.rel === 'item').slice(0, MAX_ITEMS)) {
      const href = resolve(l.href, url);
      out.push({ doc: await fetchJson(href, policy), base: href });
    }
    return out;
  }
  throw bad('the document is neither a STAC Item, an ItemCollection nor a Collection');
}

const isSearchUrl = (url: string) => {
  try {
    return /^https?:$/.test(new URL(url).protocol) && /\/search\/?$/.test(new URL(url).pathname);
  } catch {
    return false;
  }
};

/** Search parameters of a /search URL's query, typed as a POST body wants them. */
function searchParams(u: URL): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of u.searchParams) {
    if (k === 'collections' || k === 'ids') out[k] = v.split(',').filter(Boolean);
    else if (k === 'bbox') out[k] = v.split(',').map(Number);
    else if (k === 'limit') continue;
    else if (k === 'filter' || k === 'query' || k === 'sortby' || k === 'intersects') {
      try {
        out[k] = JSON.parse(v);
      } catch {
        out[k] = v;
      }
    } else out[k] = v;
  }
  return out;
}

/**
 * A STAC API behind `url`, when it is one of its collections or its /search: then loads search it
 * (with the load's area, dates and properties) instead of paging through all its items.
 */
async function searchableApi(url: string, doc: any, policy: OutboundPolicy): Promise<{ remote: RemoteSource; bandsFrom: Record<string, any> } | null> {
  const u = new URL(url);
  const isSearch = isSearchUrl(url);
  if (!isSearch && !(doc?.type === 'Collection' && linkOf(doc, 'items', url))) return null;
  // The landing page: the root link of a collection, else the URL above /collections/ID or /search.
  const rootHref = isSearch ? `${u.origin}${u.pathname.replace(/\/search\/?$/, '/')}` : (linkOf(doc, 'root', url) ?? new URL('../..', url.replace(/\/?$/, '/')).href);
  let api;
  try {
    checkUrl(rootHref, policy);
    api = await landingPage(rootHref, policy);
  } catch (e) {
    if (e instanceof OutboundRefused) throw bad(e.message);
    return null;
  }
  if (!api.search) return null;
  const params = isSearch ? searchParams(u) : undefined;
  if (isSearch) api.search = { href: u.href.split('?')[0], method: api.search.method };
  const collectionIds = isSearch ? ((params!.collections as string[] | undefined) ?? []) : [doc.id];
  // Bands: the collection's item_assets, else the assets of the first item found.
  let collection = doc?.type === 'Collection' ? doc : null;
  // the collection document is optional: without it the bands come from an item (below)
  if (!collection && collectionIds.length === 1) collection = await fetchJson(`${api.url}/collections/${encodeURIComponent(collectionIds[0])}`, policy).catch(() => null);
  let bandsFrom = collection?.item_assets;
  if (!bandsFrom || !Object.keys(bandsFrom).length) bandsFrom = doc?.type === 'FeatureCollection' ? (doc.features?.[0]?.assets ?? {}) : {};
  const { bandAssets } = bandsOfAssets(bandsFrom);
  return {
    remote: {
      api: api.url,
      collection: collectionIds.join(','),
      maxItems: null,
      signer: 'none',
      bandAssets,
      conformsTo: api.conformsTo,
      search: api.search,
      extent: { bbox: null, interval: [null, null] },
      queryables: null,
      fetched: new Date().toISOString(),
      ...(params ? { params } : {}),
      onUsersBehalf: true,
    },
    bandsFrom,
  };
}

/**
 * An in-memory catalog of one collection read from a STAC URL, under the engine's rules for users'
 * URLs; the headers of its GeoTIFFs are read through the engine's blocks.
 */
export async function stacCatalog(url: string, engine: ReadParts, search?: CatalogSource['search']): Promise<{ source: CatalogSource; id: string }> {
  const policy = engine.outbound;
  // A /search URL is not fetched as it is: the load's own search replaces it.
  let first = search && isSearchUrl(url) ? null : await fetchJson(url, policy);
  const api = search ? await searchableApi(url, first, policy) : null;
  first ??= api ? null : await fetchJson(url, policy);
  if (api) {
    const { bands, resolution } = bandsOfAssets(api.bandsFrom);
    if (!bands.length) throw bad('the STAC API collection lists no GeoTIFF data assets (item_assets), so its bands are unknown');
    const id = 'load_stac';
    const epsgs = first?.summaries?.['proj:epsg'];
    const collection: CollectionMeta = {
      id,
      title: url,
      description: `Searched in ${api.remote.api}`,
      license: 'other',
      epsg: Array.isArray(epsgs) && Number.isInteger(epsgs[0]) ? epsgs[0] : 4326,
      resolution: resolution ? [resolution, resolution] : [10, 10],
      bands,
      remote: api.remote,
    };
    return {
      id,
      source: {
        access: { trusted: false, process: 'load_stac', parameter: 'url' },
        collections: { get: async (x) => (x === id ? collection : null), items: async () => [] },
        search: (req) => search!({ ...req, remote: api.remote }),
      },
    };
  }
  const docs = await itemDocuments(url, first, policy);
  if (!docs.length) throw bad('the STAC document lists no items');
  const items: ItemMeta[] = [];
  let bands: BandMeta[] = [];
  let meta: Pick<CollectionMeta, 'epsg' | 'resolution'> | null = null;
  for (let i = 0; i < docs.length; i += OPEN_AT_ONCE) {
    let batch: Parsed[];
    try {
      batch = await Promise.all(docs.slice(i, i + OPEN_AT_ONCE).map(({ doc, base }) => parseStacItem(doc, base, {}, engine.blocks, policy)));
    } catch (e) {
      throw asBad(e);
    }
    for (const parsed of batch) {
      items.push(parsed.item);
      for (const b of parsed.bands) if (!bands.some((x) => x.name === b.name)) bands = [...bands, b];
      meta ??= { epsg: parsed.item.epsg, resolution: parsed.resolution };
    }
  }
  items.sort((a, b) => (a.datetime < b.datetime ? -1 : a.datetime > b.datetime ? 1 : 0));
  const id = 'load_stac';
  const collection: CollectionMeta = { id, title: url, description: `Read from ${url}`, license: 'other', epsg: meta!.epsg, resolution: meta!.resolution, bands };
  const source: CatalogSource = {
    access: { trusted: false, process: 'load_stac', parameter: 'url' },
    collections: {
      get: async (x) => (x === id ? collection : null),
      items: async (x, start, end) => (x !== id ? [] : items.filter((it) => (!start || it.datetime >= start) && (!end || it.datetime < end))),
    },
  };
  return { source, id };
}
