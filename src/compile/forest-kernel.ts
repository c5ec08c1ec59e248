// The compiler's hook for random forests: a child process that is one predict_random_forest (or
// predict_probabilities) call on the reducer's `data` runs as the forest kernel (kernels/forest.ts)
// over the cube's planes, with the forest copied into kernel memory for the call (8-byte nodes, leaves leading to themselves, so every walk
// is the tree's depth in steps without a branch; pixels equal to their left or upper neighbour
// take its answer without a walk). Kept apart from
// fuse.ts (whose process tables may move) so it can be re-homed whole.
import type { Callback } from '../core/process.js';
import { addStage } from '../core/stages.js';
import { isForest, leafWidth, type Forest } from '../ml/forest.js';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { alloc, f32, i32, kernels, mark, plane, ptrOf, release, u32 } from '../wasm/kernels.js';
import type { KernelHelpers, SplittableKernel } from './kernel-threads.js';

/** What the child process asks of a forest: a value (class or mean) or the class probabilities. */
export interface ForestChild {
  forest: Forest;
  probabilities: boolean;
}

const FOREST_PROCESSES = new Set(['predict_random_forest', 'predict_probabilities']);

/**
 * The forest and what to predict when the child graph is a single predict_random_forest or
 * predict_probabilities node taking the array parameter `param` (data) and a model from a
 * parameter (the reducer's `context`, as the clients send it) or the enclosing scopes; else null.
 */
export function forestChild(cb: Callback, param: string, context: unknown): ForestChild | null {
  const child = cb.child;
  if (!child || child.run?.kernels === 'off') return null;
  const nodes = Object.values((child.graph ?? {}) as Record<string, { process_id?: string; arguments?: Record<string, unknown>; namespace?: unknown }>);
  if (nodes.length !== 1) return null;
  const node = nodes[0];
  const id = node.process_id ?? '';
  if (!FOREST_PROCESSES.has(id) || (node.namespace ?? null) !== null || child.shadowed(id)) return null;
  const args = node.arguments ?? {};
  if ((args.data as { from_parameter?: unknown } | undefined)?.from_parameter !== param) return null;
  const ref = (args.model as { from_parameter?: unknown } | undefined)?.from_parameter;
  const model = typeof ref === 'string' ? (ref === 'context' ? context : child.outer(ref)) : args.model;
  if (!isForest(model) || model.predictors.length > KERNEL_MAX_PREDICTORS) return null;
  return { forest: model, probabilities: id === 'predict_probabilities' };
}

/**
 * Nodes as the kernel reads them (8 bytes each: the predictor in the low 8 bits and the left
 * child's index within the tree above them, then the threshold; a leaf leads to itself), each
 * node's leaf index, and each tree's depth; made once per forest.
 */
const packed = new WeakMap<Forest, { nodes: Int32Array; leafOf: Int32Array; depths: Int32Array }>();

/** Predictors the 8-byte node holds (more run in JavaScript). */
export const KERNEL_MAX_PREDICTORS = 256;

function packedNodes(f: Forest): { nodes: Int32Array; leafOf: Int32Array; depths: Int32Array } {
  let p = packed.get(f);
  if (!p) {
    const n = f.feature.length;
    const nodes = new Int32Array(n * 2);
    const thr = new Float32Array(nodes.buffer);
    const leafOf = new Int32Array(n);
    // Each node's tree (children come after their parents: model-file.ts checks it) and depth.
    const treeOf = new Int32Array(n).fill(-1);
    const depth = new Int32Array(n);
    const depths = new Int32Array(f.roots.length);
    f.roots.forEach((r, t) => (treeOf[r] = t));
    for (let i = 0; i < n; i++) {
      const t = treeOf[i];
      const leaf = f.feature[i] < 0;
      const root = t < 0 ? i : f.roots[t];
      nodes[i * 2] = leaf ? (i - root) << 8 : f.feature[i] | ((f.child[i] - root) << 8);
      thr[i * 2 + 1] = leaf ? Infinity : f.threshold[i];
      leafOf[i] = leaf ? f.child[i] : 0;
      if (t < 0) continue;
      if (depth[i] > depths[t]) depths[t] = depth[i];
      if (!leaf) {
        const c = f.child[i];
        depth[c] = depth[c + 1] = depth[i] + 1;
        treeOf[c] = treeOf[c + 1] = t;
      }
    }
    p = { nodes, leafOf, depths };
    packed.set(f, p);
  }
  return p;
}

/** The leaves' numbers in rows of `stride` floats (zeros after the `width` numbers), made once per forest. */
const padded = new WeakMap<Forest, Float32Array>();
function paddedLeaves(f: Forest, width: number, stride: number): Float32Array {
  if (stride === width) return f.leaves;
  let p = padded.get(f);
  if (!p) {
    const count = f.leaves.length / width;
    p = new Float32Array(count * stride);
    for (let l = 0; l < count; l++) p.set(f.leaves.subarray(l * width, (l + 1) * width), l * stride);
    padded.set(f, p);
  }
  return p;
}

/**
 * Predictions of at least this many pixels (and one value per pixel) are split over the kernel
 * helper threads when there are any (XEO_KERNEL_THREADS): a forest costs about a thousand times
 * what NDVI costs per pixel, so it pays the hand-over far sooner than other kernels. Map tiles
 * (256² px) stay on their thread.
 */
export const FOREST_SPLIT_MIN_PIXELS = 1 << 18;

const WA = (globalThis as unknown as { WebAssembly: { Module: new (bytes: Uint8Array) => object } }).WebAssembly;

/** build/forest.wasm (the forest kernel importing the kernel memory, for helper threads), compiled once per thread. */
let bandModule: object | null | undefined;
function forestModule(): object | null {
  if (bandModule === undefined) {
    const found = ['../../../build/forest.wasm', '../../build/forest.wasm'].map((p) => fileURLToPath(new URL(p, import.meta.url))).find((p) => existsSync(p));
    bandModule = found ? new WA.Module(readFileSync(found)) : null;
  }
  return bandModule;
}

/**
 * Runs the forest over `pixels` pixels whose predictors are the planes `inputs` (in the forest's
 * predictor order): one plane of classes or values, or (probabilities) one plane per class. Large
 * runs are split over the engine's kernel helper threads (`helpers`), when it has any. `cols` is
 * the planes' row length when they are images (0 when not): a pixel equal to its left neighbour or
 * to the pixel a row above takes its answer without a walk (exact for any value: only how many
 * pixels are spared depends on it). `stats.walked` gets the number of pixels walked (-1 when the
 * run was split over threads).
 */
export function runForest(f: Forest, inputs: Float32Array[], pixels: number, probabilities: boolean, helpers?: KernelHelpers, cols = 0, stats?: { walked: number }): Float32Array[] {
  if (f.predictors.length > KERNEL_MAX_PREDICTORS) throw new Error(`the forest kernel takes at most ${KERNEL_MAX_PREDICTORS} predictors`);
  const width = leafWidth(f);
  const planesOut = probabilities ? width : 1;
  const mode = probabilities ? 2 : f.kind === 'classification' ? 1 : 0;
  const k = kernels();
  const m = mark();
  try {
    const { nodes, leafOf, depths } = packedNodes(f);
    const pNodes = alloc(nodes.byteLength);
    i32(pNodes, nodes.length).set(nodes);
    const pLeafOf = alloc(leafOf.byteLength);
    i32(pLeafOf, leafOf.length).set(leafOf);
    const pRoots = alloc(f.roots.byteLength);
    i32(pRoots, f.roots.length).set(f.roots);
    const pDepths = alloc(depths.byteLength);
    i32(pDepths, depths.length).set(depths);
    const leaves = paddedLeaves(f, width, k.forestLeafStride(width));
    const pLeaves = alloc(Math.max(16, leaves.byteLength));
    f32(pLeaves, leaves.length).set(leaves);
    const pClasses = alloc(Math.max(4, f.classes.length * 4));
    f32(pClasses, f.classes.length).set(f.classes);
    const pTable = alloc(inputs.length * 4);
    const table = u32(pTable, inputs.length);
    inputs.forEach((x, i) => {
      let ptr = ptrOf(x);
      if (ptr < 0) {
        ptr = alloc(pixels * 4);
        f32(ptr, pixels).set(x.subarray(0, pixels));
      }
      table[i] = ptr;
    });
    // The answer goes straight into a plane of the run's arena (outside a scope, through a temporary).
    const all = plane(pixels * planesOut);
    const direct = ptrOf(all);
    const pOut = direct >= 0 ? direct : alloc(pixels * planesOut * 4);
    const scratchBytes = (k.forestScratchBytes(inputs.length, width) + 63) & ~63;
    const t0 = performance.now();
    const module = mode !== 2 && pixels >= FOREST_SPLIT_MIN_PIXELS && helpers && helpers.count > 0 ? forestModule() : null;
    let split = false;
    if (module) {
      // One scratch area per thread (the engine thread is slot 0), and the parameters as i32.
      const threads = helpers!.count + 1;
      const pScratch = alloc(scratchBytes * threads);
      const pParams = alloc(52);
      i32(pParams, 13).set([inputs.length, pNodes, pLeafOf, pRoots, pDepths, f.roots.length, pLeaves, width, pClasses, mode, pScratch, scratchBytes, cols]);
      const band: SplittableKernel = { run: (t, o, n, arg, slot) => k.forestBand(t, o, n, arg ?? pParams, slot ?? 0), module, name: 'forestBand' };
      split = helpers!.runSplit(band, pTable, inputs.length, pOut, pixels, pParams, FOREST_SPLIT_MIN_PIXELS);
    }
    const walked = split ? -1 : k.forestRun(pTable, inputs.length, pixels, cols, pNodes, pLeafOf, pRoots, pDepths, f.roots.length, pLeaves, width, pClasses, mode, pOut, alloc(scratchBytes));
    if (stats) stats.walked = walked;
    addStage('kernel', performance.now() - t0);
    if (direct < 0) all.set(f32(pOut, pixels * planesOut));
    return Array.from({ length: planesOut }, (_, c) => all.subarray(c * pixels, (c + 1) * pixels));
  } finally {
    release(m);
  }
}
