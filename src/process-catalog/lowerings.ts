// How processes compile into the kernels' pixel programs, as data: per process id, the instruction
// it becomes and which of its arguments feed it. src/compile/fuse.ts reads nothing else about a
// process; the instructions (`op`) and their exact semantics are those of src/compile/program.ts
// (tier 0 runs them in kernels/vm.ts, tier 1 generates code from them in src/compile/codegen.ts).
// A node without a lowering fuses only when it does not depend on the pixels: it is then computed
// once, on plain values, by its scalar implementation (so e, pi and nan need no lowering), and
// becomes a constant. Any other node without one leaves its child graph to the JS engine.
//
// Every argument of a fused node must be named by its lowering: as an operand, an immediate, a
// fixed value or an ignored argument; any other argument leaves the graph to the JS engine, which
// has the full semantics. An operand or immediate the definition marks optional may be left out:
// its default from the definition is used. test/process-catalog.test.ts checks every lowering
// against the definitions, the instruction set and the differential tests of the kernels.

/** Arguments a lowering tolerates besides its operands. */
export interface Tolerated {
  /** Arguments that fuse only when left out or given literally as this value (e.g. `ignore_nodata: true`). */
  fixed?: Record<string, unknown>;
  /** Arguments whose values do not change the pixels (e.g. `context`). */
  ignored?: string[];
}

/** One instruction over the pixel values of `operands` (argument names, in the instruction's order). */
export interface OpLowering extends Tolerated {
  kind: 'op';
  op: string;
  operands: string[];
  /** Operands that may be booleans (true 1, false 0), as for the logical processes. */
  booleans?: true;
  /** Fields of the instruction that are numbers fixed for the whole program, by the argument giving each. */
  immediates?: Record<string, string>;
  /** Another instruction, over the remaining operands, when an argument is given literally as `equals`. */
  literal?: { argument: string; equals: number; op: string }[];
}

/** A reducer instruction over every element of the array argument `array`. */
export interface ReduceLowering extends Tolerated {
  kind: 'reduce';
  op: string;
  array: string;
}

/** A constant; the operands, if any, must fuse but do not change it. */
export interface ConstLowering extends Tolerated {
  kind: 'const';
  value: number;
  operands?: string[];
}

/** The value of one argument, unchanged. */
export interface PassLowering extends Tolerated {
  kind: 'pass';
  operand: string;
}

/**
 * One element of the array argument `array`, picked by `index` or `label` (exactly one given, as
 * literals); out of range it is no-data if `nodata` is literally true, else the graph is not fused.
 */
export interface ElementLowering extends Tolerated {
  kind: 'element';
  array: string;
  index: string;
  label: string;
  nodata: string;
}

export type Lowering = OpLowering | ReduceLowering | ConstLowering | PassLowering | ElementLowering;

/** The arguments a lowering reads (fixed and ignored ones aside). */
export function argumentsOf(l: Lowering): string[] {
  switch (l.kind) {
    case 'op':
      return [...l.operands, ...Object.values(l.immediates ?? {})];
    case 'reduce':
      return [l.array];
    case 'const':
      return l.operands ?? [];
    case 'pass':
      return [l.operand];
    case 'element':
      return [l.array, l.index, l.label, l.nodata];
  }
}

const unary = (op: string, more: Partial<OpLowering> = {}): OpLowering => ({ kind: 'op', op, operands: ['x'], ...more });
const binary = (op: string, more: Partial<OpLowering> = {}): OpLowering => ({ kind: 'op', op, operands: ['x', 'y'], ...more });
/** The reducers fuse with their default: no-data skipped. */
const reducer = (op: string): ReduceLowering => ({ kind: 'reduce', op, array: 'data', fixed: { ignore_nodata: true } });

export const LOWERINGS: Record<string, Lowering> = {
  // math
  absolute: unary('abs'),
  sqrt: unary('sqrt'),
  exp: { kind: 'op', op: 'exp', operands: ['p'] },
  ln: unary('ln'),
  log: {
    kind: 'op',
    op: 'log',
    operands: ['x', 'base'],
    literal: [
      { argument: 'base', equals: 10, op: 'log10' },
      { argument: 'base', equals: 2, op: 'log2' },
    ],
  },
  sin: unary('sin'),
  cos: unary('cos'),
  tan: unary('tan'),
  arcsin: unary('asin'),
  arccos: unary('acos'),
  arctan: unary('atan'),
  sinh: unary('sinh'),
  cosh: unary('cosh'),
  tanh: unary('tanh'),
  arsinh: unary('asinh'),
  arcosh: unary('acosh'),
  artanh: unary('atanh'),
  floor: unary('floor'),
  ceil: unary('ceil'),
  int: unary('trunc'),
  // only to whole numbers: round to decimals stays in the JS engine
  round: unary('round', { fixed: { p: 0 } }),
  sgn: unary('sgn'),
  add: binary('add'),
  subtract: binary('sub'),
  multiply: binary('mul'),
  divide: binary('div'),
  power: { kind: 'op', op: 'pow', operands: ['base', 'p'] },
  mod: binary('mod'),
  arctan2: { kind: 'op', op: 'atan2', operands: ['y', 'x'] },
  normalized_difference: binary('normdiff'),
  clip: { kind: 'op', op: 'clip', operands: ['x'], immediates: { min: 'min', max: 'max' } },
  linear_scale_range: { kind: 'op', op: 'linscale', operands: ['x'], immediates: { inMin: 'inputMin', inMax: 'inputMax', outMin: 'outputMin', outMax: 'outputMax' } },
  constant: { kind: 'pass', operand: 'x' },
  // comparisons (on numbers: delta and case do not apply)
  gt: binary('gt'),
  gte: binary('gte'),
  lt: binary('lt'),
  lte: binary('lte'),
  eq: binary('eq', { fixed: { delta: null }, ignored: ['case_sensitive'] }),
  neq: binary('neq', { fixed: { delta: null }, ignored: ['case_sensitive'] }),
  // logic
  and: binary('and', { booleans: true }),
  or: binary('or', { booleans: true }),
  xor: binary('xor', { booleans: true }),
  not: unary('not', { booleans: true }),
  if: { kind: 'op', op: 'if', operands: ['value', 'accept', 'reject'], booleans: true },
  is_nodata: unary('isnodata', { booleans: true }),
  is_valid: unary('isvalid', { booleans: true }),
  is_infinite: unary('isinf', { booleans: true }),
  // Inside a cube NaN is no-data, which is_nan does not count as NaN.
  is_nan: { kind: 'const', value: 0, operands: ['x'] },
  // arrays and reducers
  array_element: { kind: 'element', array: 'data', index: 'index', label: 'label', nodata: 'return_nodata' },
  mean: reducer('mean'),
  sum: reducer('sum'),
  product: reducer('product'),
  min: reducer('min'),
  max: reducer('max'),
  median: reducer('median'),
  sd: reducer('sd'),
  variance: reducer('variance'),
  count: { kind: 'reduce', op: 'count', array: 'data', fixed: { condition: null }, ignored: ['context'] },
  first: reducer('first'),
  last: reducer('last'),
};
