// Random forests on `xeo worker` nodes: one API node and two workers, each with a data dir of its
// own, sharing only PostgreSQL (records), Redis (the job queue) and a Ceph RADOS Gateway (results).
// A training job (save_ml_model) runs on a worker, which stores the model in the shared result
// store; a prediction job that loads it by the job's id (load_ml_model) runs in chunks on the
// workers, and its COG equals /result's on the API node, pixel for pixel.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { fromArrayBuffer } from 'geotiff';
import { CLI, http, login, removeDir, startServer, stopChild, tempDir, xeo, type TestServer } from './helpers.js';
import { DEMO_COLLECTION, demoDataDir } from './demo-data.js';
import { pixels as demoPixels } from './jobs-helpers.js';
import { openStore } from '../src/store/db.js';
import { hasPostgres, startPostgres, type Postgres } from '../bench/postgres.js';
import { hasRedis, startRedis, type RedisServer } from '../bench/redis.js';
import { hasRadosgw, startRadosGateway, type RadosGateway } from '../bench/radosgw.js';
import { describeWithTool } from './system-tools.js';

interface WorkerProc {
  id: string;
  output(): string;
  stop(): Promise<void>;
}

async function startWorkerProc(env: Record<string, string>): Promise<WorkerProc> {
  const dataDir = tempDir('xeo-worker-');
  const proc: ChildProcess = spawn(process.execPath, [CLI, 'worker'], { env: { ...process.env, ...env, XEO_DATA_DIR: dataDir }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const id = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker did not start:\n${out}`)), 30_000);
    proc.stdout!.on('data', () => {
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
    output: () => out,
    async stop() {
      await stopChild(proc);
      removeDir(dataDir);
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
const predictGraph = (model: string) => ({
  l: load(MAP),
  m: { process_id: 'load_ml_model', arguments: { id: model } },
  r: {
    process_id: 'reduce_dimension',
    arguments: {
      data: { from_node: 'l' },
      dimension: 'bands',
      reducer: { process_graph: { p: { process_id: 'predict_random_forest', arguments: { data: { from_parameter: 'data' }, model: { from_parameter: 'context' } }, result: true } } },
      context: { from_node: 'm' },
    },
  },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'r' }, format: 'GTiff' }, result: true },
});

async function tiffBand(bytes: Buffer): Promise<Float32Array> {
  const tiff = await fromArrayBuffer(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer);
  const [band] = (await (await tiff.getImage()).readRasters({ interleave: false })) as unknown as Float32Array[];
  return band;
}

describeWithTool(hasPostgres && hasRedis && hasRadosgw, 'PostgreSQL 15, Redis 7 and the RADOS Gateway', 'random forests on worker nodes', () => {
  let pg: Postgres;
  let redis: RedisServer;
  let s3: RadosGateway;
  let api: TestServer;
  const workers: WorkerProc[] = [];
  let token: string;
  const files = tempDir('xeo-ml-cluster-');

  beforeAll(async () => {
    [pg, redis, s3] = await Promise.all([startPostgres(), startRedis(), startRadosGateway('xeo-ml-cluster')]);
    const env = { XEO_DATABASE_URL: pg.database(), XEO_REDIS_URL: redis.url, ...s3.env, XEO_JOB_THREADS: '1' };
    // The demo collection's records, copied into the shared database (its COGs are read where they are).
    const local = await openStore(await demoDataDir());
    const shared = await openStore({ dataDir: files, databaseUrl: env.XEO_DATABASE_URL });
    await shared.collections.put((await local.collections.get(DEMO_COLLECTION))!);
    await shared.collections.putItems(DEMO_COLLECTION, await local.collections.items(DEMO_COLLECTION));
    await local.close();
    await shared.close();
    const add = xeo(['users', 'add', 'alice', '--password', 'secret'], { dataDir: tempDir(), env });
    expect(add.status, add.stderr).toBe(0);
    // The API node runs no job itself: with a queue, every job goes to the workers.
    api = await startServer(env);
    workers.push(...(await Promise.all([startWorkerProc(env), startWorkerProc(env)])));
    token = await login(api, 'alice', 'secret');
  }, 240_000);

  afterAll(async () => {
    await Promise.all([api?.stop(), ...workers.map((w) => w.stop())]);
    if (api) removeDir(api.dataDir);
    s3?.stop();
    redis?.remove();
    pg?.remove();
    removeDir(files);
  });

  const call = (method: string, url: string, body?: unknown) =>
    http(method, `${api.base}${url}`, { headers: { authorization: token, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const logText = async (id: string) => ((await call('GET', `/jobs/${id}/logs?level=debug&limit=1000`)).json.logs as { message: string }[]).map((l) => l.message).join('\n');

  /** Creates and starts a job; answers its id once it has finished (its log in the failure otherwise). */
  async function runJob(graph: object): Promise<string> {
    const c = await call('POST', '/jobs', { process: { process_graph: graph }, log_level: 'debug' });
    expect(c.status, c.text).toBe(201);
    const id = c.headers['xeo-identifier'];
    expect((await call('POST', `/jobs/${id}/results`)).status).toBe(202);
    const end = Date.now() + 180_000;
    for (;;) {
      const j = (await call('GET', `/jobs/${id}`)).json;
      if (j.status === 'finished') return id;
      if (j.status === 'error' || Date.now() > end) throw new Error(`job ${id} is ${j.status}:\n${await logText(id)}`);
      await sleep(200);
    }
  }

  it('trains on a worker, saves the model to the shared store, and predicts on the workers what /result predicts', async () => {
    // The predictors at the training points, labelled by the rule.
    const r = await call('POST', '/result', {
      process: { process_graph: { l: load(TRAIN_BOX), a: sampled(), s: { process_id: 'save_result', arguments: { data: { from_node: 'a' }, format: 'JSON' }, result: true } } },
    });
    expect(r.status, r.text).toBe(200);
    const samples = Object.values(r.json)[0] as number[][];
    expect(samples.length).toBe(TRAIN.length);
    const labels = samples.map((v) => rule(v[0], v[1], v[2], v[3]));
    expect(new Set(labels).size, 'classes among the samples').toBeGreaterThan(1);

    const train = await runJob(trainingGraph(labels));
    const trainLog = await logText(train);
    expect(trainLog).toMatch(/on worker (\S+)/);
    expect(trainLog).toMatch(/30 trees on 225 samples × 4 predictors/);
    const results = (await call('GET', `/jobs/${train}/results`)).json;
    expect(Object.keys(results.assets).sort()).toEqual(['ml_model.xrf', 'ml_model_metadata.json']);
    // The model file as the API node serves it from the shared store: our format.
    const file = await http('GET', results.assets['ml_model.xrf'].href);
    expect(file.status).toBe(200);
    expect(file.body.subarray(0, 4).toString()).toBe('XRF1');

    const graph = predictGraph(train);
    const sync = await call('POST', '/result', { process: { process_graph: graph } });
    expect(sync.status, sync.text).toBe(200);
    const expected = await tiffBand(sync.body);
    expect(expected.length).toBe(2048 * 1024);

    const predict = await runJob(graph);
    const log = await logText(predict);
    // Chunked over the workers (both, as they take chunks side by side: at least one of them).
    expect(log).toMatch(/the job runs as 2 chunks/);
    expect(log).toMatch(/\(2 of 2 in all\)/);
    const doc = (await call('GET', `/jobs/${predict}/results`)).json;
    const cog = await http('GET', doc.assets['result.tif'].href);
    expect(cog.status).toBe(200);
    const got = await tiffBand(cog.body);
    expect(got.length).toBe(expected.length);
    let differ = 0;
    for (let i = 0; i < got.length; i++) if (!(got[i] === expected[i] || (Number.isNaN(got[i]) && Number.isNaN(expected[i])))) differ++;
    expect(differ, 'pixels that differ').toBe(0);
    // Classes, not noise: the map holds more than one of the learnt classes.
    expect(new Set(got.filter((v) => !Number.isNaN(v))).size).toBeGreaterThan(1);
  }, 400_000);
});
