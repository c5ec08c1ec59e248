// Reads windows of GeoTIFF/COG files, local or over HTTP, as Float32 with NaN for nodata.
// geotiff.js parses the TIFF structure and fetches blocks; decompression is node:zlib (native, in
// libuv's pool) instead of geotiff.js's JS inflate; decoded blocks live in one LRU bounded by bytes,
// shared by every file, and concurrent misses of one block are fetched once.
import { fromFile, fromCustomClient, addDecoder, getDecoder, BaseDecoder, type GeoTIFF, type GeoTIFFImage } from 'geotiff';
import { LRUCache } from 'lru-cache';
import { inflate } from 'node:zlib';
import { promisify } from 'node:util';
import type { GeoTransform, Grid, SampleType } from '../core/grid.js';
import { UndiciClient } from './http-client.js';
import { plane } from '../compile/kernels.js';

const inflateAsync = promisify(inflate);

class ZlibDecoder extends BaseDecoder {
  override async decodeBlock(buffer: ArrayBufferLike): Promise<ArrayBufferLike> {
    const out = await inflateAsync(new Uint8Array(buffer));
    return out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength);
  }
}
addDecoder([8, 32946], async () => ZlibDecoder as unknown as typeof BaseDecoder);

export class RasterFormatError extends Error {}

export interface Level {
  width: number;
  height: number;
  transform: GeoTransform;
  tileWidth: number;
  tileHeight: number;
}

export interface RasterInfo {
  epsg: number;
  width: number;
  height: number;
  bands: number;
  sampleType: SampleType;
  nodata: number | null;
  /** Full resolution first, then overviews from fine to coarse. */
  levels: Level[];
  descriptions: (string | null)[];
  /** TIFF DateTime (tag 306) as ISO 8601, if present. */
  datetime: string | null;
}

export interface Window {
  col: number;
  row: number;
  width: number;
  height: number;
}

// --- the shared block cache -------------------------------------------------------------------

let blockCache = new LRUCache<string, ArrayBuffer>({ maxSize: 256 * 1024 * 1024, sizeCalculation: (b) => Math.max(1, b.byteLength) });
const inFlight = new Map<string, Promise<ArrayBuffer>>();

/** Sets the byte budget of decoded blocks kept in memory (XEO_BLOCK_CACHE_BYTES). */
export function configureBlockCache(maxBytes: number): void {
  blockCache = new LRUCache<string, ArrayBuffer>({ maxSize: Math.max(1, maxBytes), sizeCalculation: (b) => Math.max(1, b.byteLength) });
}

export function clearBlockCache(): void {
  blockCache.clear();
}

// --- opening files ---------------------------------------------------------------------------

const opened = new LRUCache<string, Promise<CogReader>>({
  max: 128,
  dispose: (p) => void p.then((r) => r.close()).catch(() => {}),
});

/** Opens (or reuses) a reader for a local path or an http(s) URL. */
export function openRaster(href: string): Promise<CogReader> {
  let r = opened.get(href);
  if (!r) {
    r = CogReader.open(href);
    opened.set(href, r);
    r.catch(() => opened.delete(href));
  }
  return r;
}

const SAMPLE_TYPES: Record<string, SampleType> = {
  '1:8': 'uint8',
  '2:8': 'int8',
  '1:16': 'uint16',
  '2:16': 'int16',
  '1:32': 'uint32',
  '2:32': 'int32',
  '3:32': 'float32',
  '3:64': 'float64',
};

export class CogReader {
  private decoders = new Map<number, Promise<BaseDecoder>>();

  private constructor(
    readonly href: string,
    private readonly tiff: GeoTIFF,
    private readonly images: GeoTIFFImage[],
    readonly info: RasterInfo,
  ) {}

  static async open(href: string): Promise<CogReader> {
    const remote = /^https?:\/\//i.test(href);
    let tiff: GeoTIFF;
    try {
      tiff = remote ? await fromCustomClient(new UndiciClient(href)) : await fromFile(href);
    } catch (e) {
      throw new RasterFormatError(`${href} is not a readable GeoTIFF: ${(e as Error).message}`);
    }
    const count = await tiff.getImageCount();
    const all: GeoTIFFImage[] = [];
    for (let i = 0; i < count; i++) all.push(await tiff.getImage(i));
    const main = all[0];
    // Reduced-resolution images (NewSubfileType bit 0) of the same size ratio are overviews;
    // masks and thumbnails with other sample counts are skipped.
    const spp = main.getSamplesPerPixel();
    const overviews = all
      .slice(1)
      .filter((im) => (Number(im.fileDirectory.getValue('NewSubfileType') ?? 0) & 1) === 1 && im.getSamplesPerPixel() === spp && im.getWidth() < main.getWidth())
      .sort((a, b) => b.getWidth() - a.getWidth());
    const images = [main, ...overviews];
    const info = await describe(href, main, images);
    return new CogReader(href, tiff, images, info);
  }

  close(): void {
    void (this.tiff as unknown as { close?: () => Promise<void> }).close?.();
  }

  /** The level whose pixels are the coarsest still at most `resolution` (in CRS units) wide. */
  levelFor(resolution: number): number {
    let best = 0;
    for (let i = 1; i < this.info.levels.length; i++) {
      if (Math.abs(this.info.levels[i].transform[1]) <= resolution * 1.0001) best = i;
    }
    return best;
  }

  levelGrid(level: number): Grid {
    const l = this.info.levels[level];
    return { epsg: this.info.epsg, transform: l.transform, width: l.width, height: l.height };
  }

  /**
   * Reads `window` (which may reach outside the image: those pixels are NaN) of one band at one
   * level, converting to Float32 with NaN for nodata. Decoded blocks are written straight into
   * `out`: by default a plane of the kernels' arena (in an arena scope), where the warp and the
   * kernels read them.
   */
  async readWindow(level: number, band: number, w: Window, out = plane(w.width * w.height)): Promise<Float32Array> {
    const image = this.images[level];
    const l = this.info.levels[level];
    const c0 = Math.max(0, w.col);
    const r0 = Math.max(0, w.row);
    const c1 = Math.min(l.width, w.col + w.width);
    const r1 = Math.min(l.height, w.row + w.height);
    // Only a window reaching outside the image has pixels no block will write.
    if (c0 !== w.col || r0 !== w.row || c1 !== w.col + w.width || r1 !== w.row + w.height) out.fill(NaN);
    if (c0 >= c1 || r0 >= r1) return out;
    const tw = l.tileWidth;
    const th = l.tileHeight;
    const planar = image.planarConfiguration;
    const spp = this.info.bands;
    const jobs: Promise<void>[] = [];
    for (let ty = Math.floor(r0 / th); ty * th < r1; ty++) {
      for (let tx = Math.floor(c0 / tw); tx * tw < c1; tx++) {
        jobs.push(
          this.block(level, tx, ty, planar === 2 ? band : 0).then((buf) => {
            const values = typedView(buf, this.info.sampleType);
            const stride = planar === 2 ? 1 : spp;
            const offset = planar === 2 ? 0 : band;
            const bx0 = Math.max(c0, tx * tw);
            const bx1 = Math.min(c1, (tx + 1) * tw);
            const by0 = Math.max(r0, ty * th);
            const by1 = Math.min(r1, (ty + 1) * th);
            copyBlock(values, stride, offset, tw, tx * tw, ty * th, bx0, bx1, by0, by1, out, w, this.info.nodata);
          }),
        );
      }
    }
    await Promise.all(jobs);
    return out;
  }

  private decoder(level: number): Promise<BaseDecoder> {
    let d = this.decoders.get(level);
    if (!d) {
      const image = this.images[level];
      const compression = Number(image.fileDirectory.getValue('Compression') ?? 1);
      d = (async () => {
        const fd = image.fileDirectory;
        const isTiled = !fd.hasTag('StripOffsets');
        return getDecoder(compression, {
          tileWidth: isTiled ? Number(await fd.loadValue('TileWidth')) : image.getWidth(),
          tileHeight: isTiled ? Number(await fd.loadValue('TileLength')) : Number((await fd.loadValue('RowsPerStrip')) ?? image.getHeight()),
          planarConfiguration: Number((await fd.loadValue('PlanarConfiguration')) ?? 1),
          bitsPerSample: (await fd.loadValue('BitsPerSample')) as number[],
          predictor: Number((await fd.loadValue('Predictor')) ?? 1),
        });
      })();
      this.decoders.set(level, d);
    }
    return d;
  }

  private block(level: number, tx: number, ty: number, sample: number): Promise<ArrayBuffer> {
    const key = `${this.href}\u0000${level}\u0000${tx}\u0000${ty}\u0000${sample}`;
    const hit = blockCache.get(key);
    if (hit) return Promise.resolve(hit);
    let p = inFlight.get(key);
    if (!p) {
      p = (async () => {
        const decoder = await this.decoder(level);
        const { data } = await this.images[level].getTileOrStrip(tx, ty, sample, decoder as never);
        const buf = data as ArrayBuffer;
        blockCache.set(key, buf);
        return buf;
      })().finally(() => inFlight.delete(key));
      inFlight.set(key, p);
    }
    return p;
  }
}

async function describe(href: string, main: GeoTIFFImage, images: GeoTIFFImage[]): Promise<RasterInfo> {
  const keys = main.getGeoKeys() ?? {};
  const epsg = Number(keys.ProjectedCSTypeGeoKey ?? keys.GeographicTypeGeoKey);
  if (!Number.isInteger(epsg) || epsg <= 0 || epsg === 32767) {
    throw new RasterFormatError(`${href} has no EPSG code for its coordinate reference system`);
  }
  const format = Number(main.getSampleFormat?.(0) ?? main.fileDirectory.getValue('SampleFormat')?.[0] ?? 1);
  const bits = main.getBitsPerSample(0);
  const sampleType = SAMPLE_TYPES[`${format}:${bits}`];
  if (!sampleType) throw new RasterFormatError(`${href}: ${bits}-bit samples of format ${format} are not supported`);
  let transform: GeoTransform;
  try {
    const [ox, oy] = main.getOrigin();
    const [rx, ry] = main.getResolution();
    transform = [ox, rx, 0, oy, 0, ry];
  } catch {
    throw new RasterFormatError(`${href} has no georeferencing`);
  }
  // PixelIsPoint rasters put the tie point on the first pixel's centre; we use its corner.
  if (Number(keys.GTRasterTypeGeoKey) === 2) {
    transform[0] -= transform[1] / 2;
    transform[3] -= transform[5] / 2;
  }
  const tile = (im: GeoTIFFImage) => ({ tileWidth: im.getTileWidth(), tileHeight: im.isTiled ? im.getTileHeight() : im.getBlockHeight(0) });
  const levels: Level[] = images.map((im) => {
    const sx = (main.getWidth() / im.getWidth()) * transform[1];
    const sy = (main.getHeight() / im.getHeight()) * transform[5];
    return { width: im.getWidth(), height: im.getHeight(), transform: [transform[0], sx, 0, transform[3], 0, sy], ...tile(im) };
  });
  const bands = main.getSamplesPerPixel();
  const descriptions: (string | null)[] = [];
  for (let b = 0; b < bands; b++) {
    const md = (await main.getGDALMetadata(b).catch(() => null)) as Record<string, unknown> | null;
    descriptions.push(typeof md?.DESCRIPTION === 'string' ? md.DESCRIPTION : null);
  }
  const dt = main.fileDirectory.hasTag('DateTime') ? ((await main.fileDirectory.loadValue('DateTime')) as string | undefined) : undefined;
  const m = dt ? /^(\d{4}):(\d{2}):(\d{2})[ T](\d{2}):(\d{2}):(\d{2})/.exec(dt) : null;
  return {
    epsg,
    width: main.getWidth(),
    height: main.getHeight(),
    bands,
    sampleType,
    nodata: main.getGDALNoData(),
    levels,
    descriptions,
    datetime: m ? `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z` : null,
  };
}

function typedView(buf: ArrayBuffer, t: SampleType) {
  switch (t) {
    case 'uint8':
      return new Uint8Array(buf);
    case 'int8':
      return new Int8Array(buf);
    case 'uint16':
      return new Uint16Array(buf, 0, buf.byteLength >> 1);
    case 'int16':
      return new Int16Array(buf, 0, buf.byteLength >> 1);
    case 'uint32':
      return new Uint32Array(buf, 0, buf.byteLength >> 2);
    case 'int32':
      return new Int32Array(buf, 0, buf.byteLength >> 2);
    case 'float32':
      return new Float32Array(buf, 0, buf.byteLength >> 2);
    case 'float64':
      return new Float64Array(buf, 0, buf.byteLength >> 3);
  }
}

/** Copies the part [bx0,bx1) x [by0,by1) of a decoded block into the window, nodata -> NaN. */
function copyBlock(
  values: ArrayLike<number>,
  stride: number,
  offset: number,
  blockWidth: number,
  blockX: number,
  blockY: number,
  bx0: number,
  bx1: number,
  by0: number,
  by1: number,
  out: Float32Array,
  w: Window,
  nodata: number | null,
): void {
  const hasNodata = nodata !== null && !Number.isNaN(nodata);
  const nd = nodata ?? 0;
  const n = bx1 - bx0;
  for (let y = by0; y < by1; y++) {
    const src = ((y - blockY) * blockWidth + (bx0 - blockX)) * stride + offset;
    const dst = (y - w.row) * w.width + (bx0 - w.col);
    // Separate loops keep the common cases (no nodata, one sample per pixel) branch-free.
    if (!hasNodata && stride === 1) {
      for (let i = 0; i < n; i++) out[dst + i] = values[src + i];
    } else if (!hasNodata) {
      for (let i = 0; i < n; i++) out[dst + i] = values[src + i * stride];
    } else {
      for (let i = 0; i < n; i++) {
        const v = values[src + i * stride];
        out[dst + i] = v === nd ? NaN : v;
      }
    }
  }
}
