// Limits of random forests on an engine, from the configuration (XEO_ML_MAX_WORK,
// XEO_ML_MAX_DEPTH): how much work one training may take and how deep a tree may grow. A hostile
// graph (a billion trees) stops at these with a clear error. (Model files are bounded where they
// are read: data/model-source.ts, XEO_ML_MODEL_MAX_BYTES.)
import type { RunContext } from '../core/run-context.js';

export interface MlLimits {
  /** Most samples × predictors × trees of one training. */
  maxWork: number;
  /** Deepest tree (the root is depth 0). */
  maxDepth: number;
}

declare module '../core/run-context.js' {
  interface EngineParts {
    /** Limits of random-forest training and of the trees of loaded models (XEO_ML_*). */
    mlLimits: MlLimits;
  }
}

/** The defaults (XEO_ML_MAX_WORK, XEO_ML_MAX_DEPTH): an engine built without settings has these. */
export const DEFAULT_ML_LIMITS: MlLimits = Object.freeze({ maxWork: 200_000_000, maxDepth: 64 });

/** The limits of the engine a run is on (the defaults for a graph evaluated without one). */
export function mlLimits(run: RunContext | undefined): MlLimits {
  return run?.engine.mlLimits ?? DEFAULT_ML_LIMITS;
}
