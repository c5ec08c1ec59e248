// Child processes of cube processes (apply, reduce_dimension, apply_dimension, ...) run once per
// cube, not once per pixel: their parameters are bound to *pixel vectors*, one value per pixel.
//   - a Float32Array of P values stands for a number per pixel (NaN = no-data);
//   - a PixelArray stands for a labeled array per pixel (the values along a dimension).
// A process with a synchronous scalar form is lifted over the pixels by a plain loop; picking an
// element of a PixelArray by index or label is a view, no copy. This is the JS execution path of
// pixel-wise graphs; the scalar forms remain the semantics.
import { ApiError } from '../core/errors.js';
import { withLabels, type Labels } from '../core/labels.js';

export class PixelArray {
  constructor(
    /** One vector per array element, each with one value per pixel. */
    readonly items: Float32Array[],
    readonly labels: Labels | null,
    /** Number of pixels. */
    readonly pixels: number,
  ) {}
}

/** Pixel count of the first pixel value among `values`, or -1 if there is none. */
export function pixelCount(values: Iterable<unknown>): number {
  for (const v of values) {
    if (v instanceof Float32Array) return v.length;
    if (v instanceof PixelArray) return v.pixels;
    if (Array.isArray(v)) {
      const n = pixelCount(v);
      if (n >= 0) return n;
    }
  }
  return -1;
}

const toPlain = (x: number): number | null => (x !== x ? null : x);

function fromPlain(v: unknown, processId: string): number {
  if (v === null || v === undefined) return NaN;
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  throw new ApiError('ProcessParameterInvalid', {
    process: processId,
    parameter: 'return value',
    reason: `a data cube holds numbers, but the process returns ${Array.isArray(v) ? 'an array' : typeof v}`,
  });
}

type Getter = (i: number) => unknown;

/** How to read argument `v` for pixel i: vectors per pixel, arrays gathered, plain values as they are. */
function getterOf(v: unknown): Getter {
  if (v instanceof Float32Array) return (i) => toPlain(v[i]);
  if (v instanceof PixelArray) {
    // One JS array reused for every pixel: scalar processes do not keep their inputs.
    const buf = withLabels(new Array<number | null>(v.items.length), v.labels);
    const items = v.items;
    return (i) => {
      for (let k = 0; k < items.length; k++) buf[k] = toPlain(items[k][i]);
      return buf;
    };
  }
  if (Array.isArray(v) && pixelCount(v) >= 0) {
    // an array literal mixing pixel vectors and constants, e.g. [x, 0]
    const parts = v.map(getterOf);
    const buf = new Array<unknown>(v.length);
    return (i) => {
      for (let k = 0; k < parts.length; k++) buf[k] = parts[k](i);
      return buf;
    };
  }
  // A plain number among pixels is a cube value too: float32, NaN as no-data (as the kernels see it).
  if (typeof v === 'number') {
    const c = v !== v ? null : Math.fround(v);
    return () => c;
  }
  return () => v;
}

/** Runs a synchronous scalar process once per pixel. */
export function liftScalar(processId: string, fn: (a: Record<string, unknown>) => unknown, values: Record<string, unknown>, pixels: number): Float32Array | PixelArray {
  const names = Object.keys(values);
  const getters = names.map((n) => getterOf(values[n]));
  const args: Record<string, unknown> = { ...values };
  return collect(
    processId,
    (i) => {
      for (let k = 0; k < names.length; k++) args[names[k]] = getters[k](i);
      return fn(args);
    },
    pixels,
  );
}

/**
 * Gathers the answers for pixels 0..P-1 into a pixel value. The first pixel's answer decides the
 * shape: a number (boolean, null) per pixel gives a vector, an array per pixel a PixelArray.
 */
export function collect(processId: string, at: (i: number) => unknown, pixels: number): Float32Array | PixelArray {
  if (pixels === 0) return new Float32Array(0);
  const first = at(0);
  if (!Array.isArray(first)) {
    const out = new Float32Array(pixels);
    out[0] = fromPlain(first, processId);
    // Numbers are the common case; anything else goes through fromPlain.
    for (let i = 1; i < pixels; i++) {
      const r = at(i);
      out[i] = typeof r === 'number' ? r : fromPlain(r, processId);
    }
    return out;
  }
  const m = first.length;
  const items = Array.from({ length: m }, () => new Float32Array(pixels));
  const labels = (first as { labels?: Labels }).labels ?? null;
  const put = (r: unknown, i: number) => {
    if (!Array.isArray(r) || r.length !== m) {
      throw new ApiError('ProcessParameterInvalid', {
        process: processId,
        parameter: 'return value',
        reason: `arrays of different lengths for different pixels (${m} and ${Array.isArray(r) ? r.length : 'not an array'})`,
      });
    }
    for (let k = 0; k < m; k++) items[k][i] = fromPlain(r[k], processId);
  };
  put(first, 0);
  for (let i = 1; i < pixels; i++) put(at(i), i);
  return new PixelArray(items, labels ? [...labels] : null, pixels);
}

/** The plain value of pixel i of a value (for processes that cannot be lifted synchronously). */
export function plainAt(v: unknown, i: number): unknown {
  if (v instanceof Float32Array) return toPlain(v[i]);
  if (v instanceof PixelArray)
    return withLabels(
      v.items.map((x) => toPlain(x[i])),
      v.labels ? [...v.labels] : null,
    );
  if (Array.isArray(v) && pixelCount(v) >= 0) return v.map((x) => plainAt(x, i));
  return v;
}

/** Broadcasts a plain value (the answer of a child graph without pixel inputs) to P pixels. */
export function broadcast(v: unknown, pixels: number, processId: string): Float32Array | PixelArray {
  if (v instanceof Float32Array || v instanceof PixelArray) return v;
  if (Array.isArray(v)) {
    return new PixelArray(
      v.map((x) => new Float32Array(pixels).fill(fromPlain(x, processId))),
      (v as { labels?: Labels }).labels ?? null,
      pixels,
    );
  }
  return new Float32Array(pixels).fill(fromPlain(v, processId));
}
