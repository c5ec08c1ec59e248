// The reference evaluator: runs a (structurally valid) process graph on plain JavaScript values.
// Nodes start as soon as their inputs are ready (independent nodes run concurrently), a node's
// value is dropped once its last consumer has it, `from_parameter` follows the spec's resolution
// order, and child processes become callbacks bound to their scope.
import { ApiError } from '../core/errors.js';
import type { Callback, ProcessArgs, ProcessContext, ProcessDef, ProcessParameter } from '../core/process.js';
import type { RunContext } from '../core/run-context.js';
import { collect, liftScalar, pixelCount, plainAt } from '../datacube/pixels.js';
import { pixelOp } from '../datacube/pixel-ops.js';

import { isObject, walkReferences, type Graph, type UserProcess } from '../core/graph.js';

/** A node on the way from a failing process up to the root graph (the `path` of a log entry). */
export interface PathEntry {
  node_id: string;
  process_id?: string;
  namespace?: string;
}

const FAILURE_PATH = Symbol('failure path');

function addFailurePath(e: unknown, entry: PathEntry): void {
  if (e === null || typeof e !== 'object') return;
  const holder = e as { [FAILURE_PATH]?: PathEntry[] };
  (holder[FAILURE_PATH] ??= []).push(entry);
}

/** Where an error of an evaluation arose: the failing node first, then its callers up to the root; empty when unknown. */
export function failurePath(e: unknown): PathEntry[] {
  return (e !== null && typeof e === 'object' && (e as { [FAILURE_PATH]?: PathEntry[] })[FAILURE_PATH]) || [];
}

/** A parameter scope: values given at this level, defaults declared at this level, the parent. */
export interface Scope {
  values: Record<string, unknown>;
  defaults: Record<string, unknown>;
  parent: Scope | null;
}

export const rootScope = (values: Record<string, unknown> = {}, defaults: Record<string, unknown> = {}): Scope => ({ values, defaults, parent: null });

export interface EvalEnv {
  predefined(id: string): ProcessDef | undefined;
  /** A stored process of the current user (namespace `user` or none) or a remote one (a URL namespace), or null. */
  userProcess(id: string, namespace?: string | null): UserProcess | null;
  /** Nesting of user-defined process calls, to stop runaway recursion. */
  depth?: number;
  /** The run this evaluation belongs to (cube processes need it). */
  run?: RunContext;
}

const MAX_UDP_DEPTH = 32;

/** Resolves a parameter: the innermost given value, else the outermost default, else an error. */
export function resolveParameter(scope: Scope, name: string): unknown {
  // Own members only: a parameter named `constructor` is not the Object constructor.
  for (let s: Scope | null = scope; s; s = s.parent) if (Object.hasOwn(s.values, name)) return s.values[name];
  let found = false;
  let value: unknown;
  for (let s: Scope | null = scope; s; s = s.parent) {
    if (Object.hasOwn(s.defaults, name)) {
      found = true;
      value = s.defaults[name];
    }
  }
  if (!found) throw new ApiError('ProcessParameterMissing', { parameter: name });
  return value;
}

function defaultsOf(params: ProcessParameter[] | null | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of params ?? []) if ('default' in p) out[p.name] = p.default;
  return out;
}

const startOrders = new WeakMap<Graph, string[]>();

/** The nodes a graph's result depends on, each after its inputs (cached: child graphs run per pixel). */
function startOrder(graph: Graph, resultId: string): string[] {
  let order = startOrders.get(graph);
  if (order) return order;
  order = [];
  const inputs = (id: string): string[] => {
    const out: string[] = [];
    walkReferences(graph[id].arguments, { node: (ref) => Object.hasOwn(graph, ref) && out.push(ref) });
    return out;
  };
  // Iterative depth-first post-order; `open` also guards against cycles validation let through.
  const done = new Set<string>();
  const open = new Set<string>([resultId]);
  const stack = [{ id: resultId, deps: inputs(resultId), next: 0 }];
  while (stack.length) {
    const top = stack[stack.length - 1];
    if (top.next < top.deps.length) {
      const d = top.deps[top.next++];
      if (!done.has(d) && !open.has(d)) {
        open.add(d);
        stack.push({ id: d, deps: inputs(d), next: 0 });
      }
    } else {
      stack.pop();
      open.delete(top.id);
      done.add(top.id);
      order.push(top.id);
    }
  }
  startOrders.set(graph, order);
  return order;
}

export async function evaluateGraph(graph: Graph, env: EvalEnv, scope: Scope): Promise<unknown> {
  const ids = Object.keys(graph);
  const resultId = ids.find((id) => graph[id].result === true);
  if (!resultId) throw new ApiError('ProcessGraphInvalid', { reason: 'no node has "result": true' });
  // How many references each node has, so its value can be released after the last one.
  const consumers = new Map<string, number>();
  const countRef = (ref: string) => consumers.set(ref, (consumers.get(ref) ?? 0) + 1);
  for (const id of ids) walkReferences(graph[id].arguments, { node: countRef });
  const running = new Map<string, Promise<unknown>>();

  const nodeValue = (id: string): Promise<unknown> => {
    let p = running.get(id);
    if (!p) {
      p = runNode(id);
      running.set(id, p);
    }
    return p;
  };
  const take = async (id: string): Promise<unknown> => {
    const v = await nodeValue(id);
    const left = (consumers.get(id) ?? 1) - 1;
    consumers.set(id, left);
    if (left <= 0 && id !== resultId) running.delete(id);
    return v;
  };

  const resolve = async (v: unknown): Promise<unknown> => {
    if (Array.isArray(v)) return Promise.all(v.map(resolve));
    if (!isObject(v)) return v;
    if (typeof v.from_node === 'string') return take(v.from_node);
    if (typeof v.from_parameter === 'string') return resolveParameter(scope, v.from_parameter);
    if ('process_graph' in v) return v; // bound later, by the parameter that takes it
    const out: Record<string, unknown> = {};
    await Promise.all(Object.entries(v).map(async ([k, x]) => (out[k] = await resolve(x))));
    return out;
  };

  // Start the nodes the result needs in dependency order, so that each finds its inputs running
  // instead of starting them itself: a chain of thousands of nodes would otherwise recurse that
  // deep, synchronously, and overflow the stack.
  for (const id of startOrder(graph, resultId)) void nodeValue(id);

  async function runNode(id: string): Promise<unknown> {
    const node = graph[id];
    const given = node.arguments ?? {};
    const values: Record<string, unknown> = {};
    await Promise.all(Object.entries(given).map(async ([k, x]) => (values[k] = await resolve(x))));
    const ns = node.namespace ?? null;
    // Failures of the process itself (not of its arguments, which name their own node) carry
    // the node, so a batch job's log can say where the graph failed.
    try {
      const udp = ns === 'backend' ? null : env.userProcess(node.process_id, ns);
      if (udp) return await callUserProcess(node.process_id, udp, values, env);
      if (ns === 'user') throw new ApiError('ProcessUnsupported', { process: node.process_id, namespace: 'user' });
      if (ns !== null && ns !== 'backend') throw new ApiError('ProcessUnsupported', { process: node.process_id, namespace: ns });
      const def = env.predefined(node.process_id);
      if (!def) throw new ApiError('ProcessUnsupported', { process: node.process_id, namespace: ns ?? 'backend' });
      if (env.run?.signal?.aborted) throw env.run.signal.reason;
      return await invoke(def, values, scope, env, { nodeId: id, processId: node.process_id, run: env.run });
    } catch (e) {
      if (!env.run?.signal?.aborted) addFailurePath(e, { node_id: id, process_id: node.process_id, ...(ns ? { namespace: ns } : {}) });
      throw e;
    }
  }

  return nodeValue(resultId);
}

/**
 * Calls a predefined process. With pixel vectors among the arguments (inside the child process of
 * a cube process) it runs for all pixels at once: a vector form if there is one, else the scalar
 * form in a loop, else (processes with child processes of their own) pixel by pixel.
 */
async function invoke(def: ProcessDef, values: Record<string, unknown>, scope: Scope, env: EvalEnv, ctx: ProcessContext): Promise<unknown> {
  const pixels = pixelCount(Object.values(values));
  if (pixels < 0) return def.run(bindArgs(def, values, scope, env), ctx);
  const full = withDefaults(def, values);
  const op = pixelOp(def.spec.id);
  const fast = op?.(full, pixels);
  if (fast !== undefined) return fast;
  if (def.scalar) return liftScalar(def.spec.id, def.scalar, full, pixels);
  const answers = new Array<unknown>(pixels);
  for (let i = 0; i < pixels; i++) {
    const plain: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(values)) plain[k] = plainAt(v, i);
    answers[i] = await def.run(bindArgs(def, plain, scope, env), ctx);
  }
  return collect(def.spec.id, (i) => answers[i], pixels);
}

/** The process's parameters by name, once the arguments are known to fit them: none unknown, none required missing. */
function checkedParams(def: ProcessDef, values: Record<string, unknown>): Map<string, ProcessParameter> {
  const params = new Map(def.spec.parameters.map((p) => [p.name, p]));
  for (const k of Object.keys(values)) {
    if (!params.has(k)) throw new ApiError('ProcessParameterUnsupported', { process: def.spec.id, parameter: k });
  }
  for (const p of def.spec.parameters) {
    if (!(p.name in values) && !p.optional && !def.omittable?.includes(p.name)) throw new ApiError('ProcessParameterRequired', { process: def.spec.id, parameter: p.name });
  }
  return params;
}

/** The arguments by name with defaults applied (the plain form of vector and scalar processes). */
function withDefaults(def: ProcessDef, values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of checkedParams(def, values).values()) out[p.name] = p.name in values ? values[p.name] : 'default' in p ? p.default : null;
  return out;
}

/** The arguments of a predefined process: defaults applied, unknown ones refused, callbacks bound. */
function bindArgs(def: ProcessDef, values: Record<string, unknown>, scope: Scope, env: EvalEnv): ProcessArgs {
  const params = checkedParams(def, values);
  return {
    get: <T>(name: string) => (name in values ? values[name] : (params.get(name)?.default ?? null)) as T,
    has: (name) => name in values,
    callback: (name): Callback | null => bindChild(values[name], (params.get(name)?.schema as { parameters?: ProcessParameter[] } | undefined)?.parameters, scope, env),
    callbackFor: (value): Callback | null => bindChild(value, undefined, scope, env),
  };
}

/** A child process value bound to its scope, or null when the value is not one. */
function bindChild(v: unknown, declared: ProcessParameter[] | undefined, scope: Scope, env: EvalEnv): Callback | null {
  if (!isObject(v) || !isObject(v.process_graph)) return null;
  const childDefaults = defaultsOf(Array.isArray(declared) ? declared : (v.parameters as ProcessParameter[] | undefined));
  const graph = v.process_graph as Graph;
  const cb: Callback = (given) => evaluateGraph(graph, env, { values: given, defaults: childDefaults, parent: scope });
  cb.child = {
    graph,
    outer: (name) => {
      if (Object.hasOwn(childDefaults, name)) return childDefaults[name];
      try {
        return resolveParameter(scope, name);
      } catch {
        return undefined;
      }
    },
    shadowed: (id) => env.userProcess(id) !== null,
    predefined: (id) => env.predefined(id),
    run: env.run,
  };
  return cb;
}

async function callUserProcess(id: string, udp: UserProcess, values: Record<string, unknown>, env: EvalEnv): Promise<unknown> {
  const depth = (env.depth ?? 0) + 1;
  if (depth > MAX_UDP_DEPTH) throw new ApiError('ProcessGraphInvalid', { reason: `user-defined processes call each other more than ${MAX_UDP_DEPTH} deep (recursion?)` });
  const declared = new Set((udp.parameters ?? []).map((p) => p.name));
  if (udp.parameters) {
    for (const k of Object.keys(values)) if (!declared.has(k)) throw new ApiError('ProcessParameterUnsupported', { process: id, parameter: k });
  }
  // A stored process is its own root: it sees only its arguments and its own defaults.
  return evaluateGraph(udp.process_graph, { ...env, depth }, rootScope(values, defaultsOf(udp.parameters)));
}
