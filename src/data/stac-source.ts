// A catalog read from a STAC document on the web, for load_stac: a STAC Item, an ItemCollection,
// a static Collection (its `item` links) or an API collection (its `items` link, paged with
// `next`). The items' GeoTIFF assets become bands; the result is an in-memory CatalogSource that
// the loader reads like the SQLite catalog.
import { request } from 'undici';
import { ApiError } from '../core/errors.js';
import type { BandMeta, CatalogSource, CollectionMeta, ItemMeta, RemoteSource } from '../core/catalog.js';
import { ImportError, parseStacItem } from './items.js';
import { bandsOfAssets, landingPage } from './stac-api.js';

const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;
const MAX_ITEMS = 2000;
const TIMEOUT_MS = 20_000;

const bad = (reason: string) => new ApiError('ProcessParameterInvalid', { process: 'load_stac', parameter: 'url', reason });

async function fetchJson(url: string): Promise<any> {
  if (!/^https?:\/\//i.test(url)) throw bad('only http(s) URLs are read');
  let res;
  try {
    res = await request(url, { headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS, headers: { accept: 'application/geo+json, application/json' } });
  } catch (e) {
    throw bad(`${url} cannot be reached (${(e as Error).message})`);
  }
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw bad(`${url} answered HTTP ${res.statusCode}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of res.body) {
    size += c.length;
    if (size > MAX_DOCUMENT_BYTES) {
      res.body.destroy();
      throw bad(`${url} is larger than ${MAX_DOCUMENT_BYTES} bytes`);
    }
    chunks.push(c);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw bad(`${url} is not JSON`);
  }
}

const linkOf = (doc: any, rel: string, base: string): string | null => {
  const l = (doc?.links ?? []).find((x: any) => x?.rel === rel && typeof x.href === 'string');
  return l ? new URL(l.href, base).href : null;
};

/** The item documents behind a STAC URL, each with the URL its relative links resolve against. */
async function itemDocuments(url: string, doc: any): Promise<{ doc: any; base: string }[]> {
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
      page = await fetchJson(next);
    }
  };
  if (doc?.type === 'FeatureCollection') {
    await fromFeatureCollection(doc, url);
    return out;
  }
  if (doc?.type === 'Collection' || doc?.type === 'Catalog') {
    const api = linkOf(doc, 'items', url);
    if (api) {
      await fromFeatureCollection(await fetchJson(api), api);
      return out;
    }
    for (const l of (doc.links ?? []).filter((x: any) => x?.rel === 'item').slice(0, MAX_ITEMS)) {
      const href = new URL(l.href, url).href;
      out.push({ doc: await fetchJson(href), base: href });
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
async function searchableApi(url: string, doc: any): Promise<{ remote: RemoteSource; bandsFrom: Record<string, any> } | null> {
  const u = new URL(url);
  const isSearch = isSearchUrl(url);
  if (!isSearch && !(doc?.type === 'Collection' && linkOf(doc, 'items', url))) return null;
  // The landing page: the root link of a collection, else the URL above /collections/ID or /search.
  const rootHref = isSearch ? `${u.origin}${u.pathname.replace(/\/search\/?$/, '/')}` : (linkOf(doc, 'root', url) ?? new URL('../..', url.replace(/\/?$/, '/')).href);
  let api;
  try {
    api = await landingPage(rootHref);
  } catch {
    return null;
  }
  if (!api.search) return null;
  const params = isSearch ? searchParams(u) : undefined;
  if (isSearch) api.search = { href: u.href.split('?')[0], method: api.search.method };
  const collectionIds = isSearch ? ((params!.collections as string[] | undefined) ?? []) : [doc.id];
  // Bands: the collection's item_assets, else the assets of the first item found.
  let collection = doc?.type === 'Collection' ? doc : null;
  if (!collection && collectionIds.length === 1) collection = await fetchJson(`${api.url}/collections/${encodeURIComponent(collectionIds[0])}`).catch(() => null);
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
    },
    bandsFrom,
  };
}

/** An in-memory catalog of one collection read from a STAC URL. */
export async function stacCatalog(url: string, search?: CatalogSource['search']): Promise<{ source: CatalogSource; id: string }> {
  // A /search URL is not fetched as it is: the load's own search replaces it.
  let first = search && isSearchUrl(url) ? null : await fetchJson(url);
  const api = search ? await searchableApi(url, first) : null;
  first ??= api ? null : await fetchJson(url);
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
        collections: { get: (x) => (x === id ? collection : null), items: () => [] },
        search: (req) => search!({ ...req, remote: api.remote }),
      },
    };
  }
  const docs = await itemDocuments(url, first);
  if (!docs.length) throw bad('the STAC document lists no items');
  const items: ItemMeta[] = [];
  let bands: BandMeta[] = [];
  let meta: Pick<CollectionMeta, 'epsg' | 'resolution'> | null = null;
  for (const { doc, base } of docs) {
    try {
      const parsed = await parseStacItem(doc, base);
      items.push(parsed.item);
      for (const b of parsed.bands) if (!bands.some((x) => x.name === b.name)) bands = [...bands, b];
      meta ??= { epsg: parsed.item.epsg, resolution: parsed.resolution };
    } catch (e) {
      if (e instanceof ImportError) throw bad(e.message);
      throw e;
    }
  }
  items.sort((a, b) => (a.datetime < b.datetime ? -1 : a.datetime > b.datetime ? 1 : 0));
  const id = 'load_stac';
  const collection: CollectionMeta = { id, title: url, description: `Read from ${url}`, license: 'other', epsg: meta!.epsg, resolution: meta!.resolution, bands };
  const source: CatalogSource = {
    collections: {
      get: (x) => (x === id ? collection : null),
      items: (x, start, end) => (x !== id ? [] : items.filter((it) => (!start || it.datetime >= start) && (!end || it.datetime < end))),
    },
  };
  return { source, id };
}
