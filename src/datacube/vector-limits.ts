// Limits on vector inputs, set once per thread from the configuration (XEO_VECTOR_*): how large a
// file or URL may be, and how many features and vertices its geometries may have. Hostile inputs
// (a file of gigabytes, a polygon of a million vertices) stop at these with a clear error, before
// they cost memory or time.
import { DEFAULT_GEOMETRY_LIMITS, type GeometryLimits } from '../geometry/geometry-column.js';

export interface VectorLimits {
  /** Most bytes of one vector file or URL. */
  maxBytes: number;
  geometry: GeometryLimits;
}

let limits: VectorLimits = { maxBytes: 256 * 1024 * 1024, geometry: DEFAULT_GEOMETRY_LIMITS };

export function configureVectorLimits(l: Partial<{ maxBytes: number; maxVertices: number; maxVerticesPerGeometry: number; maxGeometries: number }>): void {
  limits = {
    maxBytes: l.maxBytes ?? limits.maxBytes,
    geometry: {
      maxVertices: l.maxVertices ?? limits.geometry.maxVertices,
      maxVerticesPerGeometry: l.maxVerticesPerGeometry ?? limits.geometry.maxVerticesPerGeometry,
      maxGeometries: l.maxGeometries ?? limits.geometry.maxGeometries,
    },
  };
}

export function vectorLimits(): VectorLimits {
  return limits;
}
