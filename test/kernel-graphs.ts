// Random pixel-wise child graphs and inputs for the differential tests of the kernels: openEO
// process graphs (as a user would write them) built from every fusable process, over inputs full of
// the values that break arithmetic (NaN, ±Inf, ±0, extremes, halves). Deterministic per seed.

import { Rng } from './rng.js';

export const SPECIAL = [NaN, Infinity, -Infinity, 0, -0, 1, -1, 0.5, -0.5, 1.5, 2.5, -2.5, 1e38, -1e38, 1e-45, 3.4028234663852886e38, 100, 0.1] as const;

/** n float32 values: a mix of special values, small integers and ordinary reals. */
export function inputValues(rng: Rng, n: number): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const k = rng.next();
    a[i] = k < 0.25 ? rng.pick(SPECIAL) : k < 0.45 ? rng.int(11) - 5 : (rng.next() - 0.5) * 2 * 10 ** (rng.int(7) - 2);
  }
  return a;
}

const UNARY = [
  'absolute',
  'sqrt',
  'exp',
  'ln',
  'sin',
  'cos',
  'tan',
  'arcsin',
  'arccos',
  'arctan',
  'sinh',
  'cosh',
  'tanh',
  'arsinh',
  'arcosh',
  'artanh',
  'floor',
  'ceil',
  'int',
  'round',
  'sgn',
  'not',
  'is_nodata',
  'is_valid',
  'is_infinite',
  'is_nan',
  'constant',
];
/** The parameter of each unary process: x, except where the definition names it otherwise. */
const UNARY_PARAMETER: Record<string, string> = { exp: 'p' };
const BINARY: [string, string, string][] = [
  ['add', 'x', 'y'],
  ['subtract', 'x', 'y'],
  ['multiply', 'x', 'y'],
  ['divide', 'x', 'y'],
  ['power', 'base', 'p'],
  ['mod', 'x', 'y'],
  ['arctan2', 'y', 'x'],
  ['normalized_difference', 'x', 'y'],
  ['gt', 'x', 'y'],
  ['gte', 'x', 'y'],
  ['lt', 'x', 'y'],
  ['lte', 'x', 'y'],
  ['eq', 'x', 'y'],
  ['neq', 'x', 'y'],
  ['and', 'x', 'y'],
  ['or', 'x', 'y'],
  ['xor', 'x', 'y'],
  ['log', 'x', 'base'],
];
const REDUCERS = ['mean', 'sum', 'product', 'min', 'max', 'median', 'sd', 'variance', 'count', 'first', 'last'];

export type Shape = { kind: 'value' } | { kind: 'array'; n: number };

/** A random child graph of the given shape (apply: parameter x; reducer: parameter data of n elements). */
export function randomChild(rng: Rng, shape: Shape, maxDepth = 4): Record<string, any> {
  const graph: Record<string, any> = {};
  let next = 0;
  const add = (process_id: string, args: Record<string, unknown>) => {
    const id = `n${next++}`;
    graph[id] = { process_id, arguments: args };
    return { from_node: id };
  };
  const leaf = (): unknown => {
    const k = rng.next();
    if (k < 0.2) return rng.pick(SPECIAL.filter((v) => Number.isFinite(v)));
    if (shape.kind === 'value') return { from_parameter: 'x' };
    if (k < 0.35) return add(rng.pick(REDUCERS), { data: { from_parameter: 'data' } });
    return add('array_element', rng.next() < 0.5 ? { data: { from_parameter: 'data' }, index: rng.int(shape.n) } : { data: { from_parameter: 'data' }, label: `L${rng.int(shape.n)}` });
  };
  const expr = (depth: number): unknown => {
    if (depth >= maxDepth || rng.next() < 0.25) return leaf();
    const k = rng.next();
    if (k < 0.35) {
      const id = rng.pick(UNARY);
      return add(id, { [UNARY_PARAMETER[id] ?? 'x']: expr(depth + 1) });
    }
    if (k < 0.8) {
      const [id, a, b] = rng.pick(BINARY);
      return add(id, { [a]: expr(depth + 1), [b]: expr(depth + 1) });
    }
    if (k < 0.87) {
      const lo = rng.int(21) - 10;
      return add('clip', { x: expr(depth + 1), min: lo, max: lo + rng.int(20) });
    }
    if (k < 0.93) return add('linear_scale_range', { x: expr(depth + 1), inputMin: rng.int(5) - 2, inputMax: rng.int(50) - 10, outputMin: 0, outputMax: 255 });
    return add('if', rng.next() < 0.5 ? { value: expr(depth + 1), accept: expr(depth + 1) } : { value: expr(depth + 1), accept: expr(depth + 1), reject: expr(depth + 1) });
  };
  const out = expr(0);
  if (out && typeof out === 'object' && 'from_node' in out) graph[(out as { from_node: string }).from_node].result = true;
  else graph[`n${next}`] = { process_id: 'constant', arguments: { x: out }, result: true };
  return graph;
}
