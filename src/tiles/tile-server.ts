// Serves the tiles of the map's layers: secondary web services (service-layers.ts) and the
// previews of collections (preview-layers.ts), both drawn through one cache and renderer
// (tile-renderer.ts). A cached tile is answered inside the uWS callback, with no promise; tiles
// outside a layer's data are empty images without computing; other tiles render on the compute
// pool with the same execute() as /result.
import type { Config } from '../core/config.js';
import type { Store } from '../store/types.js';
import type { ItemMeta, RemoteSearch } from '../core/catalog.js';
import type { Compute } from '../compute/pool.js';
import type { TileCoord } from './tile-grid.js';
import type { LonLatBox } from './extent.js';
import type { TileCache } from './cache.js';
import { ServiceActivity } from './activity.js';
import type { TileAnswer, TileFormat } from './layer.js';
import { TileRenderer } from './tile-renderer.js';
import { ServiceLayers, type WarmFn } from './service-layers.js';
import { PreviewLayers, type PreviewInfo } from './preview-layers.js';
import type { RemoteProcesses } from '../graph/remote-processes.js';
import type { Graph } from '../core/graph.js';

/** What the API asks of the tile server (another implementation may take its place). */
export type Tiles = Pick<TileServer, 'tile' | 'extentOf' | 'invalidate' | 'prepare' | 'activity' | 'close' | 'previewTile' | 'preview'>;

export class TileServer {
  readonly activity: ServiceActivity;
  private readonly renderer: TileRenderer;
  private readonly services: ServiceLayers;
  private readonly previews: PreviewLayers;

  constructor(
    store: Store,
    compute: Compute,
    config: Config,
    /** Processes named by URL, for the graphs of services. */
    remote: RemoteProcesses,
    /** Item searches of STAC API collections (data/stac-collections.ts), for the newest date of a preview. */
    search: ((req: RemoteSearch) => Promise<ItemMeta[]>) | null = null,
    /** Warm-ups of the searches and headers of services' STAC API collections (data/stac-collections.ts). */
    warmUp: WarmFn | null = null,
  ) {
    this.activity = new ServiceActivity(store);
    this.renderer = new TileRenderer(compute, config, this.activity);
    this.services = new ServiceLayers(store, config, remote, this.renderer, warmUp);
    this.previews = new PreviewLayers(store, this.renderer, search);
  }

  /** The one cache of rendered tiles, of every layer. */
  get cache(): TileCache {
    return this.renderer.cache;
  }

  /** Forgets a service's state and tiles (after a change or deletion). */
  invalidate(id: string): void {
    this.services.invalidate(id);
  }

  /** Starts what a service's first tile would otherwise wait for (see ServiceLayers.prepare). */
  prepare(id: string, graph?: Graph): void {
    this.services.prepare(id, graph);
  }

  /** The service's extent in WGS84 (null: unknown), for the map page and WMTS. */
  extentOf(id: string): Promise<LonLatBox | null> {
    return this.services.extentOf(id);
  }

  /**
   * The answer for one tile of a service. Synchronous for cache hits and empty tiles (sent inside
   * the uWS callback), a promise when the tile has to be rendered.
   */
  tile(id: string, coord: TileCoord, format: TileFormat | null, ifNoneMatch: string | undefined, abortable?: () => AbortSignal): TileAnswer | Promise<TileAnswer> {
    return this.services.tile(id, coord, format, ifNoneMatch, abortable);
  }

  /** A tile of a collection's preview for `datetime` (null: the newest date), answered as a service's. */
  previewTile(collection: string, datetime: string | null, coord: TileCoord, format: TileFormat | null, ifNoneMatch: string | undefined, abortable?: () => AbortSignal): TileAnswer | Promise<TileAnswer> {
    return this.previews.tile(collection, datetime, coord, format, ifNoneMatch, abortable);
  }

  /** What the map page and WMTS of a preview show. */
  preview(collection: string, datetime: string | null): Promise<PreviewInfo> {
    return this.previews.preview(collection, datetime);
  }

  close(): Promise<void> {
    return this.activity.close();
  }
}
