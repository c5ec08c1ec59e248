// The data layer against GDAL: window reads at every level, cube chunks on the native grid and
// warped to Web Mercator, overview choice, time and band selection, and remote COGs over HTTP.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createServer, type Server } from 'node:http';
import { createReadStream, readFileSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { openStore } from '../src/store/db.js';
import type { CatalogSnapshot, ItemMeta } from '../src/core/catalog.js';
import { BlockCache, openRaster } from '../src/data/cog-reader.js';
import { ptrOf, withArena } from '../src/wasm/kernels.js';
import { TRUSTED, usersPolicy } from '../src/data/outbound.js';

/** The blocks of these reads, as an engine thread keeps its own, and its rules for users' URLs. */
const blocks = new BlockCache(256 << 20);
const reading = { blocks, outbound: usersPolicy(undefined) };
import { fixedSnapshot, loadChunk, planGrid } from '../src/data/load.js';
import { transformBox } from '../src/geometry/crs.js';
import { DeflateThreads } from '../src/output/deflate-threads.js';
import { demoDataDir } from './demo-data.js';
import { removeDir, tempDir } from './helpers.js';
import { hasGdal, describeWithTool, run } from './system-tools.js';

const DEMO = 'DEMO_S2_L2A';
let dataDir: string;
/** The demo collection as a load holds it (read from the records once). */
let store: CatalogSnapshot;
let items: ItemMeta[];
beforeAll(async () => {
  dataDir = await demoDataDir();
  const records = await openStore(dataDir);
  items = await records.collections.items(DEMO);
  store = fixedSnapshot(undefined, (await records.collections.get(DEMO))!, items);
  await records.close();
}, 120_000);
afterAll(() => {
  removeDir(dataDir);
});

/** Runs a Python script with numpy, GDAL (exceptions on), `srs` set to EPSG:32633 and `rng` seeded. */
function gdalPython(seed: number, script: string): void {
  const prelude = `import numpy as np
from osgeo import gdal, osr
gdal.UseExceptions()
srs = osr.SpatialReference(); srs.ImportFromEPSG(32633)
rng = np.random.default_rng(${seed})
`;
  run('/usr/bin/python3', ['-c', prelude + script]);
}

/** Reads a window (or a warp) with GDAL into Float32 with NaN for nodata. */
function gdalFloat(args: string[], tool = 'gdal_translate'): { data: Float32Array; width: number; height: number } {
  const dir = tempDir();
  try {
    const out = path.join(dir, 'out.tif');
    run(tool, ['-q', ...args, '-ot', 'Float32', out]);
    const bin = path.join(dir, 'out.bin');
    run('gdal_translate', ['-q', '-of', 'ENVI', out, bin]);
    const info = JSON.parse(run('gdalinfo', ['-json', out]));
    const buf = readFileSync(bin);
    const data = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
    const nd = info.bands[0].noDataValue;
    if (nd !== undefined && nd !== 'NaN') for (let i = 0; i < data.length; i++) if (data[i] === nd) data[i] = NaN;
    return { data, width: info.size[0], height: info.size[1] };
  } finally {
    removeDir(dir);
  }
}

const same = (a: number, b: number) => a === b || (Number.isNaN(a) && Number.isNaN(b));

describe('cube chunks', () => {
  it('plans a grid snapped to the native pixels, and filters by time and bands', async () => {
    const extent = { west: 625000, south: 5305000, east: 627005, north: 5307001, crs: 32633 };
    const grid = planGrid(store.collections.get(DEMO)!, extent, {}, [620000, 5320000]);
    expect(grid).toEqual({ epsg: 32633, transform: [625000, 10, 0, 5307010, 0, -10], width: 201, height: 201 });
    const chunk = await loadChunk(store, { collection: DEMO, extent, temporal: ['2024-06-01', '2024-08-15'], bands: ['B04', 'nir'] }, reading);
    // the end of the interval is excluded
    expect(chunk.times).toEqual(['2024-06-21T10:00:00Z', '2024-07-16T10:00:00Z']);
    expect(chunk.bands).toEqual(['B04', 'B08']);
    expect(chunk.data.length).toBe(2 * 2 * 201 * 201);
  });

  it('refuses unknown collections and bands with catalogue codes', async () => {
    await expect(loadChunk(store, { collection: 'NOPE', extent: { west: 0, south: 0, east: 1, north: 1 } }, reading)).rejects.toMatchObject({ code: 'CollectionNotFound' });
    await expect(loadChunk(store, { collection: DEMO, extent: { west: 16.6, south: 47.9, east: 16.61, north: 47.91 }, bands: ['B99'] }, reading)).rejects.toMatchObject({
      code: 'ProcessParameterInvalid',
    });
  });
});

describeWithTool(hasGdal, 'GDAL', 'reads and warps against GDAL', () => {
  const inflater = new DeflateThreads(2);
  afterAll(() => inflater.stop());

  it('reads windows at full resolution and at each overview exactly as GDAL does', async () => {
    const href = items[1].assets.B04.href;
    const r = await openRaster(href, TRUSTED, blocks);
    expect(r.info.levels.map((l) => l.width)).toEqual([2048, 1024, 512, 256]);
    for (const [level, win] of [
      [0, { col: 700, row: 1300, width: 333, height: 217 }],
      [1, { col: 10, row: 900, width: 200, height: 124 }],
      [3, { col: 0, row: 0, width: 256, height: 256 }],
    ] as const) {
      blocks.clearBlocks();
      const ours = await r.readWindow(level, 0, win);
      // gdal_translate takes -srcwin in full-resolution pixels even when -ovr picks an overview.
      const f = 2 ** level;
      const args = ['-srcwin', String(win.col * f), String(win.row * f), String(win.width * f), String(win.height * f), href];
      const ref = gdalFloat(level === 0 ? args : ['-ovr', String(level - 1), ...args]);
      let diff = 0;
      for (let i = 0; i < ours.length; i++) if (!same(ours[i], ref.data[i])) diff++;
      expect(diff, `level ${level}`).toBe(0);
    }
    // a window reaching outside the image is NaN there
    const edge = await r.readWindow(0, 0, { col: 2040, row: -5, width: 16, height: 10 });
    expect(Number.isNaN(edge[0])).toBe(true);
    expect(Number.isNaN(edge[15 + 9 * 16])).toBe(true);
    expect(Number.isNaN(edge[0 + 5 * 16])).toBe(false);
  });

  it('loads a chunk on the native grid identical to the source pixels', async () => {
    const extent = { west: 630000, south: 5300500, east: 632560, north: 5303060, crs: 32633 };
    const chunk = await loadChunk(store, { collection: DEMO, extent, temporal: ['2024-06-21', '2024-06-22'], bands: ['B08'] }, reading);
    expect(chunk.grid.width).toBe(256);
    const ref = gdalFloat(['-projwin', '630000', '5303060', '632560', '5300500', items[3].assets.B08.href]);
    expect(ref.width).toBe(256);
    let diff = 0;
    for (let i = 0; i < ref.data.length; i++) if (!same(chunk.data[i], ref.data[i])) diff++;
    expect(diff).toBe(0);
  });

  it('warps a Web Mercator tile like gdalwarp, reading the fitting overview', async () => {
    // z15 tile over the scene: about 4.8 m pixels in EPSG:3857 (~3.2 m on the ground) → level 0
    // and a z12 tile (~38 m, ~26 m on the ground) → a coarser overview.
    const tileOf = (z: number, lon: number, lat: number) => {
      const n = 2 ** z;
      const r = (lat * Math.PI) / 180;
      return [z, Math.floor(((lon + 180) / 360) * n), Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n)];
    };
    for (const [z, x, y] of [tileOf(15, 16.72, 47.9), tileOf(12, 16.72, 47.9)]) {
      const size = 40075016.68557849 / 2 ** z;
      const west = -20037508.342789244 + x * size;
      const north = 20037508.342789244 - y * size;
      const extent = { west, south: north - size, east: west + size, north, crs: 3857 };
      const chunk = await loadChunk(
        store,
        {
          collection: DEMO,
          extent,
          temporal: ['2024-06-21', '2024-06-22'],
          bands: ['B04'],
          target: { epsg: 3857, resolution: size / 256 },
        },
        reading,
      );
      expect(chunk.grid.width).toBe(256);
      const href = items[3].assets.B04.href;
      const level = (await openRaster(href, TRUSTED, blocks)).levelFor(size / 256 / 1.45);
      const ref = gdalFloat(
        [
          '-t_srs',
          'EPSG:3857',
          '-te',
          String(west),
          String(north - size),
          String(west + size),
          String(north),
          '-ts',
          '256',
          '256',
          '-r',
          'near',
          '-et',
          '0',
          '-dstnodata',
          'nan',
          ...(level > 0 ? ['-ovr', String(level - 1)] : ['-ovr', 'NONE']),
          href,
        ],
        'gdalwarp',
      );
      let equal = 0;
      let valid = 0;
      for (let i = 0; i < ref.data.length; i++) {
        if (!Number.isNaN(ref.data[i])) valid++;
        if (same(chunk.data[i], ref.data[i])) equal++;
      }
      expect(valid, `z${z}`).toBeGreaterThan(1000);
      expect(equal / ref.data.length, `z${z} level ${level}`).toBeGreaterThan(0.99);
    }
  });

  it('decodes blocks of every sample type the same into kernel memory as into plain arrays, and as GDAL', async () => {
    // GeoTIFFs of 150 x 100 px in 64 px blocks (deflate; predictor 2 for integers, 3 for floats),
    // with no-data; a band-interleaved pair too. The window crosses block edges and leaves the image.
    const dir = tempDir();
    try {
      gdalPython(
        7,
        `
for name, dt, np_t, nd, pred, bands in [('u16', gdal.GDT_UInt16, np.uint16, 0, 2, 1), ('i16', gdal.GDT_Int16, np.int16, -9999, 2, 1),
                                      ('u8', gdal.GDT_Byte, np.uint8, 255, 2, 1), ('f32', gdal.GDT_Float32, np.float32, -9999, 3, 1),
                                      ('i32', gdal.GDT_Int32, np.int32, -1, 2, 1), ('u16x2', gdal.GDT_UInt16, np.uint16, 7, 2, 2),
                                      ('u16p1', gdal.GDT_UInt16, np.uint16, 0, 1, 1)]:
    ds = gdal.GetDriverByName('GTiff').Create('${dir}/' + name + '.tif', 150, 100, bands, dt, ['TILED=YES', 'BLOCKXSIZE=64', 'BLOCKYSIZE=64', 'COMPRESS=DEFLATE', 'PREDICTOR=%d' % pred, 'INTERLEAVE=PIXEL'])
    ds.SetGeoTransform([600000, 10, 0, 5300000, 0, -10]); ds.SetProjection(srs.ExportToWkt())
    for b in range(bands):
        info = np.iinfo(np_t) if np.issubdtype(np_t, np.integer) else None
        v = (rng.integers(info.min, int(info.max) + 1, (100, 150), dtype=np.int64) if info else rng.normal(0, 1000, (100, 150))).astype(np_t)
        v[rng.random((100, 150)) < 0.1] = nd
        band = ds.GetRasterBand(b + 1); band.SetNoDataValue(nd); band.WriteArray(v)
    ds = None
`,
      );
      const win = { col: 30, row: 50, width: 125, height: 60 };
      for (const [name, bands] of [
        ['u16', 1],
        ['i16', 1],
        ['u8', 1],
        ['f32', 1],
        ['i32', 1],
        ['u16x2', 2],
        ['u16p1', 1],
      ] as const) {
        const href = path.join(dir, `${name}.tif`);
        for (let b = 0; b < bands; b++) {
          const cache = new BlockCache(64 << 20);
          const r = await openRaster(href, TRUSTED, cache);
          const plain = await r.readWindow(0, b, win);
          expect(ptrOf(plain), name).toBe(-1);
          cache.clearBlocks();
          const inKernel = await withArena(async () => {
            const p = await r.readWindow(0, b, win);
            expect(ptrOf(p), name).toBeGreaterThanOrEqual(0);
            return Float32Array.from(p);
          });
          expect(new Uint32Array(inKernel.buffer), `${name} band ${b + 1}: bit for bit`).toEqual(new Uint32Array(plain.buffer));
          // Blocks read and inflated on a job thread's deflate threads (16-bit and predictor 1 ones): the same.
          const elsewhere = await openRaster(href, TRUSTED, new BlockCache(64 << 20, inflater));
          const viaThreads = await withArena(async () => Float32Array.from(await elsewhere.readWindow(0, b, win)));
          expect(new Uint32Array(viaThreads.buffer), `${name} band ${b + 1}: on deflate threads`).toEqual(new Uint32Array(plain.buffer));
          if (name === 'u16') expect(inflater.running, 'the threads read the blocks').toBeGreaterThan(0);
          // GDAL reads the part inside the image (the window's first 120 columns and 50 rows).
          const ref = gdalFloat(['-b', String(b + 1), '-srcwin', String(win.col), String(win.row), '120', '50', href]);
          let diff = 0;
          let nan = 0;
          for (let y = 0; y < 50; y++)
            for (let x = 0; x < 120; x++) {
              const ours = inKernel[y * win.width + x];
              if (Number.isNaN(ours)) nan++;
              if (!same(ours, ref.data[y * 120 + x])) diff++;
            }
          expect(diff, `${name} band ${b + 1}`).toBe(0);
          expect(nan, `${name}: some no-data`).toBeGreaterThan(0);
          expect(nan, `${name}: mostly data`).toBeLessThan(1200);
          // outside the image: NaN
          expect(Number.isNaN(inKernel[win.width - 1]) && Number.isNaN(inKernel[(win.height - 1) * win.width])).toBe(true);
        }
      }
    } finally {
      removeDir(dir);
    }
  }, 120_000);

  it('reads sparse blocks of 16-bit predictor-2 files as GDAL does: no-data, or 0 without it', async () => {
    // Blocks GDAL left out (SPARSE_OK) have no bytes: the reader makes them itself, and the
    // predictor must not be applied to them.
    const dir = tempDir();
    try {
      gdalPython(
        11,
        `
for name, dt, np_t, nd in [('u16', gdal.GDT_UInt16, np.uint16, 7), ('i16', gdal.GDT_Int16, np.int16, -9999), ('u16none', gdal.GDT_UInt16, np.uint16, None)]:
    ds = gdal.GetDriverByName('GTiff').Create('${dir}/' + name + '.tif', 150, 100, 1, dt, ['TILED=YES', 'BLOCKXSIZE=64', 'BLOCKYSIZE=64', 'COMPRESS=DEFLATE', 'PREDICTOR=2', 'SPARSE_OK=TRUE'])
    ds.SetGeoTransform([600000, 10, 0, 5300000, 0, -10]); ds.SetProjection(srs.ExportToWkt())
    v = rng.integers(100, 30000, (100, 150)).astype(np_t)
    v[0:64, 64:128] = nd if nd is not None else 0
    band = ds.GetRasterBand(1)
    if nd is not None: band.SetNoDataValue(nd)
    band.WriteArray(v)
    ds = None
`,
      );
      const win = { col: 30, row: 20, width: 110, height: 70 };
      for (const name of ['u16', 'i16', 'u16none']) {
        const href = path.join(dir, `${name}.tif`);
        const cache = new BlockCache(64 << 20);
        const r = await openRaster(href, TRUSTED, cache);
        const plain = await r.readWindow(0, 0, win);
        cache.clearBlocks();
        const inKernel = await withArena(async () => Float32Array.from(await r.readWindow(0, 0, win)));
        const ref = gdalFloat(['-srcwin', String(win.col), String(win.row), String(win.width), String(win.height), href]);
        for (const [how, ours] of [
          ['plain', plain],
          ['kernel', inKernel],
        ] as const) {
          let diff = 0;
          for (let i = 0; i < ours.length; i++) if (!same(ours[i], ref.data[i])) diff++;
          expect(diff, `${name} (${how})`).toBe(0);
        }
        // the sparse block's pixels in the window: rows 20-63, columns 64-127
        const inside = inKernel[(40 - win.row) * win.width + (100 - win.col)];
        expect(name === 'u16none' ? inside === 0 : Number.isNaN(inside), name).toBe(true);
      }
    } finally {
      removeDir(dir);
    }
  }, 120_000);
});

describe('remote COGs over HTTP range requests', () => {
  let server: Server;
  let base: string;
  const ranges: string[] = [];
  beforeAll(async () => {
    const file = items[0].assets.B03.href;
    const size = statSync(file).size;
    server = createServer((req, res) => {
      const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
      if (req.url === '/flaky.tif' && ranges.filter((r) => r === 'flaky').length < 2) {
        ranges.push('flaky');
        res.writeHead(503).end();
        return;
      }
      if (!m) {
        res.writeHead(200, { 'content-length': size });
        createReadStream(file).pipe(res);
        return;
      }
      const start = Number(m[1]);
      const end = Math.min(size - 1, Number(m[2]));
      ranges.push(`${start}-${end}`);
      res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': end - start + 1 });
      createReadStream(file, { start, end }).pipe(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('reads the same pixels as from disk, with range requests only', async () => {
    const win = { col: 1000, row: 1000, width: 300, height: 300 };
    const local = await (await openRaster(items[0].assets.B03.href, TRUSTED, blocks)).readWindow(0, 0, win);
    blocks.clearBlocks();
    const remote = await (await openRaster(`${base}/demo.tif`, TRUSTED, blocks)).readWindow(0, 0, win);
    expect(Array.from(remote)).toEqual(Array.from(local));
    expect(ranges.length).toBeGreaterThan(0);
    const total = ranges.reduce((n, r) => n + (r === 'flaky' ? 0 : Number(r.split('-')[1]) - Number(r.split('-')[0]) + 1), 0);
    expect(total).toBeLessThan(statSync(items[0].assets.B03.href).size / 2);
  });

  it('retries transient server errors', async () => {
    const r = await openRaster(`${base}/flaky.tif`, TRUSTED, blocks);
    expect(r.info.width).toBe(2048);
  });

  it('transforms boxes between CRSs consistently', () => {
    const box = transformBox([16.6, 47.9, 16.7, 48.0], 4326, 32633);
    const back = transformBox(box, 32633, 4326);
    expect(back[0]).toBeLessThanOrEqual(16.6 + 1e-9);
    expect(back[2]).toBeGreaterThanOrEqual(16.7 - 1e-9);
    // Asked again (kept): the same numbers, in an array of the caller's own.
    const again = transformBox([16.6, 47.9, 16.7, 48.0], 4326, 32633);
    expect(again).toEqual(box);
    again[0] = 0;
    expect(transformBox([16.6, 47.9, 16.7, 48.0], 4326, 32633)).toEqual(box);
    // Another box, or fewer points along the edges, is computed afresh.
    expect(transformBox([16.6, 47.9, 16.8, 48.0], 4326, 32633)[2]).toBeGreaterThan(box[2]);
    const wide = transformBox([10, 40, 20, 60], 4326, 32633);
    expect(transformBox([10, 40, 20, 60], 4326, 32633, 2)[1]).toBeGreaterThan(wide[1]);
  });
});
