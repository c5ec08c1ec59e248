// Limits of random forests on this thread, set once from the configuration (XEO_ML_MAX_WORK,
// XEO_ML_MAX_DEPTH): how much work one training may take and how deep a tree may grow. A hostile
// graph (a billion trees) stops at these with a clear error. (Model files are bounded where they
// are read: data/model-source.ts, XEO_ML_MODEL_MAX_BYTES.)

export interface MlLimits {
  /** Most samples × predictors × trees of one training. */
  maxWork: number;
  /** Deepest tree (the root is depth 0). */
  maxDepth: number;
}

let limits: MlLimits = { maxWork: 200_000_000, maxDepth: 64 };

export function configureMlLimits(l: Partial<MlLimits>): void {
  limits = { ...limits, ...l };
}

export function mlLimits(): MlLimits {
  return limits;
}
