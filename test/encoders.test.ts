// Our PNG, JPEG and netCDF encoders and the colour maps. The files are read back by independent
// readers: GDAL (libpng, libjpeg, netCDF-C) and, for PNG, a minimal decoder here that handles every
// filter type and checks the CRCs with its own table.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { encodePng, type PngImage } from '../src/output/png-writer.js';
import { encodeJpeg } from '../src/output/jpeg-writer.js';
import { CATEGORICAL_RANGE, COLOR_MAPS, colorIndices, colorPalette, colorTable, colorize, isCategorical, toRgba } from '../src/output/colormap.js';
import { encodeNetcdf, netcdfParts, type NetcdfInput } from '../src/output/netcdf-writer.js';
import { describeWithTool, hasGdal, run } from './system-tools.js';
import { decodePng } from './png-decode.js';
import { rng } from './rng.js';

// ---------------------------------------------------------------------------------------------
// Test data and helpers

function randomBytes(n: number, seed: number): Uint8Array {
  const r = rng(seed);
  return Uint8Array.from({ length: n }, () => Math.floor(r() * 256));
}

/** Half noise, half smooth ramps, so both big and small row differences occur. */
function pngImage(width: number, height: number, channels: 1 | 2 | 3 | 4, seed: number): PngImage {
  const noise = randomBytes(width * height * channels, seed);
  const data = new Uint8Array(width * height * channels);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < channels; c++) {
        const i = (y * width + x) * channels + c;
        data[i] = y < height / 2 ? noise[i] : (x * 3 + y * 5 + c * 40) & 255;
      }
    }
  }
  return { width, height, channels, data };
}

function firstDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return i;
  return -1;
}

function expectSame(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  const i = firstDifference(got, want);
  expect(i, `${what}: first difference at ${i}: got ${got[i]}, want ${want[i]} (lengths ${got.length}, ${want.length})`).toBe(-1);
}

/** Raster bytes as GDAL decodes them, pixel-interleaved (ENVI BIP is headerless raw). */
function gdalRaw(file: string, dir: string, extra: string[] = []): Buffer {
  const out = path.join(dir, `${path.basename(file).replace(/\W/g, '_')}-${extra.join('_').replace(/\W/g, '_')}.raw`);
  run('gdal_translate', ['-q', '-of', 'ENVI', '-co', 'INTERLEAVE=BIP', ...extra, file, out]);
  return readFileSync(out);
}

interface GdalInfo {
  size: [number, number];
  geoTransform?: number[];
  coordinateSystem?: { wkt: string };
  metadata: Record<string, Record<string, string>>;
  bands: { type: string; noDataValue?: number | string; colorInterpretation?: string; metadata?: Record<string, Record<string, string>> }[];
}

const gdalInfo = (file: string): GdalInfo => JSON.parse(run('gdalinfo', ['-json', file])) as GdalInfo;

/** Relative luminance-like lightness of a table entry (Rec. 709 weights). */
const lightness = (t: Uint8Array, i: number) => 0.2126 * t[4 * i] + 0.7152 * t[4 * i + 1] + 0.0722 * t[4 * i + 2];

// ---------------------------------------------------------------------------------------------
// Colour maps

describe('colour maps', () => {
  it('has the documented maps', () => {
    for (const m of ['greys', 'viridis', 'ndvi', 'rdylgn', 'blues', 'terrain']) expect(COLOR_MAPS).toContain(m);
  });

  it('rejects an unknown map, listing the known ones', () => {
    expect(() => colorize(new Float32Array(1), { min: 0, max: 1, map: 'jet' })).toThrow(/unknown colour map 'jet'.*greys.*viridis.*ndvi/);
    expect(() => colorize(new Float32Array(1), { min: 0, max: 1, map: 'toString' })).toThrow(/unknown colour map/);
  });

  it('makes NaN transparent and clamps to the ends', () => {
    for (const map of COLOR_MAPS) {
      const t = colorTable(map);
      const out = colorize(Float32Array.from([NaN, -0.5, -0.25, 0.75, 1.5, -Infinity, Infinity, 0.25]), { min: -0.25, max: 0.75, map });
      const px = (i: number) => [...out.subarray(4 * i, 4 * i + 4)];
      const entry = (i: number) => [...t.subarray(4 * i, 4 * i + 4)];
      expect(px(0), map).toEqual([0, 0, 0, 0]);
      expect(px(1), map).toEqual(entry(0));
      expect(px(2), map).toEqual(entry(0));
      expect(px(3), map).toEqual(entry(255));
      expect(px(4), map).toEqual(entry(255));
      expect(px(5), map).toEqual(entry(0));
      expect(px(6), map).toEqual(entry(255));
      expect(px(7), map).toEqual(entry(128)); // 0.5 * 255 = 127.5, rounded up
      for (let i = 0; i < 256; i++) expect(t[4 * i + 3], `${map} alpha`).toBe(255);
    }
  });

  it('maps the value range linearly onto the 256 entries', () => {
    const values = Float32Array.from({ length: 256 }, (_, i) => i / 255);
    const out = colorize(values, { min: 0, max: 1, map: 'viridis' });
    expect(out).toEqual(colorTable('viridis'));
    // greys is the identity ramp
    const greys = colorTable('greys');
    for (let i = 0; i < 256; i++) expect([...greys.subarray(4 * i, 4 * i + 4)]).toEqual([i, i, i, 255]);
  });

  it('draws the whole values of a categorical map each in its own colour, in RGBA and in indexed PNG alike', () => {
    const values = Float32Array.from({ length: 255 }, (_, v) => v);
    const [min, max] = CATEGORICAL_RANGE;
    const rgba = colorize(values, { min, max, map: 'classes' });
    const table = colorTable('classes');
    const palette = colorPalette('classes');
    const indices = colorIndices(values, min, max);
    for (let v = 0; v < 255; v++) {
      expect([...rgba.subarray(4 * v, 4 * v + 4)]).toEqual([...table.subarray(4 * v, 4 * v + 4)]);
      expect(indices[v]).toBe(v + 1);
      expect([...palette.subarray(4 * (v + 1), 4 * (v + 2))]).toEqual([...table.subarray(4 * v, 4 * v + 4)]);
    }
    // Neighbouring classes differ clearly.
    for (let v = 1; v < 12; v++) expect([0, 1, 2].some((c) => Math.abs(table[4 * v + c] - table[4 * (v - 1) + c]) > 40)).toBe(true);
  });

  it('has continuous ramps with monotone lightness where expected', () => {
    for (const map of COLOR_MAPS.filter((m) => !isCategorical(m))) {
      const t = colorTable(map);
      for (let i = 1; i < 256; i++) {
        for (let c = 0; c < 3; c++) expect(Math.abs(t[4 * i + c] - t[4 * (i - 1) + c]), `${map} step at ${i}`).toBeLessThanOrEqual(12);
      }
    }
    // Monotone up to the rounding of entries to bytes, and strictly over 8 entries.
    for (const [map, sign] of [
      ['greys', 1],
      ['viridis', 1],
      ['blues', -1],
    ] as const) {
      const t = colorTable(map);
      for (let i = 1; i < 256; i++) expect(sign * (lightness(t, i) - lightness(t, i - 1)), `${map} at ${i}`).toBeGreaterThan(-0.5);
      for (let i = 8; i < 256; i++) expect(sign * (lightness(t, i) - lightness(t, i - 8)), `${map} at ${i}`).toBeGreaterThan(0);
    }
  });

  it('ndvi goes brown to yellow to green, rdylgn red to yellow to green', () => {
    const rgb = (map: string, i: number) => [...colorTable(map).subarray(4 * i, 4 * i + 3)] as [number, number, number];
    const [r0, g0, b0] = rgb('ndvi', 0);
    expect(r0 > g0 && g0 > b0).toBe(true); // brown
    const [rm, gm, bm] = rgb('ndvi', 128);
    expect(rm > 200 && gm > 200 && bm < 120).toBe(true); // yellow
    const [r1, g1, b1] = rgb('ndvi', 255);
    expect(g1 > r1 && g1 > b1).toBe(true); // green
    const [rr, gr] = rgb('rdylgn', 0);
    expect(rr).toBeGreaterThan(gr + 100);
    const [rg, gg] = rgb('rdylgn', 255);
    expect(gg).toBeGreaterThan(rg + 50);
  });

  it('handles min === max as a step and rejects bad ranges', () => {
    const t = colorTable('greys');
    const out = colorize(Float32Array.from([1, 2, 3]), { min: 2, max: 2 });
    expect([out[0], out[4], out[8]]).toEqual([t[0], t[0], t[4 * 255]]);
    expect(() => colorize(new Float32Array(1), { min: 1, max: 0 })).toThrow(/range/);
    expect(() => colorize(new Float32Array(1), { min: NaN, max: 1 })).toThrow(/range/);
  });

  it('toRgba stretches 3 bands per band, and NaN in any band is transparent', () => {
    const r = Float32Array.from([0, 1000, 500, NaN, 2000, -5]);
    const g = Float32Array.from([0, 1000, 250, 7, 2000, 0]);
    const b = Float32Array.from([0, 1000, 100, 7, NaN, 0]);
    const out = toRgba([r, g, b], { min: [0, 0, 0], max: [1000, 500, 255] });
    expect([...out]).toEqual([
      0,
      0,
      0,
      255,
      255,
      255,
      255,
      255,
      128,
      128,
      100,
      255, // 127.5 rounds up
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      255,
    ]);
  });

  it('toRgba with one band gives greys, with scalar min/max', () => {
    const out = toRgba([Float32Array.from([0, 0.5, 1, NaN, 2])], { min: 0, max: 1 });
    expect([...out]).toEqual([0, 0, 0, 255, 128, 128, 128, 255, 255, 255, 255, 255, 0, 0, 0, 0, 255, 255, 255, 255]);
    expect(() => toRgba([new Float32Array(1), new Float32Array(1)], { min: 0, max: 1 })).toThrow(/1 or 3 bands/);
    expect(() => toRgba([new Float32Array(1), new Float32Array(1), new Float32Array(2)], { min: 0, max: 1 })).toThrow(/band 2/);
    expect(() => toRgba([new Float32Array(1)], { min: [0, 1], max: 1 })).toThrow(/min has 2 values/);
  });
});

// ---------------------------------------------------------------------------------------------
// PNG

const pngCases: { name: string; img: PngImage; opts?: Parameters<typeof encodePng>[1] }[] = [
  { name: 'grey 37x29', img: pngImage(37, 29, 1, 1) },
  { name: 'grey 64x8 (rows of whole words)', img: pngImage(64, 8, 1, 2) },
  { name: 'grey+alpha 33x17', img: pngImage(33, 17, 2, 3) },
  { name: 'RGB 31x23', img: pngImage(31, 23, 3, 4) },
  { name: 'RGB 4x4', img: pngImage(4, 4, 3, 5) },
  { name: 'RGBA 256x256', img: pngImage(256, 256, 4, 6) },
  { name: 'RGBA 1x1', img: pngImage(1, 1, 4, 7) },
  { name: 'RGBA 13x300, default strategy level 9', img: pngImage(13, 300, 4, 8), opts: { level: 9, strategy: 'default' } },
  { name: 'RGBA 20x20, level 0 (stored)', img: pngImage(20, 20, 4, 9), opts: { level: 0 } },
  {
    name: 'RGBA 16x16 from an unaligned view',
    img: (() => {
      const src = pngImage(16, 16, 4, 10);
      const backing = new Uint8Array(src.data.length + 1);
      backing.set(src.data, 1);
      return { ...src, data: backing.subarray(1) };
    })(),
  },
];

describe('PNG encoder', () => {
  for (const c of pngCases) {
    it(`${c.name}: our decoder reads back the same pixels`, () => {
      const png = encodePng(c.img, c.opts);
      const got = decodePng(png);
      expect(got.chunks).toEqual(['IHDR', 'IDAT', 'IEND']);
      expect([got.width, got.height, got.channels]).toEqual([c.img.width, c.img.height, c.img.channels]);
      expectSame(got.data, c.img.data, c.name);
    });
  }

  it('rejects bad input', () => {
    expect(() => encodePng({ width: 2, height: 2, channels: 4, data: new Uint8Array(15) })).toThrow(/16/);
    expect(() => encodePng({ width: 0, height: 2, channels: 1, data: new Uint8Array(0) })).toThrow(/size/);
    expect(() => encodePng({ width: 1, height: 1, channels: 5 as 4, data: new Uint8Array(5) })).toThrow(/channels/);
    expect(() => encodePng(pngImage(2, 2, 1, 1), { level: 10 })).toThrow(/level/);
  });
});

describeWithTool(hasGdal, 'GDAL', 'PNG encoder, read by GDAL', () => {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'xeo-png-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  for (const c of pngCases) {
    it(`${c.name}: exact pixel values`, () => {
      const file = path.join(dir, `${c.name.replace(/\W/g, '_')}.png`);
      writeFileSync(file, encodePng(c.img, c.opts));
      const info = gdalInfo(file);
      expect(info.size).toEqual([c.img.width, c.img.height]);
      expect(info.bands.length).toBe(c.img.channels);
      expect(info.bands.every((b) => b.type === 'Byte')).toBe(true);
      const interp = { 1: ['Gray'], 2: ['Gray', 'Alpha'], 3: ['Red', 'Green', 'Blue'], 4: ['Red', 'Green', 'Blue', 'Alpha'] }[c.img.channels];
      expect(info.bands.map((b) => b.colorInterpretation)).toEqual(interp);
      expectSame(gdalRaw(file, dir), c.img.data, c.name);
    });
  }

  it('a colorized NDVI tile with a transparent hole', () => {
    const w = 256;
    const ndvi = Float32Array.from({ length: w * w }, (_, i) => ((i % w) - 40 < 20 && Math.floor(i / w) < 30 ? NaN : -0.2 + ((i % w) + Math.floor(i / w)) / 500));
    const rgba = colorize(ndvi, { min: -0.2, max: 0.8, map: 'ndvi' });
    const file = path.join(dir, 'ndvi.png');
    writeFileSync(file, encodePng({ width: w, height: w, channels: 4, data: rgba }));
    const raw = gdalRaw(file, dir);
    expectSame(raw, rgba, 'ndvi tile');
    expect(raw[3]).toBe(0); // (0, 0) is in the hole
    expect(raw[4 * (100 * w + 100) + 3]).toBe(255);
  });

  it('an indexed NDVI tile: GDAL sees the palette, and its colours are those of the colour map', () => {
    const w = 256;
    const ndvi = Float32Array.from({ length: w * w }, (_, i) => (i % w < 20 && Math.floor(i / w) < 30 ? NaN : -0.3 + ((i % w) + Math.floor(i / w)) / 400));
    const indices = colorIndices(ndvi, -0.2, 0.8);
    const palette = colorPalette('ndvi');
    const png = encodePng({ width: w, height: w, channels: 1, data: indices, palette });
    const file = path.join(dir, 'ndvi-indexed.png');
    writeFileSync(file, png);
    const info = gdalInfo(file) as any;
    expect(info.bands.length).toBe(1);
    expect(info.bands[0].colorInterpretation).toBe('Palette');
    expect(info.bands[0].colorTable.count).toBe(256);
    expectSame(gdalRaw(file, dir), indices, 'indices');
    // Our decoder expands it to RGBA: transparent no-data, and colours within one step of the map.
    const rgba = decodePng(png).data;
    const ref = colorize(ndvi, { min: -0.2, max: 0.8, map: 'ndvi' });
    expect(rgba[3]).toBe(0);
    let worst = 0;
    for (let i = 0; i < rgba.length; i++) worst = Math.max(worst, Math.abs(rgba[i] - ref[i]));
    expect(worst).toBeLessThanOrEqual(3);
    expect(indices.filter((x) => x === 1).length).toBeGreaterThan(0); // clamped below min
    expect(indices.filter((x) => x === 255).length).toBeGreaterThan(0); // clamped above max
  });
});

// ---------------------------------------------------------------------------------------------
// JPEG

/** Smooth colours, a transparent 32x32 block at (16, 16) and a half-transparent one at (64, 16). */
function jpegImage(w: number, h: number): Uint8Array {
  const d = new Uint8Array(w * h * 4);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const o = 4 * (y * w + x);
      d[o] = Math.round((255 * x) / (w - 1));
      d[o + 1] = Math.round((255 * y) / (h - 1));
      d[o + 2] = 100;
      const inBlock = (bx: number) => x >= bx && x < bx + 32 && y >= 16 && y < 48;
      d[o + 3] = inBlock(16) ? 0 : inBlock(64) ? 128 : 255;
      if (inBlock(16) || inBlock(64)) d.fill(0, o, o + 3); // black under the alpha
    }
  }
  return d;
}

describeWithTool(hasGdal, 'GDAL', 'JPEG encoder, read by GDAL', () => {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'xeo-jpeg-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('has the right size and about the right colours; transparent becomes white', () => {
    const w = 160;
    const h = 120;
    const rgba = jpegImage(w, h);
    const jpg = encodeJpeg({ width: w, height: h, data: rgba });
    expect([...jpg.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
    const file = path.join(dir, 'a.jpg');
    writeFileSync(file, jpg);
    const info = gdalInfo(file);
    expect(info.size).toEqual([w, h]);
    expect(info.bands.map((b) => b.type)).toEqual(['Byte', 'Byte', 'Byte']);
    const raw = gdalRaw(file, dir);
    let sum = 0;
    let n = 0;
    let worst = 0;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const a = rgba[4 * (y * w + x) + 3];
        // expected: composited over white
        for (let c = 0; c < 3; c++) {
          const want = 255 - ((255 - rgba[4 * (y * w + x) + c]) * a) / 255;
          const d = Math.abs(raw[3 * (y * w + x) + c] - want);
          // away from the blocks' edges, where JPEG rings
          const nearEdge = [16, 48, 64, 96].some((e) => Math.abs(x - e) < 4) || [16, 48].some((e) => Math.abs(y - e) < 4);
          if (!nearEdge) worst = Math.max(worst, d);
          sum += d;
          n++;
        }
      }
    }
    expect(sum / n).toBeLessThan(3);
    expect(worst).toBeLessThan(16);
    const px = (x: number, y: number) => [...raw.subarray(3 * (y * w + x), 3 * (y * w + x) + 3)];
    for (const v of px(32, 32)) expect(v).toBeGreaterThan(245); // transparent: white
    for (const v of px(80, 32)) expect(Math.abs(v - 127)).toBeLessThan(8); // black at half alpha: grey
  });

  it('quality changes the size; opaque input passes through', () => {
    const w = 64;
    const data = jpegImage(w, w).map((v, i) => (i % 4 === 3 ? 255 : v));
    const small = encodeJpeg({ width: w, height: w, data }, 30);
    const big = encodeJpeg({ width: w, height: w, data }, 95);
    expect(small.length).toBeLessThan(big.length);
    expect(() => encodeJpeg({ width: w, height: w, data: data.subarray(4) })).toThrow(/RGBA/);
    expect(() => encodeJpeg({ width: w, height: w, data }, 0)).toThrow(/quality/);
  });
});

// ---------------------------------------------------------------------------------------------
// netCDF

/** A cube with values that tell band, time, row and column apart, and some NaN. */
function cube(nt: number, w: number, h: number, band: number): Float32Array {
  const a = new Float32Array(nt * w * h);
  for (let t = 0; t < nt; t++) {
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const i = (t * h + y) * w + x;
        a[i] = (x + y) % 7 === 3 ? NaN : band * 1000 + t * 100 + y + x / 100 + 0.125;
      }
    }
  }
  return a;
}

const UTM_INPUT: NetcdfInput = {
  width: 7,
  height: 5,
  epsg: 32633,
  transform: [500000, 10, 0, 5000000, 0, -10],
  times: ['2021-06-01', '2021-06-11T00:00:00Z', '2021-07-01T00:00:00+00:00'],
  bands: [
    { name: 'B04', data: cube(3, 7, 5, 1) },
    { name: 'B08', data: cube(3, 7, 5, 2) },
    { name: 'NDVI', data: cube(3, 7, 5, 3) },
  ],
  attributes: { title: 'A test cube', source: 'Xeo tests' },
};

describe('netCDF encoder', () => {
  it('writes a CDF-2 header', () => {
    const nc = encodeNetcdf(UTM_INPUT);
    expect(nc.toString('latin1', 0, 4)).toBe('CDF\x02');
    expect(nc.readUInt32BE(4)).toBe(0); // no records
    expect(nc.readUInt32BE(8)).toBe(0x0a); // dimension list
    expect(nc.readUInt32BE(12)).toBe(3); // t, y, x
    // the file ends with the last band, big-endian
    const last = UTM_INPUT.bands[2].data;
    expect(nc.readFloatBE(nc.length - 4)).toBe(last[last.length - 1]);
    expect(nc.length).toBeGreaterThan(4 * 3 * 3 * 7 * 5);
  });

  it('gives the same bytes in parts as in one buffer', () => {
    const whole = encodeNetcdf(UTM_INPUT);
    const parts = netcdfParts(UTM_INPUT);
    const pieces = [...parts.data(64)];
    expect(pieces.every((p) => p.length <= 64)).toBe(true);
    const joined = Buffer.concat([parts.header, ...pieces]);
    expect(parts.bytes).toBe(whole.length);
    expect(joined.equals(whole)).toBe(true);
  });

  it('rejects bad input', () => {
    const bad = (patch: Partial<NetcdfInput>) => () => encodeNetcdf({ ...UTM_INPUT, ...patch });
    expect(bad({ bands: [{ name: 'x', data: cube(3, 7, 5, 1) }] })).toThrow(/taken/);
    expect(bad({ bands: [{ name: 'a/b', data: cube(3, 7, 5, 1) }] })).toThrow(/not a valid netCDF name/);
    expect(bad({ bands: [{ name: 'B04', data: cube(2, 7, 5, 1) }] })).toThrow(/expected 105/);
    expect(bad({ bands: [UTM_INPUT.bands[0], UTM_INPUT.bands[0]] })).toThrow(/two bands/);
    expect(bad({ times: [1, 2, Infinity] })).toThrow(/finite/);
    expect(bad({ times: [] })).toThrow(/at least one/);
    expect(bad({ transform: [0, 1, 0.1, 0, 0, -1] })).toThrow(/rotation/);
    expect(bad({ epsg: 999999 })).toThrow(/EPSG:999999/);
  });
});

describeWithTool(hasGdal, 'GDAL', 'netCDF encoder, read by GDAL', () => {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'xeo-nc-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a UTM cube with 3 times and 3 bands: CRS, geotransform, times, nodata, values', () => {
    const file = path.join(dir, 'utm.nc');
    writeFileSync(file, encodeNetcdf(UTM_INPUT));
    const top = gdalInfo(file);
    expect(top.metadata['']).toMatchObject({ 'NC_GLOBAL#Conventions': 'CF-1.8', 'NC_GLOBAL#title': 'A test cube', 'NC_GLOBAL#source': 'Xeo tests' });
    const subdatasets = Object.values(top.metadata['SUBDATASETS'] ?? {}).filter((v) => v.startsWith('NETCDF:'));
    expect(subdatasets).toEqual(['B04', 'B08', 'NDVI'].map((b) => `NETCDF:"${file}":${b}`));

    for (const [bi, band] of UTM_INPUT.bands.entries()) {
      const sub = `NETCDF:"${file}":${band.name}`;
      const info = gdalInfo(sub);
      expect(info.size).toEqual([7, 5]);
      expect(info.coordinateSystem!.wkt).toMatch(/ID\["EPSG",32633\]\]$/);
      expect(info.geoTransform).toEqual([500000, 10, 0, 5000000, 0, -10]);
      expect(info.metadata['']['NETCDF_DIM_t_VALUES']).toBe('{18779,18789,18809}'); // days since 1970
      expect(info.metadata['']['t#units']).toBe('days since 1970-01-01T00:00:00Z');
      expect(info.metadata['']['x#standard_name']).toBe('projection_x_coordinate');
      expect(info.metadata['']['x#units']).toBe('m');
      expect(info.bands.length).toBe(3);
      expect(info.bands.map((b) => b.metadata?.['']?.['NETCDF_DIM_t'])).toEqual(['18779', '18789', '18809']);
      for (const b of info.bands) {
        expect(b.type).toBe('Float32');
        expect(b.noDataValue).toBe('NaN');
      }
      // All times at once, pixel-interleaved: [y][x][t]
      const raw = gdalRaw(sub, dir);
      const got = new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4);
      const want = new Float32Array(3 * 7 * 5);
      for (let t = 0; t < 3; t++) for (let p = 0; p < 35; p++) want[p * 3 + t] = band.data[t * 35 + p]!;
      expectSame(got, want, `band ${bi}`);
    }
    // A point check through another GDAL tool: band B08, time 2 (GDAL band 3), column 4, row 2
    const v = Number(run('gdallocationinfo', ['-valonly', '-b', '3', `NETCDF:"${file}":B08`, '4', '2']).trim());
    expect(v).toBe(Math.fround(2 * 1000 + 2 * 100 + 2 + 4 / 100 + 0.125));
  });

  it('a geographic grid without times; times with hours become seconds', () => {
    const w = 6;
    const h = 4;
    const file = path.join(dir, 'geo.nc');
    writeFileSync(
      file,
      encodeNetcdf({
        width: w,
        height: h,
        epsg: 4326,
        transform: [10.5, 0.25, 0, 47.75, 0, -0.125],
        times: null,
        bands: [{ name: 'elevation', data: cube(1, w, h, 4) }],
      }),
    );
    const info = gdalInfo(file);
    expect(info.size).toEqual([w, h]);
    expect(info.coordinateSystem!.wkt).toMatch(/ID\["EPSG",4326\]\]$/);
    expect(info.geoTransform).toEqual([10.5, 0.25, 0, 47.75, 0, -0.125]);
    expect(info.metadata['']['x#standard_name']).toBe('longitude');
    expect(info.metadata['']['y#units']).toBe('degrees_north');
    expect(info.bands.length).toBe(1);
    expect(info.bands[0].noDataValue).toBe('NaN');
    const raw = gdalRaw(file, dir);
    expectSame(new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4), cube(1, w, h, 4), 'elevation');

    const timed = path.join(dir, 'seconds.nc');
    writeFileSync(
      timed,
      encodeNetcdf({
        width: 2,
        height: 2,
        epsg: 3035,
        transform: [4321000, 20, 0, 3210000, 0, -20],
        times: ['2021-06-01T10:30:00Z', '2021-06-01T10:30:05.5Z'],
        bands: [{ name: 'B02', data: cube(2, 2, 2, 1) }],
      }),
    );
    const ti = gdalInfo(timed);
    expect(ti.coordinateSystem!.wkt).toMatch(/ID\["EPSG",3035\]\]$/);
    expect(ti.metadata['']['t#units']).toBe('seconds since 1970-01-01T00:00:00Z');
    expect(ti.metadata['']['NETCDF_DIM_t_VALUES']).toBe(`{${Date.UTC(2021, 5, 1, 10, 30) / 1000},${Date.UTC(2021, 5, 1, 10, 30, 5, 500) / 1000}}`);
  });

  it('temporal labels that are not all dates: text (t_strlen chars, UTF-8) or, all numbers, a plain coordinate', () => {
    const at = (name: string, times: (string | number)[]) => {
      const file = path.join(dir, name);
      const nt = times.length;
      writeFileSync(file, encodeNetcdf({ ...UTM_INPUT, times, bands: [{ name: 'var', data: cube(nt, 7, 5, 1) }] }));
      return JSON.parse(run('gdalmdiminfo', ['-detailed', file]));
    };
    // A date among weeks makes them all text; the last label is the longest (10 bytes in UTF-8).
    const text = at('text.nc', ['2024-23', '2024-06-12', 'Woche 27Ü']);
    expect(text.arrays.t).toMatchObject({ datatype: 'String', dimensions: ['/t'], values: ['2024-23', '2024-06-12', 'Woche 27Ü'] });
    expect(text.arrays.var.dimensions).toEqual(['/t', '/y', '/x']);
    expect(text.dimensions.map((d: { name: string }) => d.name)).toEqual(['t', 'y', 'x', 't_strlen']);
    expect(text.dimensions[3].size).toBe(10);
    // Streamed in pieces smaller than the padded text, the bytes are the same.
    const input = { ...UTM_INPUT, times: ['a', 'bcd', 'efghi'], bands: [{ name: 'var', data: cube(3, 7, 5, 1) }] };
    const parts = netcdfParts(input);
    expect(Buffer.concat([parts.header, ...parts.data(8)]).equals(encodeNetcdf(input))).toBe(true);
    const numbers = at('numbers.nc', [0, 1, 2.5]);
    expect(numbers.arrays.t).toMatchObject({ datatype: 'Float64', values: [0, 1, 2.5] });
    expect(numbers.arrays.t.attributes).not.toHaveProperty('units');
  });
});
