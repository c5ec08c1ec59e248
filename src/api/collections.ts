// EO data discovery: the collections of the catalog as STAC, and their queryables (API 1.2.0).
import type { AppRequest, AppRoute } from './context.js';
import { ApiError } from '../core/errors.js';
import { json } from './reply.js';
import { extentOf, stacCollection, queryables, remoteQueryables, type CollectionExtent } from '../data/stac.js';
import type { CollectionMeta } from '../core/catalog.js';
import { paginate, fromSorted } from './paging.js';
import { previewLinks } from './tiles.js';

const options = (req: AppRequest, full: boolean, id: string) => ({
  stacVersion: req.version.stacVersion,
  collectionsUrl: req.url('/collections'),
  rootUrl: req.baseUrl,
  full,
  queryables: req.version.queryables,
  // The map preview (api/tiles.ts): XYZ, WMTS and the map page, public like the collection.
  mapLinks: previewLinks(req, id),
});

/** The extent of a collection: of its items, or as its STAC API announces it. */
async function extentFor(req: AppRequest, meta: CollectionMeta): Promise<CollectionExtent> {
  const r = meta.remote;
  if (!r) return extentOf(await req.app.store.collections.items(meta.id));
  return { native: null, wgs84: r.extent.bbox, start: r.extent.interval[0], end: r.extent.interval[1], dates: [] };
}

async function collection(req: AppRequest): Promise<CollectionMeta> {
  // Collection ids may hold slashes (^[\w\-.~/]+$), so the path parameter is URL-decoded.
  let id: string;
  try {
    id = decodeURIComponent(req.params.collection_id);
  } catch {
    throw new ApiError('CollectionNotFound', { identifier: req.params.collection_id });
  }
  const meta = await req.app.store.collections.get(id);
  if (!meta) throw new ApiError('CollectionNotFound', { identifier: id });
  return meta;
}

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/collections',
    summary: 'Collections of EO data',
    auth: 'optional',
    handler: async (req) => {
      const repo = req.app.store.collections;
      // Catalog order (the demo collection first), paged by position in that order.
      const all = (await repo.list()).map((m, i) => ({ key: String(i).padStart(8, '0'), meta: m }));
      const { items, links } = await paginate(
        req,
        fromSorted(all, (c) => c.key),
        (c) => c.key,
      );
      // STAC API collections are listed as last read (no remote request here: a list must not wait on other servers).
      const collections = await Promise.all(items.map(async ({ meta }) => stacCollection(meta, await extentFor(req, meta), options(req, false, meta.id))));
      return json({ collections, links });
    },
  },
  {
    method: 'GET',
    path: '/collections/{collection_id}',
    summary: 'One collection, with its data cube dimensions and summaries',
    auth: 'optional',
    handler: async (req) => {
      // A STAC API collection is read again from its API once its metadata is older than the TTL.
      const meta = await req.app.stac.fresh(await collection(req));
      return json(stacCollection(meta, await extentFor(req, meta), options(req, true, meta.id)));
    },
  },
  {
    method: 'GET',
    path: '/collections/{collection_id}/queryables',
    summary: 'Properties to filter the items of a collection by',
    auth: 'optional',
    versions: ['1.3.0', '1.2.0'],
    handler: async (req) => {
      const meta = await req.app.stac.fresh(await collection(req));
      const url = req.url(`/collections/${encodeURIComponent(meta.id)}/queryables`);
      const doc = meta.remote ? remoteQueryables(meta, url) : queryables(meta, await req.app.store.collections.items(meta.id), url);
      return { ...json(doc), contentType: 'application/schema+json' };
    },
  },
];
