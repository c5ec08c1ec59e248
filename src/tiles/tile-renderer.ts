// The one tile cache and renderer of every layer source: a tile's answer from the cache (inside the
// uWS callback: no promise), an empty image outside the layer's data without computing, or a render
// on the compute pool (the same execute() as /result, with the tile as the region every load
// fills); ETags and 304s; the value-range estimates of colour stretches.
import type { Config } from '../core/config.js';
import type { Compute } from '../compute/pool.js';
import type { Graph, UserProcess } from '../core/graph.js';
import { ApiError } from '../core/errors.js';
import { gridFor, type Box, type Grid } from '../core/grid.js';
import { encodePng } from '../output/png-writer.js';
import { encodeJpeg } from '../output/jpeg-writer.js';
import { serverTiming } from '../core/stages.js';
import { tileGrid, validTile, type TileCoord } from './tile-grid.js';
import { TileCache, etagOf, type CachedTile } from './cache.js';
import type { ServiceActivity } from './activity.js';
import { intersects, tileBox, tileParameters, type Drawing, type LayerState, type TileAnswer, type TileFormat } from './layer.js';
import { gauge, tileAnswers, tileStages, TILE_SLOTS, TILE_STAGE_SLOTS } from '../core/metrics.js';

export class TileRenderer {
  readonly cache: TileCache;
  private readonly empties = new Map<string, CachedTile>();
  private readonly cacheControl: string;

  constructor(
    private readonly compute: Compute,
    private readonly config: Config,
    /** Counts a service's tiles for its logs and usage (previews have none). */
    private readonly activity: ServiceActivity,
  ) {
    this.cache = new TileCache(config.tileCacheBytes);
    this.cacheControl = `public, max-age=${config.tileMaxAge}`;
    const cache = this.cache;
    gauge('xeo_tile_cache_bytes', 'Bytes of rendered tiles held in the tile cache (XEO_TILE_CACHE_BYTES bounds it).', [], () => [{ labels: {}, value: cache.bytes }]);
    gauge('xeo_tile_cache_entries', 'Tiles held in the tile cache.', [], () => [{ labels: {}, value: cache.entries }]);
  }

  /** TileInvalid for a tile outside the grid or the layer's zoom levels. */
  checkZoom(st: LayerState, coord: TileCoord): void {
    const tileName = `${coord.z}/${coord.x}/${coord.y}`;
    if (!validTile(coord)) throw new ApiError('TileInvalid', { tile: tileName, reason: `at zoom ${coord.z} x and y run from 0 to ${2 ** Math.min(coord.z, 30) - 1}` });
    const cfg = st.config;
    if (coord.z < cfg.min_zoom || coord.z > cfg.max_zoom) {
      const what =
        'collection' in st
          ? `this preview draws zoom levels ${cfg.min_zoom} to ${cfg.max_zoom} (coarser tiles would read more than the data's coarsest overview)`
          : `this service draws zoom levels ${cfg.min_zoom} to ${cfg.max_zoom}`;
      throw new ApiError('TileInvalid', { tile: tileName, reason: what });
    }
  }

  /**
   * The answer for one tile of a layer: from the cache, an empty image outside its data, or a render
   * of `drawing` (the graph and colours; null: an empty tile). `activityId` counts the tile for a
   * service's logs and usage (previews have none).
   */
  serve(
    st: LayerState,
    activityId: string | null,
    coord: TileCoord,
    format: TileFormat | null,
    ifNoneMatch: string | undefined,
    abortable: (() => AbortSignal) | undefined,
    drawing: () => Promise<Drawing>,
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
      .render(
        key,
        (s) => this.render(st, activityId, coord, fmt, s, drawing),
        signal,
        () => activityId && this.activity.joined(activityId),
      )
      .then((t) => this.answer(t, ifNoneMatch, true, st.cacheControl))
      .catch((e) => {
        if (!signal?.aborted) {
          tileAnswers.inc((e as { code?: string }).code === 'InfrastructureBusy' ? counts.shed : counts.failed);
          if (activityId) this.activity.failed(activityId, e, coord);
        }
        throw e;
      });
  }

  /** A kept tile as an answer: 200 with its ETag, or 304 when the client's still matches. */
  answer(t: CachedTile, ifNoneMatch: string | undefined, rendered = false, cacheControl = this.cacheControl): TileAnswer {
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

  private async render(st: LayerState, activityId: string | null, coord: TileCoord, fmt: TileFormat, signal: AbortSignal, drawing: () => Promise<Drawing>): Promise<CachedTile> {
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
          answer: { kind: 'encoded', output: { format: fmt === 'png' ? 'PNG' : 'JPEG', options: draw.options } },
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

  /** The 2nd and 98th percentiles of a graph's result over `box` (Web Mercator) drawn as one 256-pixel tile. */
  async estimateRange(graph: Graph, userProcesses: Record<string, UserProcess>, box: Box, user?: string): Promise<[number, number] | null> {
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
      answer: { kind: 'range' },
    });
    return out.range;
  }

  /** A fully transparent PNG (or white JPEG) tile. */
  empty(size: number, fmt: TileFormat): CachedTile {
    const k = `${size}:${fmt}`;
    let t = this.empties.get(k);
    if (!t) {
      const body =
        fmt === 'png' ? encodePng({ width: size, height: size, channels: 4, data: new Uint8Array(size * size * 4) }) : encodeJpeg({ width: size, height: size, data: new Uint8Array(size * size * 4).fill(255) });
      this.empties.set(k, (t = { body, contentType: fmt === 'png' ? 'image/png' : 'image/jpeg', etag: etagOf(body) }));
    }
    return t;
  }
}

/** If-None-Match: a list of entity tags (weak ones compare by their opaque part), or `*`. */
function matchesEtag(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}
