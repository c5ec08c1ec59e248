// A process's implementation: what evaluates it, by id. Its definition (texts, schemas, what its
// parameters accept, its kernel lowering) is in the process catalogue (src/process-catalog/);
// registry.ts joins the two on engine threads. A process whose values are plain JSON values and
// that calls no child process gives a synchronous `scalar` function: the evaluator lifts it over
// cube pixels without a promise per value.
import type { ProcessArgs, ProcessContext, ProcessDef, ProcessSpec } from '../core/process.js';

export type ProcessImpl = { id: string; run: (args: ProcessArgs, ctx: ProcessContext) => unknown; scalar?: undefined } | { id: string; scalar: (a: Record<string, any>) => unknown; run?: undefined };

/** A process evaluated on plain values (may be async, may call child processes). */
export function implement(id: string, run: (args: ProcessArgs, ctx: ProcessContext) => unknown): ProcessImpl {
  return { id, run };
}

/**
 * A synchronous process on plain values: `fn` gets the arguments by name, defaults applied.
 * It must not call child processes.
 */
export function implementScalar(id: string, fn: (a: Record<string, any>) => unknown): ProcessImpl {
  return { id, scalar: fn };
}

/** The process as the engine runs it: its definition and its implementation. */
export function bind(impl: ProcessImpl, spec: ProcessSpec, omittable?: string[]): ProcessDef {
  const extra = omittable ? { omittable } : {};
  if (!impl.scalar) return { spec, run: impl.run, ...extra };
  const fn = impl.scalar;
  return {
    spec,
    ...extra,
    scalar: fn,
    run: (args) => {
      const a: Record<string, unknown> = {};
      for (const p of spec.parameters) a[p.name] = args.get(p.name);
      return fn(a);
    },
  };
}
