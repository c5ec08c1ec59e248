// TIFF 6.0 / GeoTIFF 1.1 building blocks for writing classic (32-bit offset), little-endian TIFF:
// tag and GeoKey numbers, field types, and the serialisation of one IFD with its out-of-line values.
// Only what our COG writer needs; readers live elsewhere (geotiff.js).

/** Tag numbers (TIFF 6.0 baseline/extensions, GeoTIFF, and GDAL's private tags). */
export const Tag = {
  NewSubfileType: 254,
  ImageWidth: 256,
  ImageLength: 257,
  BitsPerSample: 258,
  Compression: 259,
  PhotometricInterpretation: 262,
  SamplesPerPixel: 277,
  PlanarConfiguration: 284,
  Predictor: 317,
  TileWidth: 322,
  TileLength: 323,
  TileOffsets: 324,
  TileByteCounts: 325,
  ExtraSamples: 338,
  SampleFormat: 339,
  ModelPixelScale: 33550,
  ModelTiepoint: 33922,
  GeoKeyDirectory: 34735,
  GdalMetadata: 42112,
  GdalNodata: 42113,
} as const;

/** GeoKey ids and the values we use (GeoTIFF 1.1, section 7). */
export const GeoKey = {
  GTModelType: 1024,
  GTRasterType: 1025,
  GeographicType: 2048,
  ProjectedCSType: 3072,
} as const;
export const ModelType = { Projected: 1, Geographic: 2 } as const;
export const RasterType = { PixelIsArea: 1 } as const;

export const Compression = { Deflate: 8 } as const;
export const Photometric = { MinIsBlack: 1 } as const;
export const Planar = { Chunky: 1 } as const;
export const PredictorKind = { Horizontal: 2, FloatingPoint: 3 } as const;
export const SampleFormatKind = { Uint: 1, Int: 2, Float: 3 } as const;
export const SubfileType = { ReducedResolution: 1 } as const;

/** The field types we write, with their TIFF type codes. */
export const FieldType = { ASCII: 2, SHORT: 3, LONG: 4, DOUBLE: 12 } as const;
export type FieldType = (typeof FieldType)[keyof typeof FieldType];

const typeSize: Record<FieldType, number> = { 2: 1, 3: 2, 4: 4, 12: 8 };

/**
 * One IFD entry: numeric values, or a string for ASCII (its NUL terminator is added here). Strings
 * are written as UTF-8: TIFF says 7-bit ASCII, but GDAL reads and writes UTF-8 in its text tags.
 */
export interface IfdEntry {
  tag: number;
  type: FieldType;
  values: readonly number[] | string;
}

// Entry builders; a single number is a one-value field. (Arrays, not rest parameters: tile offset
// arrays can have more elements than a call may take arguments.)
const list = (v: number | readonly number[]): readonly number[] => (typeof v === 'number' ? [v] : v);
export const short = (tag: number, v: number | readonly number[]): IfdEntry => ({ tag, type: FieldType.SHORT, values: list(v) });
export const long = (tag: number, v: number | readonly number[]): IfdEntry => ({ tag, type: FieldType.LONG, values: list(v) });
export const double = (tag: number, v: number | readonly number[]): IfdEntry => ({ tag, type: FieldType.DOUBLE, values: list(v) });
export const ascii = (tag: number, text: string): IfdEntry => ({ tag, type: FieldType.ASCII, values: text });

const ENTRY_SIZE = 12;

function count(e: IfdEntry): number {
  // ASCII counts include the terminating NUL (TIFF 6.0, section 2).
  return typeof e.values === 'string' ? Buffer.byteLength(e.values, 'utf8') + 1 : e.values.length;
}

function valueBytes(e: IfdEntry): number {
  return count(e) * typeSize[e.type];
}

/** Values of up to 4 bytes sit in the entry itself; larger ones go after the IFD. */
function outOfLine(e: IfdEntry): boolean {
  return valueBytes(e) > 4;
}

/** Out-of-line values start on a 4-byte boundary (TIFF only asks for 2; 4 helps readers and costs ≤ 2 bytes). */
const align4 = (n: number): number => (n + 3) & ~3;

const byTag = (entries: readonly IfdEntry[]): IfdEntry[] => [...entries].sort((a, b) => a.tag - b.tag);

/**
 * Bytes an IFD written at `at` takes: entry count, entries, next-IFD offset, then its out-of-line
 * values (alignment padding depends on where the IFD starts, hence `at`).
 */
export function ifdSize(entries: readonly IfdEntry[], at: number): number {
  let end = at + 2 + entries.length * ENTRY_SIZE + 4;
  for (const e of byTag(entries)) if (outOfLine(e)) end = align4(end) + valueBytes(e);
  return end - at;
}

function putValues(buf: Buffer, at: number, e: IfdEntry): void {
  if (typeof e.values === 'string') {
    buf.write(e.values, at, 'utf8');
    buf[at + count(e) - 1] = 0;
    return;
  }
  const size = typeSize[e.type];
  e.values.forEach((v, i) => {
    const p = at + i * size;
    if (e.type === FieldType.SHORT) buf.writeUInt16LE(v, p);
    else if (e.type === FieldType.LONG) buf.writeUInt32LE(v, p);
    else buf.writeDoubleLE(v, p);
  });
}

/**
 * Serialises an IFD at `at` in `buf` (which must have ifdSize(entries, at) bytes there). Entries are
 * sorted by tag, as TIFF requires. `next` is the offset of the following IFD, 0 for the last one.
 * Alignment gaps are not written: pass a zeroed buffer.
 */
export function writeIfd(buf: Buffer, at: number, entries: readonly IfdEntry[], next: number): void {
  const sorted = byTag(entries);
  buf.writeUInt16LE(sorted.length, at);
  let extra = at + 2 + sorted.length * ENTRY_SIZE + 4;
  sorted.forEach((e, i) => {
    const p = at + 2 + i * ENTRY_SIZE;
    buf.writeUInt16LE(e.tag, p);
    buf.writeUInt16LE(e.type, p + 2);
    buf.writeUInt32LE(count(e), p + 4);
    buf.writeUInt32LE(0, p + 8); // zero the unused bytes of short in-entry values
    if (outOfLine(e)) {
      extra = align4(extra);
      buf.writeUInt32LE(extra, p + 8);
      putValues(buf, extra, e);
      extra += valueBytes(e);
    } else {
      putValues(buf, p + 8, e);
    }
  });
  buf.writeUInt32LE(next, at + 2 + sorted.length * ENTRY_SIZE);
}
