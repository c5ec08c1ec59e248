// What a service's warm-up asks of its STAC API collections before its first tile: for each
// load_collection of its graph whose arguments are written out (an id, a bbox or none, dates or
// none, the bands, no property conditions), the search its tiles will make, over the service's
// whole area (data/stac-collections.ts StacCollections.warm). Loads with computed or parameter
// arguments are left to the tiles.
import type { WarmUp } from '../data/stac-collections.js';
import { transformBox } from '../geometry/crs.js';
import { isObject } from '../core/graph.js';
import { bboxOf, intervalOf } from '../processes/cubes/extents.js';

/** Loads of one service warmed up, at most. */
const MAX_LOADS = 4;

/** The warm-ups of a service's graph (none when no load can be known before it runs). */
export function warmUpsOf(graph: unknown): WarmUp[] {
  if (!isObject(graph)) return [];
  const out: WarmUp[] = [];
  for (const node of Object.values(graph)) {
    if (!isObject(node) || node.process_id !== 'load_collection' || !isObject(node.arguments)) continue;
    const a = node.arguments;
    if (typeof a.id !== 'string' || (a.properties !== undefined && a.properties !== null)) continue;
    const bands = a.bands === undefined || a.bands === null ? null : Array.isArray(a.bands) && a.bands.every((b) => typeof b === 'string') ? a.bands : undefined;
    if (bands === undefined) continue;
    try {
      const ext = a.spatial_extent;
      let bbox: WarmUp['bbox'] = null;
      if (isObject(ext) && typeof ext.west === 'number') {
        const e = bboxOf(ext, 'load_collection', 'spatial_extent');
        bbox = transformBox([e.west, e.south, e.east, e.north], e.crs ?? 4326, 4326);
      } else if (ext !== undefined && ext !== null) continue; // GeoJSON or a parameter: known when it runs
      const t = a.temporal_extent;
      if (t !== undefined && t !== null && !(Array.isArray(t) && t.every((x) => x === null || typeof x === 'string'))) continue;
      const temporal = t === undefined || t === null ? null : intervalOf(t, 'load_collection', 'temporal_extent');
      out.push({ collection: a.id, bbox, temporal, bands });
    } catch {
      continue; // an argument the tiles will refuse, with its reason
    }
    if (out.length >= MAX_LOADS) break;
  }
  return out;
}
