// What a GeoTIFF or a STAC Item says about itself as an item of the catalogue: its date, footprint,
// bands and where each band is. Read by `xeo import` and by load_stac alike.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BandMeta, ItemMeta } from '../core/catalog.js';
import { openRaster, type BlockCache } from './cog-reader.js';
import { checkUrl, TRUSTED, type OutboundPolicy } from './outbound.js';
import { transformBox } from '../geometry/crs.js';

/** A file or item that cannot become a catalogue item (the message says why). */
export class ImportError extends Error {}

/** What the reader cannot find in a file itself: band names (GeoTIFF), an acquisition date. */
export interface ItemOptions {
  /** Band names for GeoTIFFs, in file order; otherwise band descriptions, else B1, B2, ... */
  bands?: string[];
  /** Acquisition date for files that carry none. */
  date?: string;
}

/** A date from a file name: 20240318, 2024-03-18 or 2024_03_18 (optionally with a time, T101500). */
export function dateFromName(name: string): string | null {
  const m = /(?:^|[^\d])((?:19|20)\d{2})[-_]?(0[1-9]|1[0-2])[-_]?(0[1-9]|[12]\d|3[01])(?:[T_]?([01]\d|2[0-3])([0-5]\d)([0-5]\d))?(?:[^\d]|$)/.exec(name);
  if (!m) return null;
  return `${m[1]}-${m[2]}-${m[3]}T${m[4] ?? '00'}:${m[5] ?? '00'}:${m[6] ?? '00'}Z`;
}

function normaliseDate(d: string): string {
  const t = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(d) ? `${d}T00:00:00Z` : d);
  if (Number.isNaN(t)) throw new ImportError(`'${d}' is not a date`);
  return new Date(t).toISOString().replace('.000Z', 'Z');
}

export interface Parsed {
  item: ItemMeta;
  bands: BandMeta[];
  resolution: [number, number];
}

/** A GeoTIFF (path or URL) as one item, its samples as bands; its header is read through `blocks`. */
export async function itemOfGeoTiff(href: string, opts: ItemOptions, blocks: BlockCache, policy: OutboundPolicy = TRUSTED): Promise<Parsed> {
  const r = await openRaster(href, policy, blocks);
  const info = r.info;
  const names =
    opts.bands ??
    (info.descriptions.every((d) => d && /^[\w.-]+$/.test(d)) && new Set(info.descriptions).size === info.bands ? (info.descriptions as string[]) : Array.from({ length: info.bands }, (_, i) => `B${i + 1}`));
  if (names.length !== info.bands) throw new ImportError(`${href} has ${info.bands} bands but ${names.length} band names were given`);
  const base = path.basename(href.split('?')[0]);
  const date = opts.date ? normaliseDate(opts.date) : (info.datetime ?? dateFromName(base));
  if (!date) throw new ImportError(`${href}: no date in the file or its name; give one with --date`);
  const t = info.levels[0].transform;
  const bbox: [number, number, number, number] = [t[0], t[3] + info.height * t[5], t[0] + info.width * t[1], t[3]];
  const assets: ItemMeta['assets'] = {};
  names.forEach((n, i) => (assets[n] = { href, sample: i }));
  return {
    item: { id: base.replace(/\.[^.]+$/, ''), datetime: date, epsg: info.epsg, bbox, bbox4326: transformBox(bbox, info.epsg, 4326), assets },
    bands: names.map((name) => ({ name, data_type: info.sampleType, nodata: info.nodata })),
    resolution: [Math.abs(t[1]), Math.abs(t[5])],
  };
}

/**
 * The href of an asset: relative ones resolve against the item's URL or file. For a user's item
 * (not trusted) it must come out as an allowed http(s) URL: never a path, never another scheme.
 */
export function assetHref(href: unknown, file: string, policy: OutboundPolicy): string {
  if (typeof href !== 'string' || !href) throw new ImportError(`${file}: an asset has no href`);
  if (!policy.trusted) {
    let url: string;
    try {
      url = new URL(href, /^https?:\/\//i.test(file) ? file : undefined).href;
    } catch {
      url = href;
    }
    return checkUrl(url, policy).href;
  }
  if (/^file:\/\//i.test(href)) return fileURLToPath(href);
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(href) ? href : /^https?:\/\//i.test(file) ? new URL(href, file).href : path.resolve(path.dirname(file), href);
}

/** A STAC Item (parsed JSON) whose GeoTIFF data assets become bands; relative hrefs resolve against `file`. */
export async function parseStacItem(json: any, file: string, opts: ItemOptions, blocks: BlockCache, policy: OutboundPolicy = TRUSTED): Promise<Parsed> {
  if (json?.type !== 'Feature' || !json.assets || typeof json.assets !== 'object') throw new ImportError(`${file} is not a STAC Item`);
  const props = json.properties ?? {};
  const date = opts.date ? normaliseDate(opts.date) : props.datetime ? normaliseDate(props.datetime) : props.start_datetime ? normaliseDate(props.start_datetime) : null;
  if (!date) throw new ImportError(`${file}: the item has no datetime; give one with --date`);
  const assets: ItemMeta['assets'] = {};
  const bands: BandMeta[] = [];
  let first: Parsed | null = null;
  for (const [key, asset] of Object.entries<any>(json.assets)) {
    const type = String(asset.type ?? '');
    const roles: string[] = asset.roles ?? ['data'];
    if (!/tiff/i.test(type) && !/\.tiff?$/i.test(String(asset.href))) continue;
    if (!roles.includes('data')) continue;
    const href = assetHref(asset.href, file, policy);
    const parsed = await itemOfGeoTiff(href, { ...opts, bands: undefined, date }, blocks, policy);
    first ??= parsed;
    const eo: any[] = asset['eo:bands'] ?? [];
    parsed.bands.forEach((b, i) => {
      const name = eo[i]?.name ?? (parsed.bands.length === 1 ? key : `${key}_${i + 1}`);
      assets[name] = { href, sample: i };
      bands.push({
        ...b,
        name,
        ...(eo[i]?.common_name ? { common_name: eo[i].common_name } : {}),
        ...(eo[i]?.center_wavelength !== undefined ? { center_wavelength: eo[i].center_wavelength } : {}),
      });
    });
  }
  if (!first) throw new ImportError(`${file}: the item has no GeoTIFF data assets`);
  const properties: Record<string, unknown> = {};
  for (const k of ['eo:cloud_cover', 'platform', 'constellation', 'instruments']) if (props[k] !== undefined) properties[k] = props[k];
  return { item: { ...first.item, id: String(json.id ?? first.item.id), datetime: date, assets, properties }, bands, resolution: first.resolution };
}
