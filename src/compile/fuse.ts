// Fusion: a pixel-wise child process (of apply, reduce_dimension, aggregate_temporal, ...) becomes
// one Program for the kernels, or null when any part of it cannot be fused (then the JS engine runs
// it). Fusable: the math, comparison and logic processes on numbers, array_element on the array
// along the dimension, the reducers with their default `ignore_nodata`, constants and parameters
// whose values are numbers. Anything else (texts, child processes of its own, user processes,
// arguments that would raise an exception) is left to the JS engine, which has the full semantics.
import { isBinary, isReducer, isUnary, type Instr, type Program } from './program.js';
import type { ProcessDef, ProcessParameter } from '../core/process.js';
import { processCatalog } from '../process-catalog/catalog.js';
import type { Lowering } from '../process-catalog/lowerings.js';

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

  /** Every argument is named by the lowering, and those the definition requires are given. */
  function checkArguments(pid: string, args: Record<string, unknown>, lowering: Lowering, params: ProcessParameter[]): void {
    const names = argumentsOf(lowering);
    const fixed = lowering.fixed ?? {};
    const ignored = lowering.ignored ?? [];
    for (const [k, v] of Object.entries(args)) {
      if (names.includes(k) || ignored.includes(k)) continue;
      if (!(k in fixed) || v !== fixed[k]) fail(`argument '${k}' of ${pid}`);
    }
    for (const k of names) if (!(k in args) && !params.find((p) => p.name === k)?.optional) fail(`${pid} without '${k}'`);
  }

  /** The instructions of one node, as its lowering in the process catalogue says. */
  function instruction(pid: string, args: Record<string, unknown>): number {
    const entry = processCatalog.get(pid);
    const lowering = entry?.lowering ?? fail(`process ${pid}`);
    const params = entry!.spec.parameters;
    checkArguments(pid, args, lowering, params);
    const fallback = (name: string): unknown => {
      const p = params.find((q) => q.name === name);
      return p && 'default' in p ? p.default : null;
    };
    switch (lowering.kind) {
      case 'op': {
        const booleans = lowering.booleans === true;
        const pixels = (name: string) => (name in args ? operand(args[name], booleans) : emit({ op: 'const', value: constOf(fallback(name), booleans) }));
        const special = lowering.literal?.find((l) => args[l.argument] === l.equals);
        if (special) return emit(instructionOf(special.op, lowering.operands.filter((n) => n !== special.argument).map(pixels), {}));
        const immediates: Record<string, number> = {};
        for (const [field, name] of Object.entries(lowering.immediates ?? {})) immediates[field] = name in args ? literal(args[name], name) : Math.fround(fallback(name) as number);
        return emit(instructionOf(lowering.op, lowering.operands.map(pixels), immediates));
      }
      case 'reduce':
        if (value(args[lowering.array]) !== ARRAY) fail(`${pid} of something else than the array`);
        if (!isReducer(lowering.op)) throw new Error(`process ${pid}: ${lowering.op} is no reducer`);
        return emit({ op: lowering.op, args: all() });
      case 'const':
        for (const name of lowering.operands ?? []) operand(args[name]);
        return emit({ op: 'const', value: lowering.value });
      case 'pass':
        return operand(args[lowering.operand]);
      case 'element': {
        if (value(args[lowering.array]) !== ARRAY || shape.kind !== 'array') fail(`${pid} of something else than the array`);
        const index = args[lowering.index];
        const label = args[lowering.label];
        const nodata = args[lowering.nodata];
        if (nodata !== undefined && typeof nodata !== 'boolean') fail(lowering.nodata);
        const hasIndex = index !== undefined && index !== null;
        const hasLabel = label !== undefined && label !== null;
        if (hasIndex === hasLabel) fail(`${pid} needs exactly one of ${lowering.index} and ${lowering.label}`);
        const labels = (shape as { labels: (string | number)[] }).labels;
        const k = hasIndex ? (Number.isInteger(index) ? (index as number) : -1) : labels.indexOf(label as string | number);
        if (k < 0 || k >= labels.length) {
          if (nodata === true) return emit({ op: 'const', value: NaN });
          fail(`${pid} out of range (an exception)`);
        }
        return placeholder(k);
      }
    }
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
    if ('a' in ins) return { ...ins, a: reg(ins.a) } as Instr;
    return ins;
  });
  return { program: { inputs, code: renumbered, output: reg(out) }, slices };
}

/** The arguments a lowering reads (fixed and ignored ones aside). */
function argumentsOf(l: Lowering): string[] {
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

/** One instruction of the program: `op` over registers, with its immediates (clip's bounds, linscale's ranges). */
function instructionOf(op: string, regs: number[], imm: Record<string, number>): Instr {
  if (regs.length === 1 && isUnary(op)) return { op, a: regs[0] };
  if (regs.length === 2 && isBinary(op)) return { op, a: regs[0], b: regs[1] };
  if (op === 'if' && regs.length === 3) return { op, c: regs[0], t: regs[1], f: regs[2] };
  if (op === 'clip' && regs.length === 1) {
    // clip raises an exception for swapped bounds: the JS engine answers it
    if (!(imm.min <= imm.max)) fail('clip bounds swapped (an exception)');
    return { op, a: regs[0], min: imm.min, max: imm.max };
  }
  if (op === 'linscale' && regs.length === 1) return { op, a: regs[0], inMin: imm.inMin, inMax: imm.inMax, outMin: imm.outMin, outMax: imm.outMax };
  throw new Error(`a lowering asks for instruction ${op} over ${regs.length} registers, which does not exist`);
}
