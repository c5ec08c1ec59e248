// Random forests walked per pixel (src/ml/forest.ts describes the model; src/compile/forest-kernel.ts
// lays it out here). Nodes are 8 bytes: an i32 holding the split predictor (low 8 bits) and the
// left child's index within its tree (the right one follows it), and the f32 threshold; a leaf's
// index is in a separate i32 array, read once per walk. A leaf is a node that leads to itself
// (predictor 0, threshold +Infinity, left child itself), so a walk of exactly `depth` steps, the
// tree's depth, ends in the leaf of every pixel, without a branch on the way.
//
// Equal inputs give equal answers, so a pixel whose predictor values all equal those of its left
// neighbour (i - 1) or of the pixel a row above (i - cols) takes that pixel's answer instead of a
// walk: exact, whatever the layout (a plane whose rows are not `cols` long only finds fewer such
// pixels), and a map tile zoomed in past its data's resolution, drawn with nearest resampling, is
// made of such runs. A pixel with any NaN predictor answers NaN and is not walked either.
//
// The pixels left to walk go in blocks: a block's predictor values are gathered pixel by pixel
// into scratch, then each tree is walked for every pixel of the block (one tree stays in cache
// while it serves the block), eight pixels in lockstep so that their chains of dependent loads
// overlap. Then the block's stretch of pixels gets its answers in order: walked pixels from the
// sums, the others copied from the neighbour they equal (already answered) or NaN.

const BLOCK: i32 = 256;

/**
 * Floats from one leaf's numbers to the next's in `leaves` (and between a pixel's sums): leaves of
 * 2 to 4 classes are padded to 4 (with zeros), so that a walk adds its leaf in one SIMD addition,
 * lane by lane the same float32 sums as one class after the other.
 */
export function forestLeafStride(width: i32): i32 {
  return width >= 2 && width <= 4 ? 4 : width;
}

/** Scratch bytes forestRun needs for p predictors and leaves of `width` values. */
export function forestScratchBytes(p: i32, width: i32): i32 {
  return BLOCK * p * 4 + BLOCK * forestLeafStride(width) * 4 + BLOCK * 4 + 64;
}

/** Pixels i and j have the same predictor values (none NaN: NaN equals nothing). */
function samePixel(table: usize, p: i32, i: i32, j: i32): bool {
  for (let f = 0; f < p; f++) {
    const plane = <usize>load<u32>(table + (<usize>f << 2));
    if (load<f32>(plane + (<usize>i << 2)) != load<f32>(plane + (<usize>j << 2))) return false;
  }
  return true;
}

/** The earlier pixel whose answer pixel i takes (its left neighbour, else the one a row above), or -1. */
// @ts-ignore: decorator
@inline
function sameAs(table: usize, p: i32, i: i32, cols: i32): i32 {
  if (i > 0 && samePixel(table, p, i, i - 1)) return i - 1;
  if (cols > 0 && i >= cols && samePixel(table, p, i, i - cols)) return i - cols;
  return -1;
}

// @ts-ignore: decorator
@inline
function step(base: usize, n: i32, row: usize): i32 {
  const a = base + (<usize>n << 3);
  const w = load<i32>(a);
  const right = load<f32>(row + (<usize>(w & 0xff) << 2)) > load<f32>(a, 4);
  return (w >>> 8) + (right ? 1 : 0);
}

/**
 * leaves: `width` numbers per leaf in rows of forestLeafStride(width) floats.
 * table: u32 pointers to p planes of n f32 values, rows of `cols` pixels (0: no rows, only left
 * neighbours are reused); roots and depths: per tree its root node and
 * depth (i32); leafOf: per node its leaf index (i32). mode 0: the mean leaf value (regression) into out[i]; mode 1:
 * classes[argmax of the summed class probabilities] into out[i] (first class on ties); mode 2:
 * the mean class probabilities, class c of pixel i into out[c * n + i]. Answers how many pixels it walked.
 */
export function forestRun(table: usize, p: i32, n: i32, cols: i32, nodes: usize, leafOf: usize, roots: usize, depths: usize, nTrees: i32, leaves: usize, width: i32, classes: usize, mode: i32, out: usize, scratch: usize): i32 {
  const xs = scratch;
  const acc = scratch + <usize>(BLOCK * p * 4);
  const stride = forestLeafStride(width);
  const walked = acc + <usize>(BLOCK * stride * 4);
  const inv: f32 = 1.0 / <f32>nTrees;
  const rowBytes = <usize>(p * 4);
  let next = 0;
  let walks = 0;
  while (next < n) {
    // The stretch [start, next) holding the next BLOCK pixels to walk: their values gathered pixel
    // by pixel, their indices in `walked`.
    const start = next;
    let m = 0;
    for (; next < n && m < BLOCK; next++) {
      if (sameAs(table, p, next, cols) >= 0) continue;
      const row = xs + <usize>m * rowBytes;
      let ok = true;
      for (let f = 0; f < p; f++) {
        const v = load<f32>(<usize>load<u32>(table + (<usize>f << 2)) + (<usize>next << 2));
        store<f32>(row + (<usize>f << 2), v);
        ok = ok && v == v;
      }
      if (!ok) continue;
      store<i32>(walked + (<usize>m << 2), next);
      m++;
    }
    walks += m;
    memory.fill(acc, 0, <usize>(m * stride * 4));
    for (let t = 0; t < nTrees; t++) {
      const root = load<i32>(roots + (<usize>t << 2));
      const depth = load<i32>(depths + (<usize>t << 2));
      const base = nodes + (<usize>root << 3);
      const leafBase = leafOf + (<usize>root << 2);
      let j = 0;
      for (; j + 8 <= m; j += 8) {
        const r0 = xs + <usize>j * rowBytes;
        let n0 = 0;
        let n1 = 0;
        let n2 = 0;
        let n3 = 0;
        let n4 = 0;
        let n5 = 0;
        let n6 = 0;
        let n7 = 0;
        for (let d = 0; d < depth; d++) {
          n0 = step(base, n0, r0);
          n1 = step(base, n1, r0 + rowBytes);
          n2 = step(base, n2, r0 + 2 * rowBytes);
          n3 = step(base, n3, r0 + 3 * rowBytes);
          n4 = step(base, n4, r0 + 4 * rowBytes);
          n5 = step(base, n5, r0 + 5 * rowBytes);
          n6 = step(base, n6, r0 + 6 * rowBytes);
          n7 = step(base, n7, r0 + 7 * rowBytes);
        }
        const a = acc + (<usize>(j * stride) << 2);
        const w = <usize>(stride << 2);
        addLeaf(leafBase, n0, leaves, stride, a);
        addLeaf(leafBase, n1, leaves, stride, a + w);
        addLeaf(leafBase, n2, leaves, stride, a + 2 * w);
        addLeaf(leafBase, n3, leaves, stride, a + 3 * w);
        addLeaf(leafBase, n4, leaves, stride, a + 4 * w);
        addLeaf(leafBase, n5, leaves, stride, a + 5 * w);
        addLeaf(leafBase, n6, leaves, stride, a + 6 * w);
        addLeaf(leafBase, n7, leaves, stride, a + 7 * w);
      }
      for (; j < m; j++) {
        const r = xs + <usize>j * rowBytes;
        let nd = 0;
        for (let d = 0; d < depth; d++) nd = step(base, nd, r);
        addLeaf(leafBase, nd, leaves, stride, acc + (<usize>(j * stride) << 2));
      }
    }
    // Answers in pixel order, so that a copied pixel's neighbour is answered before it.
    let j = 0;
    for (let i = start; i < next; i++) {
      if (j < m && load<i32>(walked + (<usize>j << 2)) == i) {
        const src = acc + (<usize>(j * stride) << 2);
        j++;
        if (mode == 0) {
          store<f32>(out + (<usize>i << 2), load<f32>(src) * inv);
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
          store<f32>(out + (<usize>i << 2), load<f32>(classes + (<usize>best << 2)));
        } else {
          for (let k = 0; k < width; k++) store<f32>(out + (<usize>(k * n + i) << 2), load<f32>(src + (<usize>k << 2)) * inv);
        }
        continue;
      }
      // Not walked: equal to an answered neighbour, or no-data (NaN equals nothing).
      const same = sameAs(table, p, i, cols);
      const planes = mode == 2 ? width : 1;
      for (let k = 0; k < planes; k++) {
        const o = out + (<usize>(k * n) << 2);
        store<f32>(o + (<usize>i << 2), same >= 0 ? load<f32>(o + (<usize>same << 2)) : NaN);
      }
    }
  }
  return walks;
}

// @ts-ignore: decorator
@inline
function addLeaf(leafBase: usize, nd: i32, leaves: usize, stride: i32, dst: usize): void {
  const leaf = leaves + (<usize>(load<i32>(leafBase + (<usize>nd << 2)) * stride) << 2);
  if (stride == 1) {
    store<f32>(dst, load<f32>(dst) + load<f32>(leaf));
    return;
  }
  if (stride == 4) {
    v128.store(dst, f32x4.add(v128.load(dst), v128.load(leaf)));
    return;
  }
  for (let k = 0; k < stride; k++) store<f32>(dst + (<usize>k << 2), load<f32>(dst + (<usize>k << 2)) + load<f32>(leaf + (<usize>k << 2)));
}

/**
 * A band of a prediction split over threads (src/compile/kernel-threads.ts): the pixels of `table`
 * (u32 plane pointers, already advanced to the band) into `out`, n of them. `params` holds i32:
 * p, nodes, leafOf, roots, depths, nTrees, leaves, width, classes, mode (0 or 1), scratch base,
 * scratch bytes per thread and cols; `slot` (0 for the engine thread) picks this thread's scratch.
 */
export function forestBand(table: usize, out: usize, n: i32, params: usize, slot: i32): void {
  const scratch = <usize>load<i32>(params, 40) + <usize>slot * <usize>load<i32>(params, 44);
  forestRun(
    table,
    load<i32>(params),
    n,
    load<i32>(params, 48),
    <usize>load<i32>(params, 4),
    <usize>load<i32>(params, 8),
    <usize>load<i32>(params, 12),
    <usize>load<i32>(params, 16),
    load<i32>(params, 20),
    <usize>load<i32>(params, 24),
    load<i32>(params, 28),
    <usize>load<i32>(params, 32),
    load<i32>(params, 36),
    out,
    scratch,
  );
}
