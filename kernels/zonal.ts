// Reductions of raster planes over spans of pixels (spans.ts makes them from geometries): the
// zonal statistics of aggregate_spatial, reduce_spatial and aggregate_spatial_window.
// A span is four i32: (label, row, c0, c1), the pixels c0 <= c < c1 of a row of `label`.

// Reductions of one plane (f32, `width` values per row, NaN = no-data) over spans
//
// acc: f64 x 6 per label: total pixels, valid pixels, sum, min, max, sum of squared deviations
// from `means` (zonalDeviations). Accumulates: the host zeroes acc (min +Inf, max -Inf) once and
// may add the spans of several chunks of the same plane.

export function zonalSums(values: usize, width: i32, spans: usize, nSpans: i32, acc: usize): void {
  for (let s = 0; s < nSpans; s++) {
    const sp = spans + (<usize>s << 4);
    const a = acc + <usize>load<i32>(sp) * 48;
    const row = values + ((<usize>load<i32>(sp, 4) * <usize>width) << 2);
    const c0 = load<i32>(sp, 8);
    const c1 = load<i32>(sp, 12);
    // Four values a step: no-data (NaN) counts nothing, adds 0 and leaves min and max alone.
    let c = c0;
    let sums = f64x2.splat(0);
    let counts = i32x4.splat(0);
    let mins = f32x4.splat(Infinity);
    let maxs = f32x4.splat(-Infinity);
    for (; c + 4 <= c1; c += 4) {
      const v = v128.load(row + (<usize>c << 2));
      const ok = f32x4.eq(v, v);
      const z = v128.and(v, ok);
      sums = f64x2.add(sums, f64x2.add(f64x2.promote_low_f32x4(z), f64x2.promote_low_f32x4(i64x2.shuffle(z, z, 1, 0))));
      counts = i32x4.sub(counts, ok);
      mins = f32x4.pmin(mins, v128.bitselect(v, mins, ok));
      maxs = f32x4.pmax(maxs, v128.bitselect(v, maxs, ok));
    }
    let valid = i32x4.extract_lane(counts, 0) + i32x4.extract_lane(counts, 1) + i32x4.extract_lane(counts, 2) + i32x4.extract_lane(counts, 3);
    let sum = f64x2.extract_lane(sums, 0) + f64x2.extract_lane(sums, 1);
    let mn = min(load<f64>(a, 24), <f64>min(min(f32x4.extract_lane(mins, 0), f32x4.extract_lane(mins, 1)), min(f32x4.extract_lane(mins, 2), f32x4.extract_lane(mins, 3))));
    let mx = max(load<f64>(a, 32), <f64>max(max(f32x4.extract_lane(maxs, 0), f32x4.extract_lane(maxs, 1)), max(f32x4.extract_lane(maxs, 2), f32x4.extract_lane(maxs, 3))));
    for (; c < c1; c++) {
      const v = <f64>load<f32>(row + (<usize>c << 2));
      if (v != v) continue;
      valid++;
      sum += v;
      if (v < mn) mn = v;
      if (v > mx) mx = v;
    }
    store<f64>(a, load<f64>(a) + <f64>(c1 - c0));
    store<f64>(a, load<f64>(a, 8) + <f64>valid, 8);
    store<f64>(a, load<f64>(a, 16) + sum, 16);
    store<f64>(a, mn, 24);
    store<f64>(a, mx, 32);
  }
}

/** acc[label].deviation += sum over valid values of (v - means[label])^2 (means: f64 per label). */
export function zonalDeviations(values: usize, width: i32, spans: usize, nSpans: i32, means: usize, acc: usize): void {
  for (let s = 0; s < nSpans; s++) {
    const sp = spans + (<usize>s << 4);
    const label = <usize>load<i32>(sp);
    const a = acc + label * 48;
    const m = load<f64>(means + (label << 3));
    const row = values + ((<usize>load<i32>(sp, 4) * <usize>width) << 2);
    const c1 = load<i32>(sp, 12);
    let sq = 0.0;
    for (let c = load<i32>(sp, 8); c < c1; c++) {
      const v = <f64>load<f32>(row + (<usize>c << 2));
      if (v != v) continue;
      const d = v - m;
      sq += d * d;
    }
    store<f64>(a, load<f64>(a, 40) + sq, 40);
  }
}

/**
 * Copies the values of each label's pixels, NaN included, to `out` at the label's cursor
 * (cursors: u32 per label, values counted from `out`, advanced as values are written).
 */
export function zonalGather(values: usize, width: i32, spans: usize, nSpans: i32, cursors: usize, out: usize): void {
  for (let s = 0; s < nSpans; s++) {
    const sp = spans + (<usize>s << 4);
    const cur = cursors + (<usize>load<i32>(sp) << 2);
    const c0 = load<i32>(sp, 8);
    const c1 = load<i32>(sp, 12);
    const n = c1 - c0;
    const at = load<u32>(cur);
    memory.copy(out + (<usize>at << 2), values + ((<usize>load<i32>(sp, 4) * <usize>width + <usize>c0) << 2), <usize>n << 2);
    store<u32>(cur, at + <u32>n);
  }
}

/** out[row * width + c] = value for every pixel of the spans (a mask or a label plane, u8). */
export function zonalFillU8(spans: usize, nSpans: i32, width: i32, value: u8, out: usize): void {
  for (let s = 0; s < nSpans; s++) {
    const sp = spans + (<usize>s << 4);
    const c0 = load<i32>(sp, 8);
    memory.fill(out + <usize>load<i32>(sp, 4) * <usize>width + <usize>c0, value, <usize>(load<i32>(sp, 12) - c0));
  }
}
