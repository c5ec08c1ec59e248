// The remote read path over HTTP: two demo COGs behind a range server of our own (counting every
// request), imported as a STAC Item with http hrefs, drawn as map tiles by the real server. Checks
// the requests per tile (one header request per file, one range per row of blocks, none again for
// headers), tiles equal to the same files read locally, retries of 429/5xx/dropped connections,
// a 400 naming the URL when a file stays unreadable, a burst of tiles drawn at once on one compute
// thread (their round trips overlap), and a header larger than the first request.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CLI, addUser, expectError, http, login, removeDir, startServer, tempDir, type TestServer } from './helpers.js';
import { demoDataDir } from './demo-data.js';
import { RangeServer } from './support/range-server.js';
import { openStore } from '../src/store/db.js';
import { writeCog } from '../src/output/cog-writer.js';
import { BlockCache, openRaster } from '../src/data/cog-reader.js';
import { TRUSTED } from '../src/data/outbound.js';
import { tileAt } from '../src/tiles/tile-grid.js';

const CENTRE = { lon: 16.745, lat: 47.928 };
const HEADER = 'bytes=0-65535';

/** `xeo` without blocking this process's event loop (the range server answering it lives here). */
function xeoAsync(args: string[], dataDir: string): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, XEO_DATA_DIR: dataDir }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr.on('data', (d) => (stderr += d));
    p.on('exit', (status) => resolve({ status, stderr }));
  });
}

const item = (id: string, red: string, nir: string) => ({
  type: 'Feature',
  stac_version: '1.0.0',
  id,
  geometry: null,
  properties: { datetime: '2024-06-21T10:00:00Z' },
  links: [],
  assets: {
    red: { href: red, type: 'image/tiff; application=geotiff; profile=cloud-optimized', roles: ['data'], 'eo:bands': [{ name: 'red', common_name: 'red' }] },
    nir: { href: nir, type: 'image/tiff; application=geotiff; profile=cloud-optimized', roles: ['data'], 'eo:bands': [{ name: 'nir', common_name: 'nir' }] },
  },
});

const graph = (collection: string) => ({
  l: { process_id: 'load_collection', arguments: { id: collection, spatial_extent: null, temporal_extent: null, bands: ['red', 'nir'] } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } }, result: true },
});

describe('remote COGs over HTTP', () => {
  let work: string;
  let cogs: RangeServer;
  let s: TestServer;
  let remoteTiles: string;
  let localTiles: string;
  let burstTiles: string;

  beforeAll(async () => {
    const demo = await demoDataDir();
    const store = await openStore(demo);
    const june = (await store.collections.items('DEMO_S2_L2A')).find((i) => i.datetime.startsWith('2024-06-21'))!;
    await store.close();
    removeDir(demo);
    // The same files under a second path: a collection no tile has read yet, for the burst below.
    cogs = await new RangeServer()
      .file('/cogs/B04.tif', june.assets.B04.href)
      .file('/cogs/B08.tif', june.assets.B08.href)
      .file('/burst/B04.tif', june.assets.B04.href)
      .file('/burst/B08.tif', june.assets.B08.href)
      .start();
    work = tempDir('xeo-remote-read-');
    const dataDir = tempDir();
    writeFileSync(path.join(work, 'remote.json'), JSON.stringify(item('remote', `${cogs.url}/cogs/B04.tif`, `${cogs.url}/cogs/B08.tif`)));
    writeFileSync(path.join(work, 'local.json'), JSON.stringify(item('local', june.assets.B04.href, june.assets.B08.href)));
    writeFileSync(path.join(work, 'burst.json'), JSON.stringify(item('burst', `${cogs.url}/burst/B04.tif`, `${cogs.url}/burst/B08.tif`)));
    for (const [file, id] of [
      ['remote.json', 'REMOTE'],
      ['local.json', 'LOCAL'],
      ['burst.json', 'BURST'],
    ]) {
      const r = await xeoAsync(['import', path.join(work, file), '--collection', id], dataDir);
      expect(r.status, r.stderr).toBe(0);
    }
    s = await startServer({ XEO_COMPUTE_THREADS: '1' }, dataDir);
    addUser(s.dataDir, 'alice', 'secret-pw-1');
    const token = await login(s, 'alice', 'secret-pw-1');
    const service = async (collection: string) => {
      const r = await http('POST', `${s.base}/services`, {
        token,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'XYZ', process: { process_graph: graph(collection) }, configuration: { colormap: 'ndvi', min: -0.2, max: 0.9 } }),
      });
      expect(r.status, r.text).toBe(201);
      return `${s.url}/xyz/${r.headers['xeo-identifier']}`;
    };
    remoteTiles = await service('REMOTE');
    localTiles = await service('LOCAL');
    burstTiles = await service('BURST');
  }, 180_000);
  afterAll(async () => {
    await s?.stop();
    await cogs?.stop();
    if (s) removeDir(s.dataDir);
    removeDir(work);
  });

  const tile = (base: string, z: number, x: number, y: number) => http('GET', `${base}/${z}/${x}/${y}.png`);
  const centre = tileAt(CENTRE.lon, CENTRE.lat, 14);

  it('draws the first tile with one header request per file and one range per row of blocks, all at once', async () => {
    cogs.reset();
    const r = await tile(remoteTiles, 14, centre.x, centre.y);
    expect(r.status, r.text).toBe(200);
    const headers = cogs.hits.filter((h) => h.range === HEADER);
    expect(headers.map((h) => h.path).sort()).toEqual(['/cogs/B04.tif', '/cogs/B08.tif']);
    const blocks = cogs.hits.filter((h) => h.range !== HEADER);
    expect(blocks.every((h) => h.status === 206)).toBe(true);
    // Each file's block ranges are disjoint (merged runs, never the same bytes twice).
    for (const p of ['/cogs/B04.tif', '/cogs/B08.tif']) {
      const spans = blocks
        .filter((h) => h.path === p)
        .map((h) => h.range!.slice(6).split('-').map(Number))
        .sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < spans.length; i++) expect(spans[i][0]).toBeGreaterThan(spans[i - 1][1]);
    }
    // Two round trips: headers, then all block ranges together (they arrive before any answer is sent).
    expect(cogs.requests).toBeLessThanOrEqual(2 + 2 * 4);
    const reported = /remote;desc="requests=(\d+) bytes=(\d+)"/.exec(r.headers['server-timing']);
    expect(reported, r.headers['server-timing']).not.toBeNull();
    expect(Number(reported![1])).toBe(cogs.requests);
    expect(Number(reported![2])).toBe(cogs.bytes);
    // The same pixels as the files read from disk.
    const local = await tile(localTiles, 14, centre.x, centre.y);
    expect(local.status).toBe(200);
    expect(r.body.equals(local.body)).toBe(true);
  });

  it('reads no header again, and neighbouring tiles mostly from blocks already fetched', async () => {
    cogs.reset();
    const neighbours = [
      [1, 0],
      [0, 1],
      [1, 1],
      [-1, 0],
      [0, -1],
      [-1, -1],
    ];
    const requests: number[] = [];
    for (const [dx, dy] of neighbours) {
      const before = cogs.requests;
      const r = await tile(remoteTiles, 14, centre.x + dx, centre.y + dy);
      requests.push(cogs.requests - before);
      expect(r.status).toBe(200);
      const local = await tile(localTiles, 14, centre.x + dx, centre.y + dy);
      expect(r.body.equals(local.body), `tile ${dx},${dy}`).toBe(true);
    }
    expect(cogs.hits.filter((h) => h.range === HEADER)).toEqual([]);
    // The first tile read only its own blocks; the first neighbour reads the ring around its own,
    // and the others find theirs there.
    expect(requests[0]).toBeGreaterThan(0);
    expect(requests.slice(1)).toEqual([0, 0, 0, 0, 0]);
    // Keep-alive: the first tile's connections serve the later requests (only those beyond its
    // number of parallel ranges open new ones).
    expect(cogs.connections).toBeLessThan(requests[0]);
  });

  it('retries 503, 429 (with Retry-After) and dropped connections, and draws the tile', async () => {
    cogs.reset();
    cogs.fail({ status: 503 }, { status: 429, retryAfter: 0 }, 'drop');
    const far = tileAt(CENTRE.lon - 0.06, CENTRE.lat - 0.05, 14);
    const r = await tile(remoteTiles, 14, far.x, far.y);
    expect(r.status, r.text).toBe(200);
    expect(cogs.hits.slice(0, 3).map((h) => h.status)).toEqual([503, 429, 0]);
    expect(cogs.hits.slice(3).every((h) => h.status === 206)).toBe(true);
    const local = await tile(localTiles, 14, far.x, far.y);
    expect(r.body.equals(local.body)).toBe(true);
  });

  it('answers a file that stays unreadable with a 400 naming the URL and the reason, not a 500', async () => {
    // More failures than all attempts of all ranges of the tile can use.
    cogs.fail(...Array.from({ length: 200 }, () => ({ status: 503 })));
    const other = tileAt(CENTRE.lon + 0.06, CENTRE.lat + 0.05, 14);
    const r = await tile(remoteTiles, 14, other.x, other.y);
    expectError(r, 400, 'ProcessParameterInvalid');
    expect(r.json.message).toMatch(new RegExp(`${cogs.url}/cogs/B0[48]\\.tif cannot be read: it answered HTTP 503 after 4 attempts`));
    cogs.clearFailures();
  });

  it('draws a burst of tiles on its one compute thread at once: their round trips overlap', async () => {
    // Four tiles near the scene's corners, far enough apart that no two share a block (or the
    // ring read ahead around one), asked for at once of a server with one compute thread.
    const corners = [
      [16.62, 47.845],
      [16.87, 47.845],
      [16.62, 48.005],
      [16.87, 48.005],
    ].map(([lon, lat]) => tileAt(lon, lat, 15));
    cogs.reset();
    cogs.delayMs = 400;
    let answers;
    try {
      answers = await Promise.all(corners.map((t) => tile(burstTiles, 15, t.x, t.y)));
    } finally {
      cogs.delayMs = 0;
    }
    for (const [i, r] of answers.entries()) {
      expect(r.status, r.text).toBe(200);
      const local = await tile(localTiles, 15, corners[i].x, corners[i].y);
      expect(r.body.equals(local.body), `corner ${i}`).toBe(true);
    }
    // One header per file (the tiles share it), then every tile's blocks in the same round: drawn
    // one after another, each tile's ranges would come a whole delay after the previous tile's.
    const burst = cogs.hits.filter((h) => h.path.startsWith('/burst/'));
    const headers = burst.filter((h) => h.range === HEADER);
    expect(headers.map((h) => h.path).sort()).toEqual(['/burst/B04.tif', '/burst/B08.tif']);
    const blocks = burst.filter((h) => h.range !== HEADER);
    expect(blocks.length).toBeGreaterThanOrEqual(corners.length * 2);
    const arrivals = blocks.map((h) => h.at);
    expect(Math.max(...arrivals) - Math.min(...arrivals)).toBeLessThan(200);
  });
});

describe('a remote header larger than the first request', () => {
  let dir: string;
  let cogs: RangeServer;
  beforeAll(async () => {
    dir = tempDir('xeo-remote-header-');
    // 16 px tiles: 8192 blocks at full resolution, so the offsets alone pass 64 KiB.
    const w = 2048;
    const h = 1024;
    const data = new Uint16Array(w * h).map((_, i) => 1 + ((i * 7) % 5000));
    await writeCog(path.join(dir, 'small-tiles.tif'), { width: w, height: h, epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], bands: [data], nodata: 0, tileSize: 16 });
    cogs = await new RangeServer().file('/small-tiles.tif', path.join(dir, 'small-tiles.tif')).start();
  });
  afterAll(async () => {
    await cogs.stop();
    removeDir(dir);
  });

  it('fetches the header again, larger, in one more request, and reads the same pixels as from disk', async () => {
    const blocks = new BlockCache(256 << 20);
    const remote = await openRaster(`${cogs.url}/small-tiles.tif`, TRUSTED, blocks);
    expect(cogs.hits.map((x) => x.range)).toEqual(['bytes=0-65535', 'bytes=0-131071']);
    const win = { col: 1000, row: 500, width: 100, height: 60 };
    cogs.reset();
    const a = await remote.readWindow(0, 0, win);
    // 7 x 4 blocks (rows of adjacent blocks merged), with the ring around them read ahead: one range per row.
    expect(cogs.requests).toBeLessThanOrEqual(6);
    const b = await (await openRaster(path.join(dir, 'small-tiles.tif'), TRUSTED, blocks)).readWindow(0, 0, win);
    expect(Array.from(a)).toEqual(Array.from(b));
  });

  it("reads nothing ahead for a file's first window, and the ring around each later one", async () => {
    const remote = await openRaster(`${cogs.url}/small-tiles.tif`, TRUSTED, new BlockCache(256 << 20));
    const local = await openRaster(path.join(dir, 'small-tiles.tif'), TRUSTED, new BlockCache(256 << 20));
    // 16 px blocks: block columns 62-68 and rows 31-34.
    const win = { col: 1000, row: 500, width: 100, height: 60 };
    const read = async (dx: number, dy: number) => {
      const w = { ...win, col: win.col + 16 * dx, row: win.row + 16 * dy };
      cogs.reset();
      const got = await remote.readWindow(0, 0, w);
      expect(Array.from(got)).toEqual(Array.from(await local.readWindow(0, 0, w)));
      return cogs.requests;
    };
    // The first read: its own blocks (rows this close merge into one range), none around them.
    expect(await read(0, 0)).toBeGreaterThan(0);
    // One block row lower: that row was not read ahead; it comes now, with the ring around the window.
    expect(await read(0, 1)).toBeGreaterThan(0);
    // One block further right and down: inside what the second read fetched.
    expect(await read(1, 1)).toBe(0);
  });
});
