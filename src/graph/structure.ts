// Structural checks of a process graph, independent of which processes exist: node shape, exactly
// one result node per (child) graph, `from_node` targets at the same level, no cycles, and the
// reserved keys `from_node`, `from_parameter` and `process_graph` used only in their own objects.
// Every problem is reported, each with a path to where it is.
// This is the check that makes the rule of core/graph.ts hold, so it walks values itself, naming where each problem is.
import { isObject } from '../core/graph.js';

export interface StructureProblem {
  /** Where: node ids and argument keys from the root, e.g. `loadco1.arguments.bands[0]`. */
  where: string;
  reason: string;
}

export interface StructureOptions {
  /** Whether nodes may carry `namespace` (not in API 1.0.0-rc.2). */
  allowNamespace: boolean;
  /** Deepest nesting of child graphs and argument values accepted. */
  maxDepth?: number;
}

const ID = /^\w+$/;
const RESERVED = ['from_node', 'from_parameter', 'process_graph'];

export function checkProcessGraph(graph: unknown, opts: StructureOptions): StructureProblem[] {
  const problems: StructureProblem[] = [];
  checkGraph(graph, '', 0, opts, problems);
  return problems;
}

function checkGraph(graph: unknown, where: string, depth: number, opts: StructureOptions, out: StructureProblem[]): void {
  const at = (s: string) => (where ? `${where}.${s}` : s);
  if (!isObject(graph)) {
    out.push({ where: where || 'process_graph', reason: 'a process graph must be an object of nodes' });
    return;
  }
  const ids = Object.keys(graph);
  if (ids.length === 0) {
    out.push({ where: where || 'process_graph', reason: 'the process graph has no nodes' });
    return;
  }
  const edges = new Map<string, string[]>();
  const results: string[] = [];
  for (const id of ids) {
    const node = graph[id];
    if (!isObject(node)) {
      out.push({ where: at(id), reason: 'a node must be an object' });
      continue;
    }
    if (typeof node.process_id !== 'string' || !ID.test(node.process_id)) {
      out.push({ where: at(id), reason: "'process_id' must be a string of letters, digits and underscores" });
    }
    if ('namespace' in node) {
      if (!opts.allowNamespace) out.push({ where: at(id), reason: "'namespace' does not exist in this API version" });
      else if (node.namespace !== null && typeof node.namespace !== 'string') out.push({ where: at(id), reason: "'namespace' must be a string or null" });
    }
    if ('description' in node && node.description !== null && typeof node.description !== 'string') {
      out.push({ where: at(id), reason: "'description' must be a string" });
    }
    if ('result' in node && typeof node.result !== 'boolean') out.push({ where: at(id), reason: "'result' must be true or false" });
    if (node.result === true) results.push(id);
    for (const key of RESERVED) {
      if (key in node) out.push({ where: at(id), reason: `a node must not have the key '${key}'` });
    }
    if (!isObject(node.arguments)) {
      out.push({ where: at(id), reason: "'arguments' must be an object" });
      continue;
    }
    const deps: string[] = [];
    for (const [name, value] of Object.entries(node.arguments)) {
      checkValue(value, `${at(id)}.arguments.${name}`, depth + 1, graph, deps, opts, out);
    }
    edges.set(id, deps);
  }
  if (results.length === 0) out.push({ where: where || 'process_graph', reason: 'no node has "result": true' });
  if (results.length > 1) out.push({ where: where || 'process_graph', reason: `more than one result node: ${results.join(', ')}` });
  const cycle = findCycle(edges);
  if (cycle) out.push({ where: where || 'process_graph', reason: `the nodes form a cycle: ${cycle.join(' -> ')}` });
}

function checkValue(value: unknown, where: string, depth: number, graph: Record<string, unknown>, deps: string[], opts: StructureOptions, out: StructureProblem[]): void {
  if (depth > (opts.maxDepth ?? 100)) {
    out.push({ where, reason: 'the value is nested too deeply' });
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkValue(v, `${where}[${i}]`, depth + 1, graph, deps, opts, out));
    return;
  }
  if (!isObject(value)) return;
  if ('from_node' in value) {
    if (Object.keys(value).length !== 1 || typeof value.from_node !== 'string') {
      out.push({ where, reason: "an object with 'from_node' must hold only that key, with a node id as value" });
    } else if (!Object.hasOwn(graph, value.from_node)) {
      // Own members only: `constructor` or `valueOf` are not nodes, however `in` sees them.
      out.push({ where, reason: `'from_node' refers to '${value.from_node}', which is not a node of this graph` });
    } else deps.push(value.from_node);
    return;
  }
  if ('from_parameter' in value) {
    if (Object.keys(value).length !== 1 || typeof value.from_parameter !== 'string' || !ID.test(value.from_parameter)) {
      out.push({ where, reason: "an object with 'from_parameter' must hold only that key, with a parameter name as value" });
    }
    return;
  }
  if ('process_graph' in value) {
    // A child process: its node ids are scoped to it, so it gets its own graph check.
    checkGraph(value.process_graph, `${where}.process_graph`, depth + 1, opts, out);
    return;
  }
  for (const [k, v] of Object.entries(value)) checkValue(v, `${where}.${k}`, depth + 1, graph, deps, opts, out);
}

/** A cycle among `from_node` edges, as a list of node ids, or null. */
function findCycle(edges: Map<string, string[]>): string[] | null {
  const state = new Map<string, 1 | 2>(); // 1 = on the stack, 2 = done
  for (const start of edges.keys()) {
    if (state.has(start)) continue;
    // Iterative DFS: graphs may be large, recursion depth must not depend on input.
    const stack: { id: string; next: number }[] = [{ id: start, next: 0 }];
    state.set(start, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const deps = edges.get(top.id) ?? [];
      if (top.next < deps.length) {
        const d = deps[top.next++];
        const s = state.get(d);
        if (s === 1) {
          const from = stack.findIndex((f) => f.id === d);
          return [...stack.slice(from).map((f) => f.id), d];
        }
        if (s === undefined && edges.has(d)) {
          state.set(d, 1);
          stack.push({ id: d, next: 0 });
        }
      } else {
        state.set(top.id, 2);
        stack.pop();
      }
    }
  }
  return null;
}
