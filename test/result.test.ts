// POST /result end to end on the demo collection: every output format, and values checked against
// what this test computes itself from the source COGs, read with GDAL (not with our reader).
import { describe, it, expect } from 'vitest';
import path from 'node:path';
import { createReadStream, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import proj4 from 'proj4';
import { http, expectError, zlibLevelByte, type TestServer } from './helpers.js';
import { useDemoServer } from './demo-data.js';
import { hasGdal, describeWithTool, run } from './system-tools.js';

const DEMO = 'DEMO_S2_L2A';
const UTM = '+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs';
let s: TestServer;
let token: string;
let items: { datetime: string; bbox: number[]; assets: Record<string, { href: string }> }[];
let work: string;

// The STAC test serves its documents from loopback, which users may reach only when listed.
useDemoServer({ env: { XEO_OUTBOUND_ALLOW: '127.0.0.1' }, users: { alice: 'pa' } }, (w) => {
  ({ server: s, items, work } = w);
  token = w.tokens.alice;
});

const result = (body: unknown, auth = token) => http('POST', `${s.base}/result`, { token: auth, body: JSON.stringify(body) });

// A 64 x 48 pixel window of the demo scene, given in UTM metres on pixel edges.
const COL = 700;
const ROW = 900;
const W = 64;
const H = 48;
const X0 = 620000;
const Y0 = 5320000;
const bbox = { west: X0 + COL * 10, east: X0 + (COL + W) * 10, north: Y0 - ROW * 10, south: Y0 - (ROW + H) * 10, crs: 32633 };

/** A window of a source band, read by GDAL, as floats (0 = nodata -> NaN). */
function gdalWindow(href: string, col = COL, row = ROW, w = W, h = H): Float32Array {
  const out = path.join(work, `w-${Math.random().toString(36).slice(2)}.bin`);
  run('gdal_translate', ['-q', '-of', 'ENVI', '-ot', 'Float32', '-srcwin', String(col), String(row), String(w), String(h), href, out]);
  const v = new Float32Array(new Uint8Array(readFileSync(out)).buffer);
  return v.map((x) => (x === 0 ? NaN : x));
}

/** Band 1 of a file we answered, read by GDAL. */
function gdalRead(bytes: Buffer, ext: string, band = 1): { values: Float32Array; info: any } {
  const f = path.join(work, `r-${Math.random().toString(36).slice(2)}.${ext}`);
  writeFileSync(f, bytes);
  const out = `${f}.bin`;
  run('gdal_translate', ['-q', '-of', 'ENVI', '-ot', 'Float32', '-b', String(band), f, out]);
  return { values: new Float32Array(new Uint8Array(readFileSync(out)).buffer), info: JSON.parse(run('gdalinfo', ['-json', f])) };
}

const close = (a: number, b: number, tol = 1e-5) => (Number.isNaN(a) && Number.isNaN(b)) || Math.abs(a - b) <= tol * Math.max(1, Math.abs(b));
function expectValues(got: ArrayLike<number | null>, want: ArrayLike<number>, tol = 1e-5): void {
  expect(got.length).toBe(want.length);
  let bad = 0;
  let example = '';
  for (let i = 0; i < want.length; i++) {
    const g = got[i] === null ? NaN : (got[i] as number);
    if (!close(g, want[i], tol)) {
      if (!bad) example = `at ${i}: got ${g}, want ${want[i]}`;
      bad++;
    }
  }
  expect(bad, `${bad} values differ, first ${example}`).toBe(0);
}

const load = (temporal: [string, string], bands: string[]) => ({
  process_id: 'load_collection',
  arguments: { id: DEMO, spatial_extent: bbox, temporal_extent: temporal, bands },
});
const JUNE = ['2024-06-01', '2024-07-01'] as [string, string];
const itemOf = (month: string) => items.find((i) => i.datetime.startsWith(month))!;

describe('POST /result basics', () => {
  it('answers a one-node graph as JSON, in both body forms', async () => {
    const graph = { a: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } };
    const r = await result({ process: { process_graph: graph } });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/application\/json/);
    expect(r.json).toBe(3);
    expect(r.headers['xeo-costs']).toBe('0');
    expect((await result({ process_graph: graph })).json).toBe(3);
  });

  it('refuses bad requests with catalogue codes', async () => {
    expectError(await result({ process_graph: { a: { process_id: 'add', arguments: { x: 1 }, result: true } } }), 400, 'ProcessParameterRequired');
    expectError(await result({ process_graph: { a: { process_id: 'nope', arguments: {}, result: true } } }), 400, 'ProcessUnsupported');
    expectError(await result({ nothing: 1 }), 400, 'ProcessGraphMissing');
    expectError(await result({ process_graph: { a: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } } }, ''), 401, 'AuthenticationRequired');
    expectError(await result({ process_graph: { a: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } }, plan: 'gold' }), 400, 'BillingPlanInvalid');
    const badFormat = { l: load(JUNE, ['B04']), s: { process_id: 'save_result', arguments: { data: { from_node: 'l' }, format: 'BMP' }, result: true } };
    expectError(await result({ process_graph: badFormat }), 400, 'ProcessParameterInvalid');
    const badOption = { l: load(JUNE, ['B04']), s: { process_id: 'save_result', arguments: { data: { from_node: 'l' }, format: 'png', options: { colourmap: 'x' } }, result: true } };
    expectError(await result({ process_graph: badOption }), 400, 'ProcessParameterInvalid');
    // a process exception of a definition keeps its own code
    const element = { a: { process_id: 'array_element', arguments: { data: [1, 2], index: 5 }, result: true } };
    expectError(await result({ process_graph: element }), 400, 'ArrayElementNotAvailable');
    const noData = { l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: bbox, temporal_extent: ['2020-01-01', '2020-02-01'] }, result: true } };
    expectError(await result({ process_graph: noData }), 400, 'NoDataAvailable');
  });

  it('points to batch jobs when the request is too large for synchronous processing', async () => {
    const all = { l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: null, temporal_extent: null }, result: true } };
    const r = await result({ process_graph: all });
    expectError(r, 400, 'ProcessGraphComplexity');
    expect(r.json.message).toMatch(/batch job/);
    // a budget that pays for less than the load is refused before anything is read
    const ndvi = { l: load(JUNE, ['B04', 'B08']), n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } }, result: true } };
    expectError(await result({ process_graph: ndvi, budget: 0.000001 }), 402, 'PaymentRequired');
    expect((await result({ process_graph: ndvi, budget: 1 })).status).toBe(200);
    expectError(await result({ process_graph: ndvi, budget: -1 }), 400, 'BudgetInvalid');
  });

  it('filters items by their properties with child processes', async () => {
    const graph = {
      l: {
        process_id: 'load_collection',
        arguments: {
          id: DEMO,
          spatial_extent: bbox,
          temporal_extent: null,
          bands: ['B04'],
          properties: { 'eo:cloud_cover': { process_graph: { c: { process_id: 'lte', arguments: { x: { from_parameter: 'value' }, y: 5 }, result: true } } } },
        },
      },
      d: { process_id: 'dimension_labels', arguments: { data: { from_node: 'l' }, dimension: 't' }, result: true },
    };
    const r = await result({ process_graph: graph });
    expect(r.status, r.text).toBe(200);
    const want = items.filter((it: any) => it.properties['eo:cloud_cover'] <= 5).map((it) => it.datetime);
    expect(want.length).toBeGreaterThan(1);
    expect(want.length).toBeLessThan(items.length);
    expect(r.json).toEqual(want);
  });

  it('lists exactly the formats it writes', async () => {
    const r = await http('GET', `${s.base}/file_formats`);
    expect(Object.keys(r.json.output).sort()).toEqual(['CSV', 'GTiff', 'GeoJSON', 'JPEG', 'JSON', 'PNG', 'Parquet', 'netCDF']);
    expect(Object.keys(r.json.input)).toEqual(['GTiff', 'GeoJSON', 'FlatGeobuf', 'Parquet', 'CSV']);
    expect(r.json.output.PNG.parameters.colormap.enum).toContain('viridis');
  });
});

describeWithTool(hasGdal, 'gdal', 'POST /result on the demo data, checked with GDAL', () => {
  const june = () => itemOf('2024-06');
  const ndviWant = () => {
    const red = gdalWindow(june().assets.B04.href);
    const nir = gdalWindow(june().assets.B08.href);
    return red.map((r, i) => (nir[i] - r) / (nir[i] + r));
  };
  const ndviGraph = (format: string, options: Record<string, unknown> = {}) => ({
    l: load(JUNE, ['B04', 'B08']),
    n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
    s: { process_id: 'save_result', arguments: { data: { from_node: 'n' }, format, options }, result: true },
  });

  it('computes an NDVI as a Cloud-Optimized GeoTIFF on the right grid', async () => {
    const r = await result({ process_graph: ndviGraph('gtiff') });
    expect(r.status, r.text).toBe(200);
    expect(r.headers['content-type']).toBe('image/tiff; application=geotiff; profile=cloud-optimized');
    expect(Number(r.headers['xeo-costs'])).toBeGreaterThan(0);
    const { values, info } = gdalRead(r.body, 'tif');
    expect(info.size).toEqual([W, H]);
    expect(info.geoTransform).toEqual([bbox.west, 10, 0, bbox.north, 0, -10]);
    expect(info.coordinateSystem.wkt).toMatch(/UTM zone 33N/);
    expectValues(values, ndviWant());
  });

  it('deflates the COG at level 4 unless deflate_level says otherwise', async () => {
    const sizes: number[] = [];
    for (const [options, byte] of [
      [{}, 0x5e],
      [{ deflate_level: 9 }, 0xda],
      [{ deflate_level: 1 }, 0x01],
    ] as const) {
      const r = await result({ process_graph: ndviGraph('GTiff', options) });
      expect(r.status, r.text).toBe(200);
      expect(zlibLevelByte(r.body)).toBe(byte);
      expectValues(gdalRead(r.body, 'tif').values, ndviWant());
      sizes.push(r.body.length);
    }
    expect(sizes[1]).toBeLessThan(sizes[2]);
    const bad = await result({ process_graph: ndviGraph('GTiff', { deflate_level: 0 }) });
    expectError(bad, 400, 'ProcessParameterInvalid');
    expect(bad.json.message).toMatch(/deflate_level.*1\.\.9/);
  });

  it('computes the same NDVI with reduce_dimension over bands (a band-math child graph)', async () => {
    const graph = {
      l: load(JUNE, ['B04', 'B08']),
      r: {
        process_id: 'reduce_dimension',
        arguments: {
          data: { from_node: 'l' },
          dimension: 'bands',
          reducer: {
            process_graph: {
              red: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, label: 'B04' } },
              nir: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: 1 } },
              nd: { process_id: 'normalized_difference', arguments: { x: { from_node: 'nir' }, y: { from_node: 'red' } }, result: true },
            },
          },
        },
      },
      s: { process_id: 'save_result', arguments: { data: { from_node: 'r' }, format: 'GTiff' }, result: true },
    };
    const r = await result({ process_graph: graph });
    expect(r.status, r.text).toBe(200);
    expectValues(gdalRead(r.body, 'tif').values, ndviWant());
  });

  it('loads the same scene from a STAC ItemCollection over HTTP with load_stac', async () => {
    // A loopback STAC server: an ItemCollection of two dates whose assets are the demo COGs,
    // served with range requests.
    const files = new Map<string, string>();
    const features = items.slice(2, 4).map((it) => {
      const assets: Record<string, unknown> = {};
      for (const band of ['B04', 'B08']) {
        const name = `/data/${it.datetime.slice(0, 10)}/${band}.tif`;
        files.set(name, it.assets[band].href);
        assets[band] = { href: `..${name}`, type: 'image/tiff; application=geotiff; profile=cloud-optimized', roles: ['data'] };
      }
      return { type: 'Feature', stac_version: '1.0.0', id: it.datetime, properties: { datetime: it.datetime }, geometry: null, assets, links: [] };
    });
    const server: Server = createServer((req, res) => {
      if (req.url === '/stac/items.json') return void res.writeHead(200, { 'content-type': 'application/geo+json' }).end(JSON.stringify({ type: 'FeatureCollection', features }));
      const file = files.get(req.url ?? '');
      if (!file) return void res.writeHead(404).end();
      const size = statSync(file).size;
      const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
      if (!m) return void createReadStream(file).pipe(res.writeHead(200, { 'content-length': size }));
      const start = Number(m[1]);
      const end = Math.min(size - 1, Number(m[2]));
      createReadStream(file, { start, end }).pipe(res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': end - start + 1 }));
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/stac/items.json`;
      const graph = {
        l: { process_id: 'load_stac', arguments: { url, spatial_extent: bbox, temporal_extent: JUNE, bands: ['B04', 'B08'] } },
        r: {
          process_id: 'reduce_dimension',
          arguments: {
            data: { from_node: 'l' },
            dimension: 'bands',
            reducer: {
              process_graph: {
                nd: { process_id: 'normalized_difference', arguments: { x: { from_node: 'n' }, y: { from_node: 'r' } }, result: true },
                n: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, label: 'B08' } },
                r: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, label: 'B04' } },
              },
            },
          },
        },
        s: { process_id: 'save_result', arguments: { data: { from_node: 'r' }, format: 'GTiff' }, result: true },
      };
      const r = await result({ process_graph: graph });
      expect(r.status, r.text).toBe(200);
      expectValues(gdalRead(r.body, 'tif').values, ndviWant());
      const missing = await result({ process_graph: { l: { process_id: 'load_stac', arguments: { url: url.replace('items', 'nothing') }, result: true } } });
      expectError(missing, 400, 'ProcessParameterInvalid');
    } finally {
      await new Promise<void>((ok) => server.close(() => ok()));
    }
  });

  it('renders the NDVI as PNG and JPEG, and writes netCDF that GDAL reads with its CRS', async () => {
    const png = await result({ process_graph: ndviGraph('PNG', { colormap: 'ndvi', min: -1, max: 1 }) });
    expect(png.status, png.text).toBe(200);
    expect(png.headers['content-type']).toBe('image/png');
    const pngInfo = gdalRead(png.body, 'png').info;
    expect(pngInfo.size).toEqual([W, H]);
    // One band: an indexed image whose palette GDAL reads as the band's colour table, with
    // entry 0 transparent for no-data.
    expect(pngInfo.bands).toHaveLength(1);
    expect(pngInfo.bands[0].colorInterpretation).toBe('Palette');
    expect(pngInfo.bands[0].colorTable.entries[0][3]).toBe(0);
    expect(pngInfo.bands[0].colorTable.entries[255][3]).toBe(255);

    const jpeg = await result({ process_graph: ndviGraph('jpeg') });
    expect(jpeg.status, jpeg.text).toBe(200);
    expect(jpeg.headers['content-type']).toBe('image/jpeg');
    expect(gdalRead(jpeg.body, 'jpg').info.size).toEqual([W, H]);

    const nc = await result({ process_graph: ndviGraph('netcdf') });
    expect(nc.status, nc.text).toBe(200);
    expect(nc.headers['content-type']).toBe('application/x-netcdf');
    const f = path.join(work, 'ndvi.nc');
    writeFileSync(f, nc.body);
    const info = JSON.parse(run('gdalinfo', ['-json', f]));
    expect(JSON.stringify(info)).toMatch(/32633|UTM zone 33N/);
  });

  it('reduces time: a mean composite of the red band, nodata ignored', async () => {
    const graph = {
      l: load(['2024-03-01', '2024-11-01'], ['B04']),
      m: {
        process_id: 'reduce_dimension',
        arguments: { data: { from_node: 'l' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
        result: true,
      },
    };
    const r = await result({ process_graph: graph });
    expect(r.status, r.text).toBe(200);
    expect(r.json.dimensions.map((d: any) => d.name)).toEqual(['bands', 'y', 'x']);
    const stacks = items.map((it) => gdalWindow(it.assets.B04.href));
    const want = new Float32Array(W * H).map((_, i) => {
      const v = stacks.map((s) => s[i]).filter((x) => !Number.isNaN(x));
      return v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN;
    });
    expectValues(r.json.data.flat(2), want);
  });

  it('masks clouds with the scene classification, then takes the mean over time', async () => {
    const graph = {
      red: load(['2024-03-01', '2024-11-01'], ['B04']),
      scl: load(['2024-03-01', '2024-11-01'], ['SCL']),
      // the usual way of making a mask: reduce the bands of the classification to a boolean
      cloud: {
        process_id: 'reduce_dimension',
        arguments: {
          data: { from_node: 'scl' },
          dimension: 'bands',
          reducer: {
            process_graph: {
              e: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: 0 } },
              c: { process_id: 'gte', arguments: { x: { from_node: 'e' }, y: 8 }, result: true },
            },
          },
        },
      },
      masked: { process_id: 'mask', arguments: { data: { from_node: 'red' }, mask: { from_node: 'cloud' } } },
      mean: {
        process_id: 'reduce_dimension',
        arguments: { data: { from_node: 'masked' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
      },
      s: { process_id: 'save_result', arguments: { data: { from_node: 'mean' }, format: 'GTiff' }, result: true },
    };
    const r = await result({ process_graph: graph });
    expect(r.status, r.text).toBe(200);
    const reds = items.map((it) => gdalWindow(it.assets.B04.href));
    const scls = items.map((it) => gdalWindow(it.assets.SCL.href));
    let masked = 0;
    const want = new Float32Array(W * H).map((_, i) => {
      const v: number[] = [];
      reds.forEach((red, k) => {
        if (scls[k][i] >= 8) masked++;
        else if (!Number.isNaN(red[i])) v.push(red[i]);
      });
      return v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN;
    });
    expect(masked).toBeGreaterThan(0); // the window must hold some cloud for this to test anything
    expectValues(gdalRead(r.body, 'tif').values, want);
  });

  it('aggregates the NDVI over a polygon into a vector result', async () => {
    // A triangle inside the window, in UTM, with vertices off pixel centres; sent in WGS84.
    const utm = [
      [bbox.west + 33, bbox.north - 47],
      [bbox.west + 517, bbox.north - 121],
      [bbox.west + 203, bbox.north - 436],
    ];
    const ring = [...utm, utm[0]].map((p) => proj4(UTM, 'EPSG:4326', p));
    const polygon = { type: 'Polygon', coordinates: [ring] };
    const graph = {
      l: load(JUNE, ['B04', 'B08']),
      n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
      a: {
        process_id: 'aggregate_spatial',
        arguments: {
          data: { from_node: 'n' },
          geometries: { type: 'FeatureCollection', features: [{ type: 'Feature', properties: {}, geometry: polygon }] },
          reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } },
        },
        result: true,
      },
    };
    const r = await result({ process_graph: graph });
    expect(r.status, r.text).toBe(200);
    // A vector cube over dates: the time-series form, {date: [[value] per geometry]}.
    expect(Object.keys(r.json)).toEqual([expect.stringMatching(/^2024-06/)]);
    const got = (Object.values(r.json)[0] as number[][])[0][0];
    // The test's own rasterization: pixel centres inside the triangle (barycentric sign test).
    const ndvi = ndviWant();
    const side = (a: number[], b: number[], p: number[]) => (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]);
    let sum = 0;
    let n = 0;
    for (let row = 0; row < H; row++) {
      for (let col = 0; col < W; col++) {
        const p = [bbox.west + (col + 0.5) * 10, bbox.north - (row + 0.5) * 10];
        const s1 = side(utm[0], utm[1], p);
        const s2 = side(utm[1], utm[2], p);
        const s3 = side(utm[2], utm[0], p);
        const inside = (s1 > 0 && s2 > 0 && s3 > 0) || (s1 < 0 && s2 < 0 && s3 < 0);
        const v = ndvi[row * W + col];
        if (inside && !Number.isNaN(v)) {
          sum += v;
          n++;
        }
      }
    }
    expect(n).toBeGreaterThan(100);
    expect(got).toBeCloseTo(sum / n, 5);
  });
});
