// Reprojection: src/data/warp.ts with the kernels of kernels/warp.ts, checked against gdalwarp on the
// same source and target grids, for the accuracy of its approximate transformer, on exact cases
// (identity, half-pixel shifts), and timed (printed, not asserted).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from './helpers.js';
import { describeWithTool, hasGdal, run } from './system-tools.js';
import { transformer } from '../src/geometry/crs.js';
import type { Grid } from '../src/core/grid.js';
import { alloc, f32, kernels, mark, release } from '../src/wasm/kernels.js';
import { exactSourceCoordinates, sourceCoordinates, sourceWindow, warp, windowGrid, type SourceRaster, type WarpStats } from '../src/data/warp.js';

/** 600 x 400 pixels of 10 m in UTM 33N (around 14.7°E 48.2°N): a smooth surface with a round NaN hole. */
function syntheticSource(width = 600, height = 400): SourceRaster {
  const grid: Grid = { epsg: 32633, transform: [480000, 10, 0, 5340000, 0, -10], width, height };
  const data = new Float32Array(width * height);
  for (let r = 0; r < height; r++) {
    for (let c = 0; c < width; c++) {
      const hole = (c - 300) ** 2 + (r - 200) ** 2 < 25 ** 2;
      data[r * width + c] = hole ? NaN : 1000 + 300 * Math.sin(c / 40) * Math.cos(r / 30) + 0.5 * c - 0.3 * r;
    }
  }
  return { grid, data };
}

function sourceCentreLonLat(g: Grid): [number, number] {
  const [x0, sx, , y0, , sy] = g.transform;
  return transformer(g.epsg, 4326)(x0 + (g.width / 2) * sx, y0 + (g.height / 2) * sy);
}

const HALF = 20037508.342789244;

/** The 256 x 256 web-mercator tile at zoom z that contains lon/lat. */
function tileGrid(z: number, lon: number, lat: number): Grid {
  const n = 2 ** z;
  const tx = Math.floor(((lon + 180) / 360) * n);
  const rad = (lat * Math.PI) / 180;
  const ty = Math.floor(((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * n);
  const size = (2 * HALF) / n;
  return { epsg: 3857, transform: [-HALF + tx * size, size / 256, 0, HALF - ty * size, 0, -size / 256], width: 256, height: 256 };
}

function bounds(g: Grid): [number, number, number, number] {
  const [x0, sx, , y0, , sy] = g.transform;
  return [x0, y0 + g.height * sy, x0 + g.width * sx, y0];
}

interface Comparison {
  pixels: number;
  identical: number;
  nanMismatch: number;
  nanOurs: number;
  nanGdal: number;
  maxAbs: number;
  p999: number;
}

function compare(ours: Float32Array, gdal: Float32Array): Comparison {
  let identical = 0;
  let nanMismatch = 0;
  let nanOurs = 0;
  let nanGdal = 0;
  const diffs: number[] = [];
  for (let i = 0; i < ours.length; i++) {
    const a = ours[i];
    const b = gdal[i];
    if (Number.isNaN(a)) nanOurs++;
    if (Number.isNaN(b)) nanGdal++;
    if (Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b))) identical++;
    if (Number.isNaN(a) !== Number.isNaN(b)) nanMismatch++;
    else if (!Number.isNaN(a)) diffs.push(Math.abs(a - b));
  }
  diffs.sort((x, y) => x - y);
  return {
    pixels: ours.length,
    identical,
    nanMismatch,
    nanOurs,
    nanGdal,
    maxAbs: diffs.length ? diffs[diffs.length - 1] : 0,
    p999: diffs.length ? diffs[Math.floor(diffs.length * 0.999)] : 0,
  };
}

describeWithTool(hasGdal, 'GDAL', 'warp against gdalwarp', () => {
  let dir: string;
  let srcTif: string;
  const src = syntheticSource();
  let range = 0;

  beforeAll(() => {
    dir = tempDir('xeo-warp-');
    // The source for GDAL: raw float32 with an ENVI header, georeferenced by gdal_translate.
    const bin = path.join(dir, 'src.bin');
    writeFileSync(bin, new Uint8Array(src.data.buffer, src.data.byteOffset, src.data.byteLength));
    writeFileSync(
      path.join(dir, 'src.hdr'),
      `ENVI\nsamples = ${src.grid.width}\nlines = ${src.grid.height}\nbands = 1\nheader offset = 0\nfile type = ENVI Standard\ndata type = 4\ninterleave = bsq\nbyte order = 0\n`,
    );
    const [minX, minY, maxX, maxY] = bounds(src.grid);
    srcTif = path.join(dir, 'src.tif');
    run('gdal_translate', ['-q', '-of', 'GTiff', '-a_srs', 'EPSG:32633', '-a_ullr', `${minX}`, `${maxY}`, `${maxX}`, `${minY}`, '-a_nodata', 'nan', bin, srcTif]);
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of src.data) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    range = hi - lo;
  });

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function gdalwarp(dst: Grid, method: 'near' | 'bilinear', et: number): Float32Array {
    const out = path.join(dir, `out-${dst.epsg}-${method}-${et}.bin`);
    const [minX, minY, maxX, maxY] = bounds(dst);
    run('gdalwarp', [
      '-q',
      '-overwrite',
      '-of',
      'ENVI',
      '-t_srs',
      `EPSG:${dst.epsg}`,
      '-te',
      `${minX}`,
      `${minY}`,
      `${maxX}`,
      `${maxY}`,
      '-ts',
      `${dst.width}`,
      `${dst.height}`,
      '-r',
      method,
      '-et',
      `${et}`,
      '-dstnodata',
      'nan',
      srcTif,
      out,
    ]);
    const bytes = readFileSync(out);
    expect(bytes.byteLength).toBe(dst.width * dst.height * 4);
    return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  }

  // A zoom-14 tile (about 6.4 m of ground per pixel here) and a lon/lat grid of 0.00008° (about 6 x 9 m),
  // both finer than the source so that GDAL's bilinear keeps its 2 x 2 kernel (it widens it when shrinking).
  const [clon, clat] = sourceCentreLonLat(syntheticSource().grid);
  const targets: [string, Grid][] = [
    ['EPSG:3857 z14 tile', tileGrid(14, clon, clat)],
    ['EPSG:4326', { epsg: 4326, transform: [clon - 0.02, 0.00008, 0, clat + 0.012, 0, -0.00008], width: 500, height: 300 }],
  ];

  for (const [name, dst] of targets) {
    it(`${name}: the target lies inside the source`, () => {
      const win = sourceWindow(dst, src.grid, 0);
      expect(win).not.toBeNull();
      expect(win!.col).toBeGreaterThan(0);
      expect(win!.row).toBeGreaterThan(0);
      expect(win!.col + win!.width).toBeLessThan(src.grid.width);
      expect(win!.row + win!.height).toBeLessThan(src.grid.height);
    });

    for (const [method, gdalMethod] of [
      ['nearest', 'near'],
      ['bilinear', 'bilinear'],
    ] as const) {
      it(`${name}, ${method}: compared with gdalwarp -r ${gdalMethod}`, () => {
        const ours = warp(src, dst, method);
        const oursExact = warp(src, dst, method, { maxErrorPixels: 0 });
        const gdal = gdalwarp(dst, gdalMethod, 0.125);
        const gdalExact = gdalwarp(dst, gdalMethod, 0);
        const rows: [string, Comparison][] = [
          ['ours (0.125) vs gdalwarp -et 0.125', compare(ours, gdal)],
          ['ours (0.125) vs gdalwarp -et 0', compare(ours, gdalExact)],
          ['ours exact vs gdalwarp -et 0', compare(oursExact, gdalExact)],
          ['ours (0.125) vs ours exact', compare(ours, oursExact)],
          ['gdalwarp -et 0.125 vs -et 0', compare(gdal, gdalExact)],
        ];
        console.log(
          `${name}, ${method} (data range ${range.toFixed(1)}):\n` +
            rows
              .map(
                ([what, c]) =>
                  `  ${what}: ${((100 * c.identical) / c.pixels).toFixed(2)}% identical, max |diff| ${c.maxAbs.toPrecision(3)} (${(c.maxAbs / range).toExponential(1)} of the range), 99.9th percentile ${c.p999.toPrecision(3)}, NaN ${c.nanOurs} vs ${c.nanGdal}, NaN mismatches ${c.nanMismatch}`,
              )
              .join('\n'),
        );
        const [vsGdal, vsGdalExact, exactVsExact, , gdalSelf] = rows.map(([, c]) => c);
        const share = (c: Comparison) => c.identical / c.pixels;
        expect(vsGdal.nanGdal).toBeGreaterThan(0); // the hole...
        expect(vsGdal.nanMismatch).toBeLessThanOrEqual(Math.max(2, 0.01 * vsGdal.nanGdal)); // ...in the same place
        expect(exactVsExact.nanMismatch).toBe(0);
        if (method === 'nearest') {
          // gdalwarp's own approximation (its -et 0.125 result against its exact one) moves about 1% of
          // the pixels of the lon/lat grid to a neighbouring source pixel; ours moves next to none.
          expect(share(vsGdal)).toBeGreaterThanOrEqual(Math.min(0.99, share(gdalSelf) - 0.002));
          expect(share(vsGdalExact)).toBeGreaterThanOrEqual(0.999);
          expect(share(exactVsExact)).toBeGreaterThanOrEqual(0.999);
        } else {
          expect(vsGdal.maxAbs / range).toBeLessThan(1e-3);
          expect(vsGdalExact.maxAbs / range).toBeLessThan(1e-5);
          expect(exactVsExact.maxAbs / range).toBeLessThan(1e-5);
        }
      });
    }
  }

  it('reading only sourceWindow() of the source gives the same result', () => {
    for (const [, dst] of targets) {
      const win = sourceWindow(dst, src.grid)!;
      const data = new Float32Array(win.width * win.height);
      for (let r = 0; r < win.height; r++) data.set(src.data.subarray((win.row + r) * src.grid.width + win.col, (win.row + r) * src.grid.width + win.col + win.width), r * win.width);
      const part: SourceRaster = { grid: windowGrid(src.grid, win), data };
      for (const method of ['nearest', 'bilinear'] as const) {
        const a = warp(src, dst, method, { maxErrorPixels: 0 });
        const b = warp(part, dst, method, { maxErrorPixels: 0 });
        let same = 0;
        for (let i = 0; i < a.length; i++) if (Object.is(a[i], b[i]) || Math.abs(a[i] - b[i]) <= 1e-3) same++;
        expect(same).toBe(a.length);
      }
    }
  });
});

describe('warp approximation', () => {
  // A 2048 x 2048 web-mercator grid of about 150 m (300 km of mercator) over a UTM 33N grid of 10 m
  // pixels, and one spanning 6°E-24°E (far from zone 33's central meridian at 15°E, where the
  // mapping bends most). The UTM grid covers both, so no cell is skipped as outside.
  const utm: Grid = { epsg: 32633, transform: [-1000000, 10, 0, 7000000, 0, -10], width: 400000, height: 400000 };
  const cases: [string, Grid][] = [
    ['3857 around 15°E 48°N, 150 m', { epsg: 3857, transform: [1520000, 150, 0, 6280000, 0, -150], width: 2048, height: 2048 }],
    ['3857 6°E-24°E 44°N-56°N, 1 km', { epsg: 3857, transform: [668000, 980, 0, 7580000, 0, -980], width: 2048, height: 2048 }],
  ];
  for (const [name, dst] of cases) {
    it(`${name}: interpolated source coordinates within 1/8 source pixel of the exact ones`, () => {
      const stats = {} as WarpStats;
      let t = performance.now();
      const approx = sourceCoordinates(dst, utm, { stats });
      const tApprox = performance.now() - t;
      t = performance.now();
      const exact = exactSourceCoordinates(dst, utm);
      let maxManhattan = 0;
      let maxEuclid = 0;
      let unmapped = 0;
      for (let row = 0; row < dst.height; row++) {
        for (let col = 0; col < dst.width; col++) {
          const [ec, er] = exact(col, row);
          const i = (row * dst.width + col) * 2;
          if (!Number.isFinite(ec)) {
            unmapped++;
            continue;
          }
          const dc = Math.abs(approx[i] - ec);
          const dr = Math.abs(approx[i + 1] - er);
          if (!(dc + dr <= maxManhattan)) maxManhattan = dc + dr;
          const e = Math.hypot(dc, dr);
          if (!(e <= maxEuclid)) maxEuclid = e;
        }
      }
      const tExact = performance.now() - t;
      console.log(
        `${name}: max error ${maxManhattan.toExponential(3)} px (|dx|+|dy|), ${maxEuclid.toExponential(3)} px (euclidean); ` +
          `${stats.exactPoints} exact points for ${dst.width * dst.height} pixels, blocks by final step ${JSON.stringify(stats.steps)}; ` +
          `approximate ${tApprox.toFixed(0)} ms, exact per pixel ${tExact.toFixed(0)} ms`,
      );
      expect(unmapped).toBe(0);
      expect(maxManhattan).toBeLessThanOrEqual(0.125);
    });
  }

  it('points the transform cannot map come out as NaN, next to mapped ones', () => {
    // A UTM 33N grid reaching far beyond the zone (proj4 gives NaN or Infinity for much of it) over a
    // lon/lat world source.
    const W = 360;
    const H = 180;
    const data = new Float32Array(W * H);
    for (let r = 0; r < H; r++) for (let c = 0; c < W; c++) data[r * W + c] = r * 1000 + c;
    const src: SourceRaster = { grid: { epsg: 4326, transform: [-180, 1, 0, 90, 0, -1], width: W, height: H }, data };
    const dst: Grid = { epsg: 32633, transform: [1.5e7, 50000, 0, 5e6, 0, -50000], width: 200, height: 200 };
    const stats = {} as WarpStats;
    const out = warp(src, dst, 'nearest', { stats });
    const exactOut = warp(src, dst, 'nearest', { maxErrorPixels: 0 });
    const coords = sourceCoordinates(dst, src.grid);
    const exact = exactSourceCoordinates(dst, src.grid);
    let unmapped = 0;
    let valid = 0;
    for (let row = 0; row < dst.height; row++) {
      for (let col = 0; col < dst.width; col++) {
        const i = row * dst.width + col;
        const [ec, er] = exact(col, row);
        if (!Number.isFinite(ec)) {
          unmapped++;
          expect(Number.isNaN(out[i])).toBe(true);
          expect(Number.isNaN(coords[2 * i])).toBe(true);
        } else {
          expect(Math.abs(coords[2 * i] - ec) + Math.abs(coords[2 * i + 1] - er)).toBeLessThanOrEqual(0.125);
        }
        if (!Number.isNaN(out[i])) valid++;
        expect(Object.is(out[i], exactOut[i]) || (Number.isNaN(out[i]) && Number.isNaN(exactOut[i]))).toBe(true);
      }
    }
    console.log(`unmappable: ${unmapped} of ${dst.width * dst.height} pixels unmapped, ${valid} valid; blocks by step ${JSON.stringify(stats.steps)}`);
    expect(unmapped).toBeGreaterThan(1000);
    expect(valid).toBeGreaterThan(1000);
  });

  it('a world grid over a small source refines only where it must', () => {
    const src = syntheticSource();
    const world: Grid = { epsg: 4326, transform: [-180, 0.05, 0, 90, 0, -0.05], width: 7200, height: 3600 };
    const stats = {} as WarpStats;
    const t = performance.now();
    const out = warp(src, world, 'nearest', { stats });
    const ms = performance.now() - t;
    let valid = 0;
    for (const v of out) if (!Number.isNaN(v)) valid++;
    console.log(`world 0.05° grid from the 6 x 4 km UTM source: ${valid} valid pixels, ${stats.exactPoints} exact points, blocks by step ${JSON.stringify(stats.steps)}, ${ms.toFixed(0)} ms`);
    expect(stats.steps[16]).toBeGreaterThan(0.9 * stats.blocks);
    const exactOut = warp(src, world, 'nearest', { maxErrorPixels: 0 });
    let same = 0;
    for (let i = 0; i < out.length; i++) if (Object.is(out[i], exactOut[i]) || (Number.isNaN(out[i]) && Number.isNaN(exactOut[i]))) same++;
    expect(same).toBe(out.length);
  });
});

describe('warp exact cases', () => {
  const g: Grid = { epsg: 32633, transform: [500000, 10, 0, 5300000, 0, -10], width: 37, height: 23 };
  const data = new Float32Array(g.width * g.height);
  let x = 7;
  for (let i = 0; i < data.length; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    data[i] = i % 11 === 0 ? NaN : (x / 2147483648) * 200 - 100;
  }
  const src: SourceRaster = { grid: g, data };
  const at = (c: number, r: number) => data[r * g.width + c];

  it('identity warp returns the input, NaNs included', () => {
    for (const method of ['nearest', 'bilinear'] as const) {
      const out = warp(src, g, method);
      for (let i = 0; i < data.length; i++) expect(Object.is(out[i], data[i]) || (Number.isNaN(out[i]) && Number.isNaN(data[i]))).toBe(true);
    }
  });

  it('a half-pixel shift, bilinear, averages the neighbours (renormalised over non-NaN ones); outside is NaN', () => {
    // Shifted right by half a pixel: target pixel (c, r) lies between source pixels c and c+1.
    const right: Grid = { ...g, transform: [500005, 10, 0, 5300000, 0, -10] };
    const outR = warp(src, right, 'bilinear');
    // Shifted right and down by half a pixel: between four source pixels.
    const diag: Grid = { ...g, transform: [500005, 10, 0, 5299995, 0, -10] };
    const outD = warp(src, diag, 'bilinear');
    const mean = (vs: number[]) => {
      const ok = vs.filter((v) => !Number.isNaN(v));
      return ok.length ? ok.reduce((a, b) => a + b, 0) / ok.length : NaN;
    };
    const near = (a: number, b: number) => (Number.isNaN(a) && Number.isNaN(b)) || Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(b));
    for (let r = 0; r < g.height; r++) {
      for (let c = 0; c < g.width; c++) {
        const i = r * g.width + c;
        // A centre on a pixel edge belongs to the pixel right of / below it (GDAL's rounding), and
        // where that pixel is NaN so is the result (as in GDAL). The last column's centres lie on
        // the source's right edge: outside, as in GDAL.
        const wantR = c + 1 < g.width && !Number.isNaN(at(c + 1, r)) ? mean([at(c, r), at(c + 1, r)]) : NaN;
        expect(near(outR[i], wantR), `right (${c}, ${r}): ${outR[i]} vs ${wantR}`).toBe(true);
        const wantD = c + 1 < g.width && r + 1 < g.height && !Number.isNaN(at(c + 1, r + 1)) ? mean([at(c, r), at(c + 1, r), at(c, r + 1), at(c + 1, r + 1)]) : NaN;
        expect(near(outD[i], wantD), `diag (${c}, ${r}): ${outD[i]} vs ${wantD}`).toBe(true);
      }
    }
  });

  it('sourceWindow: clipped to the source, null without overlap', () => {
    expect(sourceWindow(g, g)).toEqual({ col: 0, row: 0, width: g.width, height: g.height });
    const inner: Grid = { ...g, transform: [500100, 5, 0, 5299900, 0, -5], width: 10, height: 10 };
    expect(sourceWindow(inner, g, 0)).toEqual({ col: 10, row: 10, width: 5, height: 5 });
    expect(sourceWindow(inner, g)).toEqual({ col: 9, row: 9, width: 7, height: 7 });
    expect(sourceWindow({ ...g, transform: [600000, 10, 0, 5300000, 0, -10] }, g)).toBeNull();
  });
});

describe('kernel memory', () => {
  it('hands out 16-byte aligned blocks above heapBase, grows the memory, and gives it back', () => {
    const k = kernels();
    const m = mark();
    const a = alloc(3);
    const b = alloc(5);
    expect(a).toBeGreaterThanOrEqual(k.heapBase());
    expect(a % 16).toBe(0);
    expect(b % 16).toBe(0);
    expect(b).not.toBe(a);
    const before = k.memory.buffer.byteLength;
    const big = alloc(before); // more than there is
    expect(big % 16).toBe(0);
    expect(k.memory.buffer.byteLength).toBeGreaterThanOrEqual(big + before);
    f32(big, before / 4).fill(1); // the view covers the new memory
    release(m);
    // Freed blocks are reused by the next request of their size class.
    expect([a, b]).toContain(alloc(1));
    release(m);
  });
});

describe('warp throughput', () => {
  it('prints megapixels per second for a 2048 x 2048 target', () => {
    // A 2400 x 2400 source of 10 m in UTM 33N and a 2048 x 2048 web-mercator target of 14 m inside it.
    const w = 2400;
    const src: SourceRaster = { grid: { epsg: 32633, transform: [480000, 10, 0, 5350000, 0, -10], width: w, height: w }, data: new Float32Array(w * w) };
    for (let i = 0; i < src.data.length; i++) src.data[i] = (i % w) * 0.5 + Math.floor(i / w);
    const [clon, clat] = transformer(32633, 4326)(492000, 5338000);
    const [cx, cy] = transformer(4326, 3857)(clon, clat);
    const dst: Grid = { epsg: 3857, transform: [cx - 1024 * 14, 14, 0, cy + 1024 * 14, 0, -14], width: 2048, height: 2048 };
    const same: Grid = { epsg: 32633, transform: [481000, 9, 0, 5349000, 0, -9], width: 2048, height: 2048 };
    const mp = (dst.width * dst.height) / 1e6;
    const time = (f: () => unknown) => {
      f();
      const runs: number[] = [];
      for (let i = 0; i < 3; i++) {
        const t = performance.now();
        f();
        runs.push(performance.now() - t);
      }
      return Math.min(...runs);
    };
    const lines: string[] = [];
    for (const [name, g] of [
      ['32633 -> 3857', dst],
      ['32633 -> 32633 (affine)', same],
    ] as const) {
      for (const method of ['nearest', 'bilinear'] as const) {
        const ms = time(() => warp(src, g, method));
        let valid = 0;
        for (const v of warp(src, g, method)) if (!Number.isNaN(v)) valid++;
        lines.push(`${name} ${method}: ${ms.toFixed(1)} ms, ${(mp / (ms / 1000)).toFixed(1)} MP/s (${((100 * valid) / (mp * 1e6)).toFixed(1)}% valid)`);
      }
    }
    const stats = {} as WarpStats;
    warp(src, dst, 'nearest', { stats });
    lines.push(`32633 -> 3857: ${stats.exactPoints} points through proj4 (1 per ${((mp * 1e6) / stats.exactPoints).toFixed(0)} pixels), blocks by step ${JSON.stringify(stats.steps)}`);
    console.log(`warp throughput, 2048 x 2048 target:\n  ${lines.join('\n  ')}`);
    expect(lines.length).toBe(5);
  });
});
