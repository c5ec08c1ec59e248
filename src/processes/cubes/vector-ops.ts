// Vector cube operations shared by several processes.
import { DataCube } from '../../datacube/datacube.js';
import { inCrs } from '../../datacube/spans.js';
import type { Extent } from '../../data/load.js';

/** filter_bbox on a vector cube: the geometries lying entirely within the box (empty ones go). */
export function filterBboxVector(cube: DataCube, extent: Extent): DataCube {
  const f = cube.features!;
  const c = inCrs(f.geometries, extent.crs ?? 4326);
  const keep: number[] = [];
  for (let g = 0; g < c.length; g++) {
    const v0 = c.ringStarts[c.partRings[c.geomParts[g]]];
    const v1 = c.ringStarts[c.partRings[c.geomParts[g + 1]]];
    if (v0 === v1) continue;
    let inside = true;
    for (let v = v0; v < v1 && inside; v++) {
      const x = c.xy[2 * v];
      const y = c.xy[2 * v + 1];
      inside = x >= extent.west && x <= extent.east && y >= extent.south && y <= extent.north;
    }
    if (inside) keep.push(g);
  }
  const d = cube.dims.findIndex((x) => x.type === 'geometry');
  return cube.select(d, keep);
}
