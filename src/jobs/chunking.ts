// Whether a batch job can be cut into output chunks, and the chunks. A graph is cut only when
// every process in it (child processes and the user's stored processes included) computes each
// pixel from the same pixel of its inputs: then a chunk run with every load filling the chunk's
// grid (RunContext.region) gives exactly that part of the whole result. Anything that looks at
// neighbours, at the whole extent or changes the grid runs as one piece.
import type { Grid } from '../core/grid.js';

import { isObject, processKey, walkReferences, type Graph } from '../core/graph.js';

export interface ChunkingEnv {
  /** The categories of a predefined process, or undefined when there is none. */
  categories(processId: string): string[] | undefined;
  /** The graph of the user's stored process, or null. */
  userProcess(processId: string, namespace?: string | null): Graph | null;
}

/** Cube processes that work pixel by pixel whatever their arguments. */
const LOCAL = new Set([
  'load_collection',
  'load_stac',
  'save_result',
  'apply',
  'ndvi',
  'mask',
  'mask_polygon',
  'merge_cubes',
  'filter_temporal',
  'filter_bands',
  'add_dimension',
  'climatological_normal',
  'anomaly',
  'resample_cube_temporal',
]);

/** Cube processes that are pixel-wise unless an argument names a spatial dimension. */
const DIMENSION_ARGS: Record<string, string[]> = {
  reduce_dimension: ['dimension'],
  apply_dimension: ['dimension', 'target_dimension'],
  filter_labels: ['dimension'],
  rename_labels: ['dimension'],
  drop_dimension: ['name'],
  rename_dimension: ['source', 'target'],
  aggregate_temporal: ['dimension'],
  aggregate_temporal_period: ['dimension'],
};

/** Processes folded into a deferred load (its extent or grid) when their data is one; on loaded data they change the grid. */
const FOLDED = new Set(['filter_bbox', 'filter_spatial', 'resample_spatial']);
/** Processes whose result is still a deferred load when their data is one. */
const KEEPS_DEFERRED = new Set(['load_collection', 'load_stac', 'filter_temporal', 'filter_bands', ...FOLDED]);

const SPATIAL = new Set(['x', 'y']);

export interface Verdict {
  /** Every process is pixel-wise. */
  local: boolean;
  /** Why not, naming the node and process. */
  reason: string | null;
}

/** Whether every process of the graph is spatially local. */
export function classifyGraph(graph: unknown, env: ChunkingEnv): Verdict {
  try {
    checkGraph(graph, env, new Set(), 0);
    return { local: true, reason: null };
  } catch (e) {
    if (e instanceof NotLocal) return { local: false, reason: e.message };
    throw e;
  }
}

class NotLocal extends Error {}

function checkGraph(graph: unknown, env: ChunkingEnv, udpsSeen: Set<string>, depth: number): void {
  if (!isObject(graph) || depth > 50) throw new NotLocal('the graph is too deeply nested to analyse');
  const g = graph as Graph;
  const deferred = (v: unknown, seen = new Set<string>()): boolean => {
    if (!isObject(v) || typeof v.from_node !== 'string' || seen.has(v.from_node)) return false;
    const n = g[v.from_node];
    if (!n || !KEEPS_DEFERRED.has(n.process_id) || (n.namespace ?? null) === 'user' || env.userProcess(n.process_id, n.namespace)) return false;
    if (n.process_id === 'load_collection' || n.process_id === 'load_stac') return true;
    seen.add(v.from_node);
    return deferred(n.arguments?.data, seen);
  };
  for (const [id, node] of Object.entries(g)) {
    if (!isObject(node) || typeof node.process_id !== 'string') throw new NotLocal(`node '${id}' is not a process node`);
    const pid = node.process_id;
    const args = isObject(node.arguments) ? node.arguments : {};
    const udp = node.namespace === 'backend' ? null : env.userProcess(pid, node.namespace);
    if (udp) {
      const key = processKey(pid, node.namespace) ?? pid;
      if (!udpsSeen.has(key)) {
        udpsSeen.add(key);
        checkGraph(udp, env, udpsSeen, depth + 1);
      }
    } else {
      const categories = env.categories(pid);
      if (!categories) throw new NotLocal(`node '${id}': process '${pid}' is not known`);
      // A UDF inside a child process runs on what its parent hands it: pixel-wise parents
      // (apply, and reduce_dimension or apply_dimension along a non-spatial dimension) hand it one
      // chunk at a time, as the reference back-ends hand it one tile at a time.
      const childUdf = pid === 'run_udf' && depth > 0;
      if (categories.includes('cubes') && !childUdf) checkCubeProcess(id, pid, args, deferred);
    }
    walkReferences(args, { child: (child) => checkGraph(child, env, udpsSeen, depth + 1) });
  }
}

function checkCubeProcess(id: string, pid: string, args: Record<string, unknown>, deferred: (v: unknown) => boolean): void {
  if (LOCAL.has(pid)) return;
  const dims = DIMENSION_ARGS[pid];
  if (dims) {
    for (const name of dims) {
      const v = args[name];
      if (v === undefined || v === null) continue;
      if (typeof v !== 'string') throw new NotLocal(`node '${id}' (${pid}): its '${name}' is not a plain dimension name`);
      if (SPATIAL.has(v)) throw new NotLocal(`node '${id}' (${pid}) works along the spatial dimension '${v}'`);
    }
    return;
  }
  if (FOLDED.has(pid)) {
    if (deferred(args.data)) return;
    throw new NotLocal(`node '${id}' (${pid}) changes the grid of data that is already computed`);
  }
  throw new NotLocal(`node '${id}' (${pid}) looks beyond each pixel`);
}

/** The formats of the graph's save_result nodes (top level), in node order. null for a format that is not a plain text. */
export function savedFormats(graph: unknown): (string | null)[] {
  if (!isObject(graph)) return [];
  return Object.values(graph as Graph)
    .filter((n) => isObject(n) && n.process_id === 'save_result')
    .map((n) => (typeof n.arguments?.format === 'string' ? n.arguments.format : null));
}

export interface Window {
  col: number;
  row: number;
  width: number;
  height: number;
}

/** Square windows of `size` pixels covering the grid, row by row (the last ones of a row or column smaller). */
export function chunkWindows(width: number, height: number, size: number): Window[] {
  const out: Window[] = [];
  for (let row = 0; row < height; row += size) {
    for (let col = 0; col < width; col += size) out.push({ col, row, width: Math.min(size, width - col), height: Math.min(size, height - row) });
  }
  return out;
}

/** The grid of a window of `grid`. */
export function windowGrid(grid: Grid, w: Window): Grid {
  const t = grid.transform;
  return { epsg: grid.epsg, transform: [t[0] + w.col * t[1] + w.row * t[2], t[1], t[2], t[3] + w.col * t[4] + w.row * t[5], t[4], t[5]], width: w.width, height: w.height };
}
