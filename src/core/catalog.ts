// The catalogue's words: what Xeo knows of a collection, its bands and its items, and the narrow view
// of the catalogue that a running graph reads from. Shared by the data layer that reads items, the
// record store that keeps them, ingestion that makes them and the API that shows them.

/** A band of a collection: its name, EO metadata and how it is stored. */
export interface BandMeta {
  name: string;
  common_name?: string;
  center_wavelength?: number;
  full_width_half_max?: number;
  description?: string;
  /** Sample type of the stored data (kept for writers; cubes are Float32). */
  data_type: string;
  nodata: number | null;
  /** Categorical bands (classes) are resampled with nearest neighbour only. */
  categorical?: boolean;
  scale?: number;
  offset?: number;
}

/** What Xeo keeps about a collection; the STAC document is derived from it and its items. */
export interface CollectionMeta {
  id: string;
  title: string;
  description: string;
  license: string;
  keywords?: string[];
  providers?: { name: string; description?: string; roles?: string[]; url?: string }[];
  /** Native CRS and pixel size of the items. */
  epsg: number;
  resolution: [number, number];
  bands: BandMeta[];
  /** Extra STAC summaries (platform, instruments, ...). */
  summaries?: Record<string, unknown>;
  links?: { rel: string; href: string; type?: string; title?: string }[];
  /** Set for a collection backed by a STAC API (collections add-stac): its items are searched, never stored. */
  remote?: RemoteSource;
}

/** Where a STAC API collection lives, and what was last read of it (refreshed after a TTL). */
export interface RemoteSource {
  /** Landing page of the STAC API, without trailing slash. */
  api: string;
  /** The collection's id in that API. */
  collection: string;
  /** Most items one load may use; null = the server's defaults. */
  maxItems: number | null;
  signer: 'none' | 'planetary-computer' | 's3';
  /** Asset key of each band (band names come from eo:bands, else the asset key). */
  bandAssets: Record<string, string>;
  conformsTo: string[];
  search: { href: string; method: 'GET' | 'POST' } | null;
  extent: { bbox: [number, number, number, number] | null; interval: [string | null, string | null] };
  /** The API's queryables of the collection (JSON Schema), null when it has none. */
  queryables: Record<string, unknown> | null;
  /** When the metadata above was read (ISO date-time). */
  fetched: string;
  /** Search parameters of a user's /search URL (load_stac), sent with every search. */
  params?: Record<string, unknown>;
  /**
   * A user's STAC API (load_stac): its documents and the assets of its items are fetched under the
   * outbound rules (data/outbound.ts). Absent: a collection the administrator added, trusted with
   * its asset hosts.
   */
  onUsersBehalf?: boolean;
}

export interface ItemAsset {
  href: string;
  /** 0-based sample (band) index inside the file. */
  sample: number;
}

/**
 * The first bytes of a remote GeoTIFF (its header), read ahead by a service's warm-up on the main
 * thread and handed to an engine thread with the items of a search, so the thread opens the file
 * without a round trip of its own (data/stac-collections.ts, data/range-source.ts).
 */
export interface HeaderSeed {
  bytes: Uint8Array;
  /** The file's size, when the answer told it. */
  size: number | null;
}

/** The key of an opened file (and of its seed) in an engine thread's cache: trusted or not, and its href. */
export const readerKey = (trusted: boolean, href: string): string => `${trusted ? 't' : 'u'}\u0000${href}`;

/** Bytes of a remote GeoTIFF asked for first: a COG's header (IFDs, block offsets) fits in them. */
export const HEADER_BYTES = 64 * 1024;

export interface ItemMeta {
  id: string;
  datetime: string;
  epsg: number;
  /** Native bbox [minx, miny, maxx, maxy] and WGS84 bbox [w, s, e, n]. */
  bbox: [number, number, number, number];
  bbox4326: [number, number, number, number];
  /** Band name -> where its data is. */
  assets: Record<string, ItemAsset>;
  properties?: Record<string, unknown>;
  /** Headers of some of its assets, by href, read ahead (a search's answer to an engine thread only). */
  seeds?: Record<string, HeaderSeed>;
}

/**
 * Who named the data of a source: the administrator (the catalogue: trusted, its hrefs may be any
 * host or a local path) or a user (load_stac: only http(s) hrefs the outbound rules allow), and the
 * process argument an unreadable asset is reported against.
 */
export interface SourceAccess {
  trusted: boolean;
  process: string;
  parameter: string;
}

/**
 * What one load holds of the catalogue once its records have been read: its collection and the
 * items it may use, in memory, so planning and reading a cube never wait for the record store.
 */
export interface CatalogSnapshot {
  /** Absent: the administrator's catalogue (trusted, reported against load_collection's id). */
  access?: SourceAccess;
  collections: {
    get(id: string): CollectionMeta | null;
    /** Items of a collection ordered by datetime, optionally within [start, end) (ISO strings). */
    items(collectionId: string, start?: string | null, end?: string | null): ItemMeta[];
  };
}

/** What a load reads of the catalogue (the record store, or a user's STAC document read into memory). */
export interface CatalogSource {
  /** Absent: the administrator's catalogue (trusted, reported against load_collection's id). */
  access?: SourceAccess;
  collections: {
    get(id: string): Promise<CollectionMeta | null>;
    /** Items of a collection ordered by datetime, optionally within [start, end) (ISO strings). */
    items(collectionId: string, start?: string | null, end?: string | null): Promise<ItemMeta[]>;
  };
  /** Items of a collection backed by a STAC API (`remote` in its record), found by an item search. */
  search?: (req: RemoteSearch) => Promise<ItemMeta[]>;
}

export type FilterOp = '=' | '<>' | '<' | '<=' | '>' | '>=';

/** One condition on an item property; a search's filter is a conjunction of them. */
export interface PropertyCondition {
  property: string;
  op: FilterOp;
  value: string | number | boolean;
}

/** What a load asks of a STAC API collection (answered by data/stac-collections.ts). */
export interface RemoteSearch {
  collection: string;
  /** WGS84 [w, s, e, n] to search; null = the whole collection. */
  bbox: [number, number, number, number] | null;
  /** A smaller area to search instead when `bbox` finds more items than allowed (a tile inside a padded area). */
  fallbackBbox?: [number, number, number, number] | null;
  temporal: [string | null, string | null] | null;
  conditions: PropertyCondition[];
  /** The mode decides the cap on items (jobs may use more). */
  mode: 'sync' | 'tile' | 'job';
  /** A STAC API collection that is not in the catalog (load_stac's URL): searched unsigned. */
  remote?: RemoteSource;
}
