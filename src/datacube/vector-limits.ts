// Limits on vector inputs, from the configuration (XEO_VECTOR_*): how large a file or URL may be,
// and how many features and vertices its geometries may have. Hostile inputs (a file of
// gigabytes, a polygon of a million vertices) stop at these with a clear error, before they cost
// memory or time. Each engine holds its own (EngineParts.vector); a run reaches them through it.
import { DEFAULT_GEOMETRY_LIMITS, type GeometryLimits } from '../geometry/geometry-column.js';
import type { RunContext } from '../core/run-context.js';

export interface VectorLimits {
  /** Most bytes of one vector file or URL. */
  maxBytes: number;
  geometry: GeometryLimits;
}

export const DEFAULT_VECTOR_LIMITS: VectorLimits = Object.freeze({ maxBytes: 256 * 1024 * 1024, geometry: DEFAULT_GEOMETRY_LIMITS });

declare module '../core/run-context.js' {
  interface EngineParts {
    /** Limits on vector inputs (XEO_VECTOR_*). */
    vector: VectorLimits;
  }
}

/** The limits of these settings (XEO_VECTOR_*), the defaults where one is not given. */
export function vectorLimitsOf(l: Partial<{ maxBytes: number; maxVertices: number; maxVerticesPerGeometry: number; maxGeometries: number }> = {}): VectorLimits {
  const d = DEFAULT_VECTOR_LIMITS;
  return {
    maxBytes: l.maxBytes ?? d.maxBytes,
    geometry: {
      maxVertices: l.maxVertices ?? d.geometry.maxVertices,
      maxVerticesPerGeometry: l.maxVerticesPerGeometry ?? d.geometry.maxVerticesPerGeometry,
      maxGeometries: l.maxGeometries ?? d.geometry.maxGeometries,
    },
  };
}

/** The limits a run reads under: its engine's, or the defaults for a graph evaluated without one. */
export const vectorLimits = (run: RunContext | undefined): VectorLimits => run?.engine.vector ?? DEFAULT_VECTOR_LIMITS;
