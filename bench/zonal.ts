// Zonal statistics at scale: 10,000 field polygons over 12 dates of a 10,000 x 10,000 raster (10 m,
// UInt16 COGs, deflate with predictor 2), mean and counts per field and date, as a batch job (CSV
// out) and as /result for 100 fields; in the same run the peer users would write instead: GDAL's
// rasteriser for a label plane and numpy's bincount per date (Debian's python3-gdal, GDAL reading
// with all threads). `--quick`: 2,500 x 2,500 px and 625 fields.
// Figures: Mpx/s (raster pixels x dates per second), seconds per 1,000 fields, numpy_over_xeo (the
// peer's time over ours; target >= 2), peak RSS of the server (after the job, and at the end) and
// of the peer, rss_over_peer (the server's peak over the whole bench over the peer's; target <=
// 1.5), job_rss_over_peer (the server's peak until the job ended over the peer's: the same work on
// both sides), and how far the
// means are apart. The job runs on a server that has run a (small) job before, as servers do. The
// same job and peer also run on uncompressed copies of the COGs: there decoding costs little for
// both, and what remains is the zonal work itself.
import { spawnSync } from 'node:child_process';
import { Agent, fetch, setGlobalDispatcher } from 'undici';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CLI, Cleanup, chunkTimesLine, median, procKb, round, startChild, table, tempDir, removeDir, threadCpu, threadCpuSince, type Child } from './lib.js';
import type { BenchOptions, BenchResult } from './run.js';

const PY = '/usr/bin/python3';
const DATES = 12;
// The peer runs for minutes between two requests: no connection is kept that long.
setGlobalDispatcher(new Agent({ keepAliveTimeout: 1000, keepAliveMaxTimeout: 1000 }));
const X0 = 600000;
const Y0 = 5400000;

/** The raster (12 dated COGs) and the fields (a grid of cells, one polygon in each), made with numpy and GDAL. */
function makeData(dir: string, size: number, cells: number): void {
  const script = `
import numpy as np, datetime, os
from osgeo import gdal, ogr, osr
os.makedirs('${dir}/raw', exist_ok=True)
gdal.UseExceptions()
gdal.SetConfigOption('GDAL_NUM_THREADS', 'ALL_CPUS')
N, C, D = ${size}, ${cells}, ${DATES}
cell = N // C
rng = np.random.default_rng(1)
utm = osr.SpatialReference(); utm.ImportFromEPSG(32633)
utm.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
wgs = osr.SpatialReference(); wgs.ImportFromEPSG(4326)
wgs.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
to_wgs = osr.CoordinateTransformation(utm, wgs)
# fields: a star-shaped polygon of 8-16 vertices inside each cell, in EPSG:4326 (GeoJSON)
drv = ogr.GetDriverByName('GeoJSON')
ds = drv.CreateDataSource('${dir}/fields.geojson')
lyr = ds.CreateLayer('fields', wgs, ogr.wkbPolygon, ['COORDINATE_PRECISION=9', 'RFC7946=NO'])
lyr.CreateField(ogr.FieldDefn('field_id', ogr.OFTInteger))
for j in range(C):
    for i in range(C):
        cx = ${X0} + (i + 0.5) * cell * 10; cy = ${Y0} - (j + 0.5) * cell * 10
        n = int(rng.integers(8, 17))
        a = (np.arange(n) + rng.uniform(-0.3, 0.3, n)) * 2 * np.pi / n
        r = cell * 10 * 0.42 * (1 + rng.uniform(-0.25, 0.15, n))  # within its cell: fields do not overlap
        ring = ogr.Geometry(ogr.wkbLinearRing)
        for k in range(n): ring.AddPoint_2D(float(cx + r[k] * np.cos(a[k])), float(cy + r[k] * np.sin(a[k])))
        ring.CloseRings()
        g = ogr.Geometry(ogr.wkbPolygon); g.AddGeometry(ring); g.Transform(to_wgs)
        f = ogr.Feature(lyr.GetLayerDefn()); f.SetField('field_id', j * C + i); f.SetGeometry(g); lyr.CreateFeature(f)
ds = None
# the raster: per field a level, smooth change over time, noise; 0 is no-data (a few clouds)
yy, xx = np.mgrid[0:N, 0:N]
level = (1000 + 3000 * rng.random((C, C)))[yy // cell, xx // cell].astype(np.float32)
mem = gdal.GetDriverByName('MEM')
for t in range(D):
    v = level * (0.8 + 0.4 * np.sin(t / 2.0)) + rng.normal(0, 60, (N, N)).astype(np.float32)
    v = np.clip(v, 1, 65535).astype(np.uint16)
    cy, cx = rng.integers(0, N, 2)
    v[max(0, cy - N // 20):cy + N // 20, max(0, cx - N // 20):cx + N // 20] = 0
    m = mem.Create('', N, N, 1, gdal.GDT_UInt16)
    m.SetGeoTransform([${X0}, 10, 0, ${Y0}, 0, -10]); m.SetProjection(utm.ExportToWkt())
    b = m.GetRasterBand(1); b.SetNoDataValue(0); b.WriteArray(v)
    d = (datetime.date(2024, 1, 10) + datetime.timedelta(days=30 * t)).strftime('%Y%m%d')
    gdal.Translate('${dir}/bench_%s.tif' % d, m, format='COG', creationOptions=['COMPRESS=DEFLATE', 'PREDICTOR=2', 'BLOCKSIZE=512', 'NUM_THREADS=ALL_CPUS', 'OVERVIEWS=NONE'])
    # the same without compression: where decoding costs nothing, what is left is the zonal work
    gdal.Translate('${dir}/raw/bench_%s.tif' % d, m, format='COG', creationOptions=['COMPRESS=NONE', 'BLOCKSIZE=512', 'OVERVIEWS=NONE'])
    m = None
`;
  const r = spawnSync(PY, ['-c', script], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`making the data failed: ${r.stderr}`);
}

/** The peer: GDAL rasterises the fields to a label plane, numpy sums per label with bincount, date by date. */
function numpyPeer(dir: string, rasters: string, window: [number, number, number, number] | null, fieldIds: number[] | null): { seconds: number; peakMb: number; means: Record<string, number[]> } {
  const script = `
import numpy as np, glob, json, time, resource
from osgeo import gdal, ogr
gdal.UseExceptions()
gdal.SetConfigOption('GDAL_NUM_THREADS', 'ALL_CPUS')
t0 = time.perf_counter()
files = sorted(glob.glob('${rasters}/bench_*.tif'))
ref = gdal.Open(files[0])
gt = ref.GetGeoTransform()
win = ${window ? JSON.stringify(window) : 'None'}
c0, r0, w, h = win if win else (0, 0, ref.RasterXSize, ref.RasterYSize)
src = ogr.Open('${dir}/fields.geojson'); lyr = src.GetLayer()
ids = ${fieldIds ? JSON.stringify(fieldIds) : 'None'}
if ids is not None: lyr.SetAttributeFilter('field_id IN (%s)' % ','.join(map(str, ids)))
n = lyr.GetFeatureCount()
labels = gdal.GetDriverByName('MEM').Create('', w, h, 1, gdal.GDT_Int32)
labels.SetGeoTransform([gt[0] + c0 * gt[1], gt[1], 0, gt[3] + r0 * gt[5], 0, gt[5]]); labels.SetProjection(ref.GetProjection())
# burn field_id + 1 (0: no field); GDAL reprojects the fields to the raster's CRS
sql = src.ExecuteSQL('SELECT field_id + 1 AS burn, * FROM fields' + ('' if ids is None else ' WHERE field_id IN (%s)' % ','.join(map(str, ids))))
gdal.RasterizeLayer(labels, [1], sql, options=['ATTRIBUTE=burn'])
src.ReleaseResultSet(sql)
lab = labels.GetRasterBand(1).ReadAsArray().ravel()
top = int(lab.max()) + 1
out = {}
for f in files:
    ds = gdal.Open(f)
    v = ds.GetRasterBand(1).ReadAsArray(c0, r0, w, h).ravel()
    ok = v != 0
    l = lab[ok]
    s = np.bincount(l, weights=v[ok], minlength=top)
    c = np.bincount(l, minlength=top)
    with np.errstate(invalid='ignore', divide='ignore'):
        m = (s / c)[1:]
        out[f[-12:-4]] = [None if x != x else x for x in m.tolist()]
secs = time.perf_counter() - t0
print(json.dumps({'seconds': secs, 'peak_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 'means': out}))
`;
  const r = spawnSync(PY, ['-c', script], { encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`the numpy peer failed: ${r.stderr}`);
  const j = JSON.parse(r.stdout.trim().split('\n').pop()!);
  return { seconds: j.seconds, peakMb: j.peak_mb, means: j.means };
}

async function api(xeo: Child, method: string, p: string, token: string, body?: unknown) {
  const send = () => fetch(`${xeo.url}/1.2.0${p}`, { method, headers: { authorization: token, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  try {
    return await send();
  } catch {
    // A connection closed while the peer ran for minutes: once more on a new one.
    try {
      return await send();
    } catch (e) {
      throw new Error(`${method} ${p} failed (${String((e as { cause?: unknown }).cause ?? e)}); the server said:\n${xeo.output().slice(-2000)}`, { cause: e });
    }
  }
}

const graph = (geometries: unknown, format: string, collection = 'BENCH') => ({
  l: { process_id: 'load_collection', arguments: { id: collection, spatial_extent: null, temporal_extent: null } },
  v: geometries,
  a: {
    process_id: 'aggregate_spatial',
    arguments: {
      data: { from_node: 'l' },
      geometries: { from_node: 'v' },
      target_dimension: 'stats',
      reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } },
    },
  },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'a' }, format }, result: true },
});

/** The largest difference between our means (CSV: feature_index, field_id, date, B1~value, ...) and the peer's. */
function worstDiff(csv: string, peer: Record<string, number[]>): number {
  const lines = csv.trim().split(/\r?\n/);
  const head = lines[0].split(',');
  const fi = head.indexOf('field_id');
  const di = head.indexOf('date');
  const vi = head.findIndex((h) => h.endsWith('value'));
  const dates = Object.keys(peer).sort();
  const ourDates = [...new Set(lines.slice(1).map((l) => l.split(',')[di]))].sort();
  let worst = 0;
  for (const line of lines.slice(1)) {
    const f = line.split(',');
    // the peer's means are indexed by field id
    const want = peer[dates[ourDates.indexOf(f[di])]][Number(f[fi])];
    const got = f[vi] === '' ? NaN : Number(f[vi]);
    if (want === null || Number.isNaN(want)) {
      if (!Number.isNaN(got)) worst = Infinity;
      continue;
    }
    worst = Math.max(worst, Math.abs(got - want) / Math.max(1, Math.abs(want)));
  }
  return worst;
}

/** Runs a batch job to its end: its duration (from its usage), wall time and result text. */
async function runJob(xeo: Child, token: string, g: unknown): Promise<{ seconds: number; wall: number; text: string; times?: string }> {
  const created = await api(xeo, 'POST', '/jobs', token, { process: { process_graph: g } });
  const id = created.headers.get('xeo-identifier')!;
  const t = performance.now();
  await api(xeo, 'POST', `/jobs/${id}/results`, token);
  let record: { status: string; usage?: Record<string, { value: number }> } = { status: '' };
  while (record.status !== 'finished' && record.status !== 'error') {
    await new Promise((r) => setTimeout(r, 200));
    record = (await (await api(xeo, 'GET', `/jobs/${id}`, token)).json()) as typeof record;
  }
  const wall = (performance.now() - t) / 1000;
  if (record.status !== 'finished') throw new Error(`the job failed: ${JSON.stringify(await (await api(xeo, 'GET', `/jobs/${id}/logs`, token)).json())}`);
  const doc = (await (await api(xeo, 'GET', `/jobs/${id}/results`, token)).json()) as { assets: Record<string, { href: string }> };
  const text = await (await fetch(Object.values(doc.assets)[0].href)).text();
  const logs = (await (await api(xeo, 'GET', `/jobs/${id}/logs`, token)).json()) as { logs: { message: string }[] };
  return { seconds: record.usage?.duration?.value ?? wall, wall, text, times: chunkTimesLine(logs.logs) };
}

export async function run(opts: BenchOptions): Promise<BenchResult> {
  const cleanup = new Cleanup();
  try {
    const size = opts.quick ? 2500 : 10000;
    const cells = opts.quick ? 25 : 100;
    const dir = tempDir('xeo-bench-zonal-');
    cleanup.add(() => removeDir(dir));
    const t = performance.now();
    console.log(`zonal bench: making ${DATES} COGs of ${size} x ${size} px and ${cells * cells} fields with numpy and GDAL`);
    makeData(dir, size, cells);
    console.log(`  made in ${round((performance.now() - t) / 1000, 1)} s`);

    const dataDir = tempDir('xeo-bench-zonal-data-');
    cleanup.add(() => removeDir(dataDir));
    const files = Array.from({ length: DATES }, (_, k) => {
      const d = new Date(Date.UTC(2024, 0, 10) + 30 * k * 86400000);
      return path.join(dir, `bench_${d.toISOString().slice(0, 10).replaceAll('-', '')}.tif`);
    });
    const env = { ...process.env, XEO_DATA_DIR: dataDir };
    const rawFiles = files.map((f) => path.join(dir, 'raw', path.basename(f)));
    for (const args of [
      ['import', ...files, '--collection', 'BENCH', '--bands', 'B1'],
      ['import', ...rawFiles, '--collection', 'BENCH_RAW', '--bands', 'B1'],
      ['users', 'add', 'bench', '--password', 'bench'],
    ]) {
      const r = spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${args[0]} failed: ${r.stderr}`);
    }
    const xeo = await startChild(CLI, ['serve'], { XEO_HOST: '127.0.0.1', XEO_PORT: '0', XEO_DATA_DIR: dataDir, XEO_ACCESS_LOG: '0', XEO_DEMO: 'false', XEO_JOB_THREADS: '1' });
    cleanup.add(() => xeo.stop());
    const pid = xeo.proc.pid;
    const signin = await fetch(`${xeo.url}/1.2.0/credentials/basic`, { headers: { authorization: `Basic ${Buffer.from('bench:bench').toString('base64')}` } });
    const token = `Bearer basic//${((await signin.json()) as { access_token: string }).access_token}`;
    const up = await fetch(`${xeo.url}/1.2.0/files/fields.geojson`, {
      method: 'PUT',
      headers: { authorization: token, 'content-type': 'application/octet-stream' },
      body: readFileSync(path.join(dir, 'fields.geojson')),
    });
    if (up.status !== 200) throw new Error(`upload failed: ${up.status}`);
    const fieldCount = cells * cells;

    // A server that has run a job before: the job thread's code is compiled and its modules loaded.
    const fields = JSON.parse(readFileSync(path.join(dir, 'fields.geojson'), 'utf8')) as { type: string; features: { properties: { field_id: number } }[] };
    await runJob(xeo, token, graph({ process_id: 'load_geojson', arguments: { data: { ...fields, features: fields.features.slice(0, 4) } } }, 'CSV'));

    // --- the batch job: every field, CSV out
    const uploaded = { process_id: 'load_uploaded_files', arguments: { paths: ['fields.geojson'], format: 'GeoJSON' } };
    const threads0 = threadCpu(pid);
    const job = await runJob(xeo, token, graph(uploaded, 'CSV'));
    const threads = threadCpuSince(threads0, threadCpu(pid));
    const jobSeconds = job.seconds;
    const jobWall = job.wall;
    const csv = job.text;
    const jobPeakMb = procKb(pid, 'VmHWM') / 1024;
    console.log(`  xeo batch job: ${fieldCount} fields in ${round(jobSeconds, 2)} s (wall ${round(jobWall, 2)} s), server peak RSS ${round(jobPeakMb, 0)} MB`);
    console.log(
      `    CPU s by thread: ${Object.entries(threads)
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join(', ')}; ${job.times ?? ''}`,
    );

    // --- the peer, all fields
    const peer = numpyPeer(dir, dir, null, null);
    console.log(`  numpy + GDAL: ${round(peer.seconds, 2)} s, peak RSS ${round(peer.peakMb, 0)} MB`);
    const jobDiff = worstDiff(csv, peer.means);

    // --- the same on uncompressed COGs: reading costs little for both, the zonal work shows
    const raw = await runJob(xeo, token, graph(uploaded, 'CSV', 'BENCH_RAW'));
    const peerRaw = numpyPeer(dir, path.join(dir, 'raw'), null, null);
    console.log(`  uncompressed: xeo ${round(raw.seconds, 2)} s, numpy + GDAL ${round(peerRaw.seconds, 2)} s`);
    const rawDiff = worstDiff(raw.text, peerRaw.means);

    // --- /result for 100 fields: a block of 10 x 10 cells in the middle
    const mid = Math.floor(cells / 2) - 5;
    const ids: number[] = [];
    for (let j = 0; j < 10; j++) for (let i = 0; i < 10; i++) ids.push((mid + j) * cells + mid + i);
    const hundred = { ...fields, features: fields.features.filter((f) => ids.includes(f.properties.field_id)) };
    writeFileSync(path.join(dir, 'hundred.geojson'), JSON.stringify(hundred));
    const syncGraph = graph({ process_id: 'load_geojson', arguments: { data: hundred } }, 'CSV');
    const syncTimes: number[] = [];
    let syncCsv = '';
    for (let k = 0; k < (opts.quick ? 3 : 5); k++) {
      const s0 = performance.now();
      const r = await api(xeo, 'POST', '/result', token, { process: { process_graph: syncGraph } });
      syncCsv = await r.text();
      if (r.status !== 200) throw new Error(`/result failed: ${r.status} ${syncCsv.slice(0, 300)}`);
      syncTimes.push((performance.now() - s0) / 1000);
    }
    const cell = size / cells;
    const window: [number, number, number, number] = [mid * cell, mid * cell, 10 * cell, 10 * cell];
    const peerTimes: number[] = [];
    let peer100 = numpyPeer(dir, dir, window, ids);
    peerTimes.push(peer100.seconds);
    for (let k = 1; k < (opts.quick ? 3 : 5); k++) peerTimes.push((peer100 = numpyPeer(dir, dir, window, ids)).seconds);
    const syncDiff = worstDiff(syncCsv, peer100.means);
    const serverPeakMb = procKb(pid, 'VmHWM') / 1024;

    const mpx = (size * size * DATES) / 1e6;
    const figures = {
      raster_px: size * size,
      dates: DATES,
      fields: fieldCount,
      xeo_job_s: round(jobSeconds, 3),
      xeo_job_wall_s: round(jobWall, 3),
      numpy_s: round(peer.seconds, 3),
      xeo_uncompressed_s: round(raw.seconds, 3),
      numpy_uncompressed_s: round(peerRaw.seconds, 3),
      xeo_mpx_per_s: round(mpx / jobSeconds, 1),
      numpy_mpx_per_s: round(mpx / peer.seconds, 1),
      xeo_s_per_1000_fields: round((jobSeconds / fieldCount) * 1000, 3),
      numpy_s_per_1000_fields: round((peer.seconds / fieldCount) * 1000, 3),
      xeo_result_100_fields_s: round(median(syncTimes), 3),
      numpy_100_fields_s: round(median(peerTimes), 3),
      xeo_job_peak_rss_mb: round(jobPeakMb, 0),
      ...Object.fromEntries(Object.entries(threads).map(([k, v]) => [`xeo_job_cpu_${k}_s`, v])),
      xeo_peak_rss_mb: round(serverPeakMb, 0),
      numpy_peak_rss_mb: round(peer.peakMb, 0),
      worst_relative_diff_job: jobDiff,
      worst_relative_diff_result: syncDiff,
      worst_relative_diff_uncompressed: rawDiff,
    };
    console.log();
    console.log(
      table([
        ['', 'xeo', 'numpy + GDAL'],
        [`batch, ${fieldCount} fields (s)`, figures.xeo_job_s, figures.numpy_s],
        ['same, uncompressed COGs (s)', figures.xeo_uncompressed_s, figures.numpy_uncompressed_s],
        ['Mpx/s (px x dates)', figures.xeo_mpx_per_s, figures.numpy_mpx_per_s],
        ['s per 1,000 fields', figures.xeo_s_per_1000_fields, figures.numpy_s_per_1000_fields],
        ['100 fields (s, median)', figures.xeo_result_100_fields_s, figures.numpy_100_fields_s],
        ['peak RSS (MB)', figures.xeo_peak_rss_mb, figures.numpy_peak_rss_mb],
      ]),
    );
    console.log(`means apart by at most ${jobDiff.toExponential(2)} (batch) and ${syncDiff.toExponential(2)} (/result), relative`);
    return {
      figures,
      ratios: {
        numpy_over_xeo: round(peer.seconds / jobSeconds, 3),
        numpy_over_xeo_100_fields: round(median(peerTimes) / median(syncTimes), 3),
        numpy_over_xeo_uncompressed: round(peerRaw.seconds / raw.seconds, 3),
        // the server's peak over the whole bench (both jobs and /result) over the peer's
        rss_over_peer: round(serverPeakMb / peer.peakMb, 3),
        // the server's peak until the batch job ended (start-up, a small job, the job) over the peer's
        job_rss_over_peer: round(jobPeakMb / peer.peakMb, 3),
      },
    };
  } finally {
    await cleanup.run();
  }
}
