// The map page of a service in a real browser (Debian's Chromium through playwright-core): a
// newcomer creates an NDVI service, follows the link in its record, and sees the tiles.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { startServer, http, removeDir, addUser, login, type TestServer } from './helpers.js';
import { demoDataDir } from './demo-data.js';
import { hasChromium, describeWithTool, CHROMIUM, CHROMIUM_ARGS } from './system-tools.js';
import { decodePng } from './png-decode.js';

let s: TestServer;
let token: string;
let browser: Browser;

const ndvi = {
  l: { process_id: 'load_collection', arguments: { id: 'DEMO_S2_L2A', spatial_extent: null, temporal_extent: ['2024-06-01', '2024-07-01'], bands: ['B04', 'B08'] } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  r: { process_id: 'reduce_dimension', arguments: { data: { from_node: 'n' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } }, result: true },
};

describeWithTool(hasChromium, 'chromium', 'the map page', () => {
  beforeAll(async () => {
    s = await startServer({}, await demoDataDir());
    addUser(s.dataDir, 'alice', 'pa');
    token = await login(s, 'alice', 'pa');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await s?.stop();
    if (s) removeDir(s.dataDir);
  });

  it('shows the tiles of an NDVI service over its extent', async () => {
    const r = await http('POST', `${s.base}/services`, { token, body: JSON.stringify({ type: 'XYZ', title: 'NDVI in June', process: { process_graph: ndvi }, configuration: { colormap: 'ndvi' } }) });
    expect(r.status).toBe(201);
    const record = (await http('GET', r.headers.location, { token })).json;
    const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
    const failed: string[] = [];
    page.on('requestfailed', (q) => failed.push(q.url()));
    await page.goto(record.links.find((l: any) => l.rel === 'alternate').href);
    expect(await page.title()).toContain('NDVI in June');
    await page.waitForFunction(() => Number(document.body.dataset.tiles) > 0 && document.body.dataset.tiles === document.body.dataset.tilesDone, null, { timeout: 30_000 });
    const data = await page.evaluate(() => ({ ...document.body.dataset }));
    expect(Number(data.tilesFailed)).toBe(0);
    expect(failed).toEqual([]);
    const shot = decodePng(await page.screenshot());
    expect([shot.width, shot.height]).toEqual([800, 600]);
    // Neither blank nor one colour: many colours, and most of the page's middle is drawn data
    // (the NDVI palette is green to brown; the empty background is grey).
    const colours = new Map<number, number>();
    let coloured = 0;
    let centre = 0;
    for (let y = 0; y < shot.height; y++) {
      for (let x = 0; x < shot.width; x++) {
        const i = (y * shot.width + x) * shot.channels;
        const [red, green, blue] = [shot.data[i], shot.data[i + 1], shot.data[i + 2]];
        colours.set((red << 16) | (green << 8) | blue, 1);
        const saturated = Math.max(red, green, blue) - Math.min(red, green, blue) > 40;
        if (saturated) coloured++;
        if (saturated && Math.abs(x - 400) < 100 && Math.abs(y - 300) < 100) centre++;
      }
    }
    expect(colours.size).toBeGreaterThan(50);
    expect(coloured / (shot.width * shot.height)).toBeGreaterThan(0.2);
    expect(centre / (200 * 200)).toBeGreaterThan(0.9);

    // Zooming in asks for the next level's tiles, which load too.
    const before = (await page.evaluate(() => document.getElementById('status')!.textContent)) ?? '';
    await page.click('#in');
    await page.waitForFunction(() => document.body.dataset.tiles === document.body.dataset.tilesDone, null, { timeout: 30_000 });
    const after = (await page.evaluate(() => document.getElementById('status')!.textContent)) ?? '';
    const zoomOf = (t: string) => Number(/zoom (\d+)/.exec(t)![1]);
    expect(zoomOf(after)).toBe(zoomOf(before) + 1);
    expect(await page.evaluate(() => document.body.dataset.tilesFailed)).toBe('0');
    await page.close();
  });
});
