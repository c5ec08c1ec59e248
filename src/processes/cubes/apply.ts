// Child processes over cubes: apply (per value), reduce_dimension and apply_dimension (along a
// dimension), and ndvi. The child process runs once per cube on pixel vectors (see datacube/pixels.ts).
import { implement, type ProcessImpl } from '../implement.js';
import { ApiError, ProcessException } from '../../core/errors.js';
import type { Callback } from '../../core/process.js';
import { DataCube, type Dimension } from '../../datacube/datacube.js';
import { PixelArray, broadcast } from '../../datacube/pixels.js';
import { cubeOf } from '../../data/lazy.js';
import { runProgram } from '../../compile/executor.js';
import type { Program } from '../../compile/program.js';
import { applyVector, dimIndex, joinSlices, reduceVectors, requireCallback, slicesOf } from './common.js';
import { isGridDim } from './dimensions.js';
import { runUdfChild, udfChild } from '../udf.js';
import { forestChild, runForest, type ForestChild } from '../../compile/forest-kernel.js';
import type { KernelHelpers } from '../../compile/kernel-threads.js';

/** A cube without dimension d (its grid too, if d was spatial). */
export function withoutDimension(cube: DataCube, d: number, data: Float32Array): DataCube {
  const dims = cube.dims.filter((_, i) => i !== d);
  const spatial = cube.dims[d].type === 'spatial';
  return cube.with({ dims, data: DataCube.fromOutermost(data, [1, ...dims.map((x) => x.labels.length)], 0), grid: spatial ? null : cube.grid });
}

/**
 * apply_dimension into a dimension the cube has already, as the reference back-end does it (e.g.
 * time into bands: a time series per band becomes values of the bands dimension). The source
 * dimension d goes. For each label of the target dimension e in turn, the child process runs on
 * the arrays along d at that label; the answers of all target labels, in the target's order, are
 * the target's new values. The target keeps its name and type; it keeps its labels when every
 * label answered one value, else its labels become 0, 1, 2, ... (rename them with rename_labels).
 */
async function intoExisting(cube: DataCube, d: number, e: number, cb: Callback, context: unknown): Promise<DataCube> {
  const source = cube.dims[d];
  const target = cube.dims[e];
  if (isGridDim(cube, e) || target.type === 'geometry') {
    throw new ApiError('ProcessParameterInvalid', {
      process: 'apply_dimension',
      parameter: 'target_dimension',
      reason: `the labels of '${target.name}' belong to the ${target.type === 'geometry' ? 'geometries' : 'raster grid'} and cannot take computed values; name a new dimension`,
    });
  }
  const answers: Float32Array[] = [];
  let onePerLabel = true;
  for (let j = 0; j < target.labels.length; j++) {
    const slice = cube.select(e, [j]);
    const { data, rest } = slice.outermost(d);
    const v = await cb({ data: new PixelArray(slicesOf(data, slice.shape[d], rest), source.labels, rest), context });
    const b = broadcast(v, rest, 'apply_dimension');
    const items = b instanceof PixelArray ? b.items : [b];
    if (items.length === 0) throw new ProcessException('DimensionNotAvailable', 'the child process answered an empty array');
    if (items.length !== 1) onePerLabel = false;
    answers.push(...items);
  }
  // Each answer holds the values of one new target label over the other dimensions, in their order.
  const dims: Dimension[] = cube.dims.filter((_, i) => i !== d).map((x) => (x === target ? { ...x, labels: onePerLabel ? x.labels : answers.map((_, i) => i) } : x));
  const at = dims.findIndex((x) => x.name === target.name);
  const rest = cube.size / Math.max(1, cube.shape[d] * cube.shape[e]);
  const data = DataCube.fromOutermost(
    joinSlices(answers, rest),
    dims.map((x) => x.labels.length),
    at,
  );
  return cube.with({
    dims,
    data,
    grid: source.type === 'spatial' ? null : cube.grid,
    features: source.type === 'geometry' ? null : cube.features,
    bandInfo: target.type === 'bands' && !onePerLabel ? {} : cube.bandInfo,
  });
}

/** apply_dimension's answer along `target_dimension`: the source dimension renamed (type other) unless it is kept. */
function retarget(cube: DataCube, source: string, target: string | null): DataCube {
  if (target === null || target === source) return cube;
  if (cube.has(target)) throw new ProcessException('DimensionNotAvailable', `the target dimension '${target}' exists already; choose a new name`);
  const dims: Dimension[] = cube.dims.map((x) => (x.name === source ? { name: target, type: 'other', labels: x.labels } : x));
  return cube.with({ dims, grid: cube.dim(source)?.type === 'spatial' ? null : cube.grid });
}

/**
 * A forest child process (predict_random_forest, predict_probabilities) along dimension d, on the
 * forest kernel. The values along d are the predictors: taken by name when every predictor of the
 * model is a label of d, else by position. A value per pixel drops d (when `reduce`); class
 * probabilities replace d's labels by the class values.
 */
function forestAlong(cube: DataCube, d: number, fc: ForestChild, reduce: boolean, processId: string, helpers: KernelHelpers | undefined): DataCube {
  const f = fc.forest;
  const labels = cube.dims[d].labels.map(String);
  const { data, rest } = cube.outermost(d);
  const slices = slicesOf(data, cube.shape[d], rest);
  const byName = f.predictors.every((p) => labels.includes(p));
  if (!byName && slices.length !== f.predictors.length) {
    throw new ApiError('ProcessParameterInvalid', {
      process: processId,
      parameter: 'data',
      reason: `the model was trained on ${f.predictors.length} predictors (${f.predictors.join(', ')}); the dimension '${cube.dims[d].name}' has ${slices.length} labels (${labels.join(', ')})`,
    });
  }
  const inputs = byName ? f.predictors.map((p) => slices[labels.indexOf(p)]) : slices;
  // The planes' rows: the innermost dimension other than d (x in a tile), so that runs of equal
  // pixels (a tile zoomed in past its data) are walked once.
  const last = cube.dims.length - 1 === d ? d - 1 : cube.dims.length - 1;
  const cols = last >= 0 ? cube.shape[last] : 0;
  const planes = runForest(f, inputs, rest, fc.probabilities, helpers, cols);
  if (!fc.probabilities && reduce) return withoutDimension(cube, d, planes[0]);
  const dims: Dimension[] = cube.dims.map((x, i) => (i === d ? { ...x, labels: fc.probabilities ? f.classes.map(String) : [0] } : x));
  const joined = planes.length === 1 ? planes[0] : joinSlices(planes, rest);
  return cube.with({
    dims,
    data: DataCube.fromOutermost(
      joined,
      dims.map((x) => x.labels.length),
      d,
    ),
    bandInfo: {},
  });
}

/** ndvi's computation as a kernel program: (nir - red) / (nir + red). */
const NDVI: Program = { inputs: 2, code: [{ op: 'normdiff', a: 0, b: 1 }], output: 2 };

export const processes: ProcessImpl[] = [
  implement('apply', async (a, ctx) => {
    const cube = await cubeOf(a.get('data'), ctx.run, 'apply');
    const cb = requireCallback(a.callback('process'), 'apply', 'process');
    // A UDF gets the whole cube and must answer one of the same shape.
    const udf = udfChild(cb, 'x', a.get('context'));
    if (udf) return runUdfChild(udf, ctx, 'apply', cube);
    const out = await applyVector(cb, cube.data, a.get('context'), 'apply');
    return cube.with({ data: out === cube.data ? out.slice() : out });
  }),
  implement('reduce_dimension', async (a, ctx) => {
    const cube = await cubeOf(a.get('data'), ctx.run, 'reduce_dimension');
    const cb = requireCallback(a.callback('reducer'), 'reduce_dimension', 'reducer');
    const d = dimIndex(cube, a.get<string>('dimension'));
    // A UDF gets the whole cube and must answer it without the dimension.
    const udf = udfChild(cb, 'data', a.get('context'));
    if (udf) return runUdfChild(udf, ctx, 'reduce', cube, cube.dims[d].name);
    const forest = forestChild(cb, 'data', a.get('context'));
    if (forest) return forestAlong(cube, d, forest, true, 'reduce_dimension', ctx.run?.engine.kernelHelpers);
    const { data, rest } = cube.outermost(d);
    const out = await reduceVectors(cb, slicesOf(data, cube.shape[d], rest), cube.dims[d].labels, rest, a.get('context'), 'reduce_dimension');
    return withoutDimension(cube, d, out);
  }),
  implement('apply_dimension', async (a, ctx) => {
    const cube = await cubeOf(a.get('data'), ctx.run, 'apply_dimension');
    const cb = requireCallback(a.callback('process'), 'apply_dimension', 'process');
    const d = dimIndex(cube, a.get<string>('dimension'));
    const target = a.get<string | null>('target_dimension');
    const e = target === null ? -1 : cube.index(target);
    if (e >= 0 && e !== d) return intoExisting(cube, d, e, cb, a.get('context'));
    const udf = udfChild(cb, 'data', a.get('context'));
    if (udf) return retarget(await runUdfChild(udf, ctx, 'apply_dimension', cube, cube.dims[d].name), cube.dims[d].name, target);
    const forest = forestChild(cb, 'data', a.get('context'));
    if (forest) return retarget(forestAlong(cube, d, forest, false, 'apply_dimension', ctx.run?.engine.kernelHelpers), cube.dims[d].name, target);
    const { data, rest } = cube.outermost(d);
    const n = cube.shape[d];
    const v = await cb({ data: new PixelArray(slicesOf(data, n, rest), cube.dims[d].labels, rest), context: a.get('context') });
    const b = broadcast(v, rest, 'apply_dimension');
    const items = b instanceof PixelArray ? b.items : [b];
    if (items.length === 0) throw new ProcessException('DimensionNotAvailable', 'the child process answered an empty array');
    const source = cube.dims[d];
    const keep = (target === null || target === source.name) && items.length === n;
    const labels = keep ? source.labels : items.map((_, i) => i);
    const joined = joinSlices(items, rest);
    if (target === null || target === source.name) {
      const dims: Dimension[] = cube.dims.map((x, i) => (i === d ? { ...x, labels } : x));
      const shape = dims.map((x) => x.labels.length);
      return cube.with({ dims, data: DataCube.fromOutermost(joined, shape, d) });
    }
    // The source dimension goes, the target takes its place in the order.
    const dims: Dimension[] = cube.dims.map((x, i) => (i === d ? { name: target, type: 'other', labels } : x));
    const shape = dims.map((x) => x.labels.length);
    return cube.with({ dims, data: DataCube.fromOutermost(joined, shape, d), grid: source.type === 'spatial' ? null : cube.grid });
  }),
  implement('ndvi', async (a, ctx) => {
    const cube = await cubeOf(a.get('data'), ctx.run, 'ndvi');
    const bandDims = cube.dims.map((x, i) => [x, i] as const).filter(([x]) => x.type === 'bands');
    if (bandDims.length !== 1) throw new ProcessException('DimensionAmbiguous', 'the data cube needs exactly one dimension of type bands');
    const [dim, d] = bandDims[0];
    const find = (want: string, code: 'NirBandAmbiguous' | 'RedBandAmbiguous') => {
      let k = dim.labels.indexOf(want);
      if (k < 0) {
        const byCommon = dim.labels.map((l, i) => [l, i] as const).filter(([l]) => cube.bandInfo[String(l)]?.common_name === want);
        if (byCommon.length === 1) k = byCommon[0][1];
      }
      if (k < 0) throw new ProcessException(code, `no single band '${want}' in the cube (bands: ${dim.labels.join(', ')})`);
      return k;
    };
    const nir = find(a.get<string>('nir'), 'NirBandAmbiguous');
    const red = find(a.get<string>('red'), 'RedBandAmbiguous');
    const { data, rest } = cube.outermost(d);
    const N = data.subarray(nir * rest, (nir + 1) * rest);
    const R = data.subarray(red * rest, (red + 1) * rest);
    const mode = ctx.run?.kernels ?? 'auto';
    let out: Float32Array;
    if (mode === 'off') {
      out = new Float32Array(rest);
      for (let i = 0; i < rest; i++) out[i] = (N[i] - R[i]) / (N[i] + R[i]);
    } else out = runProgram(NDVI, [N, R], rest, { tier: mode, tier1: ctx.run?.engine.tier1, helpers: ctx.run?.engine.kernelHelpers });
    const target = a.get<string | null>('target_band');
    if (target === null) return withoutDimension(cube, d, out);
    if (dim.labels.includes(target)) throw new ProcessException('BandExists', `the cube has a band '${target}' already`);
    const joined = new Float32Array(data.length + rest);
    joined.set(data);
    joined.set(out, data.length);
    const dims = cube.dims.map((x, i) => (i === d ? { ...x, labels: [...x.labels, target] } : x));
    return cube.with({
      dims,
      data: DataCube.fromOutermost(
        joined,
        dims.map((x) => x.labels.length),
        d,
      ),
    });
  }),
];
