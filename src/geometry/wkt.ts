// Well-known text (OGC Simple Features) into and out of packed geometries: what CSV files carry in
// a geometry column (GDAL writes and reads the same). Reads the seven types with EMPTY and Z, M or
// ZM coordinates (only x and y are kept); writes 2D text with the shortest round-tripping numbers.
import { GeometryBuilder, GeometryColumn, GeomType, PartKind } from './geometry-column.js';

export class WktError extends Error {}

const TYPES: Record<string, number> = {
  POINT: GeomType.Point,
  LINESTRING: GeomType.LineString,
  POLYGON: GeomType.Polygon,
  MULTIPOINT: GeomType.MultiPoint,
  MULTILINESTRING: GeomType.MultiLineString,
  MULTIPOLYGON: GeomType.MultiPolygon,
  GEOMETRYCOLLECTION: GeomType.GeometryCollection,
};

class Lexer {
  at = 0;
  constructor(readonly s: string) {}
  skip(): void {
    while (this.at < this.s.length && /\s/.test(this.s[this.at])) this.at++;
  }
  peek(): string {
    this.skip();
    return this.s[this.at] ?? '';
  }
  expect(ch: string): void {
    if (this.peek() !== ch) throw new WktError(`'${ch}' expected at character ${this.at + 1}`);
    this.at++;
  }
  word(): string {
    this.skip();
    const m = /^[A-Za-z]+/.exec(this.s.slice(this.at, this.at + 32));
    if (!m) throw new WktError(`a word expected at character ${this.at + 1}`);
    this.at += m[0].length;
    return m[0].toUpperCase();
  }
  number(): number {
    this.skip();
    const m = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?/.exec(this.s.slice(this.at, this.at + 64));
    if (!m) throw new WktError(`a number expected at character ${this.at + 1}`);
    this.at += m[0].length;
    return Number(m[0]);
  }
  /** EMPTY instead of a list? */
  empty(): boolean {
    this.skip();
    if (this.s.slice(this.at, this.at + 5).toUpperCase() === 'EMPTY') {
      this.at += 5;
      return true;
    }
    return false;
  }
}

function coordinate(lx: Lexer, b: GeometryBuilder, dims: number): void {
  const x = lx.number();
  const y = lx.number();
  for (let k = 2; k < dims; k++) lx.number();
  // a coordinate with an unannounced Z
  while (/[-+.\d]/.test(lx.peek())) lx.number();
  b.vertex(x, y);
}

function coordinates(lx: Lexer, b: GeometryBuilder, dims: number): void {
  b.ring();
  if (lx.empty()) return;
  lx.expect('(');
  coordinate(lx, b, dims);
  while (lx.peek() === ',') {
    lx.at++;
    coordinate(lx, b, dims);
  }
  lx.expect(')');
}

/** A list "( item, item )" or EMPTY. */
function list(lx: Lexer, item: () => void): void {
  if (lx.empty()) return;
  lx.expect('(');
  item();
  while (lx.peek() === ',') {
    lx.at++;
    item();
  }
  lx.expect(')');
}

function body(lx: Lexer, b: GeometryBuilder, type: number, dims: number, depth: number): void {
  switch (type) {
    case GeomType.Point:
      if (lx.empty()) return;
      b.part(PartKind.Point);
      b.ring();
      lx.expect('(');
      coordinate(lx, b, dims);
      lx.expect(')');
      return;
    case GeomType.LineString:
      if (lx.empty()) return;
      b.part(PartKind.Line);
      coordinates(lx, b, dims);
      return;
    case GeomType.Polygon:
      if (lx.empty()) return;
      b.part(PartKind.Polygon);
      list(lx, () => coordinates(lx, b, dims));
      return;
    case GeomType.MultiPoint:
      list(lx, () => {
        b.part(PartKind.Point);
        b.ring();
        // MULTIPOINT (1 2, 3 4) and MULTIPOINT ((1 2), (3 4)) both occur
        if (lx.peek() === '(') {
          lx.at++;
          coordinate(lx, b, dims);
          lx.expect(')');
        } else coordinate(lx, b, dims);
      });
      return;
    case GeomType.MultiLineString:
      list(lx, () => {
        b.part(PartKind.Line);
        coordinates(lx, b, dims);
      });
      return;
    case GeomType.MultiPolygon:
      list(lx, () => {
        b.part(PartKind.Polygon);
        list(lx, () => coordinates(lx, b, dims));
      });
      return;
    default:
      if (depth > 8) throw new WktError('geometry collections nest too deeply');
      list(lx, () => {
        const [t, d] = tagged(lx);
        body(lx, b, t, d, depth + 1);
      });
  }
}

/** A type word with its optional Z, M or ZM: [type code, coordinates per vertex]. */
function tagged(lx: Lexer): [number, number] {
  let word = lx.word();
  let dims = 2;
  for (const suffix of ['ZM', 'Z', 'M']) {
    if (word.endsWith(suffix) && TYPES[word.slice(0, -suffix.length)] !== undefined) {
      word = word.slice(0, -suffix.length);
      dims += suffix.length;
      break;
    }
  }
  const type = TYPES[word];
  if (type === undefined) throw new WktError(`'${word}' is not a WKT geometry type`);
  const save = lx.at;
  const next = /^[A-Za-z]+/.exec(lx.s.slice(lx.at).trimStart())?.[0]?.toUpperCase();
  if (next === 'ZM' || next === 'Z' || next === 'M') {
    lx.word();
    dims = 2 + next.length;
  } else lx.at = save;
  return [type, dims];
}

/** Appends the geometry of a WKT text (an empty string: an empty geometry) to the builder. */
export function readWkt(b: GeometryBuilder, text: string): void {
  const lx = new Lexer(text);
  if (lx.peek() === '') {
    b.begin(GeomType.Empty);
    b.end();
    return;
  }
  const [type, dims] = tagged(lx);
  b.begin(type);
  body(lx, b, type, dims, 0);
  b.end();
  if (lx.peek() !== '') throw new WktError(`unexpected text after the geometry at character ${lx.at + 1}`);
}

/** Geometry g as WKT ('' for an empty geometry: GDAL writes empty geometries as an empty field). */
export function writeWkt(c: GeometryColumn, g: number): string {
  const type = c.types[g];
  if (type === GeomType.Empty) return '';
  const pt = (v: number) => `${c.xy[2 * v]} ${c.xy[2 * v + 1]}`;
  const ring = (r: number) => {
    const out: string[] = [];
    for (let v = c.ringStarts[r]; v < c.ringStarts[r + 1]; v++) out.push(pt(v));
    return `(${out.join(', ')})`;
  };
  const rings = (p: number) => {
    const out: string[] = [];
    for (let r = c.partRings[p]; r < c.partRings[p + 1]; r++) out.push(ring(r));
    return `(${out.join(', ')})`;
  };
  const p0 = c.geomParts[g];
  const p1 = c.geomParts[g + 1];
  const ps = Array.from({ length: p1 - p0 }, (_, i) => p0 + i);
  const pointsOf = (p: number) => {
    const out: string[] = [];
    const r = c.partRings[p];
    for (let v = c.ringStarts[r]; v < c.ringStarts[r + 1]; v++) out.push(pt(v));
    return out;
  };
  const part = (p: number): string => {
    const k = c.partKinds[p];
    if (k === PartKind.Point) {
      const pts = pointsOf(p);
      return pts.length === 1 ? `POINT (${pts[0]})` : `MULTIPOINT (${pts.map((x) => `(${x})`).join(', ')})`;
    }
    if (k === PartKind.Line) return `LINESTRING ${ring(c.partRings[p])}`;
    return `POLYGON ${rings(p)}`;
  };
  switch (type) {
    case GeomType.Point:
      return ps.length ? `POINT (${pointsOf(p0)[0]})` : 'POINT EMPTY';
    case GeomType.LineString:
      return ps.length ? `LINESTRING ${ring(c.partRings[p0])}` : 'LINESTRING EMPTY';
    case GeomType.Polygon:
      return ps.length ? `POLYGON ${rings(p0)}` : 'POLYGON EMPTY';
    case GeomType.MultiPoint:
      return ps.length
        ? `MULTIPOINT (${ps
            .flatMap(pointsOf)
            .map((x) => `(${x})`)
            .join(', ')})`
        : 'MULTIPOINT EMPTY';
    case GeomType.MultiLineString:
      return ps.length ? `MULTILINESTRING (${ps.map((p) => ring(c.partRings[p])).join(', ')})` : 'MULTILINESTRING EMPTY';
    case GeomType.MultiPolygon:
      return ps.length ? `MULTIPOLYGON (${ps.map(rings).join(', ')})` : 'MULTIPOLYGON EMPTY';
    default:
      return ps.length ? `GEOMETRYCOLLECTION (${ps.map(part).join(', ')})` : 'GEOMETRYCOLLECTION EMPTY';
  }
}
