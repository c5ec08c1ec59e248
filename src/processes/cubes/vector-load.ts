// Vector data in: load_geojson (GeoJSON in the graph), load_url (a file on the web, fetched under
// the outbound rules) and load_uploaded_files (the user's own files). Files are GeoJSON,
// FlatGeobuf, GeoParquet or CSV (data/vector-read.ts); polygons are checked for validity once.
// Inputs read from files and URLs are kept per thread for a while (by URL, or by path and date),
// so the chunks of a batch job parse and check them once.
import { LRUCache } from 'lru-cache';
import { ApiError, ProcessException } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import type { RunContext, UserFiles } from '../../core/run-context.js';
import type { BandMeta, CollectionMeta, ItemMeta } from '../../core/catalog.js';
import { LazyCube } from '../../data/lazy.js';
import { fixedSnapshot } from '../../data/load.js';
import { hasMemoryRaster, RasterFormatError, registerMemoryRaster } from '../../data/cog-reader.js';
import { ImportError, itemOfGeoTiff, type Parsed } from '../../data/items.js';
import { VectorFeatures } from '../../datacube/features.js';
import { featuresFromGeoJson } from '../../datacube/geojson-in.js';
import { checkedFeatures } from '../../datacube/geometry.js';
import { propertiesCube, vectorCube } from '../../datacube/vector-cube.js';
import { vectorLimits } from '../../datacube/vector-limits.js';
import { readVector, vectorFormat } from '../../data/vector-read.js';
import { httpRequest, RemoteError } from '../../data/http-client.js';
import { checkUrl, OutboundRefused, usersPolicy } from '../../data/outbound.js';
import { inputFormat } from '../../output/formats.js';

const invalid = (process: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process, parameter, reason });

/** Parsed and checked inputs, by source; sized by their coordinates. */
const inputs = new LRUCache<string, VectorFeatures>({
  maxSize: 256 * 1024 * 1024,
  sizeCalculation: (f) => Math.max(1, f.geometries.xy.byteLength + f.length * 64),
  ttl: 10 * 60 * 1000,
});

/** A file or URL read, parsed and checked once per key. */
async function cachedInput(key: string, read: () => Promise<VectorFeatures>): Promise<VectorFeatures> {
  const hit = inputs.get(key);
  if (hit) return hit;
  const f = await read();
  inputs.set(key, f);
  return f;
}

/** A URL's bytes under the outbound rules and the size limit; failures are the user's 400. */
async function fetchBytes(url: string, processId: string, run: RunContext | undefined): Promise<Uint8Array> {
  const max = vectorLimits(run).maxBytes;
  // Without a run (a graph evaluated on its own) there is no engine, so nothing is allowed beyond the rules.
  const policy = run?.engine.outbound ?? usersPolicy(undefined);
  try {
    checkUrl(url, policy);
    const res = await httpRequest(url, { policy, maxBytes: max, signal: run?.signal, timeoutMs: 60_000 });
    if (res.status !== 200) throw new RemoteError(url, `it answered HTTP ${res.status}`);
    return res.body;
  } catch (e) {
    if (e instanceof OutboundRefused || e instanceof RemoteError) throw invalid(processId, 'url', e.message);
    throw e;
  }
}

/**
 * A workspace path as the definition of load_uploaded_files takes it: `/a/b`, `a/b` and `./a/b`
 * are the same file; anything that would leave the workspace is a file not found.
 */
export function workspacePath(p: unknown): string {
  if (typeof p !== 'string') throw new ApiError('ProcessParameterInvalid', { process: 'load_uploaded_files', parameter: 'paths', reason: 'each path must be a string' });
  const segments = p.split('/').filter((s) => s !== '' && s !== '.');
  if (!segments.length || segments.some((s) => s === '..' || /[\u0000-\u001f\u007f\\:'"]/.test(s))) throw new ApiError('FileNotFound', { file: p });
  return segments.join('/');
}

/** Checks a format against those GET /file_formats lists for input, with its options. */
function formatArg(format: unknown, options: unknown, processId: string): { name: string; options: Record<string, unknown> } {
  const f = inputFormat(String(format), (options ?? {}) as Record<string, unknown>, processId);
  return { name: f.name, options: f.options };
}

/**
 * Uploaded GeoTIFFs as a deferred load (like load_collection's): each file an item of one
 * collection, dated by its TIFF DateTime or the date in its name, its samples the bands. The bytes
 * are read through the file store once and held in memory (`mem:` hrefs of the COG reader).
 */
async function uploadedRasters(paths: unknown[], files: UserFiles, max: number, run: RunContext): Promise<LazyCube> {
  const P = 'load_uploaded_files';
  const items: ItemMeta[] = [];
  let bands: BandMeta[] = [];
  let meta: Pick<CollectionMeta, 'epsg' | 'resolution'> | null = null;
  for (const raw of paths) {
    const path = workspacePath(raw);
    const st = await files.stat(path);
    if (!st) throw new ApiError('FileNotFound', { file: path });
    if (st.size > max) throw invalid(P, 'paths', `the file ${path} has ${st.size} bytes; files are read up to ${max} bytes here`);
    // (the file name last: its date, if any, is read from it)
    const href = `mem:${files.owner}/${st.modified}/${st.size}/${path}`;
    if (!hasMemoryRaster(href)) registerMemoryRaster(href, await files.read(path, max));
    let parsed: Parsed;
    try {
      parsed = await itemOfGeoTiff(href, {}, run.engine.blocks);
    } catch (e) {
      if (e instanceof RasterFormatError) throw new ProcessException('FormatUnsuitable', `GTiff: ${path} is not a readable GeoTIFF`);
      if (e instanceof ImportError) throw invalid(P, 'paths', `${path} carries no date (neither a TIFF DateTime nor a date in its name, e.g. fields_20240601.tif)`);
      throw e;
    }
    items.push({ ...parsed.item, id: path });
    for (const b of parsed.bands) if (!bands.some((x) => x.name === b.name)) bands = [...bands, b];
    meta ??= { epsg: parsed.item.epsg, resolution: parsed.resolution };
  }
  items.sort((x, y) => (x.datetime < y.datetime ? -1 : x.datetime > y.datetime ? 1 : 0));
  const id = 'load_uploaded_files';
  const collection: CollectionMeta = { id, title: 'Uploaded files', description: 'GeoTIFFs of the user workspace', license: 'other', epsg: meta!.epsg, resolution: meta!.resolution, bands };
  // Held in memory already: the load's snapshot is the files themselves.
  const source = fixedSnapshot({ trusted: true, process: P, parameter: 'paths' }, collection, items);
  return new LazyCube({ source, collection: id, extent: null, temporal: null, bands: null, target: {}, resampling: 'nearest', mask: null, region: run.region ?? null });
}

export const processes: ProcessImpl[] = [
  implement('load_geojson', async (a, ctx) => {
    const P = 'load_geojson';
    const f = await checkedFeatures(featuresFromGeoJson(a.get('data'), { processId: P, parameter: 'data', limits: vectorLimits(ctx.run).geometry }), P, 'data');
    const props = a.get<string[] | null>('properties') ?? [];
    return props.length ? propertiesCube(f, props) : vectorCube(f);
  }),
  implement('load_url', async (a, ctx) => {
    const P = 'load_url';
    const url = a.get<string>('url');
    const f = formatArg(a.get('format'), a.get('options'), P);
    if (!vectorFormat(f.name)) throw new ProcessException('FormatUnsuitable', `${f.name}: load_url reads vector files (GeoJSON, FlatGeobuf, Parquet, CSV); load GeoTIFFs with load_stac`);
    const key = `url\u0000${f.name}\u0000${JSON.stringify(f.options)}\u0000${url}`;
    const features = await cachedInput(
      key,
      async () => await checkedFeatures(await readVector(await fetchBytes(url, P, ctx.run), f.name, f.options, { processId: P, parameter: 'url', limits: vectorLimits(ctx.run).geometry }), P, 'url'),
    );
    return vectorCube(features);
  }),
  implement('load_uploaded_files', async (a, ctx) => {
    const P = 'load_uploaded_files';
    const paths = a.get<unknown[]>('paths');
    if (!Array.isArray(paths) || paths.length === 0) throw invalid(P, 'paths', 'give at least one path');
    const f = formatArg(a.get('format'), a.get('options'), P);
    const files = ctx.run?.files;
    if (!files) throw new ApiError('ProcessUnsupported', { process: P, namespace: 'backend' }, 'load_uploaded_files reads the files of the signed-in user; this run has none (a web service, say).');
    const max = vectorLimits(ctx.run).maxBytes;
    if (f.name === 'GTiff') return uploadedRasters(paths, files, max, ctx.run!);
    if (!vectorFormat(f.name)) throw new ProcessException('FormatUnsuitable', `${f.name}: load_uploaded_files reads GeoTIFF and vector files (GeoJSON, FlatGeobuf, Parquet, CSV)`);
    const parts: VectorFeatures[] = [];
    for (const raw of paths) {
      const path = workspacePath(raw);
      const st = await files.stat(path);
      if (!st) throw new ApiError('FileNotFound', { file: path });
      if (st.size > max) throw invalid(P, 'paths', `the file ${path} has ${st.size} bytes; vector files are read up to ${max} bytes here`);
      const key = `file\u0000${files.owner}\u0000${f.name}\u0000${JSON.stringify(f.options)}\u0000${path}\u0000${st.modified}\u0000${st.size}`;
      parts.push(
        await cachedInput(
          key,
          async () => await checkedFeatures(await readVector(await files.read(path, max), f.name, f.options, { processId: P, parameter: 'paths', limits: vectorLimits(ctx.run).geometry }), P, 'paths'),
        ),
      );
    }
    const epsg = parts[0].epsg;
    return vectorCube(VectorFeatures.concat(parts.map((p) => (p.epsg === epsg ? p : p.reproject(epsg)))));
  }),
];
