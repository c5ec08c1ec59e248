// Between packed geometries and JSTS (the JavaScript port of JTS, the library GEOS and so GDAL and
// shapely derive from): the vector processes that need computational geometry (buffers, spatial
// predicates, unions) hand single geometries to JSTS and take the answers back into a column.
import RelateOp from 'jsts/org/locationtech/jts/operation/relate/RelateOp.js';
import BufferOp from 'jsts/org/locationtech/jts/operation/buffer/BufferOp.js';
import UnaryUnionOp from 'jsts/org/locationtech/jts/operation/union/UnaryUnionOp.js';
import type JtsGeometry from 'jsts/org/locationtech/jts/geom/Geometry.js';
import { GeometryBuilder, GeomType, PartKind } from '../geometry/geometry-column.js';
import { factory, jstsOf } from './validity.js';

export { jstsOf };

type J = JtsGeometry & Record<string, any>;

const TYPES: Record<string, number> = {
  Point: GeomType.Point,
  LineString: GeomType.LineString,
  LinearRing: GeomType.LineString,
  Polygon: GeomType.Polygon,
  MultiPoint: GeomType.MultiPoint,
  MultiLineString: GeomType.MultiLineString,
  MultiPolygon: GeomType.MultiPolygon,
  GeometryCollection: GeomType.GeometryCollection,
};

function coords(b: GeometryBuilder, cs: { x: number; y: number }[]): void {
  for (const c of cs) b.vertex(c.x, c.y);
}

function parts(b: GeometryBuilder, g: J): void {
  const t = g.getGeometryType() as string;
  if (g.isEmpty()) return;
  switch (t) {
    case 'Point':
      b.part(PartKind.Point);
      b.ring();
      coords(b, [g.getCoordinate()]);
      return;
    case 'LineString':
    case 'LinearRing':
      b.part(PartKind.Line);
      b.ring();
      coords(b, g.getCoordinates());
      return;
    case 'Polygon':
      b.part(PartKind.Polygon);
      b.ring();
      coords(b, g.getExteriorRing().getCoordinates());
      for (let i = 0; i < g.getNumInteriorRing(); i++) {
        b.ring();
        coords(b, g.getInteriorRingN(i).getCoordinates());
      }
      return;
    default:
      for (let i = 0; i < g.getNumGeometries(); i++) parts(b, g.getGeometryN(i));
  }
}

/** Appends a JSTS geometry to a builder (an empty one as an empty geometry of its type). */
export function addJsts(b: GeometryBuilder, geom: JtsGeometry): void {
  const g = geom as J;
  const t = TYPES[g.getGeometryType() as string] ?? GeomType.GeometryCollection;
  b.begin(g.isEmpty() ? GeomType.Empty : t);
  parts(b, g);
  b.end();
}

/** The dimension of a geometry for DE-9IM predicates (0 points, 1 lines, 2 areas). */
const dim = (g: JtsGeometry) => (g as J).getDimension() as number;

export type Relation = 'intersects' | 'disjoint' | 'equals' | 'touches' | 'crosses' | 'overlaps' | 'contains' | 'within';

/** Whether `a` stands in `relation` to `b` (the OGC Simple Features predicates, by DE-9IM). */
export function relates(a: JtsGeometry, b: JtsGeometry, relation: Relation): boolean {
  const m = RelateOp.relate(a, b) as Record<string, any>;
  switch (relation) {
    case 'intersects':
      return m.isIntersects();
    case 'disjoint':
      return m.isDisjoint();
    case 'equals':
      return m.isEquals(dim(a), dim(b));
    case 'touches':
      return m.isTouches(dim(a), dim(b));
    case 'crosses':
      return m.isCrosses(dim(a), dim(b));
    case 'overlaps':
      return m.isOverlaps(dim(a), dim(b));
    case 'contains':
      return m.isContains();
    case 'within':
      return m.isWithin();
  }
}

/** The buffer of a geometry (8 segments per quarter circle, round ends and joins, as GEOS's default). */
export function buffer(g: JtsGeometry, distance: number): JtsGeometry {
  return BufferOp.bufferOp(g, distance) as JtsGeometry;
}

/** The union of geometries (one geometry). */
export function unionOf(gs: JtsGeometry[]): JtsGeometry {
  return UnaryUnionOp.union(factory.createGeometryCollection(gs)) as JtsGeometry;
}
