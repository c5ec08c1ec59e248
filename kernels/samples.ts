// Decoded raster samples to cube values: the rows of a block a window takes (src/data/cog-reader.ts)
// converted to f32 with the file's no-data value as NaN, written straight into a cube plane.

/** Sample kinds, as src/data/cog-reader.ts numbers them. */
const U8: i32 = 0;
const I8: i32 = 1;
const U16: i32 = 2;
const I16: i32 = 3;
const U32: i32 = 4;
const I32: i32 = 5;
const F32: i32 = 6;
const F64: i32 = 7;

/** The byte size of a sample of a kind. */
function sampleBytes(kind: i32): usize {
  if (kind <= I8) return 1;
  if (kind <= I16) return 2;
  if (kind == F64) return 8;
  return 4;
}

/** One sample as f64. */
// @ts-ignore: decorator
@inline
function sampleAt(p: usize, kind: i32): f64 {
  switch (kind) {
    case U8:
      return <f64>load<u8>(p);
    case I8:
      return <f64>load<i8>(p);
    case U16:
      return <f64>load<u16>(p);
    case I16:
      return <f64>load<i16>(p);
    case U32:
      return <f64>load<u32>(p);
    case I32:
      return <f64>load<i32>(p);
    case F32:
      return <f64>load<f32>(p);
    default:
      return load<f64>(p);
  }
}

/**
 * Writes h rows of w pixels from the samples at `src` (of `kind`; a pixel's sample `stride` samples
 * after the previous one, rows `srcPitch` samples apart) to f32 at `out` (rows `outPitch` values
 * apart); a sample equal to `nodata` (when `hasNodata`) becomes NaN. One-sample 16-bit and 8-bit
 * unsigned blocks, the common layout, go eight or sixteen at a time.
 */
export function samplesToF32(src: usize, kind: i32, srcPitch: i32, stride: i32, w: i32, h: i32, out: usize, outPitch: i32, hasNodata: i32, nodata: f64): void {
  const size = sampleBytes(kind);
  // An integer sample never equals a fractional or out-of-range no-data value.
  const whole = nodata == Math.floor(nodata);
  const match = hasNodata != 0 && nodata == nodata && (kind >= F32 || whole);
  const nan = f32x4.splat(NaN);
  const nd = f32x4.splat(<f32>nodata);
  for (let r = 0; r < h; r++) {
    const s = src + <usize>r * <usize>srcPitch * size;
    const o = out + ((<usize>r * <usize>outPitch) << 2);
    let i = 0;
    if (stride == 1 && kind == U16 && (!match || (nodata >= 0 && nodata <= 65535))) {
      for (; i + 8 <= w; i += 8) {
        const v = v128.load(s + (<usize>i << 1));
        let a = f32x4.convert_i32x4_u(i32x4.extend_low_i16x8_u(v));
        let b = f32x4.convert_i32x4_u(i32x4.extend_high_i16x8_u(v));
        if (match) {
          a = v128.bitselect(nan, a, f32x4.eq(a, nd));
          b = v128.bitselect(nan, b, f32x4.eq(b, nd));
        }
        v128.store(o + (<usize>i << 2), a);
        v128.store(o + (<usize>i << 2), b, 16);
      }
    } else if (stride == 1 && kind == U8 && (!match || (nodata >= 0 && nodata <= 255))) {
      for (; i + 16 <= w; i += 16) {
        const v = v128.load(s + <usize>i);
        const lo = i16x8.extend_low_i8x16_u(v);
        const hi = i16x8.extend_high_i8x16_u(v);
        let a = f32x4.convert_i32x4_u(i32x4.extend_low_i16x8_u(lo));
        let b = f32x4.convert_i32x4_u(i32x4.extend_high_i16x8_u(lo));
        let c = f32x4.convert_i32x4_u(i32x4.extend_low_i16x8_u(hi));
        let d = f32x4.convert_i32x4_u(i32x4.extend_high_i16x8_u(hi));
        if (match) {
          a = v128.bitselect(nan, a, f32x4.eq(a, nd));
          b = v128.bitselect(nan, b, f32x4.eq(b, nd));
          c = v128.bitselect(nan, c, f32x4.eq(c, nd));
          d = v128.bitselect(nan, d, f32x4.eq(d, nd));
        }
        const q = o + (<usize>i << 2);
        v128.store(q, a);
        v128.store(q, b, 16);
        v128.store(q, c, 32);
        v128.store(q, d, 48);
      }
    }
    const step = <usize>stride * size;
    for (; i < w; i++) {
      const v = sampleAt(s + <usize>i * step, kind);
      store<f32>(o + (<usize>i << 2), match && v == nodata ? NaN : <f32>v);
    }
  }
}

/**
 * Undoes TIFF horizontal differencing (predictor 2) of `rows` rows of `width` one-sample 16-bit
 * values at `p`, in place: each value becomes the sum, modulo 2^16, of its row up to it. Eight
 * values a step, as a prefix sum in three shifts with the row's running total carried across.
 */
export function undoPredictor16(p: usize, width: i32, rows: i32): void {
  const zero = i16x8.splat(0);
  for (let r = 0; r < rows; r++) {
    const row = p + ((<usize>r * <usize>width) << 1);
    let carry = i16x8.splat(0);
    let i = 0;
    for (; i + 8 <= width; i += 8) {
      const q = row + (<usize>i << 1);
      let v = v128.load(q);
      v = i16x8.add(v, i16x8.shuffle(zero, v, 0, 8, 9, 10, 11, 12, 13, 14));
      v = i16x8.add(v, i16x8.shuffle(zero, v, 0, 1, 8, 9, 10, 11, 12, 13));
      v = i16x8.add(v, i16x8.shuffle(zero, v, 0, 1, 2, 3, 8, 9, 10, 11));
      v = i16x8.add(v, carry);
      v128.store(q, v);
      carry = i16x8.shuffle(v, v, 7, 7, 7, 7, 7, 7, 7, 7);
    }
    let acc = <u16>i16x8.extract_lane_u(carry, 0);
    for (; i < width; i++) {
      const q = row + (<usize>i << 1);
      acc += load<u16>(q);
      store<u16>(q, acc);
    }
  }
}
