// A catalog read from a STAC document on the web, for load_stac: a STAC Item, an ItemCollection,
// a static Collection (its `item` links) or an API collection (its `items` link, paged with
// `next`). The items' GeoTIFF assets become bands; the result is an in-memory CatalogSource that
// the loader reads like the SQLite catalog.
import { request } from 'undici';
import { ApiError } from '../core/errors.js';
import type { BandMeta, CollectionMeta, ItemMeta } from '../core/catalog.js';
import type { CatalogSource } from '../core/catalog.js';
import { ImportError, parseStacItem } from './items.js';

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
async function itemDocuments(url: string): Promise<{ doc: any; base: string }[]> {
  const doc = await fetchJson(url);
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

/** An in-memory catalog of one collection read from a STAC URL. */
export async function stacCatalog(url: string): Promise<{ source: CatalogSource; id: string }> {
  const docs = await itemDocuments(url);
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
