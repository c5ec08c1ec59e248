// Records under load: two API nodes on one PostgreSQL behind a proxy that delays each direction by
// 1 ms (a round trip of about 2 ms, as across a network), 64 clients at once reading and changing
// job records (GET and PATCH /jobs/{id}, half on each node), while a second load reads a cached
// tile of node A; and the same tile load alone, before and after.
//  - records_per_s: record requests answered per second;
//  - records_concurrency: records per second × the measured round trip in seconds, the number of
//    statements in flight on average (a store that makes the event loop wait is stuck at ≤ 1 per
//    node: one statement at a time);
//  - tile_p99_with_records_over_alone: what the record load costs a cached tile at p99.
import { spawn } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import autocannon from 'autocannon';
import { CLI, Cleanup, cannon, median, pooledP99, round, startXeo, table, tempDir, type Load } from './lib.js';
import { hasPostgres, startPostgres } from './postgres.js';
import { startDelayProxyThread } from './delay-proxy.js';
import { writeCog } from '../src/output/cog-writer.js';
import { transformBox } from '../src/geometry/crs.js';
import { tileAt } from '../src/tiles/tile-grid.js';
import type { BenchOptions, BenchResult } from './run.js';

const CLIENTS = 64;
const JOBS = 64;
/** Each direction through the proxy. */
const DELAY_MS = 1;

const mean = {
  process_id: 'reduce_dimension',
  arguments: { data: { from_node: 'load' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
};

/** The median round trip of a one-line statement through the proxy, seconds. */
async function roundTrip(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const t0 = performance.now();
    await c.query('SELECT 1');
    times.push(performance.now() - t0);
  }
  await c.end();
  return median(times) / 1000;
}

export async function run(opts: BenchOptions): Promise<BenchResult> {
  if (!hasPostgres) throw new Error('this bench needs PostgreSQL 15 (Debian package postgresql)');
  const cleanup = new Cleanup();
  const seconds = opts.quick ? 5 : 15;
  try {
    const server = await startPostgres();
    cleanup.add(() => server.remove());
    const direct = new URL(server.database());
    const proxy = await startDelayProxyThread({ host: direct.hostname, port: Number(direct.port) }, DELAY_MS);
    cleanup.add(() => proxy.close());
    const url = `postgres://postgres@${proxy.host}:${proxy.port}${direct.pathname}`;
    const rtt = await roundTrip(url);
    console.log(`records bench: PostgreSQL behind a proxy of ${DELAY_MS} ms each way: ${round(rtt * 1000, 2)} ms per round trip`);

    // A small collection, a user and two API nodes, all on the database behind the proxy.
    const files = tempDir();
    const width = 256;
    const band = Uint16Array.from({ length: width * width }, (_, i) => 100 + (i % width) + Math.floor(i / width));
    await writeCog(path.join(files, 'small_20240301.tif'), { width, height: width, epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], bands: [band], nodata: 0 });
    const env = { XEO_DATABASE_URL: url, XEO_DEMO: 'false', XEO_COMPUTE_THREADS: '1' };
    // Asynchronously: the proxy's thread is free either way, but this process waits for nothing.
    const cli = (args: string[]) =>
      new Promise<void>((resolve, reject) => {
        const p = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, XEO_DATA_DIR: tempDir(), ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
        let err = '';
        p.stderr.on('data', (d) => (err += d));
        p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`xeo ${args[0]} failed: ${err}`))));
      });
    await cli(['import', '--collection', 'SMALL', path.join(files, 'small_20240301.tif')]);
    await cli(['users', 'add', 'bench', '--password', 'bench']);
    const [a, b] = await Promise.all([startXeo(env), startXeo(env)]);
    cleanup.add(() => a.stop());
    cleanup.add(() => b.stop());
    const basic = 'Basic ' + Buffer.from('bench:bench').toString('base64');
    const token = ((await (await fetch(`${a.url}/1.2.0/credentials/basic`, { headers: { authorization: basic } })).json()) as { access_token: string }).access_token;
    const headers = { authorization: `Bearer basic//${token}`, 'content-type': 'application/json' };

    const jobs: string[] = [];
    for (let i = 0; i < JOBS; i++) {
      const r = await fetch(`${a.url}/1.2.0/jobs`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ title: `job ${i}`, process: { process_graph: { x: { process_id: 'absolute', arguments: { x: -i }, result: true } } } }),
      });
      if (r.status !== 201) throw new Error(`job not created: ${r.status} ${await r.text()}`);
      jobs.push(r.headers.get('xeo-identifier')!);
    }
    const service = await fetch(`${a.url}/1.2.0/services`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        type: 'XYZ',
        configuration: { colormap: 'viridis', min: 100, max: 600 },
        process: {
          process_graph: {
            load: { process_id: 'load_collection', arguments: { id: 'SMALL', spatial_extent: null, temporal_extent: null } },
            r: mean,
            save: { process_id: 'save_result', arguments: { data: { from_node: 'r' }, format: 'PNG' }, result: true },
          },
        },
      }),
    });
    if (service.status !== 201) throw new Error(`service not created: ${service.status} ${await service.text()}`);
    const [w, s, e, n] = transformBox([600000, 5300000 - width * 10, 600000 + width * 10, 5300000], 32633, 4326);
    const t = tileAt((w + e) / 2, (s + n) / 2, 15);
    const tilePath = `/xyz/${service.headers.get('xeo-identifier')}/${t.z}/${t.x}/${t.y}.png`;
    const first = await fetch(a.url + tilePath);
    if (first.status !== 200) throw new Error(`the tile answered ${first.status}`);
    await first.arrayBuffer();

    // The tile load: a steady rate, well below what a node serves, so its latency is what shows.
    const tileLoad = (duration: number) => cannon({ url: a.url + tilePath, connections: 4, overallRate: 400, duration }, undefined, { latencies: true });
    // The record load: each client reads a job, then changes its title, over and over.
    const recordLoad = (base: string, part: string[], duration: number) =>
      autocannon({
        url: base,
        connections: CLIENTS / 2,
        duration,
        requests: part.flatMap((id, i) => [
          { method: 'GET' as const, path: `/1.2.0/jobs/${id}`, headers },
          { method: 'PATCH' as const, path: `/1.2.0/jobs/${id}`, headers, body: JSON.stringify({ title: `changed ${i}` }) },
        ]),
      });

    await tileLoad(1);
    const alone: Load[] = [];
    const mixed: Load[] = [];
    const records: { perSec: number; p99: number }[] = [];
    const rounds = opts.quick ? 2 : 3;
    for (let i = 0; i < rounds; i++) {
      alone.push(await tileLoad(seconds));
      const [ra, rb, tiles] = await Promise.all([recordLoad(a.url, jobs.slice(0, JOBS / 2), seconds), recordLoad(b.url, jobs.slice(JOBS / 2), seconds), tileLoad(seconds)]);
      for (const r of [ra, rb])
        if (r.non2xx || r.errors || r.timeouts) throw new Error(`the record load was not all 2xx: non2xx ${r.non2xx}, errors ${r.errors}, timeouts ${r.timeouts}, ${JSON.stringify(r.statusCodeStats)}`);
      mixed.push(tiles);
      const perSec = (ra.requests.total + rb.requests.total) / Math.max(ra.duration, rb.duration);
      records.push({ perSec, p99: Math.max(ra.latency.p99, rb.latency.p99) });
      console.log(
        `  round ${i + 1}/${rounds}: ${Math.round(perSec)} records/s (p99 ${records[i].p99} ms); cached tile p99 ${round(pooledP99([alone[i]]), 2)} ms alone (autocannon ${alone[i].p99Ms}), ${round(pooledP99([tiles]), 2)} ms with the records (${tiles.p99Ms})`,
      );
    }
    const perSec = median(records.map((r) => r.perSec));
    // From every tile answer's own latency, the rounds pooled (pooledP99 says why).
    const aloneP99 = pooledP99(alone);
    const mixedP99 = pooledP99(mixed);
    const autocannonAlone = median(alone.map((l) => l.p99Ms));
    const autocannonMixed = median(mixed.map((l) => l.p99Ms));
    const figures = {
      round_trip_ms: round(rtt * 1000, 2),
      records_per_s: Math.round(perSec),
      record_p99_ms: median(records.map((r) => r.p99)),
      records_concurrency: round(perSec * rtt, 1),
      tile_p99_alone_ms: round(aloneP99, 3),
      tile_p99_with_records_ms: round(mixedP99, 3),
      tile_p99_autocannon_alone_ms: autocannonAlone,
      tile_p99_autocannon_with_records_ms: autocannonMixed,
    };
    console.log(table([['figure', 'value'], ...Object.entries(figures).map(([k, v]) => [k, v])]));
    const ratios = {
      records_concurrency: figures.records_concurrency,
      tile_p99_with_records_over_alone: round(mixedP99 / Math.max(aloneP99, 0.001), 2),
      tile_p99_autocannon_with_records_over_alone: round(autocannonMixed / Math.max(autocannonAlone, 0.001), 2),
    };
    return { figures, ratios };
  } finally {
    await cleanup.run();
  }
}
