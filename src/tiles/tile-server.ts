// Serves the tiles of secondary web services: looks up the service (kept in memory; read again in
// the background after a few seconds, while the kept state goes on serving, so a slow or hung
// record store never holds a tile it already knows), answers from the tile cache inside the uWS
// callback when it can, answers tiles outside the service's data with an empty image without
// computing, and otherwise renders the tile on the compute pool (the same execute() as /result,
// with the tile as the region every load fills).
import type { Config } from '../core/config.js';
import type { Store, ServiceRecord } from '../store/types.js';
import type { CollectionMeta, ItemMeta, RemoteSearch } from '../core/catalog.js';
import type { Compute } from '../compute/pool.js';
import type { Graph } from '../core/graph.js';
import type { UserProcess } from '../core/graph.js';
import { ApiError } from '../core/errors.js';
import { userProcessesOf } from '../graph/user-processes.js';
import { processDefaults, processingParameters, resolveOptions, type ProcessingParameter } from '../core/processing-options.js';
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
import { itemsWithin, newestRemoteItem, previewDates, previewExtent, previewGraph, previewMinZoom, previewStyle, PREVIEW_MAX_ZOOM, type PreviewDates, type PreviewStyle } from './preview.js';
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { gauge, tileAnswers, tileStages, TILE_SLOTS, TILE_STAGE_SLOTS } from '../core/metrics.js';
import { log } from '../core/log.js';

/**
 * How long a service's record (or a preview's collection) is used before it is read again in the
 * background (changes by other servers without a change notice, stored processes). A change made
 * through any node drops the state at once (invalidate).
 */
const STATE_TTL_MS = 15_000;

export type TileFormat = 'png' | 'jpeg';

/** What the tiles of a layer (a service, or a collection's preview) are drawn from. */
interface LayerState {
  /** Cache key prefix: the layer and a hash of everything that shapes its tiles. */
  prefix: string;
  hash: string;
  config: TileConfig;
  /** The graph whose result is coloured (a preview's without its stretch). */
  graph: Graph;
  userProcesses: Record<string, UserProcess>;
  /** Whose graph it is (a service's owner: their user-defined functions run in their own interpreters); none for previews. */
  user?: string;
  extent: LonLatBox | null;
  /** The extent in Web Mercator, for the outside-the-data test. */
  mercator: Box | null;
  loadedAt: number;
  /** A service's processing parameters: the most values a tile's load reads, and its Cache-Control (else the server's). */
  maxValues?: number;
  cacheControl?: string;
}

interface ServiceState extends LayerState {
  record: ServiceRecord;
  range: Promise<[number, number] | null> | null;
}

/** A collection's preview for some dates (tiles/preview.ts). */
interface PreviewState extends LayerState {
  collection: string;
  meta: CollectionMeta;
  style: PreviewStyle;
  dates: PreviewDates;
  /** Dates of the collection's items (none known for a STAC API collection), for the map page's picker. */
  itemDates: string[];
  /** A local collection without items at these dates: every tile is empty. */
  empty: boolean;
}

/** The page and capabilities of a preview need these. */
export interface PreviewInfo {
  title: string;
  extent: LonLatBox | null;
  minZoom: number;
  maxZoom: number;
  legend: string;
  /** The colour map of one band ('rgb': three bands as red, green and blue), for the legend. */
  colormap: string;
  dates: PreviewDates;
  itemDates: string[];
  temporal: [string | null, string | null];
}

/** How long the newest item of a STAC API collection is trusted. */
const NEWEST_TTL_MS = 300_000;
/** Previews kept at once (one per collection and `datetime`), and stretches per collection, dates and area. */
const PREVIEW_STATES = 256;
const PREVIEW_RANGES = 1024;

/** The newest item's date of a STAC API collection: the search, its answer once known, and whether a newer search is under way. */
interface NewestItem {
  at: number;
  date: Promise<string | null>;
  known?: string | null;
  refreshing?: boolean;
}

/** A tile as HTTP wants it: 200 with the image, or 304 when the client's ETag still matches. */
export interface TileAnswer {
  status: 200 | 304;
  headers: Record<string, string>;
  body?: Buffer;
  contentType?: string;
}

/** What the API asks of the tile server (another implementation may take its place). */
export type Tiles = Pick<TileServer, 'tile' | 'extentOf' | 'invalidate' | 'prepare' | 'activity' | 'close' | 'previewTile' | 'preview'>;

export class TileServer {
  readonly cache: TileCache;
  readonly activity: ServiceActivity;
  private readonly states = new Map<string, ServiceState>();
  /** Reads of a service's state under way, each with the token that lets it keep its answer (invalidate takes it back). */
  private readonly loading = new Map<string, { token: object; state: Promise<ServiceState | null> }>();
  private readonly previewLoading = new Map<string, Promise<PreviewState>>();
  private readonly empties = new Map<string, CachedTile>();
  private readonly cacheControl: string;
  private readonly serviceParameters: ProcessingParameter[];
  private readonly previews = new LRUCache<string, PreviewState>({ max: PREVIEW_STATES });
  /** Stretches of previews, computed once per collection version, dates and overview area (keyed by cache prefix and area). */
  private readonly previewRanges = new LRUCache<string, Promise<[number, number] | null>>({ max: PREVIEW_RANGES });
  /** The newest item of each STAC API collection (the default date of its preview), found again after NEWEST_TTL_MS. */
  private readonly newest = new LRUCache<string, NewestItem>({ max: PREVIEW_STATES });

  constructor(
    private readonly store: Store,
    private readonly compute: Compute,
    private readonly config: Config,
    /** Item searches of STAC API collections (data/stac-collections.ts), for the newest date of a preview. */
    private readonly search: ((req: RemoteSearch) => Promise<ItemMeta[]>) | null = null,
  ) {
    this.cache = new TileCache(config.tileCacheBytes);
    this.activity = new ServiceActivity(store);
    this.cacheControl = `public, max-age=${config.tileMaxAge}`;
    this.serviceParameters = processingParameters(config).service;
    const cache = this.cache;
    gauge('xeo_tile_cache_bytes', 'Bytes of rendered tiles held in the tile cache (XEO_TILE_CACHE_BYTES bounds it).', [], () => [{ labels: {}, value: cache.bytes }]);
    gauge('xeo_tile_cache_entries', 'Tiles held in the tile cache.', [], () => [{ labels: {}, value: cache.entries }]);
  }

  /**
   * A service's state (null when it does not exist): at once when kept (read again in the
   * background once older than STATE_TTL_MS), else a promise of its first read.
   */
  private state(id: string): ServiceState | null | Promise<ServiceState | null> {
    const st = this.states.get(id);
    if (!st) return this.load(id);
    if (Date.now() - st.loadedAt >= STATE_TTL_MS) {
      // The kept state serves until the new one is read; a read that fails leaves it in place.
      this.load(id).catch(() => {});
    }
    return st;
  }

  /** Reads a service's state once, however many requests ask for it meanwhile. */
  private load(id: string): Promise<ServiceState | null> {
    const under = this.loading.get(id);
    if (under) return under.state;
    const token = {};
    const state = this.read(id).then((next) => {
      // Invalidated while it was read: the answer is not kept (the next request reads again).
      if (this.loading.get(id)?.token !== token) return next;
      const st = this.states.get(id);
      if (!next) this.states.delete(id);
      else {
        if (st && st.hash !== next.hash) this.cache.purge(st.prefix);
        if (st && st.hash === next.hash) next.range = st.range;
        this.states.set(id, next);
      }
      return next;
    });
    this.loading.set(id, { token, state });
    const done = () => this.loading.get(id)?.token === token && this.loading.delete(id);
    state.then(done, done);
    return state;
  }

  private async read(id: string): Promise<ServiceState | null> {
    const record = await this.store.services.get(id);
    if (!record) return null;
    const graph = (record.process.process_graph ?? {}) as Graph;
    const userProcesses = await userProcessesOf(this.store.processGraphs, record.userId, graph);
    const hash = createHash('sha256')
      .update(JSON.stringify([record.type, graph, record.configuration, userProcesses, record.options ?? {}]))
      .digest('base64url')
      .slice(0, 16);
    const extent = await serviceExtent(this.store, graph);
    const options = resolveOptions(this.serviceParameters, record.options ?? {}, processDefaults('service', record.process, userProcesses));
    return {
      record,
      maxValues: options.max_values as number,
      cacheControl: `public, max-age=${options.max_age as number}`,
      prefix: `${id}:${hash}:`,
      hash,
      config: tileConfigOf(record.configuration),
      graph,
      userProcesses,
      user: record.userId,
      extent,
      mercator: extent ? mercatorBox(extent) : null,
      range: null,
      loadedAt: Date.now(),
    };
  }

  /** Forgets a service's state and tiles (after a change or deletion). */
  invalidate(id: string): void {
    this.states.delete(id);
    this.loading.delete(id);
    this.cache.purge(`${id}:`);
  }

  /**
   * Starts what a service's first tile would otherwise wait for, as soon as the service exists or
   * changes: the value range of its colours (an estimate over its whole extent when the
   * configuration fixes none), so the first tile costs its own reads only. Failures are left for
   * the first tile to meet and report.
   */
  prepare(id: string): void {
    Promise.resolve(this.state(id))
      .then((st) => (st?.record.enabled ? this.rangeOf(st) : null))
      // a head start only: a failure here is met again, and answered, by the first tile request
      .catch(() => {});
  }

  /** The service's extent in WGS84 (null: unknown), for the map page and WMTS. */
  async extentOf(id: string): Promise<LonLatBox | null> {
    return (await this.state(id))?.extent ?? null;
  }

  /**
   * The answer for one tile. Synchronous for cache hits and empty tiles (sent inside the uWS
   * callback), a promise when the tile has to be rendered.
   */
  tile(id: string, coord: TileCoord, format: TileFormat | null, ifNoneMatch: string | undefined, abortable?: () => AbortSignal): TileAnswer | Promise<TileAnswer> {
    const st = this.state(id);
    if (st instanceof Promise) return st.then((s) => this.serviceTile(s, id, coord, format, ifNoneMatch, abortable));
    return this.serviceTile(st, id, coord, format, ifNoneMatch, abortable);
  }

  private serviceTile(st: ServiceState | null, id: string, coord: TileCoord, format: TileFormat | null, ifNoneMatch: string | undefined, abortable?: () => AbortSignal): TileAnswer | Promise<TileAnswer> {
    if (!st || !st.record.enabled) throw new ApiError('ServiceNotFound', { identifier: id });
    const cfg = st.config;
    return this.serve(st, id, coord, format, ifNoneMatch, abortable, async () => {
      const range = await this.rangeOf(st);
      return { graph: st.graph, options: { colormap: cfg.colormap, min: range?.[0] ?? null, max: range?.[1] ?? null } };
    });
  }

  /**
   * A tile of a collection's preview (tiles/preview.ts) for `datetime` (null: the newest date):
   * the same checks, cache, empty tiles and rendering as a service's tile.
   */
  previewTile(collection: string, datetime: string | null, coord: TileCoord, format: TileFormat | null, ifNoneMatch: string | undefined, abortable?: () => AbortSignal): TileAnswer | Promise<TileAnswer> {
    const draw = (st: PreviewState) => this.previewTileOf(st, coord, format, ifNoneMatch, abortable);
    const newest = this.newestOf(collection, datetime);
    if (newest instanceof Promise) return newest.then((n) => this.previewState(collection, datetime, n)).then(draw);
    const st = this.previewState(collection, datetime, newest);
    return st instanceof Promise ? st.then(draw) : draw(st);
  }

  private previewTileOf(st: PreviewState, coord: TileCoord, format: TileFormat | null, ifNoneMatch: string | undefined, abortable?: () => AbortSignal): TileAnswer | Promise<TileAnswer> {
    if (st.empty) {
      this.checkZoom(st, coord);
      tileAnswers.inc(TILE_SLOTS.preview.empty);
      return this.answer(this.empty(st.config.tile_size, format ?? st.config.format), ifNoneMatch);
    }
    return this.serve(st, null, coord, format, ifNoneMatch, abortable, async () => {
      const range = await this.previewRange(st, coord);
      // No valid pixel in the whole overview area: nothing to stretch, the tile is empty.
      if (!range) return null;
      const colormap = st.style.colormap === 'rgb' ? 'greys' : st.style.colormap;
      return { graph: previewGraph(st.meta, st.style, st.dates, range), options: { colormap, min: 0, max: 255 } };
    });
  }

  /** What the map page and WMTS of a preview show. */
  async preview(collection: string, datetime: string | null): Promise<PreviewInfo> {
    const st = await this.previewState(collection, datetime, await this.newestOf(collection, datetime));
    const meta = st.meta;
    const temporal: [string | null, string | null] = meta.remote ? meta.remote.extent.interval : [st.itemDates[0] ?? null, st.itemDates[st.itemDates.length - 1] ?? null];
    return { title: meta.title || meta.id, extent: st.extent, minZoom: st.config.min_zoom, maxZoom: st.config.max_zoom, legend: st.style.legend, colormap: st.style.colormap, dates: st.dates, itemDates: st.itemDates, temporal };
  }

  /**
   * The newest item's date of a STAC API collection when its preview needs it (no `datetime`), at
   * once when known (cache hits stay synchronous), else the search's promise; null otherwise.
   */
  private newestOf(collection: string, datetime: string | null): string | null | Promise<string | null> {
    if (datetime !== null || !this.search) return null;
    // A local collection's default preview known at once, without reading its record (cache hits stay cheap).
    const known = this.previews.get(`${collection}\n\n`);
    if (known && !known.meta.remote) return null;
    const now = Date.now();
    const e = this.newest.get(collection);
    if (e && (now - e.at <= NEWEST_TTL_MS || e.refreshing)) return e.known !== undefined ? e.known : e.date;
    const search = this.search;
    // Local: no newest item to find (the preview's own state knows its dates).
    const date = this.collectionMeta(collection).then((meta) => (meta.remote ? newestRemoteItem(meta, search) : null));
    if (e?.known !== undefined) {
      // The date found before serves until the new search answers; a failed one is tried again later.
      e.refreshing = true;
      date.then(
        (d) => this.newest.set(collection, { at: Date.now(), date, known: d }),
        () => (e.refreshing = false),
      );
      return e.known;
    }
    const entry: NewestItem = { at: now, date };
    date.then(
      (d) => (entry.known = d),
      () => this.newest.get(collection) === entry && this.newest.delete(collection),
    );
    this.newest.set(collection, entry);
    return date;
  }

  private async collectionMeta(id: string): Promise<CollectionMeta> {
    const meta = await this.store.collections.get(id);
    if (!meta) throw new ApiError('CollectionNotFound', { identifier: id });
    return meta;
  }

  /**
   * A collection's preview for `datetime`, kept like a service's state: at once when kept (read
   * again in the background once older than STATE_TTL_MS), else a promise of its first read.
   */
  private previewState(collection: string, datetime: string | null, newestRemote: string | null): PreviewState | Promise<PreviewState> {
    const key = `${collection}\n${datetime ?? ''}\n${newestRemote ?? ''}`;
    const st = this.previews.get(key);
    if (st && Date.now() - st.loadedAt < STATE_TTL_MS) return st;
    let p = this.previewLoading.get(key);
    if (!p) {
      p = this.readPreview(collection, datetime, newestRemote).then((next) => {
        this.previews.set(key, next);
        return next;
      });
      this.previewLoading.set(key, p);
      const done = () => this.previewLoading.get(key) === p && this.previewLoading.delete(key);
      p.then(done, done);
    }
    if (!st) return p;
    // The kept preview serves until the new one is read; a read that fails leaves it in place.
    p.catch(() => {});
    return st;
  }

  private async readPreview(collection: string, datetime: string | null, newestRemote: string | null): Promise<PreviewState> {
    const now = Date.now();
    const meta = await this.collectionMeta(collection);
    const all = meta.remote ? [] : await this.store.collections.items(collection);
    const dates = previewDates(meta, all, datetime, newestRemote);
    const items = meta.remote ? [] : itemsWithin(all, dates);
    const style = previewStyle(meta);
    const graph = previewGraph(meta, style, dates);
    // The items' ids and dates are in the hash: an import changes the preview.
    const hash = createHash('sha256')
      .update(JSON.stringify([meta, graph, items.map((it) => [it.id, it.datetime])]))
      .digest('base64url')
      .slice(0, 16);
    const extent = previewExtent(meta, items);
    const next: PreviewState = {
      collection,
      meta,
      style,
      dates,
      itemDates: [...new Set(all.map((it) => it.datetime.slice(0, 10)))],
      empty: !meta.remote && items.length === 0,
      prefix: `preview:${collection}:${hash}:`,
      hash,
      config: { tile_size: 256, min_zoom: previewMinZoom(meta, items.length ? items : all), max_zoom: PREVIEW_MAX_ZOOM, format: 'png', colormap: style.colormap, min: null, max: null },
      graph,
      userProcesses: {},
      extent,
      mercator: extent ? mercatorBox(extent) : null,
      loadedAt: now,
    };
    return next;
  }

  private checkZoom(st: LayerState, coord: TileCoord): void {
    const tileName = `${coord.z}/${coord.x}/${coord.y}`;
    if (!validTile(coord)) throw new ApiError('TileInvalid', { tile: tileName, reason: `at zoom ${coord.z} x and y run from 0 to ${2 ** Math.min(coord.z, 30) - 1}` });
    const cfg = st.config;
    if (coord.z < cfg.min_zoom || coord.z > cfg.max_zoom) {
      const what = 'collection' in st ? `this preview draws zoom levels ${cfg.min_zoom} to ${cfg.max_zoom} (coarser tiles would read more than the data's coarsest overview)` : `this service draws zoom levels ${cfg.min_zoom} to ${cfg.max_zoom}`;
      throw new ApiError('TileInvalid', { tile: tileName, reason: what });
    }
  }

  /**
   * The answer for one tile of a layer: from the cache, an empty image outside its data, or a render
   * of `drawing` (the graph and colours; null: an empty tile). `activityId` counts the tile for a
   * service's logs and usage (previews have none).
   */
  private serve(
    st: LayerState,
    activityId: string | null,
    coord: TileCoord,
    format: TileFormat | null,
    ifNoneMatch: string | undefined,
    abortable: (() => AbortSignal) | undefined,
    drawing: () => Promise<{ graph: Graph; options: Record<string, unknown> } | null>,
  ): TileAnswer | Promise<TileAnswer> {
    this.checkZoom(st, coord);
    const cfg = st.config;
    const tileName = `${coord.z}/${coord.x}/${coord.y}`;
    const fmt = format ?? cfg.format;
    // The prefix holds a hash of the configuration (the tile size with it); the format may come from the URL.
    const key = `${st.prefix}${fmt}:${tileName}`;
    const counts = activityId ? TILE_SLOTS.service : TILE_SLOTS.preview;
    const hit = this.cache.get(key);
    if (hit) {
      tileAnswers.inc(counts.hit);
      if (activityId) this.activity.hit(activityId);
      return this.answer(hit, ifNoneMatch, false, st.cacheControl);
    }
    if (st.mercator && !intersects(st.mercator, tileBox(coord))) {
      tileAnswers.inc(counts.empty);
      if (activityId) this.activity.empty(activityId);
      return this.answer(this.empty(cfg.tile_size, fmt), ifNoneMatch, false, st.cacheControl);
    }
    tileAnswers.inc(this.cache.rendering(key) ? counts.shared : counts.miss);
    const signal = abortable?.();
    return this.cache
      .render(key, (s) => this.render(st, activityId, coord, fmt, s, drawing), signal, () => activityId && this.activity.joined(activityId))
      .then((t) => this.answer(t, ifNoneMatch, true, st.cacheControl))
      .catch((e) => {
        if (!signal?.aborted) {
          tileAnswers.inc((e as { code?: string }).code === 'InfrastructureBusy' ? counts.shed : counts.failed);
          if (activityId) this.activity.failed(activityId, e, coord);
        }
        throw e;
      });
  }

  private answer(t: CachedTile, ifNoneMatch: string | undefined, rendered = false, cacheControl = this.cacheControl): TileAnswer {
    // A tile served from the cache is the same answer every time: made once, kept with the tile
    // (answers are read, never changed, on their way out).
    if (!rendered && ifNoneMatch === undefined) {
      const kept = t.answer;
      if (kept && kept.headers['Cache-Control'] === cacheControl) return kept;
      return (t.answer = { status: 200, body: t.body, contentType: t.contentType, headers: { ETag: t.etag, 'Cache-Control': cacheControl } });
    }
    const headers: Record<string, string> = { ETag: t.etag, 'Cache-Control': cacheControl };
    if (rendered && t.timing) headers['Server-Timing'] = t.timing;
    if (ifNoneMatch !== undefined && matchesEtag(ifNoneMatch, t.etag)) return { status: 304, headers };
    return { status: 200, body: t.body, contentType: t.contentType, headers };
  }

  private async render(
    st: LayerState,
    activityId: string | null,
    coord: TileCoord,
    fmt: TileFormat,
    signal: AbortSignal,
    drawing: () => Promise<{ graph: Graph; options: Record<string, unknown> } | null>,
  ): Promise<CachedTile> {
    const draw = await drawing();
    const size = st.config.tile_size;
    if (!draw) return this.empty(size, fmt);
    const started = performance.now();
    const out = await this.compute
      .run(
        {
          graph: draw.graph,
          userProcesses: st.userProcesses,
          user: st.user,
          udfTimeoutMs: this.config.udf.timeoutSeconds * 1000,
          maxValues: st.maxValues ?? this.config.syncMaxValues,
          limitAdvice: activityId ? 'Narrow the dates or bands of the service, or use a batch job.' : 'Narrow the dates of the preview (datetime=).',
          region: tileGrid(coord, size),
          mode: 'tile',
          parameters: tileParameters(coord, size),
          output: { format: fmt === 'png' ? 'PNG' : 'JPEG', options: draw.options },
        },
        signal,
      )
      // A tile where the loads find no items (a searched collection's gap) is empty, not an error.
      .catch((e) => {
        if ((e as { code?: string }).code === 'NoDataAvailable') return null;
        throw e;
      });
    if (!out) return this.empty(size, fmt);
    const stages = out.stages;
    tileStages.observe(TILE_STAGE_SLOTS[0], stages.read / 1000);
    tileStages.observe(TILE_STAGE_SLOTS[1], stages.warp / 1000);
    tileStages.observe(TILE_STAGE_SLOTS[2], stages.kernel / 1000);
    tileStages.observe(TILE_STAGE_SLOTS[3], stages.encode / 1000);
    tileStages.observe(TILE_STAGE_SLOTS[4], stages.total / 1000);
    if (activityId) this.activity.rendered(activityId, out.values, out.stages.total, performance.now() - started);
    return { body: out.body, contentType: out.mediaType, etag: etagOf(out.body), timing: serverTiming(out.stages) };
  }

  /**
   * The stretch of a preview: the 2nd and 98th percentiles of its unstretched result on a 256-pixel
   * overview of its extent, computed once per collection version and dates and kept (bounded). An
   * extent wider than one tile of the preview's coarsest zoom (a continent-wide STAC API
   * collection) is sampled in the coarsest-zoom tile around the tile asked for, so the estimate
   * reads no more than such a tile does.
   */
  private previewRange(st: PreviewState, coord: TileCoord): Promise<[number, number] | null> {
    let box = st.mercator;
    const zMin = st.config.min_zoom;
    const shift = coord.z - zMin;
    const around = tileBox({ z: zMin, x: Math.floor(coord.x / 2 ** shift), y: Math.floor(coord.y / 2 ** shift) });
    if (!box || box[2] - box[0] > around[2] - around[0] || box[3] - box[1] > around[3] - around[1]) {
      box = box ? [Math.max(box[0], around[0]), Math.max(box[1], around[1]), Math.min(box[2], around[2]), Math.min(box[3], around[3])] : around;
    }
    const key = `${st.prefix}${box.map((v) => Math.round(v)).join(',')}`;
    let p = this.previewRanges.get(key);
    if (!p) {
      p = this.estimateRange(st.graph, st.userProcesses, box, st.user).then(
        // One value everywhere still needs a scale to draw it.
        (r) => (r && !(r[1] > r[0]) ? ([r[0], r[0] + 1] as [number, number]) : r),
        // An overview where the loads find no items has no range (its tiles are empty).
        (e) => {
          if ((e as { code?: string }).code === 'NoDataAvailable') return null;
          throw e;
        },
      );
      // A failed estimate is not kept: the next tile tries again.
      p.catch(() => this.previewRanges.delete(key));
      this.previewRanges.set(key, p);
    }
    return p;
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
    st.range ??= this.estimateRange(st.graph, st.userProcesses, st.mercator, st.user).then(
      (r) => {
        // Kept with the service, so a restart does not estimate again.
        if (r) this.keepRange(st, r);
        return r ? [min ?? r[0], max ?? r[1]] : null;
      },
      (e) => {
        st.range = null;
        throw e;
      },
    );
    return st.range;
  }

  /** The 2nd and 98th percentiles of a graph's result over `box` (Web Mercator) drawn as one 256-pixel tile. */
  private async estimateRange(graph: Graph, userProcesses: Record<string, UserProcess>, box: Box, user?: string): Promise<[number, number] | null> {
    const [x0, y0, x1, y1] = box;
    const res = Math.max(x1 - x0, y1 - y0) / 256;
    const grid: Grid = gridFor(3857, [x0, y0, x1, y1], res);
    const out = await this.compute.run({
      graph,
      userProcesses,
      user,
      udfTimeoutMs: this.config.udf.timeoutSeconds * 1000,
      maxValues: this.config.syncMaxValues,
      limitAdvice: 'Narrow the dates or bands of the service.',
      region: grid,
      mode: 'tile',
      parameters: tileParameters({ z: 0, x: 0, y: 0 }, 256, { west: x0, south: y0, east: x1, north: y1, crs: 3857 }),
      // The percentiles are taken on the compute thread, not on the event loop.
      range: true,
    });
    return out.range ?? null;
  }

  /** Keeps an estimated range with the service (in the background: tiles use it from memory meanwhile). */
  private keepRange(st: ServiceState, [lo, hi]: [number, number]): void {
    (async () => {
      const fresh = await this.store.services.get(st.record.id);
      if (!fresh) return;
      fresh.attributes = { ...fresh.attributes, value_range: { min: lo, max: hi, version: st.hash } };
      await this.store.services.update(fresh);
    })().catch((e: unknown) => log.warn(`the value range of service ${st.record.id} was not stored: ${(e as Error).message}`));
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

  close(): Promise<void> {
    return this.activity.close();
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
