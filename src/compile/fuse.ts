// Fusion: a pixel-wise child process (of apply, reduce_dimension, aggregate_temporal, ...) becomes
// one Program for the kernels, or null when any part of it cannot be fused (then the JS engine runs
// it). Fusable: the math, comparison and logic processes on numbers, array_element on the array
// along the dimension, the reducers with their default `ignore_nodata`, constants and parameters
// whose values are numbers. Anything else (texts, child processes of its own, user processes,
// arguments that would raise an exception) is left to the JS engine, which has the full semantics.
import type { Instr, Program, ReduceOp, UnaryOp, BinaryOp } from './program.js';
import type { ProcessDef } from '../core/process.js';

import { isObject, walkReferences, type Graph } from '../core/graph.js';

/** How the child is called: `x` per pixel (apply), or `data` = the array along a dimension. */
export type ChildShape = { kind: 'value'; param: string } | { kind: 'array'; param: string; labels: (string | number)[] };

export interface FuseEnv {
  /** The value of a parameter from an enclosing scope (context, outer parameters); undefined if unknown. */
  outer(name: string): unknown;
  /** Whether a user-defined process of this id would be called instead of the predefined one. */
  shadowed(processId: string): boolean;
  /** The predefined processes, to fold parts that do not depend on pixels the way the engine does. */
  predefined(processId: string): ProcessDef | undefined;
}

export interface Fused {
  program: Program;
  /** Input j of the program is element slices[j] of the array (or the value itself, [0]). */
  slices: number[];
}

class NotFusable extends Error {}
const fail = (why: string): never => {
  throw new NotFusable(why);
};

const UNARY_PROCESSES: Record<string, UnaryOp> = {
  absolute: 'abs', sqrt: 'sqrt', exp: 'exp', ln: 'ln', sin: 'sin', cos: 'cos', tan: 'tan', arcsin: 'asin', arccos: 'acos',
  arctan: 'atan', sinh: 'sinh', cosh: 'cosh', tanh: 'tanh', arsinh: 'asinh', arcosh: 'acosh', artanh: 'atanh',
  floor: 'floor', ceil: 'ceil', int: 'trunc', sgn: 'sgn', not: 'not', is_nodata: 'isnodata', is_valid: 'isvalid', is_infinite: 'isinf',
};
const BINARY_PROCESSES: Record<string, [BinaryOp, string, string]> = {
  add: ['add', 'x', 'y'], subtract: ['sub', 'x', 'y'], multiply: ['mul', 'x', 'y'], divide: ['div', 'x', 'y'],
  power: ['pow', 'base', 'p'], mod: ['mod', 'x', 'y'], arctan2: ['atan2', 'y', 'x'], normalized_difference: ['normdiff', 'x', 'y'],
  gt: ['gt', 'x', 'y'], gte: ['gte', 'x', 'y'], lt: ['lt', 'x', 'y'], lte: ['lte', 'x', 'y'], eq: ['eq', 'x', 'y'], neq: ['neq', 'x', 'y'],
  and: ['and', 'x', 'y'], or: ['or', 'x', 'y'], xor: ['xor', 'x', 'y'],
};
const REDUCER_PROCESSES: Record<string, ReduceOp> = {
  mean: 'mean', sum: 'sum', product: 'product', min: 'min', max: 'max', median: 'median', sd: 'sd', variance: 'variance',
  count: 'count', first: 'first', last: 'last',
};
/** Arguments each fusable process may have beyond its operands, with the values that fuse. */
const ALLOWED_EXTRA: Record<string, Record<string, (v: unknown) => boolean>> = {
  eq: { delta: (v) => v === null, case_sensitive: () => true },
  neq: { delta: (v) => v === null, case_sensitive: () => true },
  count: { condition: (v) => v === null, context: () => true },
};
/** Processes that take booleans and numbers alike (0 false, other numbers true). */
const LOGICAL = new Set(['and', 'or', 'xor', 'not', 'is_nodata', 'is_valid', 'is_infinite']);

/** The Program of a child graph, or null (with the reason, for logs) when it does not fuse. */
export function fuseChild(graph: unknown, shape: ChildShape, env: FuseEnv): { fused: Fused | null; reason?: string } {
  try {
    return { fused: build(graph as Graph, shape, env) };
  } catch (e) {
    if (e instanceof NotFusable) return { fused: null, reason: e.message };
    throw e;
  }
}

const ARRAY = Symbol('the array parameter');

function build(graph: Graph, shape: ChildShape, env: FuseEnv): Fused {
  if (!isObject(graph)) fail('not a graph');
  const ids = Object.keys(graph);
  const resultId = ids.find((id) => graph[id]?.result === true) ?? fail('no result node');
  const code: Instr[] = [];
  const slices: number[] = [];
  const sliceRegister = new Map<number, number>();
  // Inputs are numbered first, but their count is known only at the end: collect with
  // placeholders (negative numbers) and renumber when done.
  const placeholder = (slice: number): number => {
    let r = sliceRegister.get(slice);
    if (r === undefined) {
      r = -1 - slices.length;
      slices.push(slice);
      sliceRegister.set(slice, r);
    }
    return r;
  };
  const consts = new Map<string, number>();
  const emit = (ins: Instr): number => {
    if (ins.op === 'const') {
      const key = Object.is(ins.value, -0) ? '-0' : String(ins.value);
      const have = consts.get(key);
      if (have !== undefined) return have;
      code.push(ins);
      consts.set(key, code.length - 1);
      return code.length - 1;
    }
    code.push(ins);
    return code.length - 1;
  };
  // Register numbers during the build: >= 0 instruction index, < 0 input placeholder.
  const memo = new Map<string, number>();
  const visiting = new Set<string>();
  const all = () => {
    if (shape.kind !== 'array') return fail('reducers need the array parameter');
    // the reducers of an empty array (count 0, the others no-data) are left to the engine
    if (shape.labels.length === 0) return fail('an empty array');
    return shape.labels.map((_, i) => placeholder(i));
  };


  // Parts of the graph that do not depend on the pixels are computed once, here, by the scalar
  // processes on plain values: exactly what the engine does with them (NaN stays a number there).
  const dependsMemo = new Map<string, boolean>();
  const depends = (v: unknown): boolean => {
    let d = false;
    walkReferences(v, {
      parameter: (name) => void (d ||= name === shape.param),
      node: (id) => void (d ||= dependsNode(id)),
      child: () => void (d = true),
    });
    return d;
  };
  const dependsNode = (id: string): boolean => {
    let d = dependsMemo.get(id);
    if (d === undefined) {
      dependsMemo.set(id, true); // a cycle counts as dependent (and fails later)
      d = depends(graph[id]?.arguments ?? {});
      dependsMemo.set(id, d);
    }
    return d;
  };
  const plainMemo = new Map<string, unknown>();
  const plain = (v: unknown, depth = 0): unknown => {
    if (depth > 100) fail('too deep');
    if (Array.isArray(v)) return v.map((x) => plain(x, depth + 1));
    if (!isObject(v)) return v;
    if (typeof v.from_parameter === 'string') {
      const o = env.outer(v.from_parameter);
      return o === undefined ? fail(`parameter '${v.from_parameter}' has no value`) : o;
    }
    if (typeof v.from_node === 'string') return plainNode(v.from_node);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x, depth + 1)]));
  };
  const plainNode = (id: string): unknown => {
    if (plainMemo.has(id)) return plainMemo.get(id);
    const n = graph[id] ?? fail(`no node ${id}`);
    if ((n.namespace ?? null) !== null && n.namespace !== 'backend') fail('a namespaced process');
    if ((n.namespace ?? null) === null && env.shadowed(n.process_id)) fail('a user-defined process');
    const def = env.predefined(n.process_id);
    if (!def?.scalar) fail(`process ${n.process_id} on constants`);
    const args: Record<string, unknown> = {};
    for (const p of def!.spec.parameters) {
      if (p.name in (n.arguments ?? {})) args[p.name] = plain(n.arguments[p.name]);
      else if (!p.optional) fail(`${n.process_id} without '${p.name}'`);
      else args[p.name] = 'default' in p ? p.default : null;
    }
    for (const k of Object.keys(n.arguments ?? {})) if (!def!.spec.parameters.some((p) => p.name === k)) fail(`argument '${k}' of ${n.process_id}`);
    let out: unknown;
    try {
      out = def!.scalar!(args);
    } catch {
      fail(`${n.process_id} raises an exception on these constants`);
    }
    plainMemo.set(id, out);
    return out;
  };
  /**
   * A plain value entering pixel computations: float32, NaN as no-data, booleans as 1/0. A true
   * boolean (from a part computed on constants) is not a number to the engine's comparisons and
   * arithmetic, only to the logic processes, so elsewhere it is left to the engine.
   */
  const constOf = (v: unknown, boolOk = true): number => {
    if (typeof v === 'number') return Math.fround(v);
    if (typeof v === 'boolean') return boolOk ? (v ? 1 : 0) : fail('a boolean used as a number');
    if (v === null) return NaN;
    return fail('a value that is not a number');
  };

  const value = (v: unknown, boolOk = false): number | typeof ARRAY => {
    if (typeof v === 'number' || typeof v === 'boolean' || v === null) return emit({ op: 'const', value: constOf(v, boolOk) });
    if (!isObject(v)) return fail('a value that is not a number');
    if (typeof v.from_node === 'string') {
      if (!dependsNode(v.from_node)) return emit({ op: 'const', value: constOf(plainNode(v.from_node), boolOk) });
      return node(v.from_node);
    }
    if (typeof v.from_parameter === 'string') {
      const name = v.from_parameter;
      if (name === shape.param) return shape.kind === 'value' ? placeholder(0) : ARRAY;
      const outer = env.outer(name);
      if (outer === undefined) return fail(`parameter '${name}' has no value`);
      return emit({ op: 'const', value: constOf(outer, boolOk) });
    }
    return fail('an object value');
  };
  const operand = (v: unknown, boolOk = false): number => {
    const r = value(v, boolOk);
    return r === ARRAY ? fail('the array used as a number') : r;
  };
  const literal = (v: unknown, what: string): number => {
    if (depends(v)) return fail(`${what} depends on the pixels`);
    const p = plain(v);
    return typeof p === 'number' ? Math.fround(p) : fail(`${what} must be a number`);
  };

  function node(id: string): number {
    const have = memo.get(id);
    if (have !== undefined) return have;
    if (visiting.has(id)) fail('cycle');
    if (!dependsNode(id)) {
      const r = emit({ op: 'const', value: constOf(plainNode(id)) });
      memo.set(id, r);
      return r;
    }
    visiting.add(id);
    const n = graph[id] ?? fail(`no node ${id}`);
    if (n.namespace !== undefined && n.namespace !== null && n.namespace !== 'backend') fail('a namespaced process');
    if ((n.namespace ?? null) === null && env.shadowed(n.process_id)) fail('a user-defined process');
    const r = instruction(n.process_id, n.arguments ?? {});
    visiting.delete(id);
    memo.set(id, r);
    return r;
  }

  function onlyArgs(pid: string, args: Record<string, unknown>, names: string[]): void {
    const extra = ALLOWED_EXTRA[pid] ?? {};
    for (const [k, v] of Object.entries(args)) {
      if (names.includes(k)) continue;
      const ok = extra[k];
      if (!ok || !ok(v)) fail(`argument '${k}' of ${pid}`);
    }
    for (const k of names) if (!(k in args)) fail(`${pid} without '${k}'`);
  }

  function instruction(pid: string, args: Record<string, unknown>): number {
    const unary = UNARY_PROCESSES[pid];
    if (unary) {
      onlyArgs(pid, args, ['x']);
      return emit({ op: unary, a: operand(args.x, LOGICAL.has(pid)) });
    }
    const binary = BINARY_PROCESSES[pid];
    if (binary) {
      const [op, xa, ya] = binary;
      onlyArgs(pid, args, [xa, ya]);
      return emit({ op, a: operand(args[xa], LOGICAL.has(pid)), b: operand(args[ya], LOGICAL.has(pid)) });
    }
    const reducer = REDUCER_PROCESSES[pid];
    if (reducer) {
      const rest = Object.keys(args).filter((k) => k !== 'data');
      for (const k of rest) {
        if (k === 'ignore_nodata' && args[k] === true) continue;
        if (pid === 'count' && ((k === 'condition' && args[k] === null) || k === 'context')) continue;
        fail(`argument '${k}' of ${pid}`);
      }
      if (value(args.data) !== ARRAY) fail(`${pid} of something else than the array`);
      return emit({ op: reducer, args: all() });
    }
    switch (pid) {
      case 'constant':
        onlyArgs(pid, args, ['x']);
        return operand(args.x);
      case 'e':
        onlyArgs(pid, args, []);
        return emit({ op: 'const', value: Math.E });
      case 'pi':
        onlyArgs(pid, args, []);
        return emit({ op: 'const', value: Math.PI });
      case 'nan':
        onlyArgs(pid, args, []);
        return emit({ op: 'const', value: NaN });
      case 'is_nan':
        // Inside a cube NaN is no-data, which is_nan does not count as NaN.
        onlyArgs(pid, args, ['x']);
        operand(args.x);
        return emit({ op: 'const', value: 0 });
      case 'round': {
        if ('p' in args && args.p !== 0) fail('round to decimals');
        onlyArgs(pid, args, ['x', ...('p' in args ? ['p'] : [])]);
        return emit({ op: 'round', a: operand(args.x) });
      }
      case 'log': {
        onlyArgs(pid, args, ['x', 'base']);
        if (args.base === 10) return emit({ op: 'log10', a: operand(args.x) });
        if (args.base === 2) return emit({ op: 'log2', a: operand(args.x) });
        return emit({ op: 'log', a: operand(args.x), b: operand(args.base) });
      }
      case 'clip': {
        onlyArgs(pid, args, ['x', 'min', 'max']);
        const min = literal(args.min, 'min');
        const max = literal(args.max, 'max');
        if (!(min <= max)) fail('clip bounds swapped (an exception)');
        return emit({ op: 'clip', a: operand(args.x), min, max });
      }
      case 'linear_scale_range': {
        onlyArgs(pid, args, ['x', 'inputMin', 'inputMax', ...['outputMin', 'outputMax'].filter((k) => k in args)]);
        return emit({
          op: 'linscale',
          a: operand(args.x),
          inMin: literal(args.inputMin, 'inputMin'),
          inMax: literal(args.inputMax, 'inputMax'),
          outMin: 'outputMin' in args ? literal(args.outputMin, 'outputMin') : 0,
          outMax: 'outputMax' in args ? literal(args.outputMax, 'outputMax') : 1,
        });
      }
      case 'if': {
        onlyArgs(pid, args, ['value', 'accept', ...('reject' in args ? ['reject'] : [])]);
        const c = operand(args.value, true);
        const t = operand(args.accept, true);
        const f = 'reject' in args ? operand(args.reject, true) : emit({ op: 'const', value: NaN });
        return emit({ op: 'if', c, t, f });
      }
      case 'array_element': {
        if (value(args.data) !== ARRAY || shape.kind !== 'array') fail('array_element of something else than the array');
        if (args.return_nodata !== undefined && typeof args.return_nodata !== 'boolean') fail('return_nodata');
        const hasIndex = args.index !== undefined && args.index !== null;
        const hasLabel = args.label !== undefined && args.label !== null;
        if (hasIndex === hasLabel) fail('array_element needs exactly one of index and label');
        const labels = (shape as { labels: (string | number)[] }).labels;
        const k = hasIndex ? (Number.isInteger(args.index) ? (args.index as number) : -1) : labels.indexOf(args.label as string | number);
        if (k < 0 || k >= labels.length) {
          if (args.return_nodata === true) return emit({ op: 'const', value: NaN });
          fail('array_element out of range (an exception)');
        }
        return placeholder(k);
      }
    }
    return fail(`process ${pid}`);
  }

  const out = node(resultId);
  // An apply child that ignores its value still takes it (one input).
  if (shape.kind === 'value' && slices.length === 0) slices.push(0);
  // Renumber: inputs first (in order of first use), then the instructions.
  const inputs = slices.length;
  const reg = (r: number) => (r < 0 ? -1 - r : inputs + r);
  const renumbered: Instr[] = code.map((ins) => {
    if ('args' in ins) return { op: ins.op, args: ins.args.map(reg) };
    if ('c' in ins) return { op: 'if', c: reg(ins.c), t: reg(ins.t), f: reg(ins.f) };
    if ('b' in ins) return { ...ins, a: reg(ins.a), b: reg(ins.b) };
    if ('a' in ins) return { ...ins, a: reg(ins.a) };
    return ins;
  });
  return { program: { inputs, code: renumbered, output: reg(out) }, slices };
}
