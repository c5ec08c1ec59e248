// Overview reduction: one level from the one above it, 2x2 blocks to one pixel. The result at
// (x, y) depends only on the source block at (2x, 2y) and on whether that block is clipped by the
// source's right or bottom edge, so a region whose origin is even and whose size is even (or
// reaches the level's edge) halves to exactly the same values as the whole level would. The
// streaming writer relies on that to build the pyramid window by window and tile by tile.
import type { TypedArray } from '../core/grid.js';
import type { Plan } from './cog-plan.js';

/** A rectangle of pixels: one array per band, width*height values, row-major. */
export interface Raster {
  width: number;
  height: number;
  bands: TypedArray[];
}

/** Each overview is built from the previous one: a quarter of the work of starting from full resolution. */
export function halve(src: Raster, plan: Plan): Raster {
  const width = Math.ceil(src.width / 2);
  const height = Math.ceil(src.height / 2);
  const reduce = plan.resampling === 'nearest' ? halveNearest : halveAverage;
  return { width, height, bands: src.bands.map((b) => reduce(b, src.width, src.height, width, height, plan)) };
}

/** The top-left sample of each 2x2 block: always a real value of the source. */
function halveNearest(b: TypedArray, sw: number, _sh: number, w: number, h: number, plan: Plan): TypedArray {
  const out = new plan.sample.Ctor(w * h);
  for (let y = 0; y < h; y++) {
    const srcRow = 2 * y * sw;
    for (let x = 0; x < w; x++) out[y * w + x] = b[srcRow + 2 * x]!;
  }
  return out;
}

/**
 * Mean of the valid samples of each 2x2 block (clipped at odd edges). Nodata and NaN samples are
 * skipped; a block without any valid sample becomes nodata (NaN for floats without nodata).
 * Integer means are rounded half up (Math.round).
 */
function halveAverage(b: TypedArray, sw: number, sh: number, w: number, h: number, plan: Plan): TypedArray {
  const out = new plan.sample.Ctor(w * h);
  const float = plan.sample.float;
  const empty = plan.nodata ?? NaN;
  // Without nodata compare against NaN, which equals nothing: only the NaN test (v === v) is left.
  const nd = plan.nodata ?? NaN;
  let o = 0;
  for (let y = 0; y < h; y++) {
    const row = 2 * y * sw;
    const below = 2 * y + 1 < sh ? sw : -1; // offset of the row below, -1 at an odd bottom edge
    for (let x = 0; x < w; x++) {
      const i = row + 2 * x;
      const right = 2 * x + 1 < sw; // false at an odd right edge
      // The 2x2 block unrolled: this is the hot loop of overview building. `(v = s) === v` loads a
      // sample and is false only for NaN.
      let sum = 0;
      let n = 0;
      let v = b[i];
      if (v === v && v !== nd) {
        sum += v;
        n++;
      }
      if (right && (v = b[i + 1]!) === v && v !== nd) {
        sum += v;
        n++;
      }
      if (below > 0 && (v = b[i + below]!) === v && v !== nd) {
        sum += v;
        n++;
      }
      if (right && below > 0 && (v = b[i + below + 1]!) === v && v !== nd) {
        sum += v;
        n++;
      }
      out[o++] = n === 0 ? empty : float ? sum / n : Math.round(sum / n);
    }
  }
  return out;
}
