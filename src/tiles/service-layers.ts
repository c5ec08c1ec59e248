// The tiles of secondary web services as a layer source: a service's state kept in memory (read
// again in the background after a few seconds, while the kept state goes on serving, so a slow or
// hung record store never holds a tile it already knows), dropped on a change, and the value range
// of its colours (configured, stored with the service, or estimated once per version).
import { CATEGORICAL_RANGE, isCategorical } from '../output/colormap.js';
import type { Config } from '../core/config.js';
import type { Store } from '../store/types.js';
import type { ServiceRecord } from '../store/types.js';
import type { Graph } from '../core/graph.js';
import { ApiError } from '../core/errors.js';
import { userProcessesOf } from '../graph/user-processes.js';
import type { RemoteProcesses } from '../graph/remote-processes.js';
import { processDefaults, processingParameters, resolveOptions, type ProcessingParameter } from '../core/processing-options.js';
import type { TileCoord } from './tile-grid.js';
import { tileConfigOf } from './service-types.js';
import { serviceExtent, type LonLatBox } from './extent.js';
import { mercatorBox, STATE_TTL_MS, type LayerState, type TileAnswer, type TileFormat } from './layer.js';
import type { TileRenderer } from './tile-renderer.js';
import { createHash } from 'node:crypto';
import { log } from '../core/log.js';
import type { WarmUp } from '../data/stac-collections.js';
import { warmUpsOf } from './service-warm-up.js';

/** A warm-up of one load (StacCollections.warm): what it found, or null when the collection is not searched. */
export type WarmFn = (w: WarmUp, signal: AbortSignal) => Promise<{ items: number; headers: number } | null>;

/** Services warming up at once, at most (a burst of new services leaves the rest to their first tiles). */
const MAX_WARMING = 8;
/** How long a warm-up may take before it is stopped. */
const WARM_MS = 30_000;

interface ServiceState extends LayerState {
  record: ServiceRecord;
  range: Promise<[number, number] | null> | null;
}

export class ServiceLayers {
  private readonly states = new Map<string, ServiceState>();
  /** Reads of a service's state under way, each with the token that lets it keep its answer (invalidate takes it back). */
  private readonly loading = new Map<string, { token: object; state: Promise<ServiceState | null> }>();
  private readonly serviceParameters: ProcessingParameter[];
  /** Warm-ups under way, by service: stopped when the service changes or is deleted. */
  private readonly warming = new Map<string, AbortController>();

  constructor(
    private readonly store: Store,
    config: Config,
    /** Processes named by URL, for the graphs of services. */
    private readonly remote: RemoteProcesses,
    private readonly renderer: TileRenderer,
    /** Warms up the searches and headers of STAC API collections (null: nothing to warm). */
    private readonly warmUp: WarmFn | null = null,
  ) {
    this.serviceParameters = processingParameters(config).service;
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
        if (st && st.hash !== next.hash) this.renderer.cache.purge(st.prefix);
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
    const userProcesses = await userProcessesOf(this.store.processGraphs, this.remote, record.userId, graph);
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
    this.warming.get(id)?.abort();
    this.warming.delete(id);
    this.states.delete(id);
    this.loading.delete(id);
    this.renderer.cache.purge(`${id}:`);
  }

  /**
   * Starts what a service's first tile would otherwise wait for, as soon as the service exists or
   * changes: the item searches and first headers of its STAC API collections (warm), and the
   * value range of its colours (an estimate over its whole extent when the configuration fixes
   * none), so the first tile costs its own reads only. Failures are left for the first tile to
   * meet and report. `given`, the graph of a service just created or changed (when enabled): its
   * warm-up needs nothing else, so it starts at once instead of after the service's state is read
   * from the store (a map asks for its first tile the moment the service exists).
   */
  prepare(id: string, given?: Graph): void {
    if (given) this.warm(id, given);
    Promise.resolve(this.state(id))
      .then((st) => {
        if (!st?.record.enabled) return null;
        if (!given) this.warm(id, st.graph);
        return this.rangeOf(st);
      })
      // a head start only: a failure here is met again, and answered, by the first tile request
      .catch(() => {});
  }

  /** Warms up the searched loads of a service's graph (bounded in number and time; stopped by invalidate). */
  private warm(id: string, graph: Graph): void {
    const loads = this.warmUp ? warmUpsOf(graph) : [];
    if (!loads.length || (this.warming.size >= MAX_WARMING && !this.warming.has(id))) return;
    this.warming.get(id)?.abort();
    const ctl = new AbortController();
    this.warming.set(id, ctl);
    const timer = setTimeout(() => ctl.abort(), WARM_MS).unref();
    void Promise.allSettled(loads.map((w) => this.warmUp!(w, ctl.signal)))
      .then((done) => {
        for (const [i, d] of done.entries()) {
          if (d.status === 'rejected' && !ctl.signal.aborted) log.info(`the warm-up of service ${id} (collection ${loads[i].collection}) failed; its tiles search themselves: ${(d.reason as Error)?.message}`);
        }
      })
      .finally(() => {
        clearTimeout(timer);
        if (this.warming.get(id) === ctl) this.warming.delete(id);
      });
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
    return this.renderer.serve(st, id, coord, format, ifNoneMatch, abortable, async () => {
      // A categorical map draws the whole value v in its colour v: classes 0 to 254, no stretch.
      if (isCategorical(cfg.colormap)) return { graph: st.graph, options: { colormap: cfg.colormap, min: CATEGORICAL_RANGE[0], max: CATEGORICAL_RANGE[1] } };
      const range = await this.rangeOf(st);
      return { graph: st.graph, options: { colormap: cfg.colormap, min: range?.[0] ?? null, max: range?.[1] ?? null } };
    });
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
    st.range ??= this.renderer.estimateRange(st.graph, st.userProcesses, st.mercator, st.user).then(
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

  /** Keeps an estimated range with the service (in the background: tiles use it from memory meanwhile). */
  private keepRange(st: ServiceState, [lo, hi]: [number, number]): void {
    (async () => {
      const fresh = await this.store.services.get(st.record.id);
      if (!fresh) return;
      fresh.attributes = { ...fresh.attributes, value_range: { min: lo, max: hi, version: st.hash } };
      await this.store.services.update(fresh);
    })().catch((e: unknown) => log.warn(`the value range of service ${st.record.id} was not stored: ${(e as Error).message}`));
  }
}
