// Tile encoding shared by the COG writers: copy a tile out of a raster (pixel-interleaved, edges
// padded), apply the TIFF predictor, deflate on libuv's thread pool (or on a job's deflate threads,
// deflate-threads.ts), and frame the result with GDAL's block leader and trailer. A fixed pool of
// tile buffers bounds the tiles in flight.
import { deflate } from 'node:zlib';
import type { TypedArray } from '../core/grid.js';
import { tileBytes, type Plan, type UnsignedArray } from './cog-plan.js';
import type { Raster } from './cog-overviews.js';
import type { DeflateThreads } from './deflate-threads.js';

/** Leader (uint32 byte count) and trailer (last 4 bytes repeated) around each tile's data. */
export const LEADER = 4;
export const TRAILER = 4;

/** A reusable tile buffer with the views the predictors need. */
interface TileBuffer {
  bytes: Buffer;
  values: TypedArray;
  unsigned: UnsignedArray;
}

/** A tile buffer; on shared memory when deflate threads read it in place. */
function newTileBuffer(plan: Plan, shared: boolean): TileBuffer {
  const ab = shared ? (new SharedArrayBuffer(tileBytes(plan)) as unknown as ArrayBuffer) : new ArrayBuffer(tileBytes(plan));
  return { bytes: Buffer.from(ab), values: new plan.sample.Ctor(ab), unsigned: new plan.sample.Unsigned(ab) };
}

/**
 * Copies the w x h pixels at (x0, y0) of `src` into `tile`, pixel-interleaved; a tile cut by the
 * image's edge (w or h below the tile size) is padded.
 */
function fillTile(src: Raster, x0: number, y0: number, w: number, h: number, plan: Plan, tile: TileBuffer): void {
  const { tileSize: ts, spp } = plan;
  const v = tile.values;
  if (w < ts || h < ts) v.fill(plan.pad);
  for (let r = 0; r < h; r++) {
    const at = (y0 + r) * src.width + x0;
    const dst = r * ts * spp;
    if (spp === 1) {
      v.set(src.bands[0].subarray(at, at + w), dst);
      continue;
    }
    for (let b = 0; b < spp; b++) {
      const band = src.bands[b];
      for (let c = 0, d = dst + b; c < w; c++, d += spp) v[d] = band[at + c]!;
    }
  }
}

/** Predictor 2: each sample minus the same band's sample to its left, per row, with wrap-around. */
function horizontalDifferencing(tile: TileBuffer, plan: Plan): void {
  const u = tile.unsigned;
  const { spp } = plan;
  const rowLen = plan.tileSize * spp;
  for (let start = 0; start < u.length; start += rowLen) {
    // Backwards, so each difference uses the original left neighbour. Stores wrap modulo 2^bits.
    for (let i = start + rowLen - 1; i >= start + spp; i--) u[i] = u[i] - u[i - spp];
  }
}

/**
 * Predictor 3 (TIFF Technical Note 3): per row, the samples' bytes are regrouped into planes, most
 * significant byte plane first (big-endian order whatever the file's byte order), then each byte
 * minus the byte `spp` positions to its left. `scratch` holds one row.
 */
function floatingPointDifferencing(tile: TileBuffer, plan: Plan, scratch: Uint8Array): void {
  const bytes = tile.bytes;
  const { spp } = plan;
  const bps = plan.sample.bytes;
  const n = plan.tileSize * spp; // samples per row
  if (bps === 4 && spp === 1 && LITTLE_ENDIAN && bytes.byteOffset % 4 === 0 && scratch.byteOffset % 4 === 0) return floatingPointDifferencing32(bytes, n, scratch);
  const rowBytes = n * bps;
  for (let start = 0; start < bytes.length; start += rowBytes) {
    for (let k = 0; k < bps; k++) {
      // Plane k holds byte (bps-1-k) of each little-endian sample, i.e. MSB first.
      const plane = k * n;
      for (let j = 0, s = start + bps - 1 - k; j < n; j++, s += bps) scratch[plane + j] = bytes[s]!;
    }
    for (let i = 0; i < spp; i++) bytes[start + i] = scratch[i]!;
    for (let i = spp; i < rowBytes; i++) bytes[start + i] = scratch[i] - scratch[i - spp];
  }
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const HIGH_BITS = 0x80808080;

/**
 * Predictor 3 of one float32 band (the usual result), giving the same bytes as above three times
 * faster: each sample is read once as a 32-bit word (on a little-endian machine) and split into
 * the four byte planes, then the row's bytes are differenced four at a time (a byte-wise
 * subtraction without borrows between bytes, SWAR). Before, this took a quarter of a batch job's
 * time on its thread.
 */
function floatingPointDifferencing32(bytes: Buffer, n: number, scratch: Uint8Array): void {
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2);
  const planes = new Uint32Array(scratch.buffer, scratch.byteOffset, n);
  const p1 = n;
  const p2 = 2 * n;
  const p3 = 3 * n;
  for (let row = 0; row < words.length; row += n) {
    // The whole row goes to `scratch` before any of its words is overwritten.
    for (let j = 0; j < n; j++) {
      const v = words[row + j];
      scratch[j] = v >>> 24;
      scratch[p1 + j] = v >>> 16;
      scratch[p2 + j] = v >>> 8;
      scratch[p3 + j] = v;
    }
    // Each byte minus the one before it (the row's first byte minus 0): x - y per byte, where y is
    // x shifted up by a byte with the previous word's top byte below.
    let prev = 0;
    for (let i = 0; i < n; i++) {
      const x = planes[i];
      const y = (x << 8) | (prev >>> 24);
      prev = x;
      words[row + i] = ((x | HIGH_BITS) - (y & ~HIGH_BITS)) ^ ((x ^ ~y) & HIGH_BITS);
    }
  }
}

/**
 * zlib's largest hash table (memLevel 9, 256 KiB more per tile in flight): on a job's predictor-3
 * NDVI tiles at level 4 it deflated 13-17% faster than the default memLevel 8, into slightly
 * smaller data (0.5912 of the input against 0.5919).
 */
const MEM_LEVEL = 9;

function deflateAsync(data: Buffer, level: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    deflate(data, { level, memLevel: MEM_LEVEL, chunkSize: 64 * 1024 }, (err, out) => (err ? reject(err) : resolve(out)));
  });
}

/**
 * GDAL's block leader (byte count) and trailer (last 4 bytes repeated) around deflated data, as
 * three buffers in file order (the trailer is a view into `data`): nothing is copied.
 */
export function frameParts(data: Buffer): [Buffer, Buffer, Buffer] {
  if (data.length < 4) throw new Error('COG writer: compressed tile shorter than its trailer'); // zlib never does this
  const leader = Buffer.allocUnsafe(LEADER);
  leader.writeUInt32LE(data.length, 0);
  return [leader, data, data.subarray(data.length - TRAILER)];
}

/** The framed tile as one buffer. */
export function frame(data: Buffer): Buffer {
  return Buffer.concat(frameParts(data), LEADER + data.length + TRAILER);
}

/** A fixed set of tile buffers: a tile's buffer is reused once its compression has finished. */
class TilePool {
  private readonly free: TileBuffer[];
  private readonly waiting: ((t: TileBuffer) => void)[] = [];
  constructor(size: number, make: () => TileBuffer) {
    this.free = Array.from({ length: size }, make);
  }
  acquire(): Promise<TileBuffer> {
    const t = this.free.pop();
    return t ? Promise.resolve(t) : new Promise((resolve) => this.waiting.push(resolve));
  }
  release(t: TileBuffer): void {
    const next = this.waiting.shift();
    if (next) next(t);
    else this.free.push(t);
  }
}

/** Upper bound for the tile buffers of one writer (big tiles with many bands get fewer buffers). */
const POOL_BYTES = 64 * 1024 * 1024;

/** Tiles in flight on deflate threads. */
const DEFLATE_THREAD_TILES = 32;

/**
 * Tiles in flight, within POOL_BYTES. On libuv's thread pool (where zlib runs): enough to keep it
 * busy while we fill more, and few, since the blocks being read queue behind them. On deflate
 * threads: a chunk's tiles and more (a 1024-px chunk of 256-px tiles makes 21 with its overviews),
 * so the tiles of one chunk are deflated while the next chunk is read and computed.
 */
function inFlight(plan: Plan, threads: DeflateThreads | null): number {
  const wanted = threads ? DEFLATE_THREAD_TILES : 2 * (Number(process.env.UV_THREADPOOL_SIZE) || 4);
  return Math.max(1, Math.min(wanted, Math.floor(POOL_BYTES / tileBytes(plan))));
}

/** Receives a tile's deflated data (unframed); the tile's buffer stays taken until it returns. */
export type TileSink = (data: Buffer) => void | Promise<void>;

/**
 * Encodes tiles on libuv's thread pool (or the deflate threads given), a bounded number at a
 * time. The first failure (of deflate or of a sink) is kept: later submissions are dropped and
 * drain() throws it.
 */
export class TileEncoder {
  private readonly pool: TilePool;
  private readonly scratch: Uint8Array;
  private readonly active = new Set<Promise<void>>();
  private failure: { error: unknown } | null = null;
  /** Bytes of the tile buffers and scratch row, allocated once. */
  readonly bufferBytes: number;

  /** `threads`: deflate there instead of on libuv's pool (the same bytes either way). */
  constructor(
    private readonly plan: Plan,
    private readonly threads: DeflateThreads | null = null,
  ) {
    const n = inFlight(plan, threads);
    this.pool = new TilePool(n, () => newTileBuffer(plan, threads !== null));
    this.scratch = new Uint8Array(plan.tileSize * plan.spp * plan.sample.bytes);
    this.bufferBytes = n * tileBytes(plan) + this.scratch.length;
  }

  get failed(): boolean {
    return this.failure !== null;
  }

  /**
   * Waits for a free tile buffer, copies the w x h pixels at (x0, y0) of `src` into it (so `src`
   * may change once this resolves), applies the predictor and starts deflating. The buffer is
   * released after `sink` is done with the result, which bounds the memory held by tiles in flight.
   */
  async submit(src: Raster, x0: number, y0: number, w: number, h: number, sink: TileSink): Promise<void> {
    const tile = await this.pool.acquire();
    if (this.failure) {
      this.pool.release(tile);
      return;
    }
    fillTile(src, x0, y0, w, h, this.plan, tile);
    if (this.plan.sample.float) floatingPointDifferencing(tile, this.plan, this.scratch);
    else horizontalDifferencing(tile, this.plan);
    // Errors are caught right away (an unobserved rejection would end the process) and the buffer
    // stays out of the pool until zlib is done reading it.
    const deflated = this.threads ? this.threads.deflate(tile.bytes, this.plan.deflateLevel, MEM_LEVEL) : deflateAsync(tile.bytes, this.plan.deflateLevel);
    const job: Promise<void> = deflated
      .then(sink)
      .catch((error: unknown) => void (this.failure ??= { error }))
      .finally(() => {
        this.pool.release(tile);
        this.active.delete(job);
      });
    this.active.add(job);
  }

  /** Waits for every submitted tile; throws the first failure. */
  async drain(): Promise<void> {
    while (this.active.size > 0) await Promise.all([...this.active]);
    if (this.failure) throw this.failure.error;
  }
}
