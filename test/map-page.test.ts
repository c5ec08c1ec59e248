// The map page of services in a real browser (Debian's Chromium through playwright-core): a newcomer
// creates an NDVI service, follows the link in its record and sees the tiles on OpenLayers, with the
// legend of its colours, a scale line, opacity and a layer switch; two services share one page; the
// tiles meet without seams at whole and fractional zoom levels; the bundle is served from our origin.
import { it, expect, beforeAll, afterAll } from 'vitest';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startServer, http, removeDir, addUser, login, expectError, ROOT, type TestServer } from './helpers.js';
import { demoDataDir } from './demo-data.js';
import { hasChromium, describeWithTool, CHROMIUM, CHROMIUM_ARGS } from './system-tools.js';
import { decodePng, type DecodedPng } from './png-decode.js';

const { colorTable } = await import(path.join(ROOT, 'dist/src/output/colormap.js'));
const HALF = 20037508.342789244;

let s: TestServer;
let token: string;
let browser: Browser;
let ndviService: string;

const ndvi = {
  l: { process_id: 'load_collection', arguments: { id: 'DEMO_S2_L2A', spatial_extent: null, temporal_extent: ['2024-06-01', '2024-07-01'], bands: ['B04', 'B08'] } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  r: {
    process_id: 'reduce_dimension',
    arguments: { data: { from_node: 'n' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
    result: true,
  },
};

async function createService(body: object): Promise<{ id: string; record: any }> {
  const r = await http('POST', `${s.base}/services`, { token, body: JSON.stringify({ type: 'XYZ', process: { process_graph: ndvi }, ...body }) });
  expect(r.status).toBe(201);
  return { id: r.headers['xeo-identifier'], record: (await http('GET', r.headers.location, { token })).json };
}

/** A page that records what goes wrong: failed answers, script errors, refused resources (CSP). */
async function openPage(url: string, size = { width: 800, height: 600 }): Promise<{ page: Page; problems: string[]; tileUrls: string[] }> {
  const page = await browser.newPage({ viewport: size });
  const problems: string[] = [];
  const tileUrls: string[] = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  page.on('pageerror', (e) => problems.push(String(e)));
  page.on('requestfailed', (q) => problems.push(`failed ${q.url()}`));
  page.on('response', (r) => r.status() >= 400 && !r.url().endsWith('/favicon.ico') && problems.push(`${r.status()} ${r.url()}`));
  page.on('request', (q) => /\/(xyz|previews)\//.test(q.url()) && tileUrls.push(q.url()));
  await page.goto(url);
  return { page, problems, tileUrls };
}

/** Waits until the map has drawn every tile of its view after `renders` completed drawings. */
async function settled(page: Page, after = 0): Promise<void> {
  await page.waitForFunction((n) => document.body.dataset.state === 'idle' && Number(document.body.dataset.renders) > n && document.body.dataset.tiles === document.body.dataset.tilesDone, after, {
    timeout: 60_000,
  });
}
const renders = (page: Page) => page.evaluate(() => Number(document.body.dataset.renders));
const viewOf = (page: Page) => page.evaluate(() => JSON.parse(document.body.dataset.view)) as Promise<{ zoom: number; resolution: number; center: [number, number] }>;

const rgbAt = (shot: DecodedPng, x: number, y: number) => {
  const i = (y * shot.width + x) * shot.channels;
  return [shot.data[i], shot.data[i + 1], shot.data[i + 2]];
};
const saturated = ([r, g, b]: number[]) => Math.max(r, g, b) - Math.min(r, g, b) > 40;

/** Share of saturated (data-coloured; the empty background is grey) pixels in a box of the shot. */
function colouredShare(shot: DecodedPng, x0: number, y0: number, x1: number, y1: number): number {
  let n = 0;
  for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) if (saturated(rgbAt(shot, x, y))) n++;
  return n / ((x1 - x0) * (y1 - y0));
}

/**
 * How much a tile border stands out in a strip of the shot across it. A seam (a line where the
 * background or a blend with it shows, or a doubled line) shifts every pixel of its column the same
 * way, while the image's own texture goes either way: for each line of pixels parallel to the border
 * we take the mean, over the strip's length, of its difference from the average of its two
 * neighbours. Returns that mean's largest size at the border (±1.5 px of it) and its median away from it.
 */
function seamScore(shot: DecodedPng, border: number, vertical: boolean, from: number, to: number): { border: number; elsewhere: number } {
  const at = (line: number, along: number) => {
    const [r, g, b] = vertical ? rgbAt(shot, line, along) : rgbAt(shot, along, line);
    return r + g + b;
  };
  const bias = (line: number) => {
    let sum = 0;
    for (let a = from; a < to; a++) sum += at(line, a) - (at(line - 1, a) + at(line + 1, a)) / 2;
    return Math.abs(sum / (to - from));
  };
  let atBorder = 0;
  const elsewhere: number[] = [];
  for (let line = Math.floor(border) - 16; line <= Math.ceil(border) + 16; line++) {
    const d = Math.abs(line + 0.5 - border);
    if (d <= 1.5) atBorder = Math.max(atBorder, bias(line));
    else if (d >= 4) elsewhere.push(bias(line));
  }
  return { border: atBorder, elsewhere: elsewhere.sort((a, b) => a - b)[elsewhere.length >> 1] };
}

/**
 * Moves the view so that a vertical and a horizontal tile border of zoom level `tileZ` cross the
 * strips at fractional pixel positions, at view zoom `zoom`, and returns where they are on screen.
 */
async function borderView(page: Page, zoom: number, tileZ: number): Promise<{ bx: number; by: number; shot: DecodedPng }> {
  const v0 = await viewOf(page);
  const span = (2 * HALF) / 2 ** tileZ;
  const X = -HALF + Math.round((v0.center[0] + HALF) / span) * span;
  const Y = HALF - Math.round((HALF - v0.center[1]) / span) * span;
  const res = (2 * HALF) / 256 / 2 ** zoom;
  // Borders wanted at x = 300.37 and y = 300.61 css pixels (the window is 800 × 600: centre 400, 300).
  const cx = X - (300.37 - 400) * res;
  const cy = Y + (300.61 - 300) * res;
  const lon = (cx / HALF) * 180;
  const lat = (Math.atan(Math.exp((cy / HALF) * Math.PI)) * 360) / Math.PI - 90;
  const before = await renders(page);
  await page.evaluate((h) => (location.hash = h), `#map=${zoom}/${lat.toFixed(9)}/${lon.toFixed(9)}`);
  await settled(page, before);
  const v = await viewOf(page);
  expect(v.zoom).toBeCloseTo(zoom, 6);
  return { bx: 400 + (X - v.center[0]) / v.resolution, by: 300 - (Y - v.center[1]) / v.resolution, shot: decodePng(await page.screenshot()) };
}

describeWithTool(hasChromium, 'chromium', 'the map page', () => {
  beforeAll(async () => {
    s = await startServer({}, await demoDataDir());
    addUser(s.dataDir, 'alice', 'pa');
    token = await login(s, 'alice', 'pa');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    ndviService = (await createService({ title: 'NDVI in June', configuration: { colormap: 'ndvi' } })).id;
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await s?.stop();
    if (s) removeDir(s.dataDir);
  });

  it('shows the tiles of an NDVI service over its extent, with its legend, a scale line, opacity and zoom', async () => {
    const record = (await http('GET', `${s.base}/services/${ndviService}`, { token })).json;
    const { page, problems } = await openPage(record.links.find((l: any) => l.rel === 'alternate').href);
    try {
      expect(await page.title()).toContain('NDVI in June');
      await settled(page);
      expect(await page.evaluate(() => document.body.dataset.tilesFailed)).toBe('0');
      const shot = decodePng(await page.screenshot());
      expect([shot.width, shot.height]).toEqual([800, 600]);
      // Neither blank nor one colour: many colours, and most of the map's middle is drawn data
      // (the NDVI palette is green to brown; the empty background is grey).
      const colours = new Set<number>();
      for (let i = 0; i < shot.data.length; i += shot.channels) colours.add((shot.data[i] << 16) | (shot.data[i + 1] << 8) | shot.data[i + 2]);
      expect(colours.size).toBeGreaterThan(50);
      expect(colouredShare(shot, 0, 0, 800, 600)).toBeGreaterThan(0.2);
      expect(colouredShare(shot, 200, 200, 400, 400)).toBeGreaterThan(0.9);

      // The legend: the service's colour map, pixel for pixel the server's table, and its range in words.
      expect(await page.textContent('#info h1')).toBe('NDVI in June');
      const ramp = await page.evaluate(() => {
        const c = document.querySelector('.legend canvas.ramp') as HTMLCanvasElement;
        return { width: c.width, data: [...c.getContext('2d')!.getImageData(0, 0, c.width, 1).data] };
      });
      const table: Uint8Array = colorTable('ndvi');
      expect(ramp.width).toBe(256);
      for (const i of [0, 77, 128, 200, 255]) expect(ramp.data.slice(4 * i, 4 * i + 3)).toEqual([...table.slice(4 * i, 4 * i + 3)]);
      expect(await page.textContent('.legend p')).toMatch(/^One band: ndvi colours (from -?[\d.]+ to -?[\d.]+|over the range of the data)/);
      // The scale line names a distance.
      expect(await page.textContent('.ol-scale-line-inner')).toMatch(/^\d+ (m|km)$/);

      // Opacity 0 and the layer switch each leave the background; back at 100 % the data returns.
      const centreShare = async () => colouredShare(decodePng(await page.screenshot()), 200, 200, 400, 400);
      await page.fill('#opacity-0', '0');
      await page.waitForFunction(() => document.querySelector('#opacity-0 + output')?.textContent === '0 %');
      expect(await centreShare()).toBeLessThan(0.05);
      await page.fill('#opacity-0', '100');
      await page.uncheck('#visible-0');
      expect(await centreShare()).toBeLessThan(0.05);
      await page.check('#visible-0');
      expect(await centreShare()).toBeGreaterThan(0.9);

      // Zooming in asks for the next level's tiles, which load too, and the address keeps the view.
      const before = await viewOf(page);
      await page.click('.ol-zoom-in');
      // The zoom animates: the map is done when it has reached the next level and drawn it.
      await page.waitForFunction((z) => JSON.parse(document.body.dataset.view).zoom === z, before.zoom + 1, { timeout: 10_000 });
      await settled(page, (await renders(page)) - 1);
      expect((await viewOf(page)).zoom).toBe(before.zoom + 1);
      expect(await page.evaluate(() => document.body.dataset.tilesFailed)).toBe('0');
      expect(page.url()).toMatch(new RegExp(`#map=${before.zoom + 1}/[\\d.-]+/[\\d.-]+$`));
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('shows two services on one page, each with its switch, opacity and legend', async () => {
    const { id } = await createService({ title: 'NDVI in greys', configuration: { colormap: 'greys', min: 0, max: 0.8 } });
    const { page, problems, tileUrls } = await openPage(`${s.url}/viewer?service=${id}&service=${ndviService}`);
    try {
      await settled(page);
      expect(await page.locator('#layers section.layer').count()).toBe(2);
      expect(await page.locator('#layers .switch span').allTextContents()).toEqual(['NDVI in greys', 'NDVI in June', 'Where the data is', 'Tile grid (z/x/y)']);
      // A fixed range is the legend's ends.
      expect(await page.locator('#layers section.layer').first().locator('.legend .ends span').allTextContents()).toEqual(['0', '0.8']);
      for (const sid of [id, ndviService]) expect(tileUrls.some((u) => u.includes(`/xyz/${sid}/`))).toBe(true);
      // The first service is on top: greys at the centre; switched off, the NDVI colours show.
      const shot = () => page.screenshot().then(decodePng);
      expect(colouredShare(await shot(), 200, 200, 400, 400)).toBeLessThan(0.05);
      await page.uncheck('#visible-0');
      expect(colouredShare(await shot(), 200, 200, 400, 400)).toBeGreaterThan(0.9);
      // The tile grid names the tiles it draws over.
      await page.check('#show-grid');
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
    expectError(await http('GET', `${s.url}/viewer?service=${id}&service=nothing`), 404, 'ServiceNotFound');
    const many = Array.from({ length: 9 }, (_, i) => `service=s${i}`).join('&');
    expectError(await http('GET', `${s.url}/viewer?${many}`), 400, 'QueryParameterInvalid');
  });

  it('draws no seams between tiles, at a whole zoom level and between two', async () => {
    const { page, problems } = await openPage(`${s.url}/viewer?service=${ndviService}`);
    try {
      await settled(page);
      const fitted = Math.round((await viewOf(page)).zoom);
      // Deeper than the fitted view, where data fills the window; then between two levels
      // (tiles of the nearer level, drawn scaled).
      for (const [zoom, tileZ] of [
        [fitted + 2, fitted + 2],
        [fitted + 1.3, fitted + 1],
      ]) {
        const { bx, by, shot } = await borderView(page, zoom, tileZ);
        expect(bx % 1).not.toBeCloseTo(0, 1);
        // Strips of 200 pixels along each border, inside the data and clear of the panels.
        expect(colouredShare(shot, Math.round(bx) - 20, 150, Math.round(bx) + 20, 450)).toBeGreaterThan(0.9);
        const v = seamScore(shot, bx, true, 150, 450);
        const h = seamScore(shot, by, false, 60, 460);
        for (const score of [v, h]) expect(score.border, `zoom ${zoom}: ${JSON.stringify({ v, h })}`).toBeLessThan(Math.max(2 * score.elsewhere, 12));
      }
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('is served with its bundle from our own origin, under a policy that allows only those files', async () => {
    const res = await http('GET', `${s.url}/viewer?service=${ndviService}`);
    expect(res.status).toBe(200);
    const csp = res.headers['content-security-policy'];
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`script-src ${s.url}/viewer/map-page.js;`);
    expect(csp).toContain(`style-src ${s.url}/viewer/map-page.css;`);
    expect(csp).toContain("frame-ancestors 'none'");
    // No inline script runs: the one inline block is JSON data.
    const tags = [...res.text.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1]);
    expect(tags).toHaveLength(2);
    expect(tags[0].startsWith(` src="${s.url}/viewer/map-page.js?v=`)).toBe(true);
    expect(tags[0]).toMatch(/ integrity="sha384-[\w+/=]+" defer$/);
    expect(tags[1]).toBe(' type="application/json" id="xeo-map-config"');
    const version = /map-page\.js\?v=([\w-]+)"/.exec(res.text)![1];
    const js = await http('GET', `${s.url}/viewer/map-page.js?v=${version}`, { headers: { 'accept-encoding': 'gzip' } });
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['content-encoding']).toBe('gzip');
    expect(js.headers['cache-control']).toContain('immutable');
    const plain = await http('GET', `${s.url}/viewer/map-page.js`);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers['cache-control']).toBe('no-cache');
    expect(gunzipSync(js.body).equals(plain.body)).toBe(true);
    expect(plain.text).toContain('OpenLayers');
    expect((await http('GET', `${s.url}/viewer/map-page.css`, { headers: { 'if-none-match': js.headers.etag } })).status).toBe(200);
    expect((await http('GET', `${s.url}/viewer/map-page.js`, { headers: { 'if-none-match': js.headers.etag } })).status).toBe(304);
    expectError(await http('GET', `${s.url}/viewer/other.js`), 404, 'NotFound');
  });
});
