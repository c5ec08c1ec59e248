// Secondary web services end to end on the demo collection: the services API and its errors, the
// tile URL template, caching headers, the cache and its invalidation, WMTS, logs, and tile pixels
// checked against gdalwarp of the source COG (not our reader).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import path from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { startServer, http, expectError, removeDir, addUser, login, type TestServer } from './helpers.js';
import { demoDataDir, useDemoServer } from './demo-data.js';
import { hasGdal, describeWithTool, run } from './system-tools.js';
import { decodePng } from './png-decode.js';
import { tileAt, tileBounds } from '../src/tiles/tile-grid.js';

const DEMO = 'DEMO_S2_L2A';
let s: TestServer;
let alice: string;
let bob: string;
let items: { datetime: string; assets: Record<string, { href: string }> }[];
let work: string;

useDemoServer({ users: { alice: 'pa', bob: 'pb' } }, (w) => {
  ({ server: s, items, work } = w);
  ({ alice, bob } = w.tokens);
});

const JUNE = ['2024-06-01', '2024-07-01'];
const ndviGraph = (colormapless = false) => ({
  l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: null, temporal_extent: JUNE, bands: ['B04', 'B08'] } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  r: {
    process_id: 'reduce_dimension',
    arguments: { data: { from_node: 'n' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
    result: !colormapless,
  },
});

/** A tile inside the demo scene (the town and fields near 16.74°E 47.93°N). */
const INSIDE = tileAt(16.745, 47.93, 13);
const tilePath = (t: { z: number; x: number; y: number }, ext = '.png') => `${t.z}/${t.x}/${t.y}${ext}`;

async function create(body: Record<string, unknown>, token = alice): Promise<string> {
  const r = await http('POST', `${s.base}/services`, { token, body: JSON.stringify(body) });
  expect(r.status, r.text).toBe(201);
  return r.headers['xeo-identifier'];
}

const record = async (id: string, token = alice) => (await http('GET', `${s.base}/services/${id}`, { token })).json;
const tileUrl = async (id: string, t = INSIDE) => (await record(id)).url.replace('{z}', t.z).replace('{x}', t.x).replace('{y}', t.y);
const logs = async (id: string, query = '') => (await http('GET', `${s.base}/services/${id}/logs${query}`, { token: alice })).json;

describe('service types', () => {
  it('offers XYZ and WMTS with their configuration and the parameters they pass to processes', async () => {
    const r = await http('GET', `${s.base}/service_types`);
    expect(r.status).toBe(200);
    expect(Object.keys(r.json).sort()).toEqual(['WMTS', 'XYZ']);
    const xyz = r.json.XYZ;
    expect(Object.keys(xyz.configuration).sort()).toEqual(['colormap', 'format', 'max', 'max_zoom', 'min', 'min_zoom', 'tile_size']);
    expect(xyz.configuration.tile_size.enum).toEqual([256, 512]);
    for (const p of Object.values<any>(xyz.configuration)) expect(typeof p.description).toBe('string');
    expect(xyz.process_parameters.map((p: any) => p.name)).toEqual(['spatial_extent', 'tile_zoom', 'tile_x', 'tile_y', 'tile_size']);
  });
});

describe('services API', () => {
  it('needs a token', async () => {
    expectError(await http('GET', `${s.base}/services`), 401, 'AuthenticationRequired');
    expectError(await http('POST', `${s.base}/services`, { body: '{}' }), 401, 'AuthenticationRequired');
  });

  it('refuses unknown types, bad configurations and bad graphs with the catalogue codes', async () => {
    const post = (body: unknown) => http('POST', `${s.base}/services`, { token: alice, body: JSON.stringify(body) });
    const process = { process_graph: ndviGraph() };
    expectError(await post({ process }), 400, 'ServiceUnsupported');
    expectError(await post({ type: 'WMS', process }), 400, 'ServiceUnsupported');
    expectError(await post({ type: 'XYZ', process, configuration: { tilesize: 256 } }), 400, 'ServiceConfigUnsupported');
    expectError(await post({ type: 'XYZ', process, configuration: { tile_size: 300 } }), 400, 'ServiceConfigInvalid');
    expectError(await post({ type: 'XYZ', process, configuration: { min_zoom: 9, max_zoom: 3 } }), 400, 'ServiceConfigInvalid');
    expectError(await post({ type: 'XYZ', process, configuration: { min: 1, max: 0 } }), 400, 'ServiceConfigInvalid');
    expectError(await post({ type: 'XYZ', process, enabled: 'yes' }), 400, 'ServiceConfigInvalid');
    expectError(await post({ type: 'XYZ' }), 400, 'ProcessGraphMissing');
    expectError(await post({ type: 'XYZ', process: { process_graph: { a: { process_id: 'no_such_process', arguments: {}, result: true } } } }), 400, 'ProcessUnsupported');
    const unknownParameter = { a: { process_id: 'add', arguments: { x: { from_parameter: 'nope' }, y: 1 }, result: true } };
    expectError(await post({ type: 'XYZ', process: { process_graph: unknownParameter } }), 400, 'ProcessParameterMissing');
    expectError(await post({ type: 'XYZ', process, plan: 'gold' }), 400, 'BillingPlanInvalid');
    expectError(await post({ type: 'XYZ', process, log_level: 'loud' }), 400, 'ServiceConfigInvalid');
    expectError(await http('POST', `${s.base}/services`, { token: alice, body: '{"type": "XYZ",' }), 400, 'JsonInvalid');
  });

  it('creates, lists, reads, changes and deletes a service, each user seeing only their own', async () => {
    const r = await http('POST', `${s.base}/services`, {
      token: alice,
      body: JSON.stringify({ type: 'xyz', title: 'NDVI', description: 'June', process: { process_graph: ndviGraph() }, configuration: { colormap: 'NDVI' } }),
    });
    expect(r.status).toBe(201);
    expect(r.body.length).toBe(0);
    const id = r.headers['xeo-identifier'];
    expect(id).toMatch(/^[\w\-.~]{20,}$/);
    expect(r.headers.location).toBe(`${s.base}/services/${id}`);
    expect(r.headers['access-control-expose-headers']).toContain('Xeo-Identifier');

    const one = await record(id);
    expect(one).toMatchObject({ id, title: 'NDVI', description: 'June', type: 'XYZ', enabled: true, plan: 'free', budget: null, log_level: 'info' });
    expect(one.url).toBe(`${s.url}/xyz/${id}/{z}/{x}/{y}.png`);
    expect(one.configuration).toEqual({ tile_size: 256, min_zoom: 0, max_zoom: 22, format: 'png', colormap: 'ndvi', min: null, max: null });
    expect(one.process.process_graph).toEqual(ndviGraph());
    expect(one.attributes).toEqual({});
    expect(Date.parse(one.created)).toBeGreaterThan(Date.now() - 60_000);
    expect(one.links.find((l: any) => l.rel === 'alternate').href).toBe(`${s.url}/viewer?service=${id}`);

    const list = (await http('GET', `${s.base}/services`, { token: alice })).json;
    const listed = list.services.find((x: any) => x.id === id);
    expect(listed).toMatchObject({ id, type: 'XYZ', enabled: true, url: one.url });
    expect(listed.process).toBeUndefined();
    expect(listed.configuration).toBeUndefined();
    expect(listed.attributes).toBeUndefined();
    expect(Array.isArray(list.links)).toBe(true);

    // Another user: not listed, not readable, not changeable.
    expect((await http('GET', `${s.base}/services`, { token: bob })).json.services).toEqual([]);
    expectError(await http('GET', `${s.base}/services/${id}`, { token: bob }), 404, 'ServiceNotFound');
    expectError(await http('PATCH', `${s.base}/services/${id}`, { token: bob, body: '{"enabled": false}' }), 404, 'ServiceNotFound');
    expectError(await http('DELETE', `${s.base}/services/${id}`, { token: bob }), 404, 'ServiceNotFound');
    expectError(await http('GET', `${s.base}/services/${id}/logs`, { token: bob }), 404, 'ServiceNotFound');

    // PATCH: first-level members only, type is fixed.
    expect((await http('PATCH', `${s.base}/services/${id}`, { token: alice, body: '{}' })).status).toBe(204);
    expectError(await http('PATCH', `${s.base}/services/${id}`, { token: alice, body: '{"type": "WMTS"}' }), 400, 'PropertyNotEditable');
    expectError(await http('PATCH', `${s.base}/services/${id}`, { token: alice, body: '{"url": "x"}' }), 400, 'PropertyNotEditable');
    expectError(await http('PATCH', `${s.base}/services/${id}`, { token: alice, body: '{"configuration": {"format": "gif"}}' }), 400, 'ServiceConfigInvalid');
    const p = await http('PATCH', `${s.base}/services/${id}`, { token: alice, body: JSON.stringify({ title: 'NDVI, June', configuration: { format: 'jpeg' }, budget: 5 }) });
    expect(p.status).toBe(204);
    const changed = await record(id);
    expect(changed).toMatchObject({ title: 'NDVI, June', budget: 5, description: 'June' });
    expect(changed.configuration.format).toBe('jpeg');
    expect(changed.url).toBe(`${s.url}/xyz/${id}/{z}/{x}/{y}.jpg`);

    expect((await http('DELETE', `${s.base}/services/${id}`, { token: alice })).status).toBe(204);
    expectError(await http('GET', `${s.base}/services/${id}`, { token: alice }), 404, 'ServiceNotFound');
    expectError(await http('GET', `${s.url}/xyz/${id}/${tilePath(INSIDE)}`), 404, 'ServiceNotFound');
    expectError(await http('DELETE', `${s.base}/services/${id}`, { token: alice }), 404, 'ServiceNotFound');
  });

  it("takes the interface spec's body: the graph at the top level and `parameters` for the configuration", async () => {
    const id = await create({ type: 'XYZ', process_graph: ndviGraph(), parameters: { tile_size: 512 } });
    const one = await record(id);
    expect(one.configuration.tile_size).toBe(512);
    // The process is the graph alone, not the body's other members.
    expect(one.process).toEqual({ process_graph: ndviGraph() });
    const t = await http('GET', await tileUrl(id));
    expect(t.status).toBe(200);
    expect(decodePng(t.body).width).toBe(512);
  });

  it('pages the list with limit and next links', async () => {
    for (let i = 0; i < 3; i++) await create({ type: 'XYZ', process: { process_graph: ndviGraph() } }, bob);
    const first = (await http('GET', `${s.base}/services?limit=2`, { token: bob })).json;
    expect(first.services.length).toBe(2);
    const next = first.links.find((l: any) => l.rel === 'next');
    const second = (await http('GET', next.href, { token: bob })).json;
    expect(second.services.length).toBe(1);
    expect(second.links.find((l: any) => l.rel === 'next')).toBeUndefined();
  });
});

describe('tiles', () => {
  let id: string;
  beforeAll(async () => {
    id = await create({ type: 'XYZ', title: 'NDVI', process: { process_graph: ndviGraph() }, configuration: { colormap: 'ndvi' } });
  });

  it('answers the URL template without a token, with caching headers and CORS', async () => {
    const url = await tileUrl(id);
    const r = await http('GET', url);
    expect(r.status, r.text).toBe(200);
    expect(r.headers['content-type']).toBe('image/png');
    expect(r.headers['access-control-allow-origin']).toBe('*');
    expect(r.headers['cache-control']).toMatch(/^public, max-age=\d+$/);
    expect(r.headers.etag).toMatch(/^"[\w-]+"$/);
    expect(r.headers['server-timing']).toMatch(/read;dur=[\d.]+, warp;dur=[\d.]+, kernel;dur=[\d.]+, encode;dur=[\d.]+, total;dur=[\d.]+/);
    const img = decodePng(r.body);
    expect([img.width, img.height, img.channels]).toEqual([256, 256, 4]);
    const colours = new Set<number>();
    for (let i = 0; i < img.data.length; i += 4) colours.add((img.data[i] << 16) | (img.data[i + 1] << 8) | img.data[i + 2]);
    expect(colours.size).toBeGreaterThan(20);

    // The same tile again: from the cache, same bytes; with its ETag: 304 without a body.
    const again = await http('GET', `${url}?__editorSessionId=12345&foo=bar`);
    expect(again.status).toBe(200);
    expect(again.headers.etag).toBe(r.headers.etag);
    expect(again.body.equals(r.body)).toBe(true);
    expect(again.headers['server-timing']).toBeUndefined();
    const cond = await http('GET', url, { headers: { 'if-none-match': r.headers.etag } });
    expect(cond.status).toBe(304);
    expect(cond.body.length).toBe(0);
    expect(cond.headers.etag).toBe(r.headers.etag);
    expect((await http('GET', url, { headers: { 'if-none-match': '"other"' } })).status).toBe(200);
    // Without an extension the configured format; .jpg asks for JPEG.
    expect((await http('GET', url.replace(/\.png$/, ''))).body.equals(r.body)).toBe(true);
    const jpeg = await http('GET', url.replace(/\.png$/, '.jpg'));
    expect(jpeg.headers['content-type']).toBe('image/jpeg');
    expect([...jpeg.body.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
    // HEAD and the preflight work on tiles too.
    const head = await http('HEAD', url);
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String(r.body.length));
    const pre = await http('OPTIONS', url, { headers: { origin: 'https://editor.openeo.org', 'access-control-request-method': 'GET' } });
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-methods']).toContain('GET');
  });

  it('answers impossible tiles with 400 and tiles outside the data with a transparent image', async () => {
    const base = `${s.url}/xyz/${id}`;
    expectError(await http('GET', `${base}/3/8/1.png`), 400, 'TileInvalid');
    expectError(await http('GET', `${base}/3/1/8.png`), 400, 'TileInvalid');
    expectError(await http('GET', `${base}/31/0/0.png`), 400, 'TileInvalid');
    expectError(await http('GET', `${base}/a/0/0.png`), 400, 'TileInvalid');
    expectError(await http('GET', `${base}/3/-1/0.png`), 400, 'TileInvalid');
    expectError(await http('GET', `${base}/3/1/1.gif`), 400, 'TileInvalid');
    expectError(await http('GET', `${base}/23/0/0.png`), 400, 'TileInvalid'); // beyond max_zoom 22
    expectError(await http('GET', `${s.url}/xyz/nosuchservice/3/1/1.png`), 404, 'ServiceNotFound');
    const far = tileAt(-70, -30, 13);
    const r = await http('GET', `${base}/${tilePath(far)}`);
    expect(r.status).toBe(200);
    const img = decodePng(r.body);
    expect(img.width).toBe(256);
    for (let i = 3; i < img.data.length; i += 4) expect(img.data[i]).toBe(0);
  });

  it('draws a tile once for many concurrent requests, and counts it in the logs and usage', async () => {
    const sid = await create({ type: 'XYZ', process: { process_graph: ndviGraph() }, configuration: { min: -1, max: 1 } });
    const url = await tileUrl(sid, tileAt(16.7, 47.9, 14));
    const all = await Promise.all(Array.from({ length: 16 }, () => http('GET', url)));
    for (const r of all) expect(r.status).toBe(200);
    expect(new Set(all.map((r) => r.headers.etag)).size).toBe(1);
    const entries = (await logs(sid)).logs;
    const summary = entries.find((e: any) => e.data?.tiles_drawn !== undefined);
    expect(summary, JSON.stringify(entries)).toBeDefined();
    expect(summary.data.tiles_drawn).toBe(1);
    expect(summary.data.tiles_joined + summary.data.tiles_cached).toBe(15);
    const usage = (await record(sid)).usage;
    expect(usage.tiles.value).toBe(16);
    expect(usage.input.value).toBeGreaterThan(0);
  });

  it('drops cached tiles when the service changes, and serves nothing while disabled', async () => {
    const url = await tileUrl(id);
    const before = await http('GET', url);
    expect((await http('PATCH', `${s.base}/services/${id}`, { token: alice, body: JSON.stringify({ configuration: { colormap: 'greys' } }) })).status).toBe(204);
    const after = await http('GET', url);
    expect(after.status).toBe(200);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect((await http('PATCH', `${s.base}/services/${id}`, { token: alice, body: '{"enabled": false}' })).status).toBe(204);
    expectError(await http('GET', url), 404, 'ServiceNotFound');
    expectError(await http('GET', `${s.url}/viewer?service=${id}`), 404, 'ServiceNotFound');
    expect((await http('PATCH', `${s.base}/services/${id}`, { token: alice, body: '{"enabled": true}' })).status).toBe(204);
    expect((await http('GET', url)).status).toBe(200);
  });

  it('estimates one value range for the whole service and keeps it in its attributes', async () => {
    const sid = await create({ type: 'XYZ', process: { process_graph: ndviGraph() } });
    expect((await http('GET', await tileUrl(sid))).status).toBe(200);
    const range = (await record(sid)).attributes.value_range;
    expect(range.min).toBeGreaterThan(-1);
    expect(range.max).toBeLessThanOrEqual(1);
    expect(range.max).toBeGreaterThan(range.min + 0.3);
  });

  it('logs tiles that fail, with the reason, filtered by level and paged by offset', async () => {
    // A graph that validates but fails when drawn: an image of a two-band cube.
    const twoBands = { l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: null, temporal_extent: JUNE, bands: ['B04', 'B08'] }, result: true } };
    const sid = await create({ type: 'XYZ', process: { process_graph: twoBands }, configuration: { min: 0, max: 3000 } });
    const r = await http('GET', await tileUrl(sid));
    expect(r.status).toBe(400);
    expect(r.json.code).toBe('FormatUnsuitable');
    const all = await logs(sid);
    expect(all.level).toBe('info'); // the service keeps info and above
    const error = all.logs.find((e: any) => e.level === 'error');
    expect(error.code).toBe('FormatUnsuitable');
    expect(error.message).toMatch(/tile 13\/\d+\/\d+ failed: .*band/);
    expect(error.data).toMatchObject({ z: 13 });
    for (const e of all.logs) {
      expect(typeof e.id).toBe('string');
      expect(Date.parse(e.time)).toBeGreaterThan(0);
    }
    const errorsOnly = await logs(sid, '?level=error');
    expect(errorsOnly.level).toBe('error');
    expect(errorsOnly.logs.every((e: any) => e.level === 'error')).toBe(true);
    const first = await logs(sid, '?limit=1');
    expect(first.logs.length).toBe(1);
    const next = first.links.find((l: any) => l.rel === 'next');
    expect(next.href).toContain(`offset=${first.logs[0].id}`);
    const rest = await logs(sid, `?offset=${first.logs[0].id}`);
    expect(rest.logs.map((e: any) => e.id)).toEqual(all.logs.slice(1).map((e: any) => e.id));
    expectError(await http('GET', `${s.base}/services/${sid}/logs?level=loud`, { token: alice }), 400, 'QueryParameterInvalid');
    expectError(await http('GET', `${s.base}/services/${sid}/logs?offset=abc`, { token: alice }), 400, 'QueryParameterInvalid');
    // An empty log is an empty list, not an error.
    const quiet = await create({ type: 'XYZ', process: { process_graph: ndviGraph() }, log_level: 'error' });
    expect((await logs(quiet)).logs).toEqual([]);
  });

  it('passes the tile to the process as parameters', async () => {
    // The tile's zoom, drawn as a constant image: the parameters reach the graph.
    const graph = {
      l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: { from_parameter: 'spatial_extent' }, temporal_extent: JUNE, bands: ['B04'] } },
      r: {
        process_id: 'reduce_dimension',
        arguments: { data: { from_node: 'l' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'first', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
      },
      a: {
        process_id: 'apply',
        arguments: { data: { from_node: 'r' }, process: { process_graph: { z: { process_id: 'add', arguments: { x: { from_parameter: 'tile_zoom' }, y: 0 }, result: true } } } },
        result: true,
      },
    };
    const sid = await create({ type: 'XYZ', process: { process_graph: graph }, configuration: { colormap: 'greys', min: 0, max: 20 } });
    const img = decodePng((await http('GET', await tileUrl(sid))).body);
    // Every pixel inside the data: zoom 13 of 0..20 in greys.
    const want = Math.round((13 / 20) * 255);
    let inside = 0;
    for (let i = 0; i < img.data.length; i += 4) {
      if (img.data[i + 3] === 0) continue;
      inside++;
      expect(Math.abs(img.data[i] - want)).toBeLessThanOrEqual(1);
    }
    expect(inside).toBeGreaterThan(1000);
  });

  it('describes the service as WMTS and serves the same tiles through GetTile', async () => {
    const wid = await create({ type: 'WMTS', title: 'NDVI <WMTS>', process: { process_graph: ndviGraph() }, configuration: { min_zoom: 10, max_zoom: 14, min: -1, max: 1 } });
    const one = await record(wid);
    expect(one.url).toBe(`${s.url}/wmts/${wid}`);
    const caps = await http('GET', `${one.url}?service=WMTS&request=GetCapabilities`);
    expect(caps.status).toBe(200);
    expect(caps.headers['content-type']).toContain('xml');
    expect(caps.text).toContain('<ows:Title>NDVI &lt;WMTS&gt;</ows:Title>');
    expect(caps.text).toContain(`template="${s.url}/xyz/${wid}/{TileMatrix}/{TileCol}/{TileRow}.png"`);
    expect(caps.text.match(/<TileMatrix>/g)!.length).toBe(5);
    const lower = /<ows:LowerCorner>([\d.-]+) ([\d.-]+)<\/ows:LowerCorner>/.exec(caps.text)!;
    expect(Number(lower[1])).toBeGreaterThan(16.5);
    expect(Number(lower[2])).toBeGreaterThan(47.7);
    const kvp = await http('GET', `${one.url}?SERVICE=WMTS&REQUEST=GetTile&LAYER=${wid}&TILEMATRIXSET=GoogleMapsCompatible&TILEMATRIX=${INSIDE.z}&TILECOL=${INSIDE.x}&TILEROW=${INSIDE.y}&FORMAT=image/png`);
    expect(kvp.status).toBe(200);
    const rest = await http('GET', `${s.url}/xyz/${wid}/${tilePath(INSIDE)}`);
    expect(kvp.body.equals(rest.body)).toBe(true);
    expectError(await http('GET', `${one.url}?request=DescribeEverything`), 400, 'QueryParameterInvalid');
  });
});

describeWithTool(hasGdal, 'gdal', 'tile pixels against gdalwarp', () => {
  it('draws the source band warped to Web Mercator like gdalwarp does', async () => {
    const june = items.find((i) => i.datetime.startsWith('2024-06'))!;
    const day = june.datetime.slice(0, 10);
    const graph = { l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: null, temporal_extent: [day, `${day}T23:59:59Z`], bands: ['B08'] }, result: true } };
    const sid = await create({ type: 'XYZ', process: { process_graph: graph }, configuration: { colormap: 'greys', min: 0, max: 5100 } });
    let compared = 0;
    for (const t of [INSIDE, tileAt(16.62, 47.84, 13), tileAt(16.8, 47.98, 14)]) {
      const r = await http('GET', `${s.url}/xyz/${sid}/${tilePath(t)}`);
      expect(r.status, r.text).toBe(200);
      const img = decodePng(r.body);
      const b = tileBounds(t);
      const out = path.join(work, `ref-${t.z}-${t.x}-${t.y}.tif`);
      run('gdalwarp', [
        '-q',
        '-overwrite',
        '-t_srs',
        'EPSG:3857',
        '-te',
        String(b.west),
        String(b.south),
        String(b.east),
        String(b.north),
        '-ts',
        '256',
        '256',
        '-r',
        'near',
        '-ot',
        'Float32',
        june.assets.B08.href,
        out,
      ]);
      run('gdal_translate', ['-q', '-of', 'ENVI', out, `${out}.bin`]);
      const ref = new Float32Array(new Uint8Array(readFileSync(`${out}.bin`)).buffer);
      let same = 0;
      let both = 0;
      for (let i = 0; i < ref.length; i++) {
        const v = ref[i];
        const alpha = img.data[i * 4 + 3];
        if (v === 0 || Number.isNaN(v)) {
          if (alpha === 0) same++;
          continue;
        }
        both++;
        const want = Math.min(255, Math.round((v * 255) / 5100));
        if (alpha === 255 && Math.abs(img.data[i * 4] - want) <= 1) same++;
      }
      compared += both;
      expect(same / ref.length, `tile ${tilePath(t)}`).toBeGreaterThan(0.97);
    }
    expect(compared).toBeGreaterThan(50_000);
    writeFileSync(path.join(work, 'done'), '');
  });
});

describe('tiles under load', () => {
  let busy: TestServer;
  let token: string;
  beforeAll(async () => {
    // One compute thread and a queue of one: most of a burst of new tiles must be turned away.
    busy = await startServer({ XEO_COMPUTE_THREADS: '1', XEO_COMPUTE_QUEUE: '1' }, await demoDataDir());
    addUser(busy.dataDir, 'carol', 'pc');
    token = await login(busy, 'carol', 'pc');
  }, 180_000);
  afterAll(async () => {
    await busy.stop();
    removeDir(busy.dataDir);
  });

  it('answers 503 with Retry-After when the compute threads are full, while cached tiles and discovery keep answering', async () => {
    const r = await http('POST', `${busy.base}/services`, { token, body: JSON.stringify({ type: 'XYZ', process: { process_graph: ndviGraph() }, configuration: { min: -1, max: 1 } }) });
    const sid = r.headers['xeo-identifier'];
    const warm = await http('GET', `${busy.url}/xyz/${sid}/${tilePath(INSIDE)}`);
    expect(warm.status).toBe(200);
    // 24 distinct zoom-16 tiles inside the scene at once.
    const centre = tileAt(16.745, 47.93, 16);
    const burst = Array.from({ length: 24 }, (_, i) => http('GET', `${busy.url}/xyz/${sid}/16/${centre.x + (i % 6)}/${centre.y + Math.floor(i / 6)}.png`));
    let pending = burst.length;
    burst.forEach((p) => p.finally(() => pending--));
    // While the burst is drawn: the cached tile and GET / answer, before the burst is done.
    const hit = await http('GET', `${busy.url}/xyz/${sid}/${tilePath(INSIDE)}`);
    const caps = await http('GET', `${busy.base}/`);
    const stillPending = pending;
    expect(hit.status).toBe(200);
    expect(hit.body.equals(warm.body)).toBe(true);
    expect(caps.status).toBe(200);
    const answers = await Promise.all(burst);
    expect(stillPending).toBeGreaterThan(0);
    const refused = answers.filter((a) => a.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    for (const a of refused) {
      expectError(a, 503, 'InfrastructureBusy');
      expect(Number(a.headers['retry-after'])).toBeGreaterThan(0);
    }
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(0);
    expect(answers.every((a) => a.status === 200 || a.status === 503)).toBe(true);
    // Busy answers are not the service's fault: no error entries for them.
    const entries = (await http('GET', `${busy.base}/services/${sid}/logs?level=error`, { token })).json.logs;
    expect(entries).toEqual([]);
  });
});
