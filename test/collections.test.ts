// The collections API over HTTP, on the demo collection, and the demo data itself read back with GDAL.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { startServer, http, expectError, removeDir, tempDir, type TestServer } from './helpers.js';
import { demoDataDir } from './demo-data.js';
import { hasGdal, hasCogValidator, COG_VALIDATOR, describeWithTool, itWithTool, run } from './system-tools.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer({}, await demoDataDir());
}, 120_000);
afterAll(async () => {
  await s.stop();
  removeDir(s.dataDir);
});

const DEMO = 'DEMO_S2_L2A';

describe('collections API', () => {
  it('lists the demo collection first, without the heavy members', async () => {
    const r = await http('GET', `${s.base}/collections`);
    expect(r.status).toBe(200);
    const c = r.json.collections[0];
    expect(c).toMatchObject({ id: DEMO, type: 'Collection', stac_version: '1.0.0', license: 'CC0-1.0' });
    expect(c['cube:dimensions']).toBeUndefined();
    expect(c.summaries).toBeUndefined();
    expect(r.json.links).toEqual(expect.any(Array));
  });

  it('describes the demo collection as STAC 1.0 with the datacube extension', async () => {
    const c = (await http('GET', `${s.base}/collections/${DEMO}`)).json;
    expect(c.stac_extensions).toContain('https://stac-extensions.github.io/datacube/v2.2.0/schema.json');
    expect(c.description).toMatch(/synthetic/i);
    expect(c.providers[0].name).toBe('Xeo');
    const [w, so, e, n] = c.extent.spatial.bbox[0];
    // 20 km east of 620000 E, south of 5320000 N in UTM 33N: around 16.6 E, 47.9 N
    expect(w).toBeGreaterThan(16.5);
    expect(e).toBeLessThan(17);
    expect(so).toBeGreaterThan(47.7);
    expect(n).toBeLessThan(48.1);
    expect(e - w).toBeGreaterThan(0.25);
    expect(c.extent.temporal.interval).toEqual([['2024-03-18T10:00:00Z', '2024-10-24T10:00:00Z']]);
    const dims = c['cube:dimensions'];
    expect(dims.x).toEqual({ type: 'spatial', axis: 'x', extent: [620000, 640480], step: 10, reference_system: 32633 });
    expect(dims.y).toEqual({ type: 'spatial', axis: 'y', extent: [5299520, 5320000], step: 10, reference_system: 32633 });
    expect(dims.t.type).toBe('temporal');
    expect(dims.t.values).toHaveLength(8);
    expect(dims.bands.values).toEqual(['B02', 'B03', 'B04', 'B08', 'SCL']);
    expect(c.summaries['eo:bands'].find((b: any) => b.name === 'B08')).toMatchObject({ common_name: 'nir', center_wavelength: 0.842 });
    expect(c.summaries['proj:epsg']).toEqual([32633]);
    const rels = c.links.map((l: any) => l.rel);
    expect(rels).toEqual(expect.arrayContaining(['self', 'root', 'parent', 'http://www.opengis.net/def/rel/ogc/1.0/queryables']));
  });

  it('serves queryables as JSON Schema (1.2.0 only)', async () => {
    const r = await http('GET', `${s.base}/collections/${DEMO}/queryables`);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/schema+json');
    expect(r.json.properties['eo:cloud_cover']).toMatchObject({ type: 'number', minimum: 0, maximum: 100 });
    expect(r.json.$schema).toMatch(/json-schema.org/);
    expectError(await http('GET', `${s.url}/1.0.1/collections/${DEMO}/queryables`), 404, 'NotFound');
    const old = (await http('GET', `${s.url}/1.0.1/collections/${DEMO}`)).json;
    expect(old.links.map((l: any) => l.rel)).not.toContain('http://www.opengis.net/def/rel/ogc/1.0/queryables');
  });

  it('uses the version profile for stac_version', async () => {
    expect((await http('GET', `${s.url}/1.0.0-rc.2/collections/${DEMO}`)).json.stac_version).toBe('0.9.0');
  });

  it('answers unknown collections with CollectionNotFound', async () => {
    expectError(await http('GET', `${s.base}/collections/NOPE`), 404, 'CollectionNotFound');
    expectError(await http('GET', `${s.base}/collections/%E0%A4%A`), 404, 'CollectionNotFound');
  });

  it('lists collections in GET / endpoints and the STAC conformance classes', async () => {
    const caps = (await http('GET', `${s.base}/`)).json;
    expect(caps.endpoints).toContainEqual({ path: '/collections/{collection_id}/queryables', methods: ['GET'] });
    expect(caps.conformsTo).toContain('https://api.stacspec.org/v1.0.0/collections');
  });
});

describeWithTool(hasGdal, 'GDAL', 'demo data read back with GDAL', () => {
  let items: { datetime: string; assets: Record<string, { href: string }> }[];
  beforeAll(() => {
    const db = new Database(path.join(s.dataDir, 'xeo.sqlite'), { readonly: true });
    items = (db.prepare('SELECT body FROM items WHERE collection_id = ? ORDER BY datetime').all(DEMO) as { body: string }[]).map((r) => JSON.parse(r.body));
    db.close();
  });

  /** A band of one date as numbers, read by GDAL. */
  function pixels(date: string, band: string): Uint16Array | Uint8Array {
    const item = items.find((i) => i.datetime.startsWith(date))!;
    const out = path.join(tempDir(), `${band}.bin`);
    run('gdal_translate', ['-q', '-of', 'ENVI', item.assets[band].href, out]);
    const buf = readFileSync(out);
    removeDir(path.dirname(out));
    return band === 'SCL' ? new Uint8Array(buf) : new Uint16Array(buf.buffer, buf.byteOffset, buf.length / 2);
  }

  it('is one COG per band and date, in UTM 33N, 2048 x 2048 at 10 m, with overviews', () => {
    expect(items).toHaveLength(8);
    for (const item of items) {
      for (const band of ['B02', 'B03', 'B04', 'B08', 'SCL']) {
        const info = JSON.parse(run('gdalinfo', ['-json', item.assets[band].href]));
        expect(info.size).toEqual([2048, 2048]);
        expect(info.stac['proj:epsg']).toBe(32633);
        expect(info.geoTransform).toEqual([620000, 10, 0, 5320000, 0, -10]);
        expect(info.metadata.IMAGE_STRUCTURE.LAYOUT).toBe('COG');
        expect(info.bands[0].type).toBe(band === 'SCL' ? 'Byte' : 'UInt16');
        expect(info.bands[0].noDataValue).toBe(0);
        expect(info.bands[0].overviews.map((o: any) => o.size[0])).toEqual([1024, 512, 256]);
      }
    }
  });

  itWithTool(hasCogValidator, 'the GDAL COG validator (python3-gdal)', "passes GDAL's COG layout check", () => {
    for (const band of ['B04', 'SCL']) {
      const out = run(COG_VALIDATOR[0], [...COG_VALIDATOR[1], '--full-check=yes', items[6].assets[band].href]);
      expect(out).toMatch(/is a valid cloud optimized GeoTIFF/);
    }
  });

  it('has realistic reflectance, clouds, shadows, water, nodata and a growing season', () => {
    const classes = (a: Uint8Array) => new Set(a);
    const cloudy = classes(pixels('2024-09-19', 'SCL') as Uint8Array);
    for (const c of [3, 4, 5, 6, 8, 9]) expect(cloudy.has(c), `class ${c}`).toBe(true);
    expect(classes(pixels('2024-05-27', 'SCL') as Uint8Array).has(0)).toBe(true);
    expect(classes(pixels('2024-06-21', 'SCL') as Uint8Array).has(9)).toBe(false);
    const medianNdvi = (date: string) => {
      const red = pixels(date, 'B04');
      const nir = pixels(date, 'B08');
      const scl = pixels(date, 'SCL');
      const v: number[] = [];
      for (let i = 0; i < red.length; i += 7) if (scl[i] === 4 || scl[i] === 5) v.push((nir[i] - red[i]) / (nir[i] + red[i]));
      v.sort((a, b) => a - b);
      return v[v.length >> 1];
    };
    const march = medianNdvi('2024-03-18');
    const june = medianNdvi('2024-06-21');
    const october = medianNdvi('2024-10-24');
    expect(june).toBeGreaterThan(march + 0.1);
    expect(june).toBeGreaterThan(october + 0.1);
    const red = pixels('2024-06-21', 'B04');
    let min = Infinity;
    let max = -Infinity;
    for (const x of red) {
      if (x < min) min = x;
      if (x > max) max = x;
    }
    expect(min).toBeGreaterThanOrEqual(1);
    expect(max).toBeLessThanOrEqual(10000);
  });
});
