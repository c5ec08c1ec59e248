// Validity of polygons as the OGC Simple Features define it (closed rings that do not cross
// themselves or each other, holes inside their shell, parts of a multi-polygon apart), checked by
// JSTS, the JavaScript port of JTS (the library GEOS, and so GDAL and shapely, derive from). A bad
// polygon is named by its feature position and the place JTS found the fault.
import GeometryFactory from 'jsts/org/locationtech/jts/geom/GeometryFactory.js';
import Coordinate from 'jsts/org/locationtech/jts/geom/Coordinate.js';
import IsValidOp from 'jsts/org/locationtech/jts/operation/valid/IsValidOp.js';
import type JtsGeometry from 'jsts/org/locationtech/jts/geom/Geometry.js';
import type LinearRing from 'jsts/org/locationtech/jts/geom/LinearRing.js';

// JSTS's declarations are loose (its classes do not all type as Geometry): one name for them all.
type Geometry = JtsGeometry;
const asGeometry = (g: unknown) => g as Geometry;
import { GeometryColumn, GeomType, PartKind } from '../geometry/geometry-column.js';
import type { VectorFeatures } from './features.js';

/** The one factory of JSTS geometries. */
export const factory = new GeometryFactory();

function ringOf(c: GeometryColumn, r: number): LinearRing {
  const coords: Coordinate[] = [];
  for (let v = c.ringStarts[r]; v < c.ringStarts[r + 1]; v++) coords.push(new Coordinate(c.xy[2 * v], c.xy[2 * v + 1]));
  return factory.createLinearRing(coords);
}

function polygonOf(c: GeometryColumn, p: number): Geometry {
  const r0 = c.partRings[p];
  const holes: LinearRing[] = [];
  for (let r = r0 + 1; r < c.partRings[p + 1]; r++) holes.push(ringOf(c, r));
  return asGeometry(factory.createPolygon(ringOf(c, r0), holes));
}

/** Geometry g as a JSTS geometry (for validity and the vector processes). */
export function jstsOf(c: GeometryColumn, g: number): Geometry {
  const parts: Geometry[] = [];
  for (let p = c.geomParts[g]; p < c.geomParts[g + 1]; p++) {
    const kind = c.partKinds[p];
    const r0 = c.partRings[p];
    if (kind === PartKind.Polygon) parts.push(polygonOf(c, p));
    else {
      const coords: Coordinate[] = [];
      for (let v = c.ringStarts[r0]; v < c.ringStarts[r0 + 1]; v++) coords.push(new Coordinate(c.xy[2 * v], c.xy[2 * v + 1]));
      parts.push(asGeometry(kind === PartKind.Line ? factory.createLineString(coords) : coords.length === 1 ? factory.createPoint(coords[0]) : factory.createMultiPointFromCoords(coords)));
    }
  }
  switch (c.types[g]) {
    case GeomType.Empty:
      return asGeometry(factory.createGeometryCollection([]));
    case GeomType.Point:
    case GeomType.LineString:
    case GeomType.Polygon:
      return parts[0] ?? asGeometry(factory.createGeometryCollection([]));
    case GeomType.MultiPoint:
      return asGeometry(factory.createMultiPoint(parts));
    case GeomType.MultiLineString:
      return asGeometry(factory.createMultiLineString(parts));
    case GeomType.MultiPolygon:
      return asGeometry(factory.createMultiPolygon(parts));
    default:
      return asGeometry(factory.createGeometryCollection(parts));
  }
}

/** Why geometry g is not a valid polygon or multi-polygon, or null when it is valid (or not polygonal). */
export function polygonFault(c: GeometryColumn, g: number): string | null {
  const type = c.types[g];
  if (type !== GeomType.Polygon && type !== GeomType.MultiPolygon && type !== GeomType.GeometryCollection) return null;
  const check = (geom: Geometry): string | null => {
    const op = new IsValidOp(geom);
    if (op.isValid()) return null;
    const e = op.getValidationError();
    const at = e.getCoordinate();
    const where = at ? ` at or near (${round(at.x)}, ${round(at.y)})` : '';
    return `${e.getMessage().toLowerCase()}${where}`;
  };
  if (type === GeomType.GeometryCollection) {
    for (let p = c.geomParts[g]; p < c.geomParts[g + 1]; p++) {
      if (c.partKinds[p] !== PartKind.Polygon) continue;
      const f = check(polygonOf(c, p));
      if (f) return f;
    }
    return null;
  }
  return check(jstsOf(c, g));
}

const round = (x: number) => Number(x.toPrecision(10));

/** The first invalid polygon: its position and the fault, or null when every polygon is valid. */
export function firstInvalid(f: VectorFeatures): { feature: number; fault: string } | null {
  if (f.validated) return null;
  const c = f.geometries;
  const polygons = c.kinds().has(PartKind.Polygon);
  if (!polygons) return null;
  for (let g = 0; g < c.length; g++) {
    const fault = polygonFault(c, g);
    if (fault) return { feature: g, fault };
  }
  return null;
}
