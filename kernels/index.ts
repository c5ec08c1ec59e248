// Block primitives over Float32 values in linear memory: each loops over `n` values at once, four
// lanes per step with SIMD, the tail one by one. NaN is no-data and propagates as IEEE 754 says.
// The host owns the memory layout: it places blocks at or above heapBase() and grows memory.

export function heapBase(): usize {
  return (__heap_base + 15) & ~15;
}

/** out[i] = a[i] + b[i] */
export function add(a: usize, b: usize, out: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    v128.store(out + o, f32x4.add(v128.load(a + o), v128.load(b + o)));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    store<f32>(out + o, load<f32>(a + o) + load<f32>(b + o));
  }
}

/** out[i] = a[i] - b[i] */
export function subtract(a: usize, b: usize, out: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    v128.store(out + o, f32x4.sub(v128.load(a + o), v128.load(b + o)));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    store<f32>(out + o, load<f32>(a + o) - load<f32>(b + o));
  }
}

/** out[i] = a[i] * b[i] */
export function multiply(a: usize, b: usize, out: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    v128.store(out + o, f32x4.mul(v128.load(a + o), v128.load(b + o)));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    store<f32>(out + o, load<f32>(a + o) * load<f32>(b + o));
  }
}

/** out[i] = a[i] / b[i] (x/0 gives ±Inf or NaN, as IEEE 754 says) */
export function divide(a: usize, b: usize, out: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    v128.store(out + o, f32x4.div(v128.load(a + o), v128.load(b + o)));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    store<f32>(out + o, load<f32>(a + o) / load<f32>(b + o));
  }
}

/** out[i] = (a[i] - b[i]) / (a[i] + b[i]), e.g. NDVI with a = NIR and b = red. */
export function normalizedDifference(a: usize, b: usize, out: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    const x = v128.load(a + o);
    const y = v128.load(b + o);
    v128.store(out + o, f32x4.div(f32x4.sub(x, y), f32x4.add(x, y)));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    const x = load<f32>(a + o);
    const y = load<f32>(b + o);
    store<f32>(out + o, (x - y) / (x + y));
  }
}

/** out[i] = (a[i] - inMin) / (inMax - inMin) * (outMax - outMin) + outMin, as linear_scale_range does (no clipping). */
export function linearScale(a: usize, out: usize, n: i32, inMin: f32, inMax: f32, outMin: f32, outMax: f32): void {
  const scale = (outMax - outMin) / (inMax - inMin);
  const vs = f32x4.splat(scale);
  const vin = f32x4.splat(inMin);
  const vout = f32x4.splat(outMin);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    v128.store(out + o, f32x4.add(f32x4.mul(f32x4.sub(v128.load(a + o), vin), vs), vout));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    store<f32>(out + o, (load<f32>(a + o) - inMin) * scale + outMin);
  }
}

export { warpNearest, warpBilinear, warpCoordinates } from './warp';
export { vmRun, vmScratchBytes, vmBlock, mathSin, mathCos, mathTan } from './vm';
export { colorizeRgba } from './colormap';
export { zonalSpans, zonalScratchBytes } from './spans';
export { zonalSums, zonalDeviations, zonalGather, zonalFillU8 } from './zonal';
export { forestRun, forestScratchBytes, forestLeafStride, forestBand } from './forest';
export { samplesToF32, undoPredictor16 } from './samples';
export { bandStats } from './stats';
