// Shared pieces of the cube processes: finding dimensions, running child processes over pixel
// vectors, and the exceptions the definitions name.
import { ApiError } from '../../core/errors.js';
import { DataCube } from '../../datacube/datacube.js';
import { PixelArray, broadcast } from '../../datacube/pixels.js';
import { type Callback } from '../../core/process.js';
import { ProcessException } from '../../core/errors.js';
import { type Labels } from '../../core/labels.js';
import { runFused } from '../../compile/child-kernel.js';

/** The position of a dimension, or the definition's DimensionNotAvailable exception. */
export function dimIndex(cube: DataCube, name: string): number {
  const d = cube.index(name);
  if (d < 0) throw new ProcessException('DimensionNotAvailable', `the data cube has no dimension '${name}' (it has ${cube.dims.map((x) => x.name).join(', ') || 'none'})`);
  return d;
}

/** The child process given for a parameter, or ProcessParameterInvalid. */
export function requireCallback(cb: Callback | null, processId: string, parameter: string): Callback {
  if (!cb) throw new ApiError('ProcessParameterInvalid', { process: processId, parameter, reason: 'a child process ({"process_graph": ...}) is expected' });
  return cb;
}

/**
 * Runs a reducer child process (parameters `data` and `context`) on the arrays along a dimension:
 * `items[k]` holds element k of every pixel's array. Answers one value per pixel.
 */
export async function reduceVectors(cb: Callback, items: Float32Array[], labels: Labels | null, pixels: number, context: unknown, processId: string): Promise<Float32Array> {
  const fast = runFused(cb, { kind: 'array', param: 'data', labels: labels ?? items.map((_, i) => i) }, items, pixels, context);
  if (fast) return fast;
  const v = await cb({ data: new PixelArray(items, labels, pixels), context });
  const out = broadcast(v, pixels, processId);
  if (out instanceof PixelArray) {
    throw new ApiError('ProcessParameterInvalid', { process: processId, parameter: 'reducer', reason: 'the reducer must answer a single value, not an array' });
  }
  return out;
}

/** Runs a unary child process (`x`, `context`) on every value of a vector. */
export async function applyVector(cb: Callback, values: Float32Array, context: unknown, processId: string, extra: Record<string, unknown> = {}): Promise<Float32Array> {
  if (Object.keys(extra).length === 0) {
    const fast = runFused(cb, { kind: 'value', param: 'x' }, [values], values.length, context);
    if (fast) return fast;
  }
  const v = await cb({ x: values, context, ...extra });
  const out = broadcast(v, values.length, processId);
  if (out instanceof PixelArray) throw new ApiError('ProcessParameterInvalid', { process: processId, parameter: 'process', reason: 'the child process must answer a single value per pixel' });
  return out;
}

/** Splits data laid out with a dimension outermost into one vector per label (views, no copy). */
export function slicesOf(data: Float32Array, n: number, rest: number): Float32Array[] {
  return Array.from({ length: n }, (_, i) => data.subarray(i * rest, (i + 1) * rest));
}

/** Joins vectors into one array (the inverse of slicesOf). */
export function joinSlices(items: Float32Array[], rest: number): Float32Array {
  const out = new Float32Array(items.length * rest);
  items.forEach((x, i) => out.set(x, i * rest));
  return out;
}
