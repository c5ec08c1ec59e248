// Collections backed by a STAC API (`xeo collections add-stac`): their record (bands from the
// remote collection's item_assets, extent, summaries, queryables), refreshed after a TTL, and the
// item searches of their loads, cached briefly so a map session costs one search per area. One
// instance lives on the main thread; engine threads reach it through stac-search-bridge.ts, so all
// threads share the cache and a search that is under way.
import { LRUCache } from 'lru-cache';
import { ApiError } from '../core/errors.js';
import type { StacConfig } from '../core/config.js';
import { HEADER_BYTES, readerKey, type CollectionMeta, type HeaderSeed, type ItemMeta, type RemoteSearch, type RemoteSource } from '../core/catalog.js';
import type { CollectionRepo } from '../store/types.js';
import { ItemCapError, StacApiError, bandsOfAssets, fetchDoc, itemOf, landingPage, searchItems, stacInterval } from './stac-api.js';
import { createSigner, type Signer } from './stac-signers.js';
import { checkUrl, OutboundRefused, TRUSTED, type OutboundPolicy } from './outbound.js';
import { fetchRange, RemoteError } from './http-client.js';
import type { BlockCache, RasterInfo } from './cog-reader.js';
import { RasterFormatError } from './raster-format-error.js';

/** A user's STAC API (load_stac) that the rules refuse or that cannot be read: the 400 of load_stac's url. */
const usersMistake = (e: Error) => new ApiError('ProcessParameterInvalid', { process: 'load_stac', parameter: 'url', reason: e.message });

export const COLLECTION_ID = /^[\w\-.~/]+$/;

/** Most items all cached searches together keep. */
const SEARCH_CACHE_ITEMS = 50_000;
/** How long the record of a STAC API collection is used from memory before it is read again (a collection added or removed on another node shows after it). */
const RECORD_MEMORY_MS = 15_000;

export interface AddStacOptions {
  id?: string;
  title?: string;
  maxItems?: number | null;
  signer?: RemoteSource['signer'];
}

/** Reads a remote collection (landing page, collection, queryables) into our record of it. */
export async function describeStacCollection(apiUrl: string, remoteId: string, opts: AddStacOptions = {}): Promise<CollectionMeta> {
  const api = await landingPage(apiUrl);
  const url = `${api.url}/collections/${encodeURIComponent(remoteId)}`;
  const doc = await fetchDoc(url);
  if (doc.type !== 'Collection' || typeof doc.id !== 'string') throw new StacApiError(url, 'is not a STAC Collection');
  const { bands, bandAssets, resolution } = bandsOfAssets(doc.item_assets ?? {});
  if (!bands.length) throw new StacApiError(url, 'lists no GeoTIFF data assets in item_assets, so its bands are unknown');
  let queryables: Record<string, unknown> | null;
  const qLink = (doc.links ?? []).find((l: any) => l?.rel === 'http://www.opengis.net/def/rel/ogc/1.0/queryables' && typeof l.href === 'string');
  try {
    queryables = await fetchDoc(qLink ? new URL(qLink.href, url).href : `${url}/queryables`);
  } catch {
    queryables = null; // optional in STAC APIs
  }
  const summaries: Record<string, unknown> = { ...(doc.summaries ?? {}) };
  delete summaries['eo:bands'];
  const epsgSummary = Array.isArray(summaries['proj:epsg']) ? Number(summaries['proj:epsg'][0]) : NaN;
  const bbox = doc.extent?.spatial?.bbox?.[0];
  const interval = doc.extent?.temporal?.interval?.[0];
  const id = opts.id ?? remoteId;
  if (!COLLECTION_ID.test(id)) throw new StacApiError(url, `'${id}' cannot be a collection id here (letters, digits and - . ~ / _ only); give one with --id`);
  return {
    id,
    title: opts.title ?? (typeof doc.title === 'string' ? doc.title : remoteId),
    description: typeof doc.description === 'string' ? doc.description : `Items of ${remoteId} in the STAC API ${api.url}.`,
    license: typeof doc.license === 'string' ? doc.license : 'other',
    ...(Array.isArray(doc.keywords) ? { keywords: doc.keywords.filter((k: unknown) => typeof k === 'string') } : {}),
    ...(Array.isArray(doc.providers) ? { providers: doc.providers } : {}),
    // Items may be in any UTM zone; Web Mercator tiles and loads in other CRSs are warped anyway.
    epsg: Number.isInteger(epsgSummary) ? epsgSummary : 4326,
    resolution: resolution ? [resolution, resolution] : [10, 10],
    bands,
    summaries,
    links: [{ rel: 'via', href: url, type: 'application/json', title: 'The collection in its STAC API' }],
    remote: {
      api: api.url,
      collection: remoteId,
      maxItems: opts.maxItems ?? null,
      signer: opts.signer ?? 'none',
      bandAssets,
      conformsTo: api.conformsTo,
      search: api.search,
      extent: {
        bbox: Array.isArray(bbox) && bbox.length >= 4 ? [bbox[0], bbox[1], bbox[bbox.length / 2], bbox[bbox.length / 2 + 1]] : null,
        interval: Array.isArray(interval) ? [interval[0] ?? null, interval[1] ?? null] : [null, null],
      },
      queryables,
      fetched: new Date().toISOString(),
    },
  };
}

/** The answer for a STAC API that cannot be used now: not a server fault, and not the client's either. */
export function unavailable(meta: CollectionMeta, reason: string): ApiError {
  const e = new ApiError(
    'CollectionUnavailable',
    { identifier: meta.id },
    `Collection '${meta.id}' is served by the STAC API ${meta.remote?.api}, which cannot be used at the moment: ${reason}. Try again later.`,
  );
  e.headers = { 'Retry-After': '30' };
  return e;
}

const key = (s: RemoteSearch, bbox: RemoteSearch['bbox']) =>
  JSON.stringify([s.remote ? [s.remote.api, s.remote.collection, s.remote.params ?? null] : s.collection, bbox?.map((v) => Math.round(v * 1e6) / 1e6) ?? null, s.temporal ?? null, s.conditions]);

/** A search without its area: the searches a service's warm-up covers (see StacCollections.warm). */
const coverKey = (s: RemoteSearch) => JSON.stringify([s.collection, s.temporal ?? null, s.conditions]);

type Box = [number, number, number, number];
const contains = (outer: Box, inner: Box) => outer[0] <= inner[0] && outer[1] <= inner[1] && outer[2] >= inner[2] && outer[3] >= inner[3];
const intersects = (a: Box, b: Box) => a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3];

/** What a service's warm-up searches: one load of a STAC API collection, as the service's tiles will search it. */
export interface WarmUp {
  collection: string;
  /** The WGS84 box of the load's spatial_extent; null: the collection's whole extent. */
  bbox: Box | null;
  temporal: [string | null, string | null] | null;
  /** The bands whose files' headers are read ahead (null: every band of an item). */
  bands: string[] | null;
}

/** A warm-up's search, which answers the later searches of its load inside its area. */
interface Cover {
  /** Its area; null: the whole collection. */
  bbox: Box | null;
  at: number;
  items: Promise<ItemMeta[]>;
  /** Settles once the headers read ahead are in (or failed). */
  seeded: Promise<void>;
}

/** Files of the first date whose headers a warm-up reads ahead, at most. */
const WARM_HEADERS = 8;
/** Bytes of headers read ahead kept on the main thread, all together. */
const SEED_BYTES = 16 * 1024 * 1024;
/** How long a search answered by a warm-up waits for its headers, at most (then the tile reads them itself). */
const SEED_WAIT_MS = 1000;

/** The hrefs of the first date's files (of the bands named), at most `max`. */
function firstDateHrefs(items: ItemMeta[], bands: string[] | null, max: number): string[] {
  const day = items.reduce<string | null>((d, it) => (d === null || it.datetime.slice(0, 10) < d ? it.datetime.slice(0, 10) : d), null);
  const out = new Set<string>();
  for (const it of items) {
    if (it.datetime.slice(0, 10) !== day) continue;
    for (const [band, a] of Object.entries(it.assets)) if ((!bands || bands.includes(band)) && /^https?:\/\//i.test(a.href)) out.add(a.href);
  }
  return [...out].slice(0, max);
}

/** What the API asks of STAC API collections: their record, fresh. */
export type StacMetadata = Pick<StacCollections, 'fresh'>;

/** Bytes of asset headers kept by the searches of this thread. */
const HEADER_CACHE_BYTES = 32 * 1024 * 1024;

export class StacCollections {
  private readonly refreshing = new Map<string, Promise<CollectionMeta>>();
  private readonly searches: LRUCache<string, { at: number; items: Promise<ItemMeta[]>; size: number }>;
  private readonly signers = new Map<string, Signer>();
  private readonly records = new LRUCache<string, { at: number; meta: Promise<CollectionMeta | null> }>({ max: 1024 });
  /**
   * The headers of assets opened because their item does not tell its projection (no blocks are
   * read here); the reader is loaded by the first such item.
   */
  private headers: Promise<BlockCache> | null = null;
  /** Searches of services' warm-ups, by their search without its area. */
  private readonly covers = new LRUCache<string, Cover>({ max: 64 });
  /** Headers read ahead by warm-ups (by reader key), with the engine threads they were given to. */
  private readonly seeds: LRUCache<string, { seed: HeaderSeed; given: WeakSet<object> }>;

  constructor(
    private readonly collections: Pick<CollectionRepo, 'get' | 'put'>,
    private readonly config: StacConfig,
    /** The rules for users' URLs (XEO_OUTBOUND_ALLOW), for the searches of collections a user named. */
    private readonly usersPolicy: OutboundPolicy,
  ) {
    // Bounded by items kept (an item is about a kilobyte), and by searches.
    this.searches = new LRUCache({ max: 512, maxSize: SEARCH_CACHE_ITEMS, sizeCalculation: (e) => Math.max(1, e.size) });
    this.seeds = new LRUCache({ maxSize: SEED_BYTES, sizeCalculation: (e) => Math.max(1, e.seed.bytes.byteLength), ttl: Math.max(1, config.searchTtlSeconds) * 1000 });
  }

  /** The record of a STAC API collection, read again from the API when older than the TTL. */
  fresh(meta: CollectionMeta): Promise<CollectionMeta> {
    const r = meta.remote;
    if (!r || Date.now() - Date.parse(r.fetched) < this.config.metadataTtlSeconds * 1000) return Promise.resolve(meta);
    let p = this.refreshing.get(meta.id);
    if (!p) {
      p = describeStacCollection(r.api, r.collection, { id: meta.id, title: meta.title, maxItems: r.maxItems, signer: r.signer })
        .then(async (m) => {
          // Removed meanwhile (collections remove): not put back.
          if ((await this.collections.get(meta.id))?.remote) await this.collections.put(m);
          this.records.delete(meta.id);
          return m;
        })
        .catch((e) => {
          throw unavailable(meta, (e as Error).message);
        })
        .finally(() => this.refreshing.delete(meta.id));
      this.refreshing.set(meta.id, p);
    }
    return p;
  }

  /** The record of a collection, read at most every RECORD_MEMORY_MS: a search of every tile does not read it again. */
  private record(id: string): Promise<CollectionMeta | null> {
    const now = Date.now();
    const kept = this.records.get(id);
    if (kept && now - kept.at < RECORD_MEMORY_MS) return kept.meta;
    const meta = this.collections.get(id);
    this.records.set(id, { at: now, meta });
    meta.catch(() => this.records.get(id)?.meta === meta && this.records.delete(id));
    return meta;
  }

  private signer(meta: CollectionMeta): Signer {
    const name = meta.remote!.signer;
    let s = this.signers.get(name);
    if (!s) this.signers.set(name, (s = createSigner(name, this.config.signers)));
    return s;
  }

  /**
   * Items of a load (signed hrefs), from the cache when the same search ran shortly before. An
   * engine thread (`asker`) also gets the headers a warm-up read ahead for their files, once.
   */
  async search(req: RemoteSearch, asker?: object): Promise<ItemMeta[]> {
    const items = await this.searchItems(req);
    return asker && this.seeds.size > 0 ? this.withSeeds(items, asker, !req.remote?.onUsersBehalf) : items;
  }

  private withSeeds(items: ItemMeta[], asker: object, trusted: boolean): ItemMeta[] {
    return items.map((it) => {
      let seeds: Record<string, HeaderSeed> | undefined;
      for (const a of Object.values(it.assets)) {
        const e = this.seeds.get(readerKey(trusted, a.href));
        if (!e || e.given.has(asker)) continue;
        e.given.add(asker);
        (seeds ??= {})[a.href] = e.seed;
      }
      return seeds ? { ...it, seeds } : it;
    });
  }

  /**
   * Starts what the first tiles of a service's load wait for: the item search over the service's
   * whole area (its spatial_extent, else the whole collection, within the cap on items), which then
   * answers the tiles' searches inside that area, and the headers of the first date's files (the bands the load
   * reads). Bounded (one search, at most WARM_HEADERS header reads), stopped by `signal`; what
   * fails is left for the tiles to meet. Answers what it found (null: not a STAC API collection).
   */
  async warm(w: WarmUp, signal: AbortSignal): Promise<{ items: number; headers: number } | null> {
    const stored = await this.record(w.collection);
    if (!stored?.remote || signal.aborted) return null;
    const meta = await this.fresh(stored);
    const r = meta.remote!;
    // Without a spatial_extent the whole collection is searched (no bbox): then the answer holds every tile's items.
    const bbox = w.bbox;
    const req: RemoteSearch = { collection: w.collection, bbox, temporal: w.temporal, conditions: [], mode: 'tile' };
    let seeded = () => {};
    const cover: Cover = { bbox: w.bbox, at: Date.now(), items: this.cached(meta, req, bbox), seeded: new Promise<void>((res) => (seeded = res)) };
    const k = coverKey(req);
    this.covers.set(k, cover);
    try {
      const found = await cover.items;
      const policy = r.onUsersBehalf ? this.usersPolicy : TRUSTED;
      // Items name their bands as the collection does; a load may use common names (red, nir).
      const bands = w.bands ? meta.bands.filter((b) => w.bands!.includes(b.name) || (b.common_name !== undefined && w.bands!.includes(b.common_name))).map((b) => b.name) : null;
      const read = await Promise.allSettled(firstDateHrefs(found, bands, WARM_HEADERS).map((href) => this.readAhead(href, policy, signal)));
      return { items: found.length, headers: read.filter((x) => x.status === 'fulfilled').length };
    } catch (e) {
      if (this.covers.peek(k) === cover) this.covers.delete(k);
      throw e;
    } finally {
      seeded();
    }
  }

  /** The first bytes of a file, under the same rules as the engine's own first read of it. */
  private async readAhead(href: string, policy: OutboundPolicy, signal: AbortSignal): Promise<void> {
    if (!policy.trusted) checkUrl(href, policy);
    const { data, size } = await fetchRange(href, policy, 0, HEADER_BYTES, signal);
    // A copy of its own: a slice of a larger buffer would travel to the threads whole.
    this.seeds.set(readerKey(policy.trusted, href), { seed: { bytes: new Uint8Array(data), size }, given: new WeakSet() });
  }

  /** A warm-up's search that holds every item of `bbox` for this search, if one is fresh. */
  private coverFor(req: RemoteSearch, bbox: RemoteSearch['bbox']): Cover | null {
    if (req.remote || this.covers.size === 0) return null;
    const c = this.covers.get(coverKey(req));
    if (!c || Date.now() - c.at >= this.config.searchTtlSeconds * 1000) return null;
    return c.bbox === null || (bbox !== null && contains(c.bbox, bbox)) ? c : null;
  }

  private async searchItems(req: RemoteSearch): Promise<ItemMeta[]> {
    let meta: CollectionMeta;
    if (req.remote) meta = { id: req.collection, title: req.remote.api, description: '', license: 'other', epsg: 4326, resolution: [1, 1], bands: [], remote: { ...req.remote, signer: 'none' } };
    else {
      const stored = await this.record(req.collection);
      if (!stored?.remote) throw new ApiError('CollectionNotFound', { identifier: req.collection });
      meta = await this.fresh(stored);
    }
    try {
      return await this.cached(meta, req, req.bbox);
    } catch (e) {
      if (!(e instanceof ItemCapError)) throw e;
      if (!req.fallbackBbox) throw capExceeded(e, meta.id);
      try {
        return await this.cached(meta, req, req.fallbackBbox);
      } catch (e2) {
        throw e2 instanceof ItemCapError ? capExceeded(e2, meta.id) : e2;
      }
    }
  }

  private cached(meta: CollectionMeta, req: RemoteSearch, bbox: RemoteSearch['bbox']): Promise<ItemMeta[]> {
    const k = key(req, bbox);
    const hit = this.searches.get(k);
    if (hit && Date.now() - hit.at < this.config.searchTtlSeconds * 1000) return hit.items;
    const cover = this.coverFor(req, bbox);
    const items = cover
      ? cover.items.then(
          async (all) => {
            // The headers read ahead go along with the answer when they come soon.
            await Promise.race([cover.seeded, new Promise((res) => setTimeout(res, SEED_WAIT_MS).unref())]);
            return bbox ? all.filter((it) => intersects(it.bbox4326, bbox)) : all;
          },
          () => this.run(meta, req, bbox),
        )
      : this.run(meta, req, bbox);
    const entry = { at: Date.now(), items, size: 1 };
    this.searches.set(k, entry);
    items.then(
      (found) => {
        // Sized once known (a search under way counts as one item).
        if (this.searches.peek(k) === entry) this.searches.set(k, { ...entry, size: found.length });
      },
      () => {
        if (this.searches.peek(k) === entry) this.searches.delete(k);
      },
    );
    return items;
  }

  private async header(href: string, policy: OutboundPolicy): Promise<RasterInfo> {
    const { BlockCache, openRaster } = await import('./cog-reader.js');
    const cache = await (this.headers ??= Promise.resolve(new BlockCache(HEADER_CACHE_BYTES)));
    return (await openRaster(href, policy, cache)).info;
  }

  private capOf(meta: CollectionMeta, mode: RemoteSearch['mode']): number {
    const own = meta.remote!.maxItems;
    return mode === 'job' ? Math.max(own ?? 0, this.config.jobMaxItems) : (own ?? this.config.maxItems);
  }

  private async run(meta: CollectionMeta, req: RemoteSearch, bbox: RemoteSearch['bbox']): Promise<ItemMeta[]> {
    const r = meta.remote!;
    const cap = this.capOf(meta, req.mode);
    // The administrator's API is trusted with its asset hosts; a user's goes by the outbound rules.
    const policy = r.onUsersBehalf ? this.usersPolicy : TRUSTED;
    let features: any[];
    try {
      ({ features } = await searchItems(
        { url: r.api, conformsTo: r.conformsTo, search: r.search, policy },
        { ...(r.params?.collections ? {} : { collections: [r.collection] }), bbox, datetime: stacInterval(req.temporal), conditions: req.conditions, maxItems: cap, extra: r.params },
      ));
    } catch (e) {
      if (e instanceof ItemCapError) throw e;
      if (e instanceof OutboundRefused) throw usersMistake(e);
      if (e instanceof StacApiError) throw r.onUsersBehalf ? usersMistake(e) : unavailable(meta, e.message);
      throw e;
    }
    const signer = this.signer(meta);
    const base = r.search?.href ?? `${r.api}/search`;
    try {
      const items = await Promise.all(
        features.map((f) =>
          itemOf(
            f,
            base,
            r.bandAssets,
            (h) => signer.sign(h),
            (href, p) => this.header(href, p),
            policy,
          ),
        ),
      );
      return items.filter((x): x is ItemMeta => x !== null);
    } catch (e) {
      // A signer that cannot sign, or an item without projection metadata whose header cannot be read.
      if (e instanceof ApiError) throw e;
      if (r.onUsersBehalf && (e instanceof OutboundRefused || e instanceof RemoteError || e instanceof RasterFormatError)) throw usersMistake(e);
      throw unavailable(meta, (e as Error).message);
    }
  }
}

/** The refusal of a load whose search finds more items than allowed. */
export function capExceeded(e: ItemCapError, collection: string): ApiError {
  return new ApiError(
    'ProcessGraphComplexity',
    {},
    `The load of '${collection}' finds ${e.found === null ? 'more than' : e.found} items in its STAC API, more than the ${e.cap} one load may use here (the collection's --max-items, XEO_STAC_MAX_ITEMS for /result and tiles, XEO_STAC_JOB_MAX_ITEMS for batch jobs). Narrow spatial_extent or temporal_extent, or filter by properties (eo:cloud_cover, say).`,
  );
}
