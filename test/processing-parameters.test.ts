// The Processing Parameters extension over HTTP, and the logs of synchronous requests: what
// GET /processing_parameters lists (defaults from the configuration), the order in which a value
// is taken (the request's top level, the default_*_options of the process submitted, of the stored
// process its graph calls, the default), unknown or invalid values of requests refused and those of
// processes passed over, and each parameter's effect: job chunks, value limits of jobs, /result and
// tiles, tile size and Cache-Control, log levels; POST /result's identifier and its log.
import { describe, it, expect } from 'vitest';
import { http, expectError, type TestServer } from './helpers.js';
import { useDemoServer } from './demo-data.js';
import { DEMO, Jobs, pixels } from './jobs-helpers.js';
import { decodePng } from './png-decode.js';
import { tileAt } from '../src/tiles/tile-grid.js';

const VERSIONS = ['1.3.0', '1.2.0', '1.0.1', '1.0.0-rc.2'];
const JUNE = ['2024-06-01', '2024-07-01'];
let s: TestServer;
let alice: string;
let bob: string;
let jobs: Jobs;

useDemoServer({ env: { XEO_TILE_MAX_AGE: '77', XEO_JOB_THREADS: '1' }, users: { alice: 'pa', bob: 'pb' } }, (w) => {
  s = w.server;
  ({ alice, bob } = w.tokens);
  jobs = new Jobs(s, alice);
});

const post = (path: string, body: unknown, token = alice, version = '1.2.0') =>
  http('POST', `${s.url}/${version}${path}`, { token, body: JSON.stringify(body), headers: { 'content-type': 'application/json', origin: 'http://x.test' } });
const put = (path: string, body: unknown) => http('PUT', `${s.base}${path}`, { token: alice, body: JSON.stringify(body) });

/** NDVI of June over 1536 x 512 pixels: two chunks of 1024 by default, one of 2048. */
const ndvi = (extent = pixels(0, 0, 1536, 512)) => ({
  l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: extent, temporal_extent: JUNE, bands: ['B04', 'B08'] } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'n' }, format: 'GTiff' }, result: true },
});
const chunkLine = async (id: string) => (await jobs.logs(id)).logs.map((l: { message: string }) => l.message).find((m: string) => /runs as \d+ chunk/.test(m));

describe('GET /processing_parameters', () => {
  it('lists the parameters of each mode with schema and defaults from the configuration, on every version', async () => {
    const docs = await Promise.all(VERSIONS.map((v) => http('GET', `${s.url}/${v}/processing_parameters`, { headers: { origin: 'http://x.test' } })));
    for (const d of docs) {
      expect(d.status).toBe(200);
      expect(d.json).toEqual(docs[0].json);
    }
    const doc = docs[0].json;
    const names = (mode: string) => doc[mode].map((p: { name: string }) => p.name);
    expect(names('create_job_parameters')).toEqual(['chunk_size', 'max_values', 'log_level', 'udf_timeout']);
    expect(names('create_synchronous_parameters')).toEqual(['max_values', 'log_level']);
    expect(names('create_service_parameters')).toEqual(['tile_size', 'max_values', 'max_age', 'log_level']);
    for (const p of [...doc.create_job_parameters, ...doc.create_synchronous_parameters, ...doc.create_service_parameters]) {
      expect(p).toMatchObject({ name: expect.any(String), description: expect.any(String), optional: true, schema: expect.any(Object) });
      expect(p).toHaveProperty('default');
    }
    const byName = (mode: string, name: string) => doc[mode].find((p: { name: string }) => p.name === name);
    expect(byName('create_job_parameters', 'chunk_size').default).toBe(1024);
    expect(byName('create_job_parameters', 'udf_timeout')).toMatchObject({ default: 600, schema: { type: 'number', exclusiveMinimum: 0, maximum: 3600 } });
    expect(byName('create_service_parameters', 'max_age').default).toBe(77);
    expect(byName('create_synchronous_parameters', 'max_values').schema.maximum).toBe(byName('create_synchronous_parameters', 'max_values').default);
  });
});

describe('batch jobs', () => {
  it('ignore unknown members with a warning in the log, and refuse invalid parameters, on every version', async () => {
    for (const v of VERSIONS) {
      const body = { process: { process_graph: ndvi() } };
      const unknown = await post('/jobs', { ...body, job_options: { memory: '2GB' } }, alice, v);
      expect(unknown.status, unknown.text).toBe(201);
      const warned = (await jobs.logs(unknown.headers['xeo-identifier'])).logs;
      expect(warned).toContainEqual(expect.objectContaining({ level: 'warning', message: expect.stringContaining("'job_options'") }));
      const bad = await post('/jobs', { ...body, chunk_size: 'big' }, alice, v);
      expectError(bad, 400, 'ProcessingParameterInvalid');
      expect(bad.json.message).toContain('chunk_size');
      expect(bad.json.message).toContain('"minimum":16');
      expectError(await post('/jobs', { ...body, chunk_size: 8 }, alice, v), 400, 'ProcessingParameterInvalid');
      expectError(await post('/jobs', { ...body, max_values: 1e15 }, alice, v), 400, 'ProcessingParameterInvalid');
    }
    // the interface spec's form: the graph and the process's own members at the top level are not parameters
    const flat = await post('/jobs', { process_graph: ndvi(), title: 'flat', description: 'd', chunk_size: 2048 });
    expect(flat.status, flat.text).toBe(201);
    expect((await jobs.get(flat.headers['xeo-identifier'])).chunk_size).toBe(2048);
  });

  it('take a value from the request, else the process, else the stored process it calls, else the default', async () => {
    // a stored process with defaults for jobs: one unknown and one invalid, both passed over
    const { l, n } = ndvi();
    const udp = { process_graph: { l, n: { ...n, result: true } }, default_job_options: { chunk_size: 2048, log_level: 'debug', memory: '2GB', max_values: 'lots' } };
    expect((await put('/process_graphs/ndvi_june', udp)).status).toBe(200);
    const calls = {
      u: { process_id: 'ndvi_june', namespace: 'user', arguments: {} },
      s: { process_id: 'save_result', arguments: { data: { from_node: 'u' }, format: 'GTiff' }, result: true },
    };
    const fromStored = await jobs.run(calls);
    expect(fromStored.status).toBe('finished');
    expect(fromStored.log_level).toBe('debug');
    expect(await chunkLine(fromStored.id)).toMatch(/runs as 1 chunk of up to 2048 x 2048/);
    // the request wins over the stored process
    const fromRequest = await jobs.run(calls, { chunk_size: 1024, log_level: 'info' });
    expect(fromRequest.log_level).toBe('info');
    expect(fromRequest.chunk_size).toBe(1024);
    expect(await chunkLine(fromRequest.id)).toMatch(/runs as 2 chunks of up to 1024 x 1024/);
    // the process submitted wins over the stored process it calls
    const submitted = await jobs.create(calls);
    const own = await post('/jobs', { process: { process_graph: ndvi(), default_job_options: { chunk_size: 2048 } } });
    const ownId = own.headers['xeo-identifier'];
    await jobs.start(ownId);
    expect(await chunkLine((await jobs.waitFor(ownId, (j) => j.status === 'finished')).id)).toMatch(/1 chunk of up to 2048/);
    // the default: no options anywhere
    const plain = await jobs.run(ndvi());
    expect(plain.chunk_size).toBeUndefined();
    expect(await chunkLine(plain.id)).toMatch(/2 chunks of up to 1024 x 1024/);
    // PATCH sets one too; a restart runs with it
    expect((await jobs.call('PATCH', `/jobs/${submitted}`, { chunk_size: 1024 })).status).toBe(204);
    expectError(await jobs.call('PATCH', `/jobs/${submitted}`, { chunk_size: -1 }), 400, 'ProcessingParameterInvalid');
    expectError(await jobs.call('PATCH', `/jobs/${submitted}`, { status: 'finished' }), 400, 'PropertyNotEditable');
    expect((await jobs.call('PATCH', `/jobs/${submitted}`, { memory: 1 })).status).toBe(204);
    expect((await jobs.logs(submitted)).logs).toContainEqual(expect.objectContaining({ level: 'warning', message: expect.stringContaining("'memory'") }));
    await jobs.start(submitted);
    expect(await chunkLine((await jobs.waitFor(submitted, (j) => j.status === 'finished')).id)).toMatch(/2 chunks of up to 1024/);
  });

  it('stop at their max_values', async () => {
    const job = await jobs.run(ndvi(), { max_values: 1000 });
    expect(job.status).toBe('error');
    const r = await jobs.call('GET', `/jobs/${job.id}/results`);
    expect(r.status).toBe(424);
    expect(r.json).toMatchObject({ code: 'ProcessGraphComplexity', message: expect.stringContaining('the 1000 allowed') });
  });
});

describe('synchronous processing', () => {
  const graph = (extent = pixels(0, 0, 64, 64)) => ({
    l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: extent, temporal_extent: JUNE, bands: ['B04'] } },
    s: { process_id: 'save_result', arguments: { data: { from_node: 'l' }, format: 'GTiff' }, result: true },
  });

  it('ignores unknown members, refuses invalid parameters, and stops at max_values from the request or the process', async () => {
    // a job's parameter is not one of /result: ignored, and said so in the request's log
    const stray = await post('/result', { process: { process_graph: graph() }, chunk_size: 2048 });
    expect(stray.status, stray.text).toBe(200);
    const strayLog = (await http('GET', /^<([^>]+)>/.exec(stray.headers.link)![1], { token: alice })).json.logs;
    expect(strayLog[0]).toMatchObject({ level: 'warning', message: expect.stringContaining("'chunk_size'") });
    expectError(await post('/result', { process: { process_graph: graph() }, max_values: 0 }), 400, 'ProcessingParameterInvalid');
    expect((await post('/result', { process: { process_graph: graph() } })).status).toBe(200);
    const limited = await post('/result', { process: { process_graph: graph() }, max_values: 1000 });
    expectError(limited, 400, 'ProcessGraphComplexity');
    expect(limited.json.message).toContain('the 1000 allowed');
    expectError(await post('/result', { process: { process_graph: graph(), default_synchronous_options: { max_values: 1000 } } }), 400, 'ProcessGraphComplexity');
    // the request's value wins over the process's
    expect((await post('/result', { process: { process_graph: graph(), default_synchronous_options: { max_values: 1000 } }, max_values: 100000 })).status).toBe(200);
  });

  it('names each request and keeps its log at its level for its user only, on every version', async () => {
    for (const v of VERSIONS) {
      const r = await post('/result', { process: { process_graph: graph() } }, alice, v);
      expect(r.status, r.text).toBe(200);
      const id = r.headers['xeo-identifier'];
      expect(id).toMatch(/^[0-9a-f]{24}$/);
      expect(r.headers.link).toBe(`<${s.url}/${v}/logs/${id}>; rel="monitor"`);
      const log = await http('GET', `${s.url}/${v}/logs/${id}`, { token: alice, headers: { origin: 'http://x.test' } });
      expect(log.status, log.text).toBe(200);
      expect(log.json.logs.map((e: { message: string }) => e.message)).toContainEqual(expect.stringMatching(/^loading DEMO_S2_L2A: 64x64 px/));
      expectError(await http('GET', `${s.url}/${v}/logs/${id}`, { token: bob, headers: { origin: 'http://x.test' } }), 404, 'NotFound');
    }
    // nothing at the level asked for: named, but no log
    const quiet = await post('/result', { process: { process_graph: graph() }, log_level: 'error' });
    expect(quiet.headers['xeo-identifier']).toMatch(/^[0-9a-f]{24}$/);
    expect(quiet.headers.link).toBeUndefined();
    // a failed run keeps its failure
    const failed = await post('/result', { process: { process_graph: graph() }, max_values: 10 });
    expect(failed.status).toBe(400);
    const link = /^<([^>]+)>; rel="monitor"$/.exec(failed.headers.link)![1];
    const entries = (await http('GET', link, { token: alice })).json.logs;
    expect(entries).toContainEqual(expect.objectContaining({ level: 'error', code: 'ProcessGraphComplexity' }));
    expectError(await http('GET', `${s.base}/logs/not-an-id`, { token: alice }), 404, 'NotFound');
    expectError(await http('GET', `${s.base}/logs/${'0'.repeat(24)}`), 401, 'AuthenticationRequired');
  });
});

describe('services', () => {
  const mean = () => ({
    l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: null, temporal_extent: JUNE, bands: ['B04', 'B08'] } },
    n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
    r: {
      process_id: 'reduce_dimension',
      arguments: { data: { from_node: 'n' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
      result: true,
    },
  });
  const INSIDE = tileAt(16.745, 47.93, 13);
  async function service(body: Record<string, unknown>): Promise<Record<string, any>> {
    const r = await post('/services', { type: 'XYZ', configuration: { min: -1, max: 1 }, ...body });
    expect(r.status, r.text).toBe(201);
    return (await http('GET', `${s.base}/services/${r.headers['xeo-identifier']}`, { token: alice })).json;
  }
  const tile = (svc: Record<string, any>) => http('GET', svc.url.replace('{z}', INSIDE.z).replace('{x}', INSIDE.x).replace('{y}', INSIDE.y));

  it('take the tile size and Cache-Control from the request or the process, and stop at max_values', async () => {
    const stray = await post('/services', { type: 'XYZ', process: { process_graph: mean() }, chunk_size: 1 });
    expect(stray.status, stray.text).toBe(201);
    const strayLog = (await http('GET', `${s.base}/services/${stray.headers['xeo-identifier']}/logs`, { token: alice })).json.logs;
    expect(strayLog).toContainEqual(expect.objectContaining({ level: 'warning', message: expect.stringContaining("'chunk_size'") }));
    expectError(await post('/services', { type: 'XYZ', process: { process_graph: mean() }, tile_size: 300 }), 400, 'ProcessingParameterInvalid');
    const big = await service({ process: { process_graph: mean() }, tile_size: 512, max_age: 123 });
    expect(big.configuration.tile_size).toBe(512);
    expect(big.max_age).toBe(123);
    const t = await tile(big);
    expect(t.status, t.text).toBe(200);
    expect(decodePng(t.body).width).toBe(512);
    expect(t.headers['cache-control']).toBe('public, max-age=123');
    // the configuration's own tile_size wins; the process's defaults apply where the request says nothing
    const configured = await service({ process: { process_graph: mean(), default_service_options: { tile_size: 512, max_age: 321 } }, configuration: { tile_size: 256, min: -1, max: 1 } });
    expect(configured.configuration.tile_size).toBe(256);
    const ct = await tile(configured);
    expect(decodePng(ct.body).width).toBe(256);
    expect(ct.headers['cache-control']).toBe('public, max-age=321');
    // the server's default without any
    expect((await tile(await service({ process: { process_graph: mean() } }))).headers['cache-control']).toBe('public, max-age=77');
    // a tile may not read more than max_values
    const limited = await tile(await service({ process: { process_graph: mean() }, max_values: 1000 }));
    expectError(limited, 400, 'ProcessGraphComplexity');
    // PATCH: a tile_size alone sets the tile size
    const r = await http('PATCH', `${s.base}/services/${big.id}`, { token: alice, body: JSON.stringify({ tile_size: 256 }) });
    expect(r.status, r.text).toBe(204);
    expect((await http('GET', `${s.base}/services/${big.id}`, { token: alice })).json.configuration.tile_size).toBe(256);
  });
});

describe("the openEO Web Editor's body shape", () => {
  // The editor (0.15.1) spreads a browser event into its request bodies: `isTrusted: true` arrives
  // at the top level beside the API's own members. Every endpoint takes the request, ignores the
  // stray member and says so in the log of what it made.
  const tiny = () => ({
    l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: pixels(0, 0, 32, 32), temporal_extent: JUNE, bands: ['B04'] } },
    s: { process_id: 'save_result', arguments: { data: { from_node: 'l' }, format: 'GTiff' }, result: true },
  });
  const editor = (extra: Record<string, unknown> = {}) => ({ process: { process_graph: tiny() }, isTrusted: true, ...extra });
  const warnsOf = (logs: { level: string; message: string }[]) => logs.filter((e) => e.level === 'warning' && e.message.includes("'isTrusted'"));
  const call = (method: string, url: string, body: unknown) => http(method, url, { token: alice, body: JSON.stringify(body), headers: { 'content-type': 'application/json', origin: 'http://x.test' } });

  it('is accepted by POST /result, /jobs and /services and their PATCH, with a warning, on every version', async () => {
    for (const v of VERSIONS) {
      const base = `${s.url}/${v}`;
      const result = await call('POST', `${base}/result`, editor({ budget: null, plan: null }));
      expect(result.status, `${v} ${result.text}`).toBe(200);
      expect(result.headers['access-control-allow-origin']).toBeDefined();
      const resultLog = (await http('GET', /^<([^>]+)>/.exec(result.headers.link)![1], { token: alice })).json.logs;
      expect(warnsOf(resultLog)).toHaveLength(1);

      const job = await call('POST', `${base}/jobs`, editor({ title: 'from the editor' }));
      expect(job.status, `${v} ${job.text}`).toBe(201);
      const jobId = job.headers['xeo-identifier'];
      expect((await call('PATCH', `${base}/jobs/${jobId}`, { title: 'renamed', isTrusted: true })).status).toBe(204);
      const jobDoc = await http('GET', `${base}/jobs/${jobId}`, { token: alice });
      expect(jobDoc.json.title).toBe('renamed');
      expect(jobDoc.json).not.toHaveProperty('isTrusted');
      expect(warnsOf((await jobs.logs(jobId)).logs)).toHaveLength(2);

      const svc = await call('POST', `${base}/services`, editor({ type: 'XYZ', title: 'map' }));
      expect(svc.status, `${v} ${svc.text}`).toBe(201);
      const svcId = svc.headers['xeo-identifier'];
      expect((await call('PATCH', `${base}/services/${svcId}`, { enabled: false, isTrusted: true })).status).toBe(204);
      const svcDoc = await http('GET', `${base}/services/${svcId}`, { token: alice });
      expect(svcDoc.json.enabled).toBe(false);
      const svcLog = (await http('GET', `${base}/services/${svcId}/logs`, { token: alice })).json.logs;
      expect(warnsOf(svcLog)).toHaveLength(2);
    }
  });

  it('still refuses what is wrong: a read-only member in PATCH, a bad parameter value', async () => {
    const job = await call('POST', `${s.base}/jobs`, editor());
    const jobId = job.headers['xeo-identifier'];
    const ro = await call('PATCH', `${s.base}/jobs/${jobId}`, { status: 'finished', isTrusted: true });
    expectError(ro, 400, 'PropertyNotEditable');
    expect(ro.headers['access-control-allow-origin']).toBeDefined();
    expectError(await call('POST', `${s.base}/result`, editor({ max_values: 'all' })), 400, 'ProcessingParameterInvalid');
  });

  it('takes `process` over a top-level `process_graph` sent beside it (the older request form)', async () => {
    const other = { x: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } };
    const svc = await call('POST', `${s.base}/services`, { type: 'XYZ', process: { process_graph: tiny() }, process_graph: other });
    expect(svc.status, svc.text).toBe(201);
    const doc = await http('GET', `${s.base}/services/${svc.headers['xeo-identifier']}`, { token: alice });
    expect(doc.json.process.process_graph).toEqual(tiny());
    const job = await call('POST', `${s.base}/jobs`, { process: { process_graph: tiny() }, process_graph: other });
    expect(job.status, job.text).toBe(201);
    expect((await http('GET', `${s.base}/jobs/${job.headers['xeo-identifier']}`, { token: alice })).json.process.process_graph).toEqual(tiny());
  });
});
