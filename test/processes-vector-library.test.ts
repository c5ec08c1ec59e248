// The vector processes over HTTP against GDAL/OGR on the same input (filter_vector's predicates,
// vector_buffer, vector_reproject, the sampling processes), and the rest of the library (fit_curve
// and predict_curve against numpy's least squares, reduce_spatial, aggregate_spatial_window,
// flatten_dimensions and unflatten_dimension against numpy) on a small collection GDAL made.
import { it, expect, beforeAll, afterAll } from 'vitest';
import { writeFileSync } from 'node:fs';
import { Agent, setGlobalDispatcher } from 'undici';
import path from 'node:path';
import { startServer, http, expectError, removeDir, addUser, login, tempDir, xeo, type TestServer } from './helpers.js';
import { hasGdal, describeWithTool, run } from './system-tools.js';

const PY = '/usr/bin/python3';
// The checks below take seconds between requests: no kept-alive connection the server may have closed meanwhile.
setGlobalDispatcher(new Agent({ keepAliveTimeout: 500, keepAliveMaxTimeout: 500 }));
const UTM = { type: 'name', properties: { name: 'urn:ogc:def:crs:EPSG::32633' } };
const X0 = 600000;
const Y0 = 5300000;

describeWithTool(hasGdal, 'GDAL', 'vector processes and the rest of the library', () => {
  let s: TestServer;
  let token: string;
  let work: string;
  /** Shapes in UTM: polygons, a polygon with a hole, a line, points. */
  const shapes = {
    type: 'FeatureCollection',
    crs: UTM,
    features: [
      {
        type: 'Feature',
        id: 'a',
        properties: { k: 1 },
        geometry: {
          type: 'Polygon',
          coordinates: [
            [
              [X0, Y0],
              [X0 + 100, Y0],
              [X0 + 100, Y0 + 60],
              [X0, Y0 + 60],
              [X0, Y0],
            ],
          ],
        },
      },
      {
        type: 'Feature',
        id: 'b',
        properties: { k: 2 },
        geometry: {
          type: 'Polygon',
          coordinates: [
            [
              [X0 + 100, Y0],
              [X0 + 180, Y0 + 20],
              [X0 + 150, Y0 + 90],
              [X0 + 100, Y0],
            ],
          ],
        },
      },
      {
        type: 'Feature',
        id: 'c',
        properties: { k: 3 },
        geometry: {
          type: 'Polygon',
          coordinates: [
            [
              [X0 + 20, Y0 + 10],
              [X0 + 60, Y0 + 10],
              [X0 + 60, Y0 + 40],
              [X0 + 20, Y0 + 40],
              [X0 + 20, Y0 + 10],
            ],
          ],
        },
      },
      {
        type: 'Feature',
        id: 'd',
        properties: { k: 4 },
        geometry: {
          type: 'Polygon',
          coordinates: [
            [
              [X0 + 300, Y0 + 300],
              [X0 + 500, Y0 + 300],
              [X0 + 500, Y0 + 500],
              [X0 + 300, Y0 + 500],
              [X0 + 300, Y0 + 300],
            ],
            [
              [X0 + 350, Y0 + 350],
              [X0 + 350, Y0 + 450],
              [X0 + 450, Y0 + 450],
              [X0 + 450, Y0 + 350],
              [X0 + 350, Y0 + 350],
            ],
          ],
        },
      },
      {
        type: 'Feature',
        id: 'e',
        properties: { k: 5 },
        geometry: {
          type: 'LineString',
          coordinates: [
            [X0 - 50, Y0 + 30],
            [X0 + 250, Y0 + 30],
            [X0 + 250, Y0 + 200],
          ],
        },
      },
      { type: 'Feature', id: 'f', properties: { k: 6 }, geometry: { type: 'Point', coordinates: [X0 + 50, Y0 + 30] } },
      {
        type: 'Feature',
        id: 'g',
        properties: { k: 7 },
        geometry: {
          type: 'MultiPoint',
          coordinates: [
            [X0 + 1000, Y0],
            [X0 + 1010, Y0 + 5],
            [X0 + 1020, Y0 + 10],
          ],
        },
      },
    ],
  };
  const base = {
    type: 'FeatureCollection',
    crs: UTM,
    features: [
      {
        type: 'Feature',
        properties: {},
        geometry: {
          type: 'Polygon',
          coordinates: [
            [
              [X0 - 10, Y0 - 10],
              [X0 + 100, Y0 - 10],
              [X0 + 100, Y0 + 70],
              [X0 - 10, Y0 + 70],
              [X0 - 10, Y0 - 10],
            ],
          ],
        },
      },
    ],
  };

  beforeAll(async () => {
    work = tempDir('xeo-library-');
    writeFileSync(path.join(work, 'shapes.geojson'), JSON.stringify(shapes));
    writeFileSync(path.join(work, 'base.geojson'), JSON.stringify(base));
    // 12 monthly dates of a 16 x 12 two-band raster: a yearly harmonic per pixel plus noise.
    run(PY, [
      '-c',
      `
import numpy as np, os, datetime
from osgeo import gdal, osr
os.makedirs('${work}/r', exist_ok=True)
s = osr.SpatialReference(); s.ImportFromEPSG(32633)
rng = np.random.default_rng(7)
W, H = 16, 12
a = rng.uniform(100, 200, (H, W)); b = rng.uniform(10, 50, (H, W)); c = rng.uniform(-30, 30, (H, W))
w = 2 * np.pi / 31557600
for m in range(12):
    d = datetime.datetime(2023, m + 1, 10, tzinfo=datetime.timezone.utc)
    x = d.timestamp()
    ds = gdal.GetDriverByName('GTiff').Create('${work}/r/h_%s.tif' % d.strftime('%Y%m%d'), W, H, 2, gdal.GDT_Float32)
    ds.SetGeoTransform([${X0}, 10, 0, ${Y0}, 0, -10]); ds.SetProjection(s.ExportToWkt())
    ds.GetRasterBand(1).WriteArray(a + b * np.cos(w * x) + c * np.sin(w * x) + rng.normal(0, 2, (H, W)))
    ds.GetRasterBand(2).WriteArray(rng.uniform(0, 1, (H, W)))
    ds = None
`,
    ]);
    s = await startServer();
    const files = Array.from({ length: 12 }, (_, m) => path.join(work, 'r', `h_2023${String(m + 1).padStart(2, '0')}10.tif`));
    const imp = xeo(['import', ...files, '--collection', 'H', '--bands', 'Y,N'], { dataDir: s.dataDir });
    if (imp.status !== 0) throw new Error(imp.stderr);
    addUser(s.dataDir, 'u', 'p');
    token = await login(s, 'u', 'p');
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    if (s) removeDir(s.dataDir);
    removeDir(work);
  });

  const result = (graph: unknown) => http('POST', `${s.base}/result`, { token, body: JSON.stringify({ process: { process_graph: graph } }), headers: { 'content-type': 'application/json' } });
  /** Runs `node` on the shapes (as `data`) and answers the JSON FeatureCollection. */
  const onShapes = async (node: Record<string, unknown>, geojson: unknown = shapes) => {
    const r = await result({ v: { process_id: 'load_geojson', arguments: { data: geojson } }, p: { ...node, result: true } });
    if (r.status !== 200) throw new Error(r.text);
    return r.json;
  };
  const py = (script: string) => run(PY, ['-c', `from osgeo import ogr, osr\nimport json\n${script}`]).trim();

  it('vector_reproject moves every vertex as OGR does, by EPSG code or WKT2', async () => {
    const wkt2 = run('gdalsrsinfo', ['-o', 'wkt2', 'EPSG:3035']).trim();
    for (const projection of [4326, 3035, wkt2]) {
      const out = await onShapes({ process_id: 'vector_reproject', arguments: { data: { from_node: 'v' }, projection } });
      const file = path.join(work, 'reprojected.json');
      writeFileSync(file, JSON.stringify(out.features.map((f: any) => f.geometry)));
      const epsg = projection === 4326 ? 4326 : 3035;
      const worst = py(`
a = osr.SpatialReference(); a.ImportFromEPSG(32633); a.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
b = osr.SpatialReference(); b.ImportFromEPSG(${epsg}); b.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
t = osr.CoordinateTransformation(a, b)
ours = json.load(open('${file}'))
src_features = json.load(open('${work}/shapes.geojson'))['features']
# a geometry or a vertex fewer is a failure, not a shorter comparison
worst = 0 if len(ours) == len(src_features) else float('inf')
for f, g in zip(src_features, ours):
    src = ogr.CreateGeometryFromJson(json.dumps(f['geometry'])); src.Transform(t)
    got = ogr.CreateGeometryFromJson(json.dumps(g))
    p = src.GetPoints() if src.GetGeometryCount() == 0 else sum([src.GetGeometryRef(i).GetPoints() or [] for i in range(src.GetGeometryCount())], [])
    q = got.GetPoints() if got.GetGeometryCount() == 0 else sum([got.GetGeometryRef(i).GetPoints() or [] for i in range(got.GetGeometryCount())], [])
    if len(p) != len(q): worst = float('inf')
    worst = max([worst] + [max(abs(x[0] - y[0]), abs(x[1] - y[1])) for x, y in zip(p, q)])
print(worst)
`);
      expect(Number(worst)).toBeLessThan(epsg === 4326 ? 1e-9 : 1e-3);
    }
  });

  it('vector_buffer draws the buffers GEOS draws (8 segments per quarter), and refuses degrees', async () => {
    for (const distance of [25, -10]) {
      const out = await onShapes({ process_id: 'vector_buffer', arguments: { geometries: { from_node: 'v' }, distance } });
      expect(out.features.map((f: any) => f.properties.k)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      const file = path.join(work, 'buffered.json');
      writeFileSync(file, JSON.stringify(out.features.map((f: any) => f.geometry)));
      const diff = py(`
ours = json.load(open('${file}'))
worst = 0
for f, g in zip(json.load(open('${work}/shapes.geojson'))['features'], ours):
    want = ogr.CreateGeometryFromJson(json.dumps(f['geometry'])).Buffer(${distance}, 8)
    got = ogr.CreateGeometryFromJson(json.dumps(g)) if g else ogr.Geometry(ogr.wkbPolygon)
    if want.IsEmpty() or got.IsEmpty():
        worst = max(worst, 0 if want.IsEmpty() and got.IsEmpty() else 1)
        continue
    worst = max(worst, want.SymDifference(got).GetArea() / want.GetArea())
print(worst)
`);
      expect(Number(diff)).toBeLessThan(1e-6);
    }
    const wgs = await result({
      v: { process_id: 'load_geojson', arguments: { data: { type: 'Point', coordinates: [16, 48] } } },
      p: { process_id: 'vector_buffer', arguments: { geometries: { from_node: 'v' }, distance: 10 }, result: true },
    });
    expectError(wgs, 400, 'UnitMismatch');
  });

  it("filter_vector keeps what OGR's predicates keep, for each relation", async () => {
    const relations = ['intersects', 'disjoint', 'equals', 'touches', 'crosses', 'overlaps', 'contains', 'within'];
    const want = JSON.parse(
      py(`
src = json.load(open('${work}/shapes.geojson'))['features']
b = ogr.CreateGeometryFromJson(json.dumps(json.load(open('${work}/base.geojson'))['features'][0]['geometry']))
out = {}
for rel in ${JSON.stringify(relations)}:
    fn = {'intersects': 'Intersects', 'disjoint': 'Disjoint', 'equals': 'Equals', 'touches': 'Touches', 'crosses': 'Crosses', 'overlaps': 'Overlaps', 'contains': 'Contains', 'within': 'Within'}[rel]
    out[rel] = [f['id'] for f in src if getattr(ogr.CreateGeometryFromJson(json.dumps(f['geometry'])), fn)(b)]
print(json.dumps(out))
`),
    );
    for (const relation of relations) {
      const r = await result({
        v: { process_id: 'load_geojson', arguments: { data: shapes } },
        b: { process_id: 'load_geojson', arguments: { data: base } },
        p: { process_id: 'filter_vector', arguments: { data: { from_node: 'v' }, geometries: { from_node: 'b' }, relation }, result: true },
      });
      expect(r.status).toBe(200);
      expect(
        r.json.features.map((f: any) => f.id),
        relation,
      ).toEqual(want[relation]);
    }
    // at least one kept and one dropped for most relations, or the comparison says little
    expect(Object.values(want).filter((ids: any) => ids.length > 0 && ids.length < 7).length).toBeGreaterThanOrEqual(5);
  });

  it('vector_to_regular_points samples cell centres inside polygons and points along lines, as computed with OGR', async () => {
    const out = await onShapes({ process_id: 'vector_to_regular_points', arguments: { data: { from_node: 'v' }, distance: 15 } });
    const file = path.join(work, 'regular.json');
    writeFileSync(file, JSON.stringify(out.features.map((f: any) => f.geometry)));
    const same = py(`
ours = json.load(open('${file}'))
src_features = json.load(open('${work}/shapes.geojson'))['features']
ok = len(ours) == len(src_features)
for f, g in zip(src_features, ours):
    src = ogr.CreateGeometryFromJson(json.dumps(f['geometry']))
    pts = g['coordinates'] if g['type'] == 'MultiPoint' else [g['coordinates']]
    t = src.GetGeometryType()
    if t == ogr.wkbPolygon:
        x0, x1, y0, y1 = src.GetEnvelope()
        want = []
        j = 0
        while y1 - j * 15 > y0:
            i = 0
            while x0 + i * 15 < x1:
                p = ogr.Geometry(ogr.wkbPoint); p.AddPoint_2D(x0 + (i + 0.5) * 15, y1 - (j + 0.5) * 15)
                if src.Intersects(p): want.append((p.GetX(), p.GetY()))
                i += 1
            j += 1
    elif t == ogr.wkbLineString:
        want = [src.Value(d).GetPoints()[0][:2] for d in range(0, int(src.Length()) + 1, 15)]
    else:
        want = [src.GetPoint_2D(0)] if t == ogr.wkbPoint else [src.GetGeometryRef(i).GetPoint_2D(0) for i in range(src.GetGeometryCount())]
    ok = ok and len(want) == len(pts) and all(abs(a[0] - b[0]) < 1e-6 and abs(a[1] - b[1]) < 1e-6 for a, b in zip(sorted(want), sorted(map(tuple, pts))))
print(ok)
`);
    expect(same).toBe('True');
    const flat = await onShapes({ process_id: 'vector_to_regular_points', arguments: { data: { from_node: 'v' }, distance: 15, group: false } });
    expect(flat.features.every((f: any) => f.geometry.type === 'Point')).toBe(true);
    expect(flat.features.length).toBe(out.features.reduce((n: number, f: any) => n + (f.geometry.type === 'MultiPoint' ? f.geometry.coordinates.length : 1), 0));
  });

  it('vector_to_random_points draws reproducible points inside the geometries', async () => {
    const draw = (seed: number, extra: Record<string, unknown> = {}) => onShapes({ process_id: 'vector_to_random_points', arguments: { data: { from_node: 'v' }, geometry_count: 5, seed, ...extra } });
    const one = await draw(42);
    expect(await draw(42)).toEqual(one);
    expect(await draw(43)).not.toEqual(one);
    const file = path.join(work, 'random.json');
    writeFileSync(file, JSON.stringify(one.features.map((f: any) => f.geometry)));
    const inside = py(`
ours = json.load(open('${file}'))
src_features = json.load(open('${work}/shapes.geojson'))['features']
ok = len(ours) == len(src_features)
for f, g in zip(src_features, ours):
    src = ogr.CreateGeometryFromJson(json.dumps(f['geometry']))
    pts = g['coordinates']
    # each vertex of (multi-)points at most once
    n = {ogr.wkbMultiPoint: 3, ogr.wkbPoint: 1}.get(src.GetGeometryType(), 5)
    for x, y in pts:
        p = ogr.Geometry(ogr.wkbPoint); p.AddPoint_2D(x, y)
        ok = ok and src.Distance(p) < 1e-6
    ok = ok and len(pts) == n and len(set(map(tuple, pts))) == n
print(ok)
`);
    expect(inside).toBe('True');
    expectError(
      await result({ v: { process_id: 'load_geojson', arguments: { data: shapes } }, p: { process_id: 'vector_to_random_points', arguments: { data: { from_node: 'v' }, total_count: 3 }, result: true } }),
      400,
      'CountMismatch',
    );
  });

  const H = { process_id: 'load_collection', arguments: { id: 'H', spatial_extent: null, temporal_extent: null } };
  const yBand = { process_id: 'filter_bands', arguments: { data: { from_node: 'l' }, bands: ['Y'] } };
  /** The harmonic model: p0 + p1 cos(wx) + p2 sin(wx), x in seconds. */
  const harmonic = {
    process_graph: {
      w: { process_id: 'multiply', arguments: { x: (2 * Math.PI) / 31557600, y: { from_parameter: 'x' } } },
      c: { process_id: 'cos', arguments: { x: { from_node: 'w' } } },
      s: { process_id: 'sin', arguments: { x: { from_node: 'w' } } },
      p0: { process_id: 'array_element', arguments: { data: { from_parameter: 'parameters' }, index: 0 } },
      p1: { process_id: 'array_element', arguments: { data: { from_parameter: 'parameters' }, index: 1 } },
      p2: { process_id: 'array_element', arguments: { data: { from_parameter: 'parameters' }, index: 2 } },
      a: { process_id: 'multiply', arguments: { x: { from_node: 'p1' }, y: { from_node: 'c' } } },
      b: { process_id: 'multiply', arguments: { x: { from_node: 'p2' }, y: { from_node: 's' } } },
      u: { process_id: 'add', arguments: { x: { from_node: 'p0' }, y: { from_node: 'a' } } },
      t: { process_id: 'add', arguments: { x: { from_node: 'u' }, y: { from_node: 'b' } }, result: true },
    },
  };

  it('fit_curve finds the least-squares parameters numpy finds, and predict_curve evaluates them', async () => {
    const graph = {
      l: H,
      y: yBand,
      f: {
        process_id: 'apply_dimension',
        arguments: {
          data: { from_node: 'y' },
          dimension: 't',
          process: { process_graph: { fc: { process_id: 'fit_curve', arguments: { data: { from_parameter: 'data' }, parameters: [0, 0, 0], function: harmonic }, result: true } } },
        },
      },
      p: { process_id: 'predict_curve', arguments: { parameters: { from_node: 'f' }, function: harmonic, dimension: 't', labels: ['2023-07-01T00:00:00Z', '2024-01-01T00:00:00Z'] } },
      m: { process_id: 'merge_cubes', arguments: { cube1: { from_node: 'f' }, cube2: { from_node: 'p' } } },
      s: { process_id: 'save_result', arguments: { data: { from_node: 'm' }, format: 'JSON' }, result: true },
    };
    const r = await result(graph);
    expect(r.status, r.text).toBe(200);
    const file = path.join(work, 'fit.json');
    writeFileSync(file, r.text);
    const out = py(`
import numpy as np, datetime, glob
from osgeo import gdal
cube = json.load(open('${file}'))
labels = cube['dimensions'][0]['labels']
vals = np.array(cube['data'], dtype=float)[:, 0]  # [t][bands=1][y][x] -> [t][y][x]
files = sorted(glob.glob('${work}/r/h_*.tif'))
xs = np.array([datetime.datetime.strptime(f[-12:-4], '%Y%m%d').replace(tzinfo=datetime.timezone.utc).timestamp() for f in files])
def read(f):
    ds = gdal.Open(f)
    return ds.GetRasterBand(1).ReadAsArray().astype(np.float64)
Y = np.stack([read(f) for f in files])
w = 2 * np.pi / 31557600
A = np.stack([np.ones_like(xs), np.cos(w * xs), np.sin(w * xs)], 1)
coef, *_ = np.linalg.lstsq(A, Y.reshape(12, -1), rcond=None)
coef = coef.reshape(3, *Y.shape[1:])
fit_err = np.abs(vals[:3] - coef).max()
px = np.array([datetime.datetime(2023, 7, 1, tzinfo=datetime.timezone.utc).timestamp(), datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc).timestamp()])
pred = np.einsum('pk,kyx->pyx', np.stack([np.ones_like(px), np.cos(w * px), np.sin(w * px)], 1), coef)
print(labels, round(float(fit_err), 3) < 0.01, float(np.abs(vals[3:] - pred).max()) < 0.01)
`);
    expect(out).toBe("[0, 1, 2, '2023-07-01T00:00:00Z', '2024-01-01T00:00:00Z'] True True");
  });

  it('reduce_spatial and aggregate_spatial_window reduce as numpy does (pad and trim, each corner)', async () => {
    const red = await result({
      l: H,
      y: yBand,
      r: { process_id: 'reduce_spatial', arguments: { data: { from_node: 'y' }, reducer: { process_graph: { m: { process_id: 'max', arguments: { data: { from_parameter: 'data' } }, result: true } } } } },
      s: { process_id: 'save_result', arguments: { data: { from_node: 'r' }, format: 'JSON' }, result: true },
    });
    expect(red.json.dimensions.map((d: any) => d.name)).toEqual(['t', 'bands']);
    const cases: [number[], string, string][] = [
      [[5, 5], 'pad', 'upper-left'],
      [[5, 5], 'trim', 'lower-right'],
      [[3, 4], 'pad', 'lower-left'],
      [[7, 5], 'trim', 'upper-right'],
    ];
    const outs: unknown[] = [];
    for (const [size, boundary, align] of cases) {
      const w = await result({
        l: H,
        y: yBand,
        r: {
          process_id: 'aggregate_spatial_window',
          arguments: { data: { from_node: 'y' }, size, boundary, align, reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
        },
        s: { process_id: 'save_result', arguments: { data: { from_node: 'r' }, format: 'JSON' }, result: true },
      });
      expect(w.status, w.text).toBe(200);
      outs.push(w.json);
    }
    const file = path.join(work, 'windows.json');
    writeFileSync(file, JSON.stringify({ red: red.json, outs, cases }));
    const ok = py(`
import numpy as np, glob
from osgeo import gdal
d = json.load(open('${file}'))
files = sorted(glob.glob('${work}/r/h_*.tif'))
def read(f):
    ds = gdal.Open(f)
    return ds.GetRasterBand(1).ReadAsArray().astype(np.float32)
Y = np.stack([read(f) for f in files])
ok = np.allclose(np.array(d['red']['data'])[:, 0], Y.reshape(12, -1).max(1))
for got, (size, boundary, align) in zip(d['outs'], d['cases']):
    sx, sy = size
    H, W = Y.shape[1:]
    nx = -(-W // sx) if boundary == 'pad' else W // sx
    ny = -(-H // sy) if boundary == 'pad' else H // sy
    ox = W - nx * sx if align.endswith('right') else 0
    oy = H - ny * sy if align.startswith('lower') else 0
    want = np.full((12, ny, nx), np.nan)
    for j in range(ny):
        for i in range(nx):
            r0, c0 = oy + j * sy, ox + i * sx
            block = Y[:, max(0, r0):max(0, r0 + sy), max(0, c0):max(0, c0 + sx)]
            want[:, j, i] = block.reshape(12, -1).mean(1)
    arr = np.array(got['data'], dtype=float)[:, 0]
    xs = got['dimensions'][3]['labels']
    ok = ok and arr.shape == want.shape and np.allclose(arr, want, rtol=1e-5) and abs(xs[0] - (${X0} + (ox + sx / 2) * 10)) < 1e-6
print(ok)
`);
    expect(ok).toBe('True');
  });

  it('flatten_dimensions joins labels in order and unflatten_dimension splits them back', async () => {
    const g = {
      l: H,
      f: { process_id: 'flatten_dimensions', arguments: { data: { from_node: 'l' }, dimensions: ['t', 'bands'], target_dimension: 'tb' } },
      u: { process_id: 'unflatten_dimension', arguments: { data: { from_node: 'f' }, dimension: 'tb', target_dimensions: ['time', 'band'] } },
      s: { process_id: 'save_result', arguments: { data: { from_node: 'u' }, format: 'JSON' }, result: true },
    };
    const flat = await result({ ...g, s: { process_id: 'save_result', arguments: { data: { from_node: 'f' }, format: 'JSON' }, result: true } });
    expect(flat.json.dimensions[0].name).toBe('tb');
    expect(flat.json.dimensions[0].labels.slice(0, 3)).toEqual(['2023-01-10T00:00:00Z~Y', '2023-01-10T00:00:00Z~N', '2023-02-10T00:00:00Z~Y']);
    const back = await result(g);
    const orig = await result({ l: H, s: { process_id: 'save_result', arguments: { data: { from_node: 'l' }, format: 'JSON' }, result: true } });
    expect(back.json.dimensions.map((d: any) => d.name)).toEqual(['time', 'band', 'y', 'x']);
    expect(back.json.data).toEqual(orig.json.data);
    expect(flat.json.data[1]).toEqual(orig.json.data[0][1]);
    // numpy's reshape is the reference: (t, bands, y, x) to (t*bands, y, x) in C order, labels as the
    // product of the two label lists, and back again
    const file = path.join(work, 'flatten.json');
    writeFileSync(file, JSON.stringify({ orig: orig.json, flat: flat.json, back: back.json }));
    const same = run(PY, [
      '-c',
      `
import json, numpy as np
d = json.load(open('${file}'))
o, f, b = (np.array(d[k]['data'], dtype=float) for k in ('orig', 'flat', 'back'))
t, bands = (d['orig']['dimensions'][i]['labels'] for i in (0, 1))
want = o.reshape((o.shape[0] * o.shape[1],) + o.shape[2:])
labels = [f'{a}~{c}' for a in t for c in bands]
print(o.ndim == 4 and o.shape[0] > 1 and o.shape[1] > 1, f.shape == want.shape and np.array_equal(f, want, equal_nan=True),
      d['flat']['dimensions'][0]['labels'] == labels, b.shape == o.shape and np.array_equal(b.reshape(want.shape), want, equal_nan=True))
`,
    ]).trim();
    expect(same).toBe('True True True True');
    expectError(
      await result({ l: H, f: { process_id: 'flatten_dimensions', arguments: { data: { from_node: 'l' }, dimensions: ['t'], target_dimension: 'bands' }, result: true } }),
      400,
      'TargetDimensionExists',
    );
    expectError(
      await result({ l: H, f: { process_id: 'unflatten_dimension', arguments: { data: { from_node: 'l' }, dimension: 'bands', target_dimensions: ['a', 'b'] }, result: true } }),
      400,
      'ProcessParameterInvalid',
    );
  });
});
