// predict_onnx through the engine against onnxruntime-node called directly on the same array, in
// the same run: a per-pixel MLP (4 bands -> 64 -> 64 -> 3 classes, softmax; built with Debian's
// python3-onnx) over a 1024 x 1024 px, 4-band cube of the demo collection (512 x 512 with
// --quick). The engine's figure is the `model` stage of /result's Server-Timing (predict_onnx's
// work: finding the cached session, feeding the pixels, running the model, reading its answer
// back into the cube); the direct one is InferenceSession.run on the same values, already laid
// out as [N, 4] float32, in this process with the same options (one intra-op thread). /result
// and the direct run go in turn so both meet the same noise; the first of each warms up.
// Target: onnx_over_direct <= 1.25.
// measureOnnx() is what `bench/ml.ts` calls; run() lets `npm run bench -- ml-onnx` run it alone.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CLI, Cleanup, median, removeDir, round, startXeo, tempDir } from './lib.js';

const BUILD_MODEL = `
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(11)
def w(*s, scale=1.0):
    return (rng.standard_normal(s) * scale).astype(np.float32)
inits = [numpy_helper.from_array(a, n) for a, n in [
    (w(4, 64, scale=1e-4), 'W1'), (w(64, scale=0.1), 'b1'),
    (w(64, 64, scale=0.2), 'W2'), (w(64, scale=0.1), 'b2'),
    (w(64, 3, scale=0.2), 'W3'), (w(3, scale=0.1), 'b3')]]
nodes = [
    helper.make_node('Gemm', ['x', 'W1', 'b1'], ['h1']), helper.make_node('Relu', ['h1'], ['r1']),
    helper.make_node('Gemm', ['r1', 'W2', 'b2'], ['h2']), helper.make_node('Relu', ['h2'], ['r2']),
    helper.make_node('Gemm', ['r2', 'W3', 'b3'], ['z']), helper.make_node('Softmax', ['z'], ['p'], axis=1)]
g = helper.make_graph(nodes, 'mlp', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 4])],
                      [helper.make_tensor_value_info('p', TensorProto.FLOAT, ['N', 3])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
m.ir_version = 7
m.metadata_props.add(key='output_labels', value='water,forest,crop')
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
`;

export interface OnnxFigures {
  figures: Record<string, number>;
  ratios: { onnx_over_direct: number };
}

/** Requests `path` of the API and answers the body and the Server-Timing stages. */
async function timed(url: string, init: RequestInit): Promise<{ status: number; body: ArrayBuffer; stages: Record<string, number> }> {
  const res = await fetch(url, init);
  const body = await res.arrayBuffer();
  const stages: Record<string, number> = {};
  for (const part of (res.headers.get('server-timing') ?? '').split(',')) {
    const m = /^\s*([a-z]+);dur=([\d.]+)/.exec(part);
    if (m) stages[m[1]] = Number(m[2]);
  }
  return { status: res.status, body, stages };
}

/** predict_onnx through the engine (the model stage of /result) against onnxruntime-node directly. */
export async function measureOnnx(opts: { quick: boolean }): Promise<OnnxFigures> {
  const cleanup = new Cleanup();
  try {
    const dir = tempDir('xeo-bench-onnx-');
    cleanup.add(() => removeDir(dir));
    const modelFile = path.join(dir, 'mlp.onnx');
    const built = spawnSync('/usr/bin/python3', ['-c', BUILD_MODEL, modelFile], { encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`building the model needs Debian's python3-onnx: ${built.stderr}`);
    const modelBytes = readFileSync(modelFile);

    console.log('onnx bench: starting Xeo with the demo collection (generated on first start, ~10 s)');
    const xeo = await startXeo(
      { XEO_DEMO: 'true', XEO_COMPUTE_THREADS: '1', XEO_ML_ONNX_THREADS: '1', XEO_SYNC_MAX_VALUES: String(64 * 1024 * 1024), XEO_KERNEL_ARENA_KEEP_BYTES: String(1 << 30) },
      [],
      120_000,
    );
    cleanup.add(() => xeo.stop());
    const add = spawnSync(process.execPath, [CLI, 'users', 'add', 'bench', '--password', 'bench'], { env: { ...process.env, XEO_DATA_DIR: xeo.dataDir }, encoding: 'utf8' });
    if (add.status !== 0) throw new Error(`users add failed: ${add.stderr}`);
    const basic = 'Basic ' + Buffer.from('bench:bench').toString('base64');
    const token = ((await (await fetch(`${xeo.url}/1.2.0/credentials/basic`, { headers: { authorization: basic } })).json()) as { access_token: string }).access_token;
    const auth = { authorization: `Bearer basic//${token}` };
    const up = await fetch(`${xeo.url}/1.2.0/files/models/mlp.onnx`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/octet-stream' }, body: modelBytes });
    if (up.status !== 200) throw new Error(`upload answered ${up.status}`);

    const collection = (await (await fetch(`${xeo.url}/1.2.0/collections/DEMO_S2_L2A`)).json()) as { 'cube:dimensions': { t: { values: string[] } } };
    const date = collection['cube:dimensions'].t.values[3];
    const side = opts.quick ? 512 : 1024;
    const load = {
      process_id: 'load_collection',
      arguments: {
        id: 'DEMO_S2_L2A',
        spatial_extent: { west: 625000, east: 625000 + side * 10, south: 5305000, north: 5305000 + side * 10, crs: 32633 },
        temporal_extent: [date.slice(0, 10), new Date(Date.parse(date) + 86_400_000).toISOString().slice(0, 10)],
        bands: ['B02', 'B03', 'B04', 'B08'],
      },
    };
    const graph = (predict: boolean, format: string) => ({
      l: load,
      ...(predict ? { p: { process_id: 'predict_onnx', arguments: { data: { from_node: 'l' }, model: 'models/mlp.onnx' } } } : {}),
      s: { process_id: 'save_result', arguments: { data: { from_node: predict ? 'p' : 'l' }, format }, result: true },
    });
    const post = (g: unknown) => timed(`${xeo.url}/1.2.0/result`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ process: { process_graph: g } }) });

    // The same array for the direct run: the cube as JSON, pixels with all four bands, as [N, 4].
    const raw = await post(graph(false, 'JSON'));
    if (raw.status !== 200) throw new Error(`the cube as JSON answered ${raw.status}: ${Buffer.from(raw.body).toString().slice(0, 300)}`);
    const cube = JSON.parse(Buffer.from(raw.body).toString()) as { data: (number | null)[][][][] };
    const bands = cube.data[0];
    const Y = bands[0].length;
    const X = bands[0][0].length;
    const rows: number[] = [];
    for (let y = 0; y < Y; y++) {
      for (let x = 0; x < X; x++) {
        const px = bands.map((b) => b[y][x]);
        if (px.every((v) => v !== null)) rows.push(...px);
      }
    }
    const n = rows.length / 4;
    const ort = await import('onnxruntime-node');
    const session = await ort.InferenceSession.create(modelBytes, { executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' });
    cleanup.add(() => session.release());
    const input = new ort.Tensor('float32', Float32Array.from(rows), [n, 4]);
    const direct = async () => {
      const t0 = performance.now();
      const out = await session.run({ x: input });
      const ms = performance.now() - t0;
      if (out.p.dims[0] !== n) throw new Error('the direct run answered another shape');
      return ms;
    };

    const runs = opts.quick ? 5 : 9;
    const engineMs: number[] = [];
    const totalMs: number[] = [];
    const directMs: number[] = [];
    for (let i = 0; i <= runs; i++) {
      const r = await post(graph(true, 'GTiff'));
      if (r.status !== 200) throw new Error(`predict_onnx answered ${r.status}: ${Buffer.from(r.body).toString().slice(0, 300)}`);
      if (r.stages.model === undefined) throw new Error('no model stage in Server-Timing');
      const d = await direct();
      if (i === 0) continue;
      engineMs.push(r.stages.model);
      totalMs.push(r.stages.total);
      directMs.push(d);
    }
    const engine = round(median(engineMs), 2);
    const directP50 = round(median(directMs), 2);
    const ratio = round(engine / directP50, 3);
    console.log(`predict_onnx: ${Y} x ${X} px, 4 bands, ${n} pixels with all bands, MLP 4-64-64-3 softmax, one inference thread`);
    console.log(`  through the engine (model stage) p50 ${engine} ms (${engineMs.map((v) => round(v, 1)).join(', ')}); /result total p50 ${round(median(totalMs), 1)} ms`);
    console.log(`  onnxruntime-node directly on [${n}, 4] p50 ${directP50} ms (${directMs.map((v) => round(v, 1)).join(', ')})`);
    console.log(`target: onnx_over_direct ${ratio} (<= 1.25)`);
    return {
      figures: { onnx_pixels: n, onnx_engine_ms: engine, onnx_direct_ms: directP50, onnx_result_ms: round(median(totalMs), 1) },
      ratios: { onnx_over_direct: ratio },
    };
  } finally {
    await cleanup.run();
  }
}
