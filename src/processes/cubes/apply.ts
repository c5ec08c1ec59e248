// Child processes over cubes: apply (per value), reduce_dimension and apply_dimension (along a
// dimension), and ndvi. The child process runs once per cube on pixel vectors (see datacube/pixels.ts).
import { define } from '../define.js';
import { type ProcessDef } from '../../core/process.js';
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
  const data = DataCube.fromOutermost(joinSlices(answers, rest), dims.map((x) => x.labels.length), at);
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

/** ndvi's computation as a kernel program: (nir - red) / (nir + red). */
const NDVI: Program = { inputs: 2, code: [{ op: 'normdiff', a: 0, b: 1 }], output: 2 };

export const processes: ProcessDef[] = [
  define(
    'apply',
    {
      summary: 'Run a process on every value',
      description: 'Runs the child process once for each value of the data cube and puts its answer in place of the value. Dimensions, labels and no-data positions are kept unless the child process answers a value for no-data.',
      parameters: {
        data: 'The data cube to work on.',
        process: 'The child process: it gets one value `x` (and `context`) and answers one value.',
        context: 'Any data handed to the child process as its `context` parameter.',
      },
      returns: 'A data cube of the same shape with the computed values.',
    },
    async (a, ctx) => {
      const cube = await cubeOf(a.get('data'), ctx.run, 'apply');
      const cb = requireCallback(a.callback('process'), 'apply', 'process');
      // A UDF gets the whole cube and must answer one of the same shape.
      const udf = udfChild(cb, 'x', a.get('context'));
      if (udf) return runUdfChild(udf, ctx, 'apply', cube);
      const out = await applyVector(cb, cube.data, a.get('context'), 'apply');
      return cube.with({ data: out === cube.data ? out.slice() : out });
    },
  ),
  define(
    'reduce_dimension',
    {
      summary: 'Collapse a dimension into one value',
      description: 'Runs the reducer on the array of values along the dimension, for every position of the other dimensions, and drops the dimension. The reducer sees the dimension labels as array labels.',
      parameters: {
        data: 'The data cube to reduce.',
        reducer: 'The child process: it gets the array `data` (and `context`) and answers one value.',
        dimension: 'The name of the dimension to collapse; DimensionNotAvailable if the cube has none of that name.',
        context: 'Any data handed to the reducer as its `context` parameter.',
      },
      returns: 'A data cube with one dimension less.',
      exceptions: { DimensionNotAvailable: 'The data cube has no dimension of that name.' },
    },
    async (a, ctx) => {
      const cube = await cubeOf(a.get('data'), ctx.run, 'reduce_dimension');
      const cb = requireCallback(a.callback('reducer'), 'reduce_dimension', 'reducer');
      const d = dimIndex(cube, a.get<string>('dimension'));
      // A UDF gets the whole cube and must answer it without the dimension.
      const udf = udfChild(cb, 'data', a.get('context'));
      if (udf) return runUdfChild(udf, ctx, 'reduce', cube, cube.dims[d].name);
      const { data, rest } = cube.outermost(d);
      const out = await reduceVectors(cb, slicesOf(data, cube.shape[d], rest), cube.dims[d].labels, rest, a.get('context'), 'reduce_dimension');
      return withoutDimension(cube, d, out);
    },
  ),
  define(
    'apply_dimension',
    {
      summary: 'Run a process on the values along a dimension',
      description:
        'Runs the child process on the array of values along the dimension, for every position of the other dimensions, and writes the answered arrays back along that dimension, or along `target_dimension`. Labels are kept when the dimension stays and the count of values does not change; otherwise they become 0, 1, 2, ...',
      parameters: {
        data: 'The data cube to work on.',
        process: 'The child process: it gets the array `data` (and `context`) and answers an array of at least one value.',
        dimension: 'The name of the source dimension; DimensionNotAvailable if the cube has none of that name.',
        target_dimension:
          'The name of the dimension for the answers; null keeps the source dimension. Otherwise the source dimension is dropped. A new name gives a dimension of type `other` in its place. The name of another dimension of the cube (e.g. `bands` when applying along `t`) runs the child process once per label of that dimension and writes the answers of all its labels, in order, as its values: it keeps its labels when each label answered one value, else they become 0, 1, 2, ...',
        context: 'Any data handed to the child process as its `context` parameter.',
      },
      returns: 'A data cube with the computed values along the target dimension.',
      exceptions: { DimensionNotAvailable: 'The data cube has no dimension of that name.' },
    },
    async (a, ctx) => {
      const cube = await cubeOf(a.get('data'), ctx.run, 'apply_dimension');
      const cb = requireCallback(a.callback('process'), 'apply_dimension', 'process');
      const d = dimIndex(cube, a.get<string>('dimension'));
      const target = a.get<string | null>('target_dimension');
      const e = target === null ? -1 : cube.index(target);
      if (e >= 0 && e !== d) return intoExisting(cube, d, e, cb, a.get('context'));
      const udf = udfChild(cb, 'data', a.get('context'));
      if (udf) return retarget(await runUdfChild(udf, ctx, 'apply_dimension', cube, cube.dims[d].name), cube.dims[d].name, target);
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
    },
  ),
  define(
    'ndvi',
    {
      summary: 'Normalized difference vegetation index',
      description:
        'Computes (nir - red) / (nir + red) for every pixel, taking the bands from the `bands` dimension by name or by the common names `nir` and `red`. Drops the bands dimension, or with `target_band` appends the index as a new band.',
      parameters: {
        data: 'A raster data cube with a `bands` dimension holding a near-infrared and a red band.',
        nir: 'The near-infrared band, by name or common name; the band with common name `nir` by default.',
        red: 'The red band, by name or common name; the band with common name `red` by default.',
        target_band: 'If given, the name of a new band that receives the index; the bands dimension is kept then.',
      },
      returns: 'The NDVI cube: without the bands dimension, or with the index appended as a band.',
      exceptions: {
        NirBandAmbiguous: 'No single near-infrared band can be found; name it in `nir`.',
        RedBandAmbiguous: 'No single red band can be found; name it in `red`.',
        DimensionAmbiguous: 'The data cube has no single dimension of type bands.',
        BandExists: 'A band with the target name exists already.',
      },
    },
    async (a, ctx) => {
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
      return cube.with({ dims, data: DataCube.fromOutermost(joined, dims.map((x) => x.labels.length), d) });
    },
  ),
];
