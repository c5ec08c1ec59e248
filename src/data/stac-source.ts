// A catalog read from a STAC document on the web, for load_stac: a STAC Item, an ItemCollection,
// a static Collection (its `item` links) or an API collection (its `items` link, paged with
// `next`). The items' GeoTIFF assets become bands; the result is an in-memory CatalogSource that
// the loader reads like the SQLite catalog.
import { ApiError } from '../core/errors.js';
import type { BandMeta, CollectionMeta, ItemMeta } from '../core/catalog.js';
import type { CatalogSource } from '../core/catalog.js';
import { ImportError, parseStacItem, type Parsed } from './items.js';
import { fetchJson as fetchRemoteJson, RemoteError } from './http-client.js';
import { checkUrl, ON_USERS_BEHALF, OutboundRefused } from './outbound.js';
import { RasterFormatError } from './cog-reader.js';

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
async function fetchJson(url: string): Promise<any> {
  try {
    checkUrl(url, ON_USERS_BEHALF);
    return await fetchRemoteJson(url, ON_USERS_BEHALF, MAX_DOCUMENT_BYTES);
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
      const href = resolve(l.href, url);
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
  for (let i = 0; i < docs.length; i += OPEN_AT_ONCE) {
    let batch: Parsed[];
    try {
      batch = await Promise.all(docs.slice(i, i + OPEN_AT_ONCE).map(({ doc, base }) => parseStacItem(doc, base, {}, ON_USERS_BEHALF)));
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
      get: (x) => (x === id ? collection : null),
      items: (x, start, end) => (x !== id ? [] : items.filter((it) => (!start || it.datetime >= start) && (!end || it.datetime < end))),
    },
  };
  return { source, id };
}
