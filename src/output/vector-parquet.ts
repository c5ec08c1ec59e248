// Vector cubes as GeoParquet 1.1 (hyparquet-writer): one row per geometry and date with
// feature_index, the feature properties, date, one FLOAT column per band, and the geometry as WKB
// in EPSG:4326 (the GeoParquet default CRS, OGC:CRS84, so no PROJJSON is needed), with the `geo`
// metadata GeoPandas, DuckDB and GDAL read. Every row repeats its geometry: what a reader loads
// into one GeoDataFrame without a join.
import { parquetWriteBuffer } from 'hyparquet-writer';
import type { DataCube } from '../datacube/datacube.js';
import type { PropertyValue } from '../datacube/features.js';
import { GEOM_TYPE_NAMES } from '../geometry/geometry-column.js';
import { inCrs } from '../datacube/spans.js';
import { writeWkb } from '../geometry/wkb.js';
import { rowCount, vectorTable } from './vector-table.js';
import { propertyColumns } from './vector-writers.js';

type Column = { name: string; data: unknown[] | Float32Array | Int32Array; type: 'INT32' | 'FLOAT' | 'DOUBLE' | 'BOOLEAN' | 'STRING' | 'BYTE_ARRAY'; nullable?: boolean };

/** The parquet type of a property column: numbers, booleans, else text (JSON for arrays and objects). */
function propertyColumn(name: string, values: PropertyValue[], repeat: number): Column {
  const present = values.filter((v) => v !== null && v !== undefined);
  const rows = (f: (v: PropertyValue) => unknown) => {
    const out: unknown[] = [];
    for (const v of values) {
      const x = v === null || v === undefined ? null : f(v);
      for (let r = 0; r < repeat; r++) out.push(x);
    }
    return out;
  };
  if (present.length && present.every((v) => typeof v === 'number')) return { name, data: rows((v) => v), type: 'DOUBLE' };
  if (present.length && present.every((v) => typeof v === 'boolean')) return { name, data: rows((v) => v), type: 'BOOLEAN' };
  return { name, data: rows((v) => (typeof v === 'string' ? v : JSON.stringify(v))), type: 'STRING' };
}

export function encodeVectorParquet(cube: DataCube): Buffer {
  const t = vectorTable(cube, 'Parquet');
  const f = t.features;
  const n = f.length;
  const per = rowCount(t);
  const rows = n * per;
  const labels = cube.dims.find((d) => d.type === 'geometry')!.labels;
  const geoms = inCrs(f.geometries, 4326);
  const columns: Column[] = [];
  const index = labels.every((l) => typeof l === 'number' && Number.isInteger(l) && Math.abs(l) < 2 ** 31);
  columns.push(
    index
      ? { name: 'feature_index', data: Int32Array.from({ length: rows }, (_, i) => Number(labels[Math.floor(i / per)])), type: 'INT32', nullable: false }
      : { name: 'feature_index', data: Array.from({ length: rows }, (_, i) => String(labels[Math.floor(i / per)])), type: 'STRING' },
  );
  const props = propertyColumns(t, ['feature_index', 'geometry', ...(t.rowName ? [t.rowName] : [])]);
  f.properties.columns.forEach((c, i) => columns.push(propertyColumn(props[i], c, per)));
  if (t.rowName) columns.push({ name: t.rowName, data: Array.from({ length: rows }, (_, i) => t.rows[i % per]), type: 'STRING' });
  t.columns.forEach((name, c) => {
    const data = new Array<number | null>(rows);
    for (let g = 0; g < n; g++)
      for (let r = 0; r < per; r++) {
        const v = t.value(g, r, c);
        data[g * per + r] = v === v ? v : null;
      }
    columns.push({ name, data, type: 'FLOAT' });
  });
  const wkb: (Uint8Array | null)[] = [];
  const types = new Set<string>();
  for (let g = 0; g < n; g++) {
    const b = writeWkb(geoms, g);
    if (geoms.types[g]) types.add(GEOM_TYPE_NAMES[geoms.types[g]]);
    for (let r = 0; r < per; r++) wkb.push(b);
  }
  columns.push({ name: 'geometry', data: wkb, type: 'BYTE_ARRAY' });
  const box = geoms.bbox();
  const geo = {
    version: '1.1.0',
    primary_column: 'geometry',
    columns: {
      geometry: {
        encoding: 'WKB',
        geometry_types: [...types].sort(),
        ...(box.every(Number.isFinite) ? { bbox: box } : {}),
      },
    },
  };
  const ab = parquetWriteBuffer({
    columnData: columns,
    kvMetadata: [{ key: 'geo', value: JSON.stringify(geo) }],
    createdBy: 'Xeo',
  });
  return Buffer.from(ab);
}
