// What the official openEO tools expect of a back-end (brand word `openeo`): versions listed oldest
// first, repeated slashes read as one, empty updates that succeed, /validation that lists a missing
// graph, stored drafts, and non-finite numbers in JSON results that every kind of client can read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { writeCog } from '../src/output/cog-writer.js';
import { addUser, expectError, http, login, rawRequest, removeDir, startServer, xeo, type TestServer } from './helpers.js';

const VERSIONS = ['1.0.0-rc.2', '1.0.1', '1.2.0'];
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
    expect(root.headers.location).toBe(`${s.url}/1.2.0/`);
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
        // The load's grid has a border of no-data around the four pixels; their row reads null, null, null, 1.5.
        expect(values(r.text).filter((v: unknown) => v !== null)).toEqual([1.5]);
        expect(r.text).toContain('null,null,null,1.5');
      }
    });

    it("are bare NaN and Infinity tokens with non_finite 'tokens', as Python's json module reads them", async () => {
      const r = await send(cube({ non_finite: 'tokens' }));
      expect(r.status, r.text).toBe(200);
      expect(r.text).toContain('NaN,-Infinity,Infinity,1.5');
      expect(() => JSON.parse(r.text)).toThrow();
      const py = spawnSync('python3', ['-c', 'import json,sys; r=json.load(sys.stdin)["data"][0][0][1]; print(r[1] != r[1], r[2], r[3], r[4])'], { input: r.text, encoding: 'utf8' });
      expect(py.stdout.trim(), py.stderr).toBe('True -inf inf 1.5');
      expectError(await http('POST', `${s.base}/result`, { ...json({ process: { process_graph: cube({ non_finite: 'strings' }) } }), headers: { 'content-type': 'application/json', origin: 'https://x.example' } }), 400, 'ProcessParameterInvalid');
    });

    it('lists the option in GET /file_formats', async () => {
      const formats = await http('GET', `${s.base}/file_formats`);
      expect(formats.json.output.JSON.parameters.non_finite).toMatchObject({ type: 'string', enum: ['null', 'tokens'], default: 'null' });
    });
  });
});
