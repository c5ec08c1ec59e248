// Where a service has data: the union of its loads' extents (the literal spatial_extent of each
// load_collection, else the whole collection), in WGS84. Maps zoom to it, WMTS announces it, and
// tiles outside it are answered as empty without computing anything.
import type { CatalogSource } from '../core/catalog.js';
import { transformBox } from '../geometry/crs.js';
import { bboxOf } from '../processes/cubes/extents.js';
import { isObject } from '../core/graph.js';

export type LonLatBox = [number, number, number, number];

/** The WGS84 box of the graph's loads, or null when it cannot be known (load_stac, computed extents, no load). */
export async function serviceExtent(catalog: CatalogSource, graph: unknown): Promise<LonLatBox | null> {
  if (!isObject(graph)) return null;
  let box: LonLatBox | null = null;
  let loads = 0;
  for (const node of Object.values(graph)) {
    if (!isObject(node) || !isObject(node.arguments)) continue;
    if (node.process_id === 'load_stac') return null;
    if (node.process_id !== 'load_collection') continue;
    loads++;
    const a = node.arguments;
    let b: LonLatBox | null = null;
    const ext = a.spatial_extent;
    if (isObject(ext) && typeof ext.west === 'number') {
      try {
        const e = bboxOf(ext, 'load_collection', 'spatial_extent');
        b = transformBox([e.west, e.south, e.east, e.north], e.crs ?? 4326, 4326);
      } catch {
        return null;
      }
    } else if (ext === undefined || ext === null) {
      if (typeof a.id !== 'string') return null;
      // A STAC API collection: the extent its API announces (its items are not kept here).
      const remote = (await catalog.collections.get(a.id))?.remote;
      if (remote) b = remote.extent.bbox;
      const items = remote ? [] : await catalog.collections.items(a.id);
      for (const it of items) b = union(b, it.bbox4326);
    } else {
      return null; // GeoJSON or a parameter: computed at run time
    }
    if (!b || !b.every(Number.isFinite)) return null;
    box = union(box, b);
  }
  return loads > 0 ? box : null;
}

function union(a: LonLatBox | null, b: LonLatBox): LonLatBox {
  if (!a) return [...b];
  return [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[2], b[2]), Math.max(a[3], b[3])];
}
