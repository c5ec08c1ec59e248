// Batch jobs that aggregate over geometries (aggregate_spatial of a pixel-wise raster pipeline),
// cut by space like other batch work: the geometries are grouped by the cell of the output grid
// their box's centre falls in, and each group is one chunk, run with every load filling just the
// window its members cover (RunContext.region) and aggregate_spatial computing just those members
// (RunContext.zonal). Any reducer works, since each geometry lies wholly in its chunk's window;
// chunks run anywhere (on workers too) and their parts, a few values per geometry, are joined in
// geometry order and written once in the saved format.
import type { Grid } from '../core/grid.js';
import { isObject, walkReferences, type Graph } from '../core/graph.js';
import { classifyGraph, type ChunkingEnv, type Window } from './chunking.js';
import type { VectorFeatures } from '../datacube/features.js';
import { inCrs } from '../datacube/spans.js';

/** Processes that may follow aggregate_spatial in a zonal job: they work per geometry. */
const PER_GEOMETRY = new Set(['save_result', 'apply', 'reduce_dimension', 'apply_dimension', 'filter_temporal', 'filter_bands', 'filter_labels', 'rename_labels', 'rename_dimension']);
/** Arguments naming a dimension, which must not be the geometry one. */
const DIMENSION_ARGS = ['dimension', 'target_dimension', 'source', 'target'];

export interface ZonalShape {
  /** The aggregate_spatial node. */
  node: string;
  /** The graph that gives its geometries alone (its ancestors, or the inline GeoJSON loaded). */
  geometries: Graph;
}

/** The ancestors of a node (itself included), through from_node references of top-level arguments. */
function ancestors(g: Graph, id: string, into = new Set<string>()): Set<string> {
  if (into.has(id) || !g[id]) return into;
  into.add(id);
  walkReferences(g[id].arguments, { node: (n) => ancestors(g, n, into) });
  return into;
}

/** The sub-graph of some nodes, with `result` on one of them. */
function subGraph(g: Graph, ids: Set<string>, result: string): Graph {
  const out: Graph = {};
  for (const id of ids) out[id] = { ...g[id], result: id === result };
  return out;
}

/**
 * Whether a graph is a zonal job: exactly one aggregate_spatial, whose data comes from pixel-wise
 * processes only and whose result only meets processes that work per geometry. Null otherwise.
 */
export function zonalShape(graph: unknown, env: ChunkingEnv): ZonalShape | null {
  if (!isObject(graph)) return null;
  const g = graph as Graph;
  const agg = Object.entries(g).filter(([, n]) => isObject(n) && n.process_id === 'aggregate_spatial' && (n.namespace ?? null) !== 'user' && !env.userProcess('aggregate_spatial'));
  if (agg.length !== 1) return null;
  const [node, n] = agg[0];
  const args = n.arguments ?? {};
  const data = args.data as { from_node?: unknown } | undefined;
  if (!isObject(data) || typeof data.from_node !== 'string' || !g[data.from_node]) return null;
  const upstream = ancestors(g, data.from_node);
  if (!classifyGraph(subGraph(g, upstream, data.from_node), env).local) return null;
  const geomArg = args.geometries;
  let geometries: Graph;
  let geomNodes = new Set<string>();
  if (isObject(geomArg) && typeof geomArg.from_node === 'string') {
    geomNodes = ancestors(g, geomArg.from_node);
    // Geometries that depend on the raster data cannot be evaluated apart.
    if ([...geomNodes].some((id) => upstream.has(id))) return null;
    geometries = subGraph(g, geomNodes, geomArg.from_node);
  } else if (isObject(geomArg) && typeof geomArg.type === 'string') {
    geometries = { geometries: { process_id: 'load_geojson', arguments: { data: geomArg }, result: true } };
  } else return null;
  // Everything else follows aggregate_spatial and must work per geometry.
  for (const [id, other] of Object.entries(g)) {
    if (id === node || upstream.has(id) || geomNodes.has(id)) continue;
    if (!isObject(other) || !PER_GEOMETRY.has(other.process_id) || env.userProcess(other.process_id)) return null;
    const a = other.arguments ?? {};
    if (DIMENSION_ARGS.some((k) => a[k] === 'geometry' || (a[k] !== undefined && a[k] !== null && typeof a[k] !== 'string'))) return null;
    // a following process must not reach back into the raster pipeline or the geometries
    let back = false;
    walkReferences(other.arguments, { node: (r) => (back ||= upstream.has(r) || geomNodes.has(r)) });
    if (back) return null;
  }
  return { node, geometries };
}

/** Most values one chunk of a zonal job holds (its window over every date and band): 16 MiB of Float32. */
export const ZONAL_CHUNK_VALUES = 4 * 2 ** 20;

/**
 * The cell of a zonal job, in pixels: the job's chunk side, or less when a chunk's window of about a
 * cell over `planes` dates and bands would pass ZONAL_CHUNK_VALUES; then the largest power of two
 * within (raster blocks are powers of two: a cell of whole blocks), at least 256.
 */
export function zonalCell(chunkSize: number, planes: number): number {
  const fits = Math.sqrt(ZONAL_CHUNK_VALUES / Math.max(1, planes));
  return Math.min(chunkSize, Math.max(256, 2 ** Math.floor(Math.log2(fits))));
}

/**
 * The decoded blocks a zonal job keeps so that each is decoded once: chunks go row by row of cells,
 * and a block is taken again by the next row's windows, which reach into it; so three rows of
 * cells across the grid, over every date and band, of 16-bit samples (the common case; wider
 * samples decode some edge blocks twice within the same bytes).
 */
export function zonalFrontierBytes(gridWidth: number, cell: number, planes: number): number {
  return 3 * cell * gridWidth * planes * 2;
}

export interface ZonalGroup {
  /** The window of the output grid the group's geometries cover. */
  window: Window;
  /** Positions of the group's geometries. */
  members: number[];
}

/**
 * Groups the geometries by the cell (of `cell` pixels) of `grid` their box's centre lies in; each
 * group's window is the union of its members' boxes (one pixel of margin) within the grid. A
 * geometry larger than a cell is a group of its own; geometries outside the grid join the first
 * group (they have no pixels, wherever they go).
 */
export function groupGeometries(features: VectorFeatures, grid: Grid, cell: number): ZonalGroup[] {
  const col = inCrs(features.geometries, grid.epsg);
  const boxes = col.bboxes();
  const t = grid.transform;
  const cells = new Map<string, ZonalGroup & { c0: number; r0: number; c1: number; r1: number }>();
  const groups: (ZonalGroup & { c0: number; r0: number; c1: number; r1: number })[] = [];
  const outside: number[] = [];
  for (let g = 0; g < col.length; g++) {
    const b = boxes.subarray(4 * g, 4 * g + 4);
    if (!Number.isFinite(b[0])) {
      outside.push(g);
      continue;
    }
    const ca = (b[0] - t[0]) / t[1],
      cb = (b[2] - t[0]) / t[1];
    const ra = (b[3] - t[3]) / t[5],
      rb = (b[1] - t[3]) / t[5];
    const c0 = Math.max(0, Math.floor(Math.min(ca, cb)) - 1);
    const c1 = Math.min(grid.width - 1, Math.ceil(Math.max(ca, cb)) + 1);
    const r0 = Math.max(0, Math.floor(Math.min(ra, rb)) - 1);
    const r1 = Math.min(grid.height - 1, Math.ceil(Math.max(ra, rb)) + 1);
    if (c0 > c1 || r0 > r1) {
      outside.push(g);
      continue;
    }
    const big = c1 - c0 + 1 > cell || r1 - r0 + 1 > cell;
    const key = big ? `big${g}` : `${Math.floor((c0 + c1) / 2 / cell)},${Math.floor((r0 + r1) / 2 / cell)}`;
    let grp = cells.get(key);
    if (!grp) {
      grp = { window: { col: 0, row: 0, width: 0, height: 0 }, members: [], c0, r0, c1, r1 };
      cells.set(key, grp);
      groups.push(grp);
    }
    grp.members.push(g);
    grp.c0 = Math.min(grp.c0, c0);
    grp.r0 = Math.min(grp.r0, r0);
    grp.c1 = Math.max(grp.c1, c1);
    grp.r1 = Math.max(grp.r1, r1);
  }
  if (!groups.length) groups.push({ window: { col: 0, row: 0, width: 0, height: 0 }, members: [], c0: 0, r0: 0, c1: 0, r1: 0 });
  groups[0].members.push(...outside);
  // Row by row of cells, as raster chunks go: neighbouring chunks read neighbouring blocks (which
  // the thread's block cache then holds).
  const cellOf = (g: { c0: number; r0: number; c1: number; r1: number }) => [Math.floor((g.r0 + g.r1) / 2 / cell), Math.floor((g.c0 + g.c1) / 2 / cell)];
  groups.sort((a, b) => {
    const [ra, ca] = cellOf(a);
    const [rb, cb] = cellOf(b);
    return ra - rb || ca - cb;
  });
  return groups.map((g) => ({ window: { col: g.c0, row: g.r0, width: g.c1 - g.c0 + 1, height: g.r1 - g.r0 + 1 }, members: g.members.sort((a, b) => a - b) }));
}
