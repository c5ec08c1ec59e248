// `xeo import`: creates or extends a collection from GeoTIFF files (local paths or URLs) or STAC
// Item JSON files. Files stay where they are; the catalog records where each band is.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Store } from '../store/types.js';
import type { CollectionMeta } from '../core/catalog.js';
import { ImportError, itemOfGeoTiff, parseStacItem, type ItemOptions, type Parsed } from '../data/items.js';
import { BlockCache } from '../data/cog-reader.js';

export interface ImportOptions extends ItemOptions {
  collection: string;
  title?: string;
  description?: string;
  license?: string;
  progress?: (done: number, total: number, name: string) => void;
}

const COLLECTION_ID = /^[\w\-.~/]+$/;
/** Bytes of file headers kept while importing. */
const HEADER_BYTES = 32 * 1024 * 1024;

export async function importFiles(store: Store, inputs: string[], opts: ImportOptions): Promise<{ collection: CollectionMeta; items: number }> {
  if (!COLLECTION_ID.test(opts.collection)) throw new ImportError('the collection id may hold letters, digits and - . ~ / _ only');
  if (inputs.length === 0) throw new ImportError('name at least one file');
  const parsed: Parsed[] = [];
  // The files' headers are read once each; their pixels are not read here.
  const headers = new BlockCache(HEADER_BYTES);
  for (let i = 0; i < inputs.length; i++) {
    const input = inputs[i];
    const remote = /^(https?|s3):\/\//i.test(input);
    if (!remote && /^[a-z][a-z0-9+.-]*:\/\//i.test(input)) throw new ImportError(`${input}: only local paths, http(s) and s3:// URLs are imported`);
    const isJson = /\.json$/i.test(input.split('?')[0]);
    if (isJson && /^s3:/i.test(input)) throw new ImportError(`${input}: STAC Items are imported from local files (their assets may be s3:// hrefs)`);
    const href = remote ? input : path.resolve(input);
    parsed.push(isJson ? await parseStacItem(JSON.parse(await readFile(href, 'utf8')), href, opts, headers) : await itemOfGeoTiff(href, opts, headers));
    opts.progress?.(i + 1, inputs.length, input);
  }
  const existing = await store.collections.get(opts.collection);
  if (existing?.remote) throw new ImportError(`${opts.collection} is served by the STAC API ${existing.remote.api}; its items cannot be imported (remove it first, or import into another collection)`);
  const epsg = existing?.epsg ?? parsed[0].item.epsg;
  const bands = existing?.bands ?? parsed[0].bands;
  for (const p of parsed) {
    for (const name of Object.keys(p.item.assets)) {
      if (!bands.some((b) => b.name === name)) throw new ImportError(`${p.item.id}: band '${name}' is not a band of collection ${opts.collection} (${bands.map((b) => b.name).join(', ')})`);
    }
  }
  const meta: CollectionMeta = existing ?? {
    id: opts.collection,
    title: opts.title ?? opts.collection,
    description: opts.description ?? `Imported from ${parsed.length} file(s).`,
    license: opts.license ?? 'proprietary',
    epsg,
    resolution: parsed[0].resolution,
    bands,
  };
  if (existing && (opts.title || opts.description || opts.license)) {
    meta.title = opts.title ?? meta.title;
    meta.description = opts.description ?? meta.description;
    meta.license = opts.license ?? meta.license;
  }
  await store.collections.put(meta);
  await store.collections.putItems(
    meta.id,
    parsed.map((p) => p.item),
  );
  return { collection: meta, items: parsed.length };
}
