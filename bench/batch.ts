// Batch jobs at two sizes: the June NDVI of the demo collection at 2.5 m, over a square of half
// the demo's side (4096 x 4096 output pixels) and over the whole demo (8192 x 8192, 4x the pixels);
// with --quick at 5 m (2048 x 2048 and 4096 x 4096). Each run gets a fresh server, so the peak RSS
// of the server process (VmHWM) is that job's; the job is sent once the server has finished
// starting (lib.ts settled: its compute threads and the UDF runtime's first interpreter take
// about 1.5 CPU seconds in the first seconds, which a job sent at once would share the cores
// with). The server runs with its default job threads (XEO_JOB_THREADS). Figures: megapixels per
// second of job time and peak RSS per size; ratios: large over small for time (linear growth =
// the pixel ratio) and peak RSS (bounded memory = about 1). In the same run, after each large
// job, its peer: what a user would write instead with GDAL's Python bindings (python3-gdal) and
// numpy: gdalwarp of both bands of the same COGs to the job's grid (bilinear, all threads),
// numpy's NDVI, GDAL's COG driver with deflate and predictor 3 (all threads); `gdal_over_xeo` is
// the peer's time over the large job's. CPU seconds too (the server process during the job, the
// peer process): on a shared machine they say more than the times, which depend on what else runs.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';
import path from 'node:path';
import { CLI, Cleanup, chunkStages, chunkTimesLine, cpuSeconds, median, procKb, round, settled, startChild, table, tempDir, removeDir, threadCpu, threadCpuSince, untilKernelOnDisk, type Child } from './lib.js';
import type { BenchOptions, BenchResult } from './run.js';

const X0 = 620000;
const Y0 = 5320000;
export const SIDE_M = 20480;

export const ndvi = (side: number, resolution: number) => ({
  l: {
    process_id: 'load_collection',
    arguments: { id: 'DEMO_S2_L2A', spatial_extent: { west: X0, east: X0 + side, north: Y0, south: Y0 - side, crs: 32633 }, temporal_extent: ['2024-06-01', '2024-07-01'], bands: ['B04', 'B08'] },
  },
  r: { process_id: 'resample_spatial', arguments: { data: { from_node: 'l' }, resolution, method: 'bilinear' } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'r' } } },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'n' }, format: 'GTiff' }, result: true },
});

const PY = '/usr/bin/python3';

/** The peer's seconds (imports excluded), peak RSS, COG bytes and CPU seconds (all its threads). */
interface Peer {
  seconds: number;
  peakMb: number;
  bytes: number;
  cpu: number;
}

/** The GDAL + numpy peer of the large job. */
export function gdalPeer(demoDir: string, side: number, resolution: number): Peer | null {
  if (!existsSync(PY) || spawnSync(PY, ['-c', 'from osgeo import gdal; import numpy'], { stdio: 'ignore' }).status !== 0) return null;
  const out = tempDir('xeo-bench-peer-');
  const dir = path.join(demoDir, 'collections', 'DEMO_S2_L2A', '2024-06-21');
  const script = `
import numpy as np, time, resource, os
from osgeo import gdal
gdal.UseExceptions()
gdal.SetConfigOption('GDAL_NUM_THREADS', 'ALL_CPUS')
t0 = time.perf_counter()
u0 = resource.getrusage(resource.RUSAGE_SELF); cpu0 = u0.ru_utime + u0.ru_stime
def warp(band):
    return gdal.Warp('', '${dir}/%s.tif' % band, format='MEM', outputBounds=(${X0}, ${Y0 - side}, ${X0 + side}, ${Y0}), xRes=${resolution}, yRes=${resolution},
                     resampleAlg='bilinear', srcNodata=0, dstNodata=0, outputType=gdal.GDT_UInt16, multithread=True, warpOptions=['NUM_THREADS=ALL_CPUS'])
# (a dataset must outlive its bands: GDAL's bindings crash otherwise)
ds = warp('B04'); red = ds.GetRasterBand(1).ReadAsArray().astype(np.float32)
ds = warp('B08'); nir = ds.GetRasterBand(1).ReadAsArray().astype(np.float32)
ds = None
valid = (red != 0) & (nir != 0)
with np.errstate(invalid='ignore', divide='ignore'):
    ndvi = np.where(valid, (nir - red) / (nir + red), np.float32(np.nan)).astype(np.float32)
del red, nir, valid
h, w = ndvi.shape
mem = gdal.GetDriverByName('MEM').Create('', w, h, 1, gdal.GDT_Float32)
mem.SetGeoTransform((${X0}, ${resolution}, 0, ${Y0}, 0, -${resolution}))
src = gdal.Open('${dir}/B04.tif'); mem.SetProjection(src.GetProjection())
b = mem.GetRasterBand(1); b.SetNoDataValue(float('nan')); b.WriteArray(ndvi)
del ndvi, b
gdal.GetDriverByName('COG').CreateCopy('${out}/ndvi.tif', mem, options=['COMPRESS=DEFLATE', 'PREDICTOR=3', 'BLOCKSIZE=256', 'NUM_THREADS=ALL_CPUS', 'RESAMPLING=AVERAGE'])
secs = time.perf_counter() - t0
u = resource.getrusage(resource.RUSAGE_SELF)
print(secs, u.ru_maxrss / 1024, os.path.getsize('${out}/ndvi.tif'), u.ru_utime + u.ru_stime - cpu0)
`;
  try {
    const r = spawnSync(PY, ['-c', script], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`the GDAL peer failed (${r.status ?? r.signal}): ${r.stderr}${r.error?.message ?? ''}`);
    const [seconds, peakMb, bytes, cpu] = r.stdout.trim().split('\n').pop()!.split(' ').map(Number);
    return { seconds, peakMb, bytes, cpu };
  } finally {
    removeDir(out);
  }
}

interface Run {
  mpx: number;
  seconds: number;
  wallSeconds: number;
  /** CPU seconds of the whole server process (every thread) while the job ran. */
  cpu: number;
  peakMb: number;
  idleMb: number;
  bytes: number;
  /** CPU seconds by kind of thread while the job ran (lib.ts threadCpu). */
  threads: Record<string, number>;
  /** The job's own account of its chunks' time (seconds): read, warp, compute, write. */
  stages: Record<string, number>;
}

async function api(xeo: Child, method: string, p: string, token: string, body?: unknown): Promise<Response> {
  return fetch(`${xeo.url}/1.2.0${p}`, { method, headers: { authorization: token, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
}

/** A server on `dataDir` (kept when it stops). */
function serve(dataDir: string, env: Record<string, string> = {}, startMs?: number): Promise<Child> {
  return startChild(CLI, ['serve'], { XEO_HOST: '127.0.0.1', XEO_PORT: '0', XEO_DATA_DIR: dataDir, XEO_ACCESS_LOG: '0', XEO_DEMO: 'false', ...env }, [], undefined, startMs);
}

/** Signs in as the bench user. */
export async function signIn(xeo: Child): Promise<string> {
  const r = await fetch(`${xeo.url}/1.2.0/credentials/basic`, { headers: { authorization: `Basic ${Buffer.from('bench:bench').toString('base64')}` } });
  if (r.status !== 200) throw new Error(`sign-in failed: ${r.status}`);
  return `Bearer basic//${((await r.json()) as { access_token: string }).access_token}`;
}

function addUser(dataDir: string): void {
  const add = spawnSync(process.execPath, [CLI, 'users', 'add', 'bench', '--password', 'bench'], { env: { ...process.env, XEO_DATA_DIR: dataDir }, encoding: 'utf8' });
  if (add.status !== 0) throw new Error(`users add failed: ${add.stderr}`);
}

/** Creates and runs a job to its end; answers the job record and its results document. */
export async function runJob(
  xeo: Child,
  token: string,
  graph: unknown,
): Promise<{ job: { usage: Record<string, { value: number }> }; doc: { assets: Record<string, { 'file:size': number }> }; wallSeconds: number; times?: string }> {
  const created = await api(xeo, 'POST', '/jobs', token, { process: { process_graph: graph } });
  if (created.status !== 201) throw new Error(`creating the job failed: ${created.status} ${await created.text()}`);
  const id = created.headers.get('xeo-identifier')!;
  const t0 = performance.now();
  const started = await api(xeo, 'POST', `/jobs/${id}/results`, token);
  if (started.status !== 202) throw new Error(`starting the job failed: ${started.status}`);
  let job: { status: string; usage: Record<string, { value: number }> };
  for (;;) {
    await new Promise((r) => setTimeout(r, 100));
    job = (await (await api(xeo, 'GET', `/jobs/${id}`, token)).json()) as typeof job;
    if (job.status === 'finished' || job.status === 'error') break;
  }
  const wallSeconds = (performance.now() - t0) / 1000;
  if (job.status !== 'finished') throw new Error(`the job failed: ${JSON.stringify(await (await api(xeo, 'GET', `/jobs/${id}/logs`, token)).json())}`);
  const doc = (await (await api(xeo, 'GET', `/jobs/${id}/results`, token)).json()) as { assets: Record<string, { 'file:size': number }> };
  const logs = (await (await api(xeo, 'GET', `/jobs/${id}/logs`, token)).json()) as { logs: { message: string }[] };
  return { job, doc, wallSeconds, times: chunkTimesLine(logs.logs) };
}

/**
 * One job on a fresh server: its catalog a copy of the prepared demo's, its kernel cache too (as on
 * any server that ran such a graph before), so the peak is that of the job, not of compiling it.
 */
async function runOn(demoDir: string, graph: unknown): Promise<Run> {
  const dataDir = tempDir('xeo-bench-batch-');
  for (const f of ['xeo.sqlite', 'xeo.sqlite-wal', 'xeo.sqlite-shm']) {
    if (existsSync(path.join(demoDir, f))) cpSync(path.join(demoDir, f), path.join(dataDir, f));
  }
  cpSync(path.join(demoDir, 'kernels'), path.join(dataDir, 'kernels'), { recursive: true });
  const xeo = await serve(dataDir);
  try {
    const pid = xeo.proc.pid;
    const token = await signIn(xeo);
    await settled(xeo);
    const idleMb = procKb(pid, 'VmRSS') / 1024;
    const cpu0 = cpuSeconds(pid) ?? NaN;
    const threads0 = threadCpu(pid);
    const { job, doc, wallSeconds, times } = await runJob(xeo, token, graph);
    const cpu = (cpuSeconds(pid) ?? NaN) - cpu0;
    const threads = threadCpuSince(threads0, threadCpu(pid));
    return {
      mpx: job.usage.pixels.value / 1e6,
      seconds: job.usage.duration.value,
      wallSeconds,
      cpu,
      peakMb: procKb(pid, 'VmHWM') / 1024,
      idleMb,
      bytes: doc.assets['result.tif']['file:size'],
      threads,
      stages: chunkStages(times),
    };
  } finally {
    await xeo.stop();
    removeDir(dataDir);
  }
}

export async function run(opts: BenchOptions): Promise<BenchResult> {
  const cleanup = new Cleanup();
  try {
    console.log('batch bench: generating the demo collection and compiling the NDVI kernel once (~20 s)');
    const demoDir = tempDir('xeo-bench-demo-');
    cleanup.add(() => removeDir(demoDir));
    addUser(demoDir);
    const resolution = opts.quick ? 5 : 2.5;
    // Generating the demo takes a while on a busy machine.
    const prep = await serve(demoDir, { XEO_DEMO: 'true' }, 180_000);
    try {
      await runJob(prep, await signIn(prep), ndvi(1280, resolution));
      await untilKernelOnDisk(demoDir);
    } finally {
      await prep.stop();
    }
    const sizes = [
      { name: 'small', graph: ndvi(SIDE_M / 2, resolution) },
      { name: 'large', graph: ndvi(SIDE_M, resolution) },
    ];
    const rounds = opts.quick ? 1 : 3;
    const runs: Record<string, Run[]> = { small: [], large: [] };
    const peers: Peer[] = [];
    for (let r = 0; r < rounds; r++) {
      for (const s of sizes) {
        const one = await runOn(demoDir, s.graph);
        runs[s.name].push(one);
        console.log(
          `  round ${r + 1} ${s.name}: ${one.mpx.toFixed(1)} Mpx in ${one.seconds.toFixed(2)} s (wall ${one.wallSeconds.toFixed(2)} s, server CPU ${one.cpu.toFixed(2)} s), peak RSS ${one.peakMb.toFixed(0)} MB`,
        );
        const kinds = Object.entries(one.threads).map(([k, v]) => `${k} ${v.toFixed(2)}`);
        const stages = Object.entries(one.stages).map(([k, v]) => `${k} ${v.toFixed(2)}`);
        console.log(`    CPU s by thread: ${kinds.join(', ')}; the job's chunks (wall s): ${stages.join(', ')}`);
      }
      const peer = gdalPeer(demoDir, SIDE_M, resolution);
      if (peer) {
        peers.push(peer);
        console.log(`  round ${r + 1} GDAL + numpy, large: ${peer.seconds.toFixed(2)} s (CPU ${peer.cpu.toFixed(2)} s), peak RSS ${peer.peakMb.toFixed(0)} MB, COG ${(peer.bytes / 1e6).toFixed(1)} MB`);
      } else console.log('  GDAL + numpy peer skipped: python3-gdal or numpy is missing');
    }
    const summary = (name: string) => {
      const rs = runs[name];
      return {
        mpx: rs[0].mpx,
        seconds: median(rs.map((x) => x.seconds)),
        cpu: median(rs.map((x) => x.cpu)),
        peakMb: Math.max(...rs.map((x) => x.peakMb)),
        idleMb: median(rs.map((x) => x.idleMb)),
        bytes: rs[0].bytes,
        threads: Object.fromEntries(Object.keys(rs[0].threads).map((k) => [k, median(rs.map((x) => x.threads[k] ?? 0))])),
        stages: Object.fromEntries(Object.keys(rs[0].stages).map((k) => [k, median(rs.map((x) => x.stages[k] ?? 0))])),
      };
    };
    const small = summary('small');
    const large = summary('large');
    console.log(
      table([
        ['size', 'output Mpx', 'job s (median)', 'Mpx/s', 'peak RSS MB (max)', 'idle RSS MB', 'COG MB'],
        ...[
          ['small', small],
          ['large', large],
        ].map(([n, x]) => {
          const v = x as typeof small;
          return [n as string, round(v.mpx, 1), round(v.seconds, 2), round(v.mpx / v.seconds, 2), round(v.peakMb, 0), round(v.idleMb, 0), round(v.bytes / 1e6, 1)];
        }),
      ]),
    );
    return {
      figures: {
        resolution_m: resolution,
        small_mpx: round(small.mpx, 2),
        large_mpx: round(large.mpx, 2),
        small_s: round(small.seconds, 3),
        large_s: round(large.seconds, 3),
        small_mpx_per_s: round(small.mpx / small.seconds, 2),
        large_mpx_per_s: round(large.mpx / large.seconds, 2),
        small_peak_rss_mb: round(small.peakMb, 1),
        large_peak_rss_mb: round(large.peakMb, 1),
        large_cpu_s: round(large.cpu, 2),
        // Where the large job's CPU went by thread, and its chunks' wall time by stage.
        ...Object.fromEntries(Object.entries(large.threads).map(([k, v]) => [`large_cpu_${k}_s`, round(v, 2)])),
        ...Object.fromEntries(Object.entries(large.stages).map(([k, v]) => [`large_${k}_s`, round(v, 2)])),
        idle_rss_mb: round((small.idleMb + large.idleMb) / 2, 1),
        ...(peers.length
          ? {
              gdal_s: round(median(peers.map((p) => p.seconds)), 3),
              gdal_peak_rss_mb: round(Math.max(...peers.map((p) => p.peakMb)), 1),
              gdal_cog_mb: round(peers[0].bytes / 1e6, 1),
              gdal_cpu_s: round(median(peers.map((p) => p.cpu)), 2),
            }
          : {}),
      },
      ratios: {
        pixel_ratio: round(large.mpx / small.mpx, 3),
        time_ratio: round(large.seconds / small.seconds, 3),
        rss_ratio: round(large.peakMb / small.peakMb, 3),
        ...(peers.length
          ? {
              gdal_over_xeo: round(median(peers.map((p) => p.seconds)) / large.seconds, 3),
              large_rss_over_gdal: round(large.peakMb / Math.max(...peers.map((p) => p.peakMb)), 3),
              gdal_cpu_over_xeo: round(median(peers.map((p) => p.cpu)) / large.cpu, 3),
            }
          : {}),
      },
    };
  } finally {
    await cleanup.run();
  }
}
