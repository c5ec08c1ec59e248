// Fusion: a pixel-wise child process (of apply, reduce_dimension, aggregate_temporal, ...) becomes
// one Program for the kernels, or null when any part of it cannot be fused (then the JS engine runs
// it). A node fuses when its process has a lowering in the process catalogue
// (src/process-catalog/lowerings.ts: the math, comparison and logic processes on numbers,
// array_element on the array along the dimension, the reducers with their default
// `ignore_nodata`), or when it does not depend on the pixels: then the scalar processes compute it
// once, on plain values, as the engine does. Anything else (texts, child processes of its own, user
// processes, arguments that would raise an exception) is left to the JS engine, which has the full
// semantics.
import { isBinary, isReducer, isUnary, type Instr, type Program } from './program.js';
import type { ProcessParameter } from '../core/process.js';
import { processCatalog } from '../process-catalog/catalog.js';
import { argumentsOf, type ConstLowering, type ElementLowering, type Lowering, type OpLowering, type ReduceLowering } from '../process-catalog/lowerings.js';
import { isObject, type Graph } from '../core/graph.js';
import { ConstantParts, defaultOf, fail, NotFusable, type FoldEnv } from './fold.js';

/** How the child is called: `x` per pixel (apply), or `data` = the array along a dimension. */
export type ChildShape = { kind: 'value'; param: string } | { kind: 'array'; param: string; labels: (string | number)[] };

/** What fusion reads of the graph's surroundings. */
export type FuseEnv = FoldEnv;

export interface Fused {
  program: Program;
  /** Input j of the program is element slices[j] of the array (or the value itself, [0]). */
  slices: number[];
}

/** The Program of a child graph, or null (with the reason, for logs) when it does not fuse. */
export function fuseChild(graph: unknown, shape: ChildShape, env: FuseEnv): { fused: Fused | null; reason?: string } {
  try {
    return { fused: build(graph as Graph, shape, env) };
  } catch (e) {
    if (e instanceof NotFusable) return { fused: null, reason: e.message };
    throw e;
  }
}

/**
 * A fusion in three steps: find the result node; lower it, and through it every node it reads,
 * into instructions; number the registers, the program's inputs first.
 */
function build(graph: Graph, shape: ChildShape, env: FuseEnv): Fused {
  if (!isObject(graph)) fail('not a graph');
  const resultId = resultNodeOf(graph);
  const lowering = new GraphLowering(graph, shape, env);
  const out = lowering.node(resultId);
  return lowering.code.numbered(out, shape);
}

function resultNodeOf(graph: Graph): string {
  return Object.keys(graph).find((id) => graph[id]?.result === true) ?? fail('no result node');
}

// ---------------------------------------------------------------------------------------------
// The program being built

/**
 * The instructions collected so far. While building, a register is an instruction's index (>= 0)
 * or, for an input, a placeholder (< 0): inputs come first in the program, but how many there are
 * is known only at the end, when `numbered` renumbers.
 */
class ProgramCode {
  private readonly code: Instr[] = [];
  private readonly slices: number[] = [];
  private readonly sliceRegister = new Map<number, number>();
  private readonly consts = new Map<string, number>();

  /** The register of element `slice` of the array (0: the value itself). */
  input(slice: number): number {
    let r = this.sliceRegister.get(slice);
    if (r === undefined) {
      r = -1 - this.slices.length;
      this.slices.push(slice);
      this.sliceRegister.set(slice, r);
    }
    return r;
  }

  /** Appends an instruction (a constant only once per value) and answers its register. */
  emit(ins: Instr): number {
    if (ins.op === 'const') {
      const key = Object.is(ins.value, -0) ? '-0' : String(ins.value);
      const have = this.consts.get(key);
      if (have !== undefined) return have;
      this.code.push(ins);
      this.consts.set(key, this.code.length - 1);
      return this.code.length - 1;
    }
    this.code.push(ins);
    return this.code.length - 1;
  }

  constant(value: number): number {
    return this.emit({ op: 'const', value });
  }

  /** The finished program answering register `out`: inputs first (in order of first use), then the instructions. */
  numbered(out: number, shape: ChildShape): Fused {
    const slices = this.slices;
    // An apply child that ignores its value still takes it (one input).
    if (shape.kind === 'value' && slices.length === 0) slices.push(0);
    const inputs = slices.length;
    const reg = (r: number) => (r < 0 ? -1 - r : inputs + r);
    const code: Instr[] = this.code.map((ins) => {
      if ('args' in ins) return { op: ins.op, args: ins.args.map(reg) };
      if ('c' in ins) return { op: 'if', c: reg(ins.c), t: reg(ins.t), f: reg(ins.f) };
      if ('b' in ins) return { ...ins, a: reg(ins.a), b: reg(ins.b) };
      if ('a' in ins) return { ...ins, a: reg(ins.a) };
      return ins;
    });
    return { program: { inputs, code, output: reg(out) }, slices };
  }
}

/**
 * A plain value entering pixel computations: float32, NaN as no-data, booleans as 1/0. A true
 * boolean (from a part computed on constants) is not a number to the engine's comparisons and
 * arithmetic, only to the logic processes, so elsewhere it is left to the engine.
 */
function pixelConstant(v: unknown, booleans = true): number {
  if (typeof v === 'number') return Math.fround(v);
  if (typeof v === 'boolean') return booleans ? (v ? 1 : 0) : fail('a boolean used as a number');
  if (v === null) return NaN;
  return fail('a value that is not a number');
}

// ---------------------------------------------------------------------------------------------
// Nodes into instructions

const ARRAY = Symbol('the array parameter');

/** Lowers the nodes of one child graph into the instructions of `code`, each node once. */
class GraphLowering {
  readonly code = new ProgramCode();
  private readonly constants: ConstantParts;
  private readonly memo = new Map<string, number>();
  private readonly visiting = new Set<string>();

  constructor(
    private readonly graph: Graph,
    private readonly shape: ChildShape,
    private readonly env: FuseEnv,
  ) {
    this.constants = new ConstantParts(graph, shape.param, env);
  }

  /** The register of a node's value: a constant when it does not depend on the pixels, else its lowering. */
  node(id: string): number {
    const have = this.memo.get(id);
    if (have !== undefined) return have;
    if (this.visiting.has(id)) fail('cycle');
    if (!this.constants.dependsNode(id)) {
      const r = this.code.constant(pixelConstant(this.constants.plainNode(id)));
      this.memo.set(id, r);
      return r;
    }
    this.visiting.add(id);
    const n = this.graph[id] ?? fail(`no node ${id}`);
    if (n.namespace !== undefined && n.namespace !== null && n.namespace !== 'backend') fail('a namespaced process');
    if ((n.namespace ?? null) === null && this.env.shadowed(n.process_id)) fail('a user-defined process');
    const r = this.lower(n.process_id, n.arguments ?? {});
    this.visiting.delete(id);
    this.memo.set(id, r);
    return r;
  }

  /** The register of an argument's value, or ARRAY for the array parameter itself. */
  private value(v: unknown, booleans = false): number | typeof ARRAY {
    if (typeof v === 'number' || typeof v === 'boolean' || v === null) return this.code.constant(pixelConstant(v, booleans));
    if (!isObject(v)) return fail('a value that is not a number');
    if (typeof v.from_node === 'string') {
      if (!this.constants.dependsNode(v.from_node)) return this.code.constant(pixelConstant(this.constants.plainNode(v.from_node), booleans));
      return this.node(v.from_node);
    }
    if (typeof v.from_parameter === 'string') {
      const name = v.from_parameter;
      if (name === this.shape.param) return this.shape.kind === 'value' ? this.code.input(0) : ARRAY;
      const outer = this.env.outer(name);
      if (outer === undefined) return fail(`parameter '${name}' has no value`);
      return this.code.constant(pixelConstant(outer, booleans));
    }
    return fail('an object value');
  }

  /** The register of an argument that is one number per pixel. */
  private operand(v: unknown, booleans = false): number {
    const r = this.value(v, booleans);
    return r === ARRAY ? fail('the array used as a number') : r;
  }

  /** A number fixed for the whole program (clip's bounds, linscale's ranges). */
  private immediate(v: unknown, what: string): number {
    if (this.constants.depends(v)) return fail(`${what} depends on the pixels`);
    const p = this.constants.plain(v);
    return typeof p === 'number' ? Math.fround(p) : fail(`${what} must be a number`);
  }

  /** The registers of every element of the array, in order. */
  private everyElement(): number[] {
    if (this.shape.kind !== 'array') return fail('reducers need the array parameter');
    // the reducers of an empty array (count 0, the others no-data) are left to the engine
    if (this.shape.labels.length === 0) return fail('an empty array');
    return this.shape.labels.map((_, i) => this.code.input(i));
  }

  /** The instructions of one node, as its lowering in the process catalogue says. */
  private lower(pid: string, args: Record<string, unknown>): number {
    const entry = processCatalog.get(pid);
    const lowering = entry?.lowering ?? fail(`process ${pid}`);
    const params = entry!.spec.parameters;
    checkArguments(pid, args, lowering, params);
    switch (lowering.kind) {
      case 'op':
        return this.lowerOp(lowering, args, params);
      case 'reduce':
        return this.lowerReducer(pid, lowering, args);
      case 'const':
        return this.lowerConstant(lowering, args);
      case 'pass':
        return this.operand(args[lowering.operand]);
      case 'element':
        return this.lowerElement(pid, lowering, args);
    }
  }

  private lowerOp(l: OpLowering, args: Record<string, unknown>, params: ProcessParameter[]): number {
    const booleans = l.booleans === true;
    const pixels = (name: string) => (name in args ? this.operand(args[name], booleans) : this.code.constant(pixelConstant(defaultOf(params.find((p) => p.name === name)), booleans)));
    const special = l.literal?.find((s) => args[s.argument] === s.equals);
    if (special) return this.code.emit(instructionOf(special.op, l.operands.filter((n) => n !== special.argument).map(pixels), {}));
    const immediates: Record<string, number> = {};
    for (const [field, name] of Object.entries(l.immediates ?? {})) {
      immediates[field] = name in args ? this.immediate(args[name], name) : Math.fround(defaultOf(params.find((p) => p.name === name)) as number);
    }
    return this.code.emit(instructionOf(l.op, l.operands.map(pixels), immediates));
  }

  private lowerReducer(pid: string, l: ReduceLowering, args: Record<string, unknown>): number {
    if (this.value(args[l.array]) !== ARRAY) fail(`${pid} of something else than the array`);
    if (!isReducer(l.op)) throw new Error(`the lowering of ${pid} names ${l.op}, which is no reducer`);
    return this.code.emit({ op: l.op, args: this.everyElement() });
  }

  private lowerConstant(l: ConstLowering, args: Record<string, unknown>): number {
    for (const name of l.operands ?? []) this.operand(args[name]);
    return this.code.constant(l.value);
  }

  /** One element of the array by a literal index or label, as an input of the program. */
  private lowerElement(pid: string, l: ElementLowering, args: Record<string, unknown>): number {
    if (this.value(args[l.array]) !== ARRAY || this.shape.kind !== 'array') fail(`${pid} of something else than the array`);
    const index = args[l.index];
    const label = args[l.label];
    const nodata = args[l.nodata];
    if (nodata !== undefined && typeof nodata !== 'boolean') fail(l.nodata);
    const hasIndex = index !== undefined && index !== null;
    const hasLabel = label !== undefined && label !== null;
    if (hasIndex === hasLabel) fail(`${pid} needs exactly one of ${l.index} and ${l.label}`);
    const labels = (this.shape as { labels: (string | number)[] }).labels;
    const k = hasIndex ? (Number.isInteger(index) ? (index as number) : -1) : labels.indexOf(label as string | number);
    if (k < 0 || k >= labels.length) {
      if (nodata === true) return this.code.constant(NaN);
      fail(`${pid} out of range (an exception)`);
    }
    return this.code.input(k);
  }
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

/** One instruction: `op` over registers, with its immediates (clip's bounds, linscale's ranges). */
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
