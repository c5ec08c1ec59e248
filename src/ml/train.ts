// Random forests as Breiman (2001) grows them: each tree on a bootstrap sample of the training
// samples, each split the best CART split (Gini impurity for classes, variance for values) over
// `maxVariables` predictors drawn at random at that node, trees grown until their leaves are pure
// (or the depth limit). Out-of-bag samples give the accuracy or R² without a test set.
//
// Speed: every predictor is first cut into at most 256 bins (each distinct value its own bin when
// there are no more than 256, else quantiles), so a split search is one pass over the node's
// samples filling a histogram and one pass over its bins; thresholds are midpoints between the
// values on either side of a bin edge, so the model answers on raw values. Each tree draws its
// numbers from a generator seeded by the forest's seed and the tree's position: the same seed gives
// the same forest, bit for bit.
import { mulberry32 } from '../core/random.js';
import { withSummary, type Forest, type ForestInfo, type ForestKind } from './forest.js';
import { BINS, binPredictors } from './bins.js';

export interface TrainInput {
  kind: ForestKind;
  /** Predictor values, predictor by predictor: x[f * n + i] is predictor f of sample i (no NaN). */
  x: Float32Array;
  n: number;
  p: number;
  /** Class values or target values per sample. */
  y: Float64Array;
  predictors: string[];
  numTrees: number;
  maxVariables: number;
  maxVariablesGiven: number | string;
  seed: number;
  /** Leaves deeper than this are not split. */
  maxDepth: number;
  /** Features left out before training (counted in the model's metadata). */
  skipped: number;
}

/** Growable flat node arrays. */
class Nodes {
  feature = new Int32Array(1024);
  threshold = new Float32Array(1024);
  child = new Int32Array(1024);
  leaves: Float32Array;
  count = 0;
  leafCount = 0;

  constructor(private readonly width: number) {
    this.leaves = new Float32Array(1024 * width);
  }

  add(): number {
    if (this.count === this.feature.length) {
      const grow = <T extends Int32Array | Float32Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(a.length * 2);
        b.set(a);
        return b;
      };
      this.feature = grow(this.feature);
      this.threshold = grow(this.threshold);
      this.child = grow(this.child);
    }
    return this.count++;
  }

  leaf(node: number): number {
    if ((this.leafCount + 1) * this.width > this.leaves.length) {
      const b = new Float32Array(this.leaves.length * 2);
      b.set(this.leaves);
      this.leaves = b;
    }
    this.feature[node] = -1;
    this.child[node] = this.leafCount;
    return this.leafCount++ * this.width;
  }
}

/** Trains a forest; synchronous and CPU-bound: call it on an engine thread only. */
export function trainForest(inp: TrainInput): Forest {
  const t0 = performance.now();
  const { n, p, x, kind } = inp;
  const classes = kind === 'classification' ? [...new Set(inp.y)].sort((a, b) => a - b) : [];
  const k = kind === 'classification' ? classes.length : 1;
  const yc = new Int32Array(n);
  if (kind === 'classification') {
    const index = new Map(classes.map((c, i) => [c, i]));
    for (let i = 0; i < n; i++) yc[i] = index.get(inp.y[i])!;
  }
  const y = inp.y;
  const bins = binPredictors(x, n, p);
  const nodes = new Nodes(k);
  const roots = new Int32Array(inp.numTrees);
  const mtry = Math.max(1, Math.min(p, inp.maxVariables));

  // Work arrays, reused by every tree.
  const weight = new Int32Array(n);
  const idx = new Int32Array(n);
  const perm = new Int32Array(p);
  const histC = new Int32Array(BINS * k);
  const histN = new Int32Array(BINS);
  const histS = new Float64Array(BINS);
  const totC = new Int32Array(k);
  const leftC = new Int32Array(k);
  const stack: number[] = [];
  // Out-of-bag sums: class probabilities or values, and how many trees left each sample out.
  const oobAcc = new Float64Array(n * k);
  const oobTrees = new Int32Array(n);
  let depthMax = 0;

  for (let t = 0; t < inp.numTrees; t++) {
    const rand = mulberry32((inp.seed ^ Math.imul(t + 1, 0x9e3779b9)) >>> 0);
    weight.fill(0);
    for (let i = 0; i < n; i++) weight[Math.floor(rand() * n)]++;
    let m = 0;
    for (let i = 0; i < n; i++) if (weight[i] > 0) idx[m++] = i;
    const root = nodes.add();
    roots[t] = root;
    stack.length = 0;
    stack.push(0, m, 0, root);
    while (stack.length) {
      const node = stack.pop()!;
      const depth = stack.pop()!;
      const end = stack.pop()!;
      const start = stack.pop()!;
      if (depth > depthMax) depthMax = depth;
      // The node's totals.
      let wTot = 0;
      let sTot = 0;
      let qTot = 0;
      if (kind === 'classification') {
        totC.fill(0);
        for (let j = start; j < end; j++) {
          const i = idx[j];
          totC[yc[i]] += weight[i];
          wTot += weight[i];
        }
      } else {
        for (let j = start; j < end; j++) {
          const i = idx[j];
          const w = weight[i];
          wTot += w;
          sTot += w * y[i];
          qTot += w * y[i] * y[i];
        }
      }
      let pure: boolean;
      if (kind === 'classification') {
        let nonZero = 0;
        for (let c = 0; c < k; c++) if (totC[c] > 0) nonZero++;
        pure = nonZero <= 1;
      } else pure = qTot - (sTot * sTot) / wTot <= 1e-12 * Math.max(1, qTot);
      let bestF = -1;
      let bestB = -1;
      let bestScore = -Infinity;
      if (!pure && end - start >= 2 && depth < inp.maxDepth) {
        for (let f = 0; f < p; f++) perm[f] = f;
        let tried = 0;
        for (let j = 0; j < p && tried < mtry; j++) {
          const r = j + Math.floor(rand() * (p - j));
          const f = perm[r];
          perm[r] = perm[j];
          perm[j] = f;
          const codes = bins.codes.subarray(f * n, (f + 1) * n);
          let bLo = BINS;
          let bHi = -1;
          if (kind === 'classification') {
            for (let q = start; q < end; q++) {
              const i = idx[q];
              const b = codes[i];
              histC[b * k + yc[i]] += weight[i];
              if (b < bLo) bLo = b;
              if (b > bHi) bHi = b;
            }
          } else {
            for (let q = start; q < end; q++) {
              const i = idx[q];
              const b = codes[i];
              const w = weight[i];
              histN[b] += w;
              histS[b] += w * y[i];
              if (b < bLo) bLo = b;
              if (b > bHi) bHi = b;
            }
          }
          if (bLo === bHi) {
            // Constant in this node: it does not count as tried (as in CART implementations).
            if (kind === 'classification') for (let c = 0; c < k; c++) histC[bLo * k + c] = 0;
            else {
              histN[bLo] = 0;
              histS[bLo] = 0;
            }
            continue;
          }
          tried++;
          if (kind === 'classification') {
            leftC.fill(0);
            let wL = 0;
            let sqL = 0;
            let sqR = 0;
            for (let c = 0; c < k; c++) sqR += totC[c] * totC[c];
            for (let b = bLo; b < bHi; b++) {
              const h = b * k;
              let wb = 0;
              for (let c = 0; c < k; c++) {
                const v = histC[h + c];
                if (v === 0) continue;
                histC[h + c] = 0;
                const l = leftC[c];
                const rr = totC[c] - l;
                sqL += 2 * l * v + v * v;
                sqR += -2 * rr * v + v * v;
                leftC[c] = l + v;
                wb += v;
              }
              if (wb === 0) continue;
              wL += wb;
              const wR = wTot - wL;
              if (wR <= 0) break;
              const score = sqL / wL + sqR / wR;
              if (score > bestScore) {
                bestScore = score;
                bestF = f;
                bestB = b;
              }
            }
            for (let c = 0; c < k; c++) histC[bHi * k + c] = 0;
          } else {
            let wL = 0;
            let sL = 0;
            for (let b = bLo; b < bHi; b++) {
              const wb = histN[b];
              if (wb === 0) continue;
              wL += wb;
              sL += histS[b];
              histN[b] = 0;
              histS[b] = 0;
              const wR = wTot - wL;
              const sR = sTot - sL;
              const score = (sL * sL) / wL + (sR * sR) / wR;
              if (score > bestScore) {
                bestScore = score;
                bestF = f;
                bestB = b;
              }
            }
            histN[bHi] = 0;
            histS[bHi] = 0;
          }
        }
      }
      if (bestF < 0) {
        const at = nodes.leaf(node);
        if (kind === 'classification') for (let c = 0; c < k; c++) nodes.leaves[at + c] = totC[c] / wTot;
        else nodes.leaves[at] = sTot / wTot;
        continue;
      }
      // Split: samples of bins <= bestB first.
      const codes = bins.codes.subarray(bestF * n, (bestF + 1) * n);
      let lo = start;
      let hi = end - 1;
      while (lo <= hi) {
        if (codes[idx[lo]] <= bestB) lo++;
        else {
          const tmp = idx[lo];
          idx[lo] = idx[hi];
          idx[hi--] = tmp;
        }
      }
      const left = nodes.add();
      nodes.add();
      nodes.feature[node] = bestF;
      nodes.threshold[node] = bins.cuts[bestF][bestB];
      nodes.child[node] = left;
      stack.push(lo, end, depth + 1, left + 1, start, lo, depth + 1, left);
    }
    // Out-of-bag answers of this tree.
    for (let i = 0; i < n; i++) {
      if (weight[i] > 0) continue;
      let nd = root;
      while (nodes.feature[nd] >= 0) nd = nodes.child[nd] + (x[nodes.feature[nd] * n + i] <= nodes.threshold[nd] ? 0 : 1);
      const l = nodes.child[nd] * k;
      for (let c = 0; c < k; c++) oobAcc[i * k + c] += nodes.leaves[l + c];
      oobTrees[i]++;
    }
  }

  let oobSamples = 0;
  let oobScore: number | null = null;
  if (kind === 'classification') {
    let right = 0;
    for (let i = 0; i < n; i++) {
      if (!oobTrees[i]) continue;
      oobSamples++;
      let best = 0;
      for (let c = 1; c < k; c++) if (oobAcc[i * k + c] > oobAcc[i * k + best]) best = c;
      if (best === yc[i]) right++;
    }
    if (oobSamples) oobScore = right / oobSamples;
  } else {
    let sum = 0;
    for (let i = 0; i < n; i++) {
      if (oobTrees[i]) {
        oobSamples++;
        sum += y[i];
      }
    }
    if (oobSamples > 1) {
      const mean = sum / oobSamples;
      let sse = 0;
      let sst = 0;
      for (let i = 0; i < n; i++) {
        if (!oobTrees[i]) continue;
        const d = y[i] - oobAcc[i] / oobTrees[i];
        sse += d * d;
        sst += (y[i] - mean) * (y[i] - mean);
      }
      oobScore = sst > 0 ? 1 - sse / sst : null;
    }
  }
  const info: ForestInfo = {
    seed: inp.seed,
    maxVariables: mtry,
    maxVariablesGiven: inp.maxVariablesGiven,
    samples: n,
    skipped: inp.skipped,
    oobScore,
    oobSamples,
    depth: depthMax,
    trainMs: Math.round(performance.now() - t0),
  };
  return withSummary({
    kind,
    classes,
    predictors: inp.predictors,
    roots,
    feature: nodes.feature.slice(0, nodes.count),
    threshold: nodes.threshold.slice(0, nodes.count),
    child: nodes.child.slice(0, nodes.count),
    leaves: nodes.leaves.slice(0, nodes.leafCount * k),
    info,
  });
}

/** Predictors tried per split for a max_variables value and p predictors. */
export function resolveMaxVariables(v: unknown, p: number, kind: ForestKind): number {
  const name = v === null || v === undefined ? (kind === 'classification' ? 'sqrt' : 'onethird') : v;
  if (typeof name === 'number') return Math.max(1, Math.min(p, Math.floor(name)));
  switch (name) {
    case 'all':
      return p;
    case 'log2':
      return Math.max(1, Math.floor(Math.log2(p)));
    case 'onethird':
      return Math.max(1, Math.floor(p / 3));
    default:
      return Math.max(1, Math.floor(Math.sqrt(p)));
  }
}
