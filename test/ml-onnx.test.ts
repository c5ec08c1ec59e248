// predict_onnx over HTTP against numpy: models built by Debian's python3-onnx (a per-pixel MLP, a
// three-class softmax with its labels in the model, a 3x3 convolution on fixed 32 x 32 patches and
// one on open H x W), served by a loopback file server of the test's own (allowed by the server's
// outbound setting), from the user's files and through STAC Items of the ml-model extension; the
// answers of /result equal numpy's arithmetic on the same input cube (as /result gives it), a
// batch job's equal /result's, and a map tile's pixels (decoded from the PNG) are numpy's values
// of the tile's input. Hostile models (a private address, a
// truncated or garbage file, a model of the wrong input shape, a STAC Item without the extension,
// a file over the size limit) each get a clear 4xx while tiles keep being served.
import { it, expect, beforeAll, afterAll } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { http, expectError, ROOT, type Res, type TestServer } from './helpers.js';
import { DEMO_COLLECTION, useDemoServer } from './demo-data.js';
import { describeWithTool, hasPythonOnnx, run, DEBIAN_PYTHON } from './system-tools.js';
import { RangeServer } from './support/range-server.js';
import { tileAt, tileBounds } from '../src/tiles/tile-grid.js';
import { decodePng } from './png-decode.js';

const MAX_MODEL_BYTES = 64 * 1024;
const ML_MODEL_EXT = 'https://stac-extensions.github.io/ml-model/v1.0.0/schema.json';
/** The map tile drawn: over the fields of the demo scene. */
const TILE = tileAt(16.745, 47.93, 13);

describeWithTool(hasPythonOnnx, 'python3-onnx', 'predict_onnx', () => {
  const files = new RangeServer();
  // Filled once the file server listens, before the Xeo server starts (hooks run in order).
  const env: Record<string, string> = { XEO_ML_MODEL_MAX_BYTES: String(MAX_MODEL_BYTES), XEO_ML_ONNX_THREADS: '1' };
  let s: TestServer;
  let token: string;
  let work: string;
  let input: any;
  let inputFile: string;
  let service: string;

  beforeAll(async () => {
    await files.start();
    env.XEO_OUTBOUND_ALLOW = `127.0.0.1:${new URL(files.url).port}`;
  });
  afterAll(async () => {
    await files.stop();
  });

  useDemoServer({ env, users: { u: 'p' } }, async (w) => {
    s = w.server;
    token = w.tokens.u;
    work = w.work;
    run(DEBIAN_PYTHON, [path.join(ROOT, 'test/support/onnx_models.py'), work]);
    writeFileSync(path.join(work, 'big.onnx'), Buffer.concat([readFileSync(path.join(work, 'mlp.onnx')), Buffer.alloc(MAX_MODEL_BYTES)]));
    for (const f of ['mlp', 'classes', 'conv', 'conv_open', 'wrong', 'truncated', 'garbage', 'big']) files.file(`/models/${f}.onnx`, path.join(work, `${f}.onnx`));
    const item = (href: string, extensions = [ML_MODEL_EXT]) => ({
      type: 'Feature',
      stac_version: '1.0.0',
      stac_extensions: extensions,
      id: 'classes',
      geometry: null,
      properties: { datetime: '2024-06-01T00:00:00Z', 'ml-model:type': 'ml-model', 'ml-model:learning_approach': 'supervised', 'ml-model:prediction_type': 'classification', 'ml-model:architecture': 'softmax' },
      links: [],
      assets: { readme: { href: 'readme.txt', roles: ['metadata'] }, model: { href, type: 'application/octet-stream; framework=onnx', roles: ['ml-model:checkpoint'] } },
    });
    files.json('/items/classes.json', item('../models/classes.onnx'));
    files.json('/items/plain.json', item('../models/classes.onnx', []));
    // STAC MLM: the model asset by its role, the output classes (by value) naming the bands.
    files.json('/items/conv-mlm.json', {
      type: 'Feature',
      stac_version: '1.0.0',
      stac_extensions: ['https://stac-extensions.github.io/mlm/v1.4.0/schema.json'],
      id: 'conv',
      geometry: null,
      properties: {
        datetime: null,
        'mlm:name': 'conv',
        'mlm:architecture': 'CNN',
        'mlm:tasks': ['segmentation'],
        'mlm:output': [
          {
            name: 'wetness',
            'classification:classes': [
              { value: 1, name: 'wet' },
              { value: 0, name: 'dry' },
            ],
          },
        ],
      },
      links: [],
      assets: { weights: { href: '../models/conv.onnx', type: 'application/octet-stream; application=onnx', roles: ['mlm:model'] } },
    });
    for (const [name, body] of [
      ['models/classes.onnx', readFileSync(path.join(work, 'classes.onnx'))],
      ['models/conv_open.onnx', readFileSync(path.join(work, 'conv_open.onnx'))],
      ['models/classes.json', JSON.stringify(item('classes.onnx'))],
    ] as const) {
      const up = await http('PUT', `${s.base}/files/${name}`, { token, body, headers: { 'content-type': 'application/octet-stream' } });
      if (up.status !== 200) throw new Error(up.text);
    }
    const input0 = await result(save(cubeGraph(null)));
    if (input0.status !== 200) throw new Error(input0.text);
    input = input0.json;
    inputFile = path.join(work, 'input.json');
    writeFileSync(inputFile, input0.text);
    const t = TILE;
    const created = await http('POST', `${s.base}/services`, {
      token,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'XYZ', process: { process_graph: cubeGraph(`${files.url}/models/mlp.onnx`, input.dimensions[0].labels[0]) }, configuration: { min: -2, max: 2 } }),
    });
    if (created.status !== 201) throw new Error(created.text);
    service = `${s.url}/xyz/${created.headers['xeo-identifier']}/${t.z}/${t.x}/${t.y}.png`;
  });

  /**
   * Two dates of four bands over a few fields, reflectances of 3050 and more dropped (so some pixels
   * lack a band), or one date everywhere for tiles; with a model, predict_onnx on it.
   */
  const cubeGraph = (model: string | null, tileDate: string | null = null): Record<string, any> => ({
    l: {
      process_id: 'load_collection',
      arguments: {
        id: DEMO_COLLECTION,
        spatial_extent: tileDate ? null : { west: 16.735, south: 47.925, east: 16.755, north: 47.935 },
        temporal_extent: tileDate ? [tileDate, new Date(Date.parse(tileDate) + 86_400_000).toISOString()] : ['2024-06-01', '2024-08-01'],
        bands: ['B02', 'B03', 'B04', 'B08'],
      },
    },
    a: {
      process_id: 'apply',
      arguments: {
        data: { from_node: 'l' },
        process: {
          process_graph: {
            lt: { process_id: 'lt', arguments: { x: { from_parameter: 'x' }, y: 3050 } },
            if: { process_id: 'if', arguments: { value: { from_node: 'lt' }, accept: { from_parameter: 'x' } }, result: true },
          },
        },
      },
      ...(model === null ? { result: true } : {}),
    },
    ...(model === null ? {} : { p: { process_id: 'predict_onnx', arguments: { data: { from_node: 'a' }, model }, result: true } }),
  });
  /** The graph with its result saved as JSON. */
  const save = (g: Record<string, any>) => {
    const last = Object.keys(g).find((k) => g[k].result)!;
    return { ...g, [last]: { ...g[last], result: false }, s: { process_id: 'save_result', arguments: { data: { from_node: last }, format: 'JSON' }, result: true } };
  };
  const result = (graph: unknown) => http('POST', `${s.base}/result`, { token, body: JSON.stringify({ process: { process_graph: graph } }), headers: { 'content-type': 'application/json' } });
  const predict = (model: string) => result(save(cubeGraph(model)));
  const reference = (model: string) => JSON.parse(run(DEBIAN_PYTHON, [path.join(ROOT, 'test/support/onnx_reference.py'), path.join(work, 'weights.npz'), model, inputFile]));

  /** Compares nested values (null = no-data) with a tolerance for float32 inference; answers how many values held data. */
  function expectClose(got: unknown, want: unknown, tol: number): number {
    const g = (got as unknown[]).flat(4) as (number | null)[];
    const w = (want as unknown[]).flat(4) as (number | null)[];
    expect(g.length).toBe(w.length);
    let valid = 0;
    let worst = 0;
    for (let i = 0; i < w.length; i++) {
      if (w[i] === null || g[i] === null) {
        expect([i, g[i]]).toEqual([i, w[i]]);
        continue;
      }
      valid++;
      worst = Math.max(worst, Math.abs(g[i]! - w[i]!) / Math.max(1, Math.abs(w[i]!)));
    }
    expect(worst).toBeLessThanOrEqual(tol);
    return valid;
  }

  const shapeOf = (r: Res) => r.json.dimensions.map((d: any) => [d.name, d.labels.length]);

  it('a per-pixel MLP from a URL equals numpy, the bands dimension dropped', async () => {
    // Some pixels lack a band (the reflectances of 3050 and more were dropped): no-data in the answers too.
    const nulls = JSON.stringify(input.data).split('null').length - 1;
    expect(nulls).toBeGreaterThan(100);
    expect(nulls).toBeLessThan(input.data.flat(3).length / 4);
    expect(input.dimensions.map((d: any) => d.type)).toEqual(['temporal', 'bands', 'spatial', 'spatial']);
    expect(input.dimensions[0].labels.length).toBeGreaterThan(1);
    const r = await predict(`${files.url}/models/mlp.onnx`);
    expect(r.status, r.text).toBe(200);
    expect(r.json.dimensions.map((d: any) => d.name)).toEqual(['t', 'y', 'x']);
    const valid = expectClose(r.json.data, reference('mlp'), 1e-4);
    expect(valid).toBeGreaterThan(1000);
  });

  it('a three-class model from the user files equals numpy, its output labels naming the bands', async () => {
    const r = await predict('models/classes.onnx');
    expect(r.status, r.text).toBe(200);
    expect(r.json.dimensions[1]).toMatchObject({ name: 'bands', type: 'bands', labels: ['water', 'forest', 'crop'] });
    expectClose(r.json.data, reference('classes'), 1e-5);
    // The same model through STAC Items of the ml-model extension: by URL, and in the user's files.
    for (const ref of [`${files.url}/items/classes.json`, '/models/classes.json']) {
      const viaItem = await predict(ref);
      expect(viaItem.status, viaItem.text).toBe(200);
      expect(viaItem.text).toBe(r.text);
    }
  });

  it('a convolution on fixed 32 x 32 patches equals numpy on the whole plane', async () => {
    const r = await predict(`${files.url}/models/conv.onnx`);
    expect(r.status, r.text).toBe(200);
    expect(r.json.dimensions[1]).toMatchObject({ name: 'bands', labels: ['class_0', 'class_1'] });
    // The cube is several patches wide, so seams would show.
    expect(input.dimensions[3].labels.length).toBeGreaterThan(64);
    expectClose(r.json.data, reference('conv'), 1e-4);
    // The same model through a STAC MLM Item, whose classes name the bands.
    const mlm = await predict(`${files.url}/items/conv-mlm.json`);
    expect(mlm.status, mlm.text).toBe(200);
    expect(mlm.json.dimensions[1].labels).toEqual(['dry', 'wet']);
    expect(mlm.json.data).toEqual(r.json.data);
  });

  it('a convolution of open H x W gets the whole plane and equals numpy', async () => {
    const r = await predict('./models/conv_open.onnx');
    expect(r.status, r.text).toBe(200);
    expect(shapeOf(r)).toEqual([input.dimensions[0], input.dimensions[2], input.dimensions[3]].map((d: any) => [d.name, d.labels.length]));
    expectClose(r.json.data, reference('conv_open'), 1e-4);
  });

  it("draws map tiles of a model, each pixel numpy's value of the tile's input, and a batch job gives what /result gives", async () => {
    const tile0 = await http('GET', service);
    expect(tile0.status, tile0.text).toBe(200);
    expect(tile0.headers['content-type']).toBe('image/png');
    // The tile's input: the same load warped to the tile's 256 x 256 Web Mercator pixels in /result.
    const date = input.dimensions[0].labels[0];
    const bounds = tileBounds(TILE);
    const res = (bounds.east - bounds.west) / 256;
    const onTile = cubeGraph(null, date);
    // Half a pixel inside each edge, so that rounding cannot add a column or row.
    onTile.l.arguments.spatial_extent = { west: bounds.west + res / 2, east: bounds.east - res / 2, south: bounds.south + res / 2, north: bounds.north - res / 2, crs: 3857 };
    onTile.w = { process_id: 'resample_spatial', arguments: { data: { from_node: 'l' }, projection: 3857, resolution: res, method: 'near' } };
    onTile.a.arguments.data = { from_node: 'w' };
    const tileInput = await result(save(onTile));
    expect(tileInput.status, tileInput.text).toBe(200);
    expect(tileInput.json.dimensions.slice(2).map((d: any) => d.labels.length)).toEqual([256, 256]);
    const tileFile = path.join(work, 'tile-input.json');
    writeFileSync(tileFile, tileInput.text);
    const want = (JSON.parse(run(DEBIAN_PYTHON, [path.join(ROOT, 'test/support/onnx_reference.py'), path.join(work, 'weights.npz'), 'mlp', tileFile])) as (number | null)[][][])[0].flat();
    // A map of the model stretched over the range numpy finds in the tile, so that its levels tell values apart.
    const values = want.filter((v): v is number => v !== null);
    const [min, max] = [Math.min(...values), Math.max(...values)];
    expect(max - min).toBeGreaterThan(0);
    const stretched = await http('POST', `${s.base}/services`, {
      token,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'XYZ', process: { process_graph: cubeGraph(`${files.url}/models/mlp.onnx`, date) }, configuration: { min, max } }),
    });
    expect(stretched.status, stretched.text).toBe(201);
    const tile = await http('GET', `${s.url}/xyz/${stretched.headers['xeo-identifier']}/${TILE.z}/${TILE.x}/${TILE.y}.png`);
    expect(tile.status, tile.text).toBe(200);
    // The tile's pixels back to values: [min, max] stretched over the grey levels or the palette's indices.
    const png = decodePng(tile.body);
    expect([png.width, png.height]).toEqual([256, 256]);
    const levels = png.indices ? 254 : 255;
    const got = Array.from({ length: 256 * 256 }, (_, i) => {
      if (png.indices) return png.indices[i] === 0 ? null : min + ((png.indices[i] - 1) * (max - min)) / 254;
      return png.data[4 * i + 3] === 0 ? null : min + (png.data[4 * i] * (max - min)) / 255;
    });
    const step = (max - min) / levels;
    let drawn = 0;
    let off = 0;
    for (let i = 0; i < want.length; i++) {
      const w = want[i];
      const g = got[i];
      if (w === null || g === null) {
        // No-data where numpy has none, and the other way round.
        if (w !== g) off++;
        continue;
      }
      drawn++;
      // Within one step of the stretch (float32 inference and a rounding on either side).
      if (Math.abs(w - g) > step) off++;
    }
    expect(off, `pixels of the tile off numpy's values (of ${drawn} drawn)`).toBe(0);
    // The tile reaches past the scene, and pixels with a reflectance of 3050 or more lack a band: a quarter at least holds values.
    expect(drawn).toBeGreaterThan(256 * 256 * 0.25);
    // Values, not a flat picture: the model's answers spread over many levels of the stretch.
    expect(new Set(got.filter((v) => v !== null)).size).toBeGreaterThan(50);
    const graph = save(cubeGraph(`${files.url}/models/classes.onnx`));
    const sync = await result(graph);
    expect(sync.status, sync.text).toBe(200);
    const created = await http('POST', `${s.base}/jobs`, { token, body: JSON.stringify({ process: { process_graph: graph } }), headers: { 'content-type': 'application/json' } });
    expect(created.status, created.text).toBe(201);
    const id = created.headers['openeo-identifier'] ?? created.headers['xeo-identifier'];
    expect((await http('POST', `${s.base}/jobs/${id}/results`, { token })).status).toBe(202);
    let job: any;
    for (let i = 0; i < 600; i++) {
      job = (await http('GET', `${s.base}/jobs/${id}`, { token })).json;
      if (job.status === 'finished' || job.status === 'error') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const logs = (await http('GET', `${s.base}/jobs/${id}/logs`, { token })).json.logs.map((l: any) => l.message);
    expect(job.status, logs.join('\n')).toBe('finished');
    const doc = (await http('GET', `${s.base}/jobs/${id}/results`, { token })).json;
    const asset = Object.values(doc.assets as Record<string, any>).find((a) => a.roles?.includes('data'));
    const body = await http('GET', asset.href);
    expect(body.json).toEqual(sync.json);
  });

  it('refuses hostile models with clear errors and keeps serving tiles', async () => {
    const refused = async (model: string, status: number, code: string, ...words: RegExp[]) => {
      const r = await predict(model);
      expectError(r, status, code);
      for (const w of words) expect(r.json.message).toMatch(w);
      return r;
    };
    // Private and loopback addresses the operator did not allow: refused before any byte is sent.
    await refused('http://10.1.2.3/models/mlp.onnx', 400, 'ProcessParameterInvalid', /private address/);
    await refused('http://127.0.0.1:9/models/mlp.onnx', 400, 'ProcessParameterInvalid', /loopback address/);
    await refused('file:///etc/passwd', 400, 'ProcessParameterInvalid', /only http\(s\)/);
    await refused(`${files.url}/models/truncated.onnx`, 400, 'ProcessParameterInvalid', /not a valid ONNX model/);
    await refused(`${files.url}/models/garbage.onnx`, 400, 'ProcessParameterInvalid', /not a valid ONNX model/);
    // The model's input and the cube's, both named.
    await refused(`${files.url}/models/wrong.onnx`, 400, 'ProcessParameterInvalid', /\[\?, 3\]/, /\[N, 4\]/, /B02, B03, B04, B08/);
    await refused(`${files.url}/items/plain.json`, 400, 'ProcessParameterInvalid', /does not implement the ml-model extension/);
    await refused(`${files.url}/models/big.onnx`, 400, 'ProcessParameterInvalid', new RegExp(`larger than ${MAX_MODEL_BYTES} bytes`));
    await refused(`${files.url}/models/none.onnx`, 400, 'ProcessParameterInvalid', /HTTP 404/);
    await refused('models/none.onnx', 404, 'FileNotFound');
    await refused('../other/models/classes.onnx', 400, 'FilePathInvalid');
    const tile = await http('GET', service);
    expect(tile.status).toBe(200);
    expect((await http('GET', `${s.url}/readyz`)).status).toBe(200);
  });
});
