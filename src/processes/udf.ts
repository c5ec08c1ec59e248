// run_udf: users' own code, in the Python runtime (a sandboxed CPython, src/udf/pool.ts) or the
// AssemblyScript runtime (compiled like our kernels, src/udf/assemblyscript.ts). A UDF is used as
// the child process of apply, reduce_dimension, apply_dimension or apply_neighborhood: when the
// child process is run_udf alone, on the parent's data, the parent hands its whole cube (or block)
// to the UDF at once (udfChild / runUdfChild), and checks the answer against what it allows. On
// its own, run_udf runs the UDF on its data: a data cube, or plain values.
import { implement, type ProcessImpl } from './implement.js';
import type { Callback, ProcessContext } from '../core/process.js';
import { ApiError, ProcessException } from '../core/errors.js';
import { isObject, type Graph } from '../core/graph.js';
import { DataCube } from '../datacube/datacube.js';
import { cubeOf, isCube } from '../data/lazy.js';
import { udfCode } from '../udf/sources.js';
import { usersPolicy } from '../data/outbound.js';
import { pythonOnCube, pythonOnJson, type UdfRunContext } from '../udf/python-cube.js';
import { assemblyScriptOnCube, assemblyScriptOnValues, type AsKind } from '../udf/assemblyscript.js';
import type { UdfMode } from '../udf/protocol.js';

export type Runtime = 'Python' | 'AssemblyScript';

/** A run_udf found as the child process of a cube process: its arguments, resolved. */
export interface UdfCall {
  udf: unknown;
  runtime: unknown;
  version: unknown;
  context: unknown;
}

/** The runtime named (case-insensitively), or run_udf's InvalidRuntime. */
export function runtimeOf(runtime: unknown, version: unknown): Runtime {
  const name = typeof runtime === 'string' ? runtime.toLowerCase() : '';
  const r: Runtime | null = name === 'python' ? 'Python' : name === 'assemblyscript' ? 'AssemblyScript' : null;
  if (!r) throw new ProcessException('InvalidRuntime', `there is no UDF runtime '${String(runtime)}' here; the runtimes are Python and AssemblyScript (GET /udf_runtimes)`);
  if (version !== null && version !== undefined && (typeof version !== 'string' || !/^\d+(\.\d+){0,2}$/.test(version))) {
    throw new ProcessException('InvalidVersion', `the ${r} runtime has no version '${String(version)}' (GET /udf_runtimes lists the versions)`);
  }
  return r;
}

/** What a UDF needs from the run: the user (interpreters are never shared between users), the limit, the log. */
function udfContext(ctx: ProcessContext, version: unknown = null): UdfRunContext {
  const run = ctx.run;
  if (!run?.user) throw new ApiError('UdfFailed', { reason: 'user-defined functions run only for a signed-in user' });
  return {
    user: run.user,
    version: typeof version === 'string' ? version : null,
    timeoutMs: run.udfTimeoutMs ?? 30_000,
    signal: run.signal,
    log: (e) => run.log(e.level, e.message, e.data),
    link: run.engine.udf,
  };
}

/**
 * The run_udf of a child process that is run_udf alone on the parent's data parameter (`x` of
 * apply, `data` of the others), or null. Arguments given by parameters are resolved here: the
 * parent's `context`, or a parameter of an enclosing process.
 */
export function udfChild(cb: Callback | null, dataParam: string, context: unknown): UdfCall | null {
  const child = cb?.child;
  if (!child || !isObject(child.graph)) return null;
  const nodes = Object.values(child.graph as Graph);
  if (nodes.length !== 1 || !isObject(nodes[0])) return null;
  const node = nodes[0];
  if (node.process_id !== 'run_udf' || (node.namespace !== undefined && node.namespace !== null && node.namespace !== 'backend')) return null;
  if (child.shadowed('run_udf') && node.namespace !== 'backend') return null;
  const args = node.arguments ?? {};
  const data = args.data;
  if (!isObject(data) || data.from_parameter !== dataParam) return null;
  const value = (v: unknown): unknown => {
    if (isObject(v) && typeof v.from_parameter === 'string') return v.from_parameter === 'context' ? context : child.outer(v.from_parameter);
    return v;
  };
  return { udf: value(args.udf), runtime: value(args.runtime), version: value(args.version ?? null), context: 'context' in args ? value(args.context) : {} };
}

const AS_KIND: Partial<Record<UdfMode, AsKind>> = { apply: 'apply', reduce: 'reduce', apply_dimension: 'apply_dimension', run: 'apply' };

/** Runs a UDF found by udfChild on its parent's cube (mode: what the parent allows it to answer). */
export async function runUdfChild(call: UdfCall, ctx: ProcessContext, mode: UdfMode, cube: DataCube, dimension?: string): Promise<DataCube> {
  const runtime = runtimeOf(call.runtime, call.version);
  const u = udfContext(ctx, call.version);
  const code = await udfCode(call.udf, ctx.run?.files, ctx.run?.engine.outbound ?? usersPolicy(undefined), u.signal);
  if (runtime === 'Python') return pythonOnCube(u, code, mode, cube, { dimension, context: call.context });
  const kind = AS_KIND[mode];
  if (!kind) throw new ProcessException('InvalidRuntime', 'the AssemblyScript runtime runs in apply, reduce_dimension and apply_dimension; use the Python runtime in apply_neighborhood');
  return assemblyScriptOnCube(u, code, kind, cube, { dimension, context: call.context });
}

export const processes: ProcessImpl[] = [
  implement('run_udf', async (a, ctx) => {
    const runtime = runtimeOf(a.get('runtime'), a.get('version'));
    const u = udfContext(ctx, a.get('version'));
    const code = await udfCode(a.get('udf'), ctx.run?.files, ctx.run?.engine.outbound ?? usersPolicy(undefined), u.signal);
    const data = a.get('data');
    const context = a.get('context');
    if (isCube(data)) {
      const cube = await cubeOf(data, ctx.run, 'run_udf');
      if (runtime === 'Python') return pythonOnCube(u, code, 'run', cube, { context });
      return assemblyScriptOnCube(u, code, 'apply', cube, { context });
    }
    if (runtime === 'Python') return pythonOnJson(u, code, data, context);
    return assemblyScriptOnValues(u, code, data, context);
  }),
];
