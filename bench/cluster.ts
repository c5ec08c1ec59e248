// Xeo on several machines, on loopback: PostgreSQL, Redis and a RADOS Gateway started here, API
// nodes and `xeo worker` processes each with a data dir of its own. The large NDVI job of the batch
// bench (16 chunks with --quick) runs on the embedded path (one job thread), on one worker and on
// two (one job thread each); cached tiles are pulled through one API node and through two; and a
// worker's cold start is timed. Each worker stands for a machine: it is confined to a core of its
// own (taskset), and so is the embedded server it is compared with; the database, the queue, the
// store and the API nodes run on any core. --shared-cores leaves every process on both cores.
// Ratios: two_workers_over_one (job time), distributed_over_embedded (one worker against the
// embedded server on the same one core: the cost of the queue and of chunks going through the
// object store), tiles_two_nodes_over_one.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { CLI, Cleanup, median, removeDir, round, startChild, table, tempDir, untilKernelOnDisk, type Child } from './lib.js';
import { ndvi, runJob, signIn, SIDE_M } from './batch.js';
import { hasPostgres, startPostgres } from './postgres.js';
import { hasRedis, startRedis } from './redis.js';
import { hasRadosgw, startRadosGateway } from './radosgw.js';
import { openStore } from '../src/store/db.js';
import { tileAt } from '../src/tiles/tile-grid.js';
import type { BenchOptions, BenchResult } from './run.js';

const DEMO = 'DEMO_S2_L2A';
/** The June NDVI as map tiles. */
const TILE_GRAPH = {
  l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: null, temporal_extent: ['2024-06-01', '2024-07-01'], bands: ['B04', 'B08'] } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } }, result: true },
};
const BASE_ENV = { XEO_HOST: '127.0.0.1', XEO_PORT: '0', XEO_ACCESS_LOG: '0', XEO_DEMO: 'false', XEO_JOB_THREADS: '1' };

const serve = (dataDir: string, env: Record<string, string>) => startChild(CLI, ['serve'], { ...BASE_ENV, XEO_DATA_DIR: dataDir, ...env });
const work = (dataDir: string, env: Record<string, string>) => startChild(CLI, ['worker'], { ...BASE_ENV, XEO_DATA_DIR: dataDir, ...env }, [], /Xeo worker (\S+) ready/);

function addUser(env: Record<string, string>, dataDir: string): void {
  const add = spawnSync(process.execPath, [CLI, 'users', 'add', 'bench', '--password', 'bench'], { env: { ...process.env, ...env, XEO_DATA_DIR: dataDir }, encoding: 'utf8' });
  if (add.status !== 0) throw new Error(`users add failed: ${add.stderr}`);
}

/** The kernels a data dir compiled, copied to another (as on any machine that ran the graph before). */
function copyKernels(from: string, to: string): void {
  if (existsSync(path.join(from, 'kernels'))) cpSync(path.join(from, 'kernels'), path.join(to, 'kernels'), { recursive: true });
}

/**
 * Confines a process, every thread it has and will start, to one core (a machine of one core);
 * false where that cannot be done (no taskset, a single core).
 */
function confine(child: Child, core: number): boolean {
  const r = spawnSync('taskset', ['-a', '-p', '-c', String(core), String(child.proc.pid)], { encoding: 'utf8' });
  return r.status === 0;
}

/** Cached tiles per second through the given nodes, the connections shared among them. */
async function tilesPerSecond(nodes: Child[], paths: string[], seconds: number): Promise<number> {
  const runs = nodes.map((n) => {
    let i = 0;
    return autocannon({
      url: n.url,
      connections: Math.max(1, Math.round(64 / nodes.length)),
      duration: seconds,
      requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, method: 'GET', path: paths[i++ % paths.length] }) }],
    });
  });
  const results = await Promise.all(runs);
  for (const r of results) if (r.non2xx || r.errors) throw new Error(`tiles failed: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return results.reduce((s, r) => s + r.requests.total / r.duration, 0);
}

/** A job on the cluster; when it fails, the workers' own output says why. */
async function clusterJob(node: Child, token: string, graph: unknown, workers: Child[]): Promise<{ wallSeconds: number }> {
  try {
    return await runJob(node, token, graph);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${workers.map((w) => `--- worker output:\n${w.output().slice(-4000)}`).join('\n')}`, { cause: e });
  }
}

export async function run(opts: BenchOptions): Promise<BenchResult> {
  if (!hasPostgres || !hasRedis || !hasRadosgw) throw new Error('the cluster bench needs PostgreSQL 15, Redis 7 and the RADOS Gateway (see .ci/run)');
  const cleanup = new Cleanup();
  try {
    console.log('cluster bench: starting PostgreSQL, Redis and the RADOS Gateway; generating the demo collection (~20 s)');
    const [pg, redis, s3] = await Promise.all([startPostgres(), startRedis(), startRadosGateway('xeo-bench')]);
    cleanup.add(() => pg.remove());
    cleanup.add(() => redis.remove());
    cleanup.add(() => s3.stop());
    const shared = { XEO_DATABASE_URL: pg.database(), XEO_REDIS_URL: redis.url, ...s3.env };

    // The embedded installation makes the demo (and compiles the NDVI kernel on a warm-up job);
    // its catalogue is then copied into the shared database, the files read where they are.
    const embeddedDir = tempDir('xeo-bench-embedded-');
    cleanup.add(() => removeDir(embeddedDir));
    addUser({}, embeddedDir);
    const embedded = await serve(embeddedDir, { XEO_DEMO: 'true' });
    cleanup.add(() => embedded.stop());
    // Confined after the demo is made, which is not measured.
    const pin = (child: Child, core: number): boolean => !opts.sharedCores && confine(child, core);
    const resolution = opts.quick ? 5 : 2.5;
    const job = ndvi(SIDE_M, resolution);
    await runJob(embedded, await signIn(embedded), ndvi(1280, resolution));
    await untilKernelOnDisk(embeddedDir);
    {
      const local = await openStore(embeddedDir);
      const store = await openStore({ dataDir: tempDir(), databaseUrl: shared.XEO_DATABASE_URL });
      await store.collections.put((await local.collections.get(DEMO))!);
      await store.collections.putItems(DEMO, await local.collections.items(DEMO));
      await local.close();
      await store.close();
    }

    const nodeDirs = [tempDir('xeo-bench-node-a-'), tempDir('xeo-bench-node-b-')];
    const workerDirs = [tempDir('xeo-bench-worker-1-'), tempDir('xeo-bench-worker-2-')];
    for (const d of [...nodeDirs, ...workerDirs]) {
      cleanup.add(() => removeDir(d));
      copyKernels(embeddedDir, d);
    }
    addUser(shared, nodeDirs[0]);
    const [a, b] = await Promise.all(nodeDirs.map((d) => serve(d, shared)));
    cleanup.add(() => a.stop());
    cleanup.add(() => b.stop());

    // A worker's cold start: from the process starting to taking tasks.
    const t0 = performance.now();
    const w1 = await work(workerDirs[0], shared);
    const coldStartMs = performance.now() - t0;
    cleanup.add(() => w1.stop());

    const confined = pin(embedded, 0) && pin(w1, 0);
    if (!opts.sharedCores && !confined) console.log('  (could not confine processes to cores: every process runs on all of them)');
    const rounds = opts.quick ? 1 : 3;
    const times = { embedded: [] as number[], one: [] as number[], two: [] as number[] };
    const embeddedToken = await signIn(embedded);
    const clusterToken = await signIn(a);
    // Warm-up of the worker path (its kernels are on disk, its caches are not).
    await clusterJob(a, clusterToken, ndvi(1280, resolution), [w1]);
    for (let r = 0; r < rounds; r++) {
      times.embedded.push((await runJob(embedded, embeddedToken, job)).wallSeconds);
      times.one.push((await clusterJob(a, clusterToken, job, [w1])).wallSeconds);
      console.log(`  round ${r + 1}: embedded ${times.embedded[r].toFixed(2)} s, one worker ${times.one[r].toFixed(2)} s`);
    }
    await embedded.stop();
    const w2 = await work(workerDirs[1], shared);
    cleanup.add(() => w2.stop());
    if (confined) pin(w2, 1);
    await clusterJob(b, clusterToken, ndvi(1280, resolution), [w1, w2]);
    for (let r = 0; r < rounds; r++) {
      times.two.push((await clusterJob(b, clusterToken, job, [w1, w2])).wallSeconds);
      console.log(`  round ${r + 1}: two workers ${times.two[r].toFixed(2)} s`);
    }
    await Promise.all([w1.stop(), w2.stop()]);

    // Cached tiles of one service, through one node and through both.
    const service = await fetch(`${a.url}/1.2.0/services`, {
      method: 'POST',
      headers: { authorization: clusterToken, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'XYZ', process: { process_graph: TILE_GRAPH }, configuration: { colormap: 'ndvi', min: -0.2, max: 0.9 } }),
    });
    const sid = service.headers.get('xeo-identifier');
    if (service.status !== 201 || !sid) throw new Error(`service not created: ${service.status} ${await service.text()}`);
    const paths: string[] = [];
    const c = tileAt(16.745, 47.928, 14);
    for (let dy = -2; dy <= 2; dy++) for (let dx = -2; dx <= 2; dx++) paths.push(`/xyz/${sid}/14/${c.x + dx}/${c.y + dy}.png`);
    for (const node of [a, b]) for (const p of paths) await fetch(node.url + p).then((r) => r.arrayBuffer());
    const seconds = opts.quick ? 5 : 15;
    const oneNode = await tilesPerSecond([a], paths, seconds);
    const twoNodes = await tilesPerSecond([a, b], paths, seconds);

    const e = median(times.embedded);
    const one = median(times.one);
    const two = median(times.two);
    console.log();
    console.log(
      table([
        ['run', 'job s (median)', 'tiles/s'],
        [`embedded (1 job thread${confined ? ', 1 core' : ''})`, round(e, 2), ''],
        [`1 worker (1 job thread${confined ? ', 1 core' : ''})`, round(one, 2), ''],
        [`2 workers (1 job thread${confined ? ', 1 core' : ''} each)`, round(two, 2), ''],
        ['cached tiles, 1 API node', '', round(oneNode, 0)],
        ['cached tiles, 2 API nodes', '', round(twoNodes, 0)],
      ]),
    );
    return {
      figures: {
        resolution_m: resolution,
        one_core_per_worker: confined ? 1 : 0,
        embedded_s: round(e, 3),
        one_worker_s: round(one, 3),
        two_workers_s: round(two, 3),
        tiles_one_node_per_s: round(oneNode, 0),
        tiles_two_nodes_per_s: round(twoNodes, 0),
        worker_cold_start_ms: round(coldStartMs, 0),
      },
      ratios: {
        two_workers_over_one: round(two / one, 3),
        distributed_over_embedded: round(one / e, 3),
        tiles_two_nodes_over_one: round(twoNodes / oneNode, 3),
      },
    };
  } finally {
    await cleanup.run();
  }
}
