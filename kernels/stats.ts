// Statistics of a band's valid values, as a job's COG records them per band (src/jobs/outputs.ts
// BandStats): count, sum, sum of squares, min and max of the finite values; NaN and infinities are
// left out. Sums are in f64, of the f32 values made exact in f64, four lanes at a time.

/** out: five f64, count, sum, sum of squares, min, max (min +Inf, max -Inf when none is finite). */
export function bandStats(values: usize, n: i32, out: usize): void {
  const zero = f32x4.splat(0);
  const posInf = f32x4.splat(Infinity);
  const negInf = f32x4.splat(-Infinity);
  let count = i32x4.splat(0);
  let lo = f64x2.splat(0);
  let hi = f64x2.splat(0);
  let lo2 = f64x2.splat(0);
  let hi2 = f64x2.splat(0);
  let mn = posInf;
  let mx = negInf;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const v = v128.load(values + ((<usize>i) << 2));
    // finite lanes: v - v is 0 (NaN for NaN and the infinities)
    const ok = f32x4.eq(f32x4.sub(v, v), zero);
    const x = v128.and(v, ok); // others count as +0 in the sums
    count = i32x4.sub(count, ok); // a true lane is -1
    mn = f32x4.min(mn, v128.bitselect(v, posInf, ok));
    mx = f32x4.max(mx, v128.bitselect(v, negInf, ok));
    const a = f64x2.promote_low_f32x4(x);
    const b = f64x2.promote_low_f32x4(i64x2.shuffle(x, x, 1, 0));
    lo = f64x2.add(lo, a);
    hi = f64x2.add(hi, b);
    lo2 = f64x2.add(lo2, f64x2.mul(a, a));
    hi2 = f64x2.add(hi2, f64x2.mul(b, b));
  }
  let c = <f64>(i32x4.extract_lane(count, 0) + i32x4.extract_lane(count, 1) + i32x4.extract_lane(count, 2) + i32x4.extract_lane(count, 3));
  const s4 = f64x2.add(lo, hi);
  const q4 = f64x2.add(lo2, hi2);
  let sum = f64x2.extract_lane(s4, 0) + f64x2.extract_lane(s4, 1);
  let sq = f64x2.extract_lane(q4, 0) + f64x2.extract_lane(q4, 1);
  let mnS = <f64>Mathf.min(Mathf.min(f32x4.extract_lane(mn, 0), f32x4.extract_lane(mn, 1)), Mathf.min(f32x4.extract_lane(mn, 2), f32x4.extract_lane(mn, 3)));
  let mxS = <f64>Mathf.max(Mathf.max(f32x4.extract_lane(mx, 0), f32x4.extract_lane(mx, 1)), Mathf.max(f32x4.extract_lane(mx, 2), f32x4.extract_lane(mx, 3)));
  for (; i < n; i++) {
    const v = <f64>load<f32>(values + ((<usize>i) << 2));
    if (v - v != 0) continue;
    c += 1;
    sum += v;
    sq += v * v;
    if (v < mnS) mnS = v;
    if (v > mxS) mxS = v;
  }
  store<f64>(out, c);
  store<f64>(out, sum, 8);
  store<f64>(out, sq, 16);
  store<f64>(out, mnS, 24);
  store<f64>(out, mxS, 32);
}
