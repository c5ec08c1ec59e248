// Serves the tiles of secondary web services: looks up the service (kept in memory for a few
// seconds), answers from the tile cache inside the uWS callback when it can, answers tiles outside
// the service's data with an empty image without computing, and otherwise renders the tile on the
// compute pool (the same execute() as /result, with the tile as the region every load fills).
import type { Config } from '../core/config.js';
import type { Store, ServiceRecord } from '../store/types.js';
import type { Compute } from '../compute/pool.js';
import type { Graph } from '../core/graph.js';
import type { UserProcess } from '../core/graph.js';
import { ApiError } from '../core/errors.js';
import { userProcessesOf } from '../graph/user-processes.js';
import { transformBox } from '../data/crs.js';
import { gridFor, type Box, type Grid } from '../core/grid.js';
import { encodePng } from '../output/png-writer.js';
import { encodeJpeg } from '../output/jpeg-writer.js';
import { serverTiming } from '../core/stages.js';
import { tileBounds, tileGrid, validTile, MERCATOR_HALF, type TileCoord } from './tile-grid.js';
import { tileConfigOf, type TileConfig } from './service-types.js';
import { serviceExtent, type LonLatBox } from './extent.js';
import { TileCache, etagOf, type CachedTile } from './cache.js';
import { ServiceActivity } from './activity.js';
import { createHash } from 'node:crypto';

/** How long a service's record is trusted before it is read again (changes by other servers, stored processes). */
const STATE_TTL_MS = 15_000;

export type TileFormat = 'png' | 'jpeg';

interface ServiceState {
  record: ServiceRecord;
  /** Cache key prefix: service id and a hash of everything that shapes its tiles. */
  prefix: string;
  hash: string;
  config: TileConfig;
  graph: Graph;
  userProcesses: Record<string, UserProcess>;
  extent: LonLatBox | null;
  /** The extent in Web Mercator, for the outside-the-data test. */
  mercator: Box | null;
  range: Promise<[number, number] | null> | null;
  loadedAt: number;
}

/** A tile as HTTP wants it: 200 with the image, or 304 when the client's ETag still matches. */
export interface TileAnswer {
  status: 200 | 304;
  headers: Record<string, string>;
  body?: Buffer;
  contentType?: string;
}

/** What the API asks of the tile server (another implementation may take its place). */
export type Tiles = Pick<TileServer, 'tile' | 'extentOf' | 'invalidate' | 'prepare' | 'activity' | 'close'>;

export class TileServer {
  readonly cache: TileCache;
  readonly activity: ServiceActivity;
  private readonly states = new Map<string, ServiceState>();
  private readonly empties = new Map<string, CachedTile>();
  private readonly cacheControl: string;

  constructor(
    private readonly store: Store,
    private readonly compute: Compute,
    private readonly config: Config,
  ) {
    this.cache = new TileCache(config.tileCacheBytes);
    this.activity = new ServiceActivity(store);
    this.cacheControl = `public, max-age=${config.tileMaxAge}`;
  }

  /** A service's state, or null when it does not exist. */
  private state(id: string): ServiceState | null {
    const now = Date.now();
    const st = this.states.get(id);
    if (st && now - st.loadedAt < STATE_TTL_MS) return st;
    const record = this.store.services.get(id);
    if (!record) {
      this.states.delete(id);
      return null;
    }
    const graph = (record.process.process_graph ?? {}) as Graph;
    const userProcesses = userProcessesOf(this.store.processGraphs, record.userId, graph);
    const hash = createHash('sha256')
      .update(JSON.stringify([record.type, graph, record.configuration, userProcesses]))
      .digest('base64url')
      .slice(0, 16);
    if (st && st.hash !== hash) this.cache.purge(st.prefix);
    const extent = serviceExtent(this.store, graph);
    const next: ServiceState = {
      record,
      prefix: `${id}:${hash}:`,
      hash,
      config: tileConfigOf(record.configuration),
      graph,
      userProcesses,
      extent,
      mercator: extent ? mercatorBox(extent) : null,
      range: st && st.hash === hash ? st.range : null,
      loadedAt: now,
    };
    this.states.set(id, next);
    return next;
  }

  /** Forgets a service's state and tiles (after a change or deletion). */
  invalidate(id: string): void {
    this.states.delete(id);
    this.cache.purge(`${id}:`);
  }

  /**
   * Starts what a service's first tile would otherwise wait for, as soon as the service exists or
   * changes: the value range of its colours (an estimate over its whole extent when the
   * configuration fixes none), so the first tile costs its own reads only. Failures are left for
   * the first tile to meet and report.
   */
  prepare(id: string): void {
    const st = this.state(id);
    if (st?.record.enabled) this.rangeOf(st).catch(() => {});
  }

  /** The service's extent in WGS84 (null: unknown), for the map page and WMTS. */
  extentOf(id: string): LonLatBox | null {
    return this.state(id)?.extent ?? null;
  }

  /**
   * The answer for one tile. Synchronous for cache hits and empty tiles (sent inside the uWS
   * callback), a promise when the tile has to be rendered.
   */
  tile(id: string, coord: TileCoord, format: TileFormat | null, ifNoneMatch: string | undefined, abortable?: () => AbortSignal): TileAnswer | Promise<TileAnswer> {
    const st = this.state(id);
    if (!st || !st.record.enabled) throw new ApiError('ServiceNotFound', { identifier: id });
    const tileName = `${coord.z}/${coord.x}/${coord.y}`;
    if (!validTile(coord)) throw new ApiError('TileInvalid', { tile: tileName, reason: `at zoom ${coord.z} x and y run from 0 to ${2 ** Math.min(coord.z, 30) - 1}` });
    const cfg = st.config;
    if (coord.z < cfg.min_zoom || coord.z > cfg.max_zoom) {
      throw new ApiError('TileInvalid', { tile: tileName, reason: `this service draws zoom levels ${cfg.min_zoom} to ${cfg.max_zoom}` });
    }
    const fmt = format ?? cfg.format;
    // The prefix holds a hash of the configuration (the tile size with it); the format may come from the URL.
    const key = `${st.prefix}${fmt}:${tileName}`;
    const hit = this.cache.get(key);
    if (hit) {
      this.activity.hit(id);
      return this.answer(hit, ifNoneMatch);
    }
    if (st.mercator && !intersects(st.mercator, tileBox(coord))) {
      this.activity.empty(id);
      return this.answer(this.empty(cfg.tile_size, fmt), ifNoneMatch);
    }
    const signal = abortable?.();
    return this.cache
      .render(key, (s) => this.render(st, coord, fmt, s), signal, () => this.activity.joined(id))
      .then((t) => this.answer(t, ifNoneMatch, true))
      .catch((e) => {
        if (!signal?.aborted) this.activity.failed(id, e, coord);
        throw e;
      });
  }

  private answer(t: CachedTile, ifNoneMatch: string | undefined, rendered = false): TileAnswer {
    const headers: Record<string, string> = { ETag: t.etag, 'Cache-Control': this.cacheControl };
    if (rendered && t.timing) headers['Server-Timing'] = t.timing;
    if (ifNoneMatch !== undefined && matchesEtag(ifNoneMatch, t.etag)) return { status: 304, headers };
    return { status: 200, body: t.body, contentType: t.contentType, headers };
  }

  private async render(st: ServiceState, coord: TileCoord, fmt: TileFormat, signal: AbortSignal): Promise<CachedTile> {
    const range = await this.rangeOf(st);
    const size = st.config.tile_size;
    const started = performance.now();
    const out = await this.compute
      .run(
        {
          graph: st.graph,
          userProcesses: st.userProcesses,
          maxValues: this.config.syncMaxValues,
          limitAdvice: 'Narrow the dates or bands of the service, or use a batch job.',
          region: tileGrid(coord, size),
          mode: 'tile',
          parameters: tileParameters(coord, size),
          output: { format: fmt === 'png' ? 'PNG' : 'JPEG', options: { colormap: st.config.colormap, min: range?.[0] ?? null, max: range?.[1] ?? null } },
        },
        signal,
      )
      // A tile where the loads find no items (a searched collection's gap) is empty, not an error.
      .catch((e) => {
        if ((e as { code?: string }).code === 'NoDataAvailable') return null;
        throw e;
      });
    if (!out) return this.empty(size, fmt);
    this.activity.rendered(st.record.id, out.values, out.stages.total, performance.now() - started);
    return { body: out.body, contentType: out.mediaType, etag: etagOf(out.body), timing: serverTiming(out.stages) };
  }

  /**
   * The value range of one-band colours: the configured min and max, else the 2nd and 98th
   * percentiles of the service's result over its whole extent, estimated once per service version
   * from a 256-pixel overview (kept in the service's attributes), so all tiles share one scale.
   */
  private rangeOf(st: ServiceState): Promise<[number, number] | null> {
    const { min, max } = st.config;
    if (min !== null && max !== null) return Promise.resolve([min, max]);
    const stored = st.record.attributes.value_range as { min: number; max: number; version: string } | undefined;
    if (stored && stored.version === st.hash) return Promise.resolve([min ?? stored.min, max ?? stored.max]);
    if (!st.mercator) return Promise.resolve(null);
    st.range ??= this.estimateRange(st).then(
      (r) => (r ? [min ?? r[0], max ?? r[1]] : null),
      (e) => {
        st.range = null;
        throw e;
      },
    );
    return st.range;
  }

  private async estimateRange(st: ServiceState): Promise<[number, number] | null> {
    const [x0, y0, x1, y1] = st.mercator!;
    const res = Math.max(x1 - x0, y1 - y0) / 256;
    const grid: Grid = gridFor(3857, [x0, y0, x1, y1], res);
    const out = await this.compute.run({
      graph: st.graph,
      userProcesses: st.userProcesses,
      maxValues: this.config.syncMaxValues,
      limitAdvice: 'Narrow the dates or bands of the service.',
      region: grid,
      mode: 'tile',
      parameters: tileParameters({ z: 0, x: 0, y: 0 }, 256, { west: x0, south: y0, east: x1, north: y1, crs: 3857 }),
      // The percentiles are taken on the compute thread, not on the event loop.
      range: true,
    });
    if (!out.range) return null;
    const [lo, hi] = out.range;
    // Kept with the service, so a restart does not estimate again.
    const fresh = this.store.services.get(st.record.id);
    if (fresh) {
      fresh.attributes = { ...fresh.attributes, value_range: { min: lo, max: hi, version: st.hash } };
      this.store.services.update(fresh);
    }
    return [lo, hi];
  }

  /** A fully transparent PNG (or white JPEG) tile. */
  private empty(size: number, fmt: TileFormat): CachedTile {
    const k = `${size}:${fmt}`;
    let t = this.empties.get(k);
    if (!t) {
      const body =
        fmt === 'png'
          ? encodePng({ width: size, height: size, channels: 4, data: new Uint8Array(size * size * 4) })
          : encodeJpeg({ width: size, height: size, data: new Uint8Array(size * size * 4).fill(255) });
      this.empties.set(k, (t = { body, contentType: fmt === 'png' ? 'image/png' : 'image/jpeg', etag: etagOf(body) }));
    }
    return t;
  }

  close(): void {
    this.activity.close();
  }
}

/** The process parameters of the XYZ service type for one tile (or, for the value range, for a whole extent drawn as one tile). */
function tileParameters(coord: TileCoord, size: number, extent: Record<string, number> = tileBounds(coord)): Record<string, unknown> {
  return { spatial_extent: extent, tile_zoom: coord.z, tile_x: coord.x, tile_y: coord.y, tile_size: size };
}

function tileBox(coord: TileCoord): Box {
  const b = tileBounds(coord);
  return [b.west, b.south, b.east, b.north];
}

function mercatorBox(e: LonLatBox): Box {
  // Web Mercator ends at about ±85.05°.
  const lat = (v: number) => Math.max(-85.05, Math.min(85.05, v));
  const b = transformBox([e[0], lat(e[1]), e[2], lat(e[3])], 4326, 3857);
  return [Math.max(-MERCATOR_HALF, b[0]), Math.max(-MERCATOR_HALF, b[1]), Math.min(MERCATOR_HALF, b[2]), Math.min(MERCATOR_HALF, b[3])];
}

const intersects = (a: Box, b: Box) => a[0] < b[2] && a[2] > b[0] && a[1] < b[3] && a[3] > b[1];

/** If-None-Match: a list of entity tags (weak ones compare by their opaque part), or `*`. */
function matchesEtag(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}
