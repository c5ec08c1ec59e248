// The map preview of every collection, over HTTP and in a real browser: the demo collection, one
// imported with `xeo import`, and one backed by a STAC API of our own on loopback (the scene of
// test/stac-fixtures.ts, whose COGs a counting file server serves with Range). Links in every API
// version and in the list, tiles of each kind, dates by datetime=, caching, no-data, zoom limits,
// public access; the map page draws the preview and its date picker changes it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { expectError, http, removeDir, startServer, tempDir, xeo, ROOT, type TestServer } from './helpers.js';
import { demoDataDir, DEMO_COLLECTION } from './demo-data.js';
import { collectionDoc, EPSG, itemDoc, localItemFiles, N, RES, SCENE, startFileServer, startStacApi, writeScene, xeoAsync, X0, Y0, type FileServer, type StacApi } from './stac-fixtures.js';
import { decodePng } from './png-decode.js';
import { hasChromium, describeWithTool, CHROMIUM, CHROMIUM_ARGS } from './system-tools.js';

const { transformBox } = await import(path.join(ROOT, 'dist/src/geometry/crs.js'));
const { tileAt } = await import(path.join(ROOT, 'dist/src/tiles/tile-grid.js'));

const REMOTE = 'sentinel-2-l2a';
const VERSIONS = ['1.2.0', '1.0.1', '1.0.0-rc.2'];
let dir: string;
let files: FileServer;
let api: StacApi;
let s: TestServer;
let sceneBox: number[];
let demoBox: number[];

const boxOfCols = (c0: number, c1: number) => transformBox([X0 + c0 * RES, Y0 - N * RES, X0 + c1 * RES, Y0], EPSG, 4326);

beforeAll(async () => {
  dir = tempDir('xeo-previews-');
  await writeScene(dir);
  files = await startFileServer(dir);
  sceneBox = boxOfCols(0, N);
  const items = SCENE.map((it) => itemDoc(it, REMOTE, boxOfCols(...it.cols), (id, key) => `${files.url}/${id}/${key.includes('.') ? key : `${key}.tif`}`));
  api = await startStacApi({ collection: collectionDoc(REMOTE, sceneBox), items, pageSize: 2 });
  const dataDir = await demoDataDir();
  const add = await xeoAsync(['collections', 'add-stac', api.url, REMOTE, '--id', 's2'], { dataDir });
  expect(add.status, add.stderr).toBe(0);
  // The same files imported, one import per day (the items of a day share its date and are mosaicked).
  const local = localItemFiles(dir, sceneBox);
  for (const day of ['2024-05-10', '2024-06-14', '2024-07-04']) {
    const r = xeo(['import', ...local.filter((f) => path.basename(f).includes(day.replaceAll('-', ''))), '--collection', 'local', '--date', day], { dataDir });
    expect(r.status, r.stderr).toBe(0);
  }
  // One band from a bare GeoTIFF (no common names): drawn in greys.
  const one = xeo(['import', path.join(dir, 'S2_20240704_A', 'nir.tif'), '--collection', 'single', '--bands', 'B08', '--date', '2024-07-04'], { dataDir });
  expect(one.status, one.stderr).toBe(0);
  // Collection ids may hold slashes: their links encode them.
  const slashed = xeo(['import', path.join(dir, 'S2_20240704_A', 'nir.tif'), '--collection', 'team/single', '--bands', 'B08', '--date', '2024-07-04'], { dataDir });
  expect(slashed.status, slashed.stderr).toBe(0);
  s = await startServer({ XEO_OUTBOUND_ALLOW: '127.0.0.1' }, dataDir);
  demoBox = (await http('GET', `${s.base}/collections/${DEMO_COLLECTION}`)).json.extent.spatial.bbox[0];
}, 180_000);

afterAll(async () => {
  await s?.stop();
  await api?.close();
  await files?.close();
  if (s) removeDir(s.dataDir);
  if (dir) removeDir(dir);
});

const centre = (b: number[]) => [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2] as const;
const tileUrl = (id: string, t: { z: number; x: number; y: number }, query = '') => `${s.url}/previews/${encodeURIComponent(id)}/${t.z}/${t.x}/${t.y}.png${query}`;
const tileOf = (b: number[], z: number) => tileAt(...centre(b), z);

/** Opaque pixels, transparent pixels and distinct colours of a decoded RGBA tile. */
function pixelsOf(body: Buffer) {
  const png = decodePng(body);
  expect([png.width, png.height]).toEqual([256, 256]);
  expect(png.channels).toBe(4);
  let opaque = 0;
  let clear = 0;
  let grey = 0;
  const colours = new Set<number>();
  for (let i = 0; i < png.data.length; i += 4) {
    const [r, g, b, a] = [png.data[i], png.data[i + 1], png.data[i + 2], png.data[i + 3]];
    if (a === 255) {
      opaque++;
      colours.add((r << 16) | (g << 8) | b);
      if (r === g && g === b) grey++;
    } else if (a === 0) clear++;
  }
  return { opaque, clear, grey, colours: colours.size, total: png.width * png.height };
}

describe('links to the preview', () => {
  it('every collection links xyz tiles, WMTS and the map page, in every API version, in the list and alone, without a token', async () => {
    for (const v of VERSIONS) {
      const list = await http('GET', `${s.url}/${v}/collections`);
      expect(list.status, list.text).toBe(200);
      const ids = list.json.collections.map((c: any) => c.id);
      expect(ids).toEqual(expect.arrayContaining([DEMO_COLLECTION, 'local', 'single', 's2']));
      for (const id of [DEMO_COLLECTION, 'local', 'single', 's2']) {
        const one = await http('GET', `${s.url}/${v}/collections/${id}`);
        expect(one.status, one.text).toBe(200);
        for (const doc of [one.json, list.json.collections.find((c: any) => c.id === id)]) {
          const rel = (r: string) => doc.links.filter((l: any) => l.rel === r);
          expect(rel('xyz')).toEqual([{ rel: 'xyz', href: `${s.url}/previews/${id}/{z}/{x}/{y}.png`, type: 'image/png', title: expect.any(String) }]);
          expect(rel('wmts')).toEqual([{ rel: 'wmts', href: `${s.url}/previews/${id}/wmts`, type: 'image/png', title: expect.any(String), 'wmts:layer': id }]);
          expect(rel('alternate')).toEqual([{ rel: 'alternate', href: `${s.url}/viewer?collection=${id}`, type: 'text/html', title: expect.any(String) }]);
          expect(doc.stac_extensions).toContain('https://stac-extensions.github.io/web-map-links/v1.2.0/schema.json');
        }
      }
    }
  });

  it("the WMTS link answers capabilities whose tiles are the xyz tiles, from the preview's coarsest zoom on", async () => {
    const links = (await http('GET', `${s.base}/collections/s2`)).json.links;
    const caps = await http('GET', links.find((l: any) => l.rel === 'wmts').href);
    expect(caps.status).toBe(200);
    expect(caps.headers['content-type']).toContain('application/xml');
    expect(caps.text).toContain(`<ows:Identifier>s2</ows:Identifier>`);
    expect(caps.text).toContain(`template="${s.url}/previews/s2/{TileMatrix}/{TileCol}/{TileRow}.png"`);
    const zooms = [...caps.text.matchAll(/<TileMatrix>\s*<ows:Identifier>(\d+)</g)].map((m) => Number(m[1]));
    expect(zooms[zooms.length - 1]).toBe(22);
    expect(zooms[0]).toBeGreaterThan(0);
    // KVP GetTile answers the same bytes as the xyz tile.
    const t = tileOf(sceneBox, 13);
    const kvp = await http('GET', `${s.url}/previews/s2/wmts?service=WMTS&request=GetTile&layer=s2&tilematrix=${t.z}&tilecol=${t.x}&tilerow=${t.y}&format=image/png`);
    const xyz = await http('GET', tileUrl('s2', t));
    expect(kvp.status).toBe(200);
    expect(kvp.body.equals(xyz.body)).toBe(true);
    expectError(await http('GET', `${s.url}/previews/nothing/wmts`), 404, 'CollectionNotFound');
  });
});

describe('preview tiles', () => {
  it('draw the demo collection in true colour, the newest date by default, through the tile path (Server-Timing of the kernels)', async () => {
    const t = tileOf(demoBox, 13);
    const r = await http('GET', tileUrl(DEMO_COLLECTION, t));
    expect(r.status, r.text).toBe(200);
    expect(r.headers['content-type']).toBe('image/png');
    expect(r.headers['access-control-allow-origin']).toBe('*');
    expect(r.headers['server-timing']).toMatch(/read;dur=.*total;dur=/);
    const p = pixelsOf(r.body);
    expect(p.opaque).toBe(p.total);
    // True colour: many colours, most of them not grey.
    expect(p.colours).toBeGreaterThan(500);
    expect(p.grey / p.opaque).toBeLessThan(0.5);
    // The newest date is the default.
    const newest = await http('GET', tileUrl(DEMO_COLLECTION, t, '?datetime=2024-10-24'));
    expect(newest.body.equals(r.body)).toBe(true);
  });

  it('draw imported collections: true colour from STAC Items with common names, one band of a bare GeoTIFF in greys', async () => {
    const t = tileOf(sceneBox, 14);
    const r = await http('GET', tileUrl('local', t));
    expect(r.status, r.text).toBe(200);
    const p = pixelsOf(r.body);
    expect(p.opaque).toBe(p.total);
    expect(p.grey / p.opaque).toBeLessThan(0.5);
    expect((await http('GET', tileUrl('local', t, '?datetime=2024-07-04'))).body.equals(r.body)).toBe(true);
    const may = await http('GET', tileUrl('local', t, '?datetime=2024-05-10'));
    expect(may.status).toBe(200);
    expect(may.body.equals(r.body)).toBe(false);
    const one = await http('GET', tileUrl('single', t));
    expect(one.status, one.text).toBe(200);
    const q = pixelsOf(one.body);
    expect(q.opaque).toBe(q.total);
    expect(q.grey).toBe(q.opaque);
    expect(q.colours).toBeGreaterThan(50);
  });

  it('draw the STAC API collection in true colour: by default the newest items (found by a search), any day by datetime=', async () => {
    const t = tileOf(sceneBox, 14);
    const r = await http('GET', tileUrl('s2', t));
    expect(r.status, r.text).toBe(200);
    const p = pixelsOf(r.body);
    expect(p.opaque).toBeGreaterThan(0);
    expect(p.grey / p.opaque).toBeLessThan(0.5);
    // The newest day (2024-07-04) lies on top of the weeks before it, where every pixel is valid.
    const july = await http('GET', tileUrl('s2', t, '?datetime=2024-07-04'));
    expect(july.body.equals(r.body)).toBe(true);
    const may = await http('GET', tileUrl('s2', t, '?datetime=2024-05-10T10:00:00Z'));
    expect(may.status, may.text).toBe(200);
    expect(may.body.equals(r.body)).toBe(false);
    // Both halves of 2024-05-10 (two items of one date) are mosaicked: a tile over their seam is whole.
    const seam = tileAt(...transformBox([X0 + 256 * RES, Y0 - 256 * RES, X0 + 256 * RES + 1, Y0 - 256 * RES + 1], EPSG, 4326).slice(0, 2), 15);
    const seamTile = pixelsOf((await http('GET', tileUrl('s2', seam, '?datetime=2024-05-10'))).body);
    expect(seamTile.opaque).toBe(seamTile.total);
  });

  it('take intervals and open intervals, and answer 400 QueryParameterInvalid for a datetime that is none', async () => {
    const t = tileOf(demoBox, 13);
    const june = await http('GET', tileUrl(DEMO_COLLECTION, t, '?datetime=2024-06-21'));
    expect(june.status).toBe(200);
    // June holds one date of the demo: the interval draws it alone.
    const interval = await http('GET', tileUrl(DEMO_COLLECTION, t, '?datetime=2024-06-01/2024-06-30'));
    expect(interval.body.equals(june.body)).toBe(true);
    const instant = await http('GET', tileUrl(DEMO_COLLECTION, t, `?datetime=${encodeURIComponent('2024-06-21T10:00:00Z')}`));
    expect(instant.body.equals(june.body)).toBe(true);
    // An interval open at its start (several dates, mosaicked) is taken too.
    const open = await http('GET', tileUrl(DEMO_COLLECTION, t, '?datetime=../2024-06-30'));
    expect(open.status).toBe(200);
    for (const bad of ['2024-13-01', 'yesterday', '2024-06-30/2024-06-01', '2024-01-01/2024-02-01/2024-03-01', '../..', '2024-06-21T25:00:00Z']) {
      expectError(await http('GET', tileUrl(DEMO_COLLECTION, t, `?datetime=${encodeURIComponent(bad)}`)), 400, 'QueryParameterInvalid');
    }
    // A date without items: every tile is transparent, at once.
    const none = pixelsOf((await http('GET', tileUrl(DEMO_COLLECTION, t, '?datetime=2023-01-01'))).body);
    expect(none.clear).toBe(none.total);
  });

  it('are cached: the second answer is a cache hit with the same ETag, and If-None-Match answers 304', async () => {
    const t = tileOf(demoBox, 14);
    const url = tileUrl(DEMO_COLLECTION, { ...t, x: t.x + 1 }, '?datetime=2024-05-27');
    const first = await http('GET', url);
    expect(first.status).toBe(200);
    expect(first.headers['server-timing']).toBeDefined();
    const again = await http('GET', url);
    expect(again.status).toBe(200);
    // Only a fresh drawing reports its stages.
    expect(again.headers['server-timing']).toBeUndefined();
    expect(again.headers.etag).toBe(first.headers.etag);
    expect(again.body.equals(first.body)).toBe(true);
    const cond = await http('GET', url, { headers: { 'if-none-match': first.headers.etag } });
    expect(cond.status).toBe(304);
    expect(cond.body.length).toBe(0);
    expect(first.headers['cache-control']).toMatch(/public, max-age=\d+/);
  });

  it('draw no-data transparent: the edge of the data, and tiles beside it', async () => {
    // The scene is 5 km wide: a zoom-13 tile over its north-west corner is part data, part nothing.
    const corner = tileAt(sceneBox[0], sceneBox[3], 13);
    const p = pixelsOf((await http('GET', tileUrl('local', corner))).body);
    expect(p.opaque).toBeGreaterThan(0);
    expect(p.clear).toBeGreaterThan(0);
    expect(p.opaque + p.clear).toBe(p.total);
    const q = pixelsOf((await http('GET', tileUrl('s2', corner))).body);
    expect(q.opaque).toBeGreaterThan(0);
    expect(q.clear).toBeGreaterThan(0);
    // Far from the data: transparent, answered without drawing.
    const far = await http('GET', tileUrl('s2', { ...corner, x: corner.x - 5 }));
    expect(far.headers['server-timing']).toBeUndefined();
    const f = pixelsOf(far.body);
    expect(f.clear).toBe(f.total);
  });

  it('obey zoom limits: below the coarsest overview and beyond zoom 22 a 400 TileInvalid at once, and coordinates must name a tile', async () => {
    for (const [id, box] of [
      [DEMO_COLLECTION, demoBox],
      ['local', sceneBox],
      ['single', sceneBox],
      ['s2', sceneBox],
    ] as const) {
      const caps = (await http('GET', `${s.url}/previews/${id}/wmts`)).text;
      const minZoom = Number(/<TileMatrix>\s*<ows:Identifier>(\d+)</.exec(caps)![1]);
      expect(minZoom).toBeGreaterThan(4);
      const below = await http('GET', tileUrl(id, tileOf(box, minZoom - 1)));
      expectError(below, 400, 'TileInvalid');
      expect(below.json.message).toContain(`zoom levels ${minZoom} to 22`);
      expect((await http('GET', tileUrl(id, tileOf(box, minZoom)))).status).toBe(200);
      expectError(await http('GET', tileUrl(id, tileOf(box, 23))), 400, 'TileInvalid');
    }
    // The demo's files are 2048 pixels with overviews to 256: their coarsest pixel is 80 m, a zoom-10 tile's pixel about 100 m there.
    expect((await http('GET', tileUrl(DEMO_COLLECTION, tileOf(demoBox, 10)))).status).toBe(200);
    expectError(await http('GET', tileUrl(DEMO_COLLECTION, tileOf(demoBox, 9))), 400, 'TileInvalid');
    expectError(await http('GET', `${s.url}/previews/${DEMO_COLLECTION}/13/99999/1.png`), 400, 'TileInvalid');
    expectError(await http('GET', `${s.url}/previews/${DEMO_COLLECTION}/13/1/x.png`), 400, 'TileInvalid');
    expectError(await http('GET', `${s.url}/previews/nothing/13/1/1.png`), 404, 'CollectionNotFound');
  });
});

describe('preview requests gone wrong', () => {
  it('answer clear errors with CORS, never a 500, and ids with slashes work through their encoded links', async () => {
    const t = tileOf(sceneBox, 14);
    const links = (await http('GET', `${s.base}/collections/${encodeURIComponent('team/single')}`)).json.links;
    const xyz = links.find((l: any) => l.rel === 'xyz').href;
    expect(xyz).toBe(`${s.url}/previews/team%2Fsingle/{z}/{x}/{y}.png`);
    const slashed = await http('GET', xyz.replace('{z}', t.z).replace('{x}', t.x).replace('{y}', t.y));
    expect(slashed.status, slashed.text).toBe(200);
    expect(slashed.body.equals((await http('GET', tileUrl('single', t))).body)).toBe(true);
    expect((await http('GET', links.find((l: any) => l.rel === 'alternate').href)).status).toBe(200);
    expectError(await http('GET', `${s.url}/previews/%E0%A4%A/14/1/1.png`), 404, 'CollectionNotFound');
    expectError(await http('GET', tileUrl(DEMO_COLLECTION, t, `?datetime=${'9'.repeat(5000)}`)), 400, 'QueryParameterInvalid');
    expectError(await http('GET', `${s.url}/previews/${DEMO_COLLECTION}/wmts?request=GetFeatureInfo`), 400, 'QueryParameterInvalid');
    expectError(await http('GET', `${s.url}/previews/${DEMO_COLLECTION}/wmts?request=GetTile&layer=other&tilematrix=14&tilecol=1&tilerow=1`), 404, 'CollectionNotFound');
    expectError(await http('GET', `${s.url}/previews/${DEMO_COLLECTION}/wmts?datetime=2024-02-30`), 400, 'QueryParameterInvalid');
    expectError(await http('GET', tileUrl(DEMO_COLLECTION, t).replace('.png', '.gif')), 400, 'TileInvalid');
    const head = await http('HEAD', tileUrl(DEMO_COLLECTION, t));
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toBe('image/png');
    expect((await http('OPTIONS', tileUrl(DEMO_COLLECTION, t))).status).toBe(204);
    // A token is not needed, and one sent does not change the answer.
    expect((await http('GET', tileUrl(DEMO_COLLECTION, t), { token: 'Bearer basic//nonsense' })).status).toBe(200);
  });
});

/** The settings a map page holds as JSON (tiles/map-page-config.ts). */
const pageConfig = (html: string) => JSON.parse(/<script type="application\/json" id="xeo-map-config">(.*?)<\/script>/s.exec(html)![1]);

describe('the map page of a collection', () => {
  it('is public, fits the preview, offers the dates of the items and keeps its strict CSP', async () => {
    const links = (await http('GET', `${s.base}/collections/${DEMO_COLLECTION}`)).json.links;
    const res = await http('GET', links.find((l: any) => l.rel === 'alternate').href);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    const csp = res.headers['content-security-policy'];
    expect(csp).toContain(`script-src ${s.url}/viewer/map-page.js;`);
    expect(csp).toContain("default-src 'none'");
    const cfg = pageConfig(res.text);
    expect(cfg.layers).toHaveLength(1);
    const layer = cfg.layers[0];
    expect(layer.template).toBe(`${s.url}/previews/${DEMO_COLLECTION}/{z}/{x}/{y}.png`);
    expect(layer.minZoom).toBe(10);
    expect(layer.dates.values).toEqual(['2024-03-18', '2024-04-22', '2024-05-27', '2024-06-21', '2024-07-16', '2024-08-15', '2024-09-19', '2024-10-24']);
    expect(layer.extent.map((v: number) => +v.toFixed(6))).toEqual(demoBox.map((v) => +v.toFixed(6)));
    // True colour: no colour ramp in the legend.
    expect(layer.legend.ramp).toBeUndefined();
    // A STAC API collection's dates are not known here: any day of its extent.
    const remote = pageConfig((await http('GET', `${s.url}/viewer?collection=s2`)).text);
    expect(remote.layers[0].dates).toEqual({ values: [], min: '2024-05-01', max: null, selected: null });
    // One band: its colour map is the legend's ramp, over the preview's stretch.
    const single = pageConfig((await http('GET', `${s.url}/viewer?collection=single`)).text);
    expect(single.layers[0].legend.ramp).toMatchObject({ name: 'greys', low: '2nd percentile', high: '98th percentile' });
    expect(single.layers[0].legend.ramp.colors).toMatch(/^000000[0-9a-f]{1524}ffffff$/);
    expectError(await http('GET', `${s.url}/viewer?collection=nothing`), 404, 'CollectionNotFound');
    expectError(await http('GET', `${s.url}/viewer?collection=${DEMO_COLLECTION}&datetime=soon`), 400, 'QueryParameterInvalid');
  });
});

describeWithTool(hasChromium, 'chromium', 'the map page of a collection in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  /** Share of saturated pixels left of the panel (which floats over the right of the map). */
  const shotStats = (shot: ReturnType<typeof decodePng>) => {
    let saturated = 0;
    const right = 490;
    for (let y = 0; y < shot.height; y++) {
      for (let x = 0; x < right; x++) {
        const i = (y * shot.width + x) * shot.channels;
        if (Math.max(shot.data[i], shot.data[i + 1], shot.data[i + 2]) - Math.min(shot.data[i], shot.data[i + 1], shot.data[i + 2]) > 25) saturated++;
      }
    }
    return saturated / (right * shot.height);
  };

  it('draws the preview, and the date control changes it', async () => {
    const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
    const problems: string[] = [];
    const tiles: string[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('response', (r) => r.status() >= 400 && problems.push(`${r.status()} ${r.url()}`));
    page.on('pageerror', (e) => problems.push(String(e)));
    page.on('request', (q) => q.url().includes('/previews/') && tiles.push(q.url()));
    try {
      await page.goto(`${s.url}/viewer?collection=${DEMO_COLLECTION}`);
      const settled = (after: number) =>
        page.waitForFunction((n) => document.body.dataset.state === 'idle' && Number(document.body.dataset.renders) > n && document.body.dataset.tiles === document.body.dataset.tilesDone, after, {
          timeout: 60_000,
        });
      await settled(0);
      expect(await page.evaluate(() => document.body.dataset.tilesFailed)).toBe('0');
      const first = decodePng(await page.screenshot());
      // True colour of the data over much of the page (the background is grey).
      expect(shotStats(first)).toBeGreaterThan(0.2);
      expect(await page.locator('#date option').count()).toBe(9);
      expect(await page.textContent('#date option')).toBe('newest (2024-10-24)');
      const before = tiles.length;
      await page.selectOption('#date', '2024-03-18');
      await page.waitForFunction(() => document.body.dataset.datetime === '2024-03-18');
      await settled(Number(await page.evaluate(() => document.body.dataset.renders)));
      // Every tile asked for since names the date, and the address keeps it.
      expect(tiles.length).toBeGreaterThan(before);
      for (const url of tiles.slice(before)) expect(url).toContain('datetime=2024-03-18');
      expect(new URL(page.url()).searchParams.get('datetime')).toBe('2024-03-18');
      expect(await page.evaluate(() => document.body.dataset.tilesFailed)).toBe('0');
      const second = decodePng(await page.screenshot());
      let changed = 0;
      for (let i = 0; i < first.data.length; i += first.channels) if (Math.abs(first.data[i] - second.data[i]) + Math.abs(first.data[i + 1] - second.data[i + 1]) > 30) changed++;
      expect(changed / (first.width * first.height)).toBeGreaterThan(0.1);
      // The buttons step through the dates: the oldest has none before it; the next is the second date.
      await page.click('#date-older');
      expect(await page.inputValue('#date')).toBe('2024-03-18');
      await page.click('#date-newer');
      expect(await page.inputValue('#date')).toBe('2024-04-22');
      await page.waitForFunction(() => document.body.dataset.datetime === '2024-04-22');
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
