// Random forests end to end, as the openEO Python client drives them: predictors sampled over
// labelled points (aggregate_spatial), a training job with save_ml_model, load_ml_model by the job's
// id, and predict_random_forest as the reducer of reduce_dimension over bands in /result, a batch
// job and an XYZ tile. scikit-learn (Debian's python3-sklearn) trained on the same samples with the
// same number of trees and max_features is the reference for accuracy on pixels neither trained
// on. Hostile inputs each get a clear 4xx while tiles keep coming.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { addUser, expectError, http, login, removeDir, startServer, tempDir, type Res, type TestServer } from './helpers.js';
import { demoDataDir, DEMO_COLLECTION } from './demo-data.js';
import { Jobs } from './jobs-helpers.js';
import { describeWithTool, DEBIAN_PYTHON } from './system-tools.js';
import { decodeForest } from '../src/ml/model-file.js';
import { predictOne, probabilitiesOne } from '../src/ml/forest.js';
import { tileAt } from '../src/tiles/tile-grid.js';
import { colorTable } from '../src/output/colormap.js';
import { decodePng } from './png-decode.js';

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
  aggregatespatial1: {
    process_id: 'aggregate_spatial',
    arguments: { data: { from_node: 'loadcollection1' }, geometries: points(), reducer: { process_graph: { mean1: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
  },
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

/** A graph that trains and predicts in one go (no model saved): the fit node's result is the reducer's context. */
const fitAndPredict = (fit: string, target: unknown, extra: Record<string, unknown>, reducerProcess = 'predict_random_forest', over = 'reduce_dimension') => ({
  l: load(TRAIN_BOX),
  a: {
    process_id: 'aggregate_spatial',
    arguments: { data: { from_node: 'l' }, geometries: points(), reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
  },
  f: { process_id: fit, arguments: { predictors: { from_node: 'a' }, target, ...extra } },
  t: load(TEST),
  r: {
    process_id: over,
    arguments: {
      data: { from_node: 't' },
      dimension: 'bands',
      [over === 'reduce_dimension' ? 'reducer' : 'process']: {
        process_graph: { p: { process_id: reducerProcess, arguments: { data: { from_parameter: 'data' }, model: { from_parameter: 'context' } }, result: true } },
      },
      context: { from_node: 'f' },
    },
  },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'r' }, format: 'JSON' }, result: true },
});

let s: TestServer;
let jobs: Jobs;
let bob: string;
let work: string;
let samples: number[][]; // per training point: B02, B03, B04, B08
let labels: number[];
let trainJob: string;
let testPixels: (number | null)[][]; // per pixel of the test window: B02, B03, B04, B08

const result = (graph: unknown, token = jobs.token): Promise<Res> =>
  http('POST', `${s.base}/result`, { token, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ process: { process_graph: graph } }) });

/** The flat values of a JSON raster result (one band, y then x) or of each band. */
function rasterValues(json: any): number[] {
  const flat = (v: unknown): number[] => (Array.isArray(v) ? v.flatMap(flat) : [v as number]);
  return flat(json.data);
}

beforeAll(async () => {
  // Loopback URLs are allowed for the STAC Item server of this file (outbound rules otherwise refuse them).
  s = await startServer({ XEO_JOB_THREADS: '1', XEO_OUTBOUND_ALLOW: '127.0.0.1' }, await demoDataDir());
  addUser(s.dataDir, 'alice', 'pa');
  addUser(s.dataDir, 'bob', 'pb');
  jobs = new Jobs(s, await login(s, 'alice', 'pa'));
  bob = await login(s, 'bob', 'pb');
  work = tempDir();
  // The predictors at the training points, to label them by the rule.
  const r = await result({
    l: load(TRAIN_BOX),
    a: {
      process_id: 'aggregate_spatial',
      arguments: { data: { from_node: 'l' }, geometries: points(), reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
    },
    s: { process_id: 'save_result', arguments: { data: { from_node: 'a' }, format: 'JSON' }, result: true },
  });
  expect(r.status, r.text).toBe(200);
  // JSON of the vector cube: per date, per point, the band values.
  samples = (Object.values(r.json)[0] as number[][]).map((v) => [...v]);
  expect(samples.length).toBe(TRAIN.length);
  labels = samples.map((v) => rule(v[0], v[1], v[2], v[3]));
  const bands = await result({ l: load(TEST), s: { process_id: 'save_result', arguments: { data: { from_node: 'l' }, format: 'JSON' }, result: true } });
  expect(bands.status, bands.text).toBe(200);
  // The bands cube as JSON: t x bands x y x x (one date).
  const values = rasterValues(bands.json);
  const n = values.length / 4;
  testPixels = Array.from({ length: n }, (_, i) => [0, 1, 2, 3].map((b) => values[b * n + i]));
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
    // Relative to the Item, carrying the model file's own signature (the Item was reached by a signed link).
    expect(item.assets.model.href).toMatch(/^ml_model\.xrf\?expires=\d+&signature=[\w-]+$/);
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
      const n = xeo.length;
      const pixels = testPixels;
      expect(pixels.length).toBe(n);
      const truth = pixels.map((v) => (v.some((x) => x === null) ? null : rule(v[0]!, v[1]!, v[2]!, v[3]!)));
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

    it('regression: R² on the test window at most 0.03 below scikit-learn, trained and applied in one graph', async () => {
      // The value: a smooth function of the bands (NDVI scaled, plus green).
      const value = (v: number[]) => (100 * (v[3] - v[2])) / (v[3] + v[2]) + v[1] / 50;
      const r = await result(fitAndPredict('fit_regr_random_forest', points(samples.map(value)), { num_trees: 40, seed: 3 }));
      expect(r.status, r.text).toBe(200);
      const xeo = rasterValues(r.json);
      const file = path.join(work, 'skr.json');
      const valid = testPixels.map((v, i) => [v, i] as const).filter(([v]) => !v.some((x) => x === null));
      writeFileSync(file, JSON.stringify({ x: samples, y: samples.map(value), test: valid.map(([v]) => v) }));
      const py = spawnSync(
        DEBIAN_PYTHON,
        [
          '-c',
          `import json, sys, numpy as np
from sklearn.ensemble import RandomForestRegressor
d = json.load(open(sys.argv[1]))
m = RandomForestRegressor(n_estimators=40, max_features=1, random_state=1).fit(np.array(d['x'], dtype=np.float32), d['y'])
print(json.dumps(m.predict(np.array(d['test'], dtype=np.float32)).tolist()))`,
          file,
        ],
        { encoding: 'utf8', maxBuffer: 1 << 26 },
      );
      expect(py.status, py.stderr).toBe(0);
      const sk = JSON.parse(py.stdout) as number[];
      const truth = valid.map(([v]) => value(v as number[]));
      const mean = truth.reduce((a, b) => a + b, 0) / truth.length;
      const sst = truth.reduce((a, t) => a + (t - mean) ** 2, 0);
      const r2 = (pred: number[]) => 1 - pred.reduce((a, p, k) => a + (p - truth[k]) ** 2, 0) / sst;
      const r2Xeo = r2(valid.map(([, i]) => xeo[i]));
      const r2Sk = r2(sk);
      console.log(`R² on ${valid.length} test pixels: xeo ${r2Xeo.toFixed(4)}, scikit-learn ${r2Sk.toFixed(4)}`);
      expect(r2Xeo).toBeGreaterThanOrEqual(r2Sk - 0.03);
      expect(r2Xeo).toBeGreaterThan(0.8);
    });
  });

  it('the kernel gives exactly what the saved model gives walked in JavaScript', async () => {
    const res = (await jobs.call('GET', `/jobs/${trainJob}/results`)).json;
    const file = await http('GET', res.assets['ml_model.xrf'].href);
    expect(file.status).toBe(200);
    const forest = decodeForest(new Uint8Array(file.body));
    expect(forest.roots.length).toBe(50);
    expect(forest.predictors).toEqual(BANDS);
    const pred = await result(predictGraph({ id: trainJob }));
    const map = rasterValues(pred.json);
    const js = testPixels.map((v) =>
      predictOne(
        forest,
        v.map((x) => (x === null ? NaN : x)),
      ),
    );
    expect(map).toEqual(js.map((v) => (Number.isNaN(v) ? null : v)));
  });

  it('gives a window zoomed in past its data (runs of equal pixels, walked once) what JavaScript gives every pixel', async () => {
    // 2.5 m pixels over 10 m data, nearest: blocks of 4 x 4 equal pixels, as a map tile at zoom 15
    // draws them; the forest kernel copies a pixel's answer from its left or upper neighbour.
    const zoomed = { process_id: 'resample_spatial', arguments: { data: { from_node: 'loadcollection1' }, resolution: 2.5, method: 'near' } };
    const window = { west: TEST.west, east: TEST.west + 320, north: TEST.north, south: TEST.north - 320, crs: 32633 };
    const res = (await jobs.call('GET', `/jobs/${trainJob}/results`)).json;
    const forest = decodeForest(new Uint8Array((await http('GET', res.assets['ml_model.xrf'].href)).body));
    const bands = await result({ loadcollection1: load(window), z: zoomed, s: { process_id: 'save_result', arguments: { data: { from_node: 'z' }, format: 'JSON' }, result: true } });
    expect(bands.status, bands.text).toBe(200);
    const values = rasterValues(bands.json);
    const n = values.length / 4;
    const cols = (bands.json.data as number[][][][])[0][0][0].length;
    const pixel = (i: number) => [0, 1, 2, 3].map((b) => values[b * n + i] ?? NaN);
    // Most pixels repeat their left neighbour, so most answers are copies.
    const repeats = Array.from({ length: n }, (_, i) => i % cols > 0 && pixel(i).every((v, b) => v === pixel(i - 1)[b])).filter(Boolean).length;
    expect(repeats / n).toBeGreaterThan(0.6);
    for (const [process, js] of [
      ['predict_random_forest', (x: number[]) => [predictOne(forest, x)]],
      ['predict_probabilities', (x: number[]) => probabilitiesOne(forest, x)],
    ] as const) {
      const g = predictGraph({ id: trainJob }, window) as Record<string, any>;
      g.z = zoomed;
      g.reducedimension1.arguments.data = { from_node: 'z' };
      if (process === 'predict_probabilities') {
        g.reducedimension1.process_id = 'apply_dimension';
        g.reducedimension1.arguments.process = { process_graph: { p: { process_id: process, arguments: { data: { from_parameter: 'data' }, model: { from_parameter: 'context' } }, result: true } } };
        delete g.reducedimension1.arguments.reducer;
      }
      const pred = await result(g);
      expect(pred.status, pred.text).toBe(200);
      const map = rasterValues(pred.json);
      const k = map.length / n;
      const expected = Array.from({ length: n }, (_, i) => js(pixel(i)));
      // Planes one after the other (classes for probabilities), as the JSON nests them.
      expect(map).toEqual(Array.from({ length: n * k }, (_, j) => expected[j % n][Math.floor(j / n)]).map((v) => (Number.isNaN(v) ? null : Math.fround(v))));
    }
  });

  it('a model as the answer of /result is its summary in JSON', async () => {
    const g = fitAndPredict('fit_class_random_forest', points(labels), { num_trees: 3, seed: 5 }) as Record<string, any>;
    for (const k of ['t', 'r', 's']) delete g[k];
    g.f.result = true;
    const r = await result(g);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ type: 'ml-model', architecture: 'random-forest', kind: 'classification', predictors: BANDS, trees: 3, info: { seed: 5, samples: 400 } });
    expect(r.text.length).toBeLessThan(2000);
  });

  it("loads the model from the user's files and by the URL of its STAC Item, with the map of the job id", async () => {
    const res = (await jobs.call('GET', `/jobs/${trainJob}/results`)).json;
    const model = (await http('GET', res.assets['ml_model.xrf'].href)).body;
    const item = (await http('GET', res.assets['ml_model_metadata.json'].href)).body;
    const byJob = (await result(predictGraph({ id: trainJob }))).text;
    // The Item beside its model file in the user's files (its href is relative), and the file alone.
    for (const [name, body] of [
      ['ml_model.xrf', model],
      ['ml_model_metadata.json', item],
    ] as const) {
      const put = await http('PUT', `${s.base}/files/saved/${name}`, { token: jobs.token, headers: { 'content-type': 'application/octet-stream' }, body });
      expect(put.status, put.text).toBe(200);
    }
    for (const id of ['saved/ml_model_metadata.json', 'saved/ml_model.xrf']) {
      const r = await result(predictGraph({ id }));
      expect(r.status, r.text).toBe(200);
      expect(r.text).toBe(byJob);
    }
    // The Item and the model on a web server (loopback, allowed for this test's server).
    const web: Server = createServer((req, res2) => {
      // A static server: the query (the signature the Item's href carries) does not matter.
      const at = req.url!.split('?')[0];
      const body = at === '/m/item.json' ? item : at === '/m/ml_model.xrf' ? model : null;
      res2.writeHead(body ? 200 : 404, { 'content-type': 'application/octet-stream' }).end(body ?? '');
    });
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    try {
      const port = (web.address() as { port: number }).port;
      const r = await result(predictGraph({ id: `http://127.0.0.1:${port}/m/item.json` }));
      expect(r.status, r.text).toBe(200);
      expect(r.text).toBe(byJob);
    } finally {
      web.close();
    }
  });

  it('loads the model by the signed link of its STAC Item, as GET /jobs/{id}/results gives it, under the outbound rules', async () => {
    const res = (await jobs.call('GET', `/jobs/${trainJob}/results`)).json;
    const itemUrl: string = res.assets['ml_model_metadata.json'].href;
    expect(itemUrl).toMatch(/\/download\/.*\?expires=\d+&signature=/);
    // The model's href resolved against the Item's URL is the model file's signed link.
    const item = (await http('GET', itemUrl)).json;
    const file = await http('GET', new URL(item.assets.model.href, itemUrl).href);
    expect(file.status).toBe(200);
    expect(file.body.subarray(0, 4).toString()).toBe('XRF1');
    const byJob = await result(predictGraph({ id: trainJob }));
    expect(byJob.status, byJob.text).toBe(200);
    const byLink = await result(predictGraph({ id: itemUrl }));
    expect(byLink.status, byLink.text).toBe(200);
    expect(byLink.text).toBe(byJob.text);
    // Another user may use the link too: it is the capability, as for any signed result link.
    const bobs = await result(predictGraph({ id: itemUrl }), bob);
    expect(bobs.text).toBe(byJob.text);
    // A link whose signature is changed is refused by the server it points to: a 400 naming the answer.
    const forged = await result(predictGraph({ id: itemUrl.replace(/signature=[\w-]/, (m) => (m.endsWith('A') ? `${m.slice(0, -1)}B` : `${m.slice(0, -1)}A`)) }));
    expectError(forged, 400, 'ProcessParameterInvalid');
    expect(forged.json.message).toMatch(/HTTP 404/);
    // Our own links are users' URLs like any: the outbound rules still hold (loopback over IPv6 is not allowed here).
    const refused = await result(predictGraph({ id: itemUrl.replace('//127.0.0.1:', '//[::1]:') }));
    expectError(refused, 400, 'ProcessParameterInvalid');
    expect(refused.json.message).toMatch(/loopback|private|not allowed/i);
  });

  it('the same seed gives the same map; max_variables left out is sqrt', async () => {
    const target = points(labels);
    const a = await result(fitAndPredict('fit_class_random_forest', target, { num_trees: 20, seed: 7 }));
    const b = await result(fitAndPredict('fit_class_random_forest', target, { num_trees: 20, seed: 7 }));
    expect(a.status, a.text).toBe(200);
    expect(b.text).toBe(a.text);
    // The target as a vector cube (load_geojson with the property `target`) trains the same forest.
    const asCube = fitAndPredict('fit_class_random_forest', { from_node: 'g' }, { num_trees: 20, seed: 7 }) as Record<string, unknown>;
    asCube.g = { process_id: 'load_geojson', arguments: { data: target, properties: ['target'] } };
    const d = await result(asCube);
    expect(d.status, d.text).toBe(200);
    expect(d.text).toBe(a.text);
    // max_variables left out (as the client does) is sqrt: the same as giving it.
    const c = await result(fitAndPredict('fit_class_random_forest', target, { num_trees: 20, seed: 7, max_variables: 'sqrt' }));
    expect(c.text).toBe(a.text);
  });

  it('predict_probabilities gives one band per class, summing to one', async () => {
    const r = await result(fitAndPredict('fit_class_random_forest', points(labels), { num_trees: 10, seed: 1 }, 'predict_probabilities', 'apply_dimension'));
    expect(r.status, r.text).toBe(200);
    const classes = [...new Set(labels)].sort();
    const bandsDim = r.json.dimensions?.bands ?? Object.values(r.json.dimensions ?? {}).find((d: any) => d.type === 'bands');
    expect(bandsDim?.values ?? bandsDim?.labels).toEqual(classes.map(String));
    const v = rasterValues(r.json);
    const n = testPixels.length;
    expect(v.length).toBe(classes.length * n);
    for (let i = 0; i < n; i += 97) {
      if (v[i] === null) continue;
      const sum = classes.reduce((acc, _, c) => acc + v[c * n + i], 0);
      expect(sum).toBeCloseTo(1, 5);
    }
  });

  it('a batch job predicts what /result predicts', async () => {
    const sync = await result(predictGraph({ id: trainJob }));
    const run = await jobs.run(predictGraph({ id: trainJob }));
    expect(run.status).toBe('finished');
    const res = (await jobs.call('GET', `/jobs/${run.id}/results`)).json;
    const asset = Object.values(res.assets)[0] as { href: string };
    expect((await http('GET', asset.href)).text).toBe(sync.text);
    // Chunked as a GTiff: the statistics of the written classes are those of the sync map.
    const tif = await jobs.run(predictGraph({ id: trainJob }, TEST, 'GTiff'));
    expect(tif.status).toBe('finished');
    const stats = (Object.values((await jobs.call('GET', `/jobs/${tif.id}/results`)).json.assets)[0] as any)['raster:bands'][0].statistics;
    const values = rasterValues(sync.json).filter((x): x is number => x !== null);
    expect(stats.minimum).toBe(Math.min(...values));
    expect(stats.maximum).toBe(Math.max(...values));
    expect(stats.mean).toBeCloseTo(values.reduce((a, b) => a + b, 0) / values.length, 6);
  });

  describe('a classified map as XYZ tiles', () => {
    let service: string;
    const t = tileAt(16.745, 47.93, 13);
    const tile = () => http('GET', `${s.url}/xyz/${service}/${t.z}/${t.x}/${t.y}.png`);

    beforeAll(async () => {
      const graph = predictGraph({ id: trainJob }, null);
      delete (graph as Record<string, unknown>).saveresult1;
      (graph.reducedimension1 as Record<string, unknown>).result = true;
      const r = await http('POST', `${s.base}/services`, {
        token: jobs.token,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'XYZ', title: 'classes', process: { process_graph: graph }, configuration: { colormap: 'classes', min: 0, max: 3 } }),
      });
      expect(r.status, r.text).toBe(201);
      service = r.headers['xeo-identifier'];
    });

    it('draws each class in its colour of the categorical map, and the map page lists the classes', async () => {
      const r = await tile();
      expect(r.status, s.output().slice(-3000)).toBe(200);
      expect(r.headers['content-type']).toBe('image/png');
      const png = decodePng(r.body);
      const table = colorTable('classes');
      const palette = new Set([0, 1, 2, 3].map((c) => table.slice(4 * c, 4 * c + 3).join(',')));
      let drawn = 0;
      for (let i = 0; i < png.width * png.height; i++) {
        if (png.data[4 * i + 3] === 0) continue;
        drawn++;
        expect(palette.has(Array.from(png.data.slice(4 * i, 4 * i + 3)).join(','))).toBe(true);
      }
      expect(drawn).toBeGreaterThan(png.width * png.height * 0.5);
      const page = await http('GET', `${s.url}/viewer?service=${service}`);
      expect(page.status).toBe(200);
      const config = JSON.parse(/<script[^>]*id="xeo-map-config"[^>]*>([\s\S]*?)<\/script>/.exec(page.text)![1]);
      expect(config.layers[0].legend.classes.map((c: any) => c.value)).toEqual(['0', '1', '2', '3']);
    });

    it('refuses hostile input clearly, each a 4xx, while the tiles keep coming', async () => {
      const target = points(labels);
      // A tile not drawn yet, asked for while the hostile requests come in.
      const during = http('GET', `${s.url}/xyz/${service}/${t.z}/${t.x + 2}/${t.y}.png`);
      // A huge number of trees: stopped before any training.
      const huge = await result(fitAndPredict('fit_class_random_forest', target, { num_trees: 1_000_000_000 }));
      expectError(huge, 400, 'ProcessGraphComplexity');
      expect(huge.json.message).toMatch(/num_trees/);
      // Many trees on a handful of samples: a training counts at least 100 samples and 10 predictors.
      const few = { ...target, features: target.features.slice(0, 3) };
      const fewGraph = fitAndPredict('fit_class_random_forest', few, { num_trees: 10_000_000 }) as Record<string, any>;
      fewGraph.a.arguments.geometries = { ...points(), features: points().features.slice(0, 3) };
      const many = await result(fewGraph);
      expectError(many, 400, 'ProcessGraphComplexity');
      expect(many.json.message).toMatch(/counting at least 100 samples and 10 predictors/);
      // A target that does not line up: one feature less, and one moved.
      const fewer = { ...target, features: target.features.slice(1) };
      const r1 = await result(fitAndPredict('fit_class_random_forest', fewer, { num_trees: 5 }));
      expectError(r1, 400, 'ProcessParameterInvalid');
      expect(r1.json.message).toMatch(/399 features and the predictors 400/);
      const moved = structuredClone(target);
      moved.features[5].geometry.coordinates = [X0 + 3333, Y0 - 3333];
      const r2 = await result(fitAndPredict('fit_class_random_forest', moved, { num_trees: 5 }));
      expectError(r2, 400, 'ProcessParameterInvalid');
      expect(r2.json.message).toMatch(/feature 5 of the target/);
      // Labels that are not numbers.
      const words = await result(fitAndPredict('fit_class_random_forest', points(labels.map((l) => `class ${l}`)), { num_trees: 5 }));
      expectError(words, 400, 'ProcessParameterInvalid');
      expect(words.json.message).toMatch(/label of feature 0 is "class \d"/);
      // Another user's job: as unknown as no job at all.
      expectError(await result(predictGraph({ id: trainJob }), bob), 404, 'JobNotFound');
      // A STAC Item without the ml-model extension, from the user's files.
      const item = {
        type: 'Feature',
        stac_version: '1.0.0',
        stac_extensions: [],
        id: 'x',
        geometry: null,
        properties: { datetime: null },
        assets: { model: { href: 'ml_model.xrf', roles: ['data'] } },
        links: [],
      };
      const put = await http('PUT', `${s.base}/files/models/item.json`, { token: jobs.token, headers: { 'content-type': 'application/octet-stream' }, body: JSON.stringify(item) });
      expect(put.status, put.text).toBe(200);
      const noExt = await result(predictGraph({ id: 'models/item.json' }));
      expectError(noExt, 400, 'ProcessParameterInvalid');
      expect(noExt.json.message).toMatch(/ml-model/);
      // A model file that is not one.
      await http('PUT', `${s.base}/files/models/bad.xrf`, { token: jobs.token, headers: { 'content-type': 'application/octet-stream' }, body: Buffer.from('XRF1\u00ff\u00ff\u00ff\u007fgarbage') });
      const bad = await result(predictGraph({ id: 'models/bad.xrf' }));
      expectError(bad, 400, 'ProcessParameterInvalid');
      // A model written into the graph as a value: refused by validation, before anything runs.
      const literal = await http('POST', `${s.base}/validation`, {
        token: jobs.token,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ process_graph: { p: { process_id: 'predict_random_forest', arguments: { data: [1, 2, 3, 4], model: { trees: [] } }, result: true } } }),
      });
      expect(literal.status).toBe(200);
      expect(literal.json.errors.map((e: any) => e.code)).toEqual(['ProcessParameterInvalid']);
      expect(literal.json.errors[0].message).toMatch(/model is the result of fit_class_random_forest/);
      // A model from a process that gives something else: a data cube is no model.
      const cubeAsModel = await http('POST', `${s.base}/validation`, {
        token: jobs.token,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ process_graph: { l: load(TEST), s: { process_id: 'save_ml_model', arguments: { data: { from_node: 'l' } }, result: true } } }),
      });
      expect(cubeAsModel.json.errors.map((e: any) => e.code)).toEqual(['ProcessParameterInvalid']);
      // save_ml_model outside a batch job.
      const sync = await result({ ...trainingGraph(target) });
      expectError(sync, 400, 'ProcessParameterInvalid');
      // Meanwhile, and after: tiles.
      expect((await during).status).toBe(200);
      const again = await http('GET', `${s.url}/xyz/${service}/${t.z}/${t.x + 1}/${t.y}.png`);
      expect(again.status).toBe(200);
    });
  });
});
