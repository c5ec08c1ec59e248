// Random forests (docs/ml.md), each figure against a peer measured in the same run:
//  1. training: 10,000 samples × 10 predictors × 100 trees, Xeo's trainer (what fit_class_random_forest
//     runs on an engine thread) against scikit-learn's RandomForestClassifier with n_jobs=-1 (all
//     cores) on the same samples: sklearn_over_xeo_train = scikit-learn's time / ours;
//  2. prediction through the engine: a 2048² × 10-band cube (512² with --quick), written here as a
//     10-band GeoTIFF and imported as a collection of a real server, predicted by a graph
//     (load_collection + load_ml_model of the forest uploaded as a user file +
//     reduce_dimension(predict_random_forest), saved as GTiff) in POST /result, with a kernel helper
//     thread per further core (XEO_KERNEL_THREADS), against scikit-learn's predict on the same
//     array (n_jobs=-1), each with its own forest of 100 trees trained on the same samples, the
//     two predicting in turn (medians of 5 each, 3 with --quick, after a warm-up of the server):
//     sklearn_over_xeo_predict = scikit-learn's time / the whole /result (the client's wall time:
//     reading the ten bands, the forest, the GTiff), and _kernel_stage over the forest kernel's
//     share of it (Server-Timing `kernel`); the map is checked against the direct kernel's;
//  3. the forest kernel alone on the same array in kernel memory (runForest, no server, no graph):
//     sklearn_over_forest_kernel with the helper threads, _one_thread without;
//  4. map tiles: cold tiles of a classified map (load_ml_model of a training job's model,
//     predict_random_forest over four bands, categorical colours) against cold tiles of the NDVI
//     map over the same tiles: classified_tile_over_ndvi_tile = p50 / p50 at zoom 15, and the same
//     at zooms 14 and 13 (_z14, _z13), where fewer or no tile pixels repeat their neighbours.
// scikit-learn comes from Debian's python3-sklearn (/usr/bin/python3).
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { writeFileSync } from 'node:fs';
import { fromArrayBuffer } from 'geotiff';
import { writeCog } from '../src/output/cog-writer.js';
import { encodeForest } from '../src/ml/model-file.js';
import type { Forest } from '../src/ml/forest.js';
import path from 'node:path';
import { CLI, Cleanup, median, removeDir, round, startXeo, table, tempDir } from './lib.js';
import type { BenchOptions, BenchResult } from './run.js';
import { trainForest, resolveMaxVariables } from '../src/ml/train.js';
import { runForest } from '../src/compile/forest-kernel.js';
import { KernelHelpers } from '../src/compile/kernel-threads.js';
import { availableParallelism } from 'node:os';
import { plane, withArena } from '../src/wasm/kernels.js';
import { mulberry32 } from '../src/core/random.js';
import { tileAt } from '../src/tiles/tile-grid.js';
import { measureOnnx } from './ml-onnx.js';
import { forestMapGTiff, forestMapNodes } from './ml-graphs.js';

const PYTHON = '/usr/bin/python3';
const N = 10_000;
const P = 10;
const TREES = 100;

/** Samples of three classes whose boundaries run across all ten predictors (some more than others). */
function synthetic(n: number, seed: number): { x: Float32Array; y: Float64Array } {
  const r = mulberry32(seed);
  const x = new Float32Array(n * P);
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let f = 0; f < P; f++) {
      const v = r();
      x[i * P + f] = v;
      s += f < 3 ? v : 0.2 * v;
    }
    s += 0.15 * (r() - 0.5);
    y[i] = s > 1.9 ? 2 : s > 1.5 ? 1 : 0;
  }
  return { x, y };
}

/** Pixel-major samples to predictor-major (the trainer's layout). */
function byPredictor(x: Float32Array, n: number): Float32Array {
  const out = new Float32Array(n * P);
  for (let i = 0; i < n; i++) for (let f = 0; f < P; f++) out[f * n + i] = x[i * P + f];
  return out;
}

// Fits, says so (the median fit time), then predicts the cube once per line read from stdin,
// answering each with its time, so that its predictions alternate with the server's.
const SKLEARN = `
import json, sys, time
import numpy as np
from sklearn.ensemble import RandomForestClassifier
d = sys.argv[1]; n, p, trees, runs, pixels = (int(v) for v in sys.argv[2:7])
x = np.fromfile(d + '/x.f32', dtype=np.float32).reshape(n, p)
y = np.fromfile(d + '/y.f64', dtype=np.float64)
fits = []
for i in range(runs):
    m = RandomForestClassifier(n_estimators=trees, max_features='sqrt', n_jobs=-1, random_state=i)
    t = time.perf_counter(); m.fit(x, y); fits.append(time.perf_counter() - t)
cube = np.fromfile(d + '/cube.f32', dtype=np.float32).reshape(pixels, p)
print(json.dumps({'fit': sorted(fits)[len(fits) // 2]}), flush=True)
for line in sys.stdin:
    t = time.perf_counter(); pred = m.predict(cube); s = time.perf_counter() - t
    print(json.dumps({'predict': s, 'classes': np.bincount(pred.astype(int)).tolist()}), flush=True)
`;

/** scikit-learn in a Python process of its own: its fit time, and a prediction of the cube on each call. */
async function sklearnPeer(dir: string, runs: number, pixels: number): Promise<{ fit: number; predict(): Promise<number>; close(): void }> {
  const py = spawn(PYTHON, ['-c', SKLEARN, dir, String(N), String(P), String(TREES), String(runs), String(pixels)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  py.stderr.on('data', (d) => (err += d));
  const lines = createInterface({ input: py.stdout })[Symbol.asyncIterator]();
  const next = async () => {
    const r = await lines.next();
    if (r.done) throw new Error(`scikit-learn failed (is python3-sklearn installed?): ${err}`);
    return JSON.parse(r.value) as { fit?: number; predict?: number };
  };
  const { fit } = await next();
  return {
    fit: fit!,
    async predict() {
      py.stdin.write('\n');
      return (await next()).predict!;
    },
    close: () => {
      py.stdin.end();
    },
  };
}

/** The bench's collection: the cube's ten bands as one GeoTIFF, imported into the server's catalogue. */
const CUBE_COLLECTION = 'BENCH_FOREST_CUBE';
const predictorNames = () => Array.from({ length: P }, (_, f) => `b${f}`);

/**
 * The cube predicted by a real server: the ten bands written as a GeoTIFF and imported as a
 * collection, the forest uploaded as a user file, and a graph of load_collection, load_ml_model and
 * reduce_dimension(predict_random_forest) saved as GTiff in POST /result, `runs` times after one
 * warm-up, each followed by the peer's prediction (so both meet the same noise). Answers the
 * client's wall times, the server's kernel stages, the peer's times and the last map.
 */
async function predictThroughServer(
  dir: string,
  cube: Float32Array,
  side: number,
  forest: Forest,
  helpers: number,
  runs: number,
  peer: () => Promise<number>,
): Promise<{ wallS: number[]; kernelS: number[]; peerS: number[]; stages: Record<string, number[]>; map: Float32Array }> {
  const cleanup = new Cleanup();
  try {
    const pixels = side * side;
    const bands = Array.from({ length: P }, (_, f) => {
      const b = new Float32Array(pixels);
      for (let i = 0; i < pixels; i++) b[i] = cube[i * P + f];
      return b;
    });
    const file = path.join(dir, 'cube.tif');
    await writeCog(file, { width: side, height: side, epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], bands, nodata: null, descriptions: predictorNames(), level: 1 });
    const xeo = await startXeo(
      { XEO_COMPUTE_THREADS: '1', XEO_KERNEL_THREADS: String(helpers), XEO_SYNC_MAX_VALUES: String(P * pixels + 1024 * 1024), XEO_KERNEL_ARENA_KEEP_BYTES: String(1 << 30) },
      [],
      120_000,
    );
    cleanup.add(() => xeo.stop());
    const env = { ...process.env, XEO_DATA_DIR: xeo.dataDir };
    for (const args of [
      ['import', file, '--collection', CUBE_COLLECTION, '--bands', predictorNames().join(','), '--date', '2024-06-21'],
      ['users', 'add', 'bench', '--password', 'bench'],
    ]) {
      const r = spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`xeo ${args[0]} failed: ${r.stderr}`);
    }
    const basic = 'Basic ' + Buffer.from('bench:bench').toString('base64');
    const token = ((await (await fetch(`${xeo.url}/1.2.0/credentials/basic`, { headers: { authorization: basic } })).json()) as { access_token: string }).access_token;
    const auth = { authorization: `Bearer basic//${token}` };
    const up = await fetch(`${xeo.url}/1.2.0/files/bench/forest.xrf`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/octet-stream' }, body: encodeForest(forest) });
    if (up.status !== 200) throw new Error(`the model's upload answered ${up.status}`);
    const graph = forestMapGTiff({ process_id: 'load_collection', arguments: { id: CUBE_COLLECTION, spatial_extent: null, temporal_extent: null, bands: predictorNames() } }, 'bench/forest.xrf');
    const wallS: number[] = [];
    const kernelS: number[] = [];
    const peerS: number[] = [];
    const stages: Record<string, number[]> = {};
    let body: ArrayBuffer | null = null;
    for (let i = 0; i <= runs; i++) {
      const t0 = performance.now();
      const res = await fetch(`${xeo.url}/1.2.0/result`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ process: { process_graph: graph } }) });
      body = await res.arrayBuffer();
      const wall = (performance.now() - t0) / 1000;
      if (res.status !== 200) throw new Error(`/result answered ${res.status}: ${Buffer.from(body).toString().slice(0, 300)}`);
      // The first run reads the model and loads the kernels: a warm-up.
      if (i === 0) continue;
      wallS.push(wall);
      for (const m of (res.headers.get('server-timing') ?? '').matchAll(/(\w+);dur=([\d.]+)/g)) (stages[m[1]] ??= []).push(Number(m[2]));
      kernelS.push((stages.kernel?.at(-1) ?? NaN) / 1000);
      peerS.push(await peer());
    }
    const tiff = await fromArrayBuffer(body!);
    const [map] = (await (await tiff.getImage()).readRasters({ interleave: false })) as unknown as Float32Array[];
    return { wallS, kernelS, peerS, stages, map };
  } finally {
    await cleanup.run();
  }
}

async function trainAndPredict(opts: BenchOptions, dir: string): Promise<{ figures: Record<string, number>; ratios: Record<string, number> }> {
  const side = opts.quick ? 512 : 2048;
  const pixels = side * side;
  const runs = opts.quick ? 1 : 3;
  const predicts = opts.quick ? 3 : 5;
  const { x, y } = synthetic(N, 7);
  writeFileSync(path.join(dir, 'x.f32'), x);
  writeFileSync(path.join(dir, 'y.f64'), y);
  const cube = synthetic(pixels, 11).x;
  writeFileSync(path.join(dir, 'cube.f32'), cube);

  // Ours: the trainer on this thread, as an engine thread runs it.
  const xs = byPredictor(x, N);
  const times: number[] = [];
  let forest = null as ReturnType<typeof trainForest> | null;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    forest = trainForest({
      kind: 'classification',
      x: xs,
      n: N,
      p: P,
      y,
      predictors: predictorNames(),
      numTrees: TREES,
      maxVariables: resolveMaxVariables(null, P, 'classification'),
      maxVariablesGiven: 'sqrt',
      seed: i + 1,
      maxDepth: 64,
      skipped: 0,
    });
    times.push((performance.now() - t0) / 1000);
  }
  const xeoTrain = median(times);
  // The forest kernel alone: the cube's ten bands as planes in kernel memory, on this thread
  // alone, then with a kernel helper thread per further core (XEO_KERNEL_THREADS), as
  // scikit-learn uses every core.
  const helpers = Math.max(1, availableParallelism() - 1);
  const [kernelOne, kernelHelped, direct] = await withArena(() => {
    const planes = Array.from({ length: P }, (_, f) => {
      const p = plane(pixels);
      for (let i = 0; i < pixels; i++) p[i] = cube[i * P + f];
      return p;
    });
    const withHelpers = new KernelHelpers(helpers);
    let out: Float32Array | null = null;
    const timed = (h: KernelHelpers | undefined) => {
      const t0 = performance.now();
      out = Float32Array.from(runForest(forest!, planes, pixels, false, h)[0]);
      return (performance.now() - t0) / 1000;
    };
    try {
      timed(withHelpers); // the helpers start and load the module
      return [timed(undefined), timed(withHelpers), out!] as const;
    } finally {
      withHelpers.stop();
    }
  });
  console.log(
    `ml bench: xeo trains in ${round(xeoTrain, 3)} s (OOB accuracy ${round(forest!.info.oobScore! * 100, 2)} %, ${forest!.feature.length} nodes); the forest kernel alone predicts ${side}² px in ${round(kernelOne, 3)} s on one thread, ${round(kernelHelped, 3)} s with ${helpers} helper thread(s)`,
  );
  // scikit-learn fits (alone), then predicts in turn with the server.
  const sklearn = await sklearnPeer(dir, runs, pixels);
  let server;
  try {
    // Through the engine: the same forest and array, a graph in POST /result of a real server.
    server = await predictThroughServer(dir, cube, side, forest!, helpers, predicts, () => sklearn.predict());
  } finally {
    sklearn.close();
  }
  let differ = 0;
  for (let i = 0; i < pixels; i++) if (server.map[i] !== direct[i]) differ++;
  if (server.map.length !== pixels || differ) throw new Error(`the server's map differs from the forest kernel's in ${differ} of ${pixels} pixels`);
  const xeoPredict = median(server.wallS);
  const xeoPredictKernel = median(server.kernelS);
  const st = (name: string) => round(median(server.stages[name] ?? [NaN]), 1);
  console.log(
    `ml bench: through the server (POST /result, GTiff) ${side}² px × ${P} bands in ${server.wallS.map((t) => round(t, 3)).join(', ')} s (p50 ${round(xeoPredict, 3)}); server stages p50 ms: read ${st('read')}, warp ${st('warp')}, kernel ${st('kernel')}, encode ${st('encode')}, total ${st('total')}; the map equals the kernel's`,
  );
  const sk = { fit: sklearn.fit, predict: median(server.peerS) };
  console.log(`ml bench: scikit-learn (n_jobs=-1) trains in ${round(sk.fit, 3)} s, predicts in turn with the server in ${server.peerS.map((t) => round(t, 3)).join(', ')} s (p50 ${round(sk.predict, 3)})`);
  return {
    figures: {
      xeo_train_s: round(xeoTrain, 3),
      sklearn_train_s: round(sk.fit, 3),
      xeo_predict_s: round(xeoPredict, 3),
      xeo_predict_kernel_stage_s: round(xeoPredictKernel, 3),
      xeo_predict_read_ms: st('read'),
      xeo_predict_encode_ms: st('encode'),
      forest_kernel_s: round(kernelHelped, 3),
      forest_kernel_one_thread_s: round(kernelOne, 3),
      sklearn_predict_s: round(sk.predict, 3),
      predict_pixels: pixels,
      kernel_helpers: helpers,
    },
    ratios: {
      sklearn_over_xeo_train: round(sk.fit / xeoTrain, 2),
      sklearn_over_xeo_predict: round(sk.predict / xeoPredict, 2),
      sklearn_over_xeo_predict_kernel_stage: round(sk.predict / xeoPredictKernel, 2),
      sklearn_over_forest_kernel: round(sk.predict / kernelHelped, 2),
      sklearn_over_forest_kernel_one_thread: round(sk.predict / kernelOne, 2),
    },
  };
}

const X0 = 620000;
const Y0 = 5320000;
const BANDS = ['B02', 'B03', 'B04', 'B08'];
const DATE = ['2024-06-15', '2024-06-30'];
const load = (extent: unknown, bands = BANDS) => ({ process_id: 'load_collection', arguments: { id: 'DEMO_S2_L2A', spatial_extent: extent, temporal_extent: DATE, bands } });

async function tiles(opts: BenchOptions): Promise<{ figures: Record<string, number>; ratios: Record<string, number> }> {
  const cleanup = new Cleanup();
  try {
    console.log('ml bench: starting Xeo with the demo collection (generated on first start, ~10 s)');
    const xeo = await startXeo({ XEO_DEMO: 'true', XEO_COMPUTE_THREADS: '2' }, [], 120_000);
    cleanup.add(() => xeo.stop());
    const add = spawnSync(process.execPath, [CLI, 'users', 'add', 'bench', '--password', 'bench'], { env: { ...process.env, XEO_DATA_DIR: xeo.dataDir }, encoding: 'utf8' });
    if (add.status !== 0) throw new Error(`users add failed: ${add.stderr}`);
    const basic = 'Basic ' + Buffer.from('bench:bench').toString('base64');
    const token = `Bearer basic//${((await (await fetch(`${xeo.url}/1.2.0/credentials/basic`, { headers: { authorization: basic } })).json()) as { access_token: string }).access_token}`;
    const api = async (method: string, p: string, body?: unknown) => {
      const r = await fetch(`${xeo.url}/1.2.0${p}`, { method, headers: { authorization: token, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await r.text();
      if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${text}`);
      return { headers: r.headers, json: text ? JSON.parse(text) : null };
    };
    // Labelled points: 400 over the north-west of the scene, labelled by NDVI and green.
    const pts = Array.from({ length: 400 }, (_, i) => [X0 + 5 + (i % 20) * 400, Y0 - 5 - Math.floor(i / 20) * 400]);
    const fc = (labels?: number[]) => ({
      type: 'FeatureCollection',
      crs: { type: 'name', properties: { name: 'EPSG:32633' } },
      features: pts.map((c, i) => ({ type: 'Feature', geometry: { type: 'Point', coordinates: c }, properties: labels ? { target: labels[i] } : {} })),
    });
    const box = { west: X0, east: X0 + 8200, north: Y0, south: Y0 - 8200, crs: 32633 };
    const mean = { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } };
    const values = (
      await api('POST', '/result', {
        process: {
          process_graph: {
            l: load(box),
            a: { process_id: 'aggregate_spatial', arguments: { data: { from_node: 'l' }, geometries: fc(), reducer: mean } },
            s: { process_id: 'save_result', arguments: { data: { from_node: 'a' }, format: 'JSON' }, result: true },
          },
        },
      })
    ).json;
    const rows = Object.values(values)[0] as number[][];
    const labels = rows.map(([, g, r, n]) => {
      const ndvi = (n - r) / (n + r);
      return ndvi > 0.5 ? (g > 700 ? 3 : 2) : ndvi > 0.2 ? 1 : 0;
    });
    const train = {
      l: load(box),
      a: { process_id: 'aggregate_spatial', arguments: { data: { from_node: 'l' }, geometries: fc(), reducer: mean } },
      f: { process_id: 'fit_class_random_forest', arguments: { predictors: { from_node: 'a' }, target: fc(labels), num_trees: 100, seed: 1 } },
      s: { process_id: 'save_ml_model', arguments: { data: { from_node: 'f' } }, result: true },
    };
    const job = (await api('POST', '/jobs', { process: { process_graph: train } })).headers.get('openeo-identifier') ?? '';
    const jobId = job || ((await api('GET', '/jobs')).json.jobs[0].id as string);
    await api('POST', `/jobs/${jobId}/results`);
    for (let i = 0; ; i++) {
      const st = (await api('GET', `/jobs/${jobId}`)).json.status;
      if (st === 'finished') break;
      if (st === 'error' || i > 600) throw new Error(`the training job ended ${st}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const classified = forestMapNodes(load(null), jobId, true);
    const ndvi = { l: load(null, ['B04', 'B08']), n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } }, result: true } };
    const service = async (graph: unknown, configuration: unknown) => (await api('POST', '/services', { type: 'XYZ', process: { process_graph: graph }, configuration })).headers.get('xeo-identifier')!;
    const sClass = await service(classified, { colormap: 'classes', min: 0, max: 3 });
    const sNdvi = await service(ndvi, { colormap: 'ndvi', min: -1, max: 1 });
    // Distinct tiles around the scene's centre, none cached before it is asked for: at zoom 15 (the
    // target; a tile pixel is about 3.2 m there, so the 10 m data comes in runs of about 3 x 3
    // equal pixels, each walked once), and at zooms 14 (6.4 m) and 13 (12.8 m: no runs, a walk per
    // pixel) for what the kernel does without them.
    const count = opts.quick ? 12 : 40;
    const names = ['read', 'warp', 'kernel', 'encode', 'total'];
    const figures: Record<string, number> = {};
    const ratios: Record<string, number> = {};
    for (const z of [15, 14, 13]) {
      const c = tileAt(16.745, 47.928, z);
      const coords = Array.from({ length: count }, (_, i) => ({ z, x: c.x - 4 + (i % 8), y: c.y - 3 + Math.floor(i / 8) }));
      // Per tile: the wall time, and the server's stages from Server-Timing (read, warp, kernel, encode).
      const stages: Record<string, Record<string, number[]>> = {};
      const cold = async (id: string, k: number) => {
        const t = coords[k];
        const t0 = performance.now();
        const r = await fetch(`${xeo.url}/xyz/${id}/${t.z}/${t.x}/${t.y}.png`);
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`tile ${t.z}/${t.x}/${t.y}: ${r.status}`);
        for (const m of (r.headers.get('server-timing') ?? '').matchAll(/(\w+);dur=([\d.]+)/g)) ((stages[id] ??= {})[m[1]] ??= []).push(Number(m[2]));
        return performance.now() - t0;
      };
      // Warm-up (the model is read, the kernels loaded) on a tile outside the measured set, then alternate.
      await fetch(`${xeo.url}/xyz/${sClass}/${z}/${c.x + 8}/${c.y + 8}.png`).then((r) => r.arrayBuffer());
      await fetch(`${xeo.url}/xyz/${sNdvi}/${z}/${c.x + 8}/${c.y + 8}.png`).then((r) => r.arrayBuffer());
      const tc: number[] = [];
      const tn: number[] = [];
      // The two maps share the bands B04 and B08, and the first to draw a tile reads their blocks
      // (the second finds them in the block cache): each goes first on every other tile.
      for (let k = 0; k < count; k++) {
        if (k % 2 === 0) {
          tc.push(await cold(sClass, k));
          tn.push(await cold(sNdvi, k));
        } else {
          tn.push(await cold(sNdvi, k));
          tc.push(await cold(sClass, k));
        }
      }
      const pClass = median(tc);
      const pNdvi = median(tn);
      const st = (id: string, name: string) => round(median(stages[id]?.[name] ?? [NaN]), 2);
      console.log(
        table([
          [`cold tile, zoom ${z}`, 'p50 ms', ...names.map((n) => `${n} (server)`)],
          ['classified (100 trees, 4 bands)', round(pClass, 1), ...names.map((n) => st(sClass, n))],
          ['NDVI', round(pNdvi, 1), ...names.map((n) => st(sNdvi, n))],
        ]),
      );
      // Zoom 15 keeps the names the figure has always had; the others say their zoom.
      const at = z === 15 ? '' : `_z${z}`;
      Object.assign(figures, {
        [`classified_tile_p50_ms${at}`]: round(pClass, 1),
        [`ndvi_tile_p50_ms${at}`]: round(pNdvi, 1),
        [`classified_tile_kernel_ms${at}`]: st(sClass, 'kernel'),
        [`ndvi_tile_kernel_ms${at}`]: st(sNdvi, 'kernel'),
      });
      ratios[`classified_tile_over_ndvi_tile${at}`] = round(pClass / pNdvi, 2);
    }
    return { figures, ratios };
  } finally {
    await cleanup.run();
  }
}

export async function run(opts: BenchOptions): Promise<BenchResult> {
  const dir = tempDir('xeo-bench-ml-');
  try {
    const a = await trainAndPredict(opts, dir);
    const b = await tiles(opts);
    const c = await measureOnnx(opts);
    return { figures: { ...a.figures, ...b.figures, ...c.figures }, ratios: { ...a.ratios, ...b.ratios, ...c.ratios } };
  } finally {
    removeDir(dir);
  }
}
