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
}

export interface ItemAsset {
  href: string;
  /** 0-based sample (band) index inside the file. */
  sample: number;
}

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

/** What a load reads of the catalogue. */
export interface CatalogSource {
  /** Absent: the administrator's catalogue (trusted, reported against load_collection's id). */
  access?: SourceAccess;
  collections: {
    get(id: string): CollectionMeta | null;
    /** Items of a collection ordered by datetime, optionally within [start, end) (ISO strings). */
    items(collectionId: string, start?: string | null, end?: string | null): ItemMeta[];
  };
}
