// The outbound rules over HTTP: every URL a user makes the server fetch (load_stac's url, links and
// asset hrefs inside the documents) is refused, before any I/O, unless it is an http(s) URL of an
// address that is not loopback, private, link-local, multicast or unspecified, or is listed in
// XEO_OUTBOUND_ALLOW. Counting servers on loopback prove that nothing reached a refused target.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { addUser, expectError, http, login, removeDir, startServer, tempDir, type TestServer } from './helpers.js';
import { RangeServer } from './support/range-server.js';
import { Jobs } from './jobs-helpers.js';
import { addressClass, parseAllowList } from '../src/data/outbound.js';
import { writeCog } from '../src/output/cog-writer.js';

describe('address classes', () => {
  it('names the class of refused addresses, IPv4 and IPv6, mapped and embedded forms included', () => {
    const cases: [string, string | null][] = [
      ['127.0.0.1', 'loopback'],
      ['127.8.9.10', 'loopback'],
      ['10.20.30.40', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['172.32.0.1', null],
      ['192.168.1.1', 'private'],
      ['169.254.169.254', 'link-local'],
      ['224.0.0.1', 'multicast'],
      ['0.0.0.0', 'unspecified'],
      ['8.8.8.8', null],
      ['::1', 'loopback'],
      ['::', 'unspecified'],
      ['fd00::1', 'private'],
      ['fe80::1', 'link-local'],
      ['ff02::1', 'multicast'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['::ffff:a9fe:a9fe', 'link-local'],
      ['64:ff9b::10.0.0.1', 'private'],
      ['2001:4860:4860::8888', null],
    ];
    for (const [a, kind] of cases) expect(addressClass(a), a).toBe(kind);
  });

  it('parses the allow list and refuses a malformed one', () => {
    expect(parseAllowList('example.org, 10.0.0.0/8, 127.0.0.1:8080, [::1]:9000, fd00::/8').length).toBe(5);
    expect(() => parseAllowList('10.0.0.0/33')).toThrow(/prefix length/);
    expect(() => parseAllowList('127.0.0.1:http')).toThrow(/port/);
    expect(() => parseAllowList('not a host')).toThrow(/neither/);
  });
});

describe('outbound requests on behalf of users', () => {
  let dir: string;
  /** Never allowed: reached only through addresses and names the rules refuse. */
  let target: RangeServer;
  /** Listed in XEO_OUTBOUND_ALLOW (by address and port). */
  let allowed: RangeServer;
  let closedPort: number;
  let s: TestServer;
  let token: string;

  const item = (assets: Record<string, string>) => ({
    type: 'Feature',
    stac_version: '1.0.0',
    id: 'x',
    geometry: null,
    properties: { datetime: '2024-01-01T00:00:00Z' },
    links: [],
    assets: Object.fromEntries(Object.entries(assets).map(([k, href]) => [k, { href, type: 'image/tiff; application=geotiff', roles: ['data'] }])),
  });

  beforeAll(async () => {
    dir = tempDir('xeo-outbound-');
    const cog = path.join(dir, 'b.tif');
    const data = new Uint16Array(64 * 64).map((_, i) => 100 + (i % 50));
    await writeCog(cog, { width: 64, height: 64, epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], bands: [data], nodata: 0 });
    writeFileSync(path.join(dir, 'not.tif'), 'this is not a TIFF');
    target = await new RangeServer()
      .file('/b.tif', cog)
      .json('/item.json', item({ b: 'b.tif' }))
      .start();
    allowed = await new RangeServer().start();
    const targetLocal = `127.0.0.1:${new URL(target.url).port}`;
    allowed
      .file('/b.tif', cog)
      .file('/not.tif', path.join(dir, 'not.tif'))
      .json('/good.json', item({ b: `${allowed.url}/b.tif` }))
      .json('/relative.json', item({ b: './b.tif' }))
      .json('/file-asset.json', item({ b: 'file:///etc/hostname' }))
      .json('/scheme-asset.json', item({ b: 'a://b.tif' }))
      .json('/loopback-asset.json', item({ b: `http://${targetLocal}/b.tif` }))
      .json('/localhost-asset.json', item({ b: `http://localhost:${new URL(target.url).port}/b.tif` }))
      .json('/broken-asset.json', item({ b: `${allowed.url}/not.tif` }))
      .json('/missing-asset.json', item({ b: `${allowed.url}/gone.tif` }))
      .redirect('/to-loopback.json', `http://${targetLocal}/item.json`)
      .redirect('/to-good.json', '/good.json');
    // A user's STAC API (on the listed server) whose search leads to the refused target.
    const targetPort = new URL(target.url).port;
    const api = (name: string, searchHref: string, assetHref: string) => {
      allowed
        .json(`/${name}/`, {
          type: 'Catalog',
          id: name,
          stac_version: '1.0.0',
          description: 'x',
          conformsTo: ['https://api.stacspec.org/v1.0.0/item-search'],
          links: [{ rel: 'search', href: searchHref, method: 'POST' }],
        })
        .json(`/${name}/collections/c`, {
          type: 'Collection',
          id: 'c',
          stac_version: '1.0.0',
          links: [
            { rel: 'items', href: `${allowed.url}/${name}/collections/c/items` },
            { rel: 'root', href: `${allowed.url}/${name}/` },
          ],
          item_assets: { b: { type: 'image/tiff; application=geotiff', roles: ['data'], 'eo:bands': [{ name: 'b' }] } },
        })
        .json(`/${name}/search`, {
          type: 'FeatureCollection',
          features: [{ ...item({ b: assetHref }), properties: { datetime: '2024-01-01T00:00:00Z', 'proj:epsg': 32633, 'proj:transform': [10, 0, 600000, 0, -10, 5300000], 'proj:shape': [64, 64] } }],
          links: [],
        });
    };
    api('api-loopback-asset', `${allowed.url}/api-loopback-asset/search`, `http://127.0.0.1:${targetPort}/b.tif`);
    api('api-file-asset', `${allowed.url}/api-file-asset/search`, 'file:///etc/hostname');
    api('api-loopback-search', `http://127.0.0.1:${targetPort}/search`, `${allowed.url}/b.tif`);
    api('api-good', `${allowed.url}/api-good/search`, `${allowed.url}/b.tif`);
    const closed = await new RangeServer().start();
    closedPort = Number(new URL(closed.url).port);
    await closed.stop();
    s = await startServer({ XEO_OUTBOUND_ALLOW: `127.0.0.1:${new URL(allowed.url).port}, 127.0.0.1:${closedPort}` });
    addUser(s.dataDir, 'alice', 'secret-pw-1');
    token = await login(s, 'alice', 'secret-pw-1');
  });
  afterAll(async () => {
    await s?.stop();
    await target?.stop();
    await allowed?.stop();
    if (s) removeDir(s.dataDir);
    removeDir(dir);
  });

  const loadStac = (url: string) =>
    http('POST', `${s.base}/result`, {
      token,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        process: {
          process_graph: {
            l: { process_id: 'load_stac', arguments: { url, spatial_extent: { west: 600000, south: 5299500, east: 600200, north: 5300000, crs: 32633 } } },
            s: { process_id: 'save_result', arguments: { data: { from_node: 'l' }, format: 'GTiff' }, result: true },
          },
        },
      }),
    });

  /** A refused URL: 400 naming the rule, before any request reached the target. */
  async function refused(url: string, rule: RegExp): Promise<string> {
    const before = target.requests;
    const r = await loadStac(url);
    expectError(r, 400, 'ProcessParameterInvalid');
    expect(r.json.message).toMatch(rule);
    expect(r.json.message).not.toMatch(/ECONN|EHOST|ETIMEDOUT|socket/i);
    expect(target.requests, `a request reached the refused target for ${url}`).toBe(before);
    return r.json.message;
  }

  it('refuses other schemes and relative URLs before any I/O, never opening a path', async () => {
    // load_stac's schema (pattern ^https?://) refuses these already, while the graph is checked.
    const schemeRule = /must match pattern "\^https\?:\/\/"/;
    await refused('file:///etc/hostname', schemeRule);
    await refused('a://b/item.json', schemeRule);
    await refused('item.json', schemeRule);
    await refused('/etc/hostname', schemeRule);
  });

  it('refuses loopback, private, link-local, multicast and unspecified addresses, IPv4 and IPv6', async () => {
    const port = new URL(target.url).port;
    await refused(`http://127.0.0.1:${port}/item.json`, /loopback address/);
    await refused(`http://127.1.2.3:${port}/item.json`, /loopback address/);
    await refused('http://10.1.2.3/item.json', /private address/);
    await refused('http://192.168.0.10/item.json', /private address/);
    await refused('http://172.16.4.5/item.json', /private address/);
    await refused('http://169.254.169.254/latest/meta-data/', /link-local address/);
    await refused('http://224.0.0.1/', /multicast address/);
    await refused('http://0.0.0.0:80/', /unspecified address/);
    await refused(`http://[::1]:${port}/item.json`, /loopback address/);
    await refused('http://[fd00::1]/item.json', /private address/);
    await refused('http://[fe80::1]/item.json', /link-local address/);
    await refused(`http://[::ffff:127.0.0.1]:${port}/item.json`, /loopback address/);
    await refused(`http://[::ffff:10.0.0.1]/item.json`, /private address/);
    // A listed address on another port is still refused: the port is part of the entry.
    await refused(`http://127.0.0.1:${port}/b.tif`, /XEO_OUTBOUND_ALLOW/);
  });

  it('checks the address a host name resolves to (localhost is loopback)', async () => {
    await refused(`http://localhost:${new URL(target.url).port}/item.json`, /loopback address/);
  });

  it('checks redirects again', async () => {
    const before = allowed.requests;
    await refused(`${allowed.url}/to-loopback.json`, /loopback address/);
    expect(allowed.requests).toBe(before + 1);
  });

  it('refuses assets of a user-supplied item that are paths, other schemes or refused addresses', async () => {
    await refused(`${allowed.url}/file-asset.json`, /only http\(s\) URLs/);
    await refused(`${allowed.url}/scheme-asset.json`, /only http\(s\) URLs/);
    await refused(`${allowed.url}/loopback-asset.json`, /loopback address/);
    await refused(`${allowed.url}/localhost-asset.json`, /loopback address/);
  });

  it("applies the rules to a user's STAC API: its search and the assets of the items it finds", async () => {
    await refused(`${allowed.url}/api-loopback-asset/collections/c`, /loopback address/);
    await refused(`${allowed.url}/api-file-asset/collections/c`, /only http\(s\) URLs/);
    await refused(`${allowed.url}/api-loopback-search/collections/c`, /loopback address/);
    const before = allowed.hits.length;
    const r = await loadStac(`${allowed.url}/api-good/collections/c`);
    expect(r.status, r.text).toBe(200);
    // It was searched, not paged: the search endpoint answered.
    expect(allowed.hits.slice(before).some((h) => h.path === '/api-good/search')).toBe(true);
  });

  it('reads a listed loopback server, through redirects and relative hrefs', async () => {
    for (const u of ['/good.json', '/to-good.json', '/relative.json']) {
      const r = await loadStac(`${allowed.url}${u}`);
      expect(r.status, r.text).toBe(200);
      expect(r.headers['content-type']).toMatch(/tiff/);
    }
  });

  it('answers an unreadable remote document or asset with a 400 naming the URL and the reason, not a 500', async () => {
    let r = await loadStac(`${allowed.url}/broken-asset.json`);
    expectError(r, 400, 'ProcessParameterInvalid');
    expect(r.json.message).toContain(`${allowed.url}/not.tif`);
    expect(r.json.message).toMatch(/not a readable GeoTIFF/);
    r = await loadStac(`${allowed.url}/missing-asset.json`);
    expectError(r, 400, 'ProcessParameterInvalid');
    expect(r.json.message).toContain(`${allowed.url}/gone.tif`);
    expect(r.json.message).toMatch(/HTTP 404/);
    r = await loadStac(`${allowed.url}/nothing.json`);
    expectError(r, 400, 'ProcessParameterInvalid');
    expect(r.json.message).toMatch(/HTTP 404/);
  });

  it('fails a batch job that names a refused URL with a log line naming the rule', async () => {
    const before = target.requests;
    const jobs = new Jobs(s, token);
    const graph = JSON.parse(
      JSON.stringify({
        l: { process_id: 'load_stac', arguments: { url: `${allowed.url}/loopback-asset.json` } },
        s: { process_id: 'save_result', arguments: { data: { from_node: 'l' }, format: 'GTiff' }, result: true },
      }),
    );
    const job = await jobs.run(graph);
    expect(job.status).toBe('error');
    const logs = await jobs.logs(job.id);
    const line = logs.logs.find((l: any) => l.level === 'error');
    expect(line?.message).toMatch(/loopback address/);
    expect(line?.message).toContain(`127.0.0.1:${new URL(target.url).port}/b.tif`);
    expect(target.requests).toBe(before);
  });

  it('does not tell whether a port is open', async () => {
    const r = await loadStac(`http://127.0.0.1:${closedPort}/item.json`);
    expectError(r, 400, 'ProcessParameterInvalid');
    expect(r.json.message).toMatch(/no answer from the host/);
    expect(r.json.message).not.toMatch(/ECONNREFUSED|connect/);
  });
});
