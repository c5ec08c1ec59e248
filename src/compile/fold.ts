// Folding for fusion (fuse.ts): the parts of a child graph that do not depend on the pixels are
// computed once, before any instruction is made, by the scalar processes on plain values.
import type { ProcessDef, ProcessParameter } from '../core/process.js';
import { isObject, walkReferences, type Graph } from '../core/graph.js';

/** Why a child graph is left to the JS engine (the message goes to the debug log). */
export class NotFusable extends Error {}
export const fail = (why: string): never => {
  throw new NotFusable(why);
};

/** A parameter's default in its definition (null when it has none). */
export const defaultOf = (p: ProcessParameter | undefined): unknown => (p && 'default' in p ? p.default : null);

/** What folding (and fusion) reads of the graph's surroundings. */
export interface FoldEnv {
  /** The value of a parameter from an enclosing scope (context, outer parameters); undefined if unknown. */
  outer(name: string): unknown;
  /** Whether a user-defined process of this id would be called instead of the predefined one. */
  shadowed(processId: string): boolean;
  /** The predefined processes, to fold parts that do not depend on pixels the way the engine does. */
  predefined(processId: string): ProcessDef | undefined;
}

/**
 * Parts of the graph that do not depend on the pixels are computed once, here, by the scalar
 * processes on plain values: exactly what the engine does with them (NaN stays a number there).
 */
export class ConstantParts {
  private readonly dependsMemo = new Map<string, boolean>();
  private readonly plainMemo = new Map<string, unknown>();

  constructor(
    private readonly graph: Graph,
    private readonly pixelParam: string,
    private readonly env: FoldEnv,
  ) {}

  /** Whether a value depends on the pixels: reads the pixel parameter, or holds a child process. */
  depends(v: unknown): boolean {
    let d = false;
    walkReferences(v, {
      parameter: (name) => void (d ||= name === this.pixelParam),
      node: (id) => void (d ||= this.dependsNode(id)),
      child: () => void (d = true),
    });
    return d;
  }

  dependsNode(id: string): boolean {
    let d = this.dependsMemo.get(id);
    if (d === undefined) {
      this.dependsMemo.set(id, true); // a cycle counts as dependent (and fails later)
      d = this.depends(this.graph[id]?.arguments ?? {});
      this.dependsMemo.set(id, d);
    }
    return d;
  }

  /** The plain value of an argument that does not depend on the pixels. */
  plain(v: unknown, depth = 0): unknown {
    if (depth > 100) fail('too deep');
    if (Array.isArray(v)) return v.map((x) => this.plain(x, depth + 1));
    if (!isObject(v)) return v;
    if (typeof v.from_parameter === 'string') {
      const o = this.env.outer(v.from_parameter);
      return o === undefined ? fail(`parameter '${v.from_parameter}' has no value`) : o;
    }
    if (typeof v.from_node === 'string') return this.plainNode(v.from_node);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, this.plain(x, depth + 1)]));
  }

  /** The plain value of a node that does not depend on the pixels, by its scalar process. */
  plainNode(id: string): unknown {
    if (this.plainMemo.has(id)) return this.plainMemo.get(id);
    const n = this.graph[id] ?? fail(`no node ${id}`);
    if ((n.namespace ?? null) !== null && n.namespace !== 'backend') fail('a namespaced process');
    if ((n.namespace ?? null) === null && this.env.shadowed(n.process_id)) fail('a user-defined process');
    const def = this.env.predefined(n.process_id);
    if (!def?.scalar) fail(`process ${n.process_id} on constants`);
    const args: Record<string, unknown> = {};
    for (const p of def!.spec.parameters) {
      if (p.name in (n.arguments ?? {})) args[p.name] = this.plain(n.arguments[p.name]);
      else if (!p.optional) fail(`${n.process_id} without '${p.name}'`);
      else args[p.name] = defaultOf(p);
    }
    for (const k of Object.keys(n.arguments ?? {})) if (!def!.spec.parameters.some((p) => p.name === k)) fail(`argument '${k}' of ${n.process_id}`);
    let out: unknown;
    try {
      out = def!.scalar!(args);
    } catch {
      fail(`${n.process_id} raises an exception on these constants`);
    }
    this.plainMemo.set(id, out);
    return out;
  }
}
