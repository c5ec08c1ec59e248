// Batch job results: the STAC Item, COGs read back with GDAL (pixels equal to /result of the same
// graph, GDAL's COG validator accepts them), signed links that work without a token and expire,
// Range and HEAD requests, other formats, and results that go with their job.
import { describe, it, expect, beforeAll } from 'vitest';
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startServer, http, expectError, removeDir, zlibLevelByte, addUser, login, type TestServer } from './helpers.js';
import { useDemoServer } from './demo-data.js';
import { hasGdal, hasCogValidator, hasXarray, describeWithTool, itWithTool, run, xarrayRead, COG_VALIDATOR } from './system-tools.js';
import { Jobs, ndviGraph, pixels } from './jobs-helpers.js';
import { openStore } from '../src/store/db.js';

const COG_TYPE = 'image/tiff; application=geotiff; profile=cloud-optimized';

let s: TestServer;
let jobs: Jobs;
let work: string;

useDemoServer({ users: { alice: 'pa' } }, (w) => {
  ({ server: s, work } = w);
  jobs = new Jobs(s, w.tokens.alice);
});

/** Band 1 of a GeoTIFF as Float32 values, read by GDAL. */
function gdalValues(bytes: Buffer): { values: Float32Array; info: any; file: string } {
  const f = path.join(work, `${Math.random().toString(36).slice(2)}.tif`);
  writeFileSync(f, bytes);
  run('gdal_translate', ['-q', '-of', 'ENVI', '-ot', 'Float32', '-b', '1', f, `${f}.bin`]);
  return { values: new Float32Array(new Uint8Array(readFileSync(`${f}.bin`)).buffer), info: JSON.parse(run('gdalinfo', ['-json', f])), file: f };
}

function expectSameValues(got: Float32Array, want: Float32Array): void {
  expect(got.length).toBe(want.length);
  let bad = 0;
  let first = '';
  for (let i = 0; i < want.length; i++) {
    const same = Number.isNaN(got[i]) ? Number.isNaN(want[i]) : got[i] === want[i];
    if (!same && !bad++) first = `at ${i}: ${got[i]} vs ${want[i]}`;
  }
  expect(bad, `${bad} values differ, first ${first}`).toBe(0);
}

/** Runs `graph` as a job and through /result; both results as GDAL reads them. */
async function jobAndSync(graph: object) {
  const job = await jobs.run(graph);
  expect(job.status).toBe('finished');
  const doc = (await jobs.call('GET', `/jobs/${job.id}/results`)).json;
  const fromJob = gdalValues((await http('GET', doc.assets['result.tif'].href)).body);
  const sync = await jobs.call('POST', '/result', { process: { process_graph: graph } });
  expect(sync.status).toBe(200);
  return { job, fromJob, fromSync: gdalValues(sync.body) };
}

describe('the results document', () => {
  let id: string;
  let doc: any;
  beforeAll(async () => {
    const job = await jobs.run(ndviGraph(), { title: 'June NDVI' });
    expect(job.status).toBe('finished');
    id = job.id;
    doc = (await jobs.call('GET', `/jobs/${id}/results`)).json;
  }, 120_000);

  it('is a STAC Item with the data extent, dates, expiry and status', () => {
    expect(doc).toMatchObject({ stac_version: '1.0.0', type: 'Feature', id, geometry: { type: 'Polygon' } });
    const [w, south, e, n] = doc.bbox;
    expect(w).toBeGreaterThan(16.5);
    expect(e).toBeLessThan(17);
    expect(south).toBeLessThan(n);
    expect(doc.properties).toMatchObject({ datetime: expect.stringMatching(/^2024-06/), title: 'June NDVI', 'openeo:status': 'finished' });
    const expires = Date.parse(doc.properties.expires);
    expect(expires).toBeGreaterThan(Date.now() + 6 * 24 * 3600_000);
    expect(doc.links.map((l: any) => l.rel)).toEqual(expect.arrayContaining(['self', 'canonical', 'monitor']));
    expect(doc.links.some((l: any) => /result\.tif/.test(l.href))).toBe(false);
  });

  it('describes the COG asset: media type, roles, projection and raster bands', () => {
    const a = doc.assets['result.tif'];
    expect(a).toMatchObject({
      type: COG_TYPE,
      roles: ['data'],
      'proj:epsg': 32633,
      'proj:shape': [1536, 2048],
      'proj:transform': [10, 0, 620000, 0, -10, 5320000],
      'proj:bbox': [620000, 5304640, 640480, 5320000],
    });
    expect(a['file:size']).toBeGreaterThan(1000);
    expect(a['raster:bands']).toHaveLength(1);
    expect(a['raster:bands'][0]).toMatchObject({ data_type: 'float32', nodata: 'nan', spatial_resolution: 10 });
    const st = a['raster:bands'][0].statistics;
    expect(st.minimum).toBeGreaterThanOrEqual(-1);
    expect(st.maximum).toBeLessThanOrEqual(1);
    expect(st.valid_percent).toBeGreaterThan(50);
  });

  it('links the signed document itself (canonical), readable without a token', async () => {
    const canonical = doc.links.find((l: any) => l.rel === 'canonical').href;
    const r = await http('GET', canonical);
    expect(r.status).toBe(200);
    expect(r.json.id).toBe(id);
    expect(r.json.assets['result.tif'].href).toBe(doc.assets['result.tif'].href);
    expect(r.headers.expires).toBe(new Date(doc.properties.expires).toUTCString());
    const geo = await http('GET', canonical, { headers: { accept: 'application/geo+json' } });
    expect(geo.headers['content-type']).toBe('application/geo+json');
  });

  it('serves the file by its signed link without a token, with HEAD and Range requests', async () => {
    const href = doc.assets['result.tif'].href;
    const full = await http('GET', href);
    expect(full.status).toBe(200);
    expect(full.headers['content-type']).toBe(COG_TYPE);
    expect(full.headers['accept-ranges']).toBe('bytes');
    const size = full.body.length;
    expect(size).toBe(doc.assets['result.tif']['file:size']);
    const head = await http('HEAD', href);
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String(size));
    expect(head.body.length).toBe(0);
    const first = await http('GET', href, { headers: { range: 'bytes=0-99' } });
    expect(first.status).toBe(206);
    expect(first.headers['content-range']).toBe(`bytes 0-99/${size}`);
    expect(first.body.equals(full.body.subarray(0, 100))).toBe(true);
    const middle = await http('GET', href, { headers: { range: 'bytes=1000-1999' } });
    expect(middle.body.equals(full.body.subarray(1000, 2000))).toBe(true);
    const last = await http('GET', href, { headers: { range: 'bytes=-10' } });
    expect(last.status).toBe(206);
    expect(last.headers['content-range']).toBe(`bytes ${size - 10}-${size - 1}/${size}`);
    expect(last.body.equals(full.body.subarray(size - 10))).toBe(true);
    const beyond = await http('GET', href, { headers: { range: `bytes=${size}-` } });
    expectError(beyond, 416, 'RangeNotSatisfiable');
    expect(beyond.headers['content-range']).toBe(`bytes */${size}`);
    const several = await http('GET', href, { headers: { range: 'bytes=0-1,5-6' } });
    expect(several.status).toBe(200);
    expect(several.body.length).toBe(size);
  });

  it('refuses links that were changed (404) or have expired (410 ResultLinkExpired)', async () => {
    const href: string = doc.assets['result.tif'].href;
    const u = new URL(href);
    const sig = u.searchParams.get('signature')!;
    const tampered = new URL(href);
    tampered.searchParams.set('signature', (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1));
    expectError(await http('GET', tampered.href), 404, 'NotFound');
    const later = new URL(href);
    later.searchParams.set('expires', String(Number(u.searchParams.get('expires')) + 3600));
    expectError(await http('GET', later.href), 404, 'NotFound');
    expectError(await http('GET', href.replace('/result.tif?', '/other.tif?')), 404, 'NotFound');
    expectError(await http('GET', href.replace(`/download/${id}/`, '/download/j-someone-else/')), 404, 'NotFound');
    // a link signed with the server's key that expired a minute ago
    const records = await openStore(s.dataDir);
    const key = Buffer.from(await records.secrets.getOrCreate('result-links', () => 'the server made none'), 'hex');
    await records.close();
    const past = Math.floor(Date.now() / 1000) - 60;
    const signature = createHmac('sha256', key).update(`xeo-result-link\n${id}\nresult.tif\n${past}`).digest('base64url');
    const expired = await http('GET', `${s.base}/download/${id}/result.tif?expires=${past}&signature=${signature}`);
    expectError(expired, 410, 'ResultLinkExpired');
    // the results endpoint itself always hands out fresh links
    const again = (await jobs.call('GET', `/jobs/${id}/results`)).json;
    expect((await http('HEAD', again.assets['result.tif'].href)).status).toBe(200);
  });
});

describeWithTool(hasGdal && hasCogValidator, 'GDAL', 'job COGs read back with GDAL', () => {
  it('equal /result of the same graph pixel for pixel, and are valid COGs with overviews', async () => {
    const { fromJob, fromSync } = await jobAndSync(ndviGraph());
    expect(fromJob.info.size).toEqual([2048, 1536]);
    expect(fromJob.info.geoTransform).toEqual(fromSync.info.geoTransform);
    expect(fromJob.info.coordinateSystem.wkt).toMatch(/UTM zone 33N/);
    expect(fromJob.info.bands[0].overviews.length).toBeGreaterThanOrEqual(2);
    expectSameValues(fromJob.values, fromSync.values);
    const check = run(COG_VALIDATOR[0], [...COG_VALIDATOR[1], fromJob.file]);
    expect(check).toMatch(/is a valid cloud optimized GeoTIFF/);
  }, 120_000);

  it('of an extent in degrees over the UTM scene equal /result up to its edge rows and columns', async () => {
    // The grid of a 4326 extent snaps outward to the scene's pixels, so its edge pixels only partly
    // overlap the extent: every chunk of the job must fill them as /result does.
    const graph = {
      l: {
        process_id: 'load_collection',
        arguments: { id: 'DEMO_S2_L2A', spatial_extent: { west: 16.72, south: 47.91, east: 16.74, north: 47.92 }, temporal_extent: ['2024-06-01', '2024-07-01'], bands: ['B04'] },
      },
      r: {
        process_id: 'reduce_dimension',
        arguments: { data: { from_node: 'l' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
      },
      s: { process_id: 'save_result', arguments: { data: { from_node: 'r' }, format: 'GTiff' }, result: true },
    };
    const { fromJob, fromSync } = await jobAndSync(graph);
    expect(fromJob.info.geoTransform).toEqual(fromSync.info.geoTransform);
    expect(fromSync.values.some(Number.isNaN)).toBe(false);
    expectSameValues(fromJob.values, fromSync.values);
  }, 120_000);

  it('are read by GDAL straight from the signed link, with range requests, at their deflate_level', async () => {
    const graph = ndviGraph(pixels(0, 0, 1024, 1024));
    Object.assign(graph.s.arguments, { options: { deflate_level: 1 } });
    const job = await jobs.run(graph);
    const doc = (await jobs.call('GET', `/jobs/${job.id}/results`)).json;
    expect(zlibLevelByte((await http('GET', doc.assets['result.tif'].href)).body)).toBe(0x01);
    const info = JSON.parse(run('gdalinfo', ['-json', '-stats', `/vsicurl/${doc.assets['result.tif'].href}`]));
    expect(info.size).toEqual([1024, 1024]);
    expect(Number(info.bands[0].metadata[''].STATISTICS_MAXIMUM)).toBeLessThanOrEqual(1);
  }, 120_000);

  it('of a graph that cannot be cut (apply_kernel) equal /result too', async () => {
    const graph = {
      l: { process_id: 'load_collection', arguments: { id: 'DEMO_S2_L2A', spatial_extent: pixels(500, 500, 300, 200), temporal_extent: ['2024-06-01', '2024-07-01'], bands: ['B08'] } },
      k: {
        process_id: 'apply_kernel',
        arguments: {
          data: { from_node: 'l' },
          kernel: [
            [1, 2, 1],
            [2, 4, 2],
            [1, 2, 1],
          ],
          factor: 1 / 16,
        },
      },
      s: { process_id: 'save_result', arguments: { data: { from_node: 'k' }, format: 'GTiff' }, result: true },
    };
    const { job, fromJob, fromSync } = await jobAndSync(graph);
    expectSameValues(fromJob.values, fromSync.values);
    expect((await jobs.logs(job.id)).logs.map((l: any) => l.message)).toContainEqual(expect.stringMatching(/runs as one piece: node 'k' \(apply_kernel\) looks beyond each pixel/));
  }, 120_000);

  /** The netCDF result of a small job, fetched once for the tests that read it. */
  let netcdf: Promise<string> | undefined;
  const netcdfResult = () =>
    (netcdf ??= (async () => {
      const job = await jobs.run(ndviGraph(pixels(0, 0, 256, 128), 'netCDF'));
      const doc = (await jobs.call('GET', `/jobs/${job.id}/results`)).json;
      const a = doc.assets['result.nc'];
      expect(a.type).toBe('application/x-netcdf');
      const f = path.join(work, 'r.nc');
      writeFileSync(f, (await http('GET', a.href)).body);
      return f;
    })());

  it('in netCDF when the graph asks for it', async () => {
    expect(run('gdalinfo', [await netcdfResult()])).toMatch(/netCDF/);
  }, 120_000);

  itWithTool(hasXarray, 'xarray and netCDF4 (python3-xarray, python3-netcdf4)', 'in netCDF as xarray reads the reference back-end’s', async () => {
    // The NDVI has no bands dimension: one variable named var, as the reference back-end writes it.
    const [nc] = xarrayRead([await netcdfResult()]);
    expect(Object.keys(nc.vars)).toEqual(['var']);
    expect(nc.vars.var.dims.slice(-2)).toEqual(['y', 'x']);
  });
});

describe('other results', () => {
  it('a graph without data gives its JSON value as the result, unlocated', async () => {
    const job = await jobs.run({ a: { process_id: 'add', arguments: { x: 1, y: 2 } }, m: { process_id: 'multiply', arguments: { x: { from_node: 'a' }, y: 7 }, result: true } });
    expect(job.status).toBe('finished');
    const doc = (await jobs.call('GET', `/jobs/${job.id}/results`)).json;
    expect(doc.geometry).toBeNull();
    expect(doc.bbox).toBeUndefined();
    expect(doc.properties.datetime).toEqual(expect.any(String));
    const a = doc.assets['result.json'];
    expect(a.type).toBe('application/json');
    expect((await http('GET', a.href)).json).toBe(21);
  }, 60_000);

  it('are deleted with their job, and their links stop working', async () => {
    const job = await jobs.run(ndviGraph(pixels(0, 0, 128, 128)));
    const doc = (await jobs.call('GET', `/jobs/${job.id}/results`)).json;
    const dir = path.join(s.dataDir, 'jobs', job.id);
    expect(existsSync(path.join(dir, 'result.tif'))).toBe(true);
    expect((await jobs.call('DELETE', `/jobs/${job.id}`)).status).toBe(204);
    expect(existsSync(dir)).toBe(false);
    expectError(await http('GET', doc.assets['result.tif'].href), 404, 'NotFound');
    expectError(await http('GET', doc.links.find((l: any) => l.rel === 'canonical').href), 404, 'NotFound');
  }, 60_000);
});

describe('link lifetime', () => {
  it('is configurable: with XEO_RESULT_LINK_TTL=2 links answer 410 after two seconds', async () => {
    const short = await startServer({ XEO_RESULT_LINK_TTL: '2' });
    try {
      addUser(short.dataDir, 'carol', 'pc');
      const j = new Jobs(short, await login(short, 'carol', 'pc'));
      const job = await j.run({ a: { process_id: 'add', arguments: { x: 1, y: 1 }, result: true } });
      const doc = (await j.call('GET', `/jobs/${job.id}/results`)).json;
      expect(Date.parse(doc.properties.expires) - Date.now()).toBeLessThanOrEqual(2000);
      const href = doc.assets['result.json'].href;
      expect((await http('GET', href)).json).toBe(2);
      await new Promise((r) => setTimeout(r, 3100));
      expectError(await http('GET', href), 410, 'ResultLinkExpired');
      expectError(await http('GET', doc.links.find((l: any) => l.rel === 'canonical').href), 410, 'ResultLinkExpired');
    } finally {
      await short.stop();
      removeDir(short.dataDir);
    }
  }, 60_000);
});
