// A trained random forest as flat arrays: what training (train.ts) makes, the model file
// (model-file.ts) stores, and the forest kernel (kernels/forest.ts) walks per pixel.
//
// Nodes of all trees share one index space. A node n is a split when feature[n] >= 0: a value x
// goes to the left child child[n] when x[feature[n]] <= threshold[n], else to the right child
// child[n] + 1 (children are always made in pairs). A leaf has feature[n] = -1 and child[n] is its
// leaf index l: `width` numbers from leaves[l * width] are its answer, the class probabilities
// (classification, width = number of classes) or its value (regression, width = 1).

export type ForestKind = 'classification' | 'regression';

/** What training found out and how it was asked for: stored with the model, shown in its STAC Item. */
export interface ForestInfo {
  /** The seed that made the model (drawn at random when the graph gave none). */
  seed: number;
  /** Predictors tried at each split. */
  maxVariables: number;
  /** How max_variables was given (an integer or a name). */
  maxVariablesGiven: number | string;
  /** Samples trained on (features with a label and valid predictors). */
  samples: number;
  /** Features left out for no-data predictors or no label. */
  skipped: number;
  /** Out-of-bag figure: accuracy (classification) or R² (regression); null when no sample was out of bag. */
  oobScore: number | null;
  /** Samples that were out of bag in at least one tree. */
  oobSamples: number;
  /** Deepest leaf (the root is depth 0). */
  depth: number;
  /** Milliseconds of training. */
  trainMs: number;
}

export interface Forest {
  kind: ForestKind;
  /** Class values in output order (classification); empty for regression. */
  classes: number[];
  /** Names of the predictors in input order (the band order a prediction expects). */
  predictors: string[];
  roots: Int32Array;
  feature: Int32Array;
  threshold: Float32Array;
  child: Int32Array;
  leaves: Float32Array;
  info: ForestInfo;
}

/** Numbers per leaf. */
export const leafWidth = (f: Pick<Forest, 'kind' | 'classes'>): number => (f.kind === 'classification' ? f.classes.length : 1);

/** The leaf index one tree gives for the values x (read with stride 1 from `at`). */
export function leafOf(f: Forest, tree: number, x: ArrayLike<number>, at = 0): number {
  let n = f.roots[tree];
  while (f.feature[n] >= 0) n = f.child[n] + (x[at + f.feature[n]] <= f.threshold[n] ? 0 : 1);
  return f.child[n];
}

/**
 * The forest's answer for one vector of predictor values, in JavaScript (the kernel is the fast
 * way; this one is for single values and checks): the class value with the highest mean
 * probability (the first on ties) or the mean value; NaN when any value is NaN.
 */
export function predictOne(f: Forest, x: ArrayLike<number>): number {
  for (let i = 0; i < f.predictors.length; i++) if (Number.isNaN(x[i]) || x[i] === undefined) return NaN;
  const acc = sums(f, x);
  if (f.kind === 'regression') return Math.fround(acc[0] * Math.fround(1 / f.roots.length));
  const w = acc.length;
  let best = 0;
  for (let k = 1; k < w; k++) if (acc[k] > acc[best]) best = k;
  return f.classes[best];
}

/** The mean class probabilities for one vector of predictor values (NaN for each when any value is NaN). */
export function probabilitiesOne(f: Forest, x: ArrayLike<number>): number[] {
  const w = leafWidth(f);
  for (let i = 0; i < f.predictors.length; i++) if (Number.isNaN(x[i]) || x[i] === undefined) return new Array(w).fill(NaN);
  const inv = Math.fround(1 / f.roots.length);
  return Array.from(sums(f, x), (v) => Math.fround(v * inv));
}

/** The leaves' numbers summed over the trees in float32, in tree order (as the kernel sums them, so both agree bit for bit). */
function sums(f: Forest, x: ArrayLike<number>): Float32Array {
  const w = leafWidth(f);
  const acc = new Float32Array(w);
  for (let t = 0; t < f.roots.length; t++) {
    const l = leafOf(f, t, x) * w;
    for (let k = 0; k < w; k++) acc[k] += f.leaves[l + k];
  }
  return acc;
}

/**
 * Gives a forest its JSON form: a summary (kind, classes, predictors, trees, nodes, training
 * figures), not its arrays. So a graph whose answer is a model shows what it is, and code that
 * keys on JSON texts of values (the fusion cache keys on `context`) never serialises the trees.
 */
export function withSummary(f: Forest): Forest {
  Object.defineProperty(f, 'toJSON', {
    enumerable: false,
    value: () => ({ type: 'ml-model', architecture: 'random-forest', kind: f.kind, classes: f.classes, predictors: f.predictors, trees: f.roots.length, nodes: f.feature.length, info: f.info }),
  });
  return f;
}

/** A value is a forest (the model objects the ML processes pass along). */
export function isForest(v: unknown): v is Forest {
  return !!v && typeof v === 'object' && (v as Forest).roots instanceof Int32Array && (v as Forest).leaves instanceof Float32Array;
}
