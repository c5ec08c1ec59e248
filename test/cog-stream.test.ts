// The streaming COG writer: the same bytes as encodeCog for the same pixels (whatever the order of
// the windows, and on a job's deflate threads as on libuv's pool), bounded memory on a raster 16
// times larger than what it may hold, GDAL's reading and validation of a large streamed file, and
// its refusals and clean-up. Also the deflate threads' own duties: reading and inflating blocks
// (before tiles), and giving their answers' memory back.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { encodeCog, type CogInput } from '../src/output/cog-writer.js';
import { CogStreamWriter, type CogStreamOptions, type Window } from '../src/output/cog-stream.js';
import { DeflateThreads, releaseAnswer } from '../src/output/deflate-threads.js';
import { fileIdentity } from '../src/core/file-identity.js';
import { deflateSync, inflateSync } from 'node:zlib';
import { sampleTypeOf, type TypedArray } from '../src/core/grid.js';
import { COG_VALIDATOR, describeWithTool, hasCogValidator, hasGdal } from './system-tools.js';
import { rng } from './rng.js';

/** A smooth field with noise and nodata (holes of blocks and scattered pixels, so some overview blocks are all nodata). */
function value(x: number, y: number, seed: number, nodata: number): number {
  let h = Math.imul(x + 0x9e37 * seed, 0x85ebca6b) ^ Math.imul(y, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 13), 0x27d4eb2d) >>> 0;
  if (((x >> 5) + 3 * (y >> 5) + seed) % 23 === 0 || h % 97 === 0) return nodata;
  return 1000 * Math.sin(x / 150 + seed) * Math.cos(y / 210) + (h % 1024) / 64;
}

function makeBands(C: new (n: number) => TypedArray, w: number, h: number, count: number, nodata: number): TypedArray[] {
  return Array.from({ length: count }, (_, b) => {
    const a = new C(w * h);
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) a[y * w + x] = value(x, y, b + 1, nodata);
    return a;
  });
}

/** The window's pixels cut out of whole bands. */
function cut(bands: TypedArray[], width: number, win: Window): TypedArray[] {
  return bands.map((b) => {
    const out = new (b.constructor as new (n: number) => TypedArray)(win.width * win.height);
    for (let r = 0; r < win.height; r++) {
      const from = (win.row + r) * width + win.col;
      out.set(b.subarray(from, from + win.width), r * win.width);
    }
    return out;
  });
}

/** The windows of the grid, row-major; `step` cells per window. */
function windows(width: number, height: number, size: number): Window[] {
  const out: Window[] = [];
  for (let row = 0; row < height; row += size) {
    for (let col = 0; col < width; col += size) out.push({ col, row, width: Math.min(size, width - col), height: Math.min(size, height - row) });
  }
  return out;
}

function shuffled<T>(a: T[], seed: number): T[] {
  const r = rng(seed);
  const out = [...a];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'xeo-cog-stream-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const UTM = { epsg: 32633, transform: [500000, 10, 0, 5000000, 0, -10] as CogInput['transform'] };

function streamOptions(input: CogInput): CogStreamOptions {
  const { bands, ...meta } = input;
  return { ...meta, bandCount: bands.length, sampleType: sampleTypeOf(bands[0]) };
}

/** Streams `input` through CogStreamWriter in windows of `cells` grid cells, in the given order. */
async function stream(file: string, input: CogInput, order: 'rows' | 'shuffled' | 'all at once', cells = 1): Promise<Buffer> {
  const w = await CogStreamWriter.create(file, streamOptions(input));
  let wins = windows(input.width, input.height, cells * CogStreamWriter.chunkAlign(input));
  if (order === 'shuffled') wins = shuffled(wins, input.width * 31 + input.height);
  if (order === 'all at once') await Promise.all(shuffled(wins, 7).map((win) => w.writeWindow(win, cut(input.bands, input.width, win))));
  else for (const win of wins) await w.writeWindow(win, cut(input.bands, input.width, win));
  const { bytes } = await w.finish();
  const buf = readFileSync(file);
  expect(buf.length).toBe(bytes);
  return buf;
}

interface Case {
  name: string;
  input: CogInput;
  order: 'rows' | 'shuffled' | 'all at once';
  cells?: number;
}

const cases: Case[] = [
  { name: 'float32 2500x1900, NaN nodata', input: { ...UTM, width: 2500, height: 1900, bands: makeBands(Float32Array, 2500, 1900, 1, NaN), nodata: NaN }, order: 'shuffled' },
  {
    name: 'float32 3 bands 3000x1100, nodata -9999, descriptions',
    input: { ...UTM, width: 3000, height: 1100, bands: makeBands(Float32Array, 3000, 1100, 3, -9999), nodata: -9999, descriptions: ['B04 & <red>', 'B03', 'B02'] },
    order: 'shuffled',
  },
  { name: 'float32 3 bands 2300x2100, nearest, NaN without nodata', input: { ...UTM, width: 2300, height: 2100, bands: makeBands(Float32Array, 2300, 2100, 3, NaN), resampling: 'nearest' }, order: 'rows' },
  // Levels 3 to 5 are assembled from pieces of several windows.
  { name: 'float32 5000x4100, NaN nodata, five levels above the windows', input: { ...UTM, width: 5000, height: 4100, bands: makeBands(Float32Array, 5000, 4100, 1, NaN), nodata: NaN }, order: 'shuffled' },
  { name: 'float32 4100x3000, windows of 2x2 cells', input: { ...UTM, width: 4100, height: 3000, bands: makeBands(Float32Array, 4100, 3000, 1, NaN), nodata: NaN }, order: 'shuffled', cells: 2 },
  { name: 'float32 1000x700, one window', input: { ...UTM, width: 1000, height: 700, bands: makeBands(Float32Array, 1000, 700, 1, NaN), nodata: NaN }, order: 'rows' },
  { name: 'float32 3x5', input: { ...UTM, width: 3, height: 5, bands: makeBands(Float32Array, 3, 5, 1, NaN), nodata: NaN }, order: 'rows' },
  { name: 'float32 2100x1500, 128 tiles, concurrent calls', input: { ...UTM, width: 2100, height: 1500, bands: makeBands(Float32Array, 2100, 1500, 2, NaN), nodata: NaN, tileSize: 128 }, order: 'all at once' },
  { name: 'float32 1100x1030, 16 tiles (8 levels)', input: { ...UTM, width: 1100, height: 1030, bands: makeBands(Float32Array, 1100, 1030, 1, NaN), nodata: NaN, tileSize: 16 }, order: 'shuffled' },
  {
    name: 'float32 2600x2300, 512 tiles, deflate level 1',
    input: { ...UTM, width: 2600, height: 2300, bands: makeBands(Float32Array, 2600, 2300, 1, NaN), nodata: NaN, tileSize: 512, level: 1 },
    order: 'shuffled',
  },
  { name: 'uint16 3 bands 2200x1300, nodata 0, 64 tiles', input: { ...UTM, width: 2200, height: 1300, bands: makeBands(Uint16Array, 2200, 1300, 3, 0), nodata: 0, tileSize: 64 }, order: 'shuffled' },
  { name: 'int16 2100x1025, nodata -9999', input: { ...UTM, width: 2100, height: 1025, bands: makeBands(Int16Array, 2100, 1025, 1, -9999), nodata: -9999 }, order: 'shuffled' },
  { name: 'float64 1500x1200, NaN nodata', input: { ...UTM, width: 1500, height: 1200, bands: makeBands(Float64Array, 1500, 1200, 1, NaN), nodata: NaN }, order: 'shuffled' },
];

/** The digest of encodeCog's file for a case, made once (each case's file is wanted twice below). */
const references = new Map<Case, string>();
const digest = (b: Buffer) => createHash('sha256').update(b).digest('hex');
async function referenceOf(c: Case): Promise<string> {
  let d = references.get(c);
  if (d === undefined) references.set(c, (d = digest(await encodeCog(c.input))));
  return d;
}

describe('CogStreamWriter: the same bytes as encodeCog', () => {
  it.each(cases)(
    '$name ($order)',
    async (c) => {
      const got = await stream(path.join(dir, 'same.tif'), c.input, c.order, c.cells);
      const want = await encodeCog(c.input);
      expect(got.length).toBe(want.length);
      expect(got.equals(want)).toBe(true);
      references.set(c, digest(want));
    },
    60_000,
  );
});

describe('CogStreamWriter: windows encoded elsewhere (encodeWindow, writeEncoded)', () => {
  // As on workers of several machines: each window deflated apart, the writer only places them.
  it.each(cases.filter((c) => c.order === 'shuffled'))(
    '$name: the same bytes as encodeCog',
    async (c) => {
      const opts = streamOptions(c.input);
      const file = path.join(dir, 'encoded.tif');
      const w = await CogStreamWriter.create(file, opts);
      const wins = shuffled(windows(c.input.width, c.input.height, (c.cells ?? 1) * CogStreamWriter.chunkAlign(c.input)), 11);
      const encoded = await Promise.all(wins.map((win) => CogStreamWriter.encodeWindow(opts, win, cut(c.input.bands, c.input.width, win))));
      for (const e of encoded) await w.writeEncoded(e);
      await w.finish();
      expect(digest(readFileSync(file))).toBe(await referenceOf(c));
    },
    60_000,
  );
});

describe('CogStreamWriter: windows are copied', () => {
  it('one reused buffer for every window gives the same file', async () => {
    const input: CogInput = { ...UTM, width: 2500, height: 2200, bands: makeBands(Float32Array, 2500, 2200, 1, NaN), nodata: NaN };
    const file = path.join(dir, 'reuse.tif');
    const w = await CogStreamWriter.create(file, streamOptions(input));
    const A = CogStreamWriter.chunkAlign(input);
    const buf = new Float32Array(A * A);
    for (const win of shuffled(windows(input.width, input.height, A), 3)) {
      const view = buf.subarray(0, win.width * win.height);
      view.set(cut(input.bands, input.width, win)[0]);
      await w.writeWindow(win, [view]);
      buf.fill(-1); // the caller's next chunk overwrites the buffer
    }
    await w.finish();
    expect(readFileSync(file).equals(await encodeCog(input))).toBe(true);
  }, 60_000);
});

// ---------------------------------------------------------------------------------------------
// Memory: a 8192 x 8192 float32 raster (256 MiB) in 1024 x 1024 windows made on the fly

const BIG = 8192;
const FLOAT = 4;

/** Window pixels straight from value(), so the test never holds the raster either. */
function generate(win: Window): Float32Array {
  const a = new Float32Array(win.width * win.height);
  for (let y = 0; y < win.height; y++) for (let x = 0; x < win.width; x++) a[y * win.width + x] = value(win.col + x, win.row + y, 1, NaN);
  return a;
}

interface Streamed {
  file: string;
  bytes: number;
  /** heldBytes() right after create: the tile encoder's buffers, the tile index, the window flags. */
  fixed: number;
  /** Peak before finish(), and over the whole run (finish adds its copy buffer and the head). */
  writingPeak: number;
  peak: number;
  /** Time spent in writeWindow and finish, without making the windows. */
  ms: number;
}

async function streamGenerated(name: string, width: number, height: number, order: 'rows' | 'shuffled'): Promise<Streamed> {
  const file = path.join(dir, name);
  const opts: CogStreamOptions = { ...UTM, width, height, bandCount: 1, sampleType: 'float32', nodata: NaN };
  let ms = 0;
  let t = performance.now();
  const w = await CogStreamWriter.create(file, opts);
  ms += performance.now() - t;
  const fixed = w.heldBytes();
  let wins = windows(width, height, CogStreamWriter.chunkAlign(opts));
  if (order === 'shuffled') wins = shuffled(wins, 11);
  for (const win of wins) {
    const band = generate(win);
    t = performance.now();
    await w.writeWindow(win, [band]);
    ms += performance.now() - t;
  }
  const writingPeak = w.peakHeldBytes();
  t = performance.now();
  const { bytes } = await w.finish();
  ms += performance.now() - t;
  return { file, bytes, fixed, writingPeak, peak: w.peakHeldBytes(), ms };
}

/**
 * What the writer may hold while windows come (tileSize 256, windows of A = 1024, so levels 0..2
 * are cut from the windows and levels 3.. are assembled): its fixed buffers, deflated tiles in
 * flight (no more than its tile buffers), one window's halvings (A^2/4 + A^2/16 + ... < A^2/3
 * pixels), and the partial tiles of levels 3 and up: when windows come row by row one row of tiles
 * per level plus one tile being passed on, in any order every tile of those levels.
 */
function writingBound(fixed: number, width: number, height: number, order: 'rows' | 'shuffled'): number {
  const ts = 256;
  const A = 1024;
  const tile = ts * ts * FLOAT;
  let partial = 0;
  for (let [w, h, li] = [width, height, 0]; w > ts || h > ts; li++) {
    [w, h] = [Math.ceil(w / 2), Math.ceil(h / 2)];
    if (li + 1 <= 2) continue;
    const across = Math.ceil(w / ts);
    partial += order === 'rows' ? (across + 1) * tile : across * Math.ceil(h / ts) * tile;
  }
  const inFlight = fixed; // the deflated tiles in flight are at most as many as the tile buffers (< fixed)
  return fixed + inFlight + ((A * A) / 3) * FLOAT + partial;
}

describe('CogStreamWriter: bounded memory', () => {
  let rows: Streamed;
  beforeAll(async () => {
    rows = await streamGenerated('big.tif', BIG, BIG, 'rows');
    const raw = BIG * BIG * FLOAT;
    console.log(
      `CogStreamWriter ${BIG}x${BIG} float32 (${raw / 2 ** 20} MiB) in 1024x1024 windows, row by row: ${(rows.ms / 1000).toFixed(2)} s in the writer ` +
        `(${(raw / 1e6 / (rows.ms / 1000)).toFixed(1)} MB/s), output ${(rows.bytes / 1e6).toFixed(1)} MB, ` +
        `held: fixed ${rows.fixed} B, peak while writing ${rows.writingPeak} B, peak with finish ${rows.peak} B (1/${Math.round(raw / rows.peak)} of the raster)`,
    );
  }, 180_000);

  it('8192x8192 row by row: the peak is a small fraction of the raster and has no term in its height', () => {
    const raw = BIG * BIG * FLOAT;
    expect(rows.peak).toBeLessThan(raw / 32);
    expect(rows.writingPeak).toBeLessThan(writingBound(rows.fixed, BIG, BIG, 'rows'));
    // The bound for rows grows with the width and the number of levels only; the raster's height
    // enters through the tile index alone (12 bytes a tile), part of `fixed`.
    expect(rows.fixed).toBeLessThan(3 * 2 ** 20);
  });

  it('in any order, no more than the levels above the windows', async () => {
    const s = await streamGenerated('big-shuffled.tif', 4096, 4096, 'shuffled');
    expect(s.writingPeak).toBeLessThan(writingBound(s.fixed, 4096, 4096, 'shuffled'));
    expect(s.peak).toBeLessThan((4096 * 4096 * FLOAT) / 8);
    console.log(`CogStreamWriter 4096x4096 float32 in shuffled windows: peak while writing ${s.writingPeak} B, with finish ${s.peak} B`);
  }, 120_000);

  describeWithTool(hasGdal, 'GDAL', 'GDAL reads the 8192x8192 file', () => {
    it('gdalinfo: LAYOUT=COG, the size, the overviews', () => {
      const info = JSON.parse(gdal('gdalinfo', ['-json', rows.file]));
      expect(info.size).toEqual([BIG, BIG]);
      expect(info.metadata.IMAGE_STRUCTURE).toMatchObject({ LAYOUT: 'COG', COMPRESSION: 'DEFLATE' });
      expect(info.bands[0].noDataValue).toBe('NaN');
      expect(info.bands[0].overviews.map((o: { size: number[] }) => o.size)).toEqual([
        [4096, 4096],
        [2048, 2048],
        [1024, 1024],
        [512, 512],
        [256, 256],
      ]);
    });

    it('gdal_translate reads the pixels written, and the first overview is their 2x2 mean', () => {
      const full = gdalFloat32(rows.file, []);
      expect(full.length).toBe(BIG * BIG);
      expectSameAs(full, BIG, BIG, (x, y) => value(x, y, 1, NaN), 'full resolution');
      const ovr = gdalFloat32(rows.file, ['-ovr', '0']);
      expectSameAs(
        ovr,
        BIG / 2,
        BIG / 2,
        (x, y) => {
          const vals = [value(2 * x, 2 * y, 1, NaN), value(2 * x + 1, 2 * y, 1, NaN), value(2 * x, 2 * y + 1, 1, NaN), value(2 * x + 1, 2 * y + 1, 1, NaN)].map(Math.fround).filter((v) => !Number.isNaN(v));
          return vals.length === 0 ? NaN : vals.reduce((s, v) => s + v, 0) / vals.length;
        },
        'overview 0',
      );
    }, 60_000);
  });

  describeWithTool(hasCogValidator, 'GDAL COG validator (python3-gdal)', 'GDAL validator', () => {
    it('accepts the 8192x8192 file', () => {
      const [cmd, args] = COG_VALIDATOR;
      const r = spawnSync(cmd, [...args, '--full-check=yes', rows.file], { encoding: 'utf8' });
      const out = r.stdout + r.stderr;
      expect(r.status, out).toBe(0);
      expect(out).toContain('is a valid cloud optimized GeoTIFF');
      expect(out).not.toMatch(/warning|error/i);
    }, 60_000);
  });
});

/** Runs a GDAL tool; it must succeed without a word on stderr. */
function gdal(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  expect(r.stderr, `${cmd} ${args.join(' ')}`).toBe('');
  expect(r.status, `${cmd} ${args.join(' ')}`).toBe(0);
  return r.stdout;
}

function gdalFloat32(file: string, extra: string[]): Float32Array {
  const out = path.join(dir, `px-${extra.join('')}.bin`);
  gdal('gdal_translate', ['-q', '-of', 'ENVI', ...extra, file, out]);
  const raw = readFileSync(out);
  rmSync(out);
  return new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4);
}

/** Every pixel equals fround(want(x, y)) (NaN equals NaN); reports the first difference. */
function expectSameAs(got: Float32Array, width: number, height: number, want: (x: number, y: number) => number, what: string): void {
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [g, v] = [got[y * width + x], Math.fround(want(x, y))];
      if (g !== v && !(Number.isNaN(g) && Number.isNaN(v))) expect.fail(`${what}: (${x}, ${y}) is ${g}, want ${v}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Refusals and temporary files

describe('CogStreamWriter: refusals, clean-up, atomic output', () => {
  const small = (over: Partial<CogStreamOptions> = {}): CogStreamOptions => ({ ...UTM, width: 2100, height: 1500, bandCount: 2, sampleType: 'float32', nodata: NaN, ...over });
  const zeros = (win: Window, n = 2) => Array.from({ length: n }, () => new Float32Array(win.width * win.height));
  /** A fresh target directory and a separate directory for the spilled tiles. */
  const dirs = () => {
    const sub = mkdtempSync(path.join(dir, 'case-'));
    const tmp = path.join(sub, 'spill');
    mkdirSync(tmp);
    return { file: path.join(sub, 'out.tif'), sub, tmp };
  };
  const listing = (d: { sub: string; tmp: string }) => ({ target: readdirSync(d.sub).sort(), spill: readdirSync(d.tmp) });

  it('refuses bad options', async () => {
    const { file } = dirs();
    await expect(CogStreamWriter.create(file, small({ tileSize: 100 }))).rejects.toThrow(/CogStreamWriter: tileSize must be a power of two/);
    await expect(CogStreamWriter.create(file, small({ bandCount: 0 }))).rejects.toThrow(/1\.\.65535 bands/);
    await expect(CogStreamWriter.create(file, small({ sampleType: 'complex64' as never }))).rejects.toThrow(/unknown sample type/);
    await expect(CogStreamWriter.create(file, small({ transform: [0, 10, 0, 0, 0, 10] }))).rejects.toThrow(/north-up/);
    await expect(CogStreamWriter.create(file, small({ sampleType: 'uint16', nodata: -1 }))).rejects.toThrow(/not a uint16 value/);
    await expect(CogStreamWriter.create(file, small({ maxBytes: 2 ** 33 }))).rejects.toThrow(/maxBytes/);
    expect(existsSync(file)).toBe(false);
  });

  it('spills into tmpDir, leaves only the target behind, and replaces an existing file atomically', async () => {
    const d = dirs();
    const input: CogInput = { ...UTM, width: 2100, height: 1500, bands: makeBands(Float32Array, 2100, 1500, 2, NaN), nodata: NaN };
    const w = await CogStreamWriter.create(d.file, { ...streamOptions(input), tmpDir: d.tmp });
    const wins = windows(2100, 1500, 1024);
    await w.writeWindow(wins[0], cut(input.bands, 2100, wins[0]));
    expect(listing(d)).toMatchObject({ target: ['spill'], spill: [expect.stringMatching(/^\.out\.tif\.\d+\.[0-9a-f]+\.tiles\.tmp$/)] });
    for (const win of wins.slice(1)) await w.writeWindow(win, cut(input.bands, 2100, win));
    await w.finish();
    expect(listing(d)).toEqual({ target: ['out.tif', 'spill'], spill: [] });
    const first = readFileSync(d.file);
    expect(first.equals(await encodeCog(input))).toBe(true);
    // A second writer to the same target: until finish() the old file stays whole.
    const w2 = await CogStreamWriter.create(d.file, small({ tmpDir: d.tmp }));
    for (const win of wins) await w2.writeWindow(win, zeros(win));
    expect(readFileSync(d.file).equals(first)).toBe(true);
    await w2.finish();
    expect(readFileSync(d.file).equals(first)).toBe(false);
    expect(listing(d)).toEqual({ target: ['out.tif', 'spill'], spill: [] });
    await expect(w2.writeWindow(wins[0], zeros(wins[0]))).rejects.toThrow(/already finished/);
  }, 60_000);

  it('refuses bad windows, and any error ends the writer and removes its temporary files', async () => {
    const bad: [Window, (win: Window) => TypedArray[], RegExp][] = [
      [{ col: 512, row: 0, width: 1024, height: 1024 }, zeros, /does not start on the 1024-pixel grid/],
      [{ col: 0, row: 0, width: 1000, height: 1024 }, zeros, /not a whole number of 1024-pixel cells/],
      [{ col: 1024, row: 1024, width: 1076, height: 477 }, zeros, /outside the 2100x1500 raster/],
      [{ col: 0, row: 0, width: 1024, height: 1024 }, (win) => zeros(win, 1), /has 1 bands, expected 2/],
      [{ col: 0, row: 0, width: 1024, height: 1024 }, (win) => [new Float32Array(win.width * win.height), new Float64Array(win.width * win.height)], /band 1 is float64, expected float32/],
      [{ col: 0, row: 0, width: 1024, height: 1024 }, () => [new Float32Array(10), new Float32Array(10)], /band 0 has 10 values/],
      [{ col: 0, row: 0, width: 1.5, height: 1024 }, zeros, /bad window/],
    ];
    for (const [win, bands, message] of bad) {
      const d = dirs();
      const w = await CogStreamWriter.create(d.file, small({ tmpDir: d.tmp }));
      await w.writeWindow({ col: 1024, row: 1024, width: 1076, height: 476 }, zeros({ col: 0, row: 0, width: 1076, height: 476 }));
      await expect(w.writeWindow(win, bands(win))).rejects.toThrow(message);
      expect(listing(d)).toEqual({ target: ['spill'], spill: [] });
      await expect(w.writeWindow({ col: 0, row: 0, width: 1024, height: 1024 }, zeros({ col: 0, row: 0, width: 1024, height: 1024 }))).rejects.toThrow(/failed earlier/);
      await expect(w.finish()).rejects.toThrow(/failed earlier/);
      await w.abort(); // harmless now
    }
  }, 60_000);

  it('refuses a window written twice, and finish() with a window missing', async () => {
    const d = dirs();
    const w = await CogStreamWriter.create(d.file, small({ tmpDir: d.tmp }));
    const win = { col: 1024, row: 0, width: 1076, height: 1024 };
    await w.writeWindow(win, zeros(win));
    await expect(w.writeWindow(win, zeros(win))).rejects.toThrow(/overlaps the window at \(1024, 0\), written before/);
    expect(listing(d)).toEqual({ target: ['spill'], spill: [] });

    const d2 = dirs();
    const w2 = await CogStreamWriter.create(d2.file, small({ tmpDir: d2.tmp }));
    for (const x of windows(2100, 1500, 1024).filter((x) => !(x.col === 0 && x.row === 1024))) await w2.writeWindow(x, zeros(x));
    await expect(w2.finish()).rejects.toThrow(/1 window\(s\) of the 1024-pixel grid were never written, the first at \(0, 1024\)/);
    expect(listing(d2)).toEqual({ target: ['spill'], spill: [] });
  }, 60_000);

  it('abort() removes the temporary files; later calls are refused', async () => {
    const d = dirs();
    const w = await CogStreamWriter.create(d.file, small({ tmpDir: d.tmp }));
    const win = { col: 0, row: 0, width: 1024, height: 1024 };
    const pending = w.writeWindow(win, zeros(win)).then(
      () => 'written',
      (e: Error) => e.message,
    );
    await w.abort(); // waits for a window under way; one not started yet is refused
    expect(await pending).toMatch(/^(written|CogStreamWriter: already aborted)$/);
    expect(listing(d)).toEqual({ target: ['spill'], spill: [] });
    await expect(w.writeWindow(win, zeros(win))).rejects.toThrow(/already aborted/);
    await expect(w.finish()).rejects.toThrow(/already aborted/);
  });

  it('refuses up front a COG that could exceed 4 GiB uncompressed, without creating a file', async () => {
    const d = dirs();
    // 40000 x 30000 float32: 4.8 GB of tiles before compression.
    await expect(CogStreamWriter.create(d.file, small({ width: 40000, height: 30000, bandCount: 1, tmpDir: d.tmp }))).rejects.toThrow(
      /CogStreamWriter: uncompressed, the COG could take \d+ bytes, beyond classic TIFF's 4 GiB limit/,
    );
    expect(listing(d)).toEqual({ target: ['spill'], spill: [] });
    // Just under the limit (overviews included: 27000^2 * 4 bytes * 4/3) is accepted, and nothing
    // large is allocated up front.
    const w = await CogStreamWriter.create(d.file, small({ width: 27000, height: 27000, bandCount: 1, tmpDir: d.tmp }));
    expect(w.heldBytes()).toBeLessThan(4 * 2 ** 20);
    await w.abort();
    expect(listing(d)).toEqual({ target: ['spill'], spill: [] });
  });

  it('stops as soon as the compressed tiles pass the limit (maxBytes)', async () => {
    const d = dirs();
    const opts = small({ width: 2048, height: 2048, bandCount: 1, level: 0, tmpDir: d.tmp });
    // The uncompressed bound, from the refusal just below it.
    const refusal = await CogStreamWriter.create(d.file, { ...opts, maxBytes: 1000 }).catch((e: Error) => e.message);
    const raw = Number(/could take (\d+) bytes/.exec(String(refusal))?.[1]);
    expect(raw).toBeGreaterThan(2048 * 2048 * 4);
    // At deflate level 0 random floats are stored: each tile grows by its block headers, so the
    // tiles end up just over the uncompressed bound.
    const w = await CogStreamWriter.create(d.file, { ...opts, maxBytes: raw });
    const r = rng(5);
    const run = async () => {
      for (const win of windows(2048, 2048, 1024)) await w.writeWindow(win, [Float32Array.from({ length: win.width * win.height }, () => r() * 1e6)]);
      await w.finish();
    };
    await expect(run()).rejects.toThrow(/the tiles written so far take \d+ bytes, over the limit of \d+ bytes/);
    expect(listing(d)).toEqual({ target: ['spill'], spill: [] });
  }, 60_000);
});

describe("CogStreamWriter on deflate threads (a job thread's DeflateThreads)", () => {
  const threads = new DeflateThreads(2, 300);
  afterAll(() => threads.stop());

  it.each(cases.filter((c) => ['float32 2500x1900, NaN nodata', 'uint16 3 bands 2200x1300, nodata 0, 64 tiles', 'float32 2600x2300, 512 tiles, deflate level 1'].includes(c.name)))(
    '$name: the same bytes as encodeCog, written and encoded elsewhere',
    async (c) => {
      const opts = { ...streamOptions(c.input), deflater: threads };
      const wins = shuffled(windows(c.input.width, c.input.height, CogStreamWriter.chunkAlign(c.input)), 5);
      const file = path.join(dir, 'threads.tif');
      const w = await CogStreamWriter.create(file, opts);
      for (const win of wins) await w.writeWindow(win, cut(c.input.bands, c.input.width, win));
      await w.finish();
      expect(digest(readFileSync(file))).toBe(await referenceOf(c));
      const elsewhere = await CogStreamWriter.create(file, streamOptions(c.input));
      for (const e of await Promise.all(wins.map((win) => CogStreamWriter.encodeWindow(opts, win, cut(c.input.bands, c.input.width, win))))) await elsewhere.writeEncoded(e);
      await elsewhere.finish();
      expect(digest(readFileSync(file))).toBe(await referenceOf(c));
    },
    60_000,
  );

  it('the threads end when idle and start again; a tile not on shared memory is refused; a thread that ends fails its tiles', async () => {
    // idle for 300 ms, they end (waited for, within 10 s, rather than timed)
    for (let i = 0; i < 100 && threads.running > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(threads.running).toBe(0);
    const tile = new Uint8Array(new SharedArrayBuffer(4096)).fill(7);
    expect(inflateSync(await threads.deflate(tile, 6, 8)).equals(Buffer.from(tile))).toBe(true);
    expect(threads.running).toBe(1);
    await expect(threads.deflate(new Uint8Array(4096), 6, 8)).rejects.toThrow(/SharedArrayBuffer/);
    const big = new Uint8Array(new SharedArrayBuffer(64 << 20));
    const lost = threads.deflate(big, 9, 9);
    threads.stop();
    await expect(lost).rejects.toThrow(/deflate thread ended/);
    expect(threads.running).toBe(0);
  });

  it('reads and inflates blocks of a file, predictor 2 undone when asked; a block past the end fails', async () => {
    // Two deflated blocks of 300 x 7 uint16 values, one with predictor 2 applied, behind a header.
    const width = 300;
    const values = new Uint16Array(width * 7);
    for (let i = 0; i < values.length; i++) values[i] = (i * 7919 + (i % width) * 13) & 0xffff;
    const differenced = new Uint16Array(values);
    for (let o = 0; o < values.length; o += width) for (let i = width - 1; i > 0; i--) differenced[o + i] = (differenced[o + i] - differenced[o + i - 1]) & 0xffff;
    const plain = deflateSync(Buffer.from(values.buffer));
    const predicted = deflateSync(Buffer.from(differenced.buffer));
    const file = path.join(dir, 'blocks.bin');
    writeFileSync(file, Buffer.concat([Buffer.alloc(100, 9), plain, predicted]));
    const size = values.byteLength;
    const id = fileIdentity(statSync(file));
    const first = await threads.inflate(file, id, 100, plain.length, size, 0);
    expect(Array.from(new Uint16Array(first, 0, values.length))).toEqual(Array.from(values));
    const second = await threads.inflate(file, id, 100 + plain.length, predicted.length, size, width);
    expect(Array.from(new Uint16Array(second, 0, values.length))).toEqual(Array.from(values));
    await expect(threads.inflate(file, id, 100 + plain.length, predicted.length + 10, size, width)).rejects.toThrow(/ends inside a block/);
    await expect(threads.inflate(file, id, 0, 50, size, 0)).rejects.toThrow(/inflate failed/);
    // Another file put at the path (a new inode) is not read with the old one's offsets.
    const moved = `${file}.new`;
    writeFileSync(moved, Buffer.concat([Buffer.alloc(100, 9), plain, predicted]));
    renameSync(moved, file);
    await expect(threads.inflate(file, id, 100, plain.length, size, 0)).rejects.toThrow(/no longer the file that was opened/);
  });

  it('blocks to read go before tiles waiting to be deflated', async () => {
    const tiles = Array.from({ length: 16 }, () => {
      const t = new Uint8Array(new SharedArrayBuffer(4 << 20));
      for (let i = 0; i < t.length; i += 97) t[i] = i & 0xff;
      return t;
    });
    const file = path.join(dir, 'one-block.bin');
    const block = new Uint8Array(64 * 1024).fill(3);
    writeFileSync(file, deflateSync(block));
    const done: string[] = [];
    const deflating = tiles.map((t, i) => threads.deflate(t, 9, 9).then(() => void done.push(`tile ${i}`)));
    const read = threads.inflate(file, fileIdentity(statSync(file)), 0, deflateSync(block).length, block.length, 0).then(() => void done.push('block'));
    await Promise.all([...deflating, read]);
    // Each thread has 8 tiles waiting when the block comes: its thread takes it after the tile under way.
    expect(done.indexOf('block'), done.join(', ')).toBeLessThanOrEqual(4);
  });

  it("an answer's memory is given back by its last user, once; other buffers are left alone", async () => {
    const tile = new Uint8Array(new SharedArrayBuffer(256 * 1024));
    for (let i = 0; i < tile.length; i++) tile[i] = (i * 31) & 0xff;
    const answer = await threads.deflate(tile, 4, 9);
    expect(inflateSync(answer).equals(Buffer.from(tile))).toBe(true);
    const bytes = answer.buffer.byteLength;
    expect(bytes).toBeGreaterThan(0);
    releaseAnswer(answer);
    expect(answer.buffer.byteLength).toBe(0); // detached: the memory went back
    releaseAnswer(answer); // a second time does nothing
    const mine = Buffer.alloc(256 * 1024, 1);
    releaseAnswer(mine);
    releaseAnswer(new Uint8Array(new SharedArrayBuffer(1024)));
    expect(mine.buffer.byteLength).toBeGreaterThanOrEqual(256 * 1024);
    expect(mine[0]).toBe(1);
  });
});
