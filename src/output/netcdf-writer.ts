// netCDF writer for raster cubes, in the classic data model and the 64-bit offset format (CDF-2),
// from Unidata's "File Format Specifications" (classic and 64-bit offset), with CF-1.8 metadata and
// the attributes GDAL reads for the CRS.
//
// File layout: the header (dimensions, global attributes, variables with their attributes, types,
// sizes and data offsets), then each variable's data in header order, big-endian, no record
// (unlimited) dimension, so every variable is one contiguous block:
//   t(t) double, y(y) double, x(x) double   coordinates: pixel centres, and times
//     (or t(t, t_strlen) char: labels of the temporal dimension that are text, e.g. weeks)
//   crs int, scalar                        grid mapping: WKT and GDAL GeoTransform
//   <band>(t, y, x) or <band>(y, x) float   one per band, _FillValue NaN
// CDF-2 gives 64-bit data offsets, but each variable is still limited to 4 GiB - 4 bytes except the
// last one, which may be larger (its vsize field then holds 2^32 - 1, as the spec says).
import { constants as bufferConstants } from 'node:buffer';
import { crsInfo, crsWkt } from '../geometry/crs.js';
import type { GeoTransform } from '../core/grid.js';
import { dateTimeMs } from '../core/labels.js';

export interface NetcdfBand {
  /** Variable name (netCDF name rules; not x, y, t or crs). */
  name: string;
  /** [t][y][x] when the input has times, else [y][x]; row-major. */
  data: Float32Array;
}

export interface NetcdfInput {
  width: number;
  height: number;
  epsg: number;
  /** [x0, dx, 0, y0, 0, dy]: no rotation; usually north-up (dy < 0). */
  transform: GeoTransform;
  /**
   * The labels of the temporal dimension, or null for no t dimension. All dates or date-times
   * (RFC 3339, UTC unless they say otherwise): a CF time coordinate. All numbers: a plain numeric
   * coordinate. Otherwise (weeks, months or seasons of aggregate_temporal_period, names given by
   * rename_labels) a text coordinate: t(t, t_strlen) of chars, UTF-8, zero-padded.
   */
  times: (string | number)[] | null;
  bands: NetcdfBand[];
  /** Global attributes, e.g. title, source, history; a Conventions here replaces CF-1.8. */
  attributes?: Record<string, string>;
}

export interface NetcdfParts {
  /** Total file size in bytes. */
  bytes: number;
  /** The header: the file's first bytes. */
  header: Buffer;
  /** The variables' data, after the header, in pieces of at most `chunkBytes` (default 4 MiB). */
  data(chunkBytes?: number): Generator<Buffer>;
}

const NC_DIMENSION = 0x0a;
const NC_VARIABLE = 0x0b;
const NC_ATTRIBUTE = 0x0c;

export const NC_CHAR = 2;
export const NC_INT = 4;
export const NC_FLOAT = 5;
export const NC_DOUBLE = 6;

/** Largest variable size CDF-2 allows for any variable but the last (2^32 - 4). */
const MAX_VAR_BYTES = 0xfffffffc;
/** vsize written for a last variable above MAX_VAR_BYTES. */
const VSIZE_TOO_BIG = 0xffffffff;

const RESERVED = new Set(['t', 'y', 'x', 'crs']);
const TEXT_DIM = 't_strlen';

const DAY_MS = 86_400_000;

function fail(message: string): never {
  throw new Error(`encodeNetcdf: ${message}`);
}

// ---------------------------------------------------------------------------------------------
// The model: what goes into the header

export type AttrValue = string | { type: typeof NC_INT | typeof NC_FLOAT | typeof NC_DOUBLE; values: number[] };

export interface Variable {
  name: string;
  dims: number[]; // dimension ids
  attrs: [string, AttrValue][];
  type: typeof NC_CHAR | typeof NC_INT | typeof NC_FLOAT | typeof NC_DOUBLE;
  bytes: number;
  /** Writes the variable's big-endian data into `out` at `at`; `from`/`to` are byte offsets into it. */
  write(out: Buffer, at: number, from: number, to: number): void;
}

export interface Model {
  dims: [string, number][];
  attrs: [string, AttrValue][];
  vars: Variable[];
}

/**
 * netCDF names: the first character alphanumeric, '_' or non-ASCII; then no control characters and
 * no '/'; no trailing space. Stored NFC-normalized, as the spec requires.
 */
export function checkName(name: string, what: string): string {
  const n = name.normalize('NFC');
  if (!/^[A-Za-z0-9_\u0080-\u{10ffff}][^\u0000-\u001f\u007f/]*$/u.test(n) || n.endsWith(' ')) {
    fail(`${what} name ${JSON.stringify(name)} is not a valid netCDF name`);
  }
  return n;
}

/** The coordinate variable of the temporal dimension (id 0), and the text dimension it needs, if any. */
function timeVariable(labels: (string | number)[], textDim: (width: number) => number): Variable {
  const ms = labels.map((l) => (typeof l === 'string' ? dateTimeMs(l) : NaN));
  if (ms.every(Number.isFinite)) {
    const days = ms.every((v) => v % DAY_MS === 0);
    const values = ms.map((v) => (days ? v / DAY_MS : v / 1000));
    return {
      name: 't',
      dims: [0],
      attrs: [
        ['standard_name', 'time'],
        ['long_name', 'time'],
        ['units', `${days ? 'days' : 'seconds'} since 1970-01-01T00:00:00Z`],
        ['calendar', 'standard'],
        ['axis', 'T'],
      ],
      type: NC_DOUBLE,
      bytes: 8 * values.length,
      write: doubles(values),
    };
  }
  if (labels.every((l) => typeof l === 'number')) {
    const values = labels;
    if (!values.every(Number.isFinite)) fail('numeric time labels must be finite');
    return { name: 't', dims: [0], attrs: [['long_name', 'labels of the temporal dimension']], type: NC_DOUBLE, bytes: 8 * values.length, write: doubles(values) };
  }
  // Text: fixed-width UTF-8, zero-padded (netCDF-C's and xarray's reading of a char array).
  const texts = labels.map((l) => Buffer.from(String(l), 'utf8'));
  const width = Math.max(1, ...texts.map((b) => b.length));
  const all = Buffer.alloc(width * texts.length);
  texts.forEach((b, i) => b.copy(all, i * width));
  return {
    name: 't',
    dims: [0, textDim(width)],
    attrs: [
      ['long_name', 'labels of the temporal dimension'],
      ['_Encoding', 'utf-8'],
    ],
    type: NC_CHAR,
    bytes: all.length,
    write: (out, at, from, to) => {
      const n = Math.max(0, Math.min(to, all.length) - from);
      all.copy(out, at, from, from + n);
      out.fill(0, at + n, at + (to - from)); // padding to 4 bytes
    },
  };
}

/** CF units for the projected axes, from the WKT's PROJCS-level UNIT (the one not in GEOGCS). */
function projectedUnits(wkt: string): string | null {
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < wkt.length; i++) {
    const ch = wkt[i];
    if (ch === '"') quoted = !quoted;
    if (quoted) continue;
    if (ch === '[') depth++;
    else if (ch === ']') depth--;
    else if (depth === 1 && wkt.startsWith('UNIT["', i)) {
      const name = wkt.slice(i + 6, wkt.indexOf('"', i + 6)).toLowerCase();
      if (name === 'metre' || name === 'meter') return 'm';
      if (name === 'us survey foot') return 'US_survey_foot';
      if (name === 'foot') return 'ft';
      return null;
    }
  }
  return null;
}

export function doubles(values: ArrayLike<number>): Variable['write'] {
  return (out, at, from, to) => {
    for (let b = from; b < to; b += 8) out.writeDoubleBE(values[b / 8], at + b - from);
  };
}

export function floats(data: Float32Array): Variable['write'] {
  return (out, at, from, to) => {
    const dst = out.subarray(at, at + (to - from));
    dst.set(new Uint8Array(data.buffer, data.byteOffset + from, to - from));
    if (bigEndianHost) return;
    dst.swap32();
  };
}

const bigEndianHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 0;

function buildModel(input: NetcdfInput): Model {
  const { width: w, height: h, epsg, transform: gt, times, bands } = input;
  if (!Number.isInteger(w) || !Number.isInteger(h) || w < 1 || h < 1) fail(`bad size ${w}x${h}`);
  if (gt.length !== 6 || !gt.every(Number.isFinite)) fail('transform must be 6 finite numbers');
  // Coordinate variables can only describe axis-aligned grids.
  if (gt[2] !== 0 || gt[4] !== 0 || gt[1] === 0 || gt[5] === 0) fail(`transform must have no rotation and non-zero pixel sizes, got [${gt.join(', ')}]`);
  if (times !== null && times.length < 1) fail('times must be null or hold at least one label');
  if (bands.length < 1) fail('need at least one band');

  const geographic = crsInfo(epsg).geographic;
  const wkt = crsWkt(epsg).replaceAll(',TOWGS84[0,0,0,0,0,0,0]', '');
  const nt = times?.length ?? 1;
  const cells = nt * w * h;

  const dims: [string, number][] = [];
  if (times) dims.push(['t', times.length]);
  const yDim = dims.push(['y', h]) - 1;
  const xDim = dims.push(['x', w]) - 1;
  const vars: Variable[] = [];

  if (times) vars.push(timeVariable(times, (width) => dims.push([TEXT_DIM, width]) - 1));

  const xs = Array.from({ length: w }, (_, i) => gt[0] + (i + 0.5) * gt[1]);
  const ys = Array.from({ length: h }, (_, j) => gt[3] + (j + 0.5) * gt[5]);
  const units = geographic ? null : projectedUnits(wkt);
  const axisAttrs = (axis: 'X' | 'Y'): [string, AttrValue][] => {
    const a: [string, AttrValue][] = geographic
      ? axis === 'X'
        ? [
            ['standard_name', 'longitude'],
            ['long_name', 'longitude'],
            ['units', 'degrees_east'],
          ]
        : [
            ['standard_name', 'latitude'],
            ['long_name', 'latitude'],
            ['units', 'degrees_north'],
          ]
      : [['standard_name', `projection_${axis.toLowerCase()}_coordinate`], ['long_name', `${axis.toLowerCase()} coordinate of projection`], ...(units ? [['units', units] as [string, AttrValue]] : [])];
    a.push(['axis', axis]);
    return a;
  };
  vars.push({ name: 'y', dims: [yDim], attrs: axisAttrs('Y'), type: NC_DOUBLE, bytes: 8 * h, write: doubles(ys) });
  vars.push({ name: 'x', dims: [xDim], attrs: axisAttrs('X'), type: NC_DOUBLE, bytes: 8 * w, write: doubles(xs) });

  // GDAL reads the CRS from spatial_ref (its own attribute) or crs_wkt (CF's). The index's WKT 1
  // gives datums like ETRS89 a zero TOWGS84, which GDAL reads as a BoundCRS rather than the EPSG
  // CRS itself, so that is left out (above); non-zero shifts are kept. CF wants
  // grid_mapping_name, which we give for geographic CRSs only (projections would need their
  // parameters spelled out as CF attributes).
  const crsAttrs: [string, AttrValue][] = [];
  if (geographic) crsAttrs.push(['grid_mapping_name', 'latitude_longitude']);
  crsAttrs.push(['crs_wkt', wkt], ['spatial_ref', wkt], ['GeoTransform', gt.map(String).join(' ')]);
  vars.push({
    name: 'crs',
    dims: [],
    attrs: crsAttrs,
    type: NC_INT,
    bytes: 4,
    write: (out, at, from, to) => out.fill(0, at, at + (to - from)),
  });

  const names = new Set<string>();
  for (const [i, band] of bands.entries()) {
    const name = checkName(band.name, `band ${i}`);
    if (RESERVED.has(name)) fail(`band name ${name} is taken by a coordinate or the grid mapping`);
    if (names.has(name)) fail(`two bands are named ${name}`);
    names.add(name);
    if (!(band.data instanceof Float32Array)) fail(`band ${name} must be a Float32Array`);
    if (band.data.length !== cells) fail(`band ${name} has ${band.data.length} values, expected ${cells} (${times ? `${nt} times x ` : ''}${h} rows x ${w} columns)`);
    const bytes = 4 * cells;
    if (bytes > MAX_VAR_BYTES && i !== bands.length - 1) fail(`band ${name} takes ${bytes} bytes; only the last variable of a CDF-2 file may exceed 4 GiB`);
    vars.push({
      name,
      dims: times ? [0, yDim, xDim] : [yDim, xDim],
      attrs: [
        ['long_name', name],
        ['_FillValue', { type: NC_FLOAT, values: [NaN] }],
        ['grid_mapping', 'crs'],
      ],
      type: NC_FLOAT,
      bytes,
      write: floats(band.data),
    });
  }

  const global = new Map<string, string>([['Conventions', 'CF-1.8']]);
  for (const [k, v] of Object.entries(input.attributes ?? {})) {
    if (typeof v !== 'string') fail(`attribute ${k} must be a string`);
    global.set(checkName(k, 'attribute'), v);
  }
  return { dims, attrs: [...global], vars };
}

// ---------------------------------------------------------------------------------------------
// Header encoding (all integers big-endian)

class HeaderWriter {
  private readonly parts: Buffer[] = [];

  int32(v: number): void {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32BE(v >>> 0);
    this.parts.push(b);
  }

  int64(v: number): void {
    const b = Buffer.allocUnsafe(8);
    b.writeBigUInt64BE(BigInt(v));
    this.parts.push(b);
  }

  /** Bytes padded with zeros to a multiple of 4. */
  padded(bytes: Buffer): void {
    this.parts.push(bytes);
    const pad = (4 - (bytes.length % 4)) % 4;
    if (pad) this.parts.push(Buffer.alloc(pad));
  }

  name(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.int32(b.length);
    this.padded(b);
  }

  attrs(list: [string, AttrValue][]): void {
    if (list.length === 0) {
      this.int32(0); // ABSENT
      this.int32(0);
      return;
    }
    this.int32(NC_ATTRIBUTE);
    this.int32(list.length);
    for (const [name, value] of list) {
      this.name(name);
      if (typeof value === 'string') {
        const b = Buffer.from(value, 'utf8');
        this.int32(NC_CHAR);
        this.int32(b.length);
        this.padded(b);
        continue;
      }
      const size = value.type === NC_DOUBLE ? 8 : 4;
      const b = Buffer.allocUnsafe(size * value.values.length);
      value.values.forEach((v, i) => {
        if (value.type === NC_DOUBLE) b.writeDoubleBE(v, 8 * i);
        else if (value.type === NC_FLOAT) b.writeFloatBE(v, 4 * i);
        else b.writeInt32BE(v, 4 * i);
      });
      this.int32(value.type);
      this.int32(value.values.length);
      this.padded(b);
    }
  }

  buffer(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** Data size of a variable as stored: padded with zeros to 4 bytes (only text needs it). */
const stored = (v: Variable) => Math.ceil(v.bytes / 4) * 4;

function encodeHeader(m: Model, begins: number[]): Buffer {
  const h = new HeaderWriter();
  h.padded(Buffer.from('CDF\x02', 'latin1'));
  h.int32(0); // numrecs: no record dimension
  h.int32(NC_DIMENSION);
  h.int32(m.dims.length);
  for (const [name, len] of m.dims) {
    h.name(name);
    h.int32(len);
  }
  h.attrs(m.attrs);
  h.int32(NC_VARIABLE);
  h.int32(m.vars.length);
  m.vars.forEach((v, i) => {
    h.name(v.name);
    h.int32(v.dims.length);
    for (const d of v.dims) h.int32(d);
    h.attrs(v.attrs);
    h.int32(v.type);
    h.int32(stored(v) > MAX_VAR_BYTES ? VSIZE_TOO_BIG : stored(v));
    h.int64(begins[i]);
  });
  return h.buffer();
}

// ---------------------------------------------------------------------------------------------
// Public API

interface Layout {
  model: Model;
  header: Buffer;
  /** File offset of each variable's data. */
  begins: number[];
  bytes: number;
}

function layout(input: NetcdfInput): Layout {
  return layoutOf(buildModel(input));
}

function layoutOf(model: Model): Layout {
  // Offsets are fixed-width, so the header's size does not depend on their values.
  let at = encodeHeader(
    model,
    model.vars.map(() => 0),
  ).length;
  const begins: number[] = [];
  for (const v of model.vars) {
    begins.push(at);
    at += stored(v);
  }
  return { model, header: encodeHeader(model, begins), begins, bytes: at };
}

/** The file as header plus data pieces, for writing to a stream or file without one big buffer. */
export function netcdfParts(input: NetcdfInput): NetcdfParts {
  const { model, header, bytes } = layout(input);
  return {
    bytes,
    header,
    *data(chunkBytes = 4 << 20) {
      // Whole values (8 bytes divides both types' sizes) and at least one.
      const step = Math.max(8, chunkBytes - (chunkBytes % 8));
      for (const v of model.vars) {
        const size = stored(v);
        for (let from = 0; from < size; from += step) {
          const to = Math.min(size, from + step);
          const out = Buffer.allocUnsafe(to - from);
          v.write(out, 0, from, to);
          yield out;
        }
      }
    },
  };
}

/** The whole file in memory (up to Node's Buffer limit; use netcdfParts beyond that). */
export function encodeNetcdf(input: NetcdfInput): Buffer {
  return encodeModel(buildModel(input));
}

/** A model of our own making (any variables) as a whole file. */
export function encodeModel(model: Model): Buffer {
  const { header, begins, bytes } = layoutOf(model);
  if (bytes > bufferConstants.MAX_LENGTH) fail(`the file would take ${bytes} bytes, more than one Buffer holds: use netcdfParts and write the pieces`);
  const out = Buffer.allocUnsafe(bytes);
  header.copy(out, 0);
  model.vars.forEach((v, i) => v.write(out, begins[i], 0, stored(v)));
  return out;
}
