// Vector files to features: GeoJSON, FlatGeobuf (the flatgeobuf library), GeoParquet (hyparquet)
// and CSV with a WKT column or x/y columns (csv-parse). Formats go by their GDAL names, options by
// GDAL's names where GDAL has one. Bytes that are not what the format says are FormatUnsuitable;
// geometry faults name the feature. Each format's library is loaded the first time a file of it is
// read: the threads that never read one (most of them) never load it.
import type { HeaderMeta } from 'flatgeobuf';
import type { Feature as FgbFeature } from 'flatgeobuf/lib/mjs/flat-geobuf/feature.js';
import type { Geometry as FgbGeometry } from 'flatgeobuf/lib/mjs/flat-geobuf/geometry.js';
import { ApiError, ProcessException } from '../core/errors.js';
import { GeometryBuilder, GeometryError, GeomType, PartKind, type GeometryLimits } from '../geometry/geometry-column.js';
import { PropertyTable, VectorFeatures, type PropertyValue } from '../datacube/features.js';
import { epsgOfName, featuresFromGeoJson } from '../datacube/geojson-in.js';
import { readWkb, WkbError } from '../geometry/wkb.js';
import { readWkt, WktError } from '../geometry/wkt.js';
import { ensureCrs, CrsUnknownError } from '../geometry/crs.js';

export type VectorFormat = 'GeoJSON' | 'FlatGeobuf' | 'Parquet' | 'CSV';

export interface ReadContext {
  processId: string;
  /** The argument the data came from (for messages). */
  parameter: string;
  /** How many features and vertices the geometries may have (the run's vector limits). */
  limits: GeometryLimits;
}

const unsuitable = (format: string, reason: string) => new ProcessException('FormatUnsuitable', `${format}: ${reason}`);

/** Options of the CSV reader, by GDAL's open-option names (case does not matter). */
function csvOptions(options: Record<string, unknown>, ctx: ReadContext) {
  const o = Object.fromEntries(Object.entries(options).map(([k, v]) => [k.toUpperCase(), v]));
  const names = (k: string, d: string) =>
    String(o[k] ?? d)
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean);
  const crs = o.CRS ?? 4326;
  if (typeof crs !== 'number' || !Number.isInteger(crs))
    throw new ApiError('ProcessParameterInvalid', { process: ctx.processId, parameter: 'options', reason: 'CSV option crs must be an EPSG code (an integer)' });
  return {
    geom: names('GEOM_POSSIBLE_NAMES', 'WKT,geometry,geom,the_geom'),
    x: names('X_POSSIBLE_NAMES', 'x,lon,long,longitude,lng,easting'),
    y: names('Y_POSSIBLE_NAMES', 'y,lat,latitude,northing'),
    keep: o.KEEP_GEOM_COLUMNS !== false && String(o.KEEP_GEOM_COLUMNS ?? 'YES').toUpperCase() !== 'NO',
    autodetect: o.AUTODETECT_TYPE !== false && String(o.AUTODETECT_TYPE ?? 'YES').toUpperCase() !== 'NO',
    crs,
  };
}

function checkCrs(epsg: number, format: string): number {
  try {
    ensureCrs(epsg);
  } catch (e) {
    if (e instanceof CrsUnknownError) throw unsuitable(format, `its CRS EPSG:${epsg} is not one this back-end knows`);
    throw e;
  }
  return epsg;
}

/** Reads a vector file of `format` (a GDAL name, any case) into features. */
export async function readVector(bytes: Uint8Array, format: string, options: Record<string, unknown>, ctx: ReadContext): Promise<VectorFeatures> {
  const f = vectorFormat(format);
  if (!f) throw unsuitable(format, 'not a vector format this back-end reads (GeoJSON, FlatGeobuf, Parquet, CSV)');
  try {
    switch (f) {
      case 'GeoJSON':
        return readGeoJson(bytes, ctx);
      case 'FlatGeobuf':
        return await readFlatGeobuf(bytes, ctx.limits);
      case 'Parquet':
        return await readParquet(bytes, ctx.limits);
      case 'CSV':
        return await readCsv(bytes, csvOptions(options, ctx), ctx.limits);
    }
  } catch (e) {
    if (e instanceof GeometryError) throw new ApiError('ProcessParameterInvalid', { process: ctx.processId, parameter: ctx.parameter, reason: `${f}: ${e.message}` });
    if (e instanceof WkbError || e instanceof WktError) throw unsuitable(f, `a geometry cannot be read: ${e.message}`);
    throw e;
  }
}

/** The canonical name of a vector format (case-insensitive), or null. */
export function vectorFormat(name: string): VectorFormat | null {
  const n = String(name).toLowerCase();
  if (n === 'geojson' || n === 'json') return 'GeoJSON';
  if (n === 'flatgeobuf' || n === 'fgb') return 'FlatGeobuf';
  if (n === 'parquet' || n === 'geoparquet') return 'Parquet';
  if (n === 'csv') return 'CSV';
  return null;
}

function readGeoJson(bytes: Uint8Array, ctx: ReadContext): VectorFeatures {
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch {
    throw unsuitable('GeoJSON', 'the file is not JSON');
  }
  const f = featuresFromGeoJson(doc, { processId: ctx.processId, parameter: ctx.parameter, limits: ctx.limits });
  checkCrs(f.epsg, 'GeoJSON');
  return f;
}

// ---------------------------------------------------------------------------------------------
// FlatGeobuf

function fgbGeometry(b: GeometryBuilder, g: FgbGeometry | null, type: number, depth: number): void {
  if (!g) return;
  const t = g.type() || type;
  const xy = g.xyArray();
  const ends = g.endsArray();
  const rings = (kind: number) => {
    if (!xy || xy.length === 0) return;
    b.part(kind);
    const n = xy.length / 2;
    const stops = ends && ends.length ? ends : [n];
    let v = 0;
    for (const e of stops) {
      if (kind === PartKind.Line && v > 0) b.part(kind);
      b.ring();
      for (; v < e && v < n; v++) b.vertex(xy[2 * v], xy[2 * v + 1]);
    }
  };
  switch (t) {
    case GeomType.Point:
    case GeomType.MultiPoint:
      if (!xy) return;
      for (let v = 0; v < xy.length / 2; v++) {
        b.part(PartKind.Point);
        b.ring();
        b.vertex(xy[2 * v], xy[2 * v + 1]);
      }
      return;
    case GeomType.LineString:
    case GeomType.MultiLineString:
      rings(PartKind.Line);
      return;
    case GeomType.Polygon:
      rings(PartKind.Polygon);
      return;
    case GeomType.MultiPolygon:
    case GeomType.GeometryCollection:
      if (depth > 8) throw new GeometryError(b.count - 1, 'geometry collections nest too deeply');
      for (let i = 0; i < g.partsLength(); i++) fgbGeometry(b, g.parts(i), t === GeomType.MultiPolygon ? GeomType.Polygon : 0, depth + 1);
      return;
    default:
      throw new GeometryError(b.count - 1, `FlatGeobuf geometry type ${t} is not one of the seven simple types`);
  }
}

async function readFlatGeobuf(bytes: Uint8Array, limits: GeometryLimits): Promise<VectorFeatures> {
  if (bytes.length < 8 || bytes[0] !== 0x66 || bytes[1] !== 0x67 || bytes[2] !== 0x62) throw unsuitable('FlatGeobuf', 'the file is not FlatGeobuf');
  const { generic: fgb } = await import('flatgeobuf');
  let header: HeaderMeta | null = null;
  let b: GeometryBuilder | null = null;
  const rows: Record<string, unknown>[] = [];
  try {
    const features = fgb.deserialize(bytes, {
      headerMetaFn: (h: HeaderMeta) => {
        header = h;
        const code = h.crs?.code ?? 0;
        const epsg = !h.crs || code === 0 ? 4326 : (h.crs.org ?? 'EPSG').toUpperCase() === 'EPSG' ? code : null;
        if (epsg === null) throw unsuitable('FlatGeobuf', `its CRS ${h.crs?.org}:${code} is not an EPSG code`);
        b = new GeometryBuilder(checkCrs(epsg, 'FlatGeobuf'), limits);
      },
      fromFeature: (_id: number, feature: FgbFeature, h: HeaderMeta) => {
        const gb = b!;
        const g = feature.geometry();
        const t = (g?.type() || h.geometryType) as number;
        gb.begin(g ? t : GeomType.Empty);
        fgbGeometry(gb, g, t, 0);
        gb.end();
        rows.push(fgb.parseProperties(feature, h.columns));
        return {};
      },
    });
    for await (const _ of features) {
      // each feature is built in fromFeature
    }
  } catch (e) {
    if (e instanceof ApiError || e instanceof GeometryError) throw e;
    throw unsuitable('FlatGeobuf', `the file cannot be read (${(e as Error).message})`);
  }
  if (!b || !header) throw unsuitable('FlatGeobuf', 'the file has no header');
  const builder = b as GeometryBuilder;
  if (builder.count === 0) throw unsuitable('FlatGeobuf', 'the file has no features');
  return new VectorFeatures(builder.finish(), PropertyTable.fromRows(rows.map(plainRow)));
}

/** Property values as JSON values (bigint, Date and bytes as numbers, ISO text and base64). */
function plainValue(v: unknown): PropertyValue {
  if (v === undefined || v === null) return null;
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (Array.isArray(v)) return v.map(plainValue);
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plainValue(x)]));
  return v as PropertyValue;
}

function plainRow(r: Record<string, unknown>): Record<string, PropertyValue> {
  const out: Record<string, PropertyValue> = {};
  for (const [k, v] of Object.entries(r)) out[k] = plainValue(v);
  return out;
}

// ---------------------------------------------------------------------------------------------
// GeoParquet

interface GeoMeta {
  primary_column?: string;
  columns?: Record<string, { encoding?: string; crs?: unknown }>;
}

function parquetCrs(crs: unknown): number {
  if (crs === undefined || crs === null) return 4326; // OGC:CRS84 by the GeoParquet specification
  if (typeof crs === 'string') {
    const e = epsgOfName(crs);
    if (e !== null) return e;
  }
  const id = (crs as { id?: { authority?: string; code?: number | string } })?.id;
  if (id && String(id.authority).toUpperCase() === 'EPSG' && Number.isInteger(Number(id.code))) return Number(id.code);
  if (id && String(id.authority).toUpperCase() === 'OGC' && String(id.code).toUpperCase() === 'CRS84') return 4326;
  throw unsuitable('Parquet', 'its geometry column has a CRS without an EPSG code');
}

async function readParquet(bytes: Uint8Array, limits: GeometryLimits): Promise<VectorFeatures> {
  if (bytes.length < 12 || Buffer.from(bytes.subarray(0, 4)).toString('latin1') !== 'PAR1' || Buffer.from(bytes.subarray(bytes.length - 4)).toString('latin1') !== 'PAR1') {
    throw unsuitable('Parquet', 'the file is not Parquet');
  }
  const { parquetMetadata, parquetReadObjects } = await import('hyparquet');
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  let meta;
  try {
    meta = parquetMetadata(file);
  } catch (e) {
    throw unsuitable('Parquet', `the file cannot be read (${(e as Error).message})`);
  }
  const geoText = meta.key_value_metadata?.find((kv) => kv.key === 'geo')?.value;
  let geo: GeoMeta = {};
  if (geoText) {
    try {
      geo = JSON.parse(geoText) as GeoMeta;
    } catch {
      throw unsuitable('Parquet', 'its GeoParquet metadata is not JSON');
    }
  }
  const names = meta.schema.slice(1).map((s) => s.name);
  const column = geo.primary_column ?? names.find((n) => ['geometry', 'geom', 'wkb_geometry'].includes(n.toLowerCase()));
  if (!column || !names.includes(column)) throw unsuitable('Parquet', 'the file has no geometry column (GeoParquet metadata or a WKB column named geometry)');
  const colMeta = geo.columns?.[column];
  if (colMeta && colMeta.encoding && colMeta.encoding.toUpperCase() !== 'WKB') throw unsuitable('Parquet', `its geometry encoding ${colMeta.encoding} is not WKB`);
  const epsg = checkCrs(colMeta ? parquetCrs(colMeta.crs) : 4326, 'Parquet');
  // The geometry column as bytes (text would mangle WKB): marked as geometry, handed over raw.
  const element = meta.schema.find((e, i) => i > 0 && e.name === column)!;
  if (element.type !== 'BYTE_ARRAY') throw unsuitable('Parquet', `the column ${column} does not hold WKB`);
  element.logical_type ??= { type: 'GEOMETRY' } as never;
  if (Number(meta.num_rows) > limits.maxGeometries) throw new GeometryError(limits.maxGeometries, `there are ${meta.num_rows} rows, more than the ${limits.maxGeometries} features one input may hold here`);
  let rows: Record<string, unknown>[];
  try {
    rows = (await parquetReadObjects({
      file,
      metadata: meta,
      utf8: true,
      parsers: { geometryFromBytes: (b: Uint8Array) => b, geographyFromBytes: (b: Uint8Array) => b },
    })) as Record<string, unknown>[];
  } catch (e) {
    throw unsuitable('Parquet', `the file cannot be read (${(e as Error).message})`);
  }
  const b = new GeometryBuilder(epsg, limits);
  const props: Record<string, unknown>[] = [];
  for (const row of rows) {
    const g = row[column];
    if (g !== null && g !== undefined && !(g instanceof Uint8Array)) throw unsuitable('Parquet', `the column ${column} does not hold WKB`);
    readWkb(b, (g as Uint8Array | null) ?? null);
    const { [column]: _, ...rest } = row;
    props.push(plainRow(rest));
  }
  if (b.count === 0) throw unsuitable('Parquet', 'the file has no rows');
  return new VectorFeatures(b.finish(), PropertyTable.fromRows(props));
}

// ---------------------------------------------------------------------------------------------
// CSV

function autoValue(s: string): PropertyValue {
  if (s === '') return null;
  if (/^[-+]?\d+$/.test(s) && Math.abs(Number(s)) <= Number.MAX_SAFE_INTEGER) return Number(s);
  if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return Number(s);
  return s;
}

async function readCsv(bytes: Uint8Array, o: ReturnType<typeof csvOptions>, limits: GeometryLimits): Promise<VectorFeatures> {
  const { parse: parseCsv } = await import('csv-parse/sync');
  let text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const first = text.slice(0, text.indexOf('\n') >>> 0 || text.length);
  // The separator GDAL would find: the first of ; \t , that the header uses (comma by default).
  const delimiter = [',', ';', '\t', '|'].map((d) => [d, first.split(d).length] as const).sort((a, b) => b[1] - a[1])[0][0];
  let records: string[][];
  try {
    records = parseCsv(text, { delimiter, relax_column_count: false, skip_empty_lines: true });
  } catch (e) {
    throw unsuitable('CSV', `the file cannot be read (${(e as Error).message})`);
  }
  if (records.length < 2) throw unsuitable('CSV', 'the file has no rows after its header');
  const header = records[0].map((h) => h.trim());
  const lower = header.map((h) => h.toLowerCase());
  const find = (names: string[]) => {
    for (const n of names) {
      const i = lower.indexOf(n);
      if (i >= 0) return i;
    }
    return -1;
  };
  const gi = find(o.geom);
  const xi = gi < 0 ? find(o.x) : -1;
  const yi = gi < 0 ? find(o.y) : -1;
  if (gi < 0 && (xi < 0 || yi < 0)) {
    throw unsuitable(
      'CSV',
      `no geometry column: neither a WKT column (${o.geom.join(', ')}) nor x and y columns (${o.x.join(', ')} / ${o.y.join(', ')}); name them with the options GEOM_POSSIBLE_NAMES or X_POSSIBLE_NAMES and Y_POSSIBLE_NAMES`,
    );
  }
  const b = new GeometryBuilder(checkCrs(o.crs, 'CSV'), limits);
  const geomCols = new Set(gi >= 0 ? [gi] : [xi, yi]);
  const props: Record<string, PropertyValue>[] = [];
  for (let r = 1; r < records.length; r++) {
    const rec = records[r];
    if (gi >= 0) readWkt(b, rec[gi] ?? '');
    else {
      const xs = rec[xi]?.trim() ?? '';
      const ys = rec[yi]?.trim() ?? '';
      if (xs === '' && ys === '') {
        b.begin(GeomType.Empty);
        b.end();
      } else {
        const x = Number(xs);
        const y = Number(ys);
        if (!Number.isFinite(x) || !Number.isFinite(y)) throw new GeometryError(r - 1, `the coordinates '${xs}', '${ys}' are not numbers`);
        b.begin(GeomType.Point);
        b.part(PartKind.Point);
        b.ring();
        b.vertex(x, y);
        b.end();
      }
    }
    const row: Record<string, PropertyValue> = {};
    header.forEach((h, i) => {
      if (!o.keep && geomCols.has(i)) return;
      if (gi >= 0 && i === gi) return; // the WKT itself is the geometry
      row[h] = o.autodetect ? autoValue(rec[i] ?? '') : (rec[i] ?? null);
    });
    props.push(row);
  }
  return new VectorFeatures(b.finish(), PropertyTable.fromRows(props));
}
