// User-defined functions over the demo collection, in the same run:
//  1. a map session (distinct tiles at zoom 14 and 15, one at a time, each drawn fresh) of three
//     XYZ services whose NDVI is the built-in `ndvi`, a Python UDF (apply_datacube with xarray)
//     and an AssemblyScript UDF (reduce over the bands), tile by tile in turn so all three meet
//     the same noise (and in rotating order: the first of a tile also reads its blocks); per-tile p50 of each, and from Server-Timing the Python call as the engine
//     sees it (data there and back) against the UDF's own code within: the warm per-call overhead;
//  2. a /result of a 2048 x 2048 px, 4-date, two-band cube through a Python apply_datacube (NDVI
//     with xarray), against the same code run directly by the same interpreter on the same array
//     (read back from Xeo as netCDF, held by an interpreter of its own that runs the code once
//     after each /result, so both meet the same noise): the physical limit of this path.
// Targets: as_udf_over_builtin <= 1.25 (tiles), python_udf_over_numpy <= 1.5 (the large /result).
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { CLI, Cleanup, median, round, startXeo, tempDir } from './lib.js';
import { tileAt, type TileCoord } from '../src/tiles/tile-grid.js';

const PY_NDVI = `import xarray

def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    red = cube.sel(bands="B04")
    nir = cube.sel(bands="B08")
    return (nir - red) / (nir + red)
`;

const AS_NDVI = `export function reduce(values: Float64Array): f64 {
  const red = values[0];
  const nir = values[1];
  return (nir - red) / (nir + red);
}
`;

/**
 * The same code, run directly by Debian's interpreter on the cube read back from netCDF (a numpy
 * array of its own memory, as a user's session would hold it): once per line read, answering its
 * milliseconds.
 */
const DIRECT = `import json, sys, time
import numpy as np, pandas as pd, xarray
from netCDF4 import Dataset
path, code = sys.argv[1], sys.argv[2]
ns = {}
exec(code, ns)
ds = Dataset(path)
ds.set_auto_mask(False)
bands = ["B04", "B08"]
values = np.stack([np.asarray(ds.variables[b][:], dtype=np.float32) for b in bands], axis=1)
unit = "D" if ds.variables["t"].units.startswith("days") else "s"
t = pd.to_datetime(np.asarray(ds.variables["t"][:]), unit=unit, origin="unix")
cube = xarray.DataArray(values, dims=["t", "bands", "y", "x"], coords={"t": t, "bands": bands, "y": np.asarray(ds.variables["y"][:]), "x": np.asarray(ds.variables["x"][:])})
print(json.dumps({"shape": list(values.shape)}), flush=True)
for _ in sys.stdin:
    t0 = time.perf_counter()
    out = ns["apply_datacube"](cube, {})
    np.asarray(out.values)
    ms = (time.perf_counter() - t0) * 1000
    del out
    print(json.dumps({"ms": ms}), flush=True)
`;

interface Timed {
  ms: number;
  status: number;
  stages: Record<string, number>;
}

const stagesOf = (h: string | null): Record<string, number> => (h ? Object.fromEntries([...h.matchAll(/(\w+);dur=([\d.]+)/g)].map((m) => [m[1], Number(m[2])])) : {});

async function timed(url: string, init?: RequestInit): Promise<Timed & { body: ArrayBuffer }> {
  const t0 = performance.now();
  const r = await fetch(url, init);
  const body = await r.arrayBuffer();
  return { ms: performance.now() - t0, status: r.status, stages: stagesOf(r.headers.get('server-timing')), body };
}

/** Distinct tiles of map views over the scene at zoom 14 and 15. */
function sessionTiles(count: number): TileCoord[] {
  const out: TileCoord[] = [];
  const seen = new Set<string>();
  for (const z of [14, 15]) {
    const a = tileAt(16.62, 47.99, z);
    const b = tileAt(16.86, 47.85, z);
    for (let y = a.y; y <= b.y; y++) {
      for (let x = a.x; x <= b.x; x++) {
        const k = `${z}/${x}/${y}`;
        if (!seen.has(k)) {
          seen.add(k);
          out.push({ z, x, y });
        }
      }
    }
  }
  // Spread over the scene: every n-th tile.
  const step = Math.max(1, Math.floor(out.length / count));
  return out.filter((_, i) => i % step === 0).slice(0, count);
}

export async function run(opts: { quick: boolean }): Promise<{ figures: Record<string, number>; ratios: Record<string, number> }> {
  const cleanup = new Cleanup();
  let server: { output(): string } | undefined;
  try {
    console.log('udf bench: starting Xeo with the demo collection (generated on first start, ~10 s) and 2 Python interpreters');
    // The demo is generated at the first start: give it two minutes on a busy machine.
    // The arena keeps its memory between the large requests (as a server with room to spare would): the
    // UDF's answer is then read into pages already there, for the built-in path and the UDF's alike.
    const xeo = await startXeo({ XEO_DEMO: 'true', XEO_COMPUTE_THREADS: '2', XEO_UDF_WORKERS: '2', XEO_UDF_TIMEOUT: '300', XEO_KERNEL_ARENA_KEEP_BYTES: String(1 << 30) }, [], 120_000);
    cleanup.add(() => xeo.stop());
    server = xeo;
    const add = spawnSync(process.execPath, [CLI, 'users', 'add', 'bench', '--password', 'bench'], { env: { ...process.env, XEO_DATA_DIR: xeo.dataDir }, encoding: 'utf8' });
    if (add.status !== 0) throw new Error(`users add failed: ${add.stderr}`);
    const basic = 'Basic ' + Buffer.from('bench:bench').toString('base64');
    const token = ((await (await fetch(`${xeo.url}/1.2.0/credentials/basic`, { headers: { authorization: basic } })).json()) as { access_token: string }).access_token;
    const headers = { authorization: `Bearer basic//${token}`, 'content-type': 'application/json' };
    const api = (p: string, body: unknown) => fetch(`${xeo.url}/1.2.0${p}`, { method: 'POST', headers, body: JSON.stringify(body) });

    const runtimes = (await (await fetch(`${xeo.url}/1.2.0/udf_runtimes`)).json()) as Record<string, unknown>;
    if (!runtimes.Python) throw new Error('the Python runtime is not available here (Debian python3 with numpy, pandas, xarray, scipy and bubblewrap are needed)');
    const collection = (await (await fetch(`${xeo.url}/1.2.0/collections/DEMO_S2_L2A`)).json()) as { 'cube:dimensions': { t: { values: string[] } } };
    const dates = collection['cube:dimensions'].t.values;
    const day = (d: string, plus = 0) => new Date(Date.parse(d) + plus * 86400_000).toISOString().slice(0, 10);

    // 1. The map session.
    const load = { process_id: 'load_collection', arguments: { id: 'DEMO_S2_L2A', spatial_extent: null, temporal_extent: [day(dates[3]), day(dates[3], 1)], bands: ['B04', 'B08'] } };
    const udf = (code: string, runtime: string) => ({ process_graph: { u: { process_id: 'run_udf', arguments: { data: { from_parameter: 'data' }, udf: code, runtime }, result: true } } });
    const graphs = {
      builtin: { l: load, n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } }, result: true } },
      python: { l: load, n: { process_id: 'reduce_dimension', arguments: { data: { from_node: 'l' }, dimension: 'bands', reducer: udf(PY_NDVI, 'Python') }, result: true } },
      assemblyscript: { l: load, n: { process_id: 'reduce_dimension', arguments: { data: { from_node: 'l' }, dimension: 'bands', reducer: udf(AS_NDVI, 'AssemblyScript') }, result: true } },
    };
    const templates: Record<string, string> = {};
    for (const [name, g] of Object.entries(graphs)) {
      const r = await api('/services', { type: 'XYZ', title: `NDVI ${name}`, process: { process_graph: g }, configuration: { colormap: 'ndvi', min: -0.2, max: 0.9 } });
      if (r.status !== 201) throw new Error(`service ${name} not created: ${r.status} ${await r.text()}`);
      templates[name] = `${xeo.url}/xyz/${r.headers.get('xeo-identifier')}/{z}/{x}/{y}.png`;
    }
    const urlOf = (name: string, t: TileCoord) => templates[name].replace('{z}', String(t.z)).replace('{x}', String(t.x)).replace('{y}', String(t.y));
    const names = Object.keys(templates);
    // Warm-up at zoom 13: the JIT, the kernels, the AssemblyScript compile, the interpreters.
    const c = tileAt(16.745, 47.928, 13);
    for (let i = 0; i < 6; i++) {
      for (const n of names) {
        const w = await timed(urlOf(n, { z: 13, x: c.x + (i % 3) - 1, y: c.y + Math.floor(i / 3) }));
        if (w.status !== 200) throw new Error(`warm-up tile of ${n} answered ${w.status}: ${Buffer.from(w.body).toString().slice(0, 300)}`);
      }
    }
    await new Promise((r) => setTimeout(r, 1500));
    const tiles = sessionTiles(opts.quick ? 60 : 180);
    const got: Record<string, Timed[]> = Object.fromEntries(names.map((n) => [n, []]));
    for (const [k, t] of tiles.entries()) {
      // Each service comes first for a third of the tiles: the first drawing of a tile also reads its blocks.
      for (const n of [...names.slice(k % names.length), ...names.slice(0, k % names.length)]) {
        const r = await timed(urlOf(n, t));
        if (r.status !== 200) throw new Error(`tile ${t.z}/${t.x}/${t.y} of ${n} answered ${r.status}`);
        if (r.stages.total !== undefined) got[n].push(r);
      }
    }
    const p50 = (n: string, f: (t: Timed) => number) => round(median(got[n].map(f)), 2);
    const tileP50 = Object.fromEntries(names.map((n) => [n, p50(n, (t) => t.ms)]));
    const py = got.python.filter((t) => t.stages.udf !== undefined);
    const callP50 = round(median(py.map((t) => t.stages.udf)), 2);
    const codeP50 = round(median(py.map((t) => t.stages.udfcode)), 2);
    const overheadP50 = round(median(py.map((t) => t.stages.udf - t.stages.udfcode)), 2);
    const asCallP50 = round(median(got.assemblyscript.filter((t) => t.stages.udf !== undefined).map((t) => t.stages.udf)), 3);
    console.log(`map session: ${tiles.length} tiles per service, drawn fresh (zoom 14 and 15), one at a time`);
    for (const n of names) console.log(`  ${n.padEnd(15)} p50 ${tileP50[n]} ms (server total ${p50(n, (t) => t.stages.total)} ms)`);
    console.log(`  Python UDF call per tile: p50 ${callP50} ms, of which the UDF's own code ${codeP50} ms; warm per-call overhead p50 ${overheadP50} ms`);
    console.log(`  AssemblyScript UDF per tile: p50 ${asCallP50} ms`);

    // 2. The large /result through Python, against the same code run directly.
    const big = {
      id: 'DEMO_S2_L2A',
      spatial_extent: { west: 620000, east: 640480, south: 5299520, north: 5320000, crs: 32633 },
      temporal_extent: [day(dates[0]), day(dates[3], 1)],
      bands: ['B04', 'B08'],
    };
    const bigGraph = (reduce: boolean) => ({
      l: { process_id: 'load_collection', arguments: big },
      ...(reduce ? { n: { process_id: 'reduce_dimension', arguments: { data: { from_node: 'l' }, dimension: 'bands', reducer: udf(PY_NDVI, 'Python') } } } : {}),
      s: { process_id: 'save_result', arguments: { data: { from_node: reduce ? 'n' : 'l' }, format: 'netCDF' }, result: true },
    });
    const runs = opts.quick ? 3 : 5;
    const raw = await timed(`${xeo.url}/1.2.0/result`, { method: 'POST', headers, body: JSON.stringify({ process: { process_graph: bigGraph(false) } }) });
    if (raw.status !== 200) throw new Error(`the cube as netCDF answered ${raw.status}`);
    const dir = tempDir('xeo-bench-udf-');
    const nc = path.join(dir, 'cube.nc');
    writeFileSync(nc, Buffer.from(raw.body));
    const script = path.join(dir, 'direct.py');
    writeFileSync(script, DIRECT);
    const direct = spawn('/usr/bin/python3', [script, nc, PY_NDVI], { env: { PATH: '/usr/bin:/bin', OPENBLAS_NUM_THREADS: '1', OMP_NUM_THREADS: '1' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let pyErr = '';
    direct.stderr.on('data', (d: Buffer) => (pyErr = (pyErr + d).slice(-4000)));
    cleanup.add(() => direct.kill('SIGKILL'));
    const lines = readline.createInterface({ input: direct.stdout })[Symbol.asyncIterator]();
    const nextLine = async () => {
      const l = await lines.next();
      if (l.done) throw new Error(`the direct run failed: ${pyErr}`);
      return JSON.parse(l.value) as { ms?: number; shape?: number[] };
    };
    const shape = (await nextLine()).shape ?? [];
    // A /result, then the same code directly, in turn; the first of each warms up.
    const results: Timed[] = [];
    const directMs: number[] = [];
    for (let i = 0; i < runs + 1; i++) {
      const r = await timed(`${xeo.url}/1.2.0/result`, { method: 'POST', headers, body: JSON.stringify({ process: { process_graph: bigGraph(true) } }) });
      if (r.status !== 200) throw new Error(`the large /result answered ${r.status}: ${Buffer.from(r.body).toString().slice(0, 300)}`);
      direct.stdin.write('run\n');
      const d = (await nextLine()).ms!;
      if (i > 0) {
        results.push(r);
        directMs.push(d);
      }
    }
    direct.stdin.end();
    const udfMs = round(median(results.map((r) => r.stages.udf)), 1);
    const udfCodeMs = round(median(results.map((r) => r.stages.udfcode)), 1);
    const udfDataMs = round(median(results.map((r) => r.stages.udfdata)), 1);
    const resultMs = round(median(results.map((r) => r.ms)), 1);
    const numpyMs = round(median(directMs), 1);
    const spread = (xs: number[]) => `${round(Math.min(...xs), 1)}-${round(Math.max(...xs), 1)}`;
    const pairs = results.map((r, i) => r.stages.udf / directMs[i]);
    console.log(`large /result: ${shape.join(' x ')} (t, bands, y, x) through a Python apply_datacube (NDVI): request p50 ${resultMs} ms`);
    console.log(
      `  the UDF call ${udfMs} ms (${spread(results.map((r) => r.stages.udf))}): its own code ${udfCodeMs} ms inside the sandbox, the engine's writing of the cube and reading of the answer ${udfDataMs} ms`,
    );
    console.log(`  the same code run directly: ${numpyMs} ms (${spread(directMs)}); call over direct run by run: ${spread(pairs.map((p) => round(p, 2)))}`);

    const figures = {
      tiles: tiles.length,
      builtin_tile_p50_ms: tileP50.builtin,
      python_tile_p50_ms: tileP50.python,
      as_tile_p50_ms: tileP50.assemblyscript,
      python_call_p50_ms: callP50,
      python_code_p50_ms: codeP50,
      python_call_overhead_p50_ms: overheadP50,
      as_udf_p50_ms: asCallP50,
      large_result_ms: resultMs,
      large_udf_call_ms: udfMs,
      large_udf_code_ms: udfCodeMs,
      large_udf_data_ms: udfDataMs,
      large_numpy_direct_ms: numpyMs,
    };
    const ratios = {
      as_udf_over_builtin: round(tileP50.assemblyscript / tileP50.builtin, 3),
      python_udf_over_builtin: round(tileP50.python / tileP50.builtin, 3),
      python_udf_over_numpy: round(udfMs / numpyMs, 3),
    };
    console.log(`targets: as_udf_over_builtin ${ratios.as_udf_over_builtin} (<= 1.25), python_udf_over_numpy ${ratios.python_udf_over_numpy} (<= 1.5)`);
    return { figures, ratios };
  } catch (e) {
    throw new Error(`${(e as Error).message} (${String((e as { cause?: unknown }).cause ?? '')}); the server said:\n${server?.output().slice(-3000) ?? ''}`, { cause: e });
  } finally {
    await cleanup.run();
  }
}
