// Cloud-Optimized GeoTIFF writer, from the TIFF 6.0, GeoTIFF 1.1 and COG specifications and GDAL's
// documented COG layout conventions.
//
// File layout (what GDAL's COG validator and its GTiff reader expect):
//   8-byte header "II*\0" + offset of the first IFD
//   GDAL "ghost" structural metadata (text) declaring the promises below
//   IFDs: full resolution first, then overviews from largest to smallest, each followed by its
//     out-of-line values (tile offsets/byte counts, geo tags, ...)
//   tile data: smallest overview first, full resolution last; within a level row-major. Every tile
//     is framed as [uint32 LE byte count][deflate data][last 4 data bytes again]; TileOffsets point
//     at the data, after the leader. GDAL uses the leader/trailer to fetch blocks over HTTP
//     without reading TileByteCounts and to detect files edited after writing.
//
// Only classic TIFF (32-bit offsets): output over 4 GiB is refused. BigTIFF is out of scope.
import { deflate } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { crsInfo } from './crs.js';
import { sampleTypeOf, type GeoTransform, type SampleType, type TypedArray } from './grid.js';
import * as T from './tiff-tags.js';

export interface CogInput {
  width: number;
  height: number;
  /** EPSG code of the CRS. */
  epsg: number;
  /** North-up: transform[2] === transform[4] === 0, transform[5] < 0. */
  transform: GeoTransform;
  /** One array per band, width*height values, row-major, all the same type. */
  bands: TypedArray[];
  /** Written as GDAL_NODATA; skipped when averaging overviews (NaN works for floats). */
  nodata?: number | null;
  /** Band descriptions, written to GDAL_METADATA. */
  descriptions?: string[];
  /** Tile width and height: a power of two, 16..4096. Default 256. */
  tileSize?: number;
  /** Overview resampling; 'nearest' for categorical data. Default 'average'. */
  resampling?: 'average' | 'nearest';
  /** Deflate level 0..9, default 6. */
  level?: number;
}

/** Classic TIFF addresses bytes with uint32 offsets. */
const MAX_CLASSIC_TIFF_BYTES = 0xffffffff;

function tooBig(bytes: number): Error {
  return new Error(`encodeCog: the COG would take over ${bytes} bytes, beyond classic TIFF's 4 GiB limit (BigTIFF is not supported): split the data into several files`);
}

/** Leader (uint32 byte count) and trailer (last 4 bytes repeated) around each tile's data. */
const LEADER = 4;
const TRAILER = 4;

// ---------------------------------------------------------------------------------------------
// Sample types

type TypedArrayCtor = new (lengthOrBuffer: number | ArrayBufferLike, byteOffset?: number, length?: number) => TypedArray;
type UnsignedArray = Uint8Array | Uint16Array | Uint32Array;

interface SampleInfo {
  type: SampleType;
  bytes: number;
  format: number; // SampleFormat tag value
  float: boolean;
  Ctor: TypedArrayCtor;
  /** Same-width unsigned view, for integer differencing with wrap-around (unused for floats). */
  Unsigned: new (buffer: ArrayBufferLike, byteOffset?: number, length?: number) => UnsignedArray;
}

const { Uint: U, Int: I, Float: F } = T.SampleFormatKind;
const SAMPLE_INFO: Record<SampleType, SampleInfo> = {
  uint8: { type: 'uint8', bytes: 1, format: U, float: false, Ctor: Uint8Array, Unsigned: Uint8Array },
  int8: { type: 'int8', bytes: 1, format: I, float: false, Ctor: Int8Array, Unsigned: Uint8Array },
  uint16: { type: 'uint16', bytes: 2, format: U, float: false, Ctor: Uint16Array, Unsigned: Uint16Array },
  int16: { type: 'int16', bytes: 2, format: I, float: false, Ctor: Int16Array, Unsigned: Uint16Array },
  uint32: { type: 'uint32', bytes: 4, format: U, float: false, Ctor: Uint32Array, Unsigned: Uint32Array },
  int32: { type: 'int32', bytes: 4, format: I, float: false, Ctor: Int32Array, Unsigned: Uint32Array },
  float32: { type: 'float32', bytes: 4, format: F, float: true, Ctor: Float32Array, Unsigned: Uint32Array },
  float64: { type: 'float64', bytes: 8, format: F, float: true, Ctor: Float64Array, Unsigned: Uint32Array },
};

/** `v` as stored in an array of the sample type (wraps/rounds like a typed-array store). */
function castTo(sample: SampleInfo, v: number): number {
  const a = new sample.Ctor(1);
  a[0] = v;
  return a[0]!;
}

// ---------------------------------------------------------------------------------------------
// Input validation

interface Plan {
  width: number;
  height: number;
  spp: number; // samples per pixel = bands
  sample: SampleInfo;
  tileSize: number;
  deflateLevel: number;
  resampling: 'average' | 'nearest';
  /** Nodata as stored in the sample type; null when there is none. */
  nodata: number | null;
  /** Value for the padding of partial edge tiles. */
  pad: number;
  geographic: boolean;
}

function fail(message: string): never {
  throw new Error(`encodeCog: ${message}`);
}

function checkInput(input: CogInput): Plan {
  if (os.endianness() !== 'LE') fail('typed arrays are written as they are in memory, which needs a little-endian host');
  const { width, height, bands, transform: t, epsg } = input;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) fail(`bad size ${width}x${height}`);
  if (bands.length < 1 || bands.length > 0xffff) fail(`need 1..65535 bands, got ${bands.length}`);
  const type = sampleTypeOf(bands[0]!);
  for (const [i, b] of bands.entries()) {
    if (sampleTypeOf(b) !== type) fail(`band ${i} is ${sampleTypeOf(b)}, band 0 is ${type}`);
    if (b.length !== width * height) fail(`band ${i} has ${b.length} values, expected ${width * height}`);
  }
  if (t.length !== 6 || !t.every(Number.isFinite)) fail('transform must be 6 finite numbers');
  if (t[2] !== 0 || t[4] !== 0 || !(t[1] > 0) || !(t[5] < 0)) fail(`transform must be north-up, got [${t.join(', ')}]`);
  // GeoKey values are SHORTs.
  if (!Number.isInteger(epsg) || epsg < 1 || epsg > 0xffff) fail(`EPSG code ${epsg} cannot be written as a GeoKey`);
  const tileSize = input.tileSize ?? 256;
  if (!Number.isInteger(Math.log2(tileSize)) || tileSize < 16 || tileSize > 4096) fail(`tileSize must be a power of two in 16..4096, got ${tileSize}`);
  const deflateLevel = input.level ?? 6;
  if (!Number.isInteger(deflateLevel) || deflateLevel < 0 || deflateLevel > 9) fail(`deflate level must be 0..9, got ${deflateLevel}`);
  const resampling = input.resampling ?? 'average';
  if (resampling !== 'average' && resampling !== 'nearest') fail(`unknown resampling ${String(resampling)}`);
  if (input.descriptions && input.descriptions.length > bands.length) fail('more descriptions than bands');
  const sample = SAMPLE_INFO[type];
  const nodata = checkNodata(sample, input.nodata);
  return {
    width, height, spp: bands.length, sample, tileSize, deflateLevel, resampling, nodata,
    pad: nodata ?? 0,
    geographic: crsInfo(epsg).geographic,
  };
}

/** Integer types only take nodata values they can hold; floats take anything (NaN included). */
function checkNodata(sample: SampleInfo, nodata: number | null | undefined): number | null {
  if (nodata === undefined || nodata === null) return null;
  if (sample.float) return castTo(sample, nodata);
  if (castTo(sample, nodata) !== nodata) fail(`nodata ${nodata} is not a ${sample.type} value`);
  return nodata;
}

// ---------------------------------------------------------------------------------------------
// Overview pyramid

interface Level {
  width: number;
  height: number;
  bands: TypedArray[];
}

/**
 * Full resolution, then halved levels until one fits in a single tile. Lazy: the next level is
 * built while the current one's tiles compress, and only two levels are alive at a time.
 */
function* pyramid(input: CogInput, plan: Plan): Generator<Level> {
  let level: Level = { width: plan.width, height: plan.height, bands: input.bands };
  yield level;
  while (level.width > plan.tileSize || level.height > plan.tileSize) {
    level = halve(level, plan);
    yield level;
  }
}

/** Each overview is built from the previous one: a quarter of the work of starting from full resolution. */
function halve(src: Level, plan: Plan): Level {
  const width = Math.ceil(src.width / 2);
  const height = Math.ceil(src.height / 2);
  const reduce = plan.resampling === 'nearest' ? halveNearest : halveAverage;
  return { width, height, bands: src.bands.map((b) => reduce(b, src.width, src.height, width, height, plan)) };
}

/** The top-left sample of each 2x2 block: always a real value of the source. */
function halveNearest(b: TypedArray, sw: number, _sh: number, w: number, h: number, plan: Plan): TypedArray {
  const out = new plan.sample.Ctor(w * h);
  for (let y = 0; y < h; y++) {
    const srcRow = 2 * y * sw;
    for (let x = 0; x < w; x++) out[y * w + x] = b[srcRow + 2 * x]!;
  }
  return out;
}

/**
 * Mean of the valid samples of each 2x2 block (clipped at odd edges). Nodata and NaN samples are
 * skipped; a block without any valid sample becomes nodata (NaN for floats without nodata).
 * Integer means are rounded half up (Math.round).
 */
function halveAverage(b: TypedArray, sw: number, sh: number, w: number, h: number, plan: Plan): TypedArray {
  const out = new plan.sample.Ctor(w * h);
  const float = plan.sample.float;
  const empty = plan.nodata ?? NaN;
  // Without nodata compare against NaN, which equals nothing: only the NaN test (v === v) is left.
  const nd = plan.nodata ?? NaN;
  let o = 0;
  for (let y = 0; y < h; y++) {
    const row = 2 * y * sw;
    const below = 2 * y + 1 < sh ? sw : -1; // offset of the row below, -1 at an odd bottom edge
    for (let x = 0; x < w; x++) {
      const i = row + 2 * x;
      const right = 2 * x + 1 < sw; // false at an odd right edge
      // The 2x2 block unrolled: this is the hot loop of overview building. `(v = s) === v` loads a
      // sample and is false only for NaN.
      let sum = 0;
      let n = 0;
      let v = b[i]!;
      if (v === v && v !== nd) {
        sum += v;
        n++;
      }
      if (right && (v = b[i + 1]!) === v && v !== nd) {
        sum += v;
        n++;
      }
      if (below > 0 && (v = b[i + below]!) === v && v !== nd) {
        sum += v;
        n++;
      }
      if (right && below > 0 && (v = b[i + below + 1]!) === v && v !== nd) {
        sum += v;
        n++;
      }
      out[o++] = n === 0 ? empty : float ? sum / n : Math.round(sum / n);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tiles: extraction, predictor, compression

/** A reusable tile buffer with the views the predictors need. */
interface TileBuffer {
  bytes: Buffer;
  values: TypedArray;
  unsigned: UnsignedArray;
}

function newTileBuffer(plan: Plan): TileBuffer {
  const n = plan.tileSize * plan.tileSize * plan.spp;
  const ab = new ArrayBuffer(n * plan.sample.bytes);
  return { bytes: Buffer.from(ab), values: new plan.sample.Ctor(ab), unsigned: new plan.sample.Unsigned(ab) };
}

/** Copies tile (tx, ty) of `level` into `tile`, pixel-interleaved; partial tiles are padded. */
function fillTile(level: Level, tx: number, ty: number, plan: Plan, tile: TileBuffer): void {
  const { tileSize: ts, spp } = plan;
  const x0 = tx * ts;
  const y0 = ty * ts;
  const w = Math.min(ts, level.width - x0);
  const h = Math.min(ts, level.height - y0);
  const v = tile.values;
  if (w < ts || h < ts) v.fill(plan.pad);
  for (let r = 0; r < h; r++) {
    const src = (y0 + r) * level.width + x0;
    const dst = r * ts * spp;
    if (spp === 1) {
      v.set(level.bands[0]!.subarray(src, src + w), dst);
      continue;
    }
    for (let b = 0; b < spp; b++) {
      const band = level.bands[b]!;
      for (let c = 0, d = dst + b; c < w; c++, d += spp) v[d] = band[src + c]!;
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
    for (let i = start + rowLen - 1; i >= start + spp; i--) u[i] = u[i]! - u[i - spp]!;
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
  const rowBytes = n * bps;
  for (let start = 0; start < bytes.length; start += rowBytes) {
    for (let k = 0; k < bps; k++) {
      // Plane k holds byte (bps-1-k) of each little-endian sample, i.e. MSB first.
      const plane = k * n;
      for (let j = 0, s = start + bps - 1 - k; j < n; j++, s += bps) scratch[plane + j] = bytes[s]!;
    }
    for (let i = 0; i < spp; i++) bytes[start + i] = scratch[i]!;
    for (let i = spp; i < rowBytes; i++) bytes[start + i] = scratch[i]! - scratch[i - spp]!;
  }
}

function deflateAsync(data: Buffer, level: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    deflate(data, { level, chunkSize: 64 * 1024 }, (err, out) => (err ? reject(err) : resolve(out)));
  });
}

/** Adds the GDAL block leader (byte count) and trailer (last 4 bytes repeated). */
function frame(data: Buffer): Buffer {
  if (data.length < 4) throw new Error('encodeCog: compressed tile shorter than its trailer'); // zlib never does this
  const out = Buffer.allocUnsafe(LEADER + data.length + TRAILER);
  out.writeUInt32LE(data.length, 0);
  data.copy(out, LEADER);
  data.copy(out, LEADER + data.length, data.length - 4);
  return out;
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

/** Upper bound for the tile buffers of one encode (big tiles with many bands get fewer buffers). */
const POOL_BYTES = 64 * 1024 * 1024;

/**
 * Tiles in flight: enough to keep libuv's thread pool (where zlib runs) busy while we fill more,
 * within POOL_BYTES.
 */
function inFlight(plan: Plan): number {
  const threads = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  const tileBytes = plan.tileSize * plan.tileSize * plan.spp * plan.sample.bytes;
  return Math.max(1, Math.min(threads * 2, Math.floor(POOL_BYTES / tileBytes)));
}

const tilesAcross = (n: number, ts: number): number => Math.ceil(n / ts);

/** A level once compressed: its size and its framed tiles, row-major. */
interface EncodedLevel {
  width: number;
  height: number;
  tiles: Buffer[];
}

/** Compresses every tile of every level; deflate runs on libuv's pool, several tiles at a time. */
async function encodeLevels(input: CogInput, plan: Plan): Promise<EncodedLevel[]> {
  const pool = new TilePool(inFlight(plan), () => newTileBuffer(plan));
  const scratch = new Uint8Array(plan.tileSize * plan.spp * plan.sample.bytes);
  const encoded: EncodedLevel[] = [];
  const jobs: Promise<void>[] = [];
  let failure: unknown = null;
  let written = 0;
  for (const level of pyramid(input, plan)) {
    const tiles: Buffer[] = [];
    encoded.push({ width: level.width, height: level.height, tiles });
    const across = tilesAcross(level.width, plan.tileSize);
    const down = tilesAcross(level.height, plan.tileSize);
    for (let ty = 0; ty < down && !failure; ty++) {
      for (let tx = 0; tx < across && !failure; tx++) {
        const tile = await pool.acquire();
        fillTile(level, tx, ty, plan, tile);
        if (plan.sample.float) floatingPointDifferencing(tile, plan, scratch);
        else horizontalDifferencing(tile, plan);
        const index = ty * across + tx;
        // Errors are caught right away (an unobserved rejection would end the process) and the
        // buffer stays out of the pool until zlib is done reading it.
        const job = deflateAsync(tile.bytes, plan.deflateLevel)
          .then((data) => {
            tiles[index] = frame(data);
            written += tiles[index]!.length;
            // Fail early rather than compress gigabytes that cannot be written anyway.
            if (written > MAX_CLASSIC_TIFF_BYTES) throw tooBig(written);
          })
          .catch((err: unknown) => void (failure ??= err))
          .finally(() => pool.release(tile));
        jobs.push(job);
      }
    }
  }
  await Promise.all(jobs);
  if (failure) throw failure;
  return encoded;
}

// ---------------------------------------------------------------------------------------------
// TIFF structure

/** GDAL's ghost area: the size line counts the bytes after it, trailing space included. */
function ghostArea(): Buffer {
  // The trailing space lets GDAL flip "NO\n " to "YES\n" in place if the file is later edited.
  const body =
    'LAYOUT=IFDS_BEFORE_DATA\nBLOCK_ORDER=ROW_MAJOR\nBLOCK_LEADER=SIZE_AS_UINT4\n' +
    'BLOCK_TRAILER=LAST_4_BYTES_REPEATED\nKNOWN_INCOMPATIBLE_EDITION=NO\n ';
  const head = `GDAL_STRUCTURAL_METADATA_SIZE=${String(body.length).padStart(6, '0')} bytes\n`;
  return Buffer.from(head + body, 'ascii');
}

function escapeXml(s: string): string {
  // Named entities: GDAL's XML parser does not decode numeric character references.
  const named: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
  return s.replace(/[&<>"']/g, (c) => named[c]!);
}

/**
 * GDAL_METADATA XML with band descriptions (GDAL numbers samples from 0). Values are escaped twice:
 * GDAL escapes an item's value, its XML writer escapes that text again, and its reader unescapes
 * twice, so a singly escaped "&amp;" would come back as a cut-off string.
 */
function gdalMetadata(descriptions: readonly string[] | undefined): string | null {
  const items = (descriptions ?? [])
    .map((d, i) => (d ? `  <Item name="DESCRIPTION" sample="${i}" role="description">${escapeXml(escapeXml(d))}</Item>\n` : ''))
    .join('');
  return items ? `<GDALMetadata>\n${items}</GDALMetadata>\n` : null;
}

/** GDAL_NODATA is text; GDAL parses "nan" and "inf" too. */
function nodataText(v: number): string {
  if (Number.isNaN(v)) return 'nan';
  if (v === Infinity) return 'inf';
  if (v === -Infinity) return '-inf';
  return String(v);
}

function geoEntries(input: CogInput, plan: Plan): T.IfdEntry[] {
  const t = input.transform;
  const keys: [number, number][] = [
    [T.GeoKey.GTModelType, plan.geographic ? T.ModelType.Geographic : T.ModelType.Projected],
    [T.GeoKey.GTRasterType, T.RasterType.PixelIsArea],
    [plan.geographic ? T.GeoKey.GeographicType : T.GeoKey.ProjectedCSType, input.epsg],
  ];
  // Header: directory version 1, revision 1.1 (GeoTIFF 1.1), key count; then per key:
  // id, location 0 (value in the entry itself), count 1, value.
  const dir = [1, 1, 1, keys.length, ...keys.flatMap(([id, v]) => [id, 0, 1, v])];
  return [
    T.double(T.Tag.ModelPixelScale, [t[1], -t[5], 0]),
    // Raster point (0, 0) — the outer corner of the first pixel, as PixelIsArea — maps to (x0, y0).
    T.double(T.Tag.ModelTiepoint, [0, 0, 0, t[0], t[3], 0]),
    T.short(T.Tag.GeoKeyDirectory, dir),
  ];
}

/** The IFD of one level; geo tags and band metadata only on the full-resolution one. */
function ifdEntries(input: CogInput, plan: Plan, li: number, level: EncodedLevel, offsets: number[], counts: number[]): T.IfdEntry[] {
  const { spp, sample } = plan;
  const entries: T.IfdEntry[] = [
    T.long(T.Tag.ImageWidth, level.width),
    T.long(T.Tag.ImageLength, level.height),
    T.short(T.Tag.BitsPerSample, new Array<number>(spp).fill(sample.bytes * 8)),
    T.short(T.Tag.Compression, T.Compression.Deflate),
    T.short(T.Tag.PhotometricInterpretation, T.Photometric.MinIsBlack),
    T.short(T.Tag.SamplesPerPixel, spp),
    T.short(T.Tag.PlanarConfiguration, T.Planar.Chunky),
    T.short(T.Tag.Predictor, sample.float ? T.PredictorKind.FloatingPoint : T.PredictorKind.Horizontal),
    T.short(T.Tag.TileWidth, plan.tileSize),
    T.short(T.Tag.TileLength, plan.tileSize),
    T.long(T.Tag.TileOffsets, offsets),
    T.long(T.Tag.TileByteCounts, counts),
    T.short(T.Tag.SampleFormat, new Array<number>(spp).fill(sample.format)),
  ];
  // Bands beyond the first of a min-is-black image are "extra samples", 0 = unspecified meaning.
  if (spp > 1) entries.push(T.short(T.Tag.ExtraSamples, new Array<number>(spp - 1).fill(0)));
  if (plan.nodata !== null) entries.push(T.ascii(T.Tag.GdalNodata, nodataText(input.nodata!)));
  if (li > 0) {
    entries.push(T.long(T.Tag.NewSubfileType, T.SubfileType.ReducedResolution));
    return entries;
  }
  entries.push(...geoEntries(input, plan));
  const md = gdalMetadata(input.descriptions);
  if (md) entries.push(T.ascii(T.Tag.GdalMetadata, md));
  return entries;
}

export interface LayoutLevel {
  /** The level's IFD (its tile offsets may be placeholders: only their count matters here). */
  entries: T.IfdEntry[];
  /** Data bytes of each tile, without leader and trailer, row-major. */
  byteCounts: number[];
}

export interface Layout {
  firstIfd: number;
  ifdOffsets: number[];
  /** Per level, the offset of each tile's data (after its leader). */
  tileOffsets: number[][];
  dataStart: number;
  totalBytes: number;
}

const even = (n: number): number => n + (n % 2);
const align4 = (n: number): number => (n + 3) & ~3;

/**
 * Places header, ghost area (`ghostBytes` long), IFDs (level 0 first) and then the tiles (last
 * level first). Throws when the file would not fit classic TIFF's 32-bit offsets. Exported for tests.
 */
export function planLayout(ghostBytes: number, levels: LayoutLevel[]): Layout {
  // The validator wants the first IFD right after the ghost area, on the next even offset.
  const firstIfd = even(8 + ghostBytes);
  const ifdOffsets: number[] = [];
  let pos = firstIfd;
  for (const l of levels) {
    ifdOffsets.push(pos);
    pos = align4(pos + T.ifdSize(l.entries, pos));
  }
  const dataStart = pos;
  const tileOffsets: number[][] = levels.map(() => []);
  for (let li = levels.length - 1; li >= 0; li--) {
    for (const n of levels[li]!.byteCounts) {
      tileOffsets[li]!.push(pos + LEADER);
      pos += LEADER + n + TRAILER;
    }
  }
  if (pos > MAX_CLASSIC_TIFF_BYTES) throw tooBig(pos);
  return { firstIfd, ifdOffsets, tileOffsets, dataStart, totalBytes: pos };
}

/** Header, ghost area and all IFDs: everything before the tile data. */
function buildHead(ghost: Buffer, layout: Layout, ifds: T.IfdEntry[][]): Buffer {
  const head = Buffer.alloc(layout.dataStart);
  head.write('II', 0, 'ascii');
  head.writeUInt16LE(42, 2);
  head.writeUInt32LE(layout.firstIfd, 4);
  ghost.copy(head, 8);
  ifds.forEach((entries, li) => T.writeIfd(head, layout.ifdOffsets[li]!, entries, layout.ifdOffsets[li + 1] ?? 0));
  return head;
}

/** The COG as a list of buffers in file order (head, then framed tiles). */
async function encodeParts(input: CogInput): Promise<{ parts: Buffer[]; bytes: number }> {
  const plan = checkInput(input);
  const levels = await encodeLevels(input, plan);
  const counts = levels.map((l) => l.tiles.map((t) => t.length - LEADER - TRAILER));
  const ghost = ghostArea();
  // IFD sizes do not depend on the offsets' values, so placeholders will do to plan the layout.
  const sizing = levels.map((l, li) => ({ entries: ifdEntries(input, plan, li, l, counts[li]!.map(() => 0), counts[li]!), byteCounts: counts[li]! }));
  const layout = planLayout(ghost.length, sizing);
  const ifds = levels.map((l, li) => ifdEntries(input, plan, li, l, layout.tileOffsets[li]!, counts[li]!));
  const head = buildHead(ghost, layout, ifds);
  const parts = [head, ...[...levels].reverse().flatMap((l) => l.tiles)];
  return { parts, bytes: layout.totalBytes };
}

/** Encodes a Cloud-Optimized GeoTIFF in memory. */
export async function encodeCog(input: CogInput): Promise<Buffer> {
  const { parts, bytes } = await encodeParts(input);
  return Buffer.concat(parts, bytes);
}

/** Writes all buffers at `position`, coping with partial writes and iovec limits. */
async function writeAll(fh: FileHandle, parts: Buffer[]): Promise<void> {
  const BATCH = 512; // well under IOV_MAX (1024 on Linux)
  let position = 0;
  for (let i = 0; i < parts.length; ) {
    let batch = parts.slice(i, i + BATCH);
    i += batch.length;
    let left = batch.reduce((s, b) => s + b.length, 0);
    while (left > 0) {
      const { bytesWritten } = await fh.writev(batch, position);
      if (bytesWritten === 0) throw new Error('writeCog: the file system accepted no bytes');
      position += bytesWritten;
      left -= bytesWritten;
      batch = dropBytes(batch, bytesWritten);
    }
  }
}

function dropBytes(bufs: Buffer[], n: number): Buffer[] {
  let k = 0;
  while (k < bufs.length && n >= bufs[k]!.length) n -= bufs[k++]!.length;
  const rest = bufs.slice(k);
  if (n > 0 && rest.length > 0) rest[0] = rest[0]!.subarray(n);
  return rest;
}

/**
 * Writes a COG atomically: into a temporary file next to `file`, flushed to disk, then renamed over
 * it, so readers never see a partial file.
 */
export async function writeCog(file: string, input: CogInput): Promise<{ bytes: number }> {
  const { parts, bytes } = await encodeParts(input);
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await open(tmp, 'wx');
  let closed = false;
  try {
    await writeAll(fh, parts);
    await fh.sync();
    closed = true;
    await fh.close();
    await rename(tmp, file);
  } catch (err) {
    if (!closed) await fh.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await syncDir(path.dirname(file));
  return { bytes };
}

/** Makes the rename durable; best effort, as not every file system lets a directory be fsynced. */
async function syncDir(dir: string): Promise<void> {
  try {
    const d = await open(dir, 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  } catch {
    /* ignore */
  }
}
