// Data in and out: load_collection and load_stac (deferred loads, see data/lazy.ts; load_stac
// reads a STAC document of the user's through data/stac-source.ts) and save_result (records the
// output and its format for the mode that runs the graph: /result, tiles or a batch job).
import { ApiError } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import { type Callback, type ProcessArgs } from '../../core/process.js';
import { ProcessException } from '../../core/errors.js';
import { LazyCube, isCube, lazyWithGeometries } from '../../data/lazy.js';
import { DataCube } from '../../datacube/datacube.js';
import { featuresBox, geometriesArg } from '../../datacube/geometry.js';
import { searchedSource } from './search.js';
import type { RunContext } from '../../core/run-context.js';
import { findCollection, fixedSnapshot, snapshotOf } from '../../data/load.js';
import { type CatalogSnapshot, type CatalogSource } from '../../core/catalog.js';
import { stacCatalog } from '../../data/stac-source.js';
import { bboxOf, intervalOf } from './extents.js';
import { outputFormat } from '../../output/formats.js';
import { vectorLimits } from '../../datacube/vector-limits.js';

/** Keeps the items for which every property condition answers true. */
async function withProperties(source: CatalogSnapshot, id: string, conditions: Record<string, unknown>, a: ProcessArgs, processId: string): Promise<CatalogSnapshot> {
  const checks: [string, Callback][] = [];
  for (const [name, v] of Object.entries(conditions)) {
    const cb = v && typeof v === 'object' && 'process_graph' in v ? a.callbackFor(v) : null;
    if (!cb) throw new ApiError('ProcessParameterInvalid', { process: processId, parameter: 'properties', reason: `the condition for '${name}' must be a child process` });
    checks.push([name, cb]);
  }
  const kept = [];
  for (const it of source.collections.items(id)) {
    let ok = true;
    for (const [name, cb] of checks) {
      if ((await cb({ value: it.properties?.[name] ?? null })) !== true) {
        ok = false;
        break;
      }
    }
    if (ok) kept.push(it);
  }
  return fixedSnapshot(source.access, source.collections.get(id)!, kept);
}

/** The deferred load of load_collection and load_stac, with the restrictions of their arguments. */
async function deferredLoad(source: CatalogSource, id: string, a: ProcessArgs, processId: string, run: RunContext): Promise<LazyCube> {
  const properties = a.get<Record<string, unknown> | null>('properties');
  const spatial = a.get<Record<string, unknown> | null>('spatial_extent');
  const geoms = spatial !== null && (spatial instanceof DataCube || typeof spatial.type === 'string') ? await geometriesArg(spatial, processId, vectorLimits(run), 'spatial_extent') : null;
  const bbox = spatial !== null && !geoms ? bboxOf(spatial, processId, 'spatial_extent') : null;
  const temporalArg = a.get<unknown>('temporal_extent');
  const temporal = temporalArg !== null ? intervalOf(temporalArg, processId, 'temporal_extent') : null;
  const meta = await findCollection(source, id);
  const search = source.search;
  const searched = !!meta.remote;
  // What the load uses of the catalogue is read now, once: planning and reading never wait for records.
  let snapshot: CatalogSnapshot;
  if (searched) {
    if (!search) throw new ApiError('CollectionUnavailable', { identifier: id });
    const box = geoms ? featuresBox(geoms, 4326) : null;
    const extent = bbox ?? (box && box.every(Number.isFinite) ? { west: box[0], south: box[1], east: box[2], north: box[3], crs: 4326 } : null);
    snapshot = await searchedSource(source.access, meta, { extent, temporal, properties, args: a, processId, run }, (req) => search({ ...req, collection: id }));
  } else {
    snapshot = await snapshotOf(source, meta, temporal);
    if (properties !== null) snapshot = await withProperties(snapshot, id, properties, a, processId);
  }
  let cube = new LazyCube({ source: snapshot, collection: id, extent: null, temporal: null, bands: null, target: {}, resampling: 'nearest', mask: null, region: run.region ?? null });
  if (geoms) cube = lazyWithGeometries(cube, geoms);
  else if (bbox) cube = cube.with({ extent: bbox });
  if (temporal) cube = cube.with({ temporal });
  const bands = a.get<string[] | null>('bands');
  if (bands !== null) cube = cube.with({ bands });
  // A searched load finds nothing in a tile outside its items: the tile stays empty (no dates), not an error.
  if (searched && run.mode === 'tile' && snapshot.collections.items(id).length === 0) throw new ProcessException('NoDataAvailable', 'there is no data in this tile');
  const plan = cube.plan();
  if (plan.times.length === 0) throw new ProcessException('NoDataAvailable', `there is no data in the requested area and time interval`);
  return cube;
}

export const processes: ProcessImpl[] = [
  implement('load_collection', async (a, ctx) => {
    const run = ctx.run;
    if (!run) throw new ApiError('ProcessUnsupported', { process: 'load_collection', namespace: 'backend' });
    return deferredLoad(run.catalog, a.get<string>('id'), a, 'load_collection', run);
  }),
  implement('load_stac', async (a, ctx) => {
    if (!ctx.run) throw new ApiError('ProcessUnsupported', { process: 'load_stac', namespace: 'backend' });
    const { source, id } = await stacCatalog(a.get<string>('url'), ctx.run.engine, ctx.run.catalog.search);
    return deferredLoad(source, id, a, 'load_stac', ctx.run);
  }),
  implement('save_result', (a, ctx) => {
    const data = a.get<unknown>('data');
    const format = outputFormat(a.get<string>('format'), a.get<Record<string, unknown>>('options') ?? {});
    if (!isCube(data)) throw new ProcessException('FormatUnsuitable', `${format.name} stores data cubes; this value is not one`);
    if (data instanceof DataCube && data.size === 0 && !format.allowsEmpty) throw new ProcessException('DataCubeEmpty', 'the data cube holds no values');
    ctx.run?.results.push({ nodeId: ctx.nodeId, data, format: format.name, options: format.options });
    return true;
  }),
];
