// What the official openEO tools expect of a back-end (brand word `openeo`): versions listed oldest
// first, repeated slashes read as one, empty updates that succeed, /validation that lists a missing
// graph, stored drafts, and non-finite numbers in JSON results that every kind of client can read.
// And what the workflow tests and the reference back-ends expect of results: text temporal labels
// (weeks, renamed labels) in every format, netCDF variables as xarray-based readers look for them,
// array_concat with a single value, apply_dimension into an existing dimension, strict estimates.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { writeCog } from '../src/output/cog-writer.js';
import { addUser, expectError, http, login, rawRequest, removeDir, startServer, xeo, type Res, type TestServer } from './helpers.js';
import { describeWithTool, hasGdal, hasXarray, run, xarrayRead } from './system-tools.js';

const VERSIONS = ['1.0.0-rc.2', '1.0.1', '1.2.0', '1.3.0'];
let s: TestServer;
let token: string;
beforeAll(async () => {
  s = await startServer({ XEO_BRAND: 'openeo' });
  addUser(s.dataDir, 'alice', 'secret-a');
  token = await login(s, 'alice', 'secret-a');
});
afterAll(async () => {
  await s.stop();
  removeDir(s.dataDir);
});

const json = (body: unknown) => ({ token, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
const absolute = { a: { process_id: 'absolute', arguments: { x: -2 }, result: true } };

/** A GET whose path reaches the server exactly as written (URL parsers merge slashes themselves). */
const rawGet = (target: string) => rawRequest(s, 'GET', target, { Authorization: token }).then((r) => ({ status: r.status, body: r.text }));

describe('interoperability with the openEO tools', () => {
  it('lists the versions oldest first; GET / at the root still leads to the newest', async () => {
    const wk = await http('GET', `${s.url}/.well-known/openeo`);
    expect(wk.json.versions.map((v: { api_version: string }) => v.api_version)).toEqual(VERSIONS);
    const root = await http('GET', `${s.url}/`);
    expect(root.status).toBe(302);
    expect(root.headers.location).toBe(`${s.url}/1.3.0/`);
  });

  it('reads a run of slashes as one on every route and version, but never an encoded slash', async () => {
    const job = await http('POST', `${s.base}/jobs`, json({ process: { process_graph: absolute } }));
    const id = job.headers['openeo-identifier'];
    for (const v of VERSIONS) {
      const plain = await rawGet(`/${v}/jobs/${id}`);
      expect(plain.status).toBe(200);
      for (const target of [`/${v}//jobs/${id}`, `//${v}///jobs//${id}`, `/${v}/jobs/${id}//`]) {
        const r = await rawGet(target);
        expect(r.status, target).toBe(200);
        expect(JSON.parse(r.body).id).toBe(id);
      }
      expect((await rawGet(`//${v}//collections`)).status).toBe(200);
    }
    expect((await rawGet('//.well-known//openeo')).status).toBe(200);
    // Files: a literal double slash is one folder step; an encoded one stays part of the name.
    const put = await http('PUT', `${s.base}/files/dir/name.txt`, { token, body: 'x', headers: { 'content-type': 'application/octet-stream' } });
    expect(put.status).toBe(200);
    expect((await rawGet('/1.2.0/files/dir//name.txt')).body).toBe('x');
    expect((await rawGet('/1.2.0/files/dir%2F%2Fname.txt')).status).not.toBe(200);
  });

  it('takes an empty update as a no-op that succeeds: jobs, services and stored processes, every version', async () => {
    for (const v of VERSIONS) {
      const base = `${s.url}/${v}`;
      const job = await http('POST', `${base}/jobs`, json({ process: { process_graph: absolute }, title: 'kept' }));
      const jobUrl = `${base}/jobs/${job.headers['openeo-identifier']}`;
      expect((await http('PATCH', jobUrl, json({}))).status).toBe(204);
      expect((await http('GET', jobUrl, { token })).json.title).toBe('kept');
      const service = await http('POST', `${base}/services`, json({ type: 'XYZ', title: 'kept', process: { process_graph: absolute } }));
      expect(service.status, service.text).toBe(201);
      const serviceUrl = `${base}/services/${service.headers['openeo-identifier']}`;
      expect((await http('PATCH', serviceUrl, json({}))).status).toBe(204);
      expect((await http('GET', serviceUrl, { token })).json.title).toBe('kept');
      expect((await http('PUT', `${base}/process_graphs/kept`, json({ summary: 'kept', process_graph: absolute }))).status).toBe(200);
      expect((await http('PATCH', `${base}/process_graphs/kept`, json({}))).status).toBe(204);
      expect((await http('GET', `${base}/process_graphs/kept`, { token })).json.summary).toBe('kept');
      // An empty update of something that does not exist is still a 404.
      expectError(await http('PATCH', `${base}/jobs/nope`, { ...json({}), headers: { 'content-type': 'application/json', origin: 'https://editor.example' } }), 404, 'JobNotFound');
    }
  });

  it('answers /validation of a body without a process graph with 200 and the problem listed, every version', async () => {
    for (const v of VERSIONS) {
      for (const body of [{}, { summary: 'no graph' }]) {
        const r = await http('POST', `${s.url}/${v}/validation`, json(body));
        expect(r.status).toBe(200);
        expect(r.json.errors.map((e: { code: string }) => e.code)).toEqual(['ProcessGraphMissing']);
        expect(r.json.errors[0].message).toEqual(expect.any(String));
      }
    }
  });

  it('stores drafts that are sound in structure, reports the rest through /validation and at run time', async () => {
    const draft = { a: { process_id: 'absolute', arguments: {}, result: true } };
    for (const v of VERSIONS) {
      expect((await http('PUT', `${s.url}/${v}/process_graphs/draft`, json({ process_graph: draft }))).status).toBe(200);
      expect((await http('GET', `${s.url}/${v}/process_graphs/draft`, { token })).json.process_graph).toEqual(draft);
    }
    const checked = await http('POST', `${s.base}/validation`, json({ process_graph: draft }));
    expect(checked.json.errors.map((e: { code: string }) => e.code)).toEqual(['ProcessParameterRequired']);
    const call = { c: { process_id: 'draft', namespace: 'user', arguments: {}, result: true } };
    expectError(await http('POST', `${s.base}/result`, json({ process: { process_graph: call } })), 400, 'ProcessParameterRequired');
    // Unknown processes are a draft's business too; broken structure and bad ids are not stored.
    expect((await http('PUT', `${s.base}/process_graphs/later`, json({ process_graph: { a: { process_id: 'not_yet_written', arguments: {}, result: true } } }))).status).toBe(200);
    expectError(await http('PUT', `${s.base}/process_graphs/broken`, json({ process_graph: { a: { process_id: 'absolute', arguments: { x: { from_node: 'b' } }, result: true } } })), 400, 'ProcessGraphInvalid');
    expectError(await http('PUT', `${s.base}/process_graphs/two`, json({ process_graph: { a: { process_id: 'absolute', arguments: {} } } })), 400, 'ProcessGraphInvalid');
    expectError(await http('PUT', `${s.base}/process_graphs/bad-id`, json({ process_graph: absolute })), 400, 'ProcessInvalid');
  });

  describe('non-finite numbers in JSON results', () => {
    const send = (process_graph: Record<string, unknown>) => http('POST', `${s.base}/result`, json({ process: { process_graph } }));
    /** A cube of one row: NaN, -Infinity, Infinity, 1.5 (a float32 GeoTIFF imported as collection NF). */
    const cube = (options?: Record<string, unknown>) => ({
      load: { process_id: 'load_collection', arguments: { id: 'NF', spatial_extent: null, temporal_extent: null } },
      save: { process_id: 'save_result', arguments: { data: { from_node: 'load' }, format: 'JSON', ...(options ? { options } : {}) }, result: true },
    });
    const values = (text: string) => JSON.parse(text).data.flat(Infinity);

    beforeAll(async () => {
      const file = path.join(s.dataDir, 'nf_20240301.tif');
      await writeCog(file, { width: 4, height: 1, epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], bands: [Float32Array.from([NaN, -Infinity, Infinity, 1.5])] });
      const imp = xeo(['import', '--collection', 'NF', file], { dataDir: s.dataDir });
      expect(imp.status, imp.stderr).toBe(0);
    });

    it('are null in strict JSON by default, which every parser reads', async () => {
      const plain = await send({
        nan: { process_id: 'sqrt', arguments: { x: -1 } },
        neg: { process_id: 'ln', arguments: { x: 0 } },
        pos: { process_id: 'exp', arguments: { p: 1000 } },
        list: { process_id: 'array_create', arguments: { data: [{ from_node: 'nan' }, { from_node: 'neg' }, { from_node: 'pos' }, 1.5] }, result: true },
      });
      expect(plain.status, plain.text).toBe(200);
      expect(JSON.parse(plain.text)).toEqual([null, null, null, 1.5]);
      for (const options of [undefined, {}, { non_finite: 'null' }]) {
        const r = await send(cube(options));
        expect(r.status, r.text).toBe(200);
        // The load's grid is the four pixels; their row reads null, null, null, 1.5.
        expect(values(r.text).filter((v: unknown) => v !== null)).toEqual([1.5]);
        expect(r.text).toContain('null,null,null,1.5');
      }
    });

    it("are bare NaN and Infinity tokens with non_finite 'tokens', as Python's json module reads them", async () => {
      const r = await send(cube({ non_finite: 'tokens' }));
      expect(r.status, r.text).toBe(200);
      expect(r.text).toContain('NaN,-Infinity,Infinity,1.5');
      expect(() => JSON.parse(r.text)).toThrow();
      const py = spawnSync('python3', ['-c', 'import json,sys; r=json.load(sys.stdin)["data"][0][0][0]; print(r[0] != r[0], r[1], r[2], r[3])'], { input: r.text, encoding: 'utf8' });
      expect(py.stdout.trim(), py.stderr).toBe('True -inf inf 1.5');
      expectError(
        await http('POST', `${s.base}/result`, { ...json({ process: { process_graph: cube({ non_finite: 'strings' }) } }), headers: { 'content-type': 'application/json', origin: 'https://x.example' } }),
        400,
        'ProcessParameterInvalid',
      );
    });

    it('lists the option in GET /file_formats', async () => {
      const formats = await http('GET', `${s.base}/file_formats`);
      expect(formats.json.output.JSON.parameters.non_finite).toMatchObject({ type: 'string', enum: ['null', 'tokens'], default: 'null' });
    });
  });
});

// Collection LBL: bands B1 and B2 over four dates (ISO weeks 23, 23, 24 and 27 of 2024), 3 x 2
// pixels; value (band + 1) * 100 + date * 10 + pixel. Loads add a border of no-data around them.
const DATES = ['2024-06-03', '2024-06-05', '2024-06-12', '2024-07-01'];
const value = (band: number, date: number, pixel: number) => (band + 1) * 100 + date * 10 + pixel;
/** The six pixels of a 2-D plane of the load (rows 1..2, columns 1..3 of its 5 x 4 grid), row by row. */
/** The pixels of a plane, row by row (a whole-collection load ends where the items end: no border). */
const inner = (plane: (number | null)[][]) => plane.flat();
const load = (temporal_extent: [string, string] | null = null) => ({ process_id: 'load_collection', arguments: { id: 'LBL', spatial_extent: null, temporal_extent } });
const save = (node: string, format: string) => ({ process_id: 'save_result', arguments: { data: { from_node: node }, format }, result: true });
const child = (nodes: Record<string, unknown>) => ({ process_graph: nodes });
const MEAN = child({ m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } });

describeWithTool(hasGdal && hasXarray, 'GDAL and xarray', 'what the workflow tests and the reference back-ends expect of results', () => {
  const dir = () => path.join(s.dataDir, 'lbl');
  // With an Origin, as a web client sends it (API 1.0.0-rc.2 answers CORS headers only then).
  const result = (v: string, process_graph: Record<string, unknown>) =>
    http('POST', `${s.url}/${v}/result`, { ...json({ process: { process_graph } }), headers: { 'content-type': 'application/json', origin: 'https://editor.example' } });
  /** Runs a graph on every version; each answer must be 200, and is written to a file named after the version. */
  async function everyVersion(name: string, graph: Record<string, unknown>): Promise<{ files: string[]; answers: Res[] }> {
    const files: string[] = [];
    const answers: Res[] = [];
    for (const v of VERSIONS) {
      const r = await result(v, graph);
      expect(r.status, `${v}: ${r.text.slice(0, 300)}`).toBe(200);
      files.push(path.join(dir(), `${name}-${v}`));
      writeFileSync(files[files.length - 1], r.body);
      answers.push(r);
    }
    return { files, answers };
  }

  beforeAll(async () => {
    mkdirSync(dir());
    const files = DATES.map((d) => path.join(dir(), `lbl_${d.replaceAll('-', '')}.tif`));
    for (const [k, file] of files.entries()) {
      const bands = [0, 1].map((b) => Float32Array.from({ length: 6 }, (_, p) => value(b, k, p)));
      await writeCog(file, { width: 3, height: 2, epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], bands });
    }
    const imp = xeo(['import', '--collection', 'LBL', '--bands', 'B1,B2', ...files], { dataDir: s.dataDir });
    expect(imp.status, imp.stderr).toBe(0);
  });

  it('writes the week and month labels of aggregate_temporal_period as text: netCDF, JSON and GeoTIFF', async () => {
    const weekly = (format: string) => ({ l: load(), a: { process_id: 'aggregate_temporal_period', arguments: { data: { from_node: 'l' }, period: 'week', reducer: MEAN } }, s: save('a', format) });
    const WEEKS = ['2024-23', '2024-24', '2024-25', '2024-26', '2024-27'];
    const nc = await everyVersion('week.nc', weekly('netCDF'));
    const monthly = { ...weekly('netCDF'), a: { process_id: 'aggregate_temporal_period', arguments: { data: { from_node: 'l' }, period: 'month', reducer: MEAN } } };
    const month = await everyVersion('month.nc', monthly);
    const read = xarrayRead([...nc.files, ...month.files]);
    for (const file of read.slice(0, VERSIONS.length)) {
      expect(file.t).toEqual(WEEKS);
      expect(Object.keys(file.vars)).toEqual(['B1', 'B2']);
      expect(file.vars.B1.dims).toEqual(['t', 'y', 'x']);
      // week 23 holds dates 0 and 1, week 24 date 2, weeks 25 and 26 nothing, week 27 date 3
      expect(inner(file.vars.B1.values[0])).toEqual([0, 1, 2, 3, 4, 5].map((p) => (value(0, 0, p) + value(0, 1, p)) / 2));
      expect(inner(file.vars.B2.values[1])).toEqual([0, 1, 2, 3, 4, 5].map((p) => value(1, 2, p)));
      expect(inner(file.vars.B2.values[2]).every((v) => v === null)).toBe(true);
      expect(inner(file.vars.B1.values[4])).toEqual([0, 1, 2, 3, 4, 5].map((p) => value(0, 3, p)));
    }
    for (const file of read.slice(VERSIONS.length)) expect(file.t).toEqual(['2024-06', '2024-07']);
    // GDAL's multidimensional reader sees the same labels as strings.
    const mdim = JSON.parse(run('gdalmdiminfo', ['-detailed', nc.files[0]]));
    expect(mdim.arrays.t).toMatchObject({ datatype: 'String', dimensions: ['/t'], values: WEEKS });
    // JSON keeps the labels as they are; GeoTIFF band descriptions name them.
    for (const v of VERSIONS) {
      const r = await result(v, weekly('JSON'));
      expect(r.status, r.text).toBe(200);
      expect(r.json.dimensions[0]).toEqual({ name: 't', type: 'temporal', labels: WEEKS });
    }
    const tif = await result(VERSIONS[0], weekly('GTiff'));
    expect(tif.status, tif.text).toBe(200);
    writeFileSync(path.join(dir(), 'week.tif'), tif.body);
    const info = JSON.parse(run('gdalinfo', ['-json', path.join(dir(), 'week.tif')]));
    expect(info.bands.map((b: { description: string }) => b.description)).toEqual(WEEKS.flatMap((w) => [`${w} B1`, `${w} B2`]));
  });

  it('renames temporal labels to text; a cube without bands is one netCDF variable named var, with bands one per band', async () => {
    const names = ['first', 'second', 'dritte Woche', '4th'];
    const renamed = { l: load(), r: { process_id: 'rename_labels', arguments: { data: { from_node: 'l' }, dimension: 't', target: names, source: DATES } } };
    const difference = child({
      a: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, label: 'B2' } },
      b: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: 0 } },
      d: { process_id: 'subtract', arguments: { x: { from_node: 'a' }, y: { from_node: 'b' } } },
      m: { process_id: 'multiply', arguments: { x: { from_node: 'd' }, y: { from_node: 'b' } }, result: true },
    });
    const reduced = { ...renamed, n: { process_id: 'reduce_dimension', arguments: { data: { from_node: 'r' }, dimension: 'bands', reducer: difference } } };
    const noBands = await everyVersion('var.nc', { ...reduced, s: save('n', 'netCDF') });
    const bands = await everyVersion('bands.nc', { ...renamed, s: save('r', 'netCDF') });
    const read = xarrayRead([...noBands.files, ...bands.files]);
    for (const file of read.slice(0, VERSIONS.length)) {
      expect(file.t).toEqual(names);
      expect(Object.keys(file.vars)).toEqual(['var']);
      expect(file.vars.var.dims).toEqual(['t', 'y', 'x']);
      for (let k = 0; k < 4; k++) expect(inner(file.vars.var.values[k])).toEqual([0, 1, 2, 3, 4, 5].map((p) => 100 * value(0, k, p)));
    }
    for (const file of read.slice(VERSIONS.length)) {
      expect(file.t).toEqual(names);
      expect(Object.keys(file.vars)).toEqual(['B1', 'B2']);
      expect(inner(file.vars.B2.values[3])).toEqual([0, 1, 2, 3, 4, 5].map((p) => value(1, 3, p)));
    }
    // Further processes take the text labels as labels; those that need instants say so.
    for (const v of VERSIONS) {
      const labels = await result(v, { ...renamed, d: { process_id: 'dimension_labels', arguments: { data: { from_node: 'r' }, dimension: 't' }, result: true } });
      expect(labels.json).toEqual(names);
      const kept = await result(v, {
        ...renamed,
        f: {
          process_id: 'filter_labels',
          arguments: { data: { from_node: 'r' }, dimension: 't', condition: child({ e: { process_id: 'text_begins', arguments: { data: { from_parameter: 'value' }, pattern: 'd' }, result: true } }) },
        },
        s: save('f', 'JSON'),
      });
      expect(kept.json.dimensions[0].labels).toEqual(['dritte Woche']);
      const filtered = await result(v, { ...renamed, f: { process_id: 'filter_temporal', arguments: { data: { from_node: 'r' }, extent: ['2024-01-01', '2025-01-01'] } }, s: save('f', 'JSON') });
      expectError(filtered, 400, 'ProcessParameterInvalid');
      expect(filtered.json.message).toMatch(/'first'.*filter_labels/);
    }
  });

  it('takes a single number as array2 of array_concat, as the Python client writes array_concat(data, ndvi)', async () => {
    const ndvi = child({
      r: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, label: 'B1' } },
      n: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, label: 'B2' } },
      nd: { process_id: 'normalized_difference', arguments: { x: { from_node: 'n' }, y: { from_node: 'r' } } },
      c: { process_id: 'array_concat', arguments: { array1: { from_parameter: 'data' }, array2: { from_node: 'nd' } }, result: true },
    });
    const graph = { l: load([DATES[0], DATES[2]]), a: { process_id: 'apply_dimension', arguments: { data: { from_node: 'l' }, dimension: 'bands', process: ndvi } }, s: save('a', 'JSON') };
    for (const v of VERSIONS) {
      const r = await result(v, graph);
      expect(r.status, r.text).toBe(200);
      expect(r.json.dimensions.map((d: { name: string; labels: unknown[] }) => [d.name, d.labels.length])).toEqual([
        ['t', 2],
        ['bands', 3],
        ['y', 2],
        ['x', 3],
      ]);
      expect(r.json.dimensions[1].labels).toEqual([0, 1, 2]);
      const [b1, b2, nd] = r.json.data[1];
      expect(inner(b1)).toEqual([0, 1, 2, 3, 4, 5].map((p) => value(0, 1, p)));
      inner(nd).forEach((x, p) => expect(x).toBeCloseTo((value(1, 1, p) - value(0, 1, p)) / (value(1, 1, p) + value(0, 1, p)), 6));
      expect(inner(b2)[0]).toBe(value(1, 1, 0));
      // Outside cubes too; an object is still no array.
      expect((await result(v, { c: { process_id: 'array_concat', arguments: { array1: [1, 2], array2: 3 }, result: true } })).json).toEqual([1, 2, 3]);
      expectError(await result(v, { c: { process_id: 'array_concat', arguments: { array1: [1], array2: { a: 1 } }, result: true } }), 400, 'ProcessParameterInvalid');
    }
  });

  it('applies along t into the existing bands dimension, as the reference back-end does', async () => {
    const minMax = child({
      lo: { process_id: 'min', arguments: { data: { from_parameter: 'data' } } },
      hi: { process_id: 'max', arguments: { data: { from_parameter: 'data' } } },
      c: { process_id: 'array_concat', arguments: { array1: [{ from_node: 'lo' }], array2: { from_node: 'hi' } }, result: true },
    });
    const into = (process: unknown, target = 'bands') => ({
      l: load(),
      a: { process_id: 'apply_dimension', arguments: { data: { from_node: 'l' }, dimension: 't', target_dimension: target, process } },
      s: save('a', 'JSON'),
    });
    for (const v of VERSIONS) {
      // Two values per band: the time series of B1 gives the first two, B2's the next two; labels 0..3.
      const r = await result(v, into(minMax));
      expect(r.status, r.text).toBe(200);
      expect(r.json.dimensions.map((d: { name: string; type: string }) => [d.name, d.type])).toEqual([
        ['bands', 'bands'],
        ['y', 'spatial'],
        ['x', 'spatial'],
      ]);
      expect(r.json.dimensions[0].labels).toEqual([0, 1, 2, 3]);
      const want = [value(0, 0, 0), value(0, 3, 0), value(1, 0, 0), value(1, 3, 0)];
      expect(r.json.data.map((plane: (number | null)[][]) => inner(plane)[0])).toEqual(want);
      // One value per band: the bands keep their labels.
      const mean = await result(v, into(MEAN));
      expect(mean.json.dimensions[0].labels).toEqual(['B1', 'B2']);
      expect(inner(mean.json.data[1])).toEqual([0, 1, 2, 3, 4, 5].map((p) => (value(1, 0, p) + value(1, 1, p) + value(1, 2, p) + value(1, 3, p)) / 4));
      // A new name is a new dimension of type other; the grid's own dimensions take no computed values.
      const other = await result(v, into(minMax, 'stats'));
      expect(other.json.dimensions.map((d: { name: string; type: string }) => [d.name, d.type])).toEqual([
        ['stats', 'other'],
        ['bands', 'bands'],
        ['y', 'spatial'],
        ['x', 'spatial'],
      ]);
      expectError(await result(v, into(minMax, 'x')), 400, 'ProcessParameterInvalid');
    }
  });
});

describe('job estimates', () => {
  it('leave out downloads_included, whose default null strict readers refuse, every version', async () => {
    for (const v of VERSIONS) {
      const job = await http('POST', `${s.url}/${v}/jobs`, json({ process: { process_graph: absolute } }));
      const r = await http('GET', `${s.url}/${v}/jobs/${job.headers['openeo-identifier']}/estimate`, { token });
      expect(r.status, r.text).toBe(200);
      expect(r.json).not.toHaveProperty('downloads_included');
      expect(r.json).toMatchObject({ costs: 0, duration: expect.stringMatching(/^PT/) });
    }
  });
});
