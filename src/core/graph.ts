// The one model of a process graph: its nodes, the three kinds of reference objects an argument may
// hold, and one walker over them. A `from_node` or `from_parameter` object is a reference and is
// not looked into; a `process_graph` object is a child process, handed over but not entered (its
// references belong to its own level); every other array or object is walked through. Structure
// checks (graph/structure.ts) make sure the reserved keys appear only in their own objects, so
// every reader of a graph agrees with this rule.
import type { ProcessParameter } from './process.js';

export interface Node {
  process_id: string;
  namespace?: string | null;
  arguments: Record<string, unknown>;
  result?: boolean;
  description?: string;
}

export type Graph = Record<string, Node>;

/** A stored process as the engine calls it: its declared parameters and its graph. */
export interface UserProcess {
  parameters?: ProcessParameter[] | null;
  process_graph: Graph;
}

export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A namespace that is the URL of a process (or of a list of processes): the Remote Process Definition extension. */
export const isRemoteNamespace = (ns: unknown): ns is string => typeof ns === 'string' && /^https?:\/\//i.test(ns);

/**
 * The key under which the processes a graph calls are handed around (the user's stored processes
 * and remote ones, `Record<string, UserProcess>`): the id for namespace `user` or none, the URL and
 * the id for a remote process; null for a namespace that holds only predefined processes.
 */
export function processKey(id: string, namespace: string | null | undefined): string | null {
  if (namespace === undefined || namespace === null || namespace === 'user') return id;
  return isRemoteNamespace(namespace) ? `${namespace}\n${id}` : null;
}

/** The process of `processes` a node calls (stored or remote), or null. */
export function calledProcess(processes: Record<string, UserProcess>, id: string, namespace: string | null | undefined): UserProcess | null {
  const key = processKey(id, namespace);
  return key !== null && Object.hasOwn(processes, key) ? processes[key] : null;
}

export interface ReferenceVisitor {
  /** A `{from_node}` reference of this level. */
  node?(id: string): void;
  /** A `{from_parameter}` reference of this level. */
  parameter?(name: string): void;
  /** A `{process_graph}` child process (its graph as given, not yet checked). */
  child?(graph: unknown, holder: Record<string, unknown>): void;
}

/** Deeper than any JSON body we accept (core/json.ts): a guard, not a limit users meet. */
const MAX_DEPTH = 1100;

/** Visits the references in an argument value, at the level of the graph that holds it. */
export function walkReferences(value: unknown, visit: ReferenceVisitor, depth = 0): void {
  if (depth > MAX_DEPTH) return;
  if (Array.isArray(value)) {
    for (const x of value) walkReferences(x, visit, depth + 1);
    return;
  }
  if (!isObject(value)) return;
  if ('from_node' in value) {
    if (typeof value.from_node === 'string') visit.node?.(value.from_node);
  } else if ('from_parameter' in value) {
    if (typeof value.from_parameter === 'string') visit.parameter?.(value.from_parameter);
  } else if ('process_graph' in value) {
    visit.child?.(value.process_graph, value);
  } else {
    for (const x of Object.values(value)) walkReferences(x, visit, depth + 1);
  }
}

/** The nodes of a graph given as untrusted JSON: each id with its node when it looks like one. */
export function nodesOf(graph: unknown): [string, Node][] {
  if (!isObject(graph)) return [];
  return Object.entries(graph).filter((e): e is [string, Node] => isObject(e[1]) && typeof e[1].process_id === 'string');
}

/** Visits every node of a graph and of its child processes, at any depth. */
export function forEachNode(graph: unknown, fn: (node: Node, id: string, graph: Graph) => void, depth = 0): void {
  if (depth > MAX_DEPTH) return;
  for (const [id, node] of nodesOf(graph)) {
    fn(node, id, graph as Graph);
    walkReferences(node.arguments, { child: (g) => forEachNode(g, fn, depth + 1) });
  }
}
