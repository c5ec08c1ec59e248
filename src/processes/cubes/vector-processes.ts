// The vector processes: filter_vector (OGC predicates against the union of base geometries),
// vector_buffer (JSTS buffers, as GEOS draws them), vector_reproject (vertex by vertex with
// proj4), vector_to_regular_points and vector_to_random_points (seeded). Each keeps the other
// dimensions of the cube and the features' properties.
import { ApiError, ProcessException } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import { DataCube } from '../../datacube/datacube.js';
import { cubeOf } from '../../data/lazy.js';
import { VectorFeatures } from '../../datacube/features.js';
import { GeometryBuilder, GeometryColumn, GeomType, PartKind } from '../../geometry/geometry-column.js';
import { geometriesArg, jstsBridge } from '../../datacube/geometry.js';
import type { Relation } from '../../datacube/jsts-bridge.js';
import { geometryDimension, vectorCube } from '../../datacube/vector-cube.js';
import { CrsUnknownError, crsUnits, ensureCrs, epsgOfWkt } from '../../geometry/crs.js';
import { mulberry32 } from '../../core/random.js';
import { vectorLimits } from '../../datacube/vector-limits.js';

const invalid = (process: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process, parameter, reason });

/** The vector cube of a `data` argument. */
async function vectorArg(v: unknown, run: Parameters<typeof cubeOf>[1], process: string, parameter = 'data'): Promise<DataCube> {
  if (v !== null && typeof v === 'object' && !(v instanceof DataCube) && typeof (v as { type?: unknown }).type === 'string') return vectorCube(await geometriesArg(v, process, vectorLimits(run), parameter));
  const cube = await cubeOf(v, run, process, parameter);
  if (!cube.features) throw invalid(process, parameter, 'a vector data cube (with a geometry dimension) is expected');
  return cube;
}

/** The cube with new geometries, one per old geometry (the values and properties stay). */
function withGeometries(cube: DataCube, geometries: GeometryColumn): DataCube {
  return cube.with({ features: cube.features!.withGeometries(geometries, false) });
}

/** Refuses distances in a CRS whose unit is not the metre (UnitMismatch). */
function requireMetres(epsg: number, process: string): void {
  const unit = crsUnits(epsg);
  if (unit !== 'm')
    throw new ProcessException(
      'UnitMismatch',
      `the geometries are in EPSG:${epsg}, whose unit is ${unit === 'degrees' ? 'the degree' : unit}, not the metre; reproject them first (vector_reproject, e.g. to a UTM zone)`,
    );
}

/** Whether (x, y) lies inside polygon part p (even-odd over its rings; the boundary counts as inside). */
function inPolygon(c: GeometryColumn, p: number, x: number, y: number): boolean {
  let inside = false;
  for (let r = c.partRings[p]; r < c.partRings[p + 1]; r++) {
    const v0 = c.ringStarts[r];
    const v1 = c.ringStarts[r + 1];
    for (let v = v0; v + 1 < v1; v++) {
      const ax = c.xy[2 * v],
        ay = c.xy[2 * v + 1],
        bx = c.xy[2 * v + 2],
        by = c.xy[2 * v + 3];
      // on the edge
      const cross = (bx - ax) * (y - ay) - (by - ay) * (x - ax);
      if (cross === 0 && x >= Math.min(ax, bx) && x <= Math.max(ax, bx) && y >= Math.min(ay, by) && y <= Math.max(ay, by)) return true;
      if (ay > y !== by > y && x < ax + ((y - ay) * (bx - ax)) / (by - ay)) inside = !inside;
    }
  }
  return inside;
}

/** Points of each geometry (rows of positions), and whether each came from a real sample. */
type Samples = number[][][];

/** The cube of sampled points: grouped (a MultiPoint per geometry, ids kept) or one Point each. */
function pointsCube(cube: DataCube, samples: Samples, group: boolean): DataCube {
  const f = cube.features!;
  const b = new GeometryBuilder(f.epsg);
  if (group) {
    for (const pts of samples) {
      b.begin(pts.length ? GeomType.MultiPoint : GeomType.Empty);
      for (const [x, y] of pts) {
        b.part(PartKind.Point);
        b.ring();
        b.vertex(x, y);
      }
      b.end();
    }
    return cube.with({ features: new VectorFeatures(b.finish(), f.properties, f.ids, true) });
  }
  // One feature per point, carrying its geometry's properties and values; no ids.
  const from: number[] = [];
  samples.forEach((pts, g) => {
    for (const [x, y] of pts) {
      b.begin(GeomType.Point);
      b.part(PartKind.Point);
      b.ring();
      b.vertex(x, y);
      b.end();
      from.push(g);
    }
  });
  const gd = cube.dims.findIndex((d) => d.type === 'geometry');
  const picked = cube.select(gd, from);
  const dims = picked.dims.map((d, i) => (i === gd ? geometryDimension(from.length) : d));
  return picked.with({ dims, features: new VectorFeatures(b.finish(), f.properties.select(from), null, true) });
}

/** Area of polygon part p (its exterior ring less its holes, by the shoelace formula). */
function partArea(c: GeometryColumn, p: number): number {
  let area = 0;
  for (let r = c.partRings[p]; r < c.partRings[p + 1]; r++) {
    let a = 0;
    for (let v = c.ringStarts[r]; v + 1 < c.ringStarts[r + 1]; v++) a += c.xy[2 * v] * c.xy[2 * v + 3] - c.xy[2 * v + 2] * c.xy[2 * v + 1];
    area += (r === c.partRings[p] ? 1 : -1) * Math.abs(a / 2);
  }
  return area;
}

/** Length of line ring r. */
function ringLength(c: GeometryColumn, r: number): number {
  let len = 0;
  for (let v = c.ringStarts[r]; v + 1 < c.ringStarts[r + 1]; v++) len += Math.hypot(c.xy[2 * v + 2] - c.xy[2 * v], c.xy[2 * v + 3] - c.xy[2 * v + 1]);
  return len;
}

/** The point at distance d along line ring r. */
function alongLine(c: GeometryColumn, r: number, d: number): [number, number] {
  let rest = d;
  for (let v = c.ringStarts[r]; v + 1 < c.ringStarts[r + 1]; v++) {
    const ax = c.xy[2 * v],
      ay = c.xy[2 * v + 1],
      bx = c.xy[2 * v + 2],
      by = c.xy[2 * v + 3];
    const seg = Math.hypot(bx - ax, by - ay);
    if (rest <= seg && seg > 0) return [ax + ((bx - ax) * rest) / seg, ay + ((by - ay) * rest) / seg];
    rest -= seg;
  }
  const last = c.ringStarts[r + 1] - 1;
  return [c.xy[2 * last], c.xy[2 * last + 1]];
}

const RELATIONS: Relation[] = ['intersects', 'disjoint', 'equals', 'touches', 'crosses', 'overlaps', 'contains', 'within'];
const MAX_POINTS = 10_000_000;

export const processes: ProcessImpl[] = [
  implement('filter_vector', async (a, ctx) => {
    const P = 'filter_vector';
    const cube = await vectorArg(a.get('data'), ctx.run, P);
    const relation = a.get<string>('relation') as Relation;
    if (!RELATIONS.includes(relation)) throw invalid(P, 'relation', `'${relation}' is not one of ${RELATIONS.join(', ')}`);
    const base0 = await geometriesArg(a.get('geometries'), P, vectorLimits(ctx.run));
    const f = cube.features!;
    const base = base0.epsg === f.epsg ? base0 : base0.reproject(f.epsg);
    const { jstsOf, relates, unionOf } = await jstsBridge();
    const union = unionOf(Array.from({ length: base.length }, (_, g) => jstsOf(base.geometries, g)));
    const keep: number[] = [];
    for (let g = 0; g < f.length; g++) {
      if (f.geometries.isEmpty(g)) continue;
      if (relates(jstsOf(f.geometries, g), union, relation)) keep.push(g);
    }
    return cube.select(
      cube.dims.findIndex((d) => d.type === 'geometry'),
      keep,
    );
  }),
  implement('vector_buffer', async (a, ctx) => {
    const P = 'vector_buffer';
    const cube = await vectorArg(a.get('geometries'), ctx.run, P, 'geometries');
    const distance = a.get<number>('distance');
    if (typeof distance !== 'number' || !Number.isFinite(distance) || distance === 0) throw invalid(P, 'distance', 'a finite number other than 0 is expected');
    const f = cube.features!;
    requireMetres(f.epsg, P);
    const { addJsts, buffer, jstsOf } = await jstsBridge();
    const b = new GeometryBuilder(f.epsg);
    for (let g = 0; g < f.length; g++) {
      if (f.geometries.isEmpty(g)) {
        b.begin(GeomType.Empty);
        b.end();
      } else addJsts(b, buffer(jstsOf(f.geometries, g), distance));
    }
    return withGeometries(cube, b.finish());
  }),
  implement('vector_reproject', async (a, ctx) => {
    const P = 'vector_reproject';
    const cube = await vectorArg(a.get('data'), ctx.run, P);
    const dim = a.get<string | null>('dimension');
    if (dim !== null && cube.dims.find((d) => d.name === dim)?.type !== 'geometry') throw new ProcessException('DimensionNotAvailable', `the cube has no geometry dimension '${dim}'`);
    const proj = a.get<unknown>('projection');
    const epsg = typeof proj === 'number' ? proj : typeof proj === 'string' ? epsgOfWkt(proj) : null;
    if (epsg === null) throw invalid(P, 'projection', 'give an EPSG code, or a WKT that names its EPSG code (ID["EPSG", ...])');
    try {
      ensureCrs(epsg);
    } catch (e) {
      if (e instanceof CrsUnknownError) throw invalid(P, 'projection', e.message);
      throw e;
    }
    return withGeometries(cube, cube.features!.geometries.reproject(epsg));
  }),
  implement('vector_to_regular_points', async (a, ctx) => {
    const P = 'vector_to_regular_points';
    const cube = await vectorArg(a.get('data'), ctx.run, P);
    const distance = a.get<number>('distance');
    if (!(typeof distance === 'number' && distance > 0 && Number.isFinite(distance))) throw invalid(P, 'distance', 'a positive number is expected');
    const c = cube.features!.geometries;
    requireMetres(c.epsg, P);
    let total = 0;
    const samples: Samples = [];
    for (let g = 0; g < c.length; g++) {
      const pts: number[][] = [];
      for (let p = c.geomParts[g]; p < c.geomParts[g + 1]; p++) {
        const kind = c.partKinds[p];
        const r0 = c.partRings[p];
        if (kind === PartKind.Point) {
          for (let v = c.ringStarts[r0]; v < c.ringStarts[r0 + 1]; v++) pts.push([c.xy[2 * v], c.xy[2 * v + 1]]);
        } else if (kind === PartKind.Line) {
          const len = ringLength(c, r0);
          for (let d = 0; d <= len + 1e-9; d += distance) pts.push(alongLine(c, r0, Math.min(d, len)));
        } else {
          // the part's own box
          let x0 = Infinity,
            y1 = -Infinity,
            x1 = -Infinity,
            y0 = Infinity;
          for (let v = c.ringStarts[r0]; v < c.ringStarts[r0 + 1]; v++) {
            x0 = Math.min(x0, c.xy[2 * v]);
            x1 = Math.max(x1, c.xy[2 * v]);
            y0 = Math.min(y0, c.xy[2 * v + 1]);
            y1 = Math.max(y1, c.xy[2 * v + 1]);
          }
          const nx = Math.ceil((x1 - x0) / distance);
          const ny = Math.ceil((y1 - y0) / distance);
          if (nx * ny > MAX_POINTS) throw invalid(P, 'distance', `a geometry would be sampled on ${nx * ny} grid cells, more than ${MAX_POINTS}; take a larger distance`);
          const before = pts.length;
          for (let j = 0; j < ny; j++) {
            for (let i = 0; i < nx; i++) {
              const x = x0 + (i + 0.5) * distance;
              const y = y1 - (j + 0.5) * distance;
              if (inPolygon(c, p, x, y)) pts.push([x, y]);
            }
          }
          if (pts.length === before) pts.push([c.xy[2 * c.ringStarts[r0]], c.xy[2 * c.ringStarts[r0] + 1]]);
        }
      }
      total += pts.length;
      if (total > MAX_POINTS) throw invalid(P, 'distance', `the sampling gives more than ${MAX_POINTS} points; take a larger distance`);
      samples.push(pts);
    }
    return pointsCube(cube, samples, a.get<boolean>('group') !== false);
  }),
  implement('vector_to_random_points', async (a, ctx) => {
    const P = 'vector_to_random_points';
    const cube = await vectorArg(a.get('data'), ctx.run, P);
    const c = cube.features!.geometries;
    const perGeometry = a.get<number | null>('geometry_count');
    const total = a.get<number | null>('total_count');
    const seed = a.get<number | null>('seed');
    const live = Array.from({ length: c.length }, (_, g) => g).filter((g) => !c.isEmpty(g)).length;
    if (total !== null && total < c.length) throw new ProcessException('CountMismatch', `total_count ${total} is lower than the ${c.length} geometries`);
    let per = perGeometry ?? (total !== null ? Math.floor(total / Math.max(1, live)) : 1);
    if (total !== null && per * live > total) per = Math.max(1, Math.floor(total / Math.max(1, live)));
    if (per * live > MAX_POINTS) throw invalid(P, 'geometry_count', `that gives ${per * live} points, more than ${MAX_POINTS}`);
    const rnd = mulberry32(seed ?? Math.floor(Math.random() * 2 ** 32));
    const samples: Samples = [];
    for (let g = 0; g < c.length; g++) {
      const pts: number[][] = [];
      samples.push(pts);
      const p0 = c.geomParts[g];
      const p1 = c.geomParts[g + 1];
      if (p0 === p1) continue;
      // Vertices of point parts, area of polygon parts, length of line parts: what is sampled.
      const vertices: [number, number][] = [];
      const polys: { p: number; area: number; box: number[] }[] = [];
      const lines: { r: number; len: number }[] = [];
      for (let p = p0; p < p1; p++) {
        const r0 = c.partRings[p];
        if (c.partKinds[p] === PartKind.Point) for (let v = c.ringStarts[r0]; v < c.ringStarts[r0 + 1]; v++) vertices.push([c.xy[2 * v], c.xy[2 * v + 1]]);
        else if (c.partKinds[p] === PartKind.Line) lines.push({ r: r0, len: ringLength(c, r0) });
        else {
          let x0 = Infinity,
            y0 = Infinity,
            x1 = -Infinity,
            y1 = -Infinity;
          for (let v = c.ringStarts[r0]; v < c.ringStarts[r0 + 1]; v++) {
            x0 = Math.min(x0, c.xy[2 * v]);
            x1 = Math.max(x1, c.xy[2 * v]);
            y0 = Math.min(y0, c.xy[2 * v + 1]);
            y1 = Math.max(y1, c.xy[2 * v + 1]);
          }
          polys.push({ p, area: partArea(c, p), box: [x0, y0, x1, y1] });
        }
      }
      if (polys.length) {
        const weights = polys.map((q) => q.area);
        const sum = weights.reduce((s, w) => s + w, 0);
        for (let k = 0; k < per; k++) {
          let u = rnd() * sum;
          let q = polys[polys.length - 1];
          for (let i = 0; i < polys.length; i++) {
            if (u < weights[i]) {
              q = polys[i];
              break;
            }
            u -= weights[i];
          }
          for (let tries = 0; tries < 100_000; tries++) {
            const x = q.box[0] + rnd() * (q.box[2] - q.box[0]);
            const y = q.box[1] + rnd() * (q.box[3] - q.box[1]);
            if (inPolygon(c, q.p, x, y)) {
              pts.push([x, y]);
              break;
            }
          }
        }
      } else if (lines.length) {
        const sum = lines.reduce((s, l) => s + l.len, 0);
        for (let k = 0; k < per; k++) {
          let u = rnd() * sum;
          let l = lines[lines.length - 1];
          for (const x of lines) {
            if (u <= x.len) {
              l = x;
              break;
            }
            u -= x.len;
          }
          pts.push(alongLine(c, l.r, Math.min(u, l.len)));
        }
      } else {
        // each vertex at most once: a partial Fisher-Yates shuffle
        const n = Math.min(per, vertices.length);
        for (let k = 0; k < n; k++) {
          const j = k + Math.floor(rnd() * (vertices.length - k));
          [vertices[k], vertices[j]] = [vertices[j], vertices[k]];
          pts.push(vertices[k]);
        }
      }
    }
    return pointsCube(cube, samples, a.get<boolean>('group') !== false);
  }),
];
