// Soak: a mixed load on one server for a minute (15 s with --quick) with hundreds of connections:
// discovery (GET /, collections, processes), map tiles (new and cached), small synchronous
// computations (/result: scalar math and a 64 x 64 NDVI) by many users, and polling of batch jobs
// when the server offers them. Figures: errors (answers that are neither 2xx/3xx nor a deliberate
// 503 InfrastructureBusy or 429 TooManyRequests, plus socket errors and timeouts), p99 latency,
// and the growth of the server's RSS from after the warm-up to its peak. With --https the server
// serves TLS with a certificate made for the run, and every connection does its handshake.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, setGlobalDispatcher } from 'undici';
import { selfSignedCertificate, hasOpenssl } from './certificate.js';
import autocannon from 'autocannon';
import { CLI, Cleanup, round, rssMb, startXeo, table, tempDir, removeDir } from './lib.js';
import { tileAt } from '../src/tiles/tile-grid.js';

const DEMO = 'DEMO_S2_L2A';
const NDVI_SERVICE = {
  l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: null, temporal_extent: ['2024-06-01', '2024-07-01'], bands: ['B04', 'B08'] } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  r: {
    process_id: 'reduce_dimension',
    arguments: { data: { from_node: 'n' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
    result: true,
  },
};
const SMALL_NDVI = {
  l: {
    process_id: 'load_collection',
    arguments: { id: DEMO, spatial_extent: { west: 627000, south: 5305000, east: 627640, north: 5305640, crs: 32633 }, temporal_extent: ['2024-06-01', '2024-07-01'], bands: ['B04', 'B08'] },
  },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'n' }, format: 'PNG', options: { min: -1, max: 1 } }, result: true },
};
const USERS = 20;

interface Req {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export async function run(opts: { quick: boolean; https?: boolean }): Promise<{ figures: Record<string, number>; ratios: Record<string, number> }> {
  const cleanup = new Cleanup();
  try {
    const tls: Record<string, string> = {};
    if (opts.https) {
      if (!hasOpenssl) throw new Error('--https needs openssl to make a certificate');
      const dir = tempDir('xeo-soak-tls-');
      cleanup.add(() => removeDir(dir));
      const files = selfSignedCertificate(dir, 'soak');
      Object.assign(tls, { XEO_TLS_CERT: files.cert, XEO_TLS_KEY: files.key });
      // fetch (set-up and the check after the load) trusts the certificate; autocannon takes any.
      setGlobalDispatcher(new Agent({ connect: { ca: readFileSync(files.cert) } }));
    }
    console.log(`soak bench: starting Xeo with the demo collection${opts.https ? ', over HTTPS' : ''}`);
    const xeo = await startXeo({ XEO_DEMO: 'true', ...tls });
    cleanup.add(() => xeo.stop());
    const pid = xeo.proc.pid!;
    const api = `${xeo.url}/1.2.0`;
    const tokens: string[] = [];
    for (let i = 0; i < USERS; i++) {
      const add = spawnSync(process.execPath, [CLI, 'users', 'add', `soak${i}`, '--password', 'pw'], { env: { ...process.env, XEO_DATA_DIR: xeo.dataDir }, encoding: 'utf8' });
      if (add.status !== 0) throw new Error(`users add failed: ${add.stderr}`);
      const r = await fetch(`${api}/credentials/basic`, { headers: { authorization: 'Basic ' + Buffer.from(`soak${i}:pw`).toString('base64') } });
      tokens.push(`Bearer basic//${((await r.json()) as { access_token: string }).access_token}`);
    }
    const json = { 'content-type': 'application/json' };
    const created = await fetch(`${api}/services`, {
      method: 'POST',
      headers: { authorization: tokens[0], ...json },
      body: JSON.stringify({ type: 'XYZ', process: { process_graph: NDVI_SERVICE }, configuration: { colormap: 'ndvi', min: -0.2, max: 0.9 } }),
    });
    const sid = created.headers.get('xeo-identifier');
    if (created.status !== 201 || !sid) throw new Error(`service not created: ${created.status}`);

    // Jobs to poll, when this server has batch jobs.
    const jobPaths: { path: string; token: string }[] = [];
    for (let i = 0; i < 4; i++) {
      const j = await fetch(`${api}/jobs`, { method: 'POST', headers: { authorization: tokens[i], ...json }, body: JSON.stringify({ process: { process_graph: SMALL_NDVI }, title: `soak ${i}` }) });
      if (j.status !== 201) break;
      const id = j.headers.get('xeo-identifier')!;
      await fetch(`${api}/jobs/${id}/results`, { method: 'POST', headers: { authorization: tokens[i] } });
      jobPaths.push({ path: `/1.2.0/jobs/${id}`, token: tokens[i] }, { path: `/1.2.0/jobs/${id}/logs`, token: tokens[i] });
    }

    // The mix, cycled by every connection from a different starting point.
    const mix: Req[] = [];
    const tiles: string[] = [];
    for (const z of [12, 13, 14, 15]) {
      const c = tileAt(16.745, 47.928, z);
      for (let dy = -3; dy <= 3; dy++) for (let dx = -3; dx <= 3; dx++) tiles.push(`/xyz/${sid}/${z}/${c.x + dx}/${c.y + dy}.png`);
    }
    for (let i = 0; i < 40; i++) {
      mix.push({ method: 'GET', path: '/1.2.0/' });
      mix.push({ method: 'GET', path: tiles[(i * 37) % tiles.length] });
      mix.push({ method: 'GET', path: tiles[(i * 11) % 20] }); // the hot few, cached after the first
      if (i % 4 === 0) mix.push({ method: 'GET', path: '/1.2.0/collections' });
      if (i % 8 === 0) mix.push({ method: 'GET', path: '/1.2.0/processes' });
      if (i % 5 === 0) mix.push({ method: 'GET', path: `/1.2.0/collections/${DEMO}` });
      const token = tokens[i % USERS];
      if (i % 3 === 0)
        mix.push({
          method: 'POST',
          path: '/1.2.0/result',
          headers: { authorization: token, ...json },
          body: JSON.stringify({ process: { process_graph: { a: { process_id: 'multiply', arguments: { x: i, y: 3 }, result: true } } } }),
        });
      if (i % 6 === 0) mix.push({ method: 'POST', path: '/1.2.0/result', headers: { authorization: token, ...json }, body: JSON.stringify({ process: { process_graph: SMALL_NDVI } }) });
      if (jobPaths.length && i % 2 === 0) {
        const j = jobPaths[i % jobPaths.length];
        mix.push({ method: 'GET', path: j.path, headers: { authorization: j.token } });
      }
      if (i % 10 === 0) mix.push({ method: 'GET', path: '/1.2.0/me', headers: { authorization: token } });
    }

    const connections = opts.quick ? 100 : 200;
    const seconds = opts.quick ? 15 : 60;
    const warmupS = opts.quick ? 3 : 10;
    let cursor = 0;
    const requests = [
      {
        setupRequest: (req: Record<string, unknown>) => {
          const r = mix[cursor++ % mix.length];
          return { ...req, method: r.method, path: r.path, headers: { ...(req.headers as object), ...r.headers }, body: r.body };
        },
      },
    ];
    console.log(`  ${mix.length} requests in the mix (${tiles.length} tiles, ${jobPaths.length / 2} jobs polled), ${connections} connections, ${seconds} s`);
    // Warm-up: JIT, kernels, caches; the RSS after it is the baseline.
    await autocannon({ url: xeo.url, connections, duration: warmupS, requests });
    const warmRss = rssMb(pid);
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(rssMb(pid)), 250);
    const r = await autocannon({ url: xeo.url, connections, duration: seconds, timeout: 30, requests });
    clearInterval(sampler);
    const endRss = rssMb(pid);
    const codes = Object.fromEntries(Object.entries(r.statusCodeStats).map(([c, v]) => [c, v.count]));
    const deliberate = (c: string) => c === '503' || c === '429';
    const bad = Object.entries(codes)
      .filter(([c]) => !/^[23]\d\d$/.test(c) && !deliberate(c))
      .reduce((s, [, n]) => s + n, 0);
    const errors = bad + r.errors + r.timeouts;
    // After the load: still alive and answering.
    const alive = await fetch(`${api}/`);
    if (alive.status !== 200) throw new Error(`the server answered ${alive.status} after the soak`);
    const peak = Math.max(...samples, endRss);
    const figures = {
      connections,
      seconds,
      answers: r.requests.total,
      answers_per_s: round(r.requests.total / r.duration),
      errors,
      deliberate_503: codes['503'] ?? 0,
      deliberate_429: codes['429'] ?? 0,
      p50_ms: r.latency.p50,
      p99_ms: r.latency.p99,
      rss_warm_mb: round(warmRss),
      rss_peak_mb: round(peak),
      rss_end_mb: round(endRss),
    };
    const ratios = { rss_growth_ratio: round(peak / warmRss, 3) };
    console.log(`  status codes ${JSON.stringify(codes)}, socket errors ${r.errors}, timeouts ${r.timeouts}`);
    console.log();
    console.log(table([['figure', 'value'], ...Object.entries(figures).map(([k, v]) => [k, v]), ...Object.entries(ratios).map(([k, v]) => [k, v])]));
    return { figures, ratios };
  } finally {
    await cleanup.run();
  }
}
