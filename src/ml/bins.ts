// Predictors cut into at most 256 bins each, for the split search of training (train.ts): every
// distinct value its own bin when there are no more than 256, else bins at quantiles. Thresholds
// lie between the largest value of a bin and the smallest of the next, so a trained model answers
// on raw values.

/** Most bins per predictor (codes fit a byte). */
export const BINS = 256;

export interface Binned {
  codes: Uint8Array; // codes[f * n + i]
  nBins: Int32Array; // per predictor
  cuts: Float32Array[]; // per predictor: threshold between bin b and b + 1
}

/** A threshold t with lo <= t < hi in float32 (values <= t go left). */
function between(lo: number, hi: number): number {
  const mid = Math.fround(lo + (hi - lo) / 2);
  return mid >= hi || mid < lo ? lo : mid;
}

export function binPredictors(x: Float32Array, n: number, p: number): Binned {
  const codes = new Uint8Array(n * p);
  const nBins = new Int32Array(p);
  const cuts: Float32Array[] = [];
  for (let f = 0; f < p; f++) {
    const col = x.subarray(f * n, (f + 1) * n);
    const sorted = Float32Array.from(col).sort();
    // The largest value of each bin, ascending.
    const uppers: number[] = [];
    let distinct = 0;
    for (let i = 0; i < n && distinct <= BINS; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) distinct++;
    if (distinct <= BINS) {
      for (let i = 0; i < n; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) uppers.push(sorted[i]);
    } else {
      for (let j = 1; j < BINS; j++) {
        const v = sorted[Math.floor((j * n) / BINS) - 1];
        if (uppers.length === 0 || v > uppers[uppers.length - 1]) uppers.push(v);
      }
      if (sorted[n - 1] > uppers[uppers.length - 1]) uppers.push(sorted[n - 1]);
    }
    const cut = new Float32Array(Math.max(0, uppers.length - 1));
    for (let b = 0; b + 1 < uppers.length; b++) {
      // The smallest value above the bin's largest one.
      let lo = 0;
      let hi = n;
      while (lo < hi) {
        const m = (lo + hi) >> 1;
        if (sorted[m] <= uppers[b]) lo = m + 1;
        else hi = m;
      }
      cut[b] = between(uppers[b], sorted[lo]);
    }
    const up = Float32Array.from(uppers);
    for (let i = 0; i < n; i++) {
      const v = col[i];
      let lo = 0;
      let hi = up.length - 1;
      while (lo < hi) {
        const m = (lo + hi) >> 1;
        if (up[m] >= v) hi = m;
        else lo = m + 1;
      }
      codes[f * n + i] = lo;
    }
    nBins[f] = uppers.length;
    cuts.push(cut);
  }
  return { codes, nBins, cuts };
}
