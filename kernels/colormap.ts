// Colour mapping of one f32 band to RGBA bytes through a 256-entry lookup table, exactly as
// src/data/colormap.ts `colorize` does: index = round((v - min) * k) clamped to 0..255, where
// k = 255 / (max - min) (Infinity for max = min, making a step at min), computed in double precision;
// NaN becomes transparent 0,0,0,0.

/**
 * values: n f32; table: 256 RGBA words (bytes R, G, B, A); out: n RGBA words. min <= max, finite
 * (the host checks).
 */
export function colorizeRgba(values: usize, n: i32, table: usize, min: f64, max: f64, out: usize): void {
  const k: f64 = max > min ? 255.0 / (max - min) : Infinity;
  for (let i = 0; i < n; i++) {
    const o = <usize>i << 2;
    const v = <f64>load<f32>(values + o);
    let word: u32 = 0;
    if (v == v) {
      const x = (v - min) * k;
      // x > 0 is false for NaN (v = min with k = Infinity) and negatives; +0.5 then truncate rounds.
      const idx: i32 = x > 0 ? (x < 255 ? <i32>(x + 0.5) : 255) : 0;
      word = load<u32>(table + (<usize>idx << 2));
    }
    store<u32>(out + o, word);
  }
}
