// Our COG writer, checked against independent readers: GDAL (gdalinfo, gdal_translate, the COG
// validator), geotiff.js, and a minimal IFD parser here. Overview values are recomputed in the test.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fromArrayBuffer } from 'geotiff';
import { encodeCog, writeCog, planLayout, type CogInput } from '../src/output/cog-writer.js';
import type { TypedArray } from '../src/core/grid.js';
import { COG_VALIDATOR, describeWithTool, hasCogValidator, hasGdal } from './system-tools.js';
import { rng } from './rng.js';

// ---------------------------------------------------------------------------------------------
// Test data

type Ctor = new (n: number) => TypedArray;

/**
 * A smooth field plus noise, scaled into [lo, hi], with a nodata hole (a disc, so some overview
 * blocks are entirely nodata and some partly) and scattered nodata pixels.
 */
function field(C: Ctor, w: number, h: number, seed: number, lo: number, hi: number, nodata?: number): TypedArray {
  const r = rng(seed);
  const a = new C(w * h);
  const cx = w * 0.3;
  const cy = h * 0.6;
  const rad = Math.min(w, h) * 0.15;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const s = 0.5 + 0.3 * Math.sin(x / 37 + seed) * Math.cos(y / 23) + 0.2 * r();
      let v = lo + (hi - lo) * Math.min(1, Math.max(0, s));
      if (nodata !== undefined && ((x - cx) ** 2 + (y - cy) ** 2 < rad * rad || r() < 0.02)) v = nodata;
      a[y * w + x] = v;
    }
  }
  return a;
}

interface Case {
  name: string;
  input: CogInput;
  gdalType: string;
  /** Overview sizes [w, h] GDAL should report. */
  overviews: [number, number][];
}

const UTM = 32633;
const utm = (w: number, h: number) => ({ width: w, height: h, epsg: UTM, transform: [500000, 10, 0, 5000000, 0, -10] as CogInput['transform'] });

const cases: Case[] = [
  {
    name: 'uint8 1000x700, nodata 0',
    input: { ...utm(1000, 700), bands: [field(Uint8Array, 1000, 700, 1, 1, 255, 0)], nodata: 0 },
    gdalType: 'Byte',
    overviews: [
      [500, 350],
      [250, 175],
    ],
  },
  {
    name: 'uint16 1000x700, 3 bands with descriptions, nodata 65535',
    input: {
      ...utm(1000, 700),
      bands: [1, 2, 3].map((s) => field(Uint16Array, 1000, 700, s, 0, 12000, 65535)),
      nodata: 65535,
      descriptions: ['B04 & <red>', 'B03 "green"', 'B02'],
    },
    gdalType: 'UInt16',
    overviews: [
      [500, 350],
      [250, 175],
    ],
  },
  {
    name: 'int16 3x5, nodata -9999, EPSG:3035',
    input: { width: 3, height: 5, epsg: 3035, transform: [4321000.5, 20, 0, 3210000.25, 0, -20], bands: [field(Int16Array, 3, 5, 4, -3000, 3000, -9999)], nodata: -9999 },
    gdalType: 'Int16',
    overviews: [],
  },
  {
    name: 'int16 517x300, negative values, nodata -9999, 2 bands',
    input: { ...utm(517, 300), bands: [field(Int16Array, 517, 300, 5, -3000, 3000, -9999), field(Int16Array, 517, 300, 6, -32768, 32767, -9999)], nodata: -9999 },
    gdalType: 'Int16',
    overviews: [
      [259, 150],
      [130, 75],
    ],
  },
  {
    name: 'float32 1000x700, nodata -9999.5, EPSG:4326',
    input: { width: 1000, height: 700, epsg: 4326, transform: [10.5, 0.0001, 0, 47.25, 0, -0.0001], bands: [field(Float32Array, 1000, 700, 7, -1, 1, -9999.5)], nodata: -9999.5 },
    gdalType: 'Float32',
    overviews: [
      [500, 350],
      [250, 175],
    ],
  },
  {
    name: 'float32 700x1000, NaN nodata, 2 bands with descriptions, 512 tiles',
    input: {
      ...utm(700, 1000),
      bands: [field(Float32Array, 700, 1000, 8, 0, 0.5, NaN), field(Float32Array, 700, 1000, 9, -1e6, 1e6, NaN)],
      nodata: NaN,
      descriptions: ['NDVI', 'elevation'],
      tileSize: 512,
    },
    gdalType: 'Float32',
    overviews: [[350, 500]],
  },
  {
    name: 'uint8 categories 600x513, nearest overviews, 128 tiles',
    input: { ...utm(600, 513), bands: [field(Uint8Array, 600, 513, 10, 0, 11, 0)], nodata: 0, resampling: 'nearest', tileSize: 128 },
    gdalType: 'Byte',
    overviews: [
      [300, 257],
      [150, 129],
      [75, 65],
    ],
  },
  {
    name: 'uint16 512x512, whole tiles, no nodata',
    input: { ...utm(512, 512), bands: [field(Uint16Array, 512, 512, 13, 0, 65535)] },
    gdalType: 'UInt16',
    overviews: [[256, 256]],
  },
  {
    name: 'int32 and no nodata, 400x300',
    input: { ...utm(400, 300), bands: [field(Int32Array, 400, 300, 11, -2e9, 2e9)] },
    gdalType: 'Int32',
    overviews: [[200, 150]],
  },
  {
    name: 'float64 300x260, NaNs without nodata',
    input: { ...utm(300, 260), bands: [field(Float64Array, 300, 260, 12, -1e-3, 1e3, NaN)], level: 9 },
    gdalType: 'Float64',
    overviews: [[150, 130]],
  },
];

// ---------------------------------------------------------------------------------------------
// Expected values, computed independently of the writer

const isNodata = (v: number, nodata: number | null | undefined) => Number.isNaN(v) || v === nodata;

/** The first overview: per 2x2 block (clipped at edges) the mean of valid samples, or the top-left one. */
function expectedOverview(input: CogInput, band: TypedArray): TypedArray {
  const { width: w, height: h } = input;
  const ow = Math.ceil(w / 2);
  const oh = Math.ceil(h / 2);
  const out = new (band.constructor as Ctor)(ow * oh);
  const float = band instanceof Float32Array || band instanceof Float64Array;
  // Nodata as the band stores it (float32 rounds).
  const nd = input.nodata === undefined || input.nodata === null ? null : band instanceof Float32Array ? Math.fround(input.nodata) : input.nodata;
  for (let oy = 0; oy < oh; oy++) {
    for (let ox = 0; ox < ow; ox++) {
      if (input.resampling === 'nearest') {
        out[oy * ow + ox] = band[2 * oy * w + 2 * ox]!;
        continue;
      }
      const vals: number[] = [];
      for (const [dx, dy] of [
        [0, 0],
        [1, 0],
        [0, 1],
        [1, 1],
      ] as const) {
        const x = 2 * ox + dx;
        const y = 2 * oy + dy;
        if (x < w && y < h) vals.push(band[y * w + x]);
      }
      const valid = vals.filter((v) => !isNodata(v, nd));
      const mean = valid.reduce((s, v) => s + v, 0) / valid.length;
      out[oy * ow + ox] = valid.length === 0 ? (nd ?? NaN) : float ? mean : Math.round(mean);
    }
  }
  return out;
}

/** Index of the first differing value (NaN equals NaN), or -1. */
function firstMismatch(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return i;
  }
  return -1;
}

/** Equal to gdalinfo's precision: it prints statistics with 3 decimals. */
function expectStat(got: number, want: number, what: string): void {
  expect(Math.abs(got - want), `${what}: got ${got}, want ${want}`).toBeLessThanOrEqual(0.0005 + 1e-9 * Math.abs(want));
}

function expectSame(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  const i = firstMismatch(got, want);
  expect(i, `${what}: first difference at ${i}: got ${got[i]}, want ${want[i]} (lengths ${got.length}, ${want.length})`).toBe(-1);
}

// ---------------------------------------------------------------------------------------------
// A minimal TIFF parser (independent of the writer) for the structural checks

type Ifd = { offset: number; tags: Map<number, number[]> };

function parseIfds(buf: Buffer): Ifd[] {
  expect(buf.toString('latin1', 0, 4)).toBe('II*\0');
  const sizes: Record<number, number> = { 1: 1, 2: 1, 3: 2, 4: 4, 12: 8 };
  const ifds: Ifd[] = [];
  for (let at = buf.readUInt32LE(4); at !== 0;) {
    const n = buf.readUInt16LE(at);
    const tags = new Map<number, number[]>();
    for (let i = 0; i < n; i++) {
      const e = at + 2 + 12 * i;
      const [tag, type, count] = [buf.readUInt16LE(e), buf.readUInt16LE(e + 2), buf.readUInt32LE(e + 4)];
      const size = sizes[type] * count;
      const p = size <= 4 ? e + 8 : buf.readUInt32LE(e + 8);
      const read = (k: number) => (type === 3 ? buf.readUInt16LE(p + 2 * k) : type === 4 ? buf.readUInt32LE(p + 4 * k) : type === 12 ? buf.readDoubleLE(p + 8 * k) : buf[p + k]);
      tags.set(
        tag,
        Array.from({ length: count }, (_, k) => read(k)),
      );
    }
    ifds.push({ offset: at, tags });
    at = buf.readUInt32LE(at + 2 + 12 * n);
  }
  return ifds;
}

// ---------------------------------------------------------------------------------------------

let dir: string;
const files = new Map<string, string>();

/** Writes each case once (with writeCog), shared by the GDAL, validator and geotiff.js tests. */
async function fileFor(c: Case): Promise<string> {
  let f = files.get(c.name);
  if (!f) {
    f = path.join(dir, `${c.name.replace(/[^a-z0-9]+/gi, '_')}.tif`);
    const { bytes } = await writeCog(f, c.input);
    expect(readFileSync(f).length).toBe(bytes);
    files.set(c.name, f);
  }
  return f;
}

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'xeo-cog-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('COG writer: structure', () => {
  it.each(cases)('$name: ghost area, IFDs first, tiles framed, smallest overview first', async (c) => {
    const buf = readFileSync(await fileFor(c));
    const ghost = buf.toString('latin1', 8, 8 + 43);
    expect(ghost).toBe('GDAL_STRUCTURAL_METADATA_SIZE=000140 bytes\n');
    const body = buf.toString('latin1', 51, 51 + 140);
    expect(body).toBe('LAYOUT=IFDS_BEFORE_DATA\nBLOCK_ORDER=ROW_MAJOR\nBLOCK_LEADER=SIZE_AS_UINT4\nBLOCK_TRAILER=LAST_4_BYTES_REPEATED\nKNOWN_INCOMPATIBLE_EDITION=NO\n ');
    const ifds = parseIfds(buf);
    expect(ifds[0].offset).toBe(192);
    expect(ifds.length).toBe(1 + c.overviews.length);
    const lastIfd = ifds.at(-1).offset;
    let previousLevelStart = Infinity;
    for (const [li, ifd] of ifds.entries()) {
      const t = (tag: number) => ifd.tags.get(tag);
      expect(t(254)).toEqual(li === 0 ? undefined : [1]);
      expect(t(259)).toEqual([8]);
      expect(t(284)).toEqual([1]);
      expect(t(262)).toEqual([1]);
      expect(t(277)).toEqual([c.input.bands.length]);
      expect(t(317)).toEqual([c.input.bands[0] instanceof Float32Array || c.input.bands[0] instanceof Float64Array ? 3 : 2]);
      expect(t(338)).toEqual(c.input.bands.length > 1 ? new Array(c.input.bands.length - 1).fill(0) : undefined);
      expect(t(33922) !== undefined).toBe(li === 0); // geo tags only on the full resolution
      const offsets = t(324)!;
      const counts = t(325)!;
      for (let i = 0; i < offsets.length; i++) {
        const [o, n] = [offsets[i], counts[i]];
        expect(o).toBeGreaterThan(lastIfd);
        if (i > 0) expect(o).toBe(offsets[i - 1] + counts[i - 1] + 8); // contiguous, row-major
        expect(buf.readUInt32LE(o - 4)).toBe(n); // leader
        expect(buf.subarray(o + n, o + n + 4).equals(buf.subarray(o + n - 4, o + n))).toBe(true); // trailer
      }
      // Each level's data comes before the next larger level's.
      expect(offsets[0]).toBeLessThan(previousLevelStart);
      previousLevelStart = offsets[0]!;
    }
    const full = ifds[0].tags;
    const end = full.get(324)!.at(-1) + full.get(325)!.at(-1) + 4;
    expect(end).toBe(buf.length); // full resolution ends the file
  });

  it('encodeCog gives the same bytes as writeCog', async () => {
    const c = cases[2];
    expect((await encodeCog(c.input)).equals(readFileSync(await fileFor(c)))).toBe(true);
  });
});

describe('COG writer: geotiff.js reads it back', () => {
  it.each(cases)('$name', async (c) => {
    const buf = readFileSync(await fileFor(c));
    const tiff = await fromArrayBuffer(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
    expect(await tiff.getImageCount()).toBe(1 + c.overviews.length);
    const img = await tiff.getImage(0);
    expect([img.getWidth(), img.getHeight(), img.getSamplesPerPixel()]).toEqual([c.input.width, c.input.height, c.input.bands.length]);
    expect(img.getOrigin().slice(0, 2)).toEqual([c.input.transform[0], c.input.transform[3]]);
    expect(img.getResolution().slice(0, 2)).toEqual([c.input.transform[1], c.input.transform[5]]);
    const keys = img.getGeoKeys()!;
    expect(keys.ProjectedCSTypeGeoKey ?? keys.GeographicTypeGeoKey).toBe(c.input.epsg);
    if (c.input.nodata !== undefined) expect(img.getGDALNoData()).toEqual(c.input.nodata);
    const rasters = (await img.readRasters({ interleave: false })) as unknown as TypedArray[];
    c.input.bands.forEach((b, i) => {
      expect(rasters[i].constructor).toBe(b.constructor);
      expectSame(rasters[i], b, `band ${i + 1}`);
    });
    if (c.overviews.length > 0) {
      const ovr = await tiff.getImage(1);
      expect([ovr.getWidth(), ovr.getHeight()]).toEqual(c.overviews[0]);
      const o = (await ovr.readRasters({ interleave: false })) as unknown as TypedArray[];
      c.input.bands.forEach((b, i) => expectSame(o[i], expectedOverview(c.input, b), `overview band ${i + 1}`));
    }
  });
});

const GDAL_TYPES: Record<string, Ctor> = { Byte: Uint8Array, UInt16: Uint16Array, Int16: Int16Array, Int32: Int32Array, Float32: Float32Array, Float64: Float64Array };

/** Runs a GDAL tool; it must succeed without a word on stderr (no warnings about our tags). */
function gdal(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  expect(r.stderr, `${cmd} ${args.join(' ')}`).toBe('');
  expect(r.status, `${cmd} ${args.join(' ')}`).toBe(0);
  return r.stdout;
}

/** Raw band-sequential pixels through gdal_translate -of ENVI (optionally of an overview). */
function gdalPixels(file: string, type: string, extra: string[] = []): TypedArray {
  const out = path.join(dir, `px-${path.basename(file)}-${extra.join('')}.bin`);
  gdal('gdal_translate', ['-q', '-of', 'ENVI', '-co', 'INTERLEAVE=BSQ', ...extra, file, out]);
  const raw = readFileSync(out);
  const C = GDAL_TYPES[type] as unknown as new (b: ArrayBuffer) => TypedArray;
  return new C(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
}

function concat(bands: TypedArray[]): number[] {
  return bands.flatMap((b) => Array.from(b));
}

describeWithTool(hasGdal, 'GDAL', 'COG writer: GDAL reads it back', () => {
  it.each(cases)('$name: gdalinfo', async (c) => {
    const file = await fileFor(c);
    const info = JSON.parse(gdal('gdalinfo', ['-json', '-stats', file]));
    expect(info.size).toEqual([c.input.width, c.input.height]);
    expect(info.geoTransform).toEqual(c.input.transform);
    expect(info.stac['proj:epsg']).toBe(c.input.epsg);
    expect(info.coordinateSystem.wkt).toMatch(new RegExp(`ID\\["EPSG",${c.input.epsg}\\]\\]$`));
    // LAYOUT=COG: GDAL accepted the ghost area. (It calls a single band's interleaving BAND.)
    const interleave = c.input.bands.length > 1 ? 'PIXEL' : 'BAND';
    expect(info.metadata.IMAGE_STRUCTURE).toMatchObject({ LAYOUT: 'COG', COMPRESSION: 'DEFLATE', INTERLEAVE: interleave });
    expect(info.bands.length).toBe(c.input.bands.length);
    for (const [i, b] of (info.bands as Record<string, any>[]).entries()) {
      expect(b.type).toBe(c.gdalType);
      expect(b.block).toEqual([c.input.tileSize ?? 256, c.input.tileSize ?? 256]);
      const nd = c.input.nodata;
      if (nd === undefined) expect(b.noDataValue).toBeUndefined();
      else expect(b.noDataValue).toBe(Number.isNaN(nd) ? 'NaN' : nd);
      expect(b.description ?? '').toBe(c.input.descriptions?.[i] ?? '');
      expect((b.overviews ?? []).map((o: { size: number[] }) => o.size)).toEqual(c.overviews);
      // Statistics over valid pixels only: nodata is honoured.
      const valid = Array.from(c.input.bands[i]).filter((v) => !isNodata(v, nd));
      const mean = valid.reduce((s, v) => s + v, 0) / valid.length;
      expectStat(
        b.minimum,
        valid.reduce((m, v) => Math.min(m, v), Infinity),
        'minimum',
      );
      expectStat(
        b.maximum,
        valid.reduce((m, v) => Math.max(m, v), -Infinity),
        'maximum',
      );
      expectStat(b.mean, mean, 'mean');
    }
  });

  it.each(cases)('$name: gdal_translate reads the exact pixels', async (c) => {
    const file = await fileFor(c);
    expectSame(gdalPixels(file, c.gdalType), concat(c.input.bands), 'full resolution');
    if (c.overviews.length > 0) {
      const want = concat(c.input.bands.map((b) => expectedOverview(c.input, b)));
      expectSame(gdalPixels(file, c.gdalType, ['-ovr', '0']), want, 'overview 0');
    }
  });

  // Over HTTP, GDAL fetches blocks with the leader in front and checks it and the trailer against
  // TileByteCounts, logging "Inconsistent ..." (and falling back) when they disagree.
  describe('over HTTP (/vsicurl/), where GDAL relies on the block leaders', () => {
    let server: Server;
    let base: string;
    beforeAll(async () => {
      server = createServer(serveRanges);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it.each(cases)('$name', async (c) => {
      const file = await fileFor(c);
      const env = { ...process.env, CPL_DEBUG: 'ON', GDAL_DISABLE_READDIR_ON_OPEN: 'EMPTY_DIR' };
      // gdalinfo must not block this process: the HTTP server runs on its event loop.
      const remote = await runAsync('gdalinfo', ['-checksum', `/vsicurl/${base}/${path.basename(file)}`], env);
      expect(remote.status, remote.stderr).toBe(0);
      expect(remote.stderr).not.toMatch(/Inconsistent|not located after/);
      const checksums = (out: string) =>
        out
          .split('\n')
          .filter((l) => /checksum/i.test(l))
          .join('\n');
      expect(checksums(remote.stdout)).toBe(checksums(gdal('gdalinfo', ['-checksum', file])));
    });
  });
});

/** Serves files of the test folder with single-range support, as /vsicurl/ wants. */
function serveRanges(req: IncomingMessage, res: ServerResponse): void {
  let body: Buffer;
  try {
    body = readFileSync(path.join(dir, path.basename(decodeURIComponent(req.url ?? ''))));
  } catch {
    res.writeHead(404).end();
    return;
  }
  const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
  const [start, end] = m ? [Number(m[1]), Math.min(m[2] ? Number(m[2]) : Infinity, body.length - 1)] : [0, body.length - 1];
  const headers = { 'accept-ranges': 'bytes', 'content-length': String(end - start + 1) };
  if (m) res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${end}/${body.length}` });
  else res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body.subarray(start, end + 1));
}

function runAsync(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { env });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describeWithTool(hasCogValidator, 'GDAL COG validator (python3-gdal)', 'COG writer: GDAL validator', () => {
  it.each(cases)('$name', async (c) => {
    const file = await fileFor(c);
    const [cmd, args] = COG_VALIDATOR;
    const r = spawnSync(cmd, [...args, '--full-check=yes', file], { encoding: 'utf8' });
    const out = r.stdout + r.stderr;
    expect(r.status, out).toBe(0);
    expect(out).toContain('is a valid cloud optimized GeoTIFF');
    expect(out).not.toMatch(/warning|error/i);
  });
});

describe('COG writer: input checks and limits', () => {
  const base = (): CogInput => ({ ...utm(20, 10), bands: [new Uint16Array(200)] });

  it('refuses bad inputs with clear errors', async () => {
    await expect(encodeCog({ ...base(), transform: [0, 10, 1, 0, 0, -10] })).rejects.toThrow(/north-up/);
    await expect(encodeCog({ ...base(), transform: [0, 10, 0, 0, 0, 10] })).rejects.toThrow(/north-up/);
    await expect(encodeCog({ ...base(), tileSize: 100 })).rejects.toThrow(/power of two/);
    await expect(encodeCog({ ...base(), tileSize: 8 })).rejects.toThrow(/power of two/);
    await expect(encodeCog({ ...base(), bands: [new Uint16Array(200), new Int16Array(200)] })).rejects.toThrow(/band 1 is int16/);
    await expect(encodeCog({ ...base(), bands: [new Uint16Array(199)] })).rejects.toThrow(/199 values/);
    await expect(encodeCog({ ...base(), nodata: -1 })).rejects.toThrow(/not a uint16 value/);
    await expect(encodeCog({ ...base(), level: 10 })).rejects.toThrow(/deflate level/);
    await expect(encodeCog({ ...base(), epsg: 999999 })).rejects.toThrow(/EPSG/);
  });

  it('refuses output over 4 GiB (classic TIFF offsets), BigTIFF being out of scope', () => {
    const level = (byteCounts: number[]) => ({ entries: [], byteCounts });
    expect(planLayout(183, [level([2 ** 31, 2 ** 31 - 1000])]).totalBytes).toBeLessThan(2 ** 32);
    expect(() => planLayout(183, [level([2 ** 31, 2 ** 31])])).toThrow(/4 GiB/);
  });

  it('leaves no temporary file behind and replaces the target atomically', async () => {
    const sub = mkdtempSync(path.join(dir, 'atomic-'));
    const f = path.join(sub, 'a.tif');
    await writeCog(f, base());
    const first = readFileSync(f);
    await writeCog(f, { ...base(), bands: [new Uint16Array(200).fill(7)] });
    expect(readFileSync(f).equals(first)).toBe(false);
    const { readdirSync } = await import('node:fs');
    expect(readdirSync(sub)).toEqual(['a.tif']);
  });
});
