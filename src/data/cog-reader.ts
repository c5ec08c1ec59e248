// Reads windows of GeoTIFF/COG files, local or over HTTP, as Float32 with NaN for nodata.
// geotiff.js parses the TIFF structure; remote files are read through HttpRangeSource (the header
// in one request). The blocks a window misses are fetched in ONE source fetch (merged, parallel
// ranges for remote files) and decoded by node:zlib (native, in libuv's pool) instead of geotiff.js's
// JS inflate. Decoded blocks and opened files (their parsed headers) live in one LRU bounded by
// bytes, shared by every file, and concurrent misses of one block or file are fetched once.
import { fromArrayBuffer, fromFile, addDecoder, getDecoder, BaseDecoder, GeoTIFF, type GeoTIFFImage } from 'geotiff';
import { LRUCache } from 'lru-cache';
import { stat } from 'node:fs/promises';
import { inflate } from 'node:zlib';
import { promisify } from 'node:util';
import type { GeoTransform, Grid, SampleType } from '../core/grid.js';
import { readerKey, type HeaderSeed } from '../core/catalog.js';
import { fileIdentity } from '../core/file-identity.js';
import { BLOCK_SLACK, inflateRoom } from '../core/inflate-room.js';
import { HttpRangeSource } from './range-source.js';
import { s3HrefSigner } from './stac-signers.js';
import { checkUrl, OutboundRefused, type OutboundPolicy } from './outbound.js';
import { RemoteError } from './http-client.js';
import { alloc, kernels, mark, plane, ptrOf, release, u8, undoPredictor16 } from '../wasm/kernels.js';

const inflateAsync = promisify(inflate);

/** What the decoders of geotiff.js are given (the tags of the image a block belongs to). */
interface DecoderParameters {
  predictor: number;
  bitsPerSample: number | number[];
  planarConfiguration: number;
  tileWidth: number;
  tileHeight: number;
}

/** The bytes of a whole decoded block (the last strip of an image may hold fewer). */
function blockBytes(p: DecoderParameters): number {
  const bits = [p.bitsPerSample].flat().map(Number);
  const perPixel = p.planarConfiguration === 2 ? bits[0] : bits.reduce((a, b) => a + b, 0);
  return Math.ceil((p.tileWidth * perPixel) / 8) * p.tileHeight;
}

class ZlibDecoder extends BaseDecoder {
  override async decodeBlock(buffer: ArrayBufferLike): Promise<ArrayBufferLike> {
    // One output buffer of the block's size (core/inflate-room.ts): zlib then hands it over whole,
    // instead of 16 KiB pieces joined by another copy (most of a zonal job's garbage, and a quarter
    // of its thread's time).
    const size = blockBytes((this as unknown as { parameters: DecoderParameters }).parameters);
    const out = await inflateAsync(new Uint8Array(buffer), size > 0 && size < 1 << 30 ? { chunkSize: inflateRoom(size) } : {});
    // zlib's answer usually owns its memory whole (and the slack): then it is the block, without
    // another copy; readers view a block by its size, not its buffer's.
    return out.byteOffset === 0 && out.buffer.byteLength - out.byteLength <= BLOCK_SLACK ? out.buffer : out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength);
  }

  /**
   * Horizontal differencing (predictor 2) of one-sample 16-bit blocks, the layout of Sentinel-2
   * style COGs, undone by a kernel; anything else as geotiff.js does it.
   */
  override async decode(buffer: ArrayBufferLike): Promise<ArrayBufferLike> {
    const p = (this as unknown as { parameters: DecoderParameters }).parameters;
    const w = predictor16Width(p);
    if (w === 0) return super.decode(buffer);
    const decoded = await this.decodeBlock(buffer);
    undoPredictor16(new Uint8Array(decoded), w, Math.min(p.tileHeight, Math.floor(decoded.byteLength / 2 / w)));
    return decoded;
  }
}

/** The row width of predictor 2 over one-sample 16-bit blocks (ZlibDecoder's own case), else 0. */
function predictor16Width(p: DecoderParameters): number {
  const bits = [p.bitsPerSample].flat().map(Number);
  return p.predictor === 2 && bits.every((b) => b === 16) && (bits.length === 1 || p.planarConfiguration === 2) ? p.tileWidth : 0;
}
addDecoder([8, 32946], async () => ZlibDecoder);

import { RasterFormatError } from './raster-format-error.js';

export { RasterFormatError };

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

// --- the one cache: decoded blocks and opened files ----------------------------------------------

/** A block's bytes as stored (compressed), fetched ahead of need; decoded when a read wants it. */
class RawBlock {
  constructor(readonly bytes: ArrayBuffer) {}
}
type Cached = ArrayBuffer | RawBlock | CogReader;
const sizeOf = (v: Cached) => (v instanceof ArrayBuffer ? Math.max(1, v.byteLength) : v instanceof RawBlock ? Math.max(1, v.bytes.byteLength) : v.heldBytes);

/**
 * Blocks around a remote window fetched with it, in the same round trip (its rows are ranges of
 * their own, sent in parallel): the next tiles of a map session mostly find their blocks here.
 * Not for a file's first window (a map's first tile): with a ring of one block around its two by
 * two, it would wait for four times the bytes it needs (the remote bench's first tile read for
 * 59-63 ms with the ring, 41-42 ms without).
 */
const READ_AHEAD_BLOCKS = 1;

// A local file's reader holds a file descriptor: closed a while after the reader leaves the cache
// (a read that took it just before may still be using it).
// A decoded block dropped from the cache gives its memory back (not left to the garbage collector)
// once the reads that took it are done: they use it at once, in the callback of the promise that
// gave it, so a later turn of the event loop finds no user.
const dispose = (v: Cached) => {
  if (v instanceof CogReader) setTimeout(() => v.close(), 60_000).unref();
  else if (v instanceof ArrayBuffer) setImmediate(() => giveBack(v));
};
/** How a level's blocks go to a BlockInflater: their decoded size, the predictor's row (or 0), the file's identity. */
interface InflatedElsewhere {
  size: number;
  predictor16Width: number;
  identity: string;
}

/**
 * Threads that read and inflate the deflated blocks of local files, each block in one step, and
 * hand over the decoded block (a job thread's deflate threads, output/deflate-threads.ts): the
 * reading thread then only takes blocks, instead of going twice to libuv's pool and running
 * node:zlib's stream machinery for each.
 */
export interface BlockInflater {
  /**
   * The decoded bytes (`size`, or fewer for a short last strip; the buffer may hold 8 more) of the
   * `length` deflated bytes at `offset` of `file`; with predictor 2 of 16-bit samples undone,
   * `predictor16Width` samples a row, when that is not 0. It fails when the file is no longer the
   * one of `identity` (core/file-identity.ts: replaced or rewritten since it was opened).
   */
  inflate(file: string, identity: string, offset: number, length: number, size: number, predictor16Width: number): Promise<ArrayBuffer>;
}

/**
 * Everything kept in memory for reading, within one byte budget (an engine thread's is
 * XEO_BLOCK_CACHE_BYTES, src/engine/engine.ts): decoded blocks and the parsed headers of opened
 * files share it, least recently used dropped first; reads of a block or file under way are
 * shared too. A reader belongs to the cache that opened it and keeps its blocks there.
 */
export class BlockCache {
  readonly lru: LRUCache<string, Cached>;
  readonly inFlight = new Map<string, Promise<ArrayBuffer>>();
  readonly rawInFlight = new Map<string, Promise<ArrayBuffer>>();
  readonly opening = new Map<string, Promise<CogReader>>();
  /** Blocks fetched from their files, blocks decoded, and blocks a read found decoded (here or under way). */
  readonly counts = { fetched: 0, decoded: 0, reused: 0 };
  /**
   * Headers read ahead for files not opened yet (by reader key), from a search's answer: the
   * file's opening takes its seed instead of a first round trip. Few and short-lived.
   */
  readonly seeds = new LRUCache<string, HeaderSeed>({ maxSize: 4 * 1024 * 1024, sizeCalculation: (v) => Math.max(1, v.bytes.byteLength), ttl: 60_000 });

  constructor(
    maxBytes: number,
    /** Where the deflated blocks of local files are read and decoded; null: here, through libuv's pool. */
    readonly inflater: BlockInflater | null = null,
  ) {
    this.lru = new LRUCache<string, Cached>({ maxSize: Math.max(1, maxBytes), sizeCalculation: sizeOf, dispose });
  }

  /** The byte budget. */
  get maxBytes(): number {
    return this.lru.maxSize;
  }

  /** Forgets the decoded blocks (opened files stay). */
  clearBlocks(): void {
    for (const [k, v] of this.lru.entries()) if (!(v instanceof CogReader)) this.lru.delete(k);
  }

  /** Forgets decoded blocks and opened files (their parsed headers). */
  clear(): void {
    this.lru.clear();
  }
}

declare module '../core/run-context.js' {
  interface EngineParts {
    /** The thread's blocks and opened files (XEO_BLOCK_CACHE_BYTES; a job's own size rides with its runs). */
    blocks: BlockCache;
  }
}

// --- opening files ---------------------------------------------------------------------------

const isRemote = (href: string) => /^(https?|s3):\/\//i.test(href);

/**
 * GeoTIFFs held in memory under `mem:` hrefs: a user's uploaded file read through the file store
 * (load_uploaded_files). Only hrefs registered here by our own code open; a `mem:` href anyone
 * writes elsewhere names nothing.
 */
const memoryRasters = new LRUCache<string, ArrayBuffer>({ maxSize: 1024 * 1024 * 1024, sizeCalculation: (b) => Math.max(1, b.byteLength), ttl: 10 * 60 * 1000 });

/** Registers the bytes of a GeoTIFF under a `mem:` href (kept for ten minutes, 1 GiB per thread at most). */
export function registerMemoryRaster(href: string, bytes: Uint8Array): void {
  if (!href.startsWith('mem:')) throw new Error('memory rasters have mem: hrefs');
  memoryRasters.set(href, bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? (bytes.buffer as ArrayBuffer) : bytes.slice().buffer);
}

export const hasMemoryRaster = (href: string): boolean => memoryRasters.has(href);
const isS3 = (href: string) => /^s3:\/\//i.test(href);

/**
 * Opens (or reuses) a reader for an http(s) URL, or for a local path when the policy is trusted
 * (the administrator's imports). A user's href must be an allowed http(s) URL (data/outbound.ts):
 * anything else is refused before any I/O.
 */
export function openRaster(href: string, policy: OutboundPolicy, cache: BlockCache): Promise<CogReader> {
  if (href.startsWith('mem:')) {
    if (!memoryRasters.has(href)) return Promise.reject(new RasterFormatError(`${href.slice(4)} is no longer in memory; load it again`));
    return openCached(href, `m\u0000${href}`, policy, cache);
  }
  // s3:// hrefs are signed with the operator's credentials (XEO_S3_*): only the administrator's items may name them.
  if (isS3(href)) {
    if (!policy.trusted) throw new OutboundRefused(`'${href}' is refused: s3:// hrefs are read only in collections the administrator added`);
  } else if (!policy.trusted || isRemote(href)) checkUrl(href, policy);
  // A trusted href is an http(s) URL or a local path; another scheme is neither (never a relative path named 's3:').
  else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(href)) throw new OutboundRefused(`'${href}' is refused: only http(s) URLs and local paths are read`);
  // Readers are kept per policy: a user's href never reuses a connection pool without the rules.
  return openCached(href, readerKey(policy.trusted, href), policy, cache);
}

function openCached(href: string, key: string, policy: OutboundPolicy, cache: BlockCache): Promise<CogReader> {
  const hit = cache.lru.get(`f\u0000${key}`);
  if (hit instanceof CogReader) return Promise.resolve(hit);
  let p = cache.opening.get(key);
  if (!p) {
    p = CogReader.open(href, policy, key, cache)
      .then((r) => {
        cache.lru.set(`f\u0000${key}`, r);
        return r;
      })
      .finally(() => cache.opening.delete(key));
    cache.opening.set(key, p);
  }
  return p;
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
  /** A local file's fileIdentity, when its blocks are read elsewhere. */
  private identity: Promise<string> | null = null;
  /** Whether blocks of this file were fetched before (the first fetch reads nothing ahead). */
  private readBefore = false;

  private constructor(
    readonly href: string,
    /** Cache key prefix of this file's blocks (href and policy). */
    private readonly key: string,
    private readonly tiff: GeoTIFF,
    private readonly images: GeoTIFFImage[],
    readonly info: RasterInfo,
    /** Per level: byte offset and count of every block. */
    private readonly blocks: { offsets: ArrayLike<number>; counts: ArrayLike<number> }[],
    /** Bytes this reader holds (its header), charged to the cache. */
    readonly heldBytes: number,
    private readonly remote: boolean,
    /** Where its blocks are kept. */
    private readonly store: BlockCache,
  ) {}

  static async open(href: string, policy: OutboundPolicy, key: string, store: BlockCache): Promise<CogReader> {
    const seed = store.seeds.get(key) ?? null;
    if (seed) store.seeds.delete(key);
    const source = isRemote(href) ? new HttpRangeSource(href, policy, isS3(href) ? (u) => s3HrefSigner().sign(u) : undefined, seed) : null;
    let tiff: GeoTIFF;
    const all: GeoTIFFImage[] = [];
    try {
      const mem = href.startsWith('mem:') ? memoryRasters.get(href) : undefined;
      tiff = mem ? await fromArrayBuffer(mem) : source ? await GeoTIFF.fromSource(source as never) : await fromFile(href);
      const count = await tiff.getImageCount();
      for (let i = 0; i < count; i++) all.push(await tiff.getImage(i));
    } catch (e) {
      if (e instanceof RemoteError || e instanceof OutboundRefused) throw e;
      throw new RasterFormatError(`${href} is not a readable GeoTIFF: ${(e as Error).message}`);
    }
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
    // The block offsets of every level, while the header is at hand (a COG keeps them in it).
    const blocks = await Promise.all(
      images.map(async (im) => {
        const tiled = im.fileDirectory.hasTag('TileOffsets');
        const [offsets, counts] = await Promise.all([im.fileDirectory.loadValue(tiled ? 'TileOffsets' : 'StripOffsets'), im.fileDirectory.loadValue(tiled ? 'TileByteCounts' : 'StripByteCounts')]);
        return { offsets: offsets as ArrayLike<number>, counts: counts as ArrayLike<number> };
      }),
    );
    if (source) source.opening = false;
    const held = (source?.heldBytes ?? 0) + blocks.reduce((s, b) => s + 16 * b.offsets.length, 0) + 4096;
    return new CogReader(href, key, tiff, images, info, blocks, held, source !== null, store);
  }

  /** Whether each block read is a buffer of its own (a local file's). */
  private get ownsReads(): boolean {
    return !this.remote && !this.href.startsWith('mem:');
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
    const wanted: [number, number][] = [];
    for (let ty = Math.floor(r0 / th); ty * th < r1; ty++) for (let tx = Math.floor(c0 / tw); tx * tw < c1; tx++) wanted.push([tx, ty]);
    // Only a job thread's reads of local files can go to an inflater: a tile's read has no turn to wait here.
    const elsewhere = this.store.inflater && this.ownsReads ? await this.inflatedElsewhere(level) : null;
    const buffers = this.blocksOf(level, wanted, planar === 2 ? band : 0, elsewhere);
    const stride = planar === 2 ? 1 : spp;
    const offset = planar === 2 ? 0 : band;
    const jobs = wanted.map(([tx, ty], k) =>
      buffers[k].then((buf) => {
        const part: BlockPart = {
          stride,
          offset,
          blockWidth: tw,
          blockX: tx * tw,
          blockY: ty * th,
          bx0: Math.max(c0, tx * tw),
          bx1: Math.min(c1, (tx + 1) * tw),
          by0: Math.max(r0, ty * th),
          by1: Math.min(r1, (ty + 1) * th),
          w,
          nodata: this.info.nodata,
        };
        // A window in kernel memory is filled by the kernels (a short block, from a damaged file, as before).
        const at = ptrOf(out);
        if (at >= 0 && buf.byteLength >= (part.by1 - part.blockY) * tw * stride * SAMPLE_BYTES[this.info.sampleType]) copyBlockKernel(buf, this.info.sampleType, part, at);
        else copyBlock(typedView(buf, this.info.sampleType), part, out);
      }),
    );
    await Promise.all(jobs);
    return out;
  }

  /**
   * How the cache's inflater decodes this level's blocks (their size, and the row of predictor 2
   * to undo, or 0), when it can: blocks of a local file, deflated, without a predictor or with
   * predictor 2 of one-sample 16-bit data. Null: they are decoded here. Asked only when the cache
   * has an inflater and this reader's reads are its own (readWindow).
   */
  private async inflatedElsewhere(level: number): Promise<InflatedElsewhere | null> {
    const d = await this.decoder(level);
    if (!(d instanceof ZlibDecoder)) return null;
    const p = (d as unknown as { parameters: DecoderParameters }).parameters;
    const size = blockBytes(p);
    const width = predictor16Width(p);
    if (!(size > 0 && size < 1 << 30) || (p.predictor !== 1 && width === 0)) return null;
    // The inflater opens the file by its path: it checks it is still the file opened here.
    const identity = await (this.identity ??= stat(this.href).then(fileIdentity, (e: Error) => Promise.reject(new RasterFormatError(`${this.href} cannot be read: ${e.message}`))));
    return { size, predictor16Width: width, identity };
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

  /**
   * The decoded blocks (tx, ty) of one sample at one level: cached ones at once, blocks another read
   * is fetching shared, and all the others fetched by ONE source fetch (one merged range per run
   * of adjacent blocks, the ranges in parallel) and decoded concurrently. For remote files the ring
   * of blocks around them comes in the same fetch from the file's second read on, kept compressed
   * until a read wants it.
   */
  private blocksOf(level: number, wanted: [number, number][], sample: number, elsewhere: InflatedElsewhere | null): Promise<ArrayBuffer>[] {
    const image = this.images[level];
    const l = this.info.levels[level];
    const perRow = Math.ceil(l.width / l.tileWidth);
    const perCol = Math.ceil(l.height / l.tileHeight);
    const base = image.planarConfiguration === 2 ? sample * perRow * perCol : 0;
    const keyOf = (tx: number, ty: number) => `${this.key}\u0000${level}\u0000${tx}\u0000${ty}\u0000${sample}`;
    const { offsets, counts } = this.blocks[level];
    const { lru: cache, inFlight, rawInFlight, counts: tally } = this.store;
    const out: Promise<ArrayBuffer>[] = new Array(wanted.length);
    const fetchList: { key: string; index: number }[] = [];
    const decodeLater = (key: string, ty: number, raw: Promise<ArrayBuffer> | null): Promise<ArrayBuffer> => {
      const p = (async () => {
        if (!raw) {
          const empty = this.emptyBlock(image, l.tileWidth, ty);
          cache.set(key, empty);
          return empty;
        }
        tally.decoded++;
        const bytes = await raw;
        const buf = await this.decode(level, bytes);
        // A local file's block was read into a buffer of its own: once decoded into another, its
        // memory goes back at once instead of waiting for the garbage collector (a zonal job reads
        // hundreds of them a second; remote blocks may share one buffer, and an uncompressed
        // block is its decoded self).
        if (this.ownsReads && buf !== bytes) giveBack(bytes);
        cache.set(key, buf);
        return buf;
      })().finally(() => inFlight.delete(key));
      // A failed fetch is reported by the read that waits for it; never as an unhandled rejection.
      p.catch(() => {});
      inFlight.set(key, p);
      return p;
    };
    // A block read and decoded by the cache's inflater, in one step.
    const inflateElsewhere = (key: string, index: number, how: InflatedElsewhere): Promise<ArrayBuffer> => {
      tally.fetched++;
      tally.decoded++;
      const p = this.store
        .inflater!.inflate(this.href, how.identity, Number(offsets[index]), Number(counts[index]), how.size, how.predictor16Width)
        .then(
          (buf) => {
            cache.set(key, buf);
            return buf;
          },
          (e: unknown) => {
            throw new RasterFormatError(`${this.href}: a block could not be read: ${(e as Error).message}`);
          },
        )
        .finally(() => inFlight.delete(key));
      // A failed read is reported by the read that waits for it; never as an unhandled rejection.
      p.catch(() => {});
      inFlight.set(key, p);
      return p;
    };
    const pending: { k: number; key: string; ty: number; at: number }[] = [];
    wanted.forEach(([tx, ty], k) => {
      const key = keyOf(tx, ty);
      const index = base + ty * perRow + tx;
      const hit = cache.get(key);
      if (hit instanceof ArrayBuffer) {
        tally.reused++;
        out[k] = Promise.resolve(hit);
      } else if (inFlight.has(key)) {
        tally.reused++;
        out[k] = inFlight.get(key)!;
      } else if (!(Number(counts[index]) > 0)) out[k] = decodeLater(key, ty, null);
      else if (elsewhere) out[k] = inflateElsewhere(key, index, elsewhere);
      else {
        const raw = cache.get(`r${key}`);
        if (raw instanceof RawBlock) {
          cache.delete(`r${key}`);
          out[k] = decodeLater(key, ty, Promise.resolve(raw.bytes));
        } else if (rawInFlight.has(key)) out[k] = decodeLater(key, ty, rawInFlight.get(key)!);
        else {
          pending.push({ k, key, ty, at: fetchList.length });
          fetchList.push({ key, index });
        }
      }
    });
    if (!fetchList.length) return out;
    // The ring around the blocks fetched now, when remote (a local read costs no round trip), from
    // the file's second fetch on.
    const ahead: { key: string; index: number }[] = [];
    const first = !this.readBefore;
    this.readBefore = true;
    if (this.remote && READ_AHEAD_BLOCKS > 0 && !first) {
      const xs = wanted.map((w) => w[0]);
      const ys = wanted.map((w) => w[1]);
      const r = READ_AHEAD_BLOCKS;
      for (let ty = Math.max(0, Math.min(...ys) - r); ty <= Math.min(perCol - 1, Math.max(...ys) + r); ty++) {
        for (let tx = Math.max(0, Math.min(...xs) - r); tx <= Math.min(perRow - 1, Math.max(...xs) + r); tx++) {
          const key = keyOf(tx, ty);
          const index = base + ty * perRow + tx;
          if (!(Number(counts[index]) > 0) || fetchList.some((f) => f.key === key)) continue;
          if (cache.has(key) || cache.has(`r${key}`) || inFlight.has(key) || rawInFlight.has(key)) continue;
          ahead.push({ key, index });
        }
      }
    }
    const all = [...fetchList, ...ahead];
    tally.fetched += all.length;
    const fetched = (this.tiff as unknown as { source: { fetch(s: { offset: number; length: number }[]): Promise<ArrayBuffer[]> } }).source.fetch(
      all.map((f) => ({ offset: Number(offsets[f.index]), length: Number(counts[f.index]) })),
    );
    all.forEach((f, i) => {
      const raw = fetched.then((list) => list[i]);
      // handled where the piece is awaited; this only keeps the rejection from counting as unhandled meanwhile
      raw.catch(() => {});
      rawInFlight.set(f.key, raw);
      void raw.then(
        (bytes) => {
          rawInFlight.delete(f.key);
          // Read ahead: kept compressed unless a read has taken it meanwhile.
          if (i >= fetchList.length && !cache.has(f.key) && !inFlight.has(f.key)) cache.set(`r${f.key}`, new RawBlock(bytes));
        },
        () => rawInFlight.delete(f.key),
      );
    });
    for (const m of pending) out[m.k] = decodeLater(m.key, m.ty, rawInFlight.get(m.key)!);
    return out;
  }

  private async decode(level: number, raw: ArrayBuffer): Promise<ArrayBuffer> {
    return (await (await this.decoder(level)).decode(raw)) as ArrayBuffer;
  }

  /** A block without bytes (sparse file): nodata, or 0. */
  private emptyBlock(image: GeoTIFFImage, tileWidth: number, ty: number): ArrayBuffer {
    const n = tileWidth * image.getBlockHeight(ty) * (image.planarConfiguration === 2 ? 1 : this.info.bands);
    const buf = new ArrayBuffer(n * (image.getBitsPerSample(0) / 8));
    const nd = this.info.nodata;
    if (nd !== null && !Number.isNaN(nd)) typedViewFill(buf, this.info.sampleType, nd);
    return buf;
  }
}

/** Gives a buffer's memory back now (ES2024 transfer to nothing detaches it); it must have no other user. */
function giveBack(buf: ArrayBuffer): void {
  (buf as ArrayBuffer & { transfer?: (n: number) => ArrayBuffer }).transfer?.(0);
}

function typedViewFill(buf: ArrayBuffer, t: SampleType, v: number): void {
  typedView(buf, t).fill(v);
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
    // GDAL metadata is optional: a band without readable metadata has no description
    const md = await main.getGDALMetadata(b).catch(() => null);
    descriptions.push(typeof md?.DESCRIPTION === 'string' ? md.DESCRIPTION : null);
  }
  const dt = main.fileDirectory.hasTag('DateTime') ? await main.fileDirectory.loadValue('DateTime') : undefined;
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

/** The sample kinds of kernels/samples.ts. */
const SAMPLE_KINDS: Record<SampleType, number> = { uint8: 0, int8: 1, uint16: 2, int16: 3, uint32: 4, int32: 5, float32: 6, float64: 7 };
const SAMPLE_BYTES: Record<SampleType, number> = { uint8: 1, int8: 1, uint16: 2, int16: 2, uint32: 4, int32: 4, float32: 4, float64: 8 };

/**
 * The part [bx0,bx1) x [by0,by1) of a decoded block (whose top left pixel is blockX, blockY) that
 * window `w` takes; a pixel's sample is `stride` samples after the previous one, from `offset`.
 */
interface BlockPart {
  stride: number;
  offset: number;
  blockWidth: number;
  blockX: number;
  blockY: number;
  bx0: number;
  bx1: number;
  by0: number;
  by1: number;
  w: Window;
  nodata: number | null;
}

/**
 * As copyBlock, for a window in kernel memory (at byte offset `outPtr`): the rows the window takes
 * are moved into kernel memory in one copy and converted there, eight or sixteen samples a step.
 */
function copyBlockKernel(buf: ArrayBuffer, type: SampleType, { stride, offset, blockWidth, blockX, blockY, bx0, bx1, by0, by1, w, nodata }: BlockPart, outPtr: number): void {
  const size = SAMPLE_BYTES[type];
  const pitch = blockWidth * stride;
  const first = (by0 - blockY) * pitch * size;
  const bytes = (by1 - by0) * pitch * size;
  const m = mark();
  try {
    const src = alloc(bytes);
    u8(src, bytes).set(new Uint8Array(buf, first, bytes));
    const start = src + ((bx0 - blockX) * stride + offset) * size;
    const dst = outPtr + ((by0 - w.row) * w.width + (bx0 - w.col)) * 4;
    const hasNodata = nodata !== null && !Number.isNaN(nodata);
    kernels().samplesToF32(start, SAMPLE_KINDS[type], pitch, stride, bx1 - bx0, by1 - by0, dst, w.width, hasNodata ? 1 : 0, hasNodata ? nodata : 0);
  } finally {
    release(m);
  }
}

/** Copies the part of a decoded block into the window, nodata -> NaN. */
function copyBlock(values: ArrayLike<number>, { stride, offset, blockWidth, blockX, blockY, bx0, bx1, by0, by1, w, nodata }: BlockPart, out: Float32Array): void {
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
