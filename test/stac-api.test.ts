// Collections backed by a STAC API, end to end over HTTP: a STAC API stand-in of our own on
// loopback (items shaped like Earth Search's sentinel-2-l2a) whose assets are COGs served with
// Range by a counting file server. The same files are imported locally (`xeo import`), and every
// result of the STAC API collection (/result, tiles, a batch job, load_stac) must equal the result
// of the same graph on the imported collection.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { fromArrayBuffer } from 'geotiff';
import { addUser, expectError, http, login, removeDir, startServer, tempDir, xeo, ROOT, type TestServer } from './helpers.js';
import { Jobs } from './jobs-helpers.js';
import { collectionDoc, EPSG, itemDoc, localItemFiles, N, QUERYABLES, RES, SCENE, startFileServer, startStacApi, writeScene, xeoAsync, X0, Y0, type FileServer, type StacApi } from './stac-fixtures.js';

const { transformBox } = await import(path.join(ROOT, 'dist/src/geometry/crs.js'));
const { tileAt } = await import(path.join(ROOT, 'dist/src/tiles/tile-grid.js'));

const REMOTE = 'sentinel-2-l2a';
let dir: string;
let files: FileServer;
let api: StacApi;
let apiGet: StacApi;
let s: TestServer;
let token: string;
let sceneBox: number[];

const boxOfCols = (c0: number, c1: number) => transformBox([X0 + c0 * RES, Y0 - N * RES, X0 + c1 * RES, Y0], EPSG, 4326);
const items = (base: string) => SCENE.map((it) => itemDoc(it, REMOTE, boxOfCols(...it.cols), (id, key) => `${base}/${id}/${key.includes('.') ? key : `${key}.tif`}`));

beforeAll(async () => {
  dir = tempDir('xeo-stac-');
  await writeScene(dir);
  files = await startFileServer(dir);
  sceneBox = boxOfCols(0, N);
  // POST and GET, CQL2 filters, two items a page (so loads follow `next` links).
  api = await startStacApi({ collection: collectionDoc(REMOTE, sceneBox), items: items(files.url), queryables: QUERYABLES, pageSize: 2 });
  // GET only, the query extension, one item a page.
  apiGet = await startStacApi({ collection: collectionDoc(REMOTE, sceneBox), items: items(files.url), methods: ['GET'], filter: 'query', pageSize: 1 });
  const dataDir = tempDir();
  const add = await xeoAsync(['collections', 'add-stac', `${api.url}/`, REMOTE, '--id', 's2'], { dataDir });
  expect(add.status, add.stderr).toBe(0);
  expect((await xeoAsync(['collections', 'add-stac', apiGet.url, REMOTE, '--id', 's2get', '--title', 'GET only'], { dataDir })).status).toBe(0);
  // The same files imported: one import per day, so the items of a day share its date (and are mosaicked).
  const local = localItemFiles(dir, sceneBox);
  for (const day of ['2024-05-10', '2024-06-14', '2024-07-04']) {
    const r = xeo(['import', ...local.filter((f) => path.basename(f).includes(day.replaceAll('-', ''))), '--collection', 'local', '--date', day], { dataDir });
    expect(r.status, r.stderr).toBe(0);
  }
  addUser(dataDir, 'alice', 'pa');
  s = await startServer({ XEO_OUTBOUND_ALLOW: '127.0.0.1' }, dataDir);
  token = await login(s, 'alice', 'pa');
}, 120_000);

afterAll(async () => {
  await s?.stop();
  await api?.close();
  await apiGet?.close();
  await files?.close();
  if (s) removeDir(s.dataDir);
  removeDir(dir);
});

const result = (graph: unknown) => http('POST', `${s.base}/result`, { token, body: JSON.stringify({ process: { process_graph: graph } }) });

/** A window of the scene in pixels, as a UTM extent on pixel edges. */
const pixels = (col: number, row: number, w: number, h: number) => ({ west: X0 + col * RES, east: X0 + (col + w) * RES, north: Y0 - row * RES, south: Y0 - (row + h) * RES, crs: EPSG });
const WINDOW = pixels(100, 60, 300, 380);
const SEASON = ['2024-05-01', '2024-08-01'];
const lte = (y: number) => ({ process_graph: { c: { process_id: 'lte', arguments: { x: { from_parameter: 'value' }, y }, result: true } } });

const ndviGraph = (id: string, o: { extent?: unknown; properties?: unknown; load?: Record<string, unknown> } = {}) => ({
  l: o.load ?? {
    process_id: 'load_collection',
    arguments: { id, spatial_extent: o.extent === undefined ? WINDOW : o.extent, temporal_extent: SEASON, bands: ['red', 'nir'], ...(o.properties ? { properties: o.properties } : {}) },
  },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'n' }, format: 'GTiff' }, result: true },
});

async function bands(body: Buffer): Promise<{ width: number; height: number; values: Float32Array[] }> {
  const tiff = await fromArrayBuffer(body.buffer.slice(body.byteOffset, body.byteOffset + body.length) as ArrayBuffer);
  const img = await tiff.getImage();
  const r = (await img.readRasters()) as unknown as Float32Array[];
  return { width: img.getWidth(), height: img.getHeight(), values: [...r].map((b) => Float32Array.from(b)) };
}

async function expectSameRaster(a: Buffer, b: Buffer, dates: number): Promise<void> {
  const x = await bands(a);
  const y = await bands(b);
  expect([x.width, x.height, x.values.length]).toEqual([y.width, y.height, y.values.length]);
  expect(x.values.length).toBe(dates);
  for (let i = 0; i < x.values.length; i++) {
    expect(x.values[i].some(Number.isFinite)).toBe(true);
    expect(Buffer.from(x.values[i].buffer).equals(Buffer.from(y.values[i].buffer))).toBe(true);
  }
}

/** An XYZ service of the mean NDVI of collection `id` over the extent and dates; its id and tile URL. */
async function ndviService(id: string, spatial_extent: unknown, temporal_extent: string[]): Promise<{ id: string; url: string }> {
  const graph = {
    l: { process_id: 'load_collection', arguments: { id, spatial_extent, temporal_extent, bands: ['red', 'nir'] } },
    n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
    r: {
      process_id: 'reduce_dimension',
      arguments: { data: { from_node: 'n' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
      result: true,
    },
  };
  const r = await http('POST', `${s.base}/services`, { token, body: JSON.stringify({ type: 'XYZ', process: { process_graph: graph }, configuration: { colormap: 'ndvi', min: -1, max: 1 } }) });
  expect(r.status, r.text).toBe(201);
  const serviceId = r.headers['xeo-identifier'];
  return { id: serviceId, url: (await http('GET', `${s.base}/services/${serviceId}`, { token })).json.url as string };
}

describe('collections add-stac', () => {
  it('records the bands of item_assets (eo:bands names, common names kept), the extent and the queryables', async () => {
    const dataDir = tempDir();
    try {
      const add = await xeoAsync(['collections', 'add-stac', api.url, REMOTE, '--id', 'x/s2', '--max-items', '40'], { dataDir });
      expect(add.status, add.stderr).toBe(0);
      expect(add.stdout).toContain('bands B02 (blue), B03 (green), B04 (red), B08 (nir), scl');
      expect(add.stdout).toContain('at most 40 items per load');
      const list = xeo(['collections', 'list'], { dataDir });
      expect(list.stdout).toMatch(new RegExp(`^x/s2\\tstac-api ${api.url} ${REMOTE}\\tsigner none\\t40 items`, 'm'));
      const bad = await xeoAsync(['collections', 'add-stac', api.url, 'nothing-here'], { dataDir });
      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain(`${api.url}/collections/nothing-here: answered HTTP 404`);
      expect((await xeoAsync(['collections', 'add-stac', api.url, REMOTE, '--signer', 'gcs'], { dataDir })).stderr).toContain('--signer must be one of none, planetary-computer, s3');
      expect(xeo(['collections', 'remove', 'x/s2'], { dataDir }).stdout).toContain('removed collection x/s2');
      expect(xeo(['collections', 'list'], { dataDir }).stdout).toBe('');
    } finally {
      removeDir(dataDir);
    }
  });

  it('lists the collection in /collections with its API extent, summaries and bands, and serves its queryables', async () => {
    const list = await http('GET', `${s.base}/collections`);
    expect(list.json.collections.map((c: any) => c.id)).toEqual(expect.arrayContaining(['s2', 's2get', 'local']));
    const c = await http('GET', `${s.base}/collections/s2`);
    expect(c.status, c.text).toBe(200);
    expect(c.json.title).toBe('Sentinel-2 Level-2A (stand-in)');
    expect(c.json.extent.spatial.bbox[0]).toEqual(sceneBox);
    expect(c.json.summaries['eo:bands'].map((b: any) => [b.name, b.common_name ?? null])).toEqual([
      ['B02', 'blue'],
      ['B03', 'green'],
      ['B04', 'red'],
      ['B08', 'nir'],
      ['scl', null],
    ]);
    expect(c.json.summaries.platform).toEqual(['sentinel-2a', 'sentinel-2b']);
    expect(c.json.links).toContainEqual(expect.objectContaining({ rel: 'via', href: `${api.url}/collections/${REMOTE}` }));
    const q = await http('GET', `${s.base}/collections/s2/queryables`);
    expect(q.status).toBe(200);
    expect(q.headers['content-type']).toContain('application/schema+json');
    expect(q.json.$id).toBe(`${s.base}/collections/s2/queryables`);
    expect(Object.keys(q.json.properties)).toEqual(['eo:cloud_cover', 's2:mgrs_tile', 'platform']);
  });
});

describe('loads of a STAC API collection', () => {
  it('search by POST with collection, WGS84 bbox, dates and a CQL2 filter, follow next links, and equal the imported files', async () => {
    const before = api.searches.length;
    const remote = await result(ndviGraph('s2', { properties: { 'eo:cloud_cover': lte(20) } }));
    expect(remote.status, remote.text).toBe(200);
    const local = await result(ndviGraph('local', { properties: { 'eo:cloud_cover': lte(20) } }));
    expect(local.status, local.text).toBe(200);
    // May 10 (two halves mosaicked) and July 4; June 14 is cloudier than 20 %.
    await expectSameRaster(remote.body, local.body, 2);
    expect(api.searches.length).toBe(before + 1);
    const q = api.searches[before];
    expect(q.method).toBe('POST');
    expect(q.params.collections).toEqual([REMOTE]);
    const want = transformBox([WINDOW.west, WINDOW.south, WINDOW.east, WINDOW.north], EPSG, 4326);
    q.params.bbox.forEach((v: number, i: number) => expect(v).toBeCloseTo(want[i], 6));
    expect(q.params.datetime).toBe('2024-05-01T00:00:00.000Z/2024-08-01T00:00:00.000Z');
    expect(q.params.filter).toEqual({ op: '<=', args: [{ property: 'eo:cloud_cover' }, 20] });
    expect(q.params['filter-lang']).toBe('cql2-json');
    expect(q.params.limit).toBeLessThanOrEqual(100);
    // Four items match, two a page.
    expect(q.pages).toBe(2);
  });

  it('mosaics the items of a day (first valid pixel wins) and stops reading once the window is full', async () => {
    // July 4 has two items over the whole scene: the second is never read.
    const graph = ndviGraph('s2', { load: { process_id: 'load_collection', arguments: { id: 's2', spatial_extent: WINDOW, temporal_extent: ['2024-07-04', '2024-07-05'], bands: ['red', 'nir'] } } });
    const r = await result(graph);
    expect(r.status, r.text).toBe(200);
    expect(files.hits.get('/S2_20240704_A/red.tif')).toBeGreaterThan(0);
    expect(files.hits.get('/S2_20240704_B/red.tif') ?? 0).toBe(0);
    expect(files.hits.get('/S2_20240704_B/nir.tif') ?? 0).toBe(0);
    // May 10: the west and the east half are both read, into one date.
    expect(files.hits.get('/S2_20240510_W/red.tif')).toBeGreaterThan(0);
    expect(files.hits.get('/S2_20240510_E/red.tif')).toBeGreaterThan(0);
  });

  it('search by GET with the query extension when the API offers only GET, paging by next links', async () => {
    const before = apiGet.searches.length;
    const remote = await result(ndviGraph('s2get', { properties: { 'eo:cloud_cover': lte(20) } }));
    expect(remote.status, remote.text).toBe(200);
    const local = await result(ndviGraph('local', { properties: { 'eo:cloud_cover': lte(20) } }));
    await expectSameRaster(remote.body, local.body, 2);
    expect(apiGet.searches.length).toBe(before + 1);
    const q = apiGet.searches[before];
    expect(q.method).toBe('GET');
    expect(q.params.query).toEqual({ 'eo:cloud_cover': { lte: 20 } });
    expect(q.params.filter).toBeUndefined();
    expect(q.pages).toBe(4);
  });

  it('checks property conditions again on the items found, also those no API filter can express', async () => {
    // 'or' has no translation: all items are searched, the condition is applied here.
    const odd = {
      process_graph: {
        o: { process_id: 'or', arguments: { x: { from_node: 'a' }, y: { from_node: 'b' } }, result: true },
        a: { process_id: 'lt', arguments: { x: { from_parameter: 'value' }, y: 6 } },
        b: { process_id: 'gt', arguments: { x: { from_parameter: 'value' }, y: 30 } },
      },
    };
    const before = api.searches.length;
    const remote = await result(ndviGraph('s2', { properties: { 'eo:cloud_cover': odd } }));
    expect(remote.status, remote.text).toBe(200);
    expect(api.searches[before].params.filter).toBeUndefined();
    const local = await result(ndviGraph('local', { properties: { 'eo:cloud_cover': odd } }));
    // May 10 (5 %) and June 14 (40 %).
    await expectSameRaster(remote.body, local.body, 2);
  });

  it('refuses a load that finds more items than its cap, naming the cap and how to narrow it', async () => {
    const dataDirAdd = await xeoAsync(['collections', 'add-stac', api.url, REMOTE, '--id', 's2cap', '--max-items', '3'], { dataDir: s.dataDir });
    expect(dataDirAdd.status, dataDirAdd.stderr).toBe(0);
    const r = await result(ndviGraph('s2cap'));
    expectError(r, 400, 'ProcessGraphComplexity');
    expect(r.json.message).toContain('more than the 3 one load may use');
    expect(r.json.message).toContain('Narrow spatial_extent or temporal_extent');
    // An API that says how many items match is refused after its first page.
    const counted = await startStacApi({ collection: collectionDoc(REMOTE, sceneBox), items: items(files.url), pageSize: 2, matched: true });
    try {
      expect((await xeoAsync(['collections', 'add-stac', counted.url, REMOTE, '--id', 's2counted', '--max-items', '3'], { dataDir: s.dataDir })).status).toBe(0);
      const c = await result(ndviGraph('s2counted'));
      expectError(c, 400, 'ProcessGraphComplexity');
      expect(c.json.message).toContain('finds 5 items in its STAC API, more than the 3');
      expect(counted.searches.map((q) => q.pages)).toEqual([1]);
    } finally {
      await counted.close();
    }
    // Narrowed to one day, it fits.
    const ok = await result(
      ndviGraph('s2cap', { load: { process_id: 'load_collection', arguments: { id: 's2cap', spatial_extent: WINDOW, temporal_extent: ['2024-05-10', '2024-05-11'], bands: ['red', 'nir'] } } }),
    );
    expect(ok.status, ok.text).toBe(200);
  });

  it('refuses a synchronous load without a spatial extent, saying why', async () => {
    const before = api.searches.length;
    const r = await result(ndviGraph('s2', { extent: null }));
    expectError(r, 400, 'ProcessGraphComplexity');
    expect(r.json.message).toContain('needs a spatial_extent');
    expect(api.searches.length).toBe(before);
  });

  it('draws the tiles of a map session with one search, equal to the tiles of the imported collection', async () => {
    const extent = { west: sceneBox[0], south: sceneBox[1], east: sceneBox[2], north: sceneBox[3] };
    const service = async (id: string) => (await ndviService(id, extent, ['2024-05-01', '2024-06-01'])).url;
    // One search for the session: the service's warm-up, whose answer the tiles share.
    const before = api.searches.length;
    const remoteUrl = await service('s2');
    const localUrl = await service('local');
    const a = tileAt(sceneBox[0], sceneBox[3], 14);
    const b = tileAt(sceneBox[2], sceneBox[1], 14);
    const tiles: { z: number; x: number; y: number }[] = [];
    for (let x = a.x; x <= b.x; x++) for (let y = a.y; y <= b.y; y++) tiles.push({ z: 14, x, y });
    expect(tiles.length).toBeGreaterThanOrEqual(4);
    const at = (u: string, t: { z: number; x: number; y: number }) => u.replace('{z}', String(t.z)).replace('{x}', String(t.x)).replace('{y}', String(t.y));
    // As a map asks: all visible tiles at once.
    const remote = await Promise.all(tiles.map((t) => http('GET', at(remoteUrl, t))));
    expect(api.searches.length).toBe(before + 1);
    const local = await Promise.all(tiles.map((t) => http('GET', at(localUrl, t))));
    for (let i = 0; i < tiles.length; i++) {
      expect(remote[i].status, remote[i].text).toBe(200);
      expect(remote[i].headers['content-type']).toBe('image/png');
      expect(remote[i].body.equals(local[i].body), `tile ${JSON.stringify(tiles[i])}`).toBe(true);
    }
    expect(api.searches[before].params.datetime).toBe('2024-05-01T00:00:00.000Z/2024-06-01T00:00:00.000Z');
  });

  it('runs a batch job whose result equals the imported collection', async () => {
    const jobs = new Jobs(s, token);
    const download = async (graph: unknown) => {
      const job = await jobs.run(graph);
      expect(job.status, JSON.stringify(await jobs.logs(job.id))).toBe('finished');
      const doc = (await jobs.call('GET', `/jobs/${job.id}/results`)).json;
      const asset = Object.values<any>(doc.assets).find((x) => x.href.includes('.tif'));
      return (await http('GET', asset.href)).body;
    };
    const props = { properties: { 'eo:cloud_cover': lte(20) } };
    await expectSameRaster(await download(ndviGraph('s2', props)), await download(ndviGraph('local', props)), 2);
  });

  it('load_stac searches when its URL is a STAC API collection or a /search URL', async () => {
    const before = api.searches.length;
    const local = await result(ndviGraph('local'));
    for (const url of [`${api.url}/collections/${REMOTE}`, `${api.url}/search?collections=${REMOTE}`]) {
      const r = await result(ndviGraph('', { load: { process_id: 'load_stac', arguments: { url, spatial_extent: WINDOW, temporal_extent: SEASON, bands: ['B04', 'B08'] } } }));
      expect(r.status, r.text).toBe(200);
      await expectSameRaster(r.body, local.body, 3);
    }
    expect(api.searches.length).toBe(before + 2);
    for (const q of api.searches.slice(before)) {
      expect(q.params.collections).toEqual([REMOTE]);
      expect(q.params.bbox).toHaveLength(4);
      expect(q.params.datetime).toBe('2024-05-01T00:00:00.000Z/2024-08-01T00:00:00.000Z');
    }
  });
});

describe("a service's warm-up", () => {
  // Files and APIs of their own: no engine thread has opened these hrefs before, and no other test's search is cached.
  let warmFiles: FileServer;
  let warmApi: StacApi;
  let flakyApi: StacApi;
  const DATES = ['2024-06-01', '2024-07-31'];
  const service = (id: string) => ndviService(id, null, DATES);
  const tileUrl = (u: string) => {
    const t = tileAt((sceneBox[0] + sceneBox[2]) / 2, (sceneBox[1] + sceneBox[3]) / 2, 14);
    return u.replace('{z}', String(t.z)).replace('{x}', String(t.x)).replace('{y}', String(t.y));
  };
  const until = async (what: string, done: () => boolean) => {
    for (let i = 0; i < 300 && !done(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(done(), what).toBe(true);
  };
  // The first date of DATES: its files' headers are read ahead.
  const FIRST = ['/S2_20240614_F/red.tif', '/S2_20240614_F/nir.tif'];

  beforeAll(async () => {
    warmFiles = await startFileServer(dir);
    warmApi = await startStacApi({ collection: collectionDoc(REMOTE, sceneBox), items: items(warmFiles.url) });
    flakyApi = await startStacApi({ collection: collectionDoc(REMOTE, sceneBox), items: items(warmFiles.url), failSearches: 1 });
    const added = await Promise.all([
      xeoAsync(['collections', 'add-stac', warmApi.url, REMOTE, '--id', 's2warm'], { dataDir: s.dataDir }),
      xeoAsync(['collections', 'add-stac', flakyApi.url, REMOTE, '--id', 's2flaky'], { dataDir: s.dataDir }),
    ]);
    for (const a of added) expect(a.status, a.stderr).toBe(0);
  }, 60_000);
  afterAll(async () => {
    await warmApi?.close();
    await flakyApi?.close();
    await warmFiles?.close();
  });

  it("searches the service's area and reads the first date's headers when the service is created; its first tile then makes no search and no header read", async () => {
    const { url } = await service('s2warm');
    await until('the warm-up searched', () => warmApi.searches.length === 1);
    await until("the warm-up read the first date's headers", () => FIRST.every((f) => warmFiles.ranges.includes(`${f} bytes=0-65535`)));
    // The whole collection (the load has no spatial_extent: no bbox), the load's dates, as its tiles would ask.
    expect(warmApi.searches[0].params.datetime).toBe('2024-06-01T00:00:00.000Z/2024-07-31T00:00:00.000Z');
    expect(warmApi.searches[0].params.bbox).toBeUndefined();
    const seen = warmFiles.ranges.length;
    const remote = await http('GET', tileUrl(url));
    expect(remote.status, remote.text).toBe(200);
    expect(warmApi.searches.length).toBe(1);
    const later = warmFiles.ranges.slice(seen);
    expect(later.length).toBeGreaterThan(0);
    expect(later.filter((r) => FIRST.some((f) => r.startsWith(`${f} `)) && r.endsWith(' bytes=0-65535'))).toEqual([]);
    // Answered from the warm-up's search: the same tile as the imported files draw.
    const local = await http('GET', tileUrl((await service('local')).url));
    expect(local.status).toBe(200);
    expect(remote.body.equals(local.body)).toBe(true);
  }, 30_000);

  it('leaves a failed warm-up to the first tile, which searches itself', async () => {
    const { url } = await service('s2flaky');
    await until('the warm-up searched (and was answered 503)', () => flakyApi.searches.length === 1);
    await new Promise((r) => setTimeout(r, 200));
    const remote = await http('GET', tileUrl(url));
    expect(remote.status, remote.text).toBe(200);
    expect(flakyApi.searches.length).toBe(2);
    const local = await http('GET', tileUrl((await service('local')).url));
    expect(remote.body.equals(local.body)).toBe(true);
  });
});

describe('a STAC API that is down', () => {
  it('lets the server start and serve the rest; the collection answers CollectionUnavailable naming the API', async () => {
    const down = await startStacApi({ collection: collectionDoc(REMOTE, sceneBox), items: items(files.url) });
    const dataDir = tempDir();
    expect((await xeoAsync(['collections', 'add-stac', down.url, REMOTE, '--id', 'gone'], { dataDir })).status).toBe(0);
    await down.close();
    addUser(dataDir, 'bob', 'pb');
    const d = await startServer({ XEO_STAC_METADATA_TTL: '0', XEO_OUTBOUND_ALLOW: '127.0.0.1' }, dataDir);
    try {
      const bob = await login(d, 'bob', 'pb');
      const list = await http('GET', `${d.base}/collections`);
      expect(list.status).toBe(200);
      expect(list.json.collections.map((c: any) => c.id)).toEqual(['gone']);
      const c = await http('GET', `${d.base}/collections/gone`);
      expectError(c, 424, 'CollectionUnavailable');
      expect(c.json.message).toContain(down.url);
      expect(c.headers['retry-after']).toBe('30');
      const r = await http('POST', `${d.base}/result`, { token: bob, body: JSON.stringify({ process: { process_graph: ndviGraph('gone') } }) });
      expectError(r, 424, 'CollectionUnavailable');
      expect(r.json.message).toContain(down.url);
      expect(r.headers['retry-after']).toBe('30');
      expect((await http('GET', `${d.base}/processes`)).status).toBe(200);
    } finally {
      await d.stop();
      removeDir(dataDir);
    }
  });
});
