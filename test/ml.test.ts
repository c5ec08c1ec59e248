// Random forests end to end, as the openEO Python client drives them: predictors sampled over
// labelled points (aggregate_spatial), a training job with save_ml_model, load_ml_model by the job's
// id, and predict_random_forest as the reducer of reduce_dimension over bands in /result, a batch
// job and an XYZ tile. scikit-learn (Debian's python3-sklearn) trained on the same samples with the
// same number of trees and max_features is the reference for accuracy on pixels neither trained
// on. Hostile inputs each get a clear 4xx while tiles keep coming.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { addUser, expectError, http, login, removeDir, startServer, tempDir, type Res, type TestServer } from './helpers.js';
import { demoDataDir, DEMO_COLLECTION } from './demo-data.js';
import { Jobs } from './jobs-helpers.js';
import { describeWithTool, DEBIAN_PYTHON } from './system-tools.js';

const hasSklearn = spawnSync(DEBIAN_PYTHON, ['-c', 'import sklearn, numpy'], { encoding: 'utf8' }).status === 0;

// The demo scene: 2048 x 2048 pixels of 10 m from (620000, 5320000); one date (2024-06-21).
const X0 = 620000;
const Y0 = 5320000;
const DATE = ['2024-06-15', '2024-06-30'];
const BANDS = ['B02', 'B03', 'B04', 'B08'];
const CRS = { type: 'name', properties: { name: 'EPSG:32633' } };
/** Training points: a 20 x 20 grid over the first 400 x 400 px (centres of pixels). */
const TRAIN = Array.from({ length: 400 }, (_, i) => [X0 + 5 + (i % 20) * 200 + 10 * ((i * 7) % 13), Y0 - 5 - Math.floor(i / 20) * 200 - 10 * ((i * 11) % 17)]);
/** The test window: 128 x 128 px beside the training area. */
const TEST = { west: X0 + 5000, east: X0 + 5000 + 1280, north: Y0 - 1000, south: Y0 - 1000 - 1280, crs: 32633 };

const load = (extent: unknown) => ({ process_id: 'load_collection', arguments: { id: DEMO_COLLECTION, spatial_extent: extent, temporal_extent: DATE, bands: BANDS } });
const points = (labels?: (number | string | null)[]) => ({
  type: 'FeatureCollection',
  crs: CRS,
  features: TRAIN.map((c, i) => ({ type: 'Feature', geometry: { type: 'Point', coordinates: c }, properties: labels ? { target: labels[i] } : {} })),
});
const TRAIN_BOX = { west: X0, east: X0 + 4200, north: Y0, south: Y0 - 4200, crs: 32633 };

/** The class a pixel gets from its bands: the rule the forests learn (NDVI and brightness). */
function rule(b02: number, b03: number, b04: number, b08: number): number {
  const ndvi = (b08 - b04) / (b08 + b04);
  if (ndvi > 0.5) return b03 > 700 ? 3 : 2;
  return ndvi > 0.2 ? 1 : 0;
}

/** The Python client's graph of a training job (VectorCube.fit_class_random_forest + MlModel.save_ml_model). */
const trainingGraph = (target: unknown, extra: Record<string, unknown> = { num_trees: 50, seed: 42 }, fit = 'fit_class_random_forest') => ({
  loadcollection1: load(TRAIN_BOX),
  aggregatespatial1: { process_id: 'aggregate_spatial', arguments: { data: { from_node: 'loadcollection1' }, geometries: points(), reducer: { process_graph: { mean1: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } } },
  fitclassrandomforest1: { process_id: fit, arguments: { predictors: { from_node: 'aggregatespatial1' }, target, ...extra } },
  savemlmodel1: { process_id: 'save_ml_model', arguments: { data: { from_node: 'fitclassrandomforest1' }, options: {} }, result: true },
});

/** DataCube.predict_random_forest(model, dimension="bands") after Connection.load_ml_model(job). */
const predictGraph = (model: Record<string, unknown>, extent: unknown = TEST, format = 'JSON') => ({
  loadcollection1: load(extent),
  loadmlmodel1: { process_id: 'load_ml_model', arguments: { id: model.id } },
  reducedimension1: {
    process_id: 'reduce_dimension',
    arguments: {
      data: { from_node: 'loadcollection1' },
      dimension: 'bands',
      reducer: { process_graph: { predictrandomforest1: { process_id: 'predict_random_forest', arguments: { data: { from_parameter: 'data' }, model: { from_parameter: 'context' } }, result: true } } },
      context: { from_node: 'loadmlmodel1' },
    },
  },
  saveresult1: { process_id: 'save_result', arguments: { data: { from_node: 'reducedimension1' }, format, options: {} }, result: true },
});

let s: TestServer;
let jobs: Jobs;
let bob: string;
let work: string;
let samples: number[][]; // per training point: B02, B03, B04, B08
let labels: number[];
let trainJob: string;

const result = (graph: unknown, token = jobs.token): Promise<Res> => http('POST', `${s.base}/result`, { token, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ process: { process_graph: graph } }) });

/** The flat values of a JSON raster result (one band, y then x) or of each band. */
function rasterValues(json: any): number[] {
  const flat = (v: unknown): number[] => (Array.isArray(v) ? v.flatMap(flat) : [v as number]);
  return flat(json.data);
}

beforeAll(async () => {
  s = await startServer({ XEO_JOB_THREADS: '1' }, await demoDataDir());
  addUser(s.dataDir, 'alice', 'pa');
  addUser(s.dataDir, 'bob', 'pb');
  jobs = new Jobs(s, await login(s, 'alice', 'pa'));
  bob = await login(s, 'bob', 'pb');
  work = tempDir();
  // The predictors at the training points, to label them by the rule.
  const r = await result({
    l: load(TRAIN_BOX),
    a: { process_id: 'aggregate_spatial', arguments: { data: { from_node: 'l' }, geometries: points(), reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } } },
    s: { process_id: 'save_result', arguments: { data: { from_node: 'a' }, format: 'JSON' }, result: true },
  });
  expect(r.status, r.text).toBe(200);
  // JSON of the vector cube: per date, per point, the band values.
  samples = (Object.values(r.json)[0] as number[][]).map((v) => [...v]);
  expect(samples.length).toBe(TRAIN.length);
  labels = samples.map((v) => rule(v[0], v[1], v[2], v[3]));
  const run = await jobs.run(trainingGraph(points(labels)));
  expect(run.status, JSON.stringify(await jobs.logs(run.id))).toBe('finished');
  trainJob = run.id;
}, 240_000);

afterAll(async () => {
  await s?.stop();
  removeDir(s?.dataDir);
  removeDir(work);
});

describe('random forests', () => {
  it('the training job lists the model and its ml-model STAC Item, and logs the out-of-bag accuracy', async () => {
    const res = (await jobs.call('GET', `/jobs/${trainJob}/results`)).json;
    const model = res.assets['ml_model.xrf'];
    const meta = res.assets['ml_model_metadata.json'];
    expect(model.roles).toContain('ml-model:checkpoint');
    expect(model.type).toBe('application/vnd.xeo.random-forest');
    const item = (await http('GET', meta.href)).json;
    expect(item.stac_extensions.some((e: string) => e.includes('/ml-model/'))).toBe(true);
    expect(item.properties['ml-model:prediction_type']).toBe('classification');
    expect(item.properties['mlm:input'][0].bands).toEqual(BANDS);
    expect(item.properties['mlm:output'][0]['classification:classes'].map((c: any) => c.value)).toEqual([...new Set(labels)].sort());
    expect(item.assets.model.href).toBe('ml_model.xrf');
    const logs = (await jobs.logs(trainJob)).logs.map((l: any) => l.message).join('\n');
    expect(logs).toMatch(/50 trees on 400 samples × 4 predictors .* out-of-bag accuracy \d+\.\d+ %/);
    const oob = item.properties['xeo:training'].oob_accuracy;
    expect(oob).toBeGreaterThan(0.8);
  });

  describeWithTool(hasSklearn, 'python3-sklearn', 'against scikit-learn', () => {
    it('predicts the test window in /result at most 2 points less accurately than scikit-learn', async () => {
      const pred = await result(predictGraph({ id: trainJob }));
      expect(pred.status, pred.text).toBe(200);
      const xeo = rasterValues(pred.json);
      const bands = await result({ l: load(TEST), s: { process_id: 'save_result', arguments: { data: { from_node: 'l' }, format: 'JSON' }, result: true } });
      expect(bands.status, bands.text).toBe(200);
      // The bands cube as JSON: t x bands x y x x (one date).
      const values = rasterValues(bands.json);
      const n = xeo.length;
      expect(values.length).toBe(4 * n);
      const pixels = Array.from({ length: n }, (_, i) => [0, 1, 2, 3].map((b) => values[b * n + i]));
      const truth = pixels.map((v) => (v.some((x) => x === null) ? null : rule(v[0], v[1], v[2], v[3])));
      const file = path.join(work, 'sk.json');
      writeFileSync(file, JSON.stringify({ x: samples, y: labels, test: pixels.map((v) => v.map((x) => x ?? 0)) }));
      const py = spawnSync(
        DEBIAN_PYTHON,
        [
          '-c',
          `import json, sys, numpy as np
from sklearn.ensemble import RandomForestClassifier
d = json.load(open(sys.argv[1]))
m = RandomForestClassifier(n_estimators=50, max_features='sqrt', random_state=1).fit(np.array(d['x'], dtype=np.float32), d['y'])
print(json.dumps(m.predict(np.array(d['test'], dtype=np.float32)).tolist()))`,
          file,
        ],
        { encoding: 'utf8', maxBuffer: 1 << 26 },
      );
      expect(py.status, py.stderr).toBe(0);
      const sk = JSON.parse(py.stdout) as number[];
      let valid = 0;
      let xeoRight = 0;
      let skRight = 0;
      truth.forEach((t, i) => {
        if (t === null) {
          expect(xeo[i]).toBe(null);
          return;
        }
        valid++;
        if (xeo[i] === t) xeoRight++;
        if (sk[i] === t) skRight++;
      });
      expect(valid).toBeGreaterThan(n * 0.9);
      const accXeo = xeoRight / valid;
      const accSk = skRight / valid;
      console.log(`accuracy on ${valid} test pixels: xeo ${(accXeo * 100).toFixed(2)} %, scikit-learn ${(accSk * 100).toFixed(2)} %`);
      expect(accXeo).toBeGreaterThanOrEqual(accSk - 0.02);
      expect(accXeo).toBeGreaterThan(0.8);
    });
  });
});
