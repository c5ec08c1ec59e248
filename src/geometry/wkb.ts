// Well-known binary (OGC Simple Features, ISO 19125) straight into and out of packed geometries,
// without an object per vertex: what GeoParquet stores. Reads both byte orders, ISO Z/M/ZM type
// codes (1000, 2000, 3000 added) and PostGIS's EWKB flags (Z, M, SRID); only x and y are kept.
// Writes little-endian 2D WKB.
import { GeometryBuilder, GeometryColumn, GeomType, PartKind } from './geometry-column.js';

export class WkbError extends Error {}

interface Reader {
  view: DataView;
  at: number;
  le: boolean;
}

function u32(r: Reader): number {
  if (r.at + 4 > r.view.byteLength) throw new WkbError('the WKB ends early');
  const v = r.view.getUint32(r.at, r.le);
  r.at += 4;
  return v;
}

function f64(r: Reader): number {
  if (r.at + 8 > r.view.byteLength) throw new WkbError('the WKB ends early');
  const v = r.view.getFloat64(r.at, r.le);
  r.at += 8;
  return v;
}

/** Byte order and type of the next geometry: [base type 1-7, coordinates per vertex]. */
function header(r: Reader): [number, number] {
  if (r.at + 1 > r.view.byteLength) throw new WkbError('the WKB ends early');
  const order = r.view.getUint8(r.at++);
  if (order !== 0 && order !== 1) throw new WkbError(`byte order ${order} is neither 0 nor 1`);
  r.le = order === 1;
  const raw = u32(r);
  let z = (raw & 0x80000000) !== 0;
  let m = (raw & 0x40000000) !== 0;
  if (raw & 0x20000000) u32(r); // EWKB SRID, ignored (the column's CRS rules)
  let type = raw & 0x0fffffff;
  if (type >= 3000) {
    z = m = true;
    type -= 3000;
  } else if (type >= 2000) {
    m = true;
    type -= 2000;
  } else if (type >= 1000) {
    z = true;
    type -= 1000;
  }
  if (type < 1 || type > 7) throw new WkbError(`geometry type ${raw} is not one WKB knows`);
  return [type, 2 + (z ? 1 : 0) + (m ? 1 : 0)];
}

function vertex(b: GeometryBuilder, r: Reader, dims: number): void {
  const x = f64(r);
  const y = f64(r);
  for (let k = 2; k < dims; k++) f64(r);
  b.vertex(x, y);
}

function ring(b: GeometryBuilder, r: Reader, dims: number): void {
  const n = u32(r);
  if (n * dims * 8 > r.view.byteLength - r.at) throw new WkbError('the WKB ends early');
  b.ring();
  for (let i = 0; i < n; i++) vertex(b, r, dims);
}

/** The parts of a geometry of `type` whose header was read. */
function parts(b: GeometryBuilder, r: Reader, type: number, dims: number, depth: number): void {
  switch (type) {
    case GeomType.Point: {
      const x = f64(r);
      const y = f64(r);
      for (let k = 2; k < dims; k++) f64(r);
      if (Number.isNaN(x) && Number.isNaN(y)) return; // POINT EMPTY
      b.part(PartKind.Point);
      b.ring();
      b.vertex(x, y);
      return;
    }
    case GeomType.LineString:
      b.part(PartKind.Line);
      ring(b, r, dims);
      return;
    case GeomType.Polygon: {
      const n = u32(r);
      b.part(PartKind.Polygon);
      for (let i = 0; i < n; i++) ring(b, r, dims);
      return;
    }
    default: {
      if (depth > 8) throw new WkbError('geometry collections nest too deeply');
      const n = u32(r);
      for (let i = 0; i < n; i++) {
        const [t, d] = header(r);
        if (type === GeomType.MultiPoint && t !== GeomType.Point) throw new WkbError('a MultiPoint holds a non-point');
        if (type === GeomType.MultiLineString && t !== GeomType.LineString) throw new WkbError('a MultiLineString holds a non-line');
        if (type === GeomType.MultiPolygon && t !== GeomType.Polygon) throw new WkbError('a MultiPolygon holds a non-polygon');
        parts(b, r, t, d, depth + 1);
      }
    }
  }
}

/** Appends one WKB geometry (null: an empty one) to the builder. */
export function readWkb(b: GeometryBuilder, bytes: Uint8Array | null): void {
  if (!bytes || bytes.length === 0) {
    b.begin(GeomType.Empty);
    b.end();
    return;
  }
  const r: Reader = { view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), at: 0, le: true };
  const [type, dims] = header(r);
  b.begin(type);
  parts(b, r, type, dims, 0);
  b.end();
}

/** Geometry g as 2D little-endian WKB (null for an empty geometry). */
export function writeWkb(c: GeometryColumn, g: number): Uint8Array | null {
  const type = c.types[g];
  if (type === GeomType.Empty) return null;
  const p0 = c.geomParts[g];
  const p1 = c.geomParts[g + 1];
  // size first
  const ringBytes = (ring: number) => 4 + (c.ringStarts[ring + 1] - c.ringStarts[ring]) * 16;
  const partBytes = (p: number): number => {
    const k = c.partKinds[p];
    const r0 = c.partRings[p];
    const r1 = c.partRings[p + 1];
    if (k === PartKind.Point) return (c.ringStarts[r0 + 1] - c.ringStarts[r0]) * 21; // one Point per vertex
    if (k === PartKind.Line) return 5 + ringBytes(r0);
    let n = 9;
    for (let r = r0; r < r1; r++) n += ringBytes(r);
    return n;
  };
  const single = type === GeomType.Point || type === GeomType.LineString || type === GeomType.Polygon;
  let size = single ? 0 : 9;
  for (let p = p0; p < p1; p++) size += partBytes(p);
  if (single && p0 === p1) size = type === GeomType.Point ? 21 : 9;
  const out = new Uint8Array(size);
  const v = new DataView(out.buffer);
  let at = 0;
  const head = (t: number) => {
    v.setUint8(at, 1);
    v.setUint32(at + 1, t, true);
    at += 5;
  };
  const coords = (ring: number, withCount: boolean) => {
    const a = c.ringStarts[ring];
    const e = c.ringStarts[ring + 1];
    if (withCount) {
      v.setUint32(at, e - a, true);
      at += 4;
    }
    for (let i = a; i < e; i++) {
      v.setFloat64(at, c.xy[2 * i], true);
      v.setFloat64(at + 8, c.xy[2 * i + 1], true);
      at += 16;
    }
  };
  const writePart = (p: number) => {
    const k = c.partKinds[p];
    const r0 = c.partRings[p];
    if (k === PartKind.Point) {
      for (let i = c.ringStarts[r0]; i < c.ringStarts[r0 + 1]; i++) {
        head(GeomType.Point);
        v.setFloat64(at, c.xy[2 * i], true);
        v.setFloat64(at + 8, c.xy[2 * i + 1], true);
        at += 16;
      }
    } else if (k === PartKind.Line) {
      head(GeomType.LineString);
      coords(r0, true);
    } else {
      head(GeomType.Polygon);
      v.setUint32(at, c.partRings[p + 1] - r0, true);
      at += 4;
      for (let r = r0; r < c.partRings[p + 1]; r++) coords(r, true);
    }
  };
  if (single) {
    if (p0 === p1) {
      head(type);
      if (type === GeomType.Point) {
        v.setFloat64(at, NaN, true);
        v.setFloat64(at + 8, NaN, true);
      } else v.setUint32(at, 0, true);
      return out;
    }
    writePart(p0);
    return out;
  }
  head(type);
  let count = 0;
  for (let p = p0; p < p1; p++) count += c.partKinds[p] === PartKind.Point ? c.ringStarts[c.partRings[p] + 1] - c.ringStarts[c.partRings[p]] : 1;
  v.setUint32(at, count, true);
  at += 4;
  for (let p = p0; p < p1; p++) writePart(p);
  return out;
}
