// XYZ tiles of an NDVI service over the demo collection:
//  1. cold tiles: distinct tiles not yet in the tile cache, one at a time, with the time of each
//     stage from the Server-Timing header (read, warp, kernel, encode);
//  2. cached tiles: autocannon on a cached tile against a bare uWS server sending the same bytes
//     and headers (bare-server.ts), alternating, so the ratio is our own overhead per tile;
//  3. a pan-and-zoom replay of a map session (views of 1280 x 800 px, six connections like a
//     browser) with hundreds of distinct tiles;
//  1b. the map preview of the demo collection (its xyz link: true colour of the newest date):
//     cold tiles as in 1, then the same tiles again from the cache, and one cached preview tile
//     against the bare server as in 2;
//  2b. a cached tile at a steady rate (well below saturation) alone and while a large batch job
//     (the large NDVI job of the batch bench) runs, alternating: the job takes every free core,
//     and `tile_p99_during_job_over_alone` says what that costs the map; beside it, how long
//     the event loop and the load generator waited for a CPU (Linux's schedstat);
//  4. memory under load: new and cached tiles for a minute (10 s with --quick) with a small tile
//     cache, sampling the server's RSS against its configured bounds.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import autocannon from 'autocannon';
import { BENCH_DIR, CLI, Cleanup, cannon, median, pct, pooledP99, removeDir, round, rssMb, startChild, startXeo, table, tempDir, type Load } from './lib.js';
import type { BareSpec } from './bare-server.js';
import { tileAt, type TileCoord } from '../src/tiles/tile-grid.js';
import { ndvi as ndviJob, SIDE_M } from './batch.js';

const NDVI = {
  l: { process_id: 'load_collection', arguments: { id: 'DEMO_S2_L2A', spatial_extent: null, temporal_extent: ['2024-06-01', '2024-07-01'], bands: ['B04', 'B08'] } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  r: {
    process_id: 'reduce_dimension',
    arguments: { data: { from_node: 'n' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
    result: true,
  },
};
/** The demo scene's centre. */
const CENTRE = { lon: 16.745, lat: 47.928 };
const TILE_CACHE_MB = 32;
const BLOCK_CACHE_MB = 64;
const THREADS = 2;

interface Timed {
  ms: number;
  status: number;
  stages: Record<string, number> | null;
  bytes: number;
}

async function getTile(url: string): Promise<Timed> {
  const t0 = performance.now();
  const r = await fetch(url);
  const body = await r.arrayBuffer();
  const ms = performance.now() - t0;
  const timing = r.headers.get('server-timing');
  const stages = timing ? Object.fromEntries([...timing.matchAll(/(\w+);dur=([\d.]+)/g)].map((m) => [m[1], Number(m[2])])) : null;
  return { ms, status: r.status, stages, bytes: body.byteLength };
}

/** The tiles a map view of w x h css pixels centred on (lon, lat) at zoom z shows. */
function viewTiles(lon: number, lat: number, z: number, w = 1280, h = 800): TileCoord[] {
  const c = tileAt(lon, lat, z);
  // fractional position of the centre, in tiles
  const n = 2 ** z;
  const fx = ((lon + 180) / 360) * n;
  const r = (lat * Math.PI) / 180;
  const fy = ((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n;
  const out: TileCoord[] = [];
  for (let y = Math.floor(fy - h / 512); y <= Math.floor(fy + h / 512); y++) {
    for (let x = Math.floor(fx - w / 512); x <= Math.floor(fx + w / 512); x++) if (x >= 0 && y >= 0 && x < n && y < n) out.push({ z, x, y });
  }
  void c;
  return out;
}

/** A scripted map session: zoom in from the overview, pan around at each level, zoom out, and back. */
function session(): TileCoord[][] {
  const views: TileCoord[][] = [];
  let { lon, lat } = CENTRE;
  const stepDeg = (z: number) => (360 / 2 ** z) * 1.2; // about 300 css pixels
  for (const [z, pans] of [
    [11, 0],
    [12, 2],
    [13, 4],
    [14, 6],
    [15, 6],
    [14, 3],
    [13, 3],
    [16, 4],
  ] as const) {
    views.push(viewTiles(lon, lat, z));
    for (let i = 0; i < pans; i++) {
      const dir = [
        [1, 0],
        [0, -1],
        [-1, 0],
        [0, 1],
      ][(i + z) % 4];
      lon += dir[0] * stepDeg(z);
      lat += dir[1] * stepDeg(z) * 0.67;
      // stay over the scene
      lon = Math.min(16.87, Math.max(16.61, lon));
      lat = Math.min(48.01, Math.max(47.84, lat));
      views.push(viewTiles(lon, lat, z));
    }
  }
  return views;
}

/** Fetches URLs with at most `connections` at a time (a browser's per-host limit). */
async function fetchAll(urls: string[], connections: number): Promise<Timed[]> {
  const out: Timed[] = new Array(urls.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < urls.length) {
        const i = next++;
        out[i] = await getTile(urls[i]);
      }
    }),
  );
  return out;
}

export async function run(opts: { quick: boolean }): Promise<{ figures: Record<string, number>; ratios: Record<string, number> }> {
  const cleanup = new Cleanup();
  try {
    console.log('tiles bench: starting Xeo with the demo collection (generated on first start, ~10 s)');
    const xeo = await startXeo(
      {
        XEO_DEMO: 'true',
        XEO_TILE_CACHE_BYTES: String(TILE_CACHE_MB << 20),
        XEO_BLOCK_CACHE_BYTES: String(BLOCK_CACHE_MB << 20),
        XEO_COMPUTE_THREADS: String(THREADS),
      },
      [],
      // Generating the demo takes a while on a busy machine.
      180_000,
    );
    cleanup.add(() => xeo.stop());
    const pid = xeo.proc.pid!;
    const add = spawnSync(process.execPath, [CLI, 'users', 'add', 'bench', '--password', 'bench'], { env: { ...process.env, XEO_DATA_DIR: xeo.dataDir }, encoding: 'utf8' });
    if (add.status !== 0) throw new Error(`users add failed: ${add.stderr}`);
    const auth = 'Basic ' + Buffer.from('bench:bench').toString('base64');
    const token = ((await (await fetch(`${xeo.url}/1.2.0/credentials/basic`, { headers: { authorization: auth } })).json()) as { access_token: string }).access_token;
    const created = await fetch(`${xeo.url}/1.2.0/services`, {
      method: 'POST',
      headers: { authorization: `Bearer basic//${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'XYZ', title: 'NDVI bench', process: { process_graph: NDVI }, configuration: { colormap: 'ndvi', min: -0.2, max: 0.9 } }),
    });
    if (created.status !== 201) throw new Error(`service not created: ${created.status} ${await created.text()}`);
    const template = `${xeo.url}/xyz/${created.headers.get('xeo-identifier')}/{z}/{x}/{y}.png`;
    const urlOf = (t: TileCoord) => template.replace('{z}', String(t.z)).replace('{x}', String(t.x)).replace('{y}', String(t.y));

    // Warm-up: the JIT, the kernels (tier 1 compiles in the background) and the threads.
    const warm = viewTiles(CENTRE.lon, CENTRE.lat, 12);
    for (let i = 0; i < 3; i++) for (const t of warm) await getTile(urlOf({ ...t, z: t.z + i }));
    await new Promise((r) => setTimeout(r, 1500));

    // 1. Cold tiles: distinct zoom-14 tiles over the scene, one at a time.
    const coldTiles = viewTiles(16.7, 47.88, 14, opts.quick ? 1280 : 2560, opts.quick ? 768 : 1536);
    const cold: Timed[] = [];
    for (const t of coldTiles) cold.push(await getTile(urlOf(t)));
    const drawn = cold.filter((c) => c.status === 200 && c.stages);
    if (drawn.length < coldTiles.length / 2) throw new Error(`only ${drawn.length} of ${coldTiles.length} cold tiles were drawn`);
    const stage = (k: string) => round(median(drawn.map((c) => c.stages![k] ?? 0)), 2);
    const coldP50 = round(median(drawn.map((c) => c.ms)), 2);
    console.log(
      `cold tiles: ${drawn.length} drawn at zoom 14, p50 ${coldP50} ms, p90 ${round(
        pct(
          drawn.map((c) => c.ms),
          0.9,
        ),
        2,
      )} ms`,
    );
    console.log(`  server stages (median ms): read ${stage('read')}, warp ${stage('warp')}, kernel ${stage('kernel')}, encode ${stage('encode')}, total ${stage('total')}`);

    // 1b. The collection's preview through its xyz link: the first tile (the stretch's estimate, and
    // the kernels of the stretch), a warm-up view, then cold and cached tiles as above.
    const collection = (await (await fetch(`${xeo.url}/1.2.0/collections/DEMO_S2_L2A`)).json()) as { links: { rel: string; href: string }[] };
    const previewTemplate = collection.links.find((l) => l.rel === 'xyz')!.href;
    const previewOf = (t: TileCoord) => previewTemplate.replace('{z}', String(t.z)).replace('{x}', String(t.x)).replace('{y}', String(t.y));
    const previewWarm = viewTiles(CENTRE.lon, CENTRE.lat, 12);
    const previewFirst = await getTile(previewOf(previewWarm[0]));
    if (previewFirst.status !== 200) throw new Error(`the first preview tile answered ${previewFirst.status}`);
    for (const t of previewWarm.slice(1)) await getTile(previewOf(t));
    await new Promise((r) => setTimeout(r, 1500));
    const previewCold: Timed[] = [];
    for (const t of coldTiles) previewCold.push(await getTile(previewOf(t)));
    const previewDrawn = previewCold.filter((c) => c.status === 200 && c.stages);
    if (previewDrawn.length < coldTiles.length / 2) throw new Error(`only ${previewDrawn.length} of ${coldTiles.length} cold preview tiles were drawn`);
    const previewCached: Timed[] = [];
    for (const t of coldTiles) previewCached.push(await getTile(previewOf(t)));
    if (previewCached.some((c) => c.status !== 200 || c.stages)) throw new Error('a preview tile asked again was drawn again, not answered from the cache');
    const previewStage = (k: string) => round(median(previewDrawn.map((c) => c.stages![k] ?? 0)), 2);
    const previewColdP50 = round(median(previewDrawn.map((c) => c.ms)), 2);
    const previewCachedP50 = round(median(previewCached.map((c) => c.ms)), 3);
    console.log(
      `preview: first tile ${round(previewFirst.ms, 1)} ms (with the stretch's estimate); ${previewDrawn.length} cold tiles at zoom 14, p50 ${previewColdP50} ms, p90 ${round(
        pct(
          previewDrawn.map((c) => c.ms),
          0.9,
        ),
        2,
      )} ms; cached p50 ${previewCachedP50} ms`,
    );
    console.log(`  server stages (median ms): read ${previewStage('read')}, warp ${previewStage('warp')}, kernel ${previewStage('kernel')}, encode ${previewStage('encode')}, total ${previewStage('total')}`);

    // 2. Cached tile against a bare uWS server with the same answer.
    const hot = urlOf(coldTiles[Math.floor(coldTiles.length / 2)]);
    const hotAnswer = await fetch(hot);
    const body = Buffer.from(await hotAnswer.arrayBuffer());
    // Every header of Xeo's answer (the request id of this one answer included, as a fixed string of
    // the same length), but those uWS writes itself: the bare server sends the same bytes.
    const ownedByUws = /^(date|uwebsockets|content-length|connection|transfer-encoding)$/;
    const copied = (k: string) => !ownedByUws.test(k);
    const headers = [...hotAnswer.headers].filter(([k]) => copied(k));
    const hotPath = new URL(hot).pathname;
    // The cached preview tile too (its bytes are RGBA, twice a paletted NDVI tile's), against the same bare server.
    const previewHot = previewOf(coldTiles[Math.floor(coldTiles.length / 2)]);
    const previewAnswer = await fetch(previewHot);
    const previewBody = Buffer.from(await previewAnswer.arrayBuffer());
    const previewHeaders = [...previewAnswer.headers].filter(([k]) => copied(k));
    const previewPath = new URL(previewHot).pathname;
    const spec: BareSpec = {
      routes: {
        [hotPath]: { status: `200 ${STATUS_CODES[200]}`, headers, bodyBase64: body.toString('base64') },
        [previewPath]: { status: `200 ${STATUS_CODES[200]}`, headers: previewHeaders, bodyBase64: previewBody.toString('base64') },
      },
    };
    const dir = tempDir('xeo-bench-bare-');
    cleanup.add(() => removeDir(dir));
    writeFileSync(path.join(dir, 'spec.json'), JSON.stringify(spec));
    const bare = await startChild(path.join(BENCH_DIR, 'bare-server.js'), [path.join(dir, 'spec.json')]);
    cleanup.add(() => bare.stop());
    const rounds = opts.quick ? 2 : 4;
    const seconds = opts.quick ? 2 : 5;
    /** One cached tile under load, Xeo and the bare server alternating round by round. */
    const alternate = async (tilePath: string, label: string): Promise<Record<'xeo' | 'bare', Load[]>> => {
      const out: Record<'xeo' | 'bare', Load[]> = { xeo: [], bare: [] };
      for (const base of [xeo.url, bare.url]) await cannon({ url: base + tilePath, duration: 1 });
      for (let i = 0; i < rounds; i++) {
        for (const [who, base, p] of [
          ['xeo', xeo.url, pid],
          ['bare', bare.url, bare.proc.pid],
        ] as const) {
          const l = await cannon({ url: base + tilePath, duration: seconds }, p);
          out[who].push(l);
          console.log(`  ${label} ${who.padEnd(4)} round ${i + 1}/${rounds}: ${Math.round(l.reqPerSec)} tiles/s, p99 ${l.p99Ms} ms`);
        }
      }
      return out;
    };
    const loads = await alternate(hotPath, 'cached');
    const previewLoads = await alternate(previewPath, 'cached preview');
    const rate = (ls: Load[]) => ls.reduce((s, l) => s + l.requests, 0) / ls.reduce((s, l) => s + l.seconds, 0);
    const cpuUs = (ls: Load[]) => (ls.some((l) => l.serverCpuS === null) ? NaN : (1e6 * ls.reduce((s, l) => s + l.serverCpuS!, 0)) / ls.reduce((s, l) => s + l.requests, 0));

    // 2b. The cached tile at a steady rate, alone and while a large job runs.
    const bearer = `Bearer basic//${token}`;
    const jobApi = async (method: string, p: string, body?: unknown) =>
      fetch(`${xeo.url}/1.2.0${p}`, { method, headers: { authorization: bearer, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const startJob = async (graph: unknown): Promise<string> => {
      const r = await jobApi('POST', '/jobs', { process: { process_graph: graph } });
      if (r.status !== 201) throw new Error(`creating a job failed: ${r.status} ${await r.text()}`);
      const id = r.headers.get('xeo-identifier')!;
      if ((await jobApi('POST', `/jobs/${id}/results`)).status !== 202) throw new Error('starting a job failed');
      return id;
    };
    const jobStatus = async (id: string) => ((await (await jobApi('GET', `/jobs/${id}`)).json()) as { status: string; progress?: number }).status;
    const untilEnd = async (id: string) => {
      while (!['finished', 'error', 'canceled'].includes(await jobStatus(id))) await new Promise((r) => setTimeout(r, 100));
    };
    // The job's kernel compiles with its first job: a small one first.
    await untilEnd(await startJob(ndviJob(1280, 2.5)));
    await new Promise((r) => setTimeout(r, 3000));
    // Two seconds a load at any size: the large job runs for about four here, and the load during
    // it must end before the job does (five-second loads had measured an idle server in their last
    // seconds, in every round of a full run). A full run takes more rounds instead.
    const steady = { url: hot, duration: 2, connections: 4, overallRate: 400 };
    // The p99s come from every answer's own latency, all rounds pooled (pooledP99 says why);
    // autocannon's own stay beside them.
    const steadyLoads: Record<'alone' | 'job', Load[]> = { alone: [], job: [] };
    // Beside them, how long the server's event loop and the load generator waited for a CPU while
    // runnable (cannon's serverWaitS and loadgenWaitS): what a job costs a cached tile is mostly such
    // waits (docs/benchmarks.md).
    const waitLine = (l: Load) => (l.serverWaitS === null || l.loadgenWaitS === null ? 'not known' : `event loop ${round(l.serverWaitS * 1e3, 1)} ms, load generator ${round(l.loadgenWaitS * 1e3, 1)} ms`);
    let jobCut = 0;
    const steadyRounds = opts.quick ? rounds : 6;
    for (let i = 0; i < steadyRounds; i++) {
      const alone = await cannon(steady, pid, { latencies: true });
      steadyLoads.alone.push(alone);
      const id = await startJob(ndviJob(SIDE_M, 2.5));
      while ((await jobStatus(id)) !== 'running') await new Promise((r) => setTimeout(r, 50));
      // The threads start and the first chunks are under way.
      await new Promise((r) => setTimeout(r, 1000));
      const during = await cannon(steady, pid, { latencies: true });
      steadyLoads.job.push(during);
      const still = await jobStatus(id);
      if (still !== 'running') jobCut++;
      console.log(
        `  cached tile at 400/s, round ${i + 1}/${steadyRounds}: p99 alone ${round(pooledP99([alone]), 2)} ms (autocannon ${alone.p99Ms}), during a large job ${round(pooledP99([during]), 2)} ms (${during.p99Ms}) (autocannon's p50 ${alone.p50Ms} / ${during.p50Ms} ms; the job ${still} at the end)`,
      );
      console.log(`    waits for a CPU alone: ${waitLine(alone)}; during the job: ${waitLine(during)}`);
      await untilEnd(id);
    }
    /** Milliseconds a second of load that a main thread waited for a CPU, a side's rounds pooled; NaN where not known. */
    const waitMsPerS = (side: 'alone' | 'job', who: 'serverWaitS' | 'loadgenWaitS') => {
      const ls = steadyLoads[side];
      return ls.some((l) => l[who] === null) ? NaN : (1e3 * ls.reduce((t, l) => t + l[who]!, 0)) / ls.reduce((t, l) => t + l.seconds, 0);
    };
    if (jobCut) console.log(`  in ${jobCut} round(s) the job ended before the load did`);
    const p99 = {
      alone: pooledP99(steadyLoads.alone),
      job: pooledP99(steadyLoads.job),
      autocannonAlone: median(steadyLoads.alone.map((l) => l.p99Ms)),
      autocannonJob: median(steadyLoads.job.map((l) => l.p99Ms)),
    };

    // 3. Pan-and-zoom replay.
    const views = session();
    const seen = new Set<string>();
    const viewMs: number[] = [];
    const tileMs: number[] = [];
    let requests = 0;
    const t0 = performance.now();
    for (const v of views) {
      const urls = v.map(urlOf);
      urls.forEach((u) => seen.add(u));
      const s = performance.now();
      const got = await fetchAll(urls, 6);
      viewMs.push(performance.now() - s);
      requests += got.length;
      for (const g of got) {
        if (g.status !== 200) throw new Error(`replay tile answered ${g.status}`);
        tileMs.push(g.ms);
      }
    }
    const replayS = (performance.now() - t0) / 1000;
    console.log(`replay: ${views.length} views, ${requests} tile requests, ${seen.size} distinct tiles, ${round(replayS, 2)} s; view p50 ${round(median(viewMs), 1)} ms, p95 ${round(pct(viewMs, 0.95), 1)} ms`);

    // 4. Memory under load: random new and cached tiles with a small tile cache.
    const loadSeconds = opts.quick ? 10 : 60;
    const pool: string[] = [];
    for (const z of [15, 16, 17]) for (const t of viewTiles(CENTRE.lon, CENTRE.lat, z, 4096, 4096)) pool.push(new URL(urlOf(t)).pathname);
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(rssMb(pid)), 250);
    const statuses: Record<string, { count: number }> = {};
    const warmRss = rssMb(pid);
    let k = 0;
    const mem = await autocannon({
      url: xeo.url,
      connections: 32,
      duration: loadSeconds,
      requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, path: pool[(k = (k * 7919 + 13) % pool.length)] }) }],
    });
    clearInterval(sampler);
    Object.assign(statuses, mem.statusCodeStats);
    const errors =
      Object.entries(statuses)
        .filter(([c]) => c !== '200' && c !== '503')
        .reduce((s, [, v]) => s + v.count, 0) +
      mem.errors +
      mem.timeouts;
    const peak = Math.max(...samples);
    const boundMb = warmRss + TILE_CACHE_MB + THREADS * BLOCK_CACHE_MB;
    console.log(`memory: ${loadSeconds} s over ${pool.length} tiles, ${mem.requests.total} answers ${JSON.stringify(Object.fromEntries(Object.entries(statuses).map(([c, v]) => [c, v.count])))}`);
    console.log(`  RSS after warm-up ${round(warmRss)} MB, peak ${round(peak)} MB; bound = warm + tile cache ${TILE_CACHE_MB} MB + ${THREADS} x block cache ${BLOCK_CACHE_MB} MB = ${round(boundMb)} MB`);

    const figures = {
      cold_tiles_drawn: drawn.length,
      cold_tile_p50_ms: coldP50,
      cold_tile_p90_ms: round(
        pct(
          drawn.map((c) => c.ms),
          0.9,
        ),
        2,
      ),
      cold_read_ms: stage('read'),
      cold_warp_ms: stage('warp'),
      cold_kernel_ms: stage('kernel'),
      cold_encode_ms: stage('encode'),
      cold_server_total_ms: stage('total'),
      cached_tiles_per_s: round(rate(loads.xeo)),
      bare_tiles_per_s: round(rate(loads.bare)),
      cached_p99_ms: round(median(loads.xeo.map((l) => l.p99Ms)), 2),
      cached_cpu_us_per_tile: round(cpuUs(loads.xeo), 1),
      tile_p99_alone_ms: round(p99.alone, 3),
      tile_p99_during_job_ms: round(p99.job, 3),
      tile_p99_autocannon_alone_ms: round(p99.autocannonAlone, 2),
      tile_p99_autocannon_during_job_ms: round(p99.autocannonJob, 2),
      event_loop_wait_ms_per_s_alone: round(waitMsPerS('alone', 'serverWaitS'), 2),
      event_loop_wait_ms_per_s_during_job: round(waitMsPerS('job', 'serverWaitS'), 2),
      loadgen_wait_ms_per_s_alone: round(waitMsPerS('alone', 'loadgenWaitS'), 2),
      loadgen_wait_ms_per_s_during_job: round(waitMsPerS('job', 'loadgenWaitS'), 2),
      bare_cpu_us_per_tile: round(cpuUs(loads.bare), 1),
      tile_bytes: body.length,
      preview_first_ms: round(previewFirst.ms, 1),
      preview_cold_drawn: previewDrawn.length,
      preview_cold_p50_ms: previewColdP50,
      preview_cold_p90_ms: round(
        pct(
          previewDrawn.map((c) => c.ms),
          0.9,
        ),
        2,
      ),
      preview_server_total_ms: previewStage('total'),
      preview_cached_p50_ms: previewCachedP50,
      preview_cached_tiles_per_s: round(rate(previewLoads.xeo)),
      preview_bare_tiles_per_s: round(rate(previewLoads.bare)),
      preview_cached_cpu_us_per_tile: round(cpuUs(previewLoads.xeo), 1),
      preview_bare_cpu_us_per_tile: round(cpuUs(previewLoads.bare), 1),
      preview_tile_bytes: round(median(previewDrawn.map((c) => c.bytes))),
      replay_distinct_tiles: seen.size,
      replay_requests: requests,
      replay_s: round(replayS, 2),
      replay_view_p50_ms: round(median(viewMs), 1),
      replay_view_p95_ms: round(pct(viewMs, 0.95), 1),
      replay_tile_p50_ms: round(median(tileMs), 2),
      load_answers: mem.requests.total,
      load_errors: errors,
      rss_warm_mb: round(warmRss),
      rss_peak_mb: round(peak),
      rss_bound_mb: round(boundMb),
    };
    const ratios = {
      cached_over_bare: round(rate(loads.xeo) / rate(loads.bare), 3),
      cpu_bare_over_xeo: round(cpuUs(loads.bare) / cpuUs(loads.xeo), 3),
      tile_p99_during_job_over_alone: round(p99.job / p99.alone, 3),
      tile_p99_autocannon_during_job_over_alone: round(p99.autocannonJob / p99.autocannonAlone, 3),
      preview_cached_over_bare: round(rate(previewLoads.xeo) / rate(previewLoads.bare), 3),
      rss_peak_over_bound: round(peak / boundMb, 3),
    };
    console.log();
    console.log(table([['figure', 'value'], ...Object.entries(figures).map(([k, v]) => [k, v]), ...Object.entries(ratios).map(([k, v]) => [k, v])]));
    return { figures, ratios };
  } finally {
    await cleanup.run();
  }
}
