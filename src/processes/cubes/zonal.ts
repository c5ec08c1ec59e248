// aggregate_spatial: zonal statistics of a raster cube over geometries, giving a vector cube. The
// geometries become spans of pixels on the cube's grid (kernels/zonal.ts, one pass over each
// polygon's edges); the common reducers (mean, sum, count, min, max, sd, variance, median) run on
// the kernels over those spans, plane by plane; any other reducer is a child process that gets
// each geometry's pixel values, gathered by the kernels. In a chunk of a batch job only the
// chunk's geometries are computed (RunContext.zonal; jobs/zonal-plan.ts).
import { ApiError, ProcessException } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import type { Callback, ProcessContext } from '../../core/process.js';
import type { Labels } from '../../core/labels.js';
import { isObject, type Graph } from '../../core/graph.js';
import { DataCube, type Dimension } from '../../datacube/datacube.js';
import { LazyCube, cubeOf } from '../../data/lazy.js';
import { featuresBox, geometriesArg } from '../../datacube/geometry.js';
import type { VectorFeatures } from '../../datacube/features.js';
import { inCrs, spansOf } from '../../datacube/spans.js';
import { ZONAL_STATS, zonalStats, zonalValues, type ZonalStat } from '../../datacube/zonal.js';
import { geometryDimension } from '../../datacube/vector-cube.js';
import { crsInfo } from '../../geometry/crs.js';
import { reduceVectors, requireCallback } from './common.js';
import { vectorLimits } from '../../datacube/vector-limits.js';
import { addStage } from '../../core/stages.js';

const P = 'aggregate_spatial';
const STATS_LABELS = ['value', 'total_count', 'valid_count'];

/**
 * The kernel statistic a reducer is, when it is exactly one of the common reducers applied to the
 * whole array (`{"process_id": "mean", "arguments": {"data": {"from_parameter": "data"}}}`, with
 * a literal ignore_nodata, or count without a condition or with `true`); else null.
 */
export function zonalStatOf(cb: Callback): { stat: ZonalStat; ignoreNodata: boolean } | null {
  const child = cb.child;
  if (!child || child.run?.kernels === 'off') return null;
  const g = child.graph as Graph;
  if (!isObject(g)) return null;
  const nodes = Object.values(g);
  if (nodes.length !== 1) return null;
  const n = nodes[0];
  const pid = n.process_id as ZonalStat;
  if (!ZONAL_STATS.has(pid) || (n.namespace !== undefined && n.namespace !== null && n.namespace !== 'backend') || child.shadowed(pid)) return null;
  const args = n.arguments ?? {};
  const d = args.data as { from_parameter?: unknown } | undefined;
  if (!isObject(d) || d.from_parameter !== 'data' || Object.keys(d).length !== 1) return null;
  let ignoreNodata = true;
  for (const [k, v] of Object.entries(args)) {
    if (k === 'data' || k === 'context') continue;
    if (k === 'ignore_nodata' && pid !== 'count' && typeof v === 'boolean') ignoreNodata = v;
    else if (k === 'condition' && pid === 'count' && (v === null || v === true)) ignoreNodata = v !== true;
    else return null;
  }
  return { stat: pid, ignoreNodata };
}

/** A deferred load narrowed to the box of the geometries (a hair wider, so points on its edge keep their pixel). */
function narrowToGeometries(c: LazyCube, f: VectorFeatures): LazyCube {
  // A load of the whole collection ends where its items end.
  const cur = c.spec.extent ?? c.extent();
  const crs = cur.crs ?? 4326;
  const b = featuresBox(f, crs);
  if (!b.every(Number.isFinite)) return c;
  const eps = crsInfo(crs).geographic ? 1e-7 : 1e-3;
  const box = [b[0] - eps, b[1] - eps, b[2] + eps, b[3] + eps];
  const e = { west: Math.max(cur.west, box[0]), south: Math.max(cur.south, box[1]), east: Math.min(cur.east, box[2]), north: Math.min(cur.north, box[3]), crs };
  // Disjoint: every geometry gives no-data; a corner of the data is read for the dates and bands.
  if (!(e.west < e.east && e.south < e.north)) return c.with({ extent: { west: cur.west, south: cur.south, east: cur.west + eps, north: cur.south + eps, crs } });
  return c.with({ extent: e });
}

function checkSize(geometries: number, rest: number, ctx: ProcessContext): void {
  const run = ctx.run;
  if (run && geometries * rest > run.maxValues) {
    throw new ApiError('ProcessGraphComplexity', {}, `The aggregation gives ${geometries} geometries x ${rest} values (${geometries * rest}), more than the ${run.maxValues} allowed here. ${run.limitAdvice}`);
  }
}

export const processes: ProcessImpl[] = [
  implement('aggregate_spatial', async (a, ctx) => {
    const cb = requireCallback(a.callback('reducer'), P, 'reducer');
    const given = a.get<unknown>('geometries');
    const all = await geometriesArg(given, P, vectorLimits(ctx.run));
    const gdim = given instanceof DataCube ? given.dims.find((d) => d.type === 'geometry') : undefined;
    let labels: Labels = gdim ? [...gdim.labels] : geometryDimension(all.length).labels;
    // A chunk of a batch job computes its share of the geometries only.
    const members = ctx.run?.zonal?.members ?? null;
    const features = members ? all.select(members) : all;
    if (members) labels = members.map((m) => labels[m]);
    const target = a.get<string | null>('target_dimension');
    let data = a.get<unknown>('data');
    // Narrowed by all geometries (not the chunk's): every chunk reads the same dates.
    if (data instanceof LazyCube) data = narrowToGeometries(data, all);
    const cube = await cubeOf(data, ctx.run, P);
    const grid = cube.grid;
    if (!grid) throw new ApiError('ProcessParameterInvalid', { process: P, parameter: 'data', reason: 'a raster data cube (with x and y) is expected' });
    const others = cube.dims.slice(0, -2);
    if (target !== null && (target === 'geometry' || others.some((x) => x.name === target))) {
      throw new ProcessException('TargetDimensionExists', `the result already has a dimension '${target}'`);
    }
    const plane = grid.width * grid.height;
    const planes = plane === 0 ? 0 : cube.size / plane;
    const stats = target === null ? 1 : 3;
    checkSize(features.length, planes * stats, ctx);
    // The rasterised spans and the statistics kernel count as the run's kernels (its Server-Timing, a job's time line).
    const t0 = performance.now();
    // A chunk's geometries, taken from all of them in the grid's CRS: reprojected once per thread
    // (inCrs keeps that), not once more per chunk; vertex by vertex, so the same coordinates.
    const spans = spansOf(members ? inCrs(all.geometries, grid.epsg).select(members) : features.geometries, grid);
    const n = features.length;
    const out = new Float32Array(n * planes * stats);
    const kernel = zonalStatOf(cb);
    let total: Float64Array;
    let valid: Float64Array;
    if (kernel) {
      const r = zonalStats(cube.data, grid.width, grid.height, planes, spans, kernel.stat, kernel.ignoreNodata);
      addStage('kernel', performance.now() - t0);
      total = r.total;
      valid = r.valid;
      // A geometry without pixels gets no value at all (count included): no-data, total_count 0.
      for (let i = 0; i < n * planes; i++) out[i * stats] = total[Math.floor(i / Math.max(1, planes))] > 0 ? r.values[i] : NaN;
    } else {
      const context = a.get('context');
      const zv = zonalValues(cube.data, grid.width, grid.height, planes, spans);
      total = zv.counts;
      valid = new Float64Array(n * planes);
      for (let g = 0; g < n; g++) {
        const items = zv.values(g);
        // A geometry without pixels: the reducer is not called, the value is no-data.
        const v = items.length ? await reduceVectors(cb, items, null, planes, context, P) : new Float32Array(planes).fill(NaN);
        for (let p = 0; p < planes; p++) {
          out[(g * planes + p) * stats] = v[p];
          let nv = 0;
          for (const it of items) if (it[p] === it[p]) nv++;
          valid[g * planes + p] = nv;
        }
      }
    }
    if (stats === 3) {
      for (let g = 0; g < n; g++) {
        for (let p = 0; p < planes; p++) {
          out[(g * planes + p) * 3 + 1] = total[g];
          out[(g * planes + p) * 3 + 2] = valid[g * planes + p];
        }
      }
    }
    const dims: Dimension[] = [{ ...geometryDimension(n), labels }, ...others];
    if (target !== null) dims.push({ name: target, type: 'other', labels: [...STATS_LABELS] });
    return new DataCube({ dims, data: out, features, bandInfo: cube.bandInfo });
  }),
];
