// Fields in, time series out, over HTTP: vector files made by GDAL/OGR (GeoJSON, FlatGeobuf, CSV)
// and DuckDB (GeoParquet), uploaded or served from a loopback server; aggregate_spatial over a
// collection GDAL made, compared with GDAL's rasteriser and numpy on the same polygons; each output
// read back by a reader we did not write (GDAL/OGR, DuckDB, Python's netCDF4, pandas as the openEO
// Python client uses it); the same result from a batch job; and hostile inputs, which get clear
// errors and nothing else.
import { it, expect, beforeAll, afterAll } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Agent, setGlobalDispatcher } from 'undici';
import { startServer, http, expectError, removeDir, addUser, login, tempDir, xeo, ROOT, type TestServer, type Res } from './helpers.js';
import { hasGdal, describeWithTool, run } from './system-tools.js';
import { RangeServer } from './support/range-server.js';

const PY = '/usr/bin/python3';
// The checks below take seconds between requests: no kept-alive connection the server may have closed meanwhile.
setGlobalDispatcher(new Agent({ keepAliveTimeout: 500, keepAliveMaxTimeout: 500 }));
const MAX_BYTES = 24 * 1024 * 1024;

describeWithTool(hasGdal, 'GDAL', 'vector data in and out', () => {
  let s: TestServer;
  let token: string;
  let work: string;
  let files: RangeServer;
  let endless: Server;
  let endlessUrl: string;
  let ref: { mean: (number | null)[][][]; median: (number | null)[][][]; valid: number[][][]; total: number[] };
  let fieldsGeoJson: unknown;

  beforeAll(async () => {
    work = tempDir('xeo-vector-');
    run(PY, [path.join(ROOT, 'test/support/vector_fixtures.py'), work]);
    ref = JSON.parse(readFileSync(path.join(work, 'reference.json'), 'utf8'));
    fieldsGeoJson = JSON.parse(readFileSync(path.join(work, 'fields.geojson'), 'utf8'));
    // The same fields in the other formats, written by OGR (FlatGeobuf in UTM, CSV with WKT) and DuckDB.
    // (without a spatial index: with one, FlatGeobuf files hold the features in the index's order)
    run('ogr2ogr', ['-f', 'FlatGeobuf', '-lco', 'SPATIAL_INDEX=NO', '-t_srs', 'EPSG:32633', path.join(work, 'fields.fgb'), path.join(work, 'fields.geojson')]);
    run('ogr2ogr', ['-f', 'FlatGeobuf', path.join(work, 'indexed.fgb'), path.join(work, 'fields.geojson')]);
    run('ogr2ogr', ['-f', 'CSV', '-lco', 'GEOMETRY=AS_WKT', path.join(work, 'fields.csv'), path.join(work, 'fields.geojson')]);
    run('ogr2ogr', [
      '-f',
      'CSV',
      path.join(work, 'fields_wkb.csv'),
      path.join(work, 'fields.geojson'),
      '-dialect',
      'SQLite',
      '-sql',
      'SELECT field_id, crop, area_ha, hex(ST_AsBinary(geometry)) AS wkb FROM fields',
    ]);
    const db = await (await DuckDBInstance.create(':memory:')).connect();
    await db.run(
      `COPY (SELECT field_id, crop, CAST(area_ha AS DOUBLE) AS area_ha, ST_GeomFromWKB(from_hex(wkb)) AS geometry FROM read_csv('${path.join(work, 'fields_wkb.csv')}', all_varchar = true)) TO '${path.join(work, 'fields.parquet')}' (FORMAT parquet)`,
    );
    db.closeSync();
    // Hostile files: a polygon of 1e6 vertices (FlatGeobuf by OGR), a file over the size limit.
    run(PY, [
      '-c',
      `
from osgeo import ogr, osr
import math
srs = osr.SpatialReference(); srs.ImportFromEPSG(4326)
ds = ogr.GetDriverByName('FlatGeobuf').CreateDataSource('${work}/huge.fgb')
l = ds.CreateLayer('huge', srs, ogr.wkbPolygon)
r = ogr.Geometry(ogr.wkbLinearRing)
n = 1000000
for k in range(n): r.AddPoint_2D(16.4 + 0.01 * math.cos(2 * math.pi * k / n), 47.8 + 0.01 * math.sin(2 * math.pi * k / n))
r.CloseRings()
g = ogr.Geometry(ogr.wkbPolygon); g.AddGeometry(r)
f = ogr.Feature(l.GetLayerDefn()); f.SetGeometry(g); l.CreateFeature(f)
ds = None
`,
    ]);
    writeFileSync(path.join(work, 'big.geojson'), Buffer.alloc(MAX_BYTES + 1024, 32));
    files = new RangeServer();
    for (const f of ['fields.geojson', 'fields.fgb', 'fields.csv', 'fields.parquet']) files.file(`/${f}`, path.join(work, f));
    await files.start();
    // A server that answers a GeoJSON of 2 GB, streamed without end.
    endless = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/geo+json', 'content-length': String(2 * 1024 ** 3) });
      const chunk = Buffer.alloc(1 << 20, 32);
      const more = () => {
        while (res.write(chunk)) if (res.destroyed) return;
        res.once('drain', more);
      };
      res.on('error', () => {});
      more();
    });
    await new Promise<void>((r) => endless.listen(0, '127.0.0.1', r));
    endlessUrl = `http://127.0.0.1:${(endless.address() as AddressInfo).port}/fields.geojson`;
    const port = new URL(files.url).port;
    s = await startServer({ XEO_OUTBOUND_ALLOW: `127.0.0.1:${port},127.0.0.1:${(endless.address() as AddressInfo).port}`, XEO_VECTOR_MAX_BYTES: String(MAX_BYTES), XEO_JOB_CHUNK_SIZE: '64' });
    const imp = xeo(['import', ...['20240601', '20240611', '20240621'].map((d) => path.join(work, 'rasters', `fields_${d}.tif`)), '--collection', 'FIELDS', '--bands', 'B04,B08'], { dataDir: s.dataDir });
    if (imp.status !== 0) throw new Error(imp.stderr);
    addUser(s.dataDir, 'u', 'p');
    addUser(s.dataDir, 'v', 'q');
    token = await login(s, 'u', 'p');
    for (const f of ['fields.geojson', 'fields.fgb', 'indexed.fgb', 'fields.csv', 'fields.parquet', 'huge.fgb', 'big.geojson', ...['20240601', '20240611', '20240621'].map((d) => `rasters/fields_${d}.tif`)]) {
      const up = await http('PUT', `${s.base}/files/in/${f}`, { token, body: readFileSync(path.join(work, f)), headers: { 'content-type': 'application/octet-stream' } });
      if (up.status !== 200) throw new Error(up.text);
    }
  }, 120_000);

  afterAll(async () => {
    await s?.stop();
    await files?.stop();
    endless?.close();
    if (s) removeDir(s.dataDir);
    removeDir(work);
  });

  const MEAN = { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } };
  const load = { process_id: 'load_collection', arguments: { id: 'FIELDS', spatial_extent: null, temporal_extent: null } };
  /** A graph aggregating the collection over `geometries` (a node), saved in `format`. */
  const zonal = (geometries: Record<string, unknown>, format: string, reducer: unknown = MEAN, extra: Record<string, unknown> = {}) => ({
    l: load,
    v: geometries,
    a: { process_id: 'aggregate_spatial', arguments: { data: { from_node: 'l' }, geometries: { from_node: 'v' }, reducer, ...extra } },
    s: { process_id: 'save_result', arguments: { data: { from_node: 'a' }, format }, result: true },
  });
  const inline = () => ({ process_id: 'load_geojson', arguments: { data: fieldsGeoJson } });
  const result = (graph: unknown, as = token) => http('POST', `${s.base}/result`, { token: as, body: JSON.stringify({ process: { process_graph: graph } }), headers: { 'content-type': 'application/json' } });
  const keep = (name: string, r: Res) => {
    const file = path.join(work, name);
    writeFileSync(file, r.body);
    return file;
  };
  const close = (a: number | null, e: number | null) => (a === null || e === null ? a === e : Math.abs(a - e) <= 1e-3 * Math.max(1, Math.abs(e)));
  /** The same dates, the same number of rows per date and of values per row, and close values: fewer rows fail. */
  const expectSameRows = (got: Record<string, (number | null)[][]>, base: Record<string, (number | null)[][]>, what: string) => {
    expect(Object.keys(base).length, 'the reference has dates').toBeGreaterThan(0);
    expect(Object.keys(got).sort(), what).toEqual(Object.keys(base).sort());
    for (const d of Object.keys(base)) {
      expect(got[d].length, `${what}: rows on ${d}`).toBe(base[d].length);
      base[d].forEach((want, g) => {
        expect(got[d][g].length, `${what}: values of row ${g} on ${d}`).toBe(want.length);
        want.forEach((e, b) => expect(close(got[d][g][b], e), `${what}: row ${g}, value ${b} on ${d}`).toBe(true));
      });
    }
  };

  it('lists the vector formats in and out under their GDAL names', async () => {
    const f = (await http('GET', `${s.base}/file_formats`)).json;
    expect(Object.keys(f.input)).toEqual(expect.arrayContaining(['GTiff', 'GeoJSON', 'FlatGeobuf', 'Parquet', 'CSV']));
    expect(Object.keys(f.input.CSV.parameters)).toEqual(expect.arrayContaining(['GEOM_POSSIBLE_NAMES', 'X_POSSIBLE_NAMES', 'Y_POSSIBLE_NAMES']));
    for (const name of ['CSV', 'GeoJSON', 'Parquet', 'netCDF', 'JSON']) expect(f.output[name].gis_data_types).toContain('vector');
  });

  it('aggregates per field, date and band as GDAL and numpy do (holes, a multi-polygon, a polygon smaller than a pixel, one outside)', async () => {
    const r = await result(zonal(inline(), 'JSON', MEAN, { target_dimension: 'stats' }));
    expect(r.status).toBe(200);
    // value, total_count, valid_count per field, date, band: the JSON of a cube without dates in the other dims is a FeatureCollection...
    const dates = Object.keys(r.json).sort();
    expect(dates).toEqual(['2024-06-01T00:00:00Z', '2024-06-11T00:00:00Z', '2024-06-21T00:00:00Z']);
    let compared = 0;
    ref.mean.forEach((perDate, g) => {
      perDate.forEach((bands, t) => {
        bands.forEach((want, b) => {
          // columns: B04~value, B04~total_count, B04~valid_count, B08~...
          const row = r.json[dates[t]][g];
          expect(close(row[b * 3], want)).toBe(true);
          expect(row[b * 3 + 1]).toBe(ref.total[g]);
          expect(row[b * 3 + 2]).toBe(ref.valid[g][t][b]);
          compared++;
        });
      });
    });
    expect(compared).toBe(41 * 3 * 2);
    // the polygon smaller than a pixel and the one outside: no-data with a count of 0
    expect(ref.total.slice(38, 40)).toEqual([0, 0]);
    expect(r.json[dates[0]][38]).toEqual([null, 0, 0, null, 0, 0]);
  });

  it('runs median on the kernels and any other reducer as a child process, alike', async () => {
    const median = await result(zonal(inline(), 'JSON', { process_graph: { m: { process_id: 'median', arguments: { data: { from_parameter: 'data' } }, result: true } } }));
    const dates = Object.keys(median.json).sort();
    ref.median.forEach((perDate, g) => perDate.forEach((bands, t) => bands.forEach((want, b) => expect(close(median.json[dates[t]][g][b], want)).toBe(true))));
    // mean written as sum / count: two processes, so not a kernel statistic
    const child = {
      process_graph: {
        s: { process_id: 'sum', arguments: { data: { from_parameter: 'data' } } },
        c: { process_id: 'count', arguments: { data: { from_parameter: 'data' } } },
        d: { process_id: 'divide', arguments: { x: { from_node: 's' }, y: { from_node: 'c' } }, result: true },
      },
    };
    const viaChild = await result(zonal(inline(), 'JSON', child));
    ref.mean.forEach((perDate, g) => perDate.forEach((bands, t) => bands.forEach((want, b) => expect(close(viaChild.json[dates[t]][g][b], want)).toBe(true))));
  });

  it('reads the fields from every format, uploaded or by URL, to the same result', async () => {
    const base = (await result(zonal(inline(), 'JSON'))).json;
    const formats: [string, string][] = [
      ['fields.geojson', 'GeoJSON'],
      ['fields.fgb', 'FlatGeobuf'],
      ['fields.csv', 'CSV'],
      ['fields.parquet', 'parquet'],
    ];
    for (const [file, format] of formats) {
      const up = await result(zonal({ process_id: 'load_uploaded_files', arguments: { paths: [`/in/${file}`], format } }, 'JSON'));
      expect(up.status, `${file}: ${up.text.slice(0, 300)}`).toBe(200);
      const byUrl = await result(zonal({ process_id: 'load_url', arguments: { url: `${files.url}/${file}`, format } }, 'JSON'));
      expect(byUrl.status, `${file}: ${byUrl.text.slice(0, 300)}`).toBe(200);
      expectSameRows(up.json, base, `${file} uploaded`);
      expectSameRows(byUrl.json, base, `${file} by URL`);
    }
  });

  it('reads uploaded GeoTIFFs as a raster cube, one date per file, to the same result as the collection', async () => {
    const base = (await result(zonal(inline(), 'JSON'))).json;
    const tifs = ['20240621', '20240601', '20240611'].map((d) => `/in/rasters/fields_${d}.tif`);
    const graph = {
      ...zonal(inline(), 'JSON'),
      l: { process_id: 'load_uploaded_files', arguments: { paths: tifs, format: 'GTiff' } },
      b: { process_id: 'rename_labels', arguments: { data: { from_node: 'l' }, dimension: 'bands', source: ['B1', 'B2'], target: ['B04', 'B08'] } },
    };
    graph.a.arguments.data = { from_node: 'b' };
    const r = await result(graph);
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect(Object.keys(r.json)).toEqual(Object.keys(base));
    expectSameRows(r.json, base, 'GeoTIFFs');
    const undated = await http('PUT', `${s.base}/files/in/undated.tif`, {
      token,
      body: readFileSync(path.join(work, 'rasters', 'fields_20240601.tif')),
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(undated.status).toBe(200);
    const noDate = await result({ ...graph, l: { process_id: 'load_uploaded_files', arguments: { paths: ['in/undated.tif'], format: 'GTiff' } } });
    expectError(noDate, 400, 'ProcessParameterInvalid');
    expect(noDate.json.message).toMatch(/carries no date/);
  });

  it('keeps the properties with their geometries whatever the order of the file (a spatially indexed FlatGeobuf)', async () => {
    const r = await result(zonal({ process_id: 'load_uploaded_files', arguments: { paths: ['in/indexed.fgb'], format: 'FlatGeobuf' } }, 'CSV'));
    expect(r.status).toBe(200);
    const out = run(PY, [
      '-c',
      `
import pandas as pd, json, math
df = pd.read_csv('${keep('indexed.csv', r)}')
ref = json.load(open('${work}/reference.json'))
first = df[df.date == '2024-06-01T00:00:00Z']
bad = 0
for _, row in first.iterrows():
    g = int(row.field_id[1:])
    want = ref['mean'][g][0][0]
    bad += (not math.isnan(row.B04)) if want is None else abs(row.B04 - want) > 1e-3 * max(1, abs(want))
print(len(first), sorted(first.feature_index) == list(range(41)), list(first.field_id) != sorted(first.field_id), bad)
`,
    ]);
    expect(out.trim()).toBe('41 True True 0');
  });

  it('writes CSV that GDAL and pandas read: one row per field and date, a column per band, the properties kept', async () => {
    const r = await result(zonal({ process_id: 'load_uploaded_files', arguments: { paths: ['in/fields.fgb'], format: 'FlatGeobuf' } }, 'CSV'));
    expect(r.headers['content-type']).toBe('text/csv');
    const file = keep('out.csv', r);
    const info = run('ogrinfo', ['-ro', '-al', '-so', file]);
    expect(info).toMatch(/Feature Count: 123/);
    expect(info).toMatch(/field_id: String/);
    const check = run(PY, [
      '-c',
      `
import pandas as pd, json, math
df = pd.read_csv('${file}')
ref = json.load(open('${work}/reference.json'))
assert list(df.columns) == ['feature_index', 'field_id', 'crop', 'area_ha', 'date', 'B04', 'B08'], list(df.columns)
dates = sorted(df['date'].unique())
bad = 0
for g in range(41):
    for t, d in enumerate(dates):
        row = df[(df.feature_index == g) & (df.date == d)].iloc[0]
        assert row.field_id == 'F%03d' % g
        for b, band in enumerate(['B04', 'B08']):
            want = ref['mean'][g][t][b]
            got = row[band]
            if want is None: bad += not math.isnan(got)
            else: bad += abs(got - want) > 1e-3 * max(1, abs(want))
print(len(df), bad)
`,
    ]);
    expect(check.trim()).toBe('123 0');
    // With WKT, GDAL reads the geometries.
    const wkt = await result({ ...zonal(inline(), 'CSV'), s: { process_id: 'save_result', arguments: { data: { from_node: 'a' }, format: 'csv', options: { geometry: 'WKT' } }, result: true } });
    const layer = run('ogrinfo', ['-ro', '-al', '-q', keep('wkt.csv', wkt)]);
    expect(layer).toMatch(/POLYGON \(\(16\.\d+ 47\.\d+/);
  });

  it('writes GeoJSON that GDAL reads, in EPSG:4326 with the values per date and band', async () => {
    const r = await result(zonal({ process_id: 'load_uploaded_files', arguments: { paths: ['in/fields.fgb'], format: 'FlatGeobuf' } }, 'GeoJSON'));
    expect(r.headers['content-type']).toBe('application/geo+json');
    const out = run(PY, [
      '-c',
      `
from osgeo import ogr
import json
ds = ogr.Open('${keep('out.geojson', r)}'); l = ds.GetLayer()
ds0 = ogr.Open('${work}/fields.geojson'); src = ds0.GetLayer()
f = l.GetNextFeature(); s = src.GetNextFeature()
names = [l.GetLayerDefn().GetFieldDefn(i).GetName() for i in range(l.GetLayerDefn().GetFieldCount())]
# the same polygon, within 1 mm after the round trip through UTM
d = f.GetGeometryRef().SymDifference(s.GetGeometryRef()).GetArea()
ref = json.load(open('${work}/reference.json'))
print(l.GetFeatureCount(), l.GetSpatialRef().GetAuthorityCode(None), names[:4], abs(f.GetField('2024-06-01T00:00:00Z~B04') - ref['mean'][0][0][0]) < 1e-2, f.GetField('2024-06-11T00:00:00Z~B04'), d < 1e-14)
`,
    ]);
    expect(out.trim()).toBe(`41 4326 ['field_id', 'crop', 'area_ha', '2024-06-01T00:00:00Z~B04'] True None True`);
  });

  it('writes GeoParquet that DuckDB reads, with the geometry and a row per field and date', async () => {
    // The Python client asks for "PARQUET" when told to download x.parquet.
    const r = await result(zonal(inline(), 'PARQUET'));
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/parquet; profile=geo');
    const db = await (await DuckDBInstance.create(':memory:')).connect();
    const file = keep('out.parquet', r);
    const rows = (
      await db.runAndReadAll(`SELECT feature_index, field_id, date, B04, ST_AsText(geometry) AS wkt, typeof(geometry) AS t FROM read_parquet('${file}') ORDER BY feature_index, date`)
    ).getRowObjects();
    const meta = (await db.runAndReadAll(`SELECT value::VARCHAR AS v FROM parquet_kv_metadata('${file}') WHERE key::VARCHAR = 'geo'`)).getRowObjects();
    db.closeSync();
    expect(rows.length).toBe(123);
    expect(rows[0]).toMatchObject({ feature_index: 0, field_id: 'F000', date: '2024-06-01T00:00:00Z' });
    expect(rows[0].t).toMatch(/^GEOMETRY/);
    expect(close(rows[0].B04 as number, ref.mean[0][0][0])).toBe(true);
    expect(rows[1].B04).toBe(null);
    expect(String(rows[0].wkt)).toMatch(/^POLYGON \(\(16\.35/);
    expect(JSON.parse(String(meta[0].v).replaceAll('\\x22', '"'))).toMatchObject({ version: '1.1.0', primary_column: 'geometry', columns: { geometry: { encoding: 'WKB' } } });
  });

  it('writes netCDF of CF discrete geometries that netCDF4 and GDAL read', async () => {
    const r = await result(zonal(inline(), 'netCDF'));
    const file = keep('out.nc', r);
    const out = run(PY, [
      '-c',
      `
import netCDF4, numpy as np, json
ref = json.load(open('${work}/reference.json'))
d = netCDF4.Dataset('${file}')
b04 = d['B04'][:]
want = np.array([[np.nan if ref['mean'][g][t][0] is None else ref['mean'][g][t][0] for t in range(3)] for g in range(41)])
ok = np.allclose(np.ma.filled(b04, np.nan), want, rtol=1e-5, equal_nan=True)
t = netCDF4.num2date(d['t'][:], d['t'].units)
print(d.featureType, d['B04'].dimensions, d['geometry_container'].geometry_type, ok, str(t[0])[:10], d['feature_names'].cf_role)
`,
    ]);
    expect(out.trim()).toBe("timeSeries ('feature', 't') polygon True 2024-06-01 timeseries_id");
    expect(run('ogrinfo', ['-ro', '-so', file])).toMatch(/geometry_container \((Multi )?Polygon\)/);
  });

  it('answers JSON that the Python client turns into a DataFrame unchanged (its timeseries_json_to_pandas)', async () => {
    const r = await result(zonal(inline(), 'JSON'));
    const file = keep('ts.json', r);
    // What openeo.rest.conversions.timeseries_json_to_pandas does (openeo-python-client), step by step.
    const out = run(PY, [
      '-c',
      `
import json, numpy as np, pandas
timeseries = json.load(open('${file}'))
polygon_counts = set(len(polygon_data) for polygon_data in timeseries.values())
assert polygon_counts == {41}, polygon_counts
band_counts = set(len(band_data) for polygon_data in timeseries.values() for band_data in polygon_data)
band_counts.discard(0)
assert len(band_counts) == 1
band_count = band_counts.pop()
band_data_fallback = [np.nan] * band_count
s = pandas.DataFrame.from_records(
    ((date, polygon_index, band_index, value)
     for (date, polygon_data) in timeseries.items()
     for polygon_index, band_data in enumerate(polygon_data)
     for band_index, value in enumerate(band_data or band_data_fallback)),
    columns=["date", "polygon", "band", "value"], index=["date", "polygon", "band"])["value"].rename(None)
df = s.unstack("date").T
ref = json.load(open('${work}/reference.json'))
print(df.shape, abs(df.loc['2024-06-21T00:00:00Z', (3, 1)] - ref['mean'][3][2][1]) < 1e-2)
`,
    ]);
    expect(out.trim()).toBe('(3, 82) True');
  });

  it('runs as a batch job, chunked by groups of fields, to the same CSV, with STAC metadata', async () => {
    const sync = await result(zonal(inline(), 'CSV'));
    const created = await http('POST', `${s.base}/jobs`, {
      token,
      body: JSON.stringify({ process: { process_graph: zonal(inline(), 'CSV') }, log_level: 'debug' }),
      headers: { 'content-type': 'application/json' },
    });
    expect(created.status).toBe(201);
    const id = created.headers['openeo-identifier'] ?? created.headers['xeo-identifier'];
    expect((await http('POST', `${s.base}/jobs/${id}/results`, { token })).status).toBe(202);
    let job: any;
    for (let i = 0; i < 300; i++) {
      job = (await http('GET', `${s.base}/jobs/${id}`, { token })).json;
      if (job.status === 'finished' || job.status === 'error') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const logs = (await http('GET', `${s.base}/jobs/${id}/logs`, { token })).json.logs.map((l: any) => l.message);
    expect(job.status, logs.join('\n')).toBe('finished');
    expect(logs.some((m: string) => /aggregates 41 geometries: it runs as \d+ chunks/.test(m))).toBe(true);
    // Each block of the three files (3 x 4 x 3 blocks of 64 px, both bands in each) read and decoded once at most.
    const last = logs.filter((m: string) => /^Chunk \d+ of \d+/.test(m)).pop();
    const [, read, decoded] = /blocks read (\d+), decoded (\d+), reused \d+/.exec(last)!.map(Number);
    expect(decoded).toBeGreaterThan(0);
    expect(decoded).toBe(read);
    expect(decoded).toBeLessThanOrEqual(3 * 4 * 3);
    const doc = (await http('GET', `${s.base}/jobs/${id}/results`, { token })).json;
    const asset = doc.assets['result.csv'];
    expect(asset).toMatchObject({ type: 'text/csv', roles: ['data'] });
    expect(doc.bbox[0]).toBeCloseTo(16.334, 2);
    const body = await http('GET', asset.href);
    expect(body.text).toBe(sync.text);
  });

  it('refuses hostile inputs with clear errors', async () => {
    const bowtie = {
      type: 'Feature',
      properties: {},
      geometry: {
        type: 'Polygon',
        coordinates: [
          [
            [16.35, 47.83],
            [16.36, 47.84],
            [16.36, 47.83],
            [16.35, 47.84],
            [16.35, 47.83],
          ],
        ],
      },
    };
    const selfCrossing = await result(zonal({ process_id: 'load_geojson', arguments: { data: { type: 'FeatureCollection', features: [bowtie] } } }, 'JSON'));
    expectError(selfCrossing, 400, 'ProcessParameterInvalid');
    expect(selfCrossing.json.message).toMatch(/feature 0 is not a valid polygon: self-intersection/);
    const open = await result(
      zonal(
        {
          process_id: 'load_geojson',
          arguments: {
            data: {
              type: 'Polygon',
              coordinates: [
                [
                  [16.35, 47.83],
                  [16.36, 47.84],
                  [16.36, 47.83],
                ],
              ],
            },
          },
        },
        'JSON',
      ),
    );
    expectError(open, 400, 'ProcessParameterInvalid');
    expect(open.json.message).toMatch(/not closed/);
    const huge = await result(zonal({ process_id: 'load_uploaded_files', arguments: { paths: ['in/huge.fgb'], format: 'FlatGeobuf' } }, 'JSON'));
    expectError(huge, 400, 'ProcessParameterInvalid');
    expect(huge.json.message).toMatch(/more than 100000 vertices/);
    const big = await result(zonal({ process_id: 'load_uploaded_files', arguments: { paths: ['in/big.geojson'], format: 'GeoJSON' } }, 'JSON'));
    expectError(big, 400, 'ProcessParameterInvalid');
    expect(big.json.message).toMatch(/vector files are read up to 25165824 bytes/);
    const twoGb = await result(zonal({ process_id: 'load_url', arguments: { url: endlessUrl, format: 'GeoJSON' } }, 'JSON'));
    expectError(twoGb, 400, 'ProcessParameterInvalid');
    expect(twoGb.json.message).toMatch(/larger than 25165824 bytes/);
    // loopback, on a port the operator did not allow
    const loop = await result(zonal({ process_id: 'load_url', arguments: { url: `http://127.0.0.1:${new URL(s.url).port}/1.2.0/`, format: 'GeoJSON' } }, 'JSON'));
    expectError(loop, 400, 'ProcessParameterInvalid');
    expect(loop.json.message).toMatch(/refused/);
    const local = await result(zonal({ process_id: 'load_url', arguments: { url: 'file:///etc/passwd', format: 'GeoJSON' } }, 'JSON'));
    expect(local.status).toBe(400);
    // other users' files and paths outside the workspace are not found
    const other = await login(s, 'v', 'q');
    expectError(await result(zonal({ process_id: 'load_uploaded_files', arguments: { paths: ['in/fields.geojson'], format: 'GeoJSON' } }, 'JSON'), other), 404, 'FileNotFound');
    expectError(await result(zonal({ process_id: 'load_uploaded_files', arguments: { paths: ['../u/in/fields.geojson'], format: 'GeoJSON' } }, 'JSON')), 404, 'FileNotFound');
    const wrong = await result(zonal({ process_id: 'load_uploaded_files', arguments: { paths: ['in/fields.csv'], format: 'FlatGeobuf' } }, 'JSON'));
    expectError(wrong, 400, 'FormatUnsuitable');
    // the server is fine afterwards
    expect((await result(zonal(inline(), 'JSON'))).status).toBe(200);
  });
});
