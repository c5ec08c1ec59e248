// Turns a result (a data cube, or any JSON value) into the bytes of an output format.
import { DataCube } from '../datacube/datacube.js';
import { LazyCube } from '../data/lazy.js';
import { encodeCog } from './cog-writer.js';
import { cogOptionsOf } from './cog-plan.js';
import { encodePng } from './png-writer.js';
import { encodeJpeg } from './jpeg-writer.js';
import { encodeNetcdf } from './netcdf-writer.js';
import { colorIndices, colorPalette, colorTable, toRgba } from './colormap.js';
import { kernelColorize } from '../compile/executor.js';
import { ProcessException } from '../core/errors.js';
import type { OutputFormat } from './formats.js';
import type { RunContext } from '../core/run-context.js';
import { cubeOf } from '../data/lazy.js';
import { encodeVectorCsv, encodeVectorGeoJson, vectorJsonValue } from './vector-writers.js';

export interface Encoded {
  body: Buffer;
  mediaType: string;
  extension: string;
}

const unsuitable = (format: string, reason: string) => new ProcessException('FormatUnsuitable', `${format}: ${reason}`);

/** A raster cube as planes of y × x: one per combination of the other dimensions' labels. */
export function planesOf(cube: DataCube, format: string): { planes: Float32Array[]; names: string[] } {
  const grid = cube.grid;
  if (!grid) throw unsuitable(format, 'the result has no spatial dimensions x and y');
  const plane = grid.width * grid.height;
  const other = cube.dims.slice(0, -2);
  const planes: Float32Array[] = [];
  const names: string[] = [];
  const count = cube.size / Math.max(1, plane);
  for (let p = 0; p < count; p++) {
    planes.push(cube.data.subarray(p * plane, (p + 1) * plane));
    // the labels of plane p, last dimension fastest
    let rest = p;
    const parts: string[] = [];
    for (let d = other.length - 1; d >= 0; d--) {
      const n = other[d].labels.length;
      parts.unshift(String(other[d].labels[rest % n]));
      rest = Math.floor(rest / n);
    }
    // a single date in front of band names adds nothing but noise
    names.push(parts.filter((s, i) => !(other[i].type === 'temporal' && other[i].labels.length === 1 && parts.length > 1)).join(' ') || `band ${p + 1}`);
  }
  return { planes, names };
}

/**
 * The 2nd and 98th percentiles of the finite values of some planes (of a sample of at most about
 * 65,536 values, taken evenly over all planes), hi above lo; null when there is no finite value.
 * The default value range of images, and of a web service's tiles.
 */
export function percentileRange(planes: Float32Array[]): [number, number] | null {
  const total = planes.reduce((n, p) => n + p.length, 0);
  const step = Math.max(1, Math.floor(total / 65536));
  const sample: number[] = [];
  let skip = 0;
  for (const p of planes) {
    for (let i = skip; i < p.length; i += step) if (Number.isFinite(p[i])) sample.push(p[i]);
    // where the next plane's first sample falls, as if the planes were one array
    skip = (skip + step - (p.length % step)) % step;
  }
  if (!sample.length) return null;
  sample.sort((a, b) => a - b);
  const q = (f: number) => sample[Math.min(sample.length - 1, Math.floor(f * (sample.length - 1)))];
  const lo = q(0.02);
  const hi = q(0.98);
  return [lo, hi > lo ? hi : lo + 1];
}

/** Value range for rendering: the options' min/max, else the percentiles of percentileRange. */
function rangeOf(planes: Float32Array[], min: unknown, max: unknown): [number, number] {
  if (typeof min === 'number' && typeof max === 'number') return [min, max];
  const [plo, phi] = percentileRange(planes) ?? [0, 0];
  const lo = typeof min === 'number' ? min : plo;
  const hi = typeof max === 'number' ? max : phi;
  return [lo, hi > lo ? hi : lo + 1];
}

function rgbaOf(cube: DataCube, f: OutputFormat & { options: Record<string, unknown> }): { width: number; height: number; data: Uint8Array } {
  const { planes } = planesOf(cube, f.name);
  const grid = cube.grid!;
  const o = f.options;
  if (planes.length === 1) {
    const [min, max] = rangeOf(planes, o.min, o.max);
    return { width: grid.width, height: grid.height, data: kernelColorize(planes[0], colorTable(String(o.colormap ?? 'viridis')), min, max) };
  }
  if (planes.length === 3) {
    const [min, max] = rangeOf(planes, o.min, o.max);
    return { width: grid.width, height: grid.height, data: toRgba(planes, { min, max }) };
  }
  throw unsuitable(f.name, `an image needs one band (drawn with a colour map) or three (red, green, blue), the result has ${planes.length}; reduce or filter it first`);
}

export async function encodeResult(value: unknown, f: OutputFormat & { options: Record<string, unknown> }, run?: RunContext): Promise<Encoded> {
  const data = value instanceof LazyCube ? await cubeOf(value, run, 'save_result') : value;
  const done = (body: Buffer): Encoded => ({ body, mediaType: f.mediaType, extension: f.extension });
  if (f.name === 'JSON') return done(Buffer.from(jsonText(toJson(data), f.options.non_finite === 'tokens')));
  if (!(data instanceof DataCube)) throw unsuitable(f.name, 'only data cubes can be written in this format; use JSON');
  if (data.features) {
    switch (f.name) {
      case 'CSV':
        return done(encodeVectorCsv(data, f.options));
      case 'GeoJSON':
        return done(encodeVectorGeoJson(data));
      case 'Parquet':
        // The Parquet and netCDF writers of vector cubes (and what they use) load on first use.
        return done((await import('./vector-parquet.js')).encodeVectorParquet(data));
      case 'netCDF':
        if (data.size === 0) throw new ProcessException('DataCubeEmpty', 'the data cube holds no values');
        return done((await import('./netcdf-vector.js')).encodeVectorNetcdf(data));
      default:
        throw unsuitable(f.name, 'a vector data cube is written as CSV, GeoJSON, Parquet, netCDF or JSON');
    }
  }
  if (f.name === 'CSV' || f.name === 'GeoJSON' || f.name === 'Parquet')
    throw unsuitable(f.name, 'this format holds vector data cubes (from aggregate_spatial or load_geojson, say); write raster cubes as GTiff or netCDF');
  if (data.size === 0) throw new ProcessException('DataCubeEmpty', 'the data cube holds no values');
  const grid = data.grid;
  switch (f.name) {
    case 'GTiff': {
      const { planes, names } = planesOf(data, f.name);
      return done(
        await encodeCog({
          width: grid!.width,
          height: grid!.height,
          epsg: grid!.epsg,
          transform: grid!.transform,
          bands: planes,
          nodata: NaN,
          descriptions: names,
          ...cogOptionsOf(f.options),
        }),
      );
    }
    case 'PNG': {
      const { planes } = planesOf(data, f.name);
      // One band: an indexed image through the colour map, a quarter of the bytes of RGBA.
      if (planes.length === 1) {
        const [min, max] = rangeOf(planes, f.options.min, f.options.max);
        const palette = colorPalette(String(f.options.colormap ?? 'viridis'));
        return done(encodePng({ width: grid!.width, height: grid!.height, channels: 1, data: colorIndices(planes[0], min, max), palette }));
      }
      const img = rgbaOf(data, f);
      return done(encodePng({ ...img, channels: 4 }));
    }
    case 'JPEG':
      return done(encodeJpeg(rgbaOf(data, f), Number(f.options.quality ?? 85)));
    case 'netCDF':
      return done(netcdfOf(data));
  }
  throw unsuitable(f.name, 'not an output format');
}

function netcdfOf(cube: DataCube): Buffer {
  const grid = cube.grid;
  if (!grid) throw unsuitable('netCDF', 'the result has no spatial dimensions x and y');
  const other = cube.dims.slice(0, -2);
  const t = other.find((d) => d.type === 'temporal');
  const b = other.find((d) => d.type === 'bands');
  if (other.some((d) => d !== t && d !== b)) throw unsuitable('netCDF', `dimensions other than time and bands (${other.map((d) => d.name).join(', ')}) are not written; reduce them first`);
  // Ensure the layout [bands][t][y][x]: one variable per band over (t, y, x). Without a bands
  // dimension the one variable is named `var`, as the reference back-end names it (and scripts and
  // xarray-based readers written against it look for).
  const bIndex = b ? cube.index(b.name) : -1;
  const { data, rest } = bIndex >= 0 ? cube.outermost(bIndex) : { data: cube.data, rest: cube.size };
  const names = b ? b.labels.map(String) : ['var'];
  const input = {
    width: grid.width,
    height: grid.height,
    epsg: grid.epsg,
    transform: grid.transform,
    // Dates stay times; text labels (weeks, seasons, renamed labels) are written as text.
    times: t ? [...t.labels] : null,
    bands: names.map((name, i) => ({ name, data: data.subarray(i * rest, (i + 1) * rest) })),
    attributes: { source: 'Xeo' },
  };
  try {
    return encodeNetcdf(input);
  } catch (e) {
    // What the writer refuses here comes from the labels: band names netCDF cannot hold as
    // variable names (x, y, t, crs, a '/', the same name twice).
    if (e instanceof Error && e.message.startsWith('encodeNetcdf:')) throw unsuitable('netCDF', `${e.message.slice(14)}; rename the bands with rename_labels`);
    throw e;
  }
}

/** Nested arrays of a cube's values, outer dimension first. */
function nested(data: Float32Array, shape: number[], offset = 0, d = 0): unknown {
  if (d === shape.length) return data[offset];
  const stride = shape.slice(d + 1).reduce((a, b) => a * b, 1);
  return Array.from({ length: shape[d] }, (_, i) => nested(data, shape, offset + i * stride, d + 1));
}

/**
 * JSON text of a result. Strict JSON has no NaN or Infinity, so by default they are written as null
 * (as no-data is); with `tokens` as the bare NaN, Infinity and -Infinity that Python's json module
 * (and so the Python client) reads as numbers and writes itself, but strict parsers refuse.
 */
export function jsonText(v: unknown, tokens: boolean): string {
  return tokens ? withTokens(v) : JSON.stringify(v, (_k, x) => (typeof x === 'number' && !Number.isFinite(x) ? null : x));
}

function withTokens(v: unknown): string {
  if (typeof v === 'number') return Number.isFinite(v) ? JSON.stringify(v) : Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity';
  if (Array.isArray(v)) return `[${v.map(withTokens).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.entries(v)
      .filter(([, x]) => x !== undefined)
      .map(([k, x]) => `${JSON.stringify(k)}:${withTokens(x)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

/** The JSON form of a result value (numbers as they are: jsonText decides how a non-finite one is written). */
export function toJson(v: unknown): unknown {
  if (v instanceof DataCube) {
    if (v.features) return vectorJsonValue(v);
    return {
      type: 'datacube',
      dimensions: v.dims.map((d) => ({ name: d.name, type: d.type, ...(d.axis ? { axis: d.axis } : {}), labels: d.labels })),
      ...(v.grid ? { crs: `EPSG:${v.grid.epsg}` } : {}),
      data: nested(v.data, v.shape),
    };
  }
  if (Array.isArray(v)) return v.map(toJson);
  // A value with a JSON form of its own (a model answers its summary, not its arrays).
  if (v && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') return toJson((v as { toJSON(): unknown }).toJSON());
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toJson(x)]));
  return v ?? null;
}
