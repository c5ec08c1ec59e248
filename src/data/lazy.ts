// A load that has not read anything yet. load_collection and load_stac answer a LazyCube; the
// filters and resampling that follow it (filter_bbox, filter_temporal, filter_bands,
// filter_spatial, resample_spatial) only narrow its request, so when a process finally needs
// pixels, exactly the windows, dates, bands and overview level the graph asks for are read.
// This is the engine's dry run: the request a load will make is known before it is made, and its
// size is checked against the limit of the mode (synchronous, tile, batch chunk) first.
import { ApiError } from '../core/errors.js';
import { bandsOf, collectionOf, itemsByTime, loadChunk, type Extent, snappedGrid } from './load.js';
import { type CatalogSnapshot } from '../core/catalog.js';
import type { Resampling } from './warp.js';
import type { LoadPlan, RunContext } from '../core/run-context.js';
import { DataCube, spatialDims } from '../datacube/datacube.js';
import { featuresBox, rasterizeMask } from '../datacube/geometry.js';
import type { VectorFeatures } from '../datacube/features.js';
import type { Grid } from '../core/grid.js';

export interface LoadSpec {
  source: CatalogSnapshot;
  collection: string;
  /** null = the whole collection. */
  extent: Extent | null;
  temporal: [string | null, string | null] | null;
  bands: string[] | null;
  target: { epsg?: number; resolution?: number };
  resampling: Resampling;
  /** Pixels outside these geometries become no-data; each set is one filter (all must hold). */
  mask: VectorFeatures[] | null;
  /**
   * The grid every load of the run fills (a map tile, a chunk of a batch job), whatever extent,
   * CRS and resolution the graph asks for; null = the grid those give. See RunContext.region.
   */
  region: Grid | null;
}

export type { LoadPlan };

export class LazyCube {
  constructor(readonly spec: LoadSpec) {}

  with(change: Partial<LoadSpec>): LazyCube {
    return new LazyCube({ ...this.spec, ...change });
  }

  /**
   * The extent of the load: the requested one, else the box of all items: in their CRS when they
   * share one (so the grid ends where the data ends), else in EPSG:4326.
   */
  extent(): Extent {
    if (this.spec.extent) return this.spec.extent;
    const items = this.spec.source.collections.items(this.spec.collection);
    if (!items.length) throw new ApiError('ProcessParameterInvalid', { process: 'load_collection', parameter: 'id', reason: 'the collection has no items' });
    const epsg = items[0].epsg;
    if (items.every((it) => it.epsg === epsg)) {
      const n = items.reduce((a, it) => [Math.min(a[0], it.bbox[0]), Math.min(a[1], it.bbox[1]), Math.max(a[2], it.bbox[2]), Math.max(a[3], it.bbox[3])], [Infinity, Infinity, -Infinity, -Infinity]);
      return { west: n[0], south: n[1], east: n[2], north: n[3], crs: epsg };
    }
    const b = items.reduce(
      (a, it) => [Math.min(a[0], it.bbox4326[0]), Math.min(a[1], it.bbox4326[1]), Math.max(a[2], it.bbox4326[2]), Math.max(a[3], it.bbox4326[3])],
      [Infinity, Infinity, -Infinity, -Infinity],
    );
    return { west: b[0], south: b[1], east: b[2], north: b[3], crs: 4326 };
  }

  private planned?: ReturnType<LazyCube['makePlan']>;

  /**
   * Dates, bands and grid the load will produce, without reading pixels. Computed once: a load is
   * planned when it is made (no data?), again by the processes that narrow it, and when it loads.
   */
  plan() {
    return (this.planned ??= this.makePlan());
  }

  private makePlan() {
    const meta = collectionOf(this.spec.source, this.spec.collection);
    const extent = this.extent();
    const groups = itemsByTime(this.spec.source, meta, extent, this.spec.temporal);
    const times = [...groups.keys()];
    const bands = bandsOf(meta, this.spec.bands);
    // The grid loadChunk gives, so the plan is what the load reads.
    const grid = this.spec.region ?? snappedGrid(meta, extent, this.spec.target, groups);
    return { meta, extent, times, bands, grid, values: grid.width * grid.height * times.length * bands.length };
  }

  async materialize(run: RunContext | undefined): Promise<DataCube> {
    if (!run) throw new ApiError('ProcessUnsupported', { process: 'load_collection', namespace: 'backend' });
    const plan = this.plan();
    // A dry run ends here: its answer is this plan, and nothing is read.
    if (run.dryRun) return run.dryRun({ collection: this.spec.collection, grid: plan.grid, times: plan.times, bands: plan.bands.map((b) => b.name), values: plan.values });
    if (plan.values > run.maxValues) {
      throw new ApiError(
        'ProcessGraphComplexity',
        {},
        `The graph loads ${plan.grid.width} x ${plan.grid.height} pixels x ${plan.times.length} dates x ${plan.bands.length} bands (${plan.values} values), more than the ${run.maxValues} allowed here. ${run.limitAdvice}`,
      );
    }
    if (run.stats.values + plan.values > (run.budgetValues ?? Infinity)) {
      throw new ApiError('PaymentRequired', {}, `The graph reads ${run.stats.values + plan.values} raster values; the budget of the request pays for ${Math.floor(run.budgetValues!)}.`);
    }
    if (run.reserve) await run.reserve(plan.values);
    run.log('info', `loading ${this.spec.collection}: ${plan.grid.width}x${plan.grid.height} px, ${plan.times.length} dates, ${plan.bands.length} bands`);
    const chunk = await loadChunk(
      this.spec.source,
      {
        collection: this.spec.collection,
        extent: plan.extent,
        temporal: this.spec.temporal,
        bands: this.spec.bands,
        target: this.spec.target,
        resampling: this.spec.resampling,
        ...(this.spec.region ? { grid: this.spec.region, times: plan.times } : {}),
      },
      run.engine,
    );
    run.stats.values += chunk.data.length;
    for (const geoms of this.spec.mask ?? []) {
      const inside = rasterizeMask(geoms, chunk.grid);
      const plane = inside.length;
      for (let o = 0; o < chunk.data.length; o += plane) for (let i = 0; i < plane; i++) if (!inside[i]) chunk.data[o + i] = NaN;
    }
    const bandInfo: DataCube['bandInfo'] = {};
    for (const b of plan.bands) bandInfo[b.name] = { common_name: b.common_name, center_wavelength: b.center_wavelength };
    return new DataCube({
      dims: [{ name: 't', type: 'temporal', labels: chunk.times }, { name: 'bands', type: 'bands', labels: chunk.bands }, ...spatialDims(chunk.grid)],
      data: chunk.data,
      grid: chunk.grid,
      bandInfo,
    });
  }
}

/** The cube behind a value: loads a LazyCube, passes a DataCube, refuses anything else. */
export async function cubeOf(v: unknown, run: RunContext | undefined, processId: string, parameter = 'data'): Promise<DataCube> {
  if (v instanceof DataCube) return v;
  if (v instanceof LazyCube) return v.materialize(run);
  throw new ApiError('ProcessParameterInvalid', { process: processId, parameter, reason: 'a data cube is expected' });
}

export const isCube = (v: unknown): v is DataCube | LazyCube => v instanceof DataCube || v instanceof LazyCube;

/** Narrows a lazy load to the bbox of geometries and masks outside them. */
export function lazyWithGeometries(c: LazyCube, f: VectorFeatures): LazyCube {
  const box = featuresBox(f, 4326);
  const mask = [...(c.spec.mask ?? []), f];
  if (!box.every(Number.isFinite)) return c.with({ mask });
  return c.with({ extent: intersectExtent(c.spec.extent, { west: box[0], south: box[1], east: box[2], north: box[3], crs: 4326 }), mask });
}

/** The intersection of two extents (the second wins when the CRSs differ or the first is open). */
export function intersectExtent(a: Extent | null, b: Extent): Extent {
  if (!a || (a.crs ?? 4326) !== (b.crs ?? 4326)) return b;
  return { west: Math.max(a.west, b.west), south: Math.max(a.south, b.south), east: Math.min(a.east, b.east), north: Math.min(a.north, b.north), crs: b.crs ?? 4326 };
}
