// What every COG writer agrees on before the first pixel: sample types, validated options, the
// overview pyramid's sizes and classic TIFF's size limit. Shared by the in-memory writer
// (cog-writer.ts) and the streaming one (cog-stream.ts), so both make the same file from the same input.
import os from 'node:os';
import { crsInfo } from '../geometry/crs.js';
import type { GeoTransform, SampleType, TypedArray } from '../core/grid.js';
import * as T from './tiff-tags.js';

/** Everything about a COG except its pixels. */
export interface CogMeta {
  width: number;
  height: number;
  /** EPSG code of the CRS. */
  epsg: number;
  /** North-up: transform[2] === transform[4] === 0, transform[5] < 0. */
  transform: GeoTransform;
  /** Written as GDAL_NODATA; skipped when averaging overviews (NaN works for floats). */
  nodata?: number | null;
  /** Band descriptions, written to GDAL_METADATA. */
  descriptions?: string[];
  /** Tile width and height: a power of two, 16..4096. Default 256. */
  tileSize?: number;
  /** Overview resampling; 'nearest' for categorical data. Default 'average'. */
  resampling?: 'average' | 'nearest';
  /** Deflate level 0..9, default DEFAULT_DEFLATE_LEVEL. */
  level?: number;
}

/**
 * zlib's level 4 rather than its usual 6: on predictor-3 float tiles (a job's NDVI) level 6 took
 * twice the time of level 4 for files 1% smaller, and deflate is most of a job's CPU (see
 * docs/batch-jobs.md). `deflate_level` of save_result sets another.
 */
export const DEFAULT_DEFLATE_LEVEL = 4;

/** The COG settings of save_result's GTiff options (`tile_size`, `overview_resampling`, `deflate_level`). */
export function cogOptionsOf(options: Record<string, unknown>): Pick<CogMeta, 'tileSize' | 'resampling' | 'level'> {
  return {
    tileSize: Number(options.tile_size ?? 256),
    resampling: options.overview_resampling === 'nearest' ? 'nearest' : 'average',
    ...(options.deflate_level === undefined ? {} : { level: Number(options.deflate_level) }),
  };
}

/** Classic TIFF addresses bytes with uint32 offsets. */
export const MAX_CLASSIC_TIFF_BYTES = 0xffffffff;

/** `what` says how many bytes and of what, e.g. "the COG would take 5000000000 bytes". */
export function tooBig(who: string, what: string): Error {
  return new Error(`${who}: ${what}, beyond classic TIFF's 4 GiB limit (BigTIFF is not supported): split the data into several files`);
}

// ---------------------------------------------------------------------------------------------
// Sample types

export type TypedArrayCtor = new (lengthOrBuffer: number | ArrayBufferLike, byteOffset?: number, length?: number) => TypedArray;
export type UnsignedArray = Uint8Array | Uint16Array | Uint32Array;

export interface SampleInfo {
  type: SampleType;
  bytes: number;
  format: number; // SampleFormat tag value
  float: boolean;
  Ctor: TypedArrayCtor;
  /** Same-width unsigned view, for integer differencing with wrap-around (unused for floats). */
  Unsigned: new (buffer: ArrayBufferLike, byteOffset?: number, length?: number) => UnsignedArray;
}

const { Uint: U, Int: I, Float: F } = T.SampleFormatKind;
export const SAMPLE_INFO: Record<SampleType, SampleInfo> = {
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
  return a[0];
}

// ---------------------------------------------------------------------------------------------
// Validated options

export interface Plan {
  width: number;
  height: number;
  spp: number; // samples per pixel = bands
  sample: SampleInfo;
  tileSize: number;
  deflateLevel: number;
  resampling: 'average' | 'nearest';
  /** Nodata as stored in the sample type; null when there is none. */
  nodata: number | null;
  /** GDAL_NODATA text, from the value as given (a float32 keeps the caller's decimal spelling). */
  nodataText: string | null;
  /** Value for the padding of partial edge tiles. */
  pad: number;
  epsg: number;
  transform: GeoTransform;
  geographic: boolean;
  descriptions: readonly string[];
}

/** Checks everything but the pixels; `fail` prefixes the caller's name to the message. */
export function planCog(meta: CogMeta, spp: number, type: SampleType, fail: (message: string) => never): Plan {
  if (os.endianness() !== 'LE') fail('typed arrays are written as they are in memory, which needs a little-endian host');
  const { width, height, transform: t, epsg } = meta;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) fail(`bad size ${width}x${height}`);
  if (!Number.isInteger(spp) || spp < 1 || spp > 0xffff) fail(`need 1..65535 bands, got ${spp}`);
  if (!(type in SAMPLE_INFO)) fail(`unknown sample type ${String(type)}`);
  if (t.length !== 6 || !t.every(Number.isFinite)) fail('transform must be 6 finite numbers');
  if (t[2] !== 0 || t[4] !== 0 || !(t[1] > 0) || !(t[5] < 0)) fail(`transform must be north-up, got [${t.join(', ')}]`);
  // GeoKey values are SHORTs.
  if (!Number.isInteger(epsg) || epsg < 1 || epsg > 0xffff) fail(`EPSG code ${epsg} cannot be written as a GeoKey`);
  const tileSize = meta.tileSize ?? 256;
  if (!Number.isInteger(Math.log2(tileSize)) || tileSize < 16 || tileSize > 4096) fail(`tileSize must be a power of two in 16..4096, got ${tileSize}`);
  const deflateLevel = meta.level ?? DEFAULT_DEFLATE_LEVEL;
  if (!Number.isInteger(deflateLevel) || deflateLevel < 0 || deflateLevel > 9) fail(`deflate level must be 0..9, got ${deflateLevel}`);
  const resampling = meta.resampling ?? 'average';
  if (resampling !== 'average' && resampling !== 'nearest') fail(`unknown resampling ${String(resampling)}`);
  if (meta.descriptions && meta.descriptions.length > spp) fail('more descriptions than bands');
  const sample = SAMPLE_INFO[type];
  const nodata = checkNodata(sample, meta.nodata, fail);
  return {
    width,
    height,
    spp,
    sample,
    tileSize,
    deflateLevel,
    resampling,
    nodata,
    nodataText: nodata === null ? null : nodataText(meta.nodata!),
    pad: nodata ?? 0,
    epsg,
    transform: [...t] as GeoTransform,
    geographic: crsInfo(epsg).geographic,
    descriptions: [...(meta.descriptions ?? [])],
  };
}

/** Integer types only take nodata values they can hold; floats take anything (NaN included). */
function checkNodata(sample: SampleInfo, nodata: number | null | undefined, fail: (message: string) => never): number | null {
  if (nodata === undefined || nodata === null) return null;
  if (sample.float) return castTo(sample, nodata);
  if (castTo(sample, nodata) !== nodata) fail(`nodata ${nodata} is not a ${sample.type} value`);
  return nodata;
}

/** GDAL_NODATA is text; GDAL parses "nan" and "inf" too. */
function nodataText(v: number): string {
  if (Number.isNaN(v)) return 'nan';
  if (v === Infinity) return 'inf';
  if (v === -Infinity) return '-inf';
  return String(v);
}

// ---------------------------------------------------------------------------------------------
// The pyramid's shape

export interface Size {
  width: number;
  height: number;
}

/** Full resolution, then halved (rounding up) until a level fits in one tile. */
export function levelSizes(plan: Plan): Size[] {
  const sizes: Size[] = [{ width: plan.width, height: plan.height }];
  for (let s = sizes[0]; s.width > plan.tileSize || s.height > plan.tileSize;) {
    s = { width: Math.ceil(s.width / 2), height: Math.ceil(s.height / 2) };
    sizes.push(s);
  }
  return sizes;
}

export const tilesAcross = (n: number, ts: number): number => Math.ceil(n / ts);

/** Tiles of a level, row-major. */
export function tileCount(size: Size, ts: number): number {
  return tilesAcross(size.width, ts) * tilesAcross(size.height, ts);
}

/** Bytes of one uncompressed tile, all bands interleaved. */
export function tileBytes(plan: Plan): number {
  return plan.tileSize * plan.tileSize * plan.spp * plan.sample.bytes;
}
