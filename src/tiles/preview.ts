// The map preview of a collection: what it draws (true colour from the bands with the common names
// red, green and blue, else the first band through a colour map that suits it), for which dates
// (the newest by default, or `datetime=` as a date, a date-time or an interval), from which zoom on
// (a tile coarser than the data's coarsest overview would read far more than it draws), and the
// process graph that draws it: load_collection, a mosaic of the dates (newest valid pixel first)
// and a linear stretch to 0..255. The tile server runs that graph like a service's.
import type { CollectionMeta, ItemMeta, RemoteSearch } from '../core/catalog.js';
import type { Graph } from '../core/graph.js';
import { ApiError } from '../core/errors.js';
import { MERCATOR_HALF } from './tile-grid.js';
import type { LonLatBox } from './extent.js';

/** Deepest zoom a preview is drawn at (the services' default). */
export const PREVIEW_MAX_ZOOM = 22;
/** A STAC API collection's newest data without a date: the newest valid pixel of this many days up to its newest item. */
export const REMOTE_WINDOW_DAYS = 31;
/**
 * The coarsest overview of a STAC API collection's files, in native pixels, when its items are not
 * known here: a Sentinel-2 or Landsat scene of ~10,000 pixels with overviews down to ~300 pixels.
 */
const REMOTE_OVERVIEW_FACTOR = 32;
/** Tiles may be drawn from pixels at most this much finer than the tile's own (2: four times the pixels read). */
const OVERSAMPLING = 2;

/** How a preview draws: the bands it loads and the colours of one band. */
export interface PreviewStyle {
  bands: string[];
  /** 'rgb' for three bands, else a colour map of src/output/colormap.ts. */
  colormap: string;
  legend: string;
}

/** The dates a preview shows: [start, end) as load_collection takes them. */
export interface PreviewDates {
  interval: [string | null, string | null];
  /** What was asked for, for the page ("newest" when nothing was). */
  label: string;
}

export function previewStyle(meta: CollectionMeta): PreviewStyle {
  const named = (c: string) => meta.bands.find((b) => b.common_name === c)?.name;
  const [r, g, b] = [named('red'), named('green'), named('blue')];
  if (r && g && b) return { bands: [r, g, b], colormap: 'rgb', legend: `True colour: ${r}, ${g} and ${b} as red, green and blue, stretched from the 2nd to the 98th percentile.` };
  const band = meta.bands[0];
  const colormap = colormapFor(band?.name ?? '', band?.common_name ?? '', band?.description ?? '');
  return { bands: band ? [band.name] : [], colormap, legend: `Band ${band?.name ?? '?'} in ${colormap} colours, stretched from the 2nd to the 98th percentile.` };
}

/** A colour map that suits a band, by its names: vegetation indices, heights, water; greys otherwise. */
function colormapFor(...names: string[]): string {
  const text = names.join(' ').toLowerCase();
  if (/ndvi|evi|savi|vegetation/.test(text)) return 'ndvi';
  if (/dem|elev|height|altitude|terrain|topo/.test(text)) return 'terrain';
  if (/water|precip|rain|snow|ndwi/.test(text)) return 'blues';
  if (/temp|anomal/.test(text)) return 'rdbu';
  return 'greys';
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const DAY_MS = 86_400_000;

const invalid = (reason: string) => new ApiError('QueryParameterInvalid', { parameter: 'datetime', reason });

/** One end of `datetime`: an ISO instant; a date stands for its whole day (`end`: the day after). */
function instant(v: string, end: boolean): string {
  if (DATE.test(v)) {
    const t = Date.parse(`${v}T00:00:00Z`);
    if (Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== v) throw invalid(`${v} is no date`);
    return new Date(end ? t + DAY_MS : t).toISOString();
  }
  if (DATE_TIME.test(v)) {
    const t = Date.parse(v.replace(' ', 'T'));
    if (Number.isNaN(t)) throw invalid(`${v} is no date-time`);
    return new Date(t).toISOString();
  }
  throw invalid(`${JSON.stringify(v.slice(0, 40))} is neither an RFC 3339 date (2024-06-21), date-time (2024-06-21T10:00:00Z) nor an interval of them (a/b, with .. for an open end)`);
}

/**
 * The dates of `datetime=`: a date or date-time (the items of that day: items carry their day), or
 * an interval `a/b` (both ends included; `..` or nothing for an open end). Absent: the newest date.
 */
export function previewDates(meta: CollectionMeta, items: ItemMeta[], datetime: string | null, newestRemote: string | null = null): PreviewDates {
  if (datetime !== null) {
    const v = datetime.trim();
    const parts = v.split('/');
    if (parts.length === 1) {
      const start = instant(v, false).slice(0, 10);
      return { interval: [`${start}T00:00:00.000Z`, new Date(Date.parse(`${start}T00:00:00Z`) + DAY_MS).toISOString()], label: v };
    }
    if (parts.length !== 2) throw invalid('an interval has one slash');
    const open = (s: string) => s === '' || s === '..';
    if (open(parts[0]) && open(parts[1])) throw invalid('an interval needs at least one end');
    const a = open(parts[0]) ? null : instant(parts[0], false);
    // An end given as a date-time is included: the interval ends just after it.
    const b = open(parts[1]) ? null : DATE.test(parts[1]) ? instant(parts[1], true) : new Date(Date.parse(instant(parts[1], true)) + 1).toISOString();
    if (a && b && Date.parse(a) >= Date.parse(b)) throw invalid('the start of the interval is after its end');
    return { interval: [a, b], label: v };
  }
  if (!meta.remote) {
    // Items are ordered by datetime: the last one holds the newest date.
    const newest = items.length ? items[items.length - 1].datetime.slice(0, 10) : null;
    if (!newest) return { interval: [null, null], label: 'newest' };
    return { interval: [`${newest}T00:00:00.000Z`, new Date(Date.parse(`${newest}T00:00:00Z`) + DAY_MS).toISOString()], label: 'newest' };
  }
  // A STAC API collection's items are not kept here: the newest valid pixel of the weeks up to its
  // newest item (found by a search, newestRemoteItem), else up to the end of its extent or today.
  const endOf = newestRemote ?? meta.remote.extent.interval[1];
  const end = endOf && !Number.isNaN(Date.parse(endOf)) ? Date.parse(endOf) : Date.now();
  const day = Math.floor(end / DAY_MS) * DAY_MS + DAY_MS;
  return { interval: [new Date(day - REMOTE_WINDOW_DAYS * DAY_MS).toISOString(), new Date(day).toISOString()], label: 'newest' };
}

/** Items of a local collection within the dates. */
export function itemsWithin(items: ItemMeta[], dates: PreviewDates): ItemMeta[] {
  const [a, b] = dates.interval.map((d) => (d ? Date.parse(d) : null));
  return items.filter((it) => {
    const t = Date.parse(it.datetime.length === 10 ? `${it.datetime}T00:00:00Z` : it.datetime);
    return (a === null || t >= a) && (b === null || t < b);
  });
}

/** Where the preview has data: the items of its dates (a local collection) or its API's extent. */
export function previewExtent(meta: CollectionMeta, items: ItemMeta[]): LonLatBox | null {
  if (meta.remote) return meta.remote.extent.bbox;
  let box: LonLatBox | null = null;
  for (const it of items) {
    const b = it.bbox4326;
    box = box ? [Math.min(box[0], b[0]), Math.min(box[1], b[1]), Math.max(box[2], b[2]), Math.max(box[3], b[3])] : [...b];
  }
  return box;
}

/**
 * The coarsest zoom whose tiles are drawn from the data's coarsest overview or finer (with a little
 * oversampling). Our COGs (and GDAL's) have overviews down to about 256 pixels, so a file's coarsest
 * overview pixel is about its width / 256; a STAC API collection's files are taken to be scenes of
 * REMOTE_OVERVIEW_FACTOR coarsest-overview pixels per native pixel.
 */
export function previewMinZoom(meta: CollectionMeta, items: ItemMeta[]): number {
  const native = Math.max(Math.abs(meta.resolution[0]), Math.abs(meta.resolution[1]));
  // Geographic CRSs have their pixel size in degrees.
  const metres = (v: number, epsg: number) => (epsg === 4326 || epsg === 4258 || epsg === 4269 ? v * 111_320 : v);
  let coarsest = metres(native * REMOTE_OVERVIEW_FACTOR, meta.epsg);
  let lat = 0;
  if (!meta.remote && items.length) {
    // The widest file decides: its overviews stop first.
    coarsest = Math.max(...items.map((it) => metres(Math.max(it.bbox[2] - it.bbox[0], it.bbox[3] - it.bbox[1]), it.epsg) / 256));
    coarsest = Math.max(coarsest, metres(native, meta.epsg));
    const b = previewExtent(meta, items)!;
    lat = Math.min(Math.abs(b[1]), Math.abs(b[3]));
  } else if (meta.remote?.extent.bbox) {
    const b = meta.remote.extent.bbox;
    lat = b[1] <= 0 && b[3] >= 0 ? 0 : Math.min(Math.abs(b[1]), Math.abs(b[3]));
  }
  // Ground size of a 256-pixel tile's pixel at zoom z: the Mercator size shrunk by cos(latitude).
  const ground0 = ((2 * MERCATOR_HALF) / 256) * Math.cos((Math.min(lat, 85) * Math.PI) / 180);
  for (let z = 0; z < PREVIEW_MAX_ZOOM; z++) if (ground0 / 2 ** z <= coarsest * OVERSAMPLING) return z;
  return PREVIEW_MAX_ZOOM;
}

/**
 * The graph whose result the preview colours: the collection's bands for the dates, every tile
 * filled by the load (no spatial_extent), the dates mosaicked with the newest valid pixel on top.
 * `stretch` adds the linear stretch of [min, max] to 0..255 (values beyond clipped).
 */
export function previewGraph(meta: CollectionMeta, style: PreviewStyle, dates: PreviewDates, stretch: [number, number] | null = null): Graph {
  const graph: Record<string, unknown> = {
    load: { process_id: 'load_collection', arguments: { id: meta.id, spatial_extent: null, temporal_extent: dates.interval, bands: style.bands } },
    mosaic: {
      process_id: 'reduce_dimension',
      arguments: {
        data: { from_node: 'load' },
        dimension: 't',
        reducer: { process_graph: { newest: { process_id: 'last', arguments: { data: { from_parameter: 'data' }, ignore_nodata: true }, result: true } } },
      },
      result: stretch === null,
    },
  };
  if (stretch) {
    graph.stretch = {
      process_id: 'apply',
      arguments: {
        data: { from_node: 'mosaic' },
        process: {
          process_graph: {
            scale: { process_id: 'linear_scale_range', arguments: { x: { from_parameter: 'x' }, inputMin: stretch[0], inputMax: stretch[1], outputMin: 0, outputMax: 255 }, result: true },
          },
        },
      },
      result: true,
    };
  }
  return graph as Graph;
}

/**
 * The date of a STAC API collection's newest item in its extent: searches windows back from the end
 * of its extent (or today), REMOTE_WINDOW_DAYS first, each four times longer, until one holds items
 * or the extent's start is passed; a window with more items than a search may answer is narrowed
 * towards its end. A few searches, whatever the size of the collection; null when none found.
 */
export async function newestRemoteItem(meta: CollectionMeta, search: (req: RemoteSearch) => Promise<ItemMeta[]>): Promise<string | null> {
  const r = meta.remote!;
  const parse = (v: string | null) => (v && !Number.isNaN(Date.parse(v)) ? Date.parse(v) : null);
  const first = parse(r.extent.interval[0]);
  let end = (parse(r.extent.interval[1]) ?? Date.now()) + DAY_MS;
  let span = REMOTE_WINDOW_DAYS * DAY_MS;
  for (let i = 0; i < 16 && span >= 3_600_000; i++) {
    const from = first !== null ? Math.max(first, end - span) : end - span;
    let found: ItemMeta[];
    try {
      found = await search({ collection: meta.id, bbox: r.extent.bbox, temporal: [new Date(from).toISOString(), new Date(end).toISOString()], conditions: [], mode: 'tile' });
    } catch (e) {
      // More items than one search may hold: the newest are in a shorter window.
      if ((e as { code?: string }).code !== 'ProcessGraphComplexity') throw e;
      span /= 8;
      continue;
    }
    if (found.length) return found.map((it) => it.datetime).sort()[found.length - 1];
    if (first !== null && from <= first) return null;
    end = from;
    span *= 4;
  }
  return null;
}
