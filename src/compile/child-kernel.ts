// Runs a child process on the kernels when it fuses: the bridge between the cube processes (which
// hold a callback) and the executor (which runs Programs). Fusion results are kept per child graph
// and call shape, so a graph run on many chunks or tiles is fused once.
import type { Callback } from '../core/process.js';
import { fuseChild, type ChildShape, type Fused } from './fuse.js';
import { runProgram } from './executor.js';

/** Inputs beyond this many (e.g. every pixel of a polygon) stay with the JS engine. */
export const MAX_FUSED_INPUTS = 256;

const fusions = new WeakMap<object, Map<string, Fused | null>>();

function fusedFor(cb: Callback, shape: ChildShape, context: unknown): Fused | null {
  const child = cb.child!;
  const graph = child.graph as object;
  let byShape = fusions.get(graph);
  if (!byShape) fusions.set(graph, (byShape = new Map()));
  let ctxKey: string;
  try {
    ctxKey = JSON.stringify(context) ?? 'undefined';
  } catch {
    return null;
  }
  const key = `${shape.kind}|${shape.param}|${shape.kind === 'array' ? JSON.stringify(shape.labels) : ''}|${ctxKey}`;
  if (byShape.has(key)) return byShape.get(key)!;
  const { fused, reason } = fuseChild(graph, shape, { outer: (n) => (n === 'context' ? context : child.outer(n)), shadowed: child.shadowed, predefined: child.predefined });
  if (!fused) child.run?.log('debug', `child process runs in JavaScript: ${reason}`);
  byShape.set(key, fused);
  return fused;
}

/**
 * The child's answer per pixel computed by the kernels, or null when it does not fuse (or kernels
 * are off for this run): then the caller evaluates the callback.
 */
export function runFused(cb: Callback, shape: ChildShape, inputs: Float32Array[], pixels: number, context: unknown): Float32Array | null {
  const mode = cb.child?.run?.kernels ?? 'auto';
  if (!cb.child || mode === 'off' || inputs.length > MAX_FUSED_INPUTS) return null;
  const fused = fusedFor(cb, shape, context);
  if (!fused) return null;
  const engine = cb.child.run?.engine;
  return runProgram(
    fused.program,
    fused.slices.map((k) => inputs[k]),
    pixels,
    { tier: mode, tier1: engine?.tier1, helpers: engine?.kernelHelpers },
  );
}
