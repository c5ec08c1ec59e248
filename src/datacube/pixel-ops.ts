// Vector forms of the processes that dominate pixel-wise child graphs: picking a band or date out
// of the array along a dimension (a view, no copy) and the four arithmetic operators as plain
// typed-array loops. Each answers undefined when its arguments are not the case it handles; the
// evaluator then lifts the scalar form. NaN propagates as the scalar forms propagate null.
import { PixelArray } from './pixels.js';
import { ApiError, ProcessException } from '../core/errors.js';
import { type Labels } from '../core/labels.js';

type PixelOp = (a: Record<string, unknown>, pixels: number) => Float32Array | PixelArray | undefined;

const num = (v: unknown): v is number => typeof v === 'number';
const operand = (v: unknown) => v instanceof Float32Array || num(v) || v === null;

function binary(f: (x: number, y: number) => number): PixelOp {
  return (a, pixels) => {
    const x = a.x;
    const y = a.y;
    if (!operand(x) || !operand(y)) return undefined;
    const out = new Float32Array(pixels);
    if (x instanceof Float32Array && y instanceof Float32Array) for (let i = 0; i < pixels; i++) out[i] = f(x[i], y[i]);
    else if (x instanceof Float32Array) {
      const c = y === null ? NaN : Math.fround(y as number);
      for (let i = 0; i < pixels; i++) out[i] = f(x[i], c);
    } else if (y instanceof Float32Array) {
      const c = x === null ? NaN : Math.fround(x);
      for (let i = 0; i < pixels; i++) out[i] = f(c, y[i]);
    } else return undefined;
    return out;
  };
}

function findLabel(labels: Labels | null, label: unknown): number {
  if (!labels) return -1;
  for (let i = 0; i < labels.length; i++) if (labels[i] === label) return i;
  return -1;
}

const arrayElement: PixelOp = (a, pixels) => {
  const data = a.data;
  if (!(data instanceof PixelArray)) return undefined;
  const hasIndex = a.index !== null && a.index !== undefined;
  const hasLabel = a.label !== null && a.label !== undefined;
  if (hasIndex === hasLabel) return undefined; // the scalar form raises the right exception
  if (hasLabel && !data.labels) return undefined;
  const k = hasIndex ? (a.index as number) : findLabel(data.labels, a.label);
  if (k >= 0 && k < data.items.length) return data.items[k];
  if (a.return_nodata === true) return new Float32Array(pixels).fill(NaN);
  throw new ProcessException('ArrayElementNotAvailable', `the array has no element ${hasIndex ? `at index ${k}` : `labeled '${String(a.label)}'`}`);
};

/** count without a child process: valid values (condition null) or all values (true). */
const count: PixelOp = (a, pixels) => {
  const data = a.data;
  if (!(data instanceof PixelArray) || (a.condition !== null && a.condition !== true)) return undefined;
  const out = new Float32Array(pixels);
  if (a.condition === true) return out.fill(data.items.length);
  for (const item of data.items) for (let i = 0; i < pixels; i++) if (item[i] === item[i]) out[i]++;
  return out;
};

const OPS: Record<string, PixelOp> = {
  count,
  // a pass-through: a vector stays the same vector
  constant: (a) => (a.x instanceof Float32Array || a.x instanceof PixelArray ? a.x : undefined),
  // inside a child process on pixels: passes the data on without a log entry per pixel
  inspect: (a) => (a.data instanceof Float32Array || a.data instanceof PixelArray ? a.data : undefined),
  add: binary((x, y) => x + y),
  subtract: binary((x, y) => x - y),
  multiply: binary((x, y) => x * y),
  divide: binary((x, y) => x / y),
  array_element: arrayElement,
  // A UDF is never run once per pixel: only alone in the child process, on the parent's data,
  // does it get the parent's cube (processes/udf.ts).
  run_udf: () => {
    throw new ApiError('ProcessParameterInvalid', {
      process: 'run_udf',
      parameter: 'data',
      reason: "inside apply, reduce_dimension, apply_dimension or apply_neighborhood, run_udf must be the only process of the child process and take the parent's data parameter (x or data) as its data",
    });
  },
};

export function pixelOp(id: string): PixelOp | undefined {
  return OPS[id];
}
