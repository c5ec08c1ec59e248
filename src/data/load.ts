// What the engine asks of the data layer: a Float32 cube chunk (time x band x y x x, NaN for
// nodata) on a target grid, for a collection, a spatial extent in any CRS, a time range and bands.
// Only the source windows and overview levels the chunk needs are read; sources in another CRS or
// resolution are warped, aligned ones are copied straight from the decoded blocks. The cube is a
// plane of the kernels' arena (src/wasm/kernels.ts) in an arena scope: blocks are decoded into
// it and the warp writes into it, so the kernels read it where it is.
import type { CatalogSnapshot, CatalogSource, CollectionMeta, ItemMeta, SourceAccess } from '../core/catalog.js';
import { ApiError } from '../core/errors.js';
import { transformBox, transformer } from '../geometry/crs.js';
import { gridBox, type Box, type Grid } from '../core/grid.js';
import { openRaster, RasterFormatError, type CogReader, type Window } from './cog-reader.js';
import type { EngineParts } from '../core/run-context.js';
import { TRUSTED } from './outbound.js';
import { RemoteError } from './http-client.js';
import { OutboundRefused } from './outbound.js';
import { warp, sourceWindow, type Resampling } from './warp.js';
import { addStage } from '../core/stages.js';
import { freePlane, plane } from '../wasm/kernels.js';

export interface Extent {
  west: number;
  south: number;
  east: number;
  north: number;
  /** EPSG code of the extent; 4326 when absent. */
  crs?: number;
}

export interface LoadRequest {
  collection: string;
  extent: Extent;
  /** [start, end): ISO dates or date-times; null ends are open. */
  temporal?: [string | null, string | null] | null;
  bands?: string[] | null;
  target?: { epsg?: number; resolution?: number };
  /** Part of the target grid to return; the whole grid when absent. */
  window?: Window;
  /**
   * An exact grid to fill (a map tile, a chunk of a batch job's output): replaces the grid planned
   * from extent and target, and the window. Pixels outside `extent` stay no-data.
   */
  grid?: Grid;
  /** The dates of the answer, fixed by the caller so every tile or chunk has the same; dates without items stay no-data. */
  times?: string[];
  resampling?: Resampling;
}

export interface CubeChunk {
  /** Grid of the returned data (the window of the full grid). */
  grid: Grid;
  fullGrid: Grid;
  times: string[];
  bands: string[];
  /** [time][band][row][col] */
  data: Float32Array;
}

/** The collection of a load, from what it holds in memory. */
export function collectionOf(store: CatalogSnapshot, id: string): CollectionMeta {
  const meta = store.collections.get(id);
  if (!meta) throw new ApiError('CollectionNotFound', { identifier: id });
  return meta;
}

/** A collection of the catalogue (the record store, or a STAC catalog read by load_stac). */
export async function findCollection(source: CatalogSource, id: string): Promise<CollectionMeta> {
  const meta = await source.collections.get(id);
  if (!meta) throw new ApiError('CollectionNotFound', { identifier: id });
  return meta;
}

/**
 * What a load of `meta` holds in memory: the collection and its items within `temporal` (all
 * when null), read from the catalogue once, so planning and reading never wait for records.
 */
export async function snapshotOf(source: CatalogSource, meta: CollectionMeta, temporal: LoadRequest['temporal'] | null): Promise<CatalogSnapshot> {
  const start = temporal?.[0] ? toInstant(temporal[0]) : null;
  const end = temporal?.[1] ? toInstant(temporal[1]) : null;
  return fixedSnapshot(source.access, meta, await source.collections.items(meta.id, start, end));
}

/** A snapshot of one collection with these items (ordered by datetime). */
export function fixedSnapshot(access: SourceAccess | undefined, meta: CollectionMeta, items: ItemMeta[]): CatalogSnapshot {
  return {
    access,
    collections: {
      get: (x) => (x === meta.id ? meta : null),
      items: (x, start, end) => (x !== meta.id ? [] : !start && !end ? items : items.filter((it) => (!start || it.datetime >= start) && (!end || it.datetime < end))),
    },
  };
}

/** The target grid of a load: the extent in the target CRS, snapped to the target resolution. */
export function planGrid(meta: CollectionMeta, extent: Extent, target: LoadRequest['target'] = {}, originOf?: [number, number]): Grid {
  const epsg = target.epsg ?? meta.epsg;
  const box = transformBox([extent.west, extent.south, extent.east, extent.north], extent.crs ?? 4326, epsg);
  if (!box.every(Number.isFinite) || box[2] <= box[0] || box[3] <= box[1]) {
    throw new ApiError('ProcessParameterInvalid', { process: 'load_collection', parameter: 'spatial_extent', reason: 'the extent is empty or cannot be projected' });
  }
  let res = target.resolution;
  if (!res) {
    if (epsg === meta.epsg) res = meta.resolution[0];
    else {
      // The native pixel size, carried into the target CRS by the extent's size ratio.
      const native = transformBox(box, epsg, meta.epsg);
      res = meta.resolution[0] * ((box[2] - box[0]) / (native[2] - native[0]));
    }
  }
  // Snap to the collection's pixel grid when it is the same CRS, so pixels are not resampled.
  const [ox, oy] = epsg === meta.epsg && originOf ? originOf : [0, 0];
  const minX = ox + Math.floor((box[0] - ox) / res + 1e-9) * res;
  const maxX = ox + Math.ceil((box[2] - ox) / res - 1e-9) * res;
  const minY = oy + Math.floor((box[1] - oy) / res + 1e-9) * res;
  const maxY = oy + Math.ceil((box[3] - oy) / res - 1e-9) * res;
  return {
    epsg,
    transform: [minX, res, 0, maxY, 0, -res],
    width: Math.max(1, Math.round((maxX - minX) / res)),
    height: Math.max(1, Math.round((maxY - minY) / res)),
  };
}

/** The target grid of a load, snapped to the pixel grid of its items (the corner of the first one). */
export function snappedGrid(meta: CollectionMeta, extent: Extent, target: LoadRequest['target'], groups: Map<string, ItemMeta[]>): Grid {
  const first = [...groups.values()][0]?.[0];
  return planGrid(meta, extent, target, first ? [first.bbox[0], first.bbox[3]] : undefined);
}

const toInstant = (s: string) => (/^\d{4}-\d{2}-\d{2}$/.test(s) ? `${s}T00:00:00Z` : new Date(s).toISOString().replace('.000Z', 'Z'));

function intersects(a: Box, b: Box): boolean {
  return a[0] < b[2] && a[2] > b[0] && a[1] < b[3] && a[3] > b[1];
}

/** Items of the request, grouped by acquisition time (several items of one time are mosaicked). */
export function itemsByTime(store: CatalogSnapshot, meta: CollectionMeta, extent: Extent, temporal?: LoadRequest['temporal']): Map<string, ItemMeta[]> {
  const wgs = transformBox([extent.west, extent.south, extent.east, extent.north], extent.crs ?? 4326, 4326);
  const start = temporal?.[0] ? toInstant(temporal[0]) : null;
  const end = temporal?.[1] ? toInstant(temporal[1]) : null;
  const out = new Map<string, ItemMeta[]>();
  for (const it of store.collections.items(meta.id, start, end)) {
    if (!intersects(it.bbox4326, wgs)) continue;
    const list = out.get(it.datetime);
    if (list) list.push(it);
    else out.set(it.datetime, [it]);
  }
  return out;
}

export function bandsOf(meta: CollectionMeta, names?: string[] | null) {
  if (!names || names.length === 0) return meta.bands;
  return names.map((n) => {
    const b = meta.bands.find((x) => x.name === n || x.common_name === n);
    if (!b) throw new ApiError('ProcessParameterInvalid', { process: 'load_collection', parameter: 'bands', reason: `the collection has no band '${n}'` });
    return b;
  });
}

/** What reading takes of the engine: its block cache, and its rules for the URLs users name. */
export type ReadParts = Pick<EngineParts, 'blocks' | 'outbound'>;

/** Reads a load into memory through the engine's block cache (and, for a user's source, its rules). */
export async function loadChunk(store: CatalogSnapshot, req: LoadRequest, engine: ReadParts): Promise<CubeChunk> {
  const t0 = performance.now();
  try {
    return await loadChunkInner(store, req, engine);
  } finally {
    addStage('load', performance.now() - t0);
  }
}

async function loadChunkInner(store: CatalogSnapshot, req: LoadRequest, engine: ReadParts): Promise<CubeChunk> {
  const meta = collectionOf(store, req.collection);
  const bands = bandsOf(meta, req.bands);
  if (req.grid) return loadOnGrid(store, meta, bands, req, req.grid, engine);
  const groups = itemsByTime(store, meta, req.extent, req.temporal);
  const fullGrid = snappedGrid(meta, req.extent, req.target, groups);
  const w = req.window ?? { col: 0, row: 0, width: fullGrid.width, height: fullGrid.height };
  const t = fullGrid.transform;
  const grid: Grid = {
    epsg: fullGrid.epsg,
    transform: [t[0] + w.col * t[1], t[1], 0, t[3] + w.row * t[5], 0, t[5]],
    width: w.width,
    height: w.height,
  };
  const times = req.times ?? [...groups.keys()];
  return { grid, fullGrid, times, bands: bands.map((b) => b.name), data: await fill(groups, times, bands, grid, req.resampling, accessOf(store), engine) };
}

/**
 * A load onto a given grid: only the part of the grid inside the request's extent is read (the
 * rest stays no-data), from the items that touch it. A grid entirely outside reads nothing.
 */
async function loadOnGrid(store: CatalogSnapshot, meta: CollectionMeta, bands: CollectionMeta['bands'], req: LoadRequest, grid: Grid, engine: ReadParts): Promise<CubeChunk> {
  const times = req.times ?? [...itemsByTime(store, meta, req.extent, req.temporal).keys()];
  const names = bands.map((b) => b.name);
  const planeSize = grid.width * grid.height;
  const empty = (): CubeChunk => ({ grid, fullGrid: grid, times, bands: names, data: plane(times.length * bands.length * planeSize).fill(NaN) });
  const box = gridBox(grid);
  const e = req.extent;
  const inGrid = transformBox([e.west, e.south, e.east, e.north], e.crs ?? 4326, grid.epsg);
  const t = grid.transform;
  // The window of the grid inside the extent, in whole pixels: a pixel counts when it overlaps the
  // extent, as planGrid counts them, so a batch job's chunks fill every pixel of the grid that the
  // same load planned whole (and /result) fills.
  const col0 = Math.max(0, Math.floor((inGrid[0] - t[0]) / t[1] + 1e-9));
  const col1 = Math.min(grid.width, Math.ceil((inGrid[2] - t[0]) / t[1] - 1e-9));
  const row0 = Math.max(0, Math.floor((inGrid[3] - t[3]) / t[5] + 1e-9));
  const row1 = Math.min(grid.height, Math.ceil((inGrid[1] - t[3]) / t[5] - 1e-9));
  if (!inGrid.every(Number.isFinite) || col1 <= col0 || row1 <= row0 || !intersects(inGrid, box)) return empty();
  const sub: Grid = { epsg: grid.epsg, transform: [t[0] + col0 * t[1], t[1], 0, t[3] + row0 * t[5], 0, t[5]], width: col1 - col0, height: row1 - row0 };
  const subBox = gridBox(sub);
  const groups = itemsByTime(store, meta, { west: subBox[0], south: subBox[1], east: subBox[2], north: subBox[3], crs: grid.epsg }, req.temporal);
  if (groups.size === 0) return empty();
  const part = await fill(groups, times, bands, sub, req.resampling, accessOf(store), engine);
  if (sub.width === grid.width && sub.height === grid.height) return { grid, fullGrid: grid, times, bands: names, data: part };
  const out = empty();
  const subPlane = sub.width * sub.height;
  for (let p = 0; p < times.length * bands.length; p++) {
    for (let r = 0; r < sub.height; r++) {
      const src = p * subPlane + r * sub.width;
      out.data.set(part.subarray(src, src + sub.width), p * planeSize + (row0 + r) * grid.width + col0);
    }
  }
  freePlane(part);
  return out;
}

const ADMIN: SourceAccess = { trusted: true, process: 'load_collection', parameter: 'id' };
const accessOf = (store: CatalogSnapshot): SourceAccess => store.access ?? ADMIN;

/** [time][band][row][col] on `grid`, NaN where no item of that time has data. */
async function fill(
  groups: Map<string, ItemMeta[]>,
  times: string[],
  bands: CollectionMeta['bands'],
  grid: Grid,
  resampling: Resampling | undefined,
  access: SourceAccess,
  engine: ReadParts,
): Promise<Float32Array> {
  const size = grid.width * grid.height;
  // Not filled here: a plane is NaN'd by mosaic() only when no item writes it (reading or warping
  // writes every pixel of its target), which saves a pass over the whole cube.
  const data = plane(times.length * bands.length * size);
  const jobs: Promise<void>[] = [];
  times.forEach((time, ti) => {
    const items = groups.get(time);
    bands.forEach((band, bi) => {
      const out = data.subarray((ti * bands.length + bi) * size, (ti * bands.length + bi + 1) * size);
      if (!items) {
        out.fill(NaN);
        return;
      }
      const method: Resampling = band.categorical ? 'nearest' : (resampling ?? 'nearest');
      jobs.push(mosaic(items, band.name, grid, method, out, access, engine));
    });
  });
  await Promise.all(jobs);
  return data;
}

/**
 * Fills `out` (NaN where empty) from the items of one time, first item first; stops once no pixel
 * is empty, before even the header of an item not needed is read. (The bands of a tile, and its
 * dates, are read concurrently: fill() starts them all at once.) `out` may hold anything before:
 * the first item that overlaps writes every pixel of it, and if none does it becomes NaN.
 */
async function mosaic(items: ItemMeta[], band: string, dst: Grid, method: Resampling, out: Float32Array, access: SourceAccess, engine: ReadParts): Promise<void> {
  if (!(await mosaicItems(items, band, dst, method, out, access, engine))) out.fill(NaN);
}

/** mosaic() without the NaN of a plane no item wrote: whether an item wrote it. */
async function mosaicItems(items: ItemMeta[], band: string, dst: Grid, method: Resampling, out: Float32Array, access: SourceAccess, engine: ReadParts): Promise<boolean> {
  const dstBox = gridBox(dst);
  // Until an item has written, `out` is unwritten: the first item reads (or warps) straight into it.
  let empty = true;
  for (const item of items) {
    if (!empty && !out.some(Number.isNaN)) return true;
    const asset = item.assets[band];
    if (!asset) continue;
    if (!intersects(item.epsg === dst.epsg ? item.bbox : transformBox(item.bbox, item.epsg, dst.epsg), dstBox)) continue;
    let part: Float32Array | null;
    try {
      const reader = await openRaster(asset.href, access.trusted ? TRUSTED : engine.outbound, engine.blocks);
      const srcRes = dst.epsg === reader.info.epsg ? dst.transform[1] : sourceResolution(dst, reader.info.epsg);
      const level = reader.levelFor(srcRes);
      part = await readInto(reader, level, asset.sample, reader.levelGrid(level), dst, method, empty ? out : undefined);
    } catch (e) {
      throw unreadable(e, access);
    }
    if (!part) continue;
    if (part !== out) {
      for (let i = 0; i < out.length; i++) if (Number.isNaN(out[i])) out[i] = part[i];
      freePlane(part);
    }
    empty = false;
  }
  return !empty;
}

/** An asset that cannot be read or is refused: the client's 400 naming the URL and the reason, not a 500. */
function unreadable(e: unknown, access: SourceAccess): unknown {
  if (e instanceof RemoteError || e instanceof OutboundRefused || e instanceof RasterFormatError) {
    return new ApiError('ProcessParameterInvalid', { process: access.process, parameter: access.parameter, reason: e.message });
  }
  return e;
}

/** A target pixel's width expressed in the source CRS (at the centre of the target grid). */
function sourceResolution(dst: Grid, srcEpsg: number): number {
  const t = dst.transform;
  const cx = t[0] + (dst.width / 2) * t[1];
  const cy = t[3] + (dst.height / 2) * t[5];
  const f = transformer(dst.epsg, srcEpsg);
  const [ax, ay] = f(cx, cy);
  const [bx, by] = f(cx + t[1], cy);
  const [qx, qy] = f(cx, cy + t[5]);
  return Math.min(Math.hypot(bx - ax, by - ay), Math.hypot(qx - ax, qy - ay));
}

async function readInto(reader: CogReader, level: number, sample: number, src: Grid, dst: Grid, method: Resampling, into?: Float32Array): Promise<Float32Array | null> {
  const st = src.transform;
  const dt = dst.transform;
  // Aligned: same CRS and pixel size, integer offset: the window is the answer, no warp.
  const col = (dt[0] - st[0]) / st[1];
  const row = (dt[3] - st[3]) / st[5];
  if (src.epsg === dst.epsg && st[1] === dt[1] && st[5] === dt[5] && Math.abs(col - Math.round(col)) < 1e-6 && Math.abs(row - Math.round(row)) < 1e-6) {
    const w = { col: Math.round(col), row: Math.round(row), width: dst.width, height: dst.height };
    return reader.readWindow(level, sample, w, into ?? plane(w.width * w.height));
  }
  const win = sourceWindow(dst, src, method === 'bilinear' ? 2 : 1);
  if (!win) return null;
  // The source window is a temporary plane: the warp reads it in place, then it goes back.
  const data = await reader.readWindow(level, sample, win, plane(win.width * win.height));
  const winGrid: Grid = { epsg: src.epsg, transform: [st[0] + win.col * st[1], st[1], 0, st[3] + win.row * st[5], 0, st[5]], width: win.width, height: win.height };
  try {
    return warp({ grid: winGrid, data }, dst, method, into ? { out: into } : {});
  } finally {
    freePlane(data);
  }
}
