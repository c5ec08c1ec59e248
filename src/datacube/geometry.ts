// Geometry arguments against raster grids: what processes take as geometries (a vector cube, or
// GeoJSON as the deprecated form of the definitions), validated; their boxes for narrowing loads;
// and masks of a grid's pixels (by the kernels' pixel rules, datacube/spans.ts).
import { ApiError } from '../core/errors.js';
import { transformBox } from '../geometry/crs.js';
import { allPlainlyValid } from '../geometry/plain-polygons.js';
import type { Grid } from '../core/grid.js';
import { DataCube } from './datacube.js';
import type { VectorFeatures } from './features.js';
import { featuresFromGeoJson } from './geojson-in.js';
import { spansMask, spansOf } from './spans.js';
import type { VectorLimits } from './vector-limits.js';

// JSTS (228 modules) is loaded by the first graph with geometries: threads that see none never
// load it. Its validity check, our bridge to its relations and buffers, and both at once (an idle
// compute thread loads them ahead of need).
export const jstsValidity = () => import('./validity.js');
export const jstsBridge = () => import('./jsts-bridge.js');
export const preloadJsts = () => Promise.all([jstsValidity(), jstsBridge()]);

/**
 * Refuses invalid polygons (naming the first, as JSTS finds it), marking the features as checked
 * otherwise. Plainly valid ones (one ring, short, nothing close to touching) need no JSTS.
 */
export async function checkedFeatures(f: VectorFeatures, processId: string, parameter: string): Promise<VectorFeatures> {
  if (f.validated) return f;
  if (allPlainlyValid(f.geometries)) return f.withGeometries(f.geometries, true);
  const { firstInvalid } = await jstsValidity();
  const bad = firstInvalid(f);
  if (bad) {
    const id = f.ids?.[bad.feature];
    throw new ApiError('ProcessParameterInvalid', {
      process: processId,
      parameter,
      reason: `feature ${bad.feature}${id !== null && id !== undefined ? ` (id ${JSON.stringify(id)})` : ''} is not a valid polygon: ${bad.fault}`,
    });
  }
  return f.withGeometries(f.geometries, true);
}

/** The features of a geometries argument: a vector cube's, or GeoJSON's (validated, within `limits`). */
export async function geometriesArg(v: unknown, processId: string, limits: VectorLimits, parameter = 'geometries'): Promise<VectorFeatures> {
  if (v instanceof DataCube) {
    if (!v.features) throw new ApiError('ProcessParameterInvalid', { process: processId, parameter, reason: 'a vector data cube (with a geometry dimension) or GeoJSON is expected, not a raster data cube' });
    return checkedFeatures(v.features, processId, parameter);
  }
  return checkedFeatures(featuresFromGeoJson(v, { processId, parameter, limits: limits.geometry }), processId, parameter);
}

/** The box of the features in another CRS ([NaN x 4] when they are all empty or the box cannot be mapped). */
export function featuresBox(f: VectorFeatures, epsg: number): [number, number, number, number] {
  const b = f.geometries.bbox();
  if (!b.every(Number.isFinite)) return [NaN, NaN, NaN, NaN];
  if (f.epsg === epsg) return b;
  try {
    const t = transformBox(b, f.epsg, epsg);
    return t.every(Number.isFinite) ? t : [NaN, NaN, NaN, NaN];
  } catch {
    return [NaN, NaN, NaN, NaN];
  }
}

/** 1 where a pixel of the grid belongs to any of the features (pixel rules of datacube/spans.ts). */
export function rasterizeMask(f: VectorFeatures, grid: Grid): Uint8Array {
  return spansMask(spansOf(f.geometries, grid), grid);
}
