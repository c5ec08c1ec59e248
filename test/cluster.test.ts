// Xeo on several machines, on loopback: two API nodes and two `xeo worker` processes, each with a
// data dir of its own, sharing only PostgreSQL (records), Redis (the job queue) and a Ceph RADOS
// Gateway (files and results). Files cross nodes; a job's chunks are done by both workers and its
// COG equals /result pixel for pixel; a worker killed mid-job loses nothing, one stopped with
// SIGTERM hands its tasks back at once; a random forest trained on a worker predicts there what
// /result predicts; a cancel stops every worker within a second; chunks that keep failing end the job in error; a user's limit holds
// across nodes; the queue going away gives 503s, and work resumes when it is back.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fromArrayBuffer } from 'geotiff';
import { CLI, expectError, expectRetryAfter, http, login, removeDir, startServer, stopChild, tempDir, watched, xeo, type TestServer } from './helpers.js';
import { DEMO_COLLECTION, demoDataDir } from './demo-data.js';
import { pixels as demoPixels } from './jobs-helpers.js';
import { forestMapGTiff } from '../bench/ml-graphs.js';
import { openStore } from '../src/store/db.js';
import { hasPostgres, startPostgres, type Postgres } from '../bench/postgres.js';
import { hasRedis, startRedis, type RedisServer } from '../bench/redis.js';
import { hasRadosgw, startRadosGateway, type RadosGateway } from '../bench/radosgw.js';
import { describeWithTool } from './system-tools.js';
import { tileAt } from '../src/tiles/tile-grid.js';

interface WorkerProc {
  id: string;
  proc: ChildProcess;
  dataDir: string;
  output(): string;
  stop(): Promise<void>;
}

async function startWorkerProc(env: Record<string, string>): Promise<WorkerProc> {
  const dataDir = tempDir('xeo-worker-');
  const proc = spawn(process.execPath, [CLI, 'worker'], { env: { ...process.env, ...env, XEO_DATA_DIR: dataDir }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  const id = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker did not start:\n${out}`)), 30_000);
    proc.stdout.on('data', () => {
      const m = /Xeo worker (\S+) ready/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${code}:\n${out}`));
    });
  });
  return {
    id,
    proc,
    dataDir,
    output: () => out,
    async stop() {
      await stopChild(proc);
      removeDir(dataDir);
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `xeo ARGS` with a data dir and environment; answers its output, failing on a non-zero exit. */
function xeoOk(args: string[], dataDir: string, env: Record<string, string>): string {
  const r = xeo(args, { dataDir, env });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

/** Season maximum of the NDVI over the demo collection: pixel-wise, 4 chunks of 1024 px (its 2048 x 2048 grid). */
const SEASON_MAX = {
  l: { process_id: 'load_collection', arguments: { id: DEMO_COLLECTION, spatial_extent: null, temporal_extent: null, bands: ['B04', 'B08'] } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  r: {
    process_id: 'reduce_dimension',
    arguments: { data: { from_node: 'n' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'max', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
  },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'r' }, format: 'GTiff' }, result: true },
};

// Random forests on the workers (the Python client's workflow): train on labelled points, save
// the model to the shared store, load it by the job's id and predict.
// The demo scene: 2048 x 2048 pixels of 10 m from (620000, 5320000); one date in the second half of June.
const X0 = 620000;
const Y0 = 5320000;
const DATE = ['2024-06-15', '2024-06-30'];
const BANDS = ['B02', 'B03', 'B04', 'B08'];
/** Training points: a 15 x 15 grid over the first 3000 x 3000 m (pixel centres). */
const TRAIN = Array.from({ length: 225 }, (_, i) => [X0 + 105 + (i % 15) * 200, Y0 - 105 - Math.floor(i / 15) * 200]);
const TRAIN_BOX = { west: X0, east: X0 + 3200, north: Y0, south: Y0 - 3200, crs: 32633 };
/** The predicted window: 2048 x 1024 px below the training area, two chunks of 1024 px (the default chunk size). */
const MAP = demoPixels(0, 1024, 2048, 1024);

const load = (extent: unknown) => ({ process_id: 'load_collection', arguments: { id: DEMO_COLLECTION, spatial_extent: extent, temporal_extent: DATE, bands: BANDS } });
const points = (labels?: number[]) => ({
  type: 'FeatureCollection',
  crs: { type: 'name', properties: { name: 'EPSG:32633' } },
  features: TRAIN.map((c, i) => ({ type: 'Feature', geometry: { type: 'Point', coordinates: c }, properties: labels ? { target: labels[i] } : {} })),
});
const sampled = () => ({
  process_id: 'aggregate_spatial',
  arguments: { data: { from_node: 'l' }, geometries: points(), reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
});
/** The class a pixel gets from its bands (NDVI and brightness): what the forest learns. */
function rule(b02: number, b03: number, b04: number, b08: number): number {
  const ndvi = (b08 - b04) / (b08 + b04);
  if (ndvi > 0.5) return b03 > 700 ? 3 : 2;
  return ndvi > 0.2 ? 1 : 0;
}

/** The Python client's training job: VectorCube.fit_class_random_forest + MlModel.save_ml_model. */
const trainingGraph = (labels: number[]) => ({
  l: load(TRAIN_BOX),
  a: sampled(),
  f: { process_id: 'fit_class_random_forest', arguments: { predictors: { from_node: 'a' }, target: points(labels), num_trees: 30, seed: 7 } },
  s: { process_id: 'save_ml_model', arguments: { data: { from_node: 'f' }, options: {} }, result: true },
});

/** Connection.load_ml_model(job) + DataCube.predict_random_forest(model, dimension="bands"), saved as GTiff. */
const predictGraph = (model: string) => forestMapGTiff(load(MAP), model);

async function pixels(bytes: Buffer): Promise<Float32Array> {
  const tiff = await fromArrayBuffer(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer);
  const [band] = (await (await tiff.getImage()).readRasters({ interleave: false })) as unknown as Float32Array[];
  return band;
}

/** Equal pixel for pixel, no-data (NaN) in the same places. */
function expectSamePixels(a: Float32Array, b: Float32Array): void {
  expect(a.length).toBe(b.length);
  let differ = 0;
  for (let i = 0; i < a.length; i++) if (!(a[i] === b[i] || (Number.isNaN(a[i]) && Number.isNaN(b[i])))) differ++;
  expect(differ, 'pixels that differ').toBe(0);
}

describeWithTool(hasPostgres && hasRedis && hasRadosgw, 'PostgreSQL 15, Redis 7 and the RADOS Gateway', 'two API nodes and two workers', () => {
  let pg: Postgres;
  let redis: RedisServer;
  let s3: RadosGateway;
  let env: Record<string, string>;
  let a: TestServer;
  let b: TestServer;
  const workers: WorkerProc[] = [];
  let token: string;
  let expected: Float32Array;
  const files = tempDir('xeo-cluster-files-');
  const MB = 1024 * 1024;
  const QUOTA = 24 * MB;

  beforeAll(async () => {
    [pg, redis, s3] = await Promise.all([startPostgres(), startRedis(), startRadosGateway('xeo-cluster')]);
    // Short leases, so a dead worker's task is taken over in seconds, not the default 30.
    env = {
      XEO_DATABASE_URL: pg.database(),
      XEO_REDIS_URL: redis.url,
      ...s3.env,
      XEO_QUEUE_LEASE: '2',
      XEO_JOB_THREADS: '1',
      XEO_SYNC_MAX_VALUES: '200000000',
      XEO_USER_CONCURRENCY: '1',
      XEO_USER_QUOTA_BYTES: String(QUOTA),
      XEO_S3_TIMEOUT: '2',
    };
    // The demo collection's records, copied into the shared database (its COGs are read where they are).
    const local = await openStore(await demoDataDir());
    const shared = await openStore({ dataDir: files, databaseUrl: env.XEO_DATABASE_URL });
    await shared.collections.put((await local.collections.get(DEMO_COLLECTION))!);
    await shared.collections.putItems(DEMO_COLLECTION, await local.collections.items(DEMO_COLLECTION));
    await local.close();
    await shared.close();
    const add = xeo(['users', 'add', 'alice', '--password', 'secret'], { dataDir: tempDir(), env });
    expect(add.status, add.stderr).toBe(0);
    [a, b] = await Promise.all([startServer(env), startServer(env)]);
    workers.push(...(await Promise.all([startWorkerProc(env), startWorkerProc(env)])));
    token = await login(a, 'alice', 'secret');
    // What every job of SEASON_MAX must give: the same graph computed at once on node A.
    const r = await http('POST', `${a.base}/result`, { headers: auth(), body: JSON.stringify({ process: { process_graph: SEASON_MAX } }) });
    expect(r.status, r.text).toBe(200);
    expected = await pixels(r.body);
  }, 240_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop(), ...workers.map((w) => w.stop())]);
    for (const s of [a, b]) if (s) removeDir(s.dataDir);
    s3?.stop();
    redis?.remove();
    pg?.remove();
    removeDir(files);
  });

  const auth = () => ({ authorization: token, 'content-type': 'application/json' });
  const job = (node: TestServer, id: string) => http('GET', `${node.base}/jobs/${id}`, { headers: auth() }).then((r) => r.json);
  const logs = async (node: TestServer, id: string) =>
    (await http('GET', `${node.base}/jobs/${id}/logs?level=debug&limit=1000`, { headers: auth() })).json.logs as { time: string; level: string; message: string }[];

  async function createJob(node: TestServer, graph: object = SEASON_MAX): Promise<string> {
    const r = await http('POST', `${node.base}/jobs`, { headers: auth(), body: JSON.stringify({ process: { process_graph: graph }, log_level: 'debug' }) });
    expect(r.status, r.text).toBe(201);
    return r.headers['xeo-identifier'];
  }

  async function until(node: TestServer, id: string, ok: (j: any) => boolean, ms = 90_000): Promise<any> {
    const end = Date.now() + ms;
    for (;;) {
      const j = await job(node, id);
      if (ok(j)) return j;
      if (Date.now() > end) throw new Error(`job ${id} is still ${j.status} at ${j.progress}%:\n${(await logs(node, id)).map((l) => l.message).join('\n')}`);
      await sleep(100);
    }
  }

  /** The job's COG, fetched through its signed link on `node`. */
  async function resultPixels(node: TestServer, id: string): Promise<Float32Array> {
    const doc = await http('GET', `${node.base}/jobs/${id}/results`, { headers: auth() });
    expect(doc.status, doc.text).toBe(200);
    expect(doc.json.assets, doc.text).toHaveProperty(['result.tif']);
    const file = await http('GET', doc.json.assets['result.tif'].href);
    expect(file.status).toBe(200);
    return pixels(file.body);
  }

  it('a file uploaded through node A downloads identically from node B', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const put = await http('PUT', `${a.base}/files/shared/data.bin`, { headers: { authorization: token, 'content-type': 'application/octet-stream' }, body: bytes });
    expect(put.status, put.text).toBe(200);
    const got = await http('GET', `${b.base}/files/shared/data.bin`, { headers: { authorization: token } });
    expect(got.status).toBe(200);
    expect(Buffer.compare(got.body, bytes)).toBe(0);
  });

  it('uploads in progress on both nodes count against one quota together', async () => {
    const upload = (node: TestServer, name: string, body: Buffer | AsyncIterable<Uint8Array>) =>
      http('PUT', `${node.base}/files/${name}`, { headers: { authorization: token, 'content-type': 'application/octet-stream' }, body });
    const sizes = async () => ((await http('GET', `${b.base}/files`, { headers: auth() })).json.files as { path: string; size: number }[]).map((f) => [f.path, f.size] as const);
    const before = await sizes();
    const free = QUOTA - before.reduce((n, [, size]) => n + size, 0);
    // A 12 MB upload through A that stops after 10 MB until told to go on.
    let goOn!: () => void;
    const told = new Promise<void>((resolve) => (goOn = resolve));
    const first = upload(
      a,
      'first.bin',
      (async function* () {
        for (let i = 0; i < 12; i++) {
          if (i === 10) await told;
          yield Buffer.alloc(MB, i);
        }
      })(),
    );
    // Until A holds its 10 MB in the shared ledger (a probe of no bytes reads the user's total).
    const records = await openStore({ dataDir: files, databaseUrl: env.XEO_DATABASE_URL });
    let held = 0;
    for (let i = 0; i < 200 && held < 10 * MB; i++) {
      held = await records.uploads.reserve('probe', 'alice', 0, Date.now());
      if (held < 10 * MB) await sleep(50);
    }
    await records.uploads.release('probe');
    await records.close();
    expect(held).toBeGreaterThanOrEqual(10 * MB);
    try {
      // Alone it would fit; beside A's upload it passes the quota: refused.
      expectError(await upload(b, 'second.bin', Buffer.alloc(free - 8 * MB, 7)), 400, 'StorageQuotaExceeded');
      // The room left beside A's whole upload is taken.
      expect((await upload(b, 'third.bin', Buffer.alloc(free - 12 * MB, 8))).status).toBe(200);
    } finally {
      goOn();
    }
    const done = await first;
    expect(done.status, done.text).toBe(200);
    expect(await sizes()).toEqual([...before, ['first.bin', 12 * MB], ['third.bin', free - 12 * MB]].sort());
    for (const name of ['first.bin', 'third.bin']) expect((await http('DELETE', `${a.base}/files/${name}`, { headers: auth() })).status).toBe(204);
  });

  it('a job started on A runs with chunks done by both workers; its COG, read through B, equals /result pixel for pixel', async () => {
    const id = await createJob(a);
    expect((await http('POST', `${a.base}/jobs/${id}/results`, { headers: auth() })).status).toBe(202);
    const done = await until(b, id, (j) => j.status !== 'queued' && j.status !== 'running');
    expect(done.status).toBe('finished');
    const chunkLines = (await logs(b, id)).filter((l) => /^Chunk \d+ of 4 done on worker/.test(l.message));
    expect(chunkLines).toHaveLength(4);
    for (const w of workers)
      expect(
        chunkLines.some((l) => l.message.includes(`worker ${w.id} `)),
        `chunks done by worker ${w.id}`,
      ).toBe(true);
    expectSamePixels(await resultPixels(b, id), expected);
    // The chunk planes were only kept until the assembly.
    const again = await http('GET', `${b.base}/jobs/${id}/results`, { headers: auth() });
    expect(Object.keys(again.json.assets)).toEqual(['result.tif']);
  });

  it('a job over fields uploaded through A runs its groups of fields on both workers; its CSV, read through B, equals /result', async () => {
    // 36 square fields spread over the demo scene (UTM 33N), in four of its 1024 px cells and more.
    const features = [];
    for (let j = 0; j < 6; j++) {
      for (let i = 0; i < 6; i++) {
        const x = 620000 + 1500 + i * 3300;
        const y = 5320000 - 1500 - j * 3300;
        features.push({
          type: 'Feature',
          properties: { name: `f${j}${i}` },
          geometry: {
            type: 'Polygon',
            coordinates: [
              [
                [x, y],
                [x + 433, y],
                [x + 433, y - 377],
                [x, y - 377],
                [x, y],
              ],
            ],
          },
        });
      }
    }
    const fields = { type: 'FeatureCollection', crs: { type: 'name', properties: { name: 'EPSG:32633' } }, features };
    const put = await http('PUT', `${a.base}/files/fields.geojson`, { headers: { authorization: token, 'content-type': 'application/octet-stream' }, body: JSON.stringify(fields) });
    expect(put.status, put.text).toBe(200);
    const graph = {
      l: { process_id: 'load_collection', arguments: { id: DEMO_COLLECTION, spatial_extent: null, temporal_extent: null, bands: ['B04', 'B08'] } },
      f: { process_id: 'load_uploaded_files', arguments: { paths: ['fields.geojson'], format: 'GeoJSON' } },
      z: {
        process_id: 'aggregate_spatial',
        arguments: { data: { from_node: 'l' }, geometries: { from_node: 'f' }, reducer: { process_graph: { m: { process_id: 'median', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
      },
      s: { process_id: 'save_result', arguments: { data: { from_node: 'z' }, format: 'CSV' }, result: true },
    };
    const sync = await http('POST', `${b.base}/result`, { headers: auth(), body: JSON.stringify({ process: { process_graph: graph } }) });
    expect(sync.status, sync.text).toBe(200);
    const id = await createJob(a, graph);
    expect((await http('POST', `${a.base}/jobs/${id}/results`, { headers: auth() })).status).toBe(202);
    const done = await until(b, id, (j) => j.status !== 'queued' && j.status !== 'running');
    const lines = (await logs(b, id)).map((l) => l.message);
    expect(done.status, lines.join('\n')).toBe('finished');
    const chunks = lines.filter((m) => /^Chunk \d+ of \d+ done on worker/.test(m));
    expect(chunks.length).toBeGreaterThan(1);
    for (const w of workers)
      expect(
        chunks.some((l) => l.includes(`worker ${w.id} `)),
        `chunks done by worker ${w.id}`,
      ).toBe(true);
    const doc = await http('GET', `${b.base}/jobs/${id}/results`, { headers: auth() });
    expect(doc.json.assets['result.csv'].type).toBe('text/csv');
    const csv = await http('GET', doc.json.assets['result.csv'].href);
    expect(csv.text.split('\r\n').length).toBe(36 * 8 + 2);
    expect(csv.text).toBe(sync.text);
  });

  it('trains a random forest on a worker, saves it to the shared store, and predicts on the workers what /result predicts', async () => {
    const post = (graph: object) => http('POST', `${a.base}/result`, { headers: auth(), body: JSON.stringify({ process: { process_graph: graph } }) });
    const finished = async (graph: object) => {
      const id = await createJob(a, graph);
      expect((await http('POST', `${a.base}/jobs/${id}/results`, { headers: auth() })).status).toBe(202);
      const j = await until(a, id, (j) => j.status === 'finished' || j.status === 'error', 180_000);
      const text = (await logs(a, id)).map((l) => l.message).join('\n');
      expect(j.status, text).toBe('finished');
      return { id, text };
    };
    // The predictors at the training points, labelled by the rule.
    const r = await post({ l: load(TRAIN_BOX), a: sampled(), s: { process_id: 'save_result', arguments: { data: { from_node: 'a' }, format: 'JSON' }, result: true } });
    expect(r.status, r.text).toBe(200);
    const samples = Object.values(r.json)[0] as number[][];
    expect(samples.length).toBe(TRAIN.length);
    const labels = samples.map((v) => rule(v[0], v[1], v[2], v[3]));
    expect(new Set(labels).size, 'classes among the samples').toBeGreaterThan(1);

    const train = await finished(trainingGraph(labels));
    expect(train.text).toMatch(/on worker (\S+)/);
    expect(train.text).toMatch(/30 trees on 225 samples × 4 predictors/);
    const results = (await http('GET', `${b.base}/jobs/${train.id}/results`, { headers: auth() })).json;
    expect(Object.keys(results.assets).sort()).toEqual(['ml_model.xrf', 'ml_model_metadata.json']);
    // The model file as an API node serves it from the shared store: our format.
    const file = await http('GET', results.assets['ml_model.xrf'].href);
    expect(file.status).toBe(200);
    expect(file.body.subarray(0, 4).toString()).toBe('XRF1');

    const graph = predictGraph(train.id);
    const sync = await post(graph);
    expect(sync.status, sync.text).toBe(200);
    const want = await pixels(sync.body);
    expect(want.length).toBe(2048 * 1024);
    const predict = await finished(graph);
    // Chunked over the workers.
    expect(predict.text).toMatch(/the job runs as 2 chunks/);
    expect(predict.text).toMatch(/\(2 of 2 in all\)/);
    const got = await resultPixels(b, predict.id);
    expectSamePixels(got, want);
    // Classes, not noise: the map holds more than one of the learnt classes.
    expect(new Set(got.filter((v) => !Number.isNaN(v))).size).toBeGreaterThan(1);
  }, 400_000);

  it('a worker killed with SIGKILL mid-job: its chunk runs again on the other, nothing is lost, the COG is right', async () => {
    const id = await createJob(b);
    expect((await http('POST', `${b.base}/jobs/${id}/results`, { headers: auth() })).status).toBe(202);
    await until(a, id, (j) => j.progress > 0);
    const victim = workers.shift()!;
    victim.proc.kill('SIGKILL');
    await new Promise((r) => victim.proc.once('exit', r));
    await victim.stop();
    const done = await until(a, id, (j) => j.status !== 'queued' && j.status !== 'running');
    expect(done.status).toBe('finished');
    expect(done.progress).toBe(100);
    expectSamePixels(await resultPixels(a, id), expected);
    // Each chunk counted once, however often it ran.
    expect((await logs(a, id)).filter((l) => /^Finished/.test(l.message))).toHaveLength(1);
    // The new worker serves its metrics and readiness (the next case stops it orderly).
    workers.push(await startWorkerProc({ ...env, XEO_METRICS_PORT: '0' }));
  });

  it('a worker stopped with SIGTERM mid-job hands its tasks back to the queue at once and exits 0; the COG is right', async () => {
    const victim = workers[workers.length - 1];
    const port = /Metrics, health and readiness on http:\/\/127\.0\.0\.1:(\d+)/.exec(victim.output())?.[1];
    expect(port, victim.output()).toBeDefined();
    const ops = `http://127.0.0.1:${port}`;
    const ready = await http('GET', `${ops}/readyz`);
    expect(ready.status, ready.text).toBe(200);
    expect(ready.json.components.map((c: { name: string; engine?: string }) => [c.name, c.engine ?? null])).toEqual([
      ['records', 'postgresql'],
      ['object store', 's3'],
      ['queue', 'redis'],
      ['job threads', null],
    ]);
    // Busy threads, as the worker's main thread knows them at the moment of asking. (Not the
    // chunks done: job threads ship that counter once a second, by when the victim may well have
    // finished the task it was on.)
    const busy = async () => Number(/^xeo_job_threads\{state="busy"\} (\d+)/m.exec((await http('GET', `${ops}/metrics`)).text)?.[1] ?? 0);
    const id = await createJob(a);
    expect((await http('POST', `${a.base}/jobs/${id}/results`, { headers: auth() })).status).toBe(202);
    // Until the victim is in the middle of a task of this job (between two tasks it would have
    // nothing to hand back).
    let threads = await busy();
    for (let i = 0; i < 600 && threads < 1; i++) {
      await sleep(20);
      threads = await busy();
    }
    expect(threads).toBeGreaterThanOrEqual(1);
    const exit = new Promise<number | null>((r) => victim.proc.once('exit', (code) => r(code)));
    victim.proc.kill('SIGTERM');
    expect(await exit).toBe(0);
    const handed = /(\d+) task\(s\) handed back to the queue/.exec(victim.output());
    expect(handed, victim.output()).not.toBeNull();
    expect(Number(handed![1]), victim.output().slice(-3000)).toBeGreaterThanOrEqual(1);
    workers.pop();
    await victim.stop();
    const done = await until(a, id, (j) => j.status !== 'queued' && j.status !== 'running');
    expect(done.status).toBe('finished');
    expectSamePixels(await resultPixels(a, id), expected);
    // Handed back, not failed: no try of the run was counted against it.
    expect((await logs(a, id)).filter((l) => /failed on worker/.test(l.message))).toEqual([]);
    workers.push(await startWorkerProc(env));
  });

  it('a cancel reaches every worker within a second; the chunks done become the partial result', async () => {
    const id = await createJob(a);
    expect((await http('POST', `${a.base}/jobs/${id}/results`, { headers: auth() })).status).toBe(202);
    await until(b, id, (j) => j.progress > 0);
    const canceledAt = Date.now();
    expect((await http('DELETE', `${b.base}/jobs/${id}/results`, { headers: auth() })).status).toBe(204);
    expect((await job(a, id)).status).toBe('canceled');
    // No worker finishes a chunk of the run later than a second after the cancel.
    await sleep(2500);
    const late = (await logs(a, id)).filter((l) => /done on worker/.test(l.message) && Date.parse(l.time) > canceledAt + 1000);
    expect(late).toEqual([]);
    expect((await job(a, id)).status).toBe('canceled');
    // The partial result is listed once one worker has assembled it.
    const partialDoc = () => http('GET', `${a.base}/jobs/${id}/results?partial=true`, { headers: auth() });
    let doc = await partialDoc();
    for (let i = 0; i < 100 && !doc.json.assets?.['result.tif']; i++) {
      await sleep(100);
      doc = await partialDoc();
    }
    expect(Object.keys(doc.json.assets)).toEqual(['result.tif']);
    expect(doc.json['openeo:status'] ?? doc.json.properties?.['openeo:status']).toBe('canceled');
  });

  it('a chunk that fails because of the job itself (its data is gone) ends the job in error at once, naming the cause', async () => {
    // A collection whose file is gone once the job has been planned: every read of it fails.
    const width = 2048;
    const src = path.join(files, 'gone_20240301.tif');
    const { writeCog } = await import('../src/output/cog-writer.js');
    await writeCog(src, { width, height: width, epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], bands: [new Uint16Array(width * width).fill(7)], nodata: 0 });
    const copy = path.join(files, 'copy_20240301.tif');
    copyFileSync(src, copy);
    const imp = xeo(['import', '--collection', 'GONE', copy], { dataDir: tempDir(), env });
    expect(imp.status, imp.stderr).toBe(0);
    rmSync(copy);
    const graph = {
      l: { process_id: 'load_collection', arguments: { id: 'GONE', spatial_extent: null, temporal_extent: null } },
      s: { process_id: 'save_result', arguments: { data: { from_node: 'l' }, format: 'GTiff' }, result: true },
    };
    const id = await createJob(a, graph);
    expect((await http('POST', `${a.base}/jobs/${id}/results`, { headers: auth() })).status).toBe(202);
    const done = await until(b, id, (j) => j.status !== 'queued' && j.status !== 'running', 60_000);
    expect(done.status).toBe('error');
    const errors = (await logs(b, id)).filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0].message).toMatch(/not a readable GeoTIFF/);
    const err = await http('GET', `${b.base}/jobs/${id}/results`, { headers: auth() });
    expect(err.status).toBe(424);
  });

  it('the store away mid-job: every try is logged, the last ends the job in error; once the store is back, a restart finishes it', async () => {
    const id = await createJob(a);
    expect((await http('POST', `${a.base}/jobs/${id}/results`, { headers: auth() })).status).toBe(202);
    await until(b, id, (j) => j.progress > 0);
    s3.stopGateway();
    try {
      const failed = await until(b, id, (j) => j.status !== 'running', 60_000);
      expect(failed.status).toBe('error');
      const lines = (await logs(b, id)).map((l) => l.message);
      expect(
        lines.some((m) => /failed on worker .* \(try 1 of 3\).*tried again/.test(m)),
        lines.join('\n'),
      ).toBe(true);
      expect(
        lines.some((m) => /failed on worker .* \(try 3 of 3\)/.test(m)),
        lines.join('\n'),
      ).toBe(true);
      // The operator's addresses stay out of what users read.
      expect(lines.join('\n')).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
    } finally {
      await s3.startGateway();
    }
    expect((await http('POST', `${a.base}/jobs/${id}/results`, { headers: auth() })).status).toBe(202);
    const done = await until(b, id, (j) => j.status !== 'queued' && j.status !== 'running');
    expect(done.status).toBe('finished');
    expectSamePixels(await resultPixels(a, id), expected);
  });

  it("a user's limit of computations at once holds across nodes", async () => {
    // One slot (XEO_USER_CONCURRENCY=1): while A computes for Alice, B refuses her a second one.
    const slow = http('POST', `${a.base}/result`, { headers: auth(), body: JSON.stringify({ process: { process_graph: SEASON_MAX } }) });
    let refused = null;
    for (let i = 0; i < 50 && !refused; i++) {
      await sleep(20);
      const r = await http('POST', `${b.base}/result`, {
        headers: { ...auth(), origin: 'https://x.example' },
        body: JSON.stringify({ process: { process_graph: { x: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } } } }),
      });
      if (r.status === 429) refused = r;
    }
    expect(refused, 'B refused a second computation while A ran one').not.toBeNull();
    expectError(refused, 429, 'TooManyRequests');
    expect((await slow).status).toBe(200);
  });

  it('an embedded installation moved with `xeo migrate`: its users, stored processes, files and job results, served from PostgreSQL and the bucket', async () => {
    const embedded = await startServer({}, await demoDataDir());
    let moved: TestServer | null = null;
    try {
      xeoOk(['users', 'add', 'bob', '--password', 'pw'], embedded.dataDir, {});
      const bob = await login(embedded, 'bob', 'pw');
      const h = { authorization: bob, 'content-type': 'application/json' };
      const graph = { process_graph: { x: { process_id: 'add', arguments: { x: 20, y: 22 }, result: true } } };
      expect((await http('PUT', `${embedded.base}/process_graphs/mine`, { headers: h, body: JSON.stringify(graph) })).status).toBe(200);
      const file = randomBytes(100_000);
      expect((await http('PUT', `${embedded.base}/files/notes/a.bin`, { headers: { authorization: bob, 'content-type': 'application/octet-stream' }, body: file })).status).toBe(200);
      const created = await http('POST', `${embedded.base}/jobs`, { headers: h, body: JSON.stringify({ process: graph, title: 'before the move' }) });
      const id = created.headers['xeo-identifier'];
      expect((await http('POST', `${embedded.base}/jobs/${id}/results`, { headers: h })).status).toBe(202);
      for (let i = 0; i < 300 && (await http('GET', `${embedded.base}/jobs/${id}`, { headers: h })).json.status !== 'finished'; i++) await sleep(100);
      const doc = await http('GET', `${embedded.base}/jobs/${id}/results`, { headers: h });
      const [asset] = Object.entries<any>(doc.json.assets);
      const before = await http('GET', asset[1].href);
      await embedded.stop();

      // Into an empty database and the cluster's bucket; no queue: this node runs its own jobs.
      const target = { XEO_DATABASE_URL: pg.database(), ...s3.env };
      const out = xeoOk(['migrate', embedded.dataDir], tempDir(), target);
      expect(out).toMatch(/records: .*1 users.*1 process_graphs.*1 jobs/);
      expect(out).toMatch(/1 user files and 1 result files/);
      expect(xeo(['migrate', embedded.dataDir], { dataDir: tempDir(), env: target }).status, 'a second move into a database with records').toBe(2);

      moved = await startServer(target);
      const bob2 = await login(moved, 'bob', 'pw');
      const h2 = { authorization: bob2 };
      expect((await http('GET', `${moved.base}/process_graphs/mine`, { headers: h2 })).json.process_graph).toEqual(graph.process_graph);
      const got = await http('GET', `${moved.base}/files/notes/a.bin`, { headers: h2 });
      expect(Buffer.compare(got.body, file)).toBe(0);
      const doc2 = await http('GET', `${moved.base}/jobs/${id}/results`, { headers: h2 });
      expect(doc2.status).toBe(200);
      const after = await http('GET', doc2.json.assets[asset[0]].href);
      expect(after.status).toBe(200);
      expect(Buffer.compare(after.body, before.body)).toBe(0);
      // A link handed out before the move still works (its key moved with the records).
      const old = new URL(asset[1].href);
      const byOldLink = await http('GET', `${moved.url}${old.pathname}${old.search}`);
      expect(byOldLink.status).toBe(200);
      expect(Buffer.compare(byOldLink.body, before.body)).toBe(0);
      expect((await http('GET', `${moved.base}/jobs/${id}`, { headers: h2 })).json.status).toBe('finished');
    } finally {
      await embedded.stop();
      removeDir(embedded.dataDir);
      if (moved) {
        await moved.stop();
        removeDir(moved.dataDir);
      }
    }
  });

  it('without the queue: starting a job answers 503 with Retry-After and changes nothing; then work resumes', async () => {
    const id = await createJob(a);
    redis.stop();
    try {
      const r = await http('POST', `${a.base}/jobs/${id}/results`, { headers: { ...auth(), origin: 'https://x.example' } });
      expectError(r, 503, 'InfrastructureBusy');
      expectRetryAfter(r.headers['retry-after']);
      expect((await job(b, id)).status).toBe('created');
    } finally {
      redis.start();
    }
    // The workers reconnect on their own; the job starts and finishes.
    let started = 0;
    for (let i = 0; i < 50 && started !== 202; i++) {
      started = (await http('POST', `${a.base}/jobs/${id}/results`, { headers: auth() })).status;
      if (started !== 202) await sleep(200);
    }
    expect(started).toBe(202);
    const done = await until(b, id, (j) => j.status !== 'queued' && j.status !== 'running');
    expect(done.status).toBe('finished');
  });
  /**
   * While `component` hangs: what does not need it (a cached preview tile, discovery) answers while
   * `needs()` still waits, and `needs()` then answers 503 with Retry-After at its deadline (no hang).
   */
  async function hangs(freeze: () => void, thaw: () => void, needs: () => Promise<{ status: number; json: any; headers: Record<string, string> }>): Promise<void> {
    const t = tileAt(16.745, 47.93, 13);
    const tile = `${a.url}/previews/${DEMO_COLLECTION}/${t.z}/${t.x}/${t.y}.png`;
    expect((await http('GET', tile)).status).toBe(200);
    freeze();
    try {
      const waiting = watched(needs());
      await sleep(200);
      for (const f of await Promise.all([http('GET', tile), http('GET', `${a.base}/`), http('GET', `${b.base}/processes`)])) expect(f.status).toBe(200);
      expect(waiting.settled, 'the request that needs the hung component still waits').toBe(false);
      const r = await waiting.promise;
      expectError(r as never, 503, 'InfrastructureBusy');
      expectRetryAfter(r.headers['retry-after']);
    } finally {
      thaw();
    }
  }

  it('a hung queue (SIGSTOP): starting a job answers 503 at its deadline while tiles and discovery answer meanwhile; then the job starts and finishes', async () => {
    const id = await createJob(a);
    await hangs(redis.freeze, redis.thaw, () => http('POST', `${a.base}/jobs/${id}/results`, { headers: auth() }));
    expect((await job(b, id)).status).toBe('created');
    let started = 0;
    for (let i = 0; i < 50 && started !== 202; i++) {
      started = (await http('POST', `${a.base}/jobs/${id}/results`, { headers: auth() })).status;
      if (started !== 202) await sleep(200);
    }
    expect(started).toBe(202);
    expect((await until(b, id, (j) => j.status !== 'queued' && j.status !== 'running')).status).toBe('finished');
  });

  it('a hung file store (SIGSTOP): a download answers 503 within its deadline while tiles and discovery stay fast; then it downloads again', async () => {
    const bytes = randomBytes(64 * 1024);
    expect((await http('PUT', `${a.base}/files/hang/probe.bin`, { headers: { authorization: token, 'content-type': 'application/octet-stream' }, body: bytes })).status).toBe(200);
    // XEO_S3_TIMEOUT is 2 s, tried twice.
    await hangs(s3.freezeGateway, s3.thawGateway, () => http('GET', `${b.base}/files/hang/probe.bin`, { headers: { authorization: token } }));
    const again = await http('GET', `${b.base}/files/hang/probe.bin`, { headers: { authorization: token } });
    expect(again.status).toBe(200);
    expect(again.body.equals(bytes)).toBe(true);
  });
});
