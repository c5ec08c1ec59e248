// Vector cubes as netCDF (classic data model, CDF-2), the way openEO's reference back-end writes
// aggregate_spatial results: one variable per band over (feature, t), the times in t, a point per
// feature in lat and lon and its name in feature_names; here with CF-1.8 on top: featureType
// timeSeries, feature_names as the timeseries_id, and the geometries themselves as CF simple
// geometries (a geometry container with node coordinates x and y, node counts, and for polygons
// parts and interior rings; exterior rings anticlockwise, holes clockwise and not closed, as CF
// asks), in longitude and latitude. Numeric feature properties become variables over feature.
import { crsWkt } from '../geometry/crs.js';
import InteriorPoint from 'jsts/org/locationtech/jts/algorithm/InteriorPoint.js';
import type { DataCube } from '../datacube/datacube.js';
import { GeometryColumn, PartKind } from '../geometry/geometry-column.js';
import { inCrs } from '../datacube/spans.js';
import { jstsOf } from '../datacube/validity.js';
import { doubles, encodeModel, floats, NC_CHAR, NC_DOUBLE, NC_FLOAT, NC_INT, type AttrValue, type Model, type Variable } from './netcdf-writer.js';
import { rowCount, vectorTable } from './vector-table.js';

const DAY_MS = 86_400_000;

/** i32 values, big-endian. */
export function ints(values: ArrayLike<number>): Variable['write'] {
  return (out, at, from, to) => {
    for (let b = from; b < to; b += 4) out.writeInt32BE(values[b / 4], at + b - from);
  };
}

/** Bytes (NC_CHAR data), zero-padded to the stored size. */
export function chars(bytes: Uint8Array): Variable['write'] {
  return (out, at, from, to) => {
    for (let b = from; b < to; b++) out[at + b - from] = b < bytes.length ? bytes[b] : 0;
  };
}
const RESERVED = new Set(['t', 'feature', 'feature_names', 'lat', 'lon', 'x', 'y', 'crs', 'geometry_container', 'node_count', 'part_node_count', 'interior_ring']);

/** A netCDF variable name from a label: invalid characters become _, clashes get a suffix. */
function varName(label: string, taken: Set<string>): string {
  let n = label
    .normalize('NFC')
    .replace(/[\u0000-\u001f\u007f/]/g, '_')
    .replace(/\s+$/, '');
  if (!/^[A-Za-z0-9_\u0080-\u{10ffff}]/u.test(n)) n = `_${n}`;
  let out = n;
  for (let k = 2; taken.has(out); k++) out = `${n}_${k}`;
  taken.add(out);
  return out;
}

function instant(s: string): number {
  const hasZone = /(Z|[+-]\d\d(:?\d\d)?)$/i.test(s);
  const ms = Date.parse(/[T ]/.test(s) && !hasZone ? `${s}Z` : s);
  return ms;
}

/** Text values as a char variable's bytes: n strings of `width` bytes each, zero-padded. */
function charMatrix(values: string[]): { bytes: Uint8Array; width: number } {
  const enc = values.map((v) => Buffer.from(v, 'utf8'));
  const width = Math.max(1, ...enc.map((b) => b.length));
  const bytes = new Uint8Array(values.length * width);
  enc.forEach((b, i) => bytes.set(b, i * width));
  return { bytes, width };
}

/** Signed area of ring r (positive: anticlockwise with y up). */
function ringArea(c: GeometryColumn, r: number): number {
  let a = 0;
  const v0 = c.ringStarts[r];
  const v1 = c.ringStarts[r + 1];
  for (let v = v0; v + 1 < v1; v++) a += c.xy[2 * v] * c.xy[2 * v + 3] - c.xy[2 * v + 2] * c.xy[2 * v + 1];
  return a / 2;
}

/** The CF geometry type of a column whose geometries are all of one kind, else null. */
function cfKind(c: GeometryColumn): 'point' | 'line' | 'polygon' | null {
  const kinds = c.kinds();
  if (kinds.size !== 1) return null;
  const k = [...kinds][0];
  return k === PartKind.Point ? 'point' : k === PartKind.Line ? 'line' : 'polygon';
}

export function encodeVectorNetcdf(cube: DataCube): Buffer {
  const t = vectorTable(cube, 'netCDF');
  const f = t.features;
  const n = f.length;
  const geoms = inCrs(f.geometries, 4326);
  const dims: [string, number][] = [['feature', n]];
  const vars: Variable[] = [];
  const taken = new Set(RESERVED);
  const nt = rowCount(t);
  let tDim = -1;
  if (t.rowName) {
    tDim = dims.push(['t', nt]) - 1;
    const ms = t.rows.map(instant);
    if (ms.every(Number.isFinite)) {
      const days = ms.every((v) => v % DAY_MS === 0);
      vars.push({
        name: 't',
        dims: [tDim],
        attrs: [
          ['standard_name', 'time'],
          ['long_name', 'time'],
          ['units', `${days ? 'days' : 'seconds'} since 1970-01-01T00:00:00Z`],
          ['calendar', 'standard'],
          ['axis', 'T'],
        ],
        type: NC_DOUBLE,
        bytes: 8 * nt,
        write: doubles(ms.map((v) => (days ? v / DAY_MS : v / 1000))),
      });
    } else {
      const m = charMatrix(t.rows);
      const sd = dims.push(['t_strlen', m.width]) - 1;
      vars.push({ name: 't', dims: [tDim, sd], attrs: [['long_name', t.rowName]], type: NC_CHAR, bytes: m.bytes.length, write: chars(m.bytes) });
    }
  }
  const labels = cube.dims.find((d) => d.type === 'geometry')!.labels;
  const names = charMatrix(labels.map((l, g) => String(f.ids?.[g] ?? l)));
  const nameDim = dims.push(['name_strlen', names.width]) - 1;
  vars.push({
    name: 'feature_names',
    dims: [0, nameDim],
    attrs: [
      ['long_name', 'feature identifier'],
      ['cf_role', 'timeseries_id'],
    ],
    type: NC_CHAR,
    bytes: names.bytes.length,
    write: chars(names.bytes),
  });

  // A point per feature inside it (as shapely's representative_point): lat and lon.
  const lat = new Float64Array(n).fill(NaN);
  const lon = new Float64Array(n).fill(NaN);
  for (let g = 0; g < n; g++) {
    if (geoms.isEmpty(g)) continue;
    const p = InteriorPoint.getInteriorPoint(jstsOf(geoms, g));
    if (p) {
      lon[g] = p.x;
      lat[g] = p.y;
    }
  }
  vars.push({
    name: 'lat',
    dims: [0],
    attrs: [
      ['standard_name', 'latitude'],
      ['long_name', 'latitude'],
      ['units', 'degrees_north'],
      ['_FillValue', { type: NC_DOUBLE, values: [NaN] }],
    ],
    type: NC_DOUBLE,
    bytes: 8 * n,
    write: doubles(lat),
  });
  vars.push({
    name: 'lon',
    dims: [0],
    attrs: [
      ['standard_name', 'longitude'],
      ['long_name', 'longitude'],
      ['units', 'degrees_east'],
      ['_FillValue', { type: NC_DOUBLE, values: [NaN] }],
    ],
    type: NC_DOUBLE,
    bytes: 8 * n,
    write: doubles(lon),
  });

  const kind = cfKind(geoms);
  const dataAttrs: [string, AttrValue][] = [
    ['coordinates', 'lat lon feature_names'],
    ['grid_mapping', 'crs'],
  ];
  if (kind) {
    // CF simple geometries: nodes of all features, counts per feature, parts and holes.
    const nodeX: number[] = [];
    const nodeY: number[] = [];
    const nodeCount = new Int32Array(n);
    const partNodes: number[] = [];
    const interior: number[] = [];
    for (let g = 0; g < n; g++) {
      const v0 = nodeX.length;
      for (let p = geoms.geomParts[g]; p < geoms.geomParts[g + 1]; p++) {
        for (let r = geoms.partRings[p]; r < geoms.partRings[p + 1]; r++) {
          const a = geoms.ringStarts[r];
          const b = geoms.ringStarts[r + 1];
          const hole = kind === 'polygon' && r > geoms.partRings[p];
          const area = kind === 'polygon' ? ringArea(geoms, r) : 0;
          const reverse = kind === 'polygon' && (hole ? area > 0 : area < 0);
          if (kind === 'point') {
            // each point its own part
            for (let v = a; v < b; v++) {
              nodeX.push(geoms.xy[2 * v]);
              nodeY.push(geoms.xy[2 * v + 1]);
              partNodes.push(1);
              interior.push(0);
            }
            continue;
          }
          // CF closes polygon rings itself: the repeated first node is left out.
          const count = kind === 'polygon' ? b - a - 1 : b - a;
          for (let k = 0; k < count; k++) {
            const v = reverse ? a + count - 1 - k : a + k;
            nodeX.push(geoms.xy[2 * v]);
            nodeY.push(geoms.xy[2 * v + 1]);
          }
          partNodes.push(count);
          interior.push(hole ? 1 : 0);
        }
      }
      nodeCount[g] = nodeX.length - v0;
    }
    const nodeDim = dims.push(['node', Math.max(1, nodeX.length)]) - 1;
    if (nodeX.length === 0) {
      nodeX.push(NaN);
      nodeY.push(NaN);
    }
    const multi = kind !== 'point' && partNodes.length > n;
    const containerAttrs: [string, AttrValue][] = [
      ['geometry_type', kind],
      ['node_count', 'node_count'],
      ['node_coordinates', 'x y'],
      ['grid_mapping', 'crs'],
      ['coordinates', 'lat lon'],
    ];
    if (multi) containerAttrs.push(['part_node_count', 'part_node_count']);
    if (kind === 'polygon' && interior.some((x) => x === 1)) containerAttrs.push(['interior_ring', 'interior_ring']);
    vars.push({ name: 'geometry_container', dims: [], attrs: containerAttrs, type: NC_INT, bytes: 4, write: ints([0]) });
    vars.push({
      name: 'x',
      dims: [nodeDim],
      attrs: [
        ['units', 'degrees_east'],
        ['standard_name', 'longitude'],
        ['axis', 'X'],
      ],
      type: NC_DOUBLE,
      bytes: 8 * nodeX.length,
      write: doubles(nodeX),
    });
    vars.push({
      name: 'y',
      dims: [nodeDim],
      attrs: [
        ['units', 'degrees_north'],
        ['standard_name', 'latitude'],
        ['axis', 'Y'],
      ],
      type: NC_DOUBLE,
      bytes: 8 * nodeY.length,
      write: doubles(nodeY),
    });
    vars.push({ name: 'node_count', dims: [0], attrs: [['long_name', 'count of coordinates in each instance geometry']], type: NC_INT, bytes: 4 * n, write: ints(nodeCount) });
    if (multi) {
      const partDim = dims.push(['part', partNodes.length]) - 1;
      vars.push({ name: 'part_node_count', dims: [partDim], attrs: [['long_name', 'count of nodes in each geometry part']], type: NC_INT, bytes: 4 * partNodes.length, write: ints(partNodes) });
      if (containerAttrs.some(([k]) => k === 'interior_ring')) {
        vars.push({ name: 'interior_ring', dims: [partDim], attrs: [['long_name', 'type of each geometry part (0 exterior ring, 1 hole)']], type: NC_INT, bytes: 4 * interior.length, write: ints(interior) });
      }
    }
    dataAttrs.push(['geometry', 'geometry_container']);
  }
  vars.push({
    name: 'crs',
    dims: [],
    attrs: [
      ['grid_mapping_name', 'latitude_longitude'],
      ['crs_wkt', crsWkt(4326)],
      ['spatial_ref', crsWkt(4326)],
    ],
    type: NC_INT,
    bytes: 4,
    write: ints([0]),
  });

  // Feature properties: numbers as doubles over feature, text as characters.
  f.properties.names.forEach((pname, i) => {
    const col = f.properties.columns[i];
    const present = col.filter((v) => v !== null && v !== undefined);
    const name = varName(pname, taken);
    if (present.length && present.every((v) => typeof v === 'number' || typeof v === 'boolean')) {
      const vals = col.map((v) => (typeof v === 'number' ? v : typeof v === 'boolean' ? Number(v) : NaN));
      vars.push({
        name,
        dims: [0],
        attrs: [
          ['long_name', pname],
          ['_FillValue', { type: NC_DOUBLE, values: [NaN] }],
        ],
        type: NC_DOUBLE,
        bytes: 8 * n,
        write: doubles(vals),
      });
    } else {
      const m = charMatrix(col.map((v) => (v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v))));
      const d = dims.push([`${name}_strlen`, m.width]) - 1;
      vars.push({ name, dims: [0, d], attrs: [['long_name', pname]], type: NC_CHAR, bytes: m.bytes.length, write: chars(m.bytes) });
    }
  });

  // The values: one variable per band over (feature, t).
  t.columns.forEach((label, c) => {
    const data = new Float32Array(n * nt);
    for (let g = 0; g < n; g++) for (let r = 0; r < nt; r++) data[g * nt + r] = t.value(g, r, c);
    vars.push({
      name: varName(label, taken),
      dims: tDim >= 0 ? [0, tDim] : [0],
      attrs: [['long_name', label], ['_FillValue', { type: NC_FLOAT, values: [NaN] }], ...dataAttrs],
      type: NC_FLOAT,
      bytes: 4 * data.length,
      write: floats(data),
    });
  });
  const model: Model = {
    dims,
    attrs: [
      ['Conventions', 'CF-1.8'],
      ['featureType', 'timeSeries'],
      ['source', 'Xeo: aggregated time series per geometry'],
    ],
    vars,
  };
  return encodeModel(model);
}
