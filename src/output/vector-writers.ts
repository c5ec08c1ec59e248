// Vector cubes as CSV, GeoJSON and JSON (the time-series form openEO clients turn into pandas
// DataFrames). All start from the table view (vector-table.ts).
import type { DataCube } from '../datacube/datacube.js';
import type { PropertyValue } from '../datacube/features.js';
import { inCrs } from '../datacube/spans.js';
import { writeWkt } from '../geometry/wkt.js';
import { f32Json, f32Text, rowCount, vectorTable, type VectorTable } from './vector-table.js';

/** Property column names that do not clash with the table's own columns (a clash gets a `property_` prefix). */
export function propertyColumns(t: VectorTable, reserved: string[]): string[] {
  const taken = new Set([...reserved, ...t.columns]);
  return t.features.properties.names.map((n) => (taken.has(n) ? `property_${n}` : n));
}

function csvField(s: string): string {
  return /[",\r\n]/.test(s) || /^\s|\s$/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

function propertyText(v: PropertyValue | undefined): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '';
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return JSON.stringify(v);
}

/** CSV: feature_index, properties, date, one column per band (and WKT on request); RFC 4180, \r\n line ends. */
export function encodeVectorCsv(cube: DataCube, options: Record<string, unknown>): Buffer {
  const t = vectorTable(cube, 'CSV');
  const wkt = options.geometry === 'WKT';
  const reserved = ['feature_index', ...(t.rowName ? [t.rowName] : []), ...(wkt ? ['WKT'] : [])];
  const props = propertyColumns(t, reserved);
  const header = [...(wkt ? ['WKT'] : []), 'feature_index', ...props, ...(t.rowName ? [t.rowName] : []), ...t.columns];
  const lines: string[] = [header.map(csvField).join(',')];
  const f = t.features;
  const cols = f.properties.columns;
  const labels = cube.dims.find((d) => d.type === 'geometry')!.labels;
  const geo4326 = wkt ? inCrs(f.geometries, 4326) : null;
  for (let g = 0; g < f.length; g++) {
    const head: string[] = [];
    if (geo4326) head.push(csvField(writeWkt(geo4326, g)));
    head.push(csvField(String(labels[g])));
    for (const c of cols) head.push(csvField(propertyText(c[g])));
    const headText = head.join(',');
    for (let r = 0; r < rowCount(t); r++) {
      const parts = [headText];
      if (t.rowName) parts.push(csvField(t.rows[r]));
      for (let c = 0; c < t.columns.length; c++) parts.push(f32Text(t.value(g, r, c)));
      lines.push(parts.join(','));
    }
  }
  return Buffer.from(lines.join('\r\n') + '\r\n');
}

/** GeoJSON FeatureCollection in EPSG:4326: per feature its properties and one property per date and band. */
export function encodeVectorGeoJson(cube: DataCube): Buffer {
  const t = vectorTable(cube, 'GeoJSON');
  const f = t.features;
  const geoms = inCrs(f.geometries, 4326);
  const props = propertyColumns(t, []);
  const keys: string[][] = [];
  for (let r = 0; r < rowCount(t); r++) keys.push(t.columns.map((c) => (t.rowName ? (t.columns.length === 1 && c === 'value' ? t.rows[r] : `${t.rows[r]}~${c}`) : c)));
  const features = [];
  for (let g = 0; g < f.length; g++) {
    const properties: Record<string, unknown> = {};
    f.properties.columns.forEach((c, i) => (properties[props[i]] = c[g] ?? null));
    for (let r = 0; r < keys.length; r++) for (let c = 0; c < t.columns.length; c++) properties[keys[r][c]] = f32Json(t.value(g, r, c));
    const id = f.ids?.[g];
    features.push({ type: 'Feature', ...(id !== null && id !== undefined ? { id } : {}), geometry: geoms.toGeoJSON(g), properties });
  }
  return Buffer.from(JSON.stringify({ type: 'FeatureCollection', features }));
}

/**
 * JSON of a vector cube. With a temporal dimension, the time-series form of openEO back-ends:
 * `{"<date>": [[<band values>] per geometry]}`, which the Python client's
 * timeseries_json_to_pandas reads; otherwise a FeatureCollection with the values as properties
 * (in the features' CRS) and the cube's dimensions.
 */
export function vectorJsonValue(cube: DataCube): unknown {
  const t = vectorTable(cube, 'JSON');
  const f = t.features;
  if (t.rowName) {
    const out: Record<string, (number | null)[][]> = {};
    t.rows.forEach((date, r) => {
      const perGeometry: (number | null)[][] = [];
      for (let g = 0; g < f.length; g++) perGeometry.push(t.columns.map((_, c) => f32Json(t.value(g, r, c))));
      out[date] = perGeometry;
    });
    return out;
  }
  const props = propertyColumns(t, []);
  return {
    type: 'FeatureCollection',
    dimensions: cube.dims.filter((d) => d.type !== 'geometry').map((d) => ({ name: d.name, type: d.type, labels: d.labels })),
    features: Array.from({ length: f.length }, (_, g) => {
      const properties: Record<string, unknown> = {};
      f.properties.columns.forEach((c, i) => (properties[props[i]] = c[g] ?? null));
      t.columns.forEach((c, k) => (properties[c] = f32Json(t.value(g, 0, k))));
      const id = f.ids?.[g];
      return { type: 'Feature', id: id ?? g, geometry: f.geometries.toGeoJSON(g), properties };
    }),
  };
}
