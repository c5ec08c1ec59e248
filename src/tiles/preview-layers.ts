// The previews of collections (tiles/preview.ts) as a layer source: a preview's state per
// collection and `datetime`, kept like a service's; the newest item of a STAC API collection (the
// default date of its preview); and the stretch of a preview's colours, estimated once per
// collection version, dates and overview area.
import type { Store } from '../store/types.js';
import type { CollectionMeta, ItemMeta, RemoteSearch } from '../core/catalog.js';
import { ApiError } from '../core/errors.js';
import type { TileCoord } from './tile-grid.js';
import type { LonLatBox } from './extent.js';
import { itemsWithin, newestRemoteItem, previewDates, previewExtent, previewGraph, previewMinZoom, previewStyle, PREVIEW_MAX_ZOOM, type PreviewDates, type PreviewStyle } from './preview.js';
import { mercatorBox, STATE_TTL_MS, tileBox, type LayerState, type TileAnswer, type TileFormat } from './layer.js';
import type { TileRenderer } from './tile-renderer.js';
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { tileAnswers, TILE_SLOTS } from '../core/metrics.js';

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

export class PreviewLayers {
  private readonly previewLoading = new Map<string, Promise<PreviewState>>();
  private readonly previews = new LRUCache<string, PreviewState>({ max: PREVIEW_STATES });
  /** Stretches of previews, computed once per collection version, dates and overview area (keyed by cache prefix and area). */
  private readonly previewRanges = new LRUCache<string, Promise<[number, number] | null>>({ max: PREVIEW_RANGES });
  /** The newest item of each STAC API collection (the default date of its preview), found again after NEWEST_TTL_MS. */
  private readonly newest = new LRUCache<string, NewestItem>({ max: PREVIEW_STATES });

  constructor(
    private readonly store: Store,
    private readonly renderer: TileRenderer,
    /** Item searches of STAC API collections (data/stac-collections.ts), for the newest date of a preview. */
    private readonly search: ((req: RemoteSearch) => Promise<ItemMeta[]>) | null,
  ) {}

  /**
   * A tile of a collection's preview for `datetime` (null: the newest date): the same checks,
   * cache, empty tiles and rendering as a service's tile.
   */
  tile(collection: string, datetime: string | null, coord: TileCoord, format: TileFormat | null, ifNoneMatch: string | undefined, abortable?: () => AbortSignal): TileAnswer | Promise<TileAnswer> {
    const draw = (st: PreviewState) => this.tileOf(st, coord, format, ifNoneMatch, abortable);
    const newest = this.newestOf(collection, datetime);
    if (newest instanceof Promise) return newest.then((n) => this.previewState(collection, datetime, n)).then(draw);
    const st = this.previewState(collection, datetime, newest);
    return st instanceof Promise ? st.then(draw) : draw(st);
  }

  private tileOf(st: PreviewState, coord: TileCoord, format: TileFormat | null, ifNoneMatch: string | undefined, abortable?: () => AbortSignal): TileAnswer | Promise<TileAnswer> {
    if (st.empty) {
      this.renderer.checkZoom(st, coord);
      tileAnswers.inc(TILE_SLOTS.preview.empty);
      return this.renderer.answer(this.renderer.empty(st.config.tile_size, format ?? st.config.format), ifNoneMatch);
    }
    return this.renderer.serve(st, null, coord, format, ifNoneMatch, abortable, async () => {
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
    return {
      title: meta.title || meta.id,
      extent: st.extent,
      minZoom: st.config.min_zoom,
      maxZoom: st.config.max_zoom,
      legend: st.style.legend,
      colormap: st.style.colormap,
      dates: st.dates,
      itemDates: st.itemDates,
      temporal,
    };
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
      p = this.renderer.estimateRange(st.graph, st.userProcesses, box, st.user).then(
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
}
