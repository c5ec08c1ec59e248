// GeoJSON (RFC 7946) to vector features: a FeatureCollection, a Feature or a bare geometry, with
// the properties and ids of features. Coordinates are lon/lat (EPSG:4326) unless the document
// names another CRS in the pre-RFC `crs` member (as GDAL writes for projected data). Every
// structural fault is reported with the position of the feature.
import { ApiError } from '../core/errors.js';
import { GeometryBuilder, GeometryError, GeomType, PartKind, type GeometryLimits, DEFAULT_GEOMETRY_LIMITS } from '../geometry/geometry-column.js';
import { PropertyTable, VectorFeatures } from './features.js';

const TYPES: Record<string, number> = {
  Point: GeomType.Point,
  LineString: GeomType.LineString,
  Polygon: GeomType.Polygon,
  MultiPoint: GeomType.MultiPoint,
  MultiLineString: GeomType.MultiLineString,
  MultiPolygon: GeomType.MultiPolygon,
  GeometryCollection: GeomType.GeometryCollection,
};

/** The EPSG code of a CRS name as GeoJSON documents and OGC URNs give it; null if not one. */
export function epsgOfName(name: unknown): number | null {
  if (typeof name !== 'string') return null;
  const s = name.trim();
  if (/^(urn:ogc:def:crs:OGC:1\.3:CRS84|OGC:CRS84|CRS84)$/i.test(s) || /opengis\.net\/def\/crs\/OGC\/1\.3\/CRS84$/i.test(s)) return 4326;
  const m = /^(?:EPSG:|urn:ogc:def:crs:EPSG:[\d.]*:|https?:\/\/www\.opengis\.net\/def\/crs\/EPSG\/\d+\/)(\d+)$/i.exec(s);
  return m ? Number(m[1]) : null;
}

class Shape extends Error {}

/** Adds one GeoJSON geometry (or null) to the builder. */
function addGeometry(b: GeometryBuilder, g: unknown, depth = 0): void {
  if (g === null || g === undefined) {
    b.begin(GeomType.Empty);
    b.end();
    return;
  }
  if (typeof g !== 'object' || Array.isArray(g)) throw new Shape('a geometry must be a GeoJSON object or null');
  const o = g as { type?: unknown; coordinates?: unknown; geometries?: unknown };
  const type = typeof o.type === 'string' ? TYPES[o.type] : undefined;
  if (type === undefined) throw new Shape(`'${String(o.type)}' is not a GeoJSON geometry type`);
  b.begin(type);
  addParts(b, type, o, depth);
  b.end();
}

function position(b: GeometryBuilder, c: unknown): void {
  if (!Array.isArray(c) || c.length < 2 || typeof c[0] !== 'number' || typeof c[1] !== 'number') throw new Shape('a position must be an array of at least two numbers');
  b.vertex(c[0], c[1]);
}

function positions(b: GeometryBuilder, c: unknown, what: string): void {
  if (!Array.isArray(c)) throw new Shape(`the coordinates of a ${what} must be an array of positions`);
  for (const p of c) position(b, p);
}

function addParts(b: GeometryBuilder, type: number, o: { coordinates?: unknown; geometries?: unknown }, depth: number): void {
  const c = o.coordinates;
  const list = (x: unknown, what: string): unknown[] => {
    if (!Array.isArray(x)) throw new Shape(`the coordinates of a ${what} must be an array`);
    return x;
  };
  switch (type) {
    case GeomType.Point:
      if (Array.isArray(c) && c.length === 0) return; // an empty point
      b.part(PartKind.Point);
      b.ring();
      position(b, c);
      return;
    case GeomType.MultiPoint:
      for (const p of list(c, 'MultiPoint')) {
        b.part(PartKind.Point);
        b.ring();
        position(b, p);
      }
      return;
    case GeomType.LineString:
      if (list(c, 'LineString').length === 0) return;
      b.part(PartKind.Line);
      b.ring();
      positions(b, c, 'LineString');
      return;
    case GeomType.MultiLineString:
      for (const l of list(c, 'MultiLineString')) {
        b.part(PartKind.Line);
        b.ring();
        positions(b, l, 'LineString');
      }
      return;
    case GeomType.Polygon:
      if (list(c, 'Polygon').length === 0) return;
      b.part(PartKind.Polygon);
      for (const r of c as unknown[]) {
        b.ring();
        positions(b, r, 'polygon ring');
      }
      return;
    case GeomType.MultiPolygon:
      for (const poly of list(c, 'MultiPolygon')) {
        b.part(PartKind.Polygon);
        for (const r of list(poly, 'Polygon')) {
          b.ring();
          positions(b, r, 'polygon ring');
        }
      }
      return;
    default: {
      if (depth > 8) throw new Shape('GeometryCollections are nested too deeply');
      if (!Array.isArray(o.geometries)) throw new Shape('a GeometryCollection needs an array of geometries');
      for (const g of o.geometries) {
        if (!g || typeof g !== 'object') throw new Shape('a GeometryCollection member must be a geometry');
        const t = TYPES[(g as { type?: string }).type ?? ''];
        if (t === undefined) throw new Shape(`'${String((g as { type?: unknown }).type)}' is not a GeoJSON geometry type`);
        addParts(b, t, g as never, depth + 1);
      }
    }
  }
}

export interface GeoJsonOptions {
  processId: string;
  parameter: string;
  limits?: GeometryLimits;
}

/** A GeoJSON value as vector features; a clear ProcessParameterInvalid naming the feature otherwise. */
export function featuresFromGeoJson(v: unknown, o: GeoJsonOptions): VectorFeatures {
  const bad = (reason: string) => new ApiError('ProcessParameterInvalid', { process: o.processId, parameter: o.parameter, reason });
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw bad('GeoJSON (a FeatureCollection, a Feature or a geometry) is expected');
  const doc = v as Record<string, unknown>;
  const crsName = (doc.crs as { properties?: { name?: unknown } } | undefined)?.properties?.name;
  const epsg = crsName === undefined ? 4326 : epsgOfName(crsName);
  if (epsg === null) throw bad(`its crs '${String(crsName)}' is not an EPSG code or CRS84`);
  const b = new GeometryBuilder(epsg, o.limits ?? DEFAULT_GEOMETRY_LIMITS);
  const rows: (Record<string, unknown> | null)[] = [];
  const ids: (string | number | null)[] = [];
  let anyId = false;
  const feature = (f: unknown) => {
    if (!f || typeof f !== 'object' || (f as { type?: unknown }).type !== 'Feature') throw new Shape('a member of `features` is not a GeoJSON Feature');
    const x = f as { geometry?: unknown; properties?: unknown; id?: unknown };
    if (x.properties !== undefined && x.properties !== null && (typeof x.properties !== 'object' || Array.isArray(x.properties))) throw new Shape('the properties of a Feature must be an object or null');
    addGeometry(b, x.geometry);
    rows.push((x.properties as Record<string, unknown>) ?? null);
    const id = typeof x.id === 'string' || typeof x.id === 'number' ? x.id : null;
    anyId ||= id !== null;
    ids.push(id);
  };
  try {
    if (doc.type === 'FeatureCollection') {
      if (!Array.isArray(doc.features)) throw bad('the FeatureCollection has no `features` array');
      if (doc.features.length === 0) throw bad('the FeatureCollection has no features');
      for (const f of doc.features) feature(f);
    } else if (doc.type === 'Feature') feature(doc);
    else {
      addGeometry(b, doc);
      rows.push(null);
      ids.push(null);
    }
  } catch (e) {
    if (e instanceof Shape) throw bad(`feature ${rows.length}: ${e.message}`);
    if (e instanceof GeometryError) throw bad(e.message);
    throw e;
  }
  return new VectorFeatures(b.finish(), PropertyTable.fromRows(rows), anyId ? ids : null);
}

/** Whether a value looks like GeoJSON (an object with a GeoJSON `type`). */
export function isGeoJson(v: unknown): boolean {
  const t = (v as { type?: unknown } | null)?.type;
  return !!v && typeof v === 'object' && !Array.isArray(v) && typeof t === 'string' && (t === 'Feature' || t === 'FeatureCollection' || t in TYPES);
}
