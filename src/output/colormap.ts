// Rendering of float rasters to 8-bit RGBA for image tiles and previews.
//
// colorize: one band through a colour map. Each map is a few control points of our own choosing,
// interpolated linearly in RGB into a 256-entry table built once, on first use.
// toRgba: 1 band as greys or 3 bands as RGB, each linearly stretched from [min, max] to 0..255.
//
// NaN (no data) becomes fully transparent black; values outside [min, max] are clamped. Pixels are
// written as whole 32-bit words from tables whose bytes are R, G, B, A in memory, so the output byte
// order is right on any host.

/** [position in 0..1, r, g, b], positions increasing from 0 to 1. */
type ControlPoint = readonly [number, number, number, number];

const CONTROL_POINTS: Record<string, readonly ControlPoint[]> = {
  greys: [
    [0, 0, 0, 0],
    [1, 255, 255, 255],
  ],
  // Dark purple through blue and green to yellow, lightness increasing throughout.
  viridis: [
    [0, 68, 1, 84],
    [0.13, 71, 44, 122],
    [0.25, 59, 82, 139],
    [0.38, 44, 114, 142],
    [0.5, 33, 145, 140],
    [0.63, 39, 173, 129],
    [0.75, 92, 200, 99],
    [0.88, 170, 220, 50],
    [1, 253, 231, 37],
  ],
  // Bare soil and water (low) brown, sparse vegetation yellow, dense vegetation dark green; suits
  // both -1..1 and 0..1 stretches.
  ndvi: [
    [0, 115, 70, 25],
    [0.3, 190, 150, 70],
    [0.5, 240, 225, 100],
    [0.7, 145, 195, 75],
    [0.85, 55, 145, 50],
    [1, 0, 85, 30],
  ],
  // Diverging red (low) - pale yellow - green (high).
  rdylgn: [
    [0, 180, 25, 40],
    [0.25, 240, 125, 65],
    [0.5, 255, 248, 185],
    [0.75, 135, 200, 100],
    [1, 15, 110, 55],
  ],
  // Diverging red (low) - near white - blue (high), for anomalies.
  rdbu: [
    [0, 160, 20, 40],
    [0.25, 225, 120, 100],
    [0.5, 245, 245, 245],
    [0.75, 110, 165, 205],
    [1, 20, 60, 130],
  ],
  // Sequential, light (low) to dark blue (high).
  blues: [
    [0, 242, 247, 252],
    [0.5, 120, 170, 215],
    [1, 10, 45, 115],
  ],
  // Elevation-like: water blues, lowland green, upland sand and brown, snow white.
  terrain: [
    [0, 35, 55, 150],
    [0.15, 40, 140, 220],
    [0.25, 55, 180, 95],
    [0.5, 230, 220, 135],
    [0.75, 135, 100, 80],
    [1, 255, 255, 255],
  ],
};

/**
 * Categorical maps for classified rasters (a random forest's classes): entry i is colour i modulo
 * the palette. Drawn over CATEGORICAL_RANGE, the whole value v (0 to 254) gets colour v in RGBA
 * (colorize) and in indexed PNG (colorIndices, whose entry 0 is no-data). Twelve colours of our
 * own choosing, neighbours far apart in hue and lightness.
 */
const CATEGORICAL: Record<string, readonly (readonly [number, number, number])[]> = {
  classes: [
    [31, 120, 180],
    [51, 160, 44],
    [227, 26, 28],
    [255, 127, 0],
    [106, 61, 154],
    [177, 89, 40],
    [166, 206, 227],
    [178, 223, 138],
    [251, 154, 153],
    [253, 191, 111],
    [202, 178, 214],
    [255, 255, 153],
  ],
};

/** The min and max a categorical map is drawn with: both colorize and colorIndices then round v to v. */
export const CATEGORICAL_RANGE: readonly [number, number] = [0, 254.5];

/** Whether a colour map is categorical (one colour per whole value, see CATEGORICAL). */
export const isCategorical = (map: string): boolean => Object.hasOwn(CATEGORICAL, map.toLowerCase());

/** Names accepted by colorize's `map`. */
export const COLOR_MAPS: readonly string[] = Object.freeze([...Object.keys(CONTROL_POINTS), ...Object.keys(CATEGORICAL)]);

/** Tables as 256 RGBA words (bytes R, G, B, A in memory), by map name. */
const tables = new Map<string, Uint32Array>();

/**
 * Fills entries first..255 of an RGBA table with the map at (i - first) / (255 - first),
 * interpolated linearly between the control points.
 */
function fillRamp(bytes: Uint8Array, points: readonly ControlPoint[], first: number): void {
  let seg = 0;
  for (let i = first; i < 256; i++) {
    const f = (i - first) / (255 - first);
    while (seg < points.length - 2 && f > points[seg + 1][0]) seg++;
    const [p0, r0, g0, b0] = points[seg];
    const [p1, r1, g1, b1] = points[seg + 1];
    const w = Math.min(1, Math.max(0, (f - p0) / (p1 - p0)));
    bytes[4 * i] = Math.round(r0 + (r1 - r0) * w);
    bytes[4 * i + 1] = Math.round(g0 + (g1 - g0) * w);
    bytes[4 * i + 2] = Math.round(b0 + (b1 - b0) * w);
    bytes[4 * i + 3] = 255;
  }
}

function buildTable(points: readonly ControlPoint[]): Uint32Array {
  const bytes = new Uint8Array(256 * 4);
  fillRamp(bytes, points, 0);
  return new Uint32Array(bytes.buffer);
}

/** The 256-entry table of a map as RGBA bytes (a copy); throws for unknown names. */
export function colorTable(map: string): Uint8Array {
  return new Uint8Array(tableOf(map).buffer.slice(0));
}

function tableOf(map: string): Uint32Array {
  const name = map.toLowerCase();
  let t = tables.get(name);
  if (!t) {
    const points = Object.hasOwn(CONTROL_POINTS, name) ? CONTROL_POINTS[name] : undefined;
    const palette = Object.hasOwn(CATEGORICAL, name) ? CATEGORICAL[name] : undefined;
    if (!points && !palette) throw new Error(`unknown colour map '${map}'; known maps: ${COLOR_MAPS.join(', ')}`);
    if (palette) {
      const bytes = new Uint8Array(256 * 4);
      for (let i = 0; i < 256; i++) bytes.set([...palette[i % palette.length], 255], 4 * i);
      t = new Uint32Array(bytes.buffer);
    } else t = buildTable(points!);
    tables.set(name, t);
  }
  return t;
}

function checkRange(min: number, max: number): void {
  if (!Number.isFinite(min) || !Number.isFinite(max) || max < min) throw new Error(`bad value range [${min}, ${max}]: need finite min <= max`);
}

/**
 * Factor from (v - min) to 0..255. With min === max it is Infinity, which the index computation
 * below turns into a step: v <= min gives 0 (as (v-min)*k is -Infinity or NaN), v > min gives 255.
 */
function scaleOf(min: number, max: number): number {
  return max > min ? 255 / (max - min) : Infinity;
}

export interface ColorizeOptions {
  min: number;
  max: number;
  /** One of COLOR_MAPS (case-insensitive); default 'greys'. */
  map?: string;
}

/** One band to RGBA (4 bytes a value) through a colour map; NaN is transparent. */
export function colorize(values: Float32Array, opts: ColorizeOptions): Uint8Array {
  const { min, max } = opts;
  checkRange(min, max);
  const lut = tableOf(opts.map ?? 'greys');
  const k = scaleOf(min, max);
  const n = values.length;
  const out = new Uint8Array(n * 4);
  const out32 = new Uint32Array(out.buffer);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v !== v) continue; // NaN: stays 0,0,0,0
    const x = (v - min) * k;
    // x > 0 is false for NaN (v === min with k Infinity) and negatives; +0.5 then truncate rounds.
    out32[i] = lut[x > 0 ? (x < 255 ? (x + 0.5) | 0 : 255) : 0]!;
  }
  return out;
}

export interface StretchOptions {
  /** Per band, or one value for all bands. */
  min: number[] | number;
  max: number[] | number;
}

function perBand(v: number[] | number, n: number, what: string): number[] {
  if (typeof v === 'number') return new Array<number>(n).fill(v);
  if (v.length !== n) throw new Error(`${what} has ${v.length} values for ${n} bands`);
  return v;
}

/** Clamped, rounded 0..255 for one value (not NaN); see colorize for the cases. */
function byteOf(v: number, min: number, k: number): number {
  const x = (v - min) * k;
  return x > 0 ? (x < 255 ? (x + 0.5) | 0 : 255) : 0;
}

/**
 * 1 band (greys) or 3 bands (R, G, B) to RGBA with a linear stretch of [min, max] to 0..255 per
 * band; NaN in any band makes the pixel transparent.
 */
export function toRgba(bands: Float32Array[], opts: StretchOptions): Uint8Array {
  const nb = bands.length;
  if (nb !== 1 && nb !== 3) throw new Error(`toRgba needs 1 or 3 bands, got ${nb}`);
  const mins = perBand(opts.min, nb, 'min');
  const maxs = perBand(opts.max, nb, 'max');
  for (let b = 0; b < nb; b++) checkRange(mins[b], maxs[b]);
  const n = bands[0].length;
  for (const [b, band] of bands.entries()) {
    if (band.length !== n) throw new Error(`band ${b} has ${band.length} values, band 0 has ${n}`);
  }
  const out = new Uint8Array(n * 4);
  if (nb === 1) {
    const a = bands[0];
    const min = mins[0];
    const k = scaleOf(min, maxs[0]);
    for (let i = 0, o = 0; i < n; i++, o += 4) {
      const v = a[i];
      if (v !== v) continue;
      const g = byteOf(v, min, k);
      out[o] = g;
      out[o + 1] = g;
      out[o + 2] = g;
      out[o + 3] = 255;
    }
    return out;
  }
  const [r, g, b] = bands as [Float32Array, Float32Array, Float32Array];
  const [minR, minG, minB] = mins as [number, number, number];
  const kR = scaleOf(minR, maxs[0]);
  const kG = scaleOf(minG, maxs[1]);
  const kB = scaleOf(minB, maxs[2]);
  for (let i = 0, o = 0; i < n; i++, o += 4) {
    const vr = r[i];
    const vg = g[i];
    const vb = b[i];
    if (vr !== vr || vg !== vg || vb !== vb) continue;
    out[o] = byteOf(vr, minR, kR);
    out[o + 1] = byteOf(vg, minG, kG);
    out[o + 2] = byteOf(vb, minB, kB);
    out[o + 3] = 255;
  }
  return out;
}

/**
 * One band as palette indices for an indexed PNG: 0 is no-data (transparent), 1..255 the map's
 * colours from min to max. A quarter of the bytes of RGBA, so tiles are smaller and faster to
 * compress; 255 levels instead of 256, a difference of at most one step of the map.
 */
export function colorIndices(values: Float32Array, min: number, max: number): Uint8Array {
  checkRange(min, max);
  const k = max > min ? 254 / (max - min) : Infinity;
  const n = values.length;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v !== v) continue; // NaN stays 0
    const x = (v - min) * k;
    out[i] = 1 + (x > 0 ? (x < 254 ? (x + 0.5) | 0 : 254) : 0);
  }
  return out;
}

/** The palette of colorIndices: 256 RGBA entries, entry 0 transparent, entry i the map at (i - 1) / 254. */
export function colorPalette(map: string): Uint8Array {
  const name = map.toLowerCase();
  const points = Object.hasOwn(CONTROL_POINTS, name) ? CONTROL_POINTS[name] : undefined;
  const palette = Object.hasOwn(CATEGORICAL, name) ? CATEGORICAL[name] : undefined;
  if (!points && !palette) throw new Error(`unknown colour map '${map}'; known maps: ${COLOR_MAPS.join(', ')}`);
  const out = new Uint8Array(256 * 4);
  if (palette) for (let i = 1; i < 256; i++) out.set([...palette[(i - 1) % palette.length], 255], 4 * i);
  else fillRamp(out, points!, 1);
  return out;
}
