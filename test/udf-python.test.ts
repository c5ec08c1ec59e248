// The Python runtime of run_udf end to end, with the real interpreter in the real sandbox: the
// openEO UDF interface's documented kinds of UDF (rescaling with XarrayDataCube, a pandas time
// series smoothed in apply_dimension, bands renamed by apply_metadata, a focal filter in
// apply_neighborhood) each equal to the same computation by built-in processes, through /result,
// map tiles and a batch job; where the code comes from (inline, a file, a URL); the runtime's
// listing; and what users see when their UDF fails (the line, the traceback, their prints).
import { afterAll, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expectError, http, ROOT, type TestServer } from './helpers.js';
import { useDemoServer } from './demo-data.js';
import { describeWithTool, hasGdal, run } from './system-tools.js';
import { Jobs, pixels } from './jobs-helpers.js';
import { decodePng } from './png-decode.js';
import { child, cubeOf, expectSameValues, hasUdfPython, load, monitorLog, post, result, udfChild } from './udf-helpers.js';

const { tileAt } = await import(path.join(ROOT, 'dist/src/tiles/tile-grid.js'));

let s: TestServer;
let alice: string;
let work: string;
let site: Server;
let siteUrl: string;

const RESCALE = `from openeo.udf import XarrayDataCube

def apply_datacube(cube: XarrayDataCube, context: dict) -> XarrayDataCube:
    array = cube.get_array()
    array.values = 0.0001 * array.values
    return cube
`;

const SMOOTH = `import pandas as pd

def apply_timeseries(series: pd.Series, context: dict) -> pd.Series:
    # a centred moving mean over three dates; missing values are skipped
    return series.rolling(3, center=True, min_periods=1).mean()
`;

const RENAME = `import xarray
from openeo.metadata import CollectionMetadata

def apply_metadata(metadata: CollectionMetadata, context: dict) -> CollectionMetadata:
    return metadata.rename_labels(dimension="bands", target=["ndvi", "ratio"])

def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    red = cube.sel(bands="B04")
    nir = cube.sel(bands="B08")
    return xarray.concat([(nir - red) / (nir + red), nir / red], dim="bands")
`;

const FOCAL = `import numpy as np
import xarray
from scipy import ndimage

def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    values = np.nan_to_num(cube.values.astype(np.float64), nan=0.0)
    kernel = np.ones((1,) * (values.ndim - 2) + (3, 3))
    out = ndimage.convolve(values, kernel, mode="constant", cval=0.0) / 9.0
    return xarray.DataArray(out, dims=cube.dims, coords=cube.coords)
`;

const NDVI = `import xarray

def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    red = cube.sel(bands="B04")
    nir = cube.sel(bands="B08")
    return (nir - red) / (nir + red)
`;

const FAILING = `from openeo.udf.debug import inspect

def scale(context):
    return context["factor"] * 2

def apply_datacube(cube, context):
    print("about to scale")
    inspect(cube, "the input")
    return cube * scale(context)
`;

// XEO_UDF_CALL_VALUES is low: the cubes of /result and tiles go to the UDF in bands of rows, as a large one-piece job's would.
// The interpreters' I/O folders are made in a folder of this test's own (XEO_UDF_IO_DIR), which the sandboxes' user can reach.
const ioDir = mkdtempSync(path.join(os.tmpdir(), 'xeo-udf-io-'));
chmodSync(ioDir, 0o755);
useDemoServer({ env: { XEO_UDF_WORKERS: '2', XEO_OUTBOUND_ALLOW: '127.0.0.1', XEO_UDF_CALL_VALUES: '8192', XEO_UDF_IO_DIR: ioDir }, users: { alice: 'pa' } }, async (w) => {
  ({ server: s, work } = w);
  alice = w.tokens.alice;
  site = createServer((req, res) => {
    if (req.url === '/rescale.py') res.end(RESCALE);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});
afterAll(() => {
  site?.close();
  rmSync(ioDir, { recursive: true, force: true });
});

const apply = (udf: string, bands = ['B04', 'B08']) => ({ l: load(bands), a: { process_id: 'apply', arguments: { data: { from_node: 'l' }, process: udfChild('x', udf) }, result: true } });

describeWithTool(hasUdfPython, 'Debian python3 with numpy, pandas, xarray, scipy and bubblewrap', 'Python UDFs', () => {
  it('GET /udf_runtimes lists Python with the versions of the interpreter and its libraries', async () => {
    const r = await http('GET', `${s.base}/udf_runtimes`);
    expect(r.status).toBe(200);
    const py = r.json.Python;
    const probe = spawnSync('/usr/bin/python3', ['-c', 'import sys, numpy, pandas, scipy; print(".".join(map(str, sys.version_info[:2])), numpy.__version__, pandas.__version__, scipy.__version__)'], {
      encoding: 'utf8',
    });
    const [minor, numpy, pandas, scipy] = probe.stdout.trim().split(' ');
    expect(py).toMatchObject({ type: 'language', default: minor });
    const libs = py.versions[minor].libraries;
    expect(libs.numpy.version).toBe(numpy);
    expect(libs.pandas.version).toBe(pandas);
    expect(libs.scipy.version).toBe(scipy);
    // Debian's xarray says 999 of itself: the package's version is listed instead.
    const dpkg = spawnSync('dpkg-query', ['-W', '-f=${Version}', 'python3-xarray'], { encoding: 'utf8' })
      .stdout.replace(/^\d+:/, '')
      .replace(/-[^-]*$/, '');
    expect(libs.xarray.version).toBe(dpkg);
    expect(r.json.AssemblyScript.type).toBe('language');
  });

  it('rescaling with XarrayDataCube in apply equals the built-in multiply', async () => {
    const udf = cubeOf(await result(s, alice, apply(RESCALE)));
    const builtIn = cubeOf(
      await result(s, alice, {
        l: load(),
        a: { process_id: 'apply', arguments: { data: { from_node: 'l' }, process: child({ m: { process_id: 'multiply', arguments: { x: { from_parameter: 'x' }, y: 0.0001 }, result: true } }) }, result: true },
      }),
    );
    expect(udf.labels).toEqual(builtIn.labels);
    expectSameValues(udf.values, builtIn.values);
  });

  it('a UDF that doubles its input array in place gets the values of each call, not what it wrote in the last', async () => {
    // The runner keeps in.bin mapped between calls (copy-on-write): what a UDF writes into its array is dropped after the call.
    const IN_PLACE = `import numpy as np\n\ndef apply_datacube(cube, context):\n    a = cube.get_array()\n    np.multiply(a.values, 2, out=a.values)\n    return cube\n`;
    const builtIn = cubeOf(
      await result(s, alice, {
        l: load(),
        a: { process_id: 'apply', arguments: { data: { from_node: 'l' }, process: child({ m: { process_id: 'multiply', arguments: { x: { from_parameter: 'x' }, y: 2 }, result: true } }) }, result: true },
      }),
    );
    for (let i = 0; i < 2; i++) {
      const udf = cubeOf(await result(s, alice, apply(IN_PLACE)));
      expectSameValues(udf.values, builtIn.values);
    }
  });

  it("the interpreters' data files are in XEO_UDF_IO_DIR", async () => {
    const roots = readdirSync(ioDir).filter((n) => /^xeo-udf-\d+-/.test(n));
    expect(roots).toHaveLength(1);
    const sandboxes = readdirSync(path.join(ioDir, roots[0])).filter((n) => n.startsWith('sb-'));
    expect(sandboxes.some((n) => existsSync(path.join(ioDir, roots[0], n, 'in.bin')))).toBe(true);
  });

  it('a pandas time series smoothed in apply_dimension equals a moving mean of built-in processes', async () => {
    const dates = cubeOf(await result(s, alice, { l: { ...load(['B08']), result: true } })).labels.t;
    const n = dates.length;
    expect(n).toBeGreaterThan(3);
    const el = (i: number) => ({ process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: i } });
    const nodes: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const around = [i - 1, i, i + 1].filter((k) => k >= 0 && k < n);
      around.forEach((k) => (nodes[`e${i}_${k}`] = el(k)));
      nodes[`m${i}`] = { process_id: 'mean', arguments: { data: around.map((k) => ({ from_node: `e${i}_${k}` })) } };
    }
    nodes.out = { process_id: 'array_create', arguments: { data: Array.from({ length: n }, (_, i) => ({ from_node: `m${i}` })) }, result: true };
    const along = (process: unknown) => ({ l: load(['B04', 'B08']), a: { process_id: 'apply_dimension', arguments: { data: { from_node: 'l' }, dimension: 't', process }, result: true } });
    const udf = cubeOf(await result(s, alice, along(udfChild('data', SMOOTH))));
    const builtIn = cubeOf(await result(s, alice, along(child(nodes))));
    expect(udf.labels).toEqual(builtIn.labels);
    expectSameValues(udf.values, builtIn.values);
  });

  it('bands renamed by apply_metadata equal built-in band maths with rename_labels', async () => {
    const along = (process: unknown) => ({ l: load(), a: { process_id: 'apply_dimension', arguments: { data: { from_node: 'l' }, dimension: 'bands', process }, result: true } });
    const udf = cubeOf(await result(s, alice, along(udfChild('data', RENAME))));
    const band = (label: string) => ({ process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, label } });
    const math = child({
      r: band('B04'),
      n: band('B08'),
      nd: { process_id: 'normalized_difference', arguments: { x: { from_node: 'n' }, y: { from_node: 'r' } } },
      q: { process_id: 'divide', arguments: { x: { from_node: 'n' }, y: { from_node: 'r' } } },
      out: { process_id: 'array_create', arguments: { data: [{ from_node: 'nd' }, { from_node: 'q' }] }, result: true },
    });
    const g = { ...along(math), rn: { process_id: 'rename_labels', arguments: { data: { from_node: 'a' }, dimension: 'bands', target: ['ndvi', 'ratio'], source: ['B04', 'B08'] }, result: true } };
    delete (g.a as { result?: boolean }).result;
    const builtIn = cubeOf(await result(s, alice, g));
    expect(udf.labels.bands).toEqual(['ndvi', 'ratio']);
    expect(udf.labels).toEqual(builtIn.labels);
    expectSameValues(udf.values, builtIn.values);
  });

  it('a focal filter in apply_neighborhood (blocks with overlap, trimmed) equals apply_kernel', async () => {
    const px = (v: number) => ({ value: v, unit: 'px' });
    const udf = cubeOf(
      await result(s, alice, {
        l: load(),
        a: {
          process_id: 'apply_neighborhood',
          arguments: {
            data: { from_node: 'l' },
            size: [
              { dimension: 'x', ...px(16) },
              { dimension: 'y', ...px(16) },
            ],
            overlap: [
              { dimension: 'x', ...px(1) },
              { dimension: 'y', ...px(1) },
            ],
            process: udfChild('data', FOCAL),
          },
          result: true,
        },
      }),
    );
    const kernel = [
      [1, 1, 1],
      [1, 1, 1],
      [1, 1, 1],
    ];
    const builtIn = cubeOf(await result(s, alice, { l: load(), k: { process_id: 'apply_kernel', arguments: { data: { from_node: 'l' }, kernel, factor: 1 / 9, border: 0, replace_invalid: 0 }, result: true } }));
    expect(udf.labels).toEqual(builtIn.labels);
    expectSameValues(udf.values, builtIn.values);
  });

  it('map tiles of an NDVI UDF equal the tiles of the built-in ndvi', async () => {
    const day: [string, string] = ['2024-06-21', '2024-06-22'];
    const graph = (reduce: unknown) => ({ l: load(['B04', 'B08'], day, null), r: { ...(reduce as object), result: true } });
    const service = async (g: unknown) => {
      const r = await post(s, alice, '/services', { type: 'XYZ', configuration: { colormap: 'ndvi', min: -0.2, max: 0.9 }, process: { process_graph: g } });
      expect(r.status, r.text).toBe(201);
      return (await http('GET', `${s.base}/services/${r.headers['xeo-identifier']}`, { token: alice })).json.url as string;
    };
    const udfUrl = await service(graph({ process_id: 'reduce_dimension', arguments: { data: { from_node: 'l' }, dimension: 'bands', reducer: udfChild('data', NDVI) } }));
    const builtInUrl = await service(graph({ process_id: 'ndvi', arguments: { data: { from_node: 'l' } } }));
    const t = tileAt(16.745, 47.93, 14);
    const tile = async (url: string) => {
      const r = await http('GET', url.replace('{z}', t.z).replace('{x}', t.x).replace('{y}', t.y));
      expect(r.status, r.text).toBe(200);
      return decodePng(r.body);
    };
    const [a, b] = [await tile(udfUrl), await tile(builtInUrl)];
    expect(a.indices ?? a.data).toEqual(b.indices ?? b.data);
    expect(new Set(a.indices ?? a.data).size).toBeGreaterThan(10);
  });

  it('the code comes inline, from a file in the workspace (FileNotFound otherwise) or from a URL', async () => {
    // Once more if a kept-alive connection was closed by the server just as it was reused (undici retries GETs only).
    const upload = () => http('PUT', `${s.base}/files/udfs/rescale.py`, { token: alice, body: RESCALE, headers: { 'content-type': 'application/octet-stream' } });
    const up = await upload().catch(upload);
    expect(up.status, up.text).toBe(200);
    const inline = cubeOf(await result(s, alice, apply(RESCALE))).values;
    for (const p of ['udfs/rescale.py', '/udfs/rescale.py', './udfs/rescale.py', `${siteUrl}/rescale.py`]) {
      expectSameValues(cubeOf(await result(s, alice, apply(p))).values, inline, 0);
    }
    expectError(await result(s, alice, apply('udfs/missing.py')), 400, 'FileNotFound');
    expectError(await result(s, alice, apply('../../etc/passwd')), 400, 'FileNotFound');
    const refused = await result(s, alice, apply('http://169.254.169.254/latest/udf.py'));
    expectError(refused, 400, 'ProcessParameterInvalid');
    expect(refused.json.message).toMatch(/link-local/);
  });

  it('run_udf on its own runs apply_udf_data on plain values', async () => {
    const code = `from openeo.udf import UdfData, StructuredData\n\ndef apply_udf_data(data: UdfData):\n    values = data.get_structured_data_list()[0].data\n    data.set_structured_data_list([StructuredData({"sum": sum(values), "factor": data.user_context["f"]})])\n`;
    const r = await result(s, alice, { u: { process_id: 'run_udf', arguments: { data: [1, 2, 3.5], udf: code, runtime: 'Python', context: { f: 2 } }, result: true } });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({ sum: 6.5, factor: 2 });
  });

  it('an unknown runtime or version is InvalidRuntime or InvalidVersion', async () => {
    const g = (runtime: string, version?: string) => ({
      l: load(),
      a: { process_id: 'apply', arguments: { data: { from_node: 'l' }, process: udfChild('x', RESCALE, runtime, version ? { version } : {}) }, result: true },
    });
    expectError(await result(s, alice, g('R')), 400, 'InvalidRuntime');
    expectError(await result(s, alice, g('Python', '2.7')), 400, 'InvalidVersion');
    expectError(await result(s, alice, g('Python', '3.1')), 400, 'InvalidVersion');
    expect((await result(s, alice, g('python', '3'))).status).toBe(200);
  });

  it('a failing UDF answers 400 naming its line; its prints, inspect() and traceback are in the linked log', async () => {
    const r = await result(s, alice, apply(FAILING));
    expectError(r, 400, 'UdfFailed');
    expect(r.json.message).toContain("KeyError: 'factor' (line 4 of the UDF)");
    const logs = await monitorLog(s, alice, r);
    expect(logs.map((l) => l.message)).toContain('about to scale');
    const inspected = logs.find((l) => l.message === 'the input');
    expect(inspected.data).toMatchObject({ dims: ['t', 'bands', 'y', 'x'], dtype: 'float32' });
    const failure = logs.find((l) => l.level === 'error');
    expect(failure.code).toBe('UdfFailed');
    expect(failure.stacktrace).toContain('line 9, in apply_datacube');
    expect(failure.stacktrace).toContain('line 4, in scale');
    // Only the UDF's own frames: nothing of the runner or the libraries.
    expect(failure.stacktrace).not.toMatch(/xeo_runner|site-packages|dist-packages/);
    const ok = await result(s, alice, apply(`def apply_datacube(cube, context):\n    print("fine")\n    return cube\n`));
    expect((await monitorLog(s, alice, ok)).map((l) => l.message)).toContain('fine');
  });

  describeWithTool(hasGdal, 'gdal_translate', 'in a batch job', () => {
    it('runs chunked, equals /result, and logs the UDF output; a failing UDF ends the job in error with its traceback', async () => {
      const jobs = new Jobs(s, alice);
      const extent = pixels(600, 800, 64, 64);
      const g = (udf: string) => ({
        l: load(['B04'], ['2024-06-21', '2024-06-22'], extent),
        a: { process_id: 'apply', arguments: { data: { from_node: 'l' }, process: udfChild('x', udf) } },
        s: { process_id: 'save_result', arguments: { data: { from_node: 'a' }, format: 'GTiff' }, result: true },
      });
      const printing = RESCALE.replace('    return cube', '    print("rescaled", array.shape)\n    return cube');
      const job = await jobs.run(g(printing), { udf_timeout: 120 });
      expect(job.status, JSON.stringify(await jobs.logs(job.id))).toBe('finished');
      const logs = (await jobs.logs(job.id)).logs;
      expect(
        logs.some((l: any) => /runs as 1 chunk/.test(l.message)),
        JSON.stringify(logs.map((l: any) => l.message)),
      ).toBe(true);
      expect(logs.some((l: any) => l.message.startsWith('rescaled'))).toBe(true);
      // A processing parameter of the job (GET /processing_parameters), shown with the job.
      expect((await jobs.get(job.id)).udf_timeout).toBe(120);
      const res = await jobs.call('GET', `/jobs/${job.id}/results`);
      const file = path.join(work, 'udf-job.tif');
      writeFileSync(file, (await http('GET', res.json.assets['result.tif'].href)).body);
      const raw = `${file}.bin`;
      run('gdal_translate', ['-q', '-of', 'ENVI', '-ot', 'Float32', file, raw]);
      const fromJob = Array.from(new Float32Array(new Uint8Array(readFileSync(raw)).buffer));
      const sync = cubeOf(
        await result(s, alice, { l: load(['B04'], ['2024-06-21', '2024-06-22'], extent), a: { process_id: 'apply', arguments: { data: { from_node: 'l' }, process: udfChild('x', RESCALE) }, result: true } }),
      );
      expectSameValues(fromJob, sync.values, 0);

      const failed = await jobs.run(g(FAILING));
      expect(failed.status).toBe('error');
      const flog = (await jobs.logs(failed.id)).logs;
      expect(flog.some((l: any) => l.message === 'about to scale')).toBe(true);
      const err = flog.find((l: any) => l.level === 'error');
      expect(err.code).toBe('UdfFailed');
      expect(err.message).toContain('line 4 of the UDF');
      expect(err.stacktrace).toContain('line 4, in scale');
    });
  });
});
