// Geometries packed in typed arrays, in the manner of GeoArrow: one array of coordinates for all
// vertices and offset arrays for rings, parts and geometries, so that thousands of polygons cost a
// handful of arrays instead of nested JS arrays per vertex, and go into kernel memory as they are.
//
//   geometry g  -> parts geomParts[g] .. geomParts[g+1]-1      (types[g]: its GeoJSON type)
//   part p      -> rings partRings[p] .. partRings[p+1]-1     (partKinds[p]: point, line, polygon)
//   ring r      -> vertices ringStarts[r] .. ringStarts[r+1]-1 (x, y at xy[2v], xy[2v+1])
//
// A point part has one ring holding its point(s) (a MultiPoint is one part per point); a line part
// one ring; a polygon part its exterior ring then its holes. A GeometryCollection is a geometry
// with parts of several kinds (nested collections are flattened). An empty geometry has no parts.
import { transformer } from './crs.js';

/** GeoJSON geometry types; the numbers are WKB's. 0 = no geometry (null or empty). */
export const GeomType = { Empty: 0, Point: 1, LineString: 2, Polygon: 3, MultiPoint: 4, MultiLineString: 5, MultiPolygon: 6, GeometryCollection: 7 } as const;
export type GeomTypeCode = (typeof GeomType)[keyof typeof GeomType];
export const GEOM_TYPE_NAMES = ['', 'Point', 'LineString', 'Polygon', 'MultiPoint', 'MultiLineString', 'MultiPolygon', 'GeometryCollection'] as const;

/** The kind of a part: what a pixel-centre test does with it. */
export const PartKind = { Point: 1, Line: 2, Polygon: 3 } as const;
export type PartKindCode = (typeof PartKind)[keyof typeof PartKind];

/** A GeoJSON geometry object (as users send them and writers write them). */
export type GeoJsonGeometry = { type: string; coordinates?: unknown; geometries?: GeoJsonGeometry[] };

/** A bad geometry; `feature` is its position in the input (0-based). */
export class GeometryError extends Error {
  constructor(
    readonly feature: number,
    readonly reason: string,
  ) {
    super(`feature ${feature}: ${reason}`);
  }
}

/** Limits a reader enforces while it builds (hostile inputs stop early, with a clear error). */
export interface GeometryLimits {
  /** Most vertices of one geometry. */
  maxVerticesPerGeometry: number;
  /** Most vertices of all geometries together. */
  maxVertices: number;
  /** Most geometries. */
  maxGeometries: number;
}

export const DEFAULT_GEOMETRY_LIMITS: GeometryLimits = { maxVerticesPerGeometry: 100_000, maxVertices: 20_000_000, maxGeometries: 1_000_000 };

export class GeometryColumn {
  readonly length: number;
  private boxes?: Float64Array;

  constructor(
    /** EPSG code of the coordinates (x/y: lon/lat for geographic CRSs). */
    readonly epsg: number,
    readonly types: Uint8Array,
    readonly geomParts: Uint32Array,
    readonly partKinds: Uint8Array,
    readonly partRings: Uint32Array,
    readonly ringStarts: Uint32Array,
    readonly xy: Float64Array,
  ) {
    this.length = types.length;
  }

  get vertexCount(): number {
    return this.xy.length / 2;
  }

  typeName(g: number): string | null {
    return this.types[g] === 0 ? null : GEOM_TYPE_NAMES[this.types[g]];
  }

  isEmpty(g: number): boolean {
    return this.geomParts[g] === this.geomParts[g + 1];
  }

  /** Vertices of geometry g. */
  vertices(g: number): number {
    const p0 = this.geomParts[g];
    const p1 = this.geomParts[g + 1];
    if (p0 === p1) return 0;
    return this.ringStarts[this.partRings[p1]] - this.ringStarts[this.partRings[p0]];
  }

  /** [minX, minY, maxX, maxY] of every geometry, 4 values each (NaN for empty ones). */
  bboxes(): Float64Array {
    if (this.boxes) return this.boxes;
    const out = new Float64Array(this.length * 4).fill(NaN);
    for (let g = 0; g < this.length; g++) {
      const v0 = this.ringStarts[this.partRings[this.geomParts[g]]];
      const v1 = this.ringStarts[this.partRings[this.geomParts[g + 1]]];
      if (v0 === v1) continue;
      let a = Infinity,
        b = Infinity,
        c = -Infinity,
        d = -Infinity;
      for (let v = v0; v < v1; v++) {
        const x = this.xy[2 * v];
        const y = this.xy[2 * v + 1];
        if (x < a) a = x;
        if (x > c) c = x;
        if (y < b) b = y;
        if (y > d) d = y;
      }
      out[4 * g] = a;
      out[4 * g + 1] = b;
      out[4 * g + 2] = c;
      out[4 * g + 3] = d;
    }
    return (this.boxes = out);
  }

  /** The box of all geometries (NaN when all are empty). */
  bbox(): [number, number, number, number] {
    const b = this.bboxes();
    const out: [number, number, number, number] = [Infinity, Infinity, -Infinity, -Infinity];
    for (let g = 0; g < this.length; g++) {
      if (Number.isNaN(b[4 * g])) continue;
      out[0] = Math.min(out[0], b[4 * g]);
      out[1] = Math.min(out[1], b[4 * g + 1]);
      out[2] = Math.max(out[2], b[4 * g + 2]);
      out[3] = Math.max(out[3], b[4 * g + 3]);
    }
    return out[0] <= out[2] ? out : [NaN, NaN, NaN, NaN];
  }

  /** The kinds of parts present (PartKind codes). */
  kinds(): Set<number> {
    return new Set(this.partKinds);
  }

  /** Geometry g as a GeoJSON geometry object (null when empty). */
  toGeoJSON(g: number): GeoJsonGeometry | null {
    const type = this.types[g];
    if (type === GeomType.Empty) return null;
    const ring = (r: number): number[][] => {
      const out: number[][] = [];
      for (let v = this.ringStarts[r]; v < this.ringStarts[r + 1]; v++) out.push([this.xy[2 * v], this.xy[2 * v + 1]]);
      return out;
    };
    const rings = (p: number) => {
      const out: number[][][] = [];
      for (let r = this.partRings[p]; r < this.partRings[p + 1]; r++) out.push(ring(r));
      return out;
    };
    const p0 = this.geomParts[g];
    const p1 = this.geomParts[g + 1];
    const parts = Array.from({ length: p1 - p0 }, (_, i) => p0 + i);
    const partGeometry = (p: number): GeoJsonGeometry => {
      const kind = this.partKinds[p];
      const rs = rings(p);
      if (kind === PartKind.Point) return rs[0].length === 1 ? { type: 'Point', coordinates: rs[0][0] } : { type: 'MultiPoint', coordinates: rs[0] };
      if (kind === PartKind.Line) return { type: 'LineString', coordinates: rs[0] };
      return { type: 'Polygon', coordinates: rs };
    };
    switch (type) {
      case GeomType.Point:
        return { type: 'Point', coordinates: parts.length ? rings(p0)[0][0] : [] };
      case GeomType.LineString:
        return { type: 'LineString', coordinates: parts.length ? rings(p0)[0] : [] };
      case GeomType.Polygon:
        return { type: 'Polygon', coordinates: parts.length ? rings(p0) : [] };
      case GeomType.MultiPoint:
        return { type: 'MultiPoint', coordinates: parts.flatMap((p) => rings(p)[0]) };
      case GeomType.MultiLineString:
        return { type: 'MultiLineString', coordinates: parts.map((p) => rings(p)[0]) };
      case GeomType.MultiPolygon:
        return { type: 'MultiPolygon', coordinates: parts.map((p) => rings(p)) };
      default:
        return { type: 'GeometryCollection', geometries: parts.map(partGeometry) };
    }
  }

  /** The geometries at the given positions, in that order. */
  select(positions: ArrayLike<number>): GeometryColumn {
    const b = new GeometryBuilder(this.epsg);
    for (let k = 0; k < positions.length; k++) b.copyFrom(this, positions[k]);
    return b.finish();
  }

  /** Every vertex transformed to another CRS (exactly, vertex by vertex; lines are not densified). */
  reproject(epsg: number): GeometryColumn {
    if (epsg === this.epsg) return this;
    const t = transformer(this.epsg, epsg);
    const xy = new Float64Array(this.xy.length);
    for (let i = 0; i < xy.length; i += 2) {
      const [x, y] = t(this.xy[i], this.xy[i + 1]);
      xy[i] = x;
      xy[i + 1] = y;
    }
    return new GeometryColumn(epsg, this.types, this.geomParts, this.partKinds, this.partRings, this.ringStarts, xy);
  }

  /** The same structure with new coordinates (same length as xy). */
  withCoordinates(epsg: number, xy: Float64Array): GeometryColumn {
    if (xy.length !== this.xy.length) throw new Error('withCoordinates: the coordinate count differs');
    return new GeometryColumn(epsg, this.types, this.geomParts, this.partKinds, this.partRings, this.ringStarts, xy);
  }
}

/** A typed array that grows by doubling. */
class Grow<T extends Float64Array | Uint32Array | Uint8Array> {
  length = 0;
  constructor(
    private data: T,
    private readonly make: (n: number) => T,
  ) {}
  push(v: number): void {
    if (this.length === this.data.length) {
      const next = this.make(Math.max(16, this.data.length * 2));
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = v;
  }
  get(i: number): number {
    return this.data[i];
  }
  set(i: number, v: number): void {
    this.data[i] = v;
  }
  truncate(n: number): void {
    this.length = n;
  }
  done(): T {
    return this.data.slice(0, this.length) as T;
  }
}

/**
 * Builds a GeometryColumn geometry by geometry; every reader (GeoJSON, FlatGeobuf, WKB, WKT) goes
 * through it, so the structure rules and the limits hold alike for all: rings of polygons closed
 * with at least four positions, lines with at least two, finite coordinates.
 */
export class GeometryBuilder {
  private readonly types = new Grow(new Uint8Array(16), (n) => new Uint8Array(n));
  private readonly geomParts = new Grow(new Uint32Array(16), (n) => new Uint32Array(n));
  private readonly partKinds = new Grow(new Uint8Array(16), (n) => new Uint8Array(n));
  private readonly partRings = new Grow(new Uint32Array(16), (n) => new Uint32Array(n));
  private readonly ringStarts = new Grow(new Uint32Array(16), (n) => new Uint32Array(n));
  private readonly xy = new Grow(new Float64Array(64), (n) => new Float64Array(n));
  private geomVertex0 = 0;
  private ringOpen = false;
  private kind: number = 0;

  constructor(
    readonly epsg: number,
    private readonly limits: GeometryLimits = DEFAULT_GEOMETRY_LIMITS,
  ) {
    this.geomParts.push(0);
    this.partRings.push(0);
    this.ringStarts.push(0);
  }

  /** Geometries so far. */
  get count(): number {
    return this.types.length;
  }

  private fail(reason: string): never {
    throw new GeometryError(this.types.length, reason);
  }

  /** Starts geometry number `count` of a GeoJSON type (GeomType code; Empty for none). */
  begin(type: number): void {
    if (this.types.length >= this.limits.maxGeometries) throw new GeometryError(this.types.length, `there are more than ${this.limits.maxGeometries} geometries, the most one input may hold here`);
    this.geomVertex0 = this.xy.length / 2;
    this.types.push(type);
  }

  part(kind: number): void {
    this.closePart();
    this.kind = kind;
    this.partKinds.push(kind);
  }

  ring(): void {
    this.closeRing();
    this.ringOpen = true;
  }

  vertex(x: number, y: number): void {
    if (!Number.isFinite(x) || !Number.isFinite(y)) this.fail('a coordinate is not a finite number');
    this.xy.push(x);
    this.xy.push(y);
    const n = this.xy.length / 2;
    if (n - this.geomVertex0 > this.limits.maxVerticesPerGeometry) this.fail(`the geometry has more than ${this.limits.maxVerticesPerGeometry} vertices, the most one geometry may have here; simplify it first`);
    if (n > this.limits.maxVertices) this.fail(`the geometries have more than ${this.limits.maxVertices} vertices together, the most one input may have here`);
  }

  /** Ends the current ring: checks it and records it (an empty ring is dropped). */
  private closeRing(): void {
    if (!this.ringOpen) return;
    this.ringOpen = false;
    const start = this.ringStarts.get(this.ringStarts.length - 1);
    const end = this.xy.length / 2;
    const n = end - start;
    if (n === 0) return;
    if (this.kind === PartKind.Polygon) {
      const x0 = this.xy.get(2 * start),
        y0 = this.xy.get(2 * start + 1);
      const x1 = this.xy.get(2 * end - 2),
        y1 = this.xy.get(2 * end - 1);
      if (x0 !== x1 || y0 !== y1) this.fail('a ring of the polygon is not closed (its first and last positions differ)');
      if (n < 4) this.fail(`a ring of the polygon has ${n} positions; a ring needs at least four (the first repeated at the end)`);
    } else if (this.kind === PartKind.Line && n < 2) this.fail('a line has fewer than two positions');
    this.ringStarts.push(end);
  }

  /** Ends the current part: drops it when it has no rings (an empty part). */
  private closePart(): void {
    this.closeRing();
    const rings = this.ringStarts.length - 1;
    const parts = this.partKinds.length;
    if (parts > this.partRings.length - 1) {
      if (rings === this.partRings.get(this.partRings.length - 1)) this.partKinds.truncate(parts - 1);
      else this.partRings.push(rings);
    }
  }

  /** Ends the current part (the next part() or end() would too). */
  endPart(): void {
    this.closePart();
  }

  end(): void {
    this.closePart();
    this.geomParts.push(this.partKinds.length);
    const g = this.types.length - 1;
    // A geometry whose parts were all empty is empty.
    if (this.geomParts.get(g) === this.geomParts.get(g + 1)) this.types.set(g, GeomType.Empty);
  }

  /** Appends geometry g of another column (same CRS). */
  copyFrom(c: GeometryColumn, g: number): void {
    this.begin(c.types[g]);
    for (let p = c.geomParts[g]; p < c.geomParts[g + 1]; p++) {
      this.part(c.partKinds[p]);
      for (let r = c.partRings[p]; r < c.partRings[p + 1]; r++) {
        this.ring();
        for (let v = c.ringStarts[r]; v < c.ringStarts[r + 1]; v++) this.vertex(c.xy[2 * v], c.xy[2 * v + 1]);
      }
    }
    this.end();
  }

  finish(): GeometryColumn {
    return new GeometryColumn(this.epsg, this.types.done(), this.geomParts.done(), this.partKinds.done(), this.partRings.done(), this.ringStarts.done(), this.xy.done());
  }
}
