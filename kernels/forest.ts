// Random forests walked per pixel (src/ml/forest.ts describes the model; src/compile/forest-kernel.ts
// lays it out here). Nodes are 12 bytes: i32 split predictor (-1 for a leaf), f32 threshold, i32
// left child (the right child follows it) or, for a leaf, the leaf index. Leaves hold `width` f32.
//
// Pixels go in blocks: a block's predictor values are gathered pixel by pixel into scratch, then
// each tree is walked for every pixel of the block, so one tree stays in cache while it serves
// the block. A pixel with any NaN predictor answers NaN.

const BLOCK: i32 = 256;

/** Scratch bytes forestRun needs for p predictors and leaves of `width` values. */
export function forestScratchBytes(p: i32, width: i32): i32 {
  return BLOCK * p * 4 + BLOCK * width * 4 + BLOCK * 4;
}

/**
 * table: u32 pointers to p planes of n f32 values; roots: nTrees i32 node indices.
 * mode 0: the mean leaf value (regression) into out[i];
 * mode 1: classes[argmax of the summed class probabilities] into out[i] (first class on ties);
 * mode 2: the mean class probabilities, class c of pixel i into out[c * n + i].
 */
export function forestRun(table: usize, p: i32, n: i32, nodes: usize, roots: usize, nTrees: i32, leaves: usize, width: i32, classes: usize, mode: i32, out: usize, scratch: usize): void {
  const xs = scratch;
  const acc = scratch + <usize>(BLOCK * p * 4);
  const valid = acc + <usize>(BLOCK * width * 4);
  const inv: f32 = 1.0 / <f32>nTrees;
  for (let start = 0; start < n; start += BLOCK) {
    const m = min(BLOCK, n - start);
    // Gather the block's predictor values pixel by pixel and mark the pixels without NaN.
    for (let j = 0; j < m; j++) store<i32>(valid + (<usize>j << 2), 1);
    for (let f = 0; f < p; f++) {
      const plane = <usize>load<u32>(table + (<usize>f << 2)) + (<usize>start << 2);
      for (let j = 0; j < m; j++) {
        const v = load<f32>(plane + (<usize>j << 2));
        store<f32>(xs + (<usize>(j * p + f) << 2), v);
        if (v != v) store<i32>(valid + (<usize>j << 2), 0);
      }
    }
    memory.fill(acc, 0, <usize>(m * width * 4));
    for (let t = 0; t < nTrees; t++) {
      const root = load<i32>(roots + (<usize>t << 2));
      for (let j = 0; j < m; j++) {
        if (load<i32>(valid + (<usize>j << 2)) == 0) continue;
        const row = xs + (<usize>(j * p) << 2);
        let a = nodes + <usize>root * 12;
        let f = load<i32>(a);
        while (f >= 0) {
          const right = load<f32>(row + (<usize>f << 2)) > load<f32>(a, 4);
          a = nodes + <usize>(load<i32>(a, 8) + (right ? 1 : 0)) * 12;
          f = load<i32>(a);
        }
        const leaf = leaves + (<usize>(load<i32>(a, 8) * width) << 2);
        const dst = acc + (<usize>(j * width) << 2);
        for (let k = 0; k < width; k++) store<f32>(dst + (<usize>k << 2), load<f32>(dst + (<usize>k << 2)) + load<f32>(leaf + (<usize>k << 2)));
      }
    }
    for (let j = 0; j < m; j++) {
      const i = start + j;
      const ok = load<i32>(valid + (<usize>j << 2)) != 0;
      const src = acc + (<usize>(j * width) << 2);
      if (mode == 0) {
        store<f32>(out + (<usize>i << 2), ok ? load<f32>(src) * inv : NaN);
      } else if (mode == 1) {
        let best = 0;
        let bestV = load<f32>(src);
        for (let k = 1; k < width; k++) {
          const v = load<f32>(src + (<usize>k << 2));
          if (v > bestV) {
            bestV = v;
            best = k;
          }
        }
        store<f32>(out + (<usize>i << 2), ok ? load<f32>(classes + (<usize>best << 2)) : NaN);
      } else {
        for (let k = 0; k < width; k++) store<f32>(out + (<usize>(k * n + i) << 2), ok ? load<f32>(src + (<usize>k << 2)) * inv : NaN);
      }
    }
  }
}
