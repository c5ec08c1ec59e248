// Two API nodes on one PostgreSQL, each with its own data dir: records written through one are
// seen through the other (users, tokens, stored processes, jobs, collections read by the compute
// threads), and a database that goes away gives 503s with Retry-After, then work resumes.
import { afterAll, beforeAll, expect, it } from 'vitest';
import path from 'node:path';
import { writeCog } from '../src/output/cog-writer.js';
import { transformBox } from '../src/geometry/crs.js';
import { openStore } from '../src/store/db.js';
import { basicHeader, expectError, expectRetryAfter, http, login, removeDir, startServer, tempDir, watched, xeo, type TestServer } from './helpers.js';
import { hasPostgres, startPostgres, type Postgres } from '../bench/postgres.js';
import { startDelayProxy } from '../bench/delay-proxy.js';
import { describeWithTool } from './system-tools.js';

describeWithTool(hasPostgres, 'PostgreSQL 15', 'API nodes sharing PostgreSQL', () => {
  let pg: Postgres;
  let env: Record<string, string>;
  let a: TestServer;
  let b: TestServer;
  let token: string;
  const files = tempDir('xeo-pg-files-');

  beforeAll(async () => {
    pg = await startPostgres();
    // One trusted proxy hop lets the sign-in test speak from addresses of its own.
    // A short deadline per statement keeps the hung-database case short.
    env = { XEO_DATABASE_URL: pg.database(), XEO_TRUST_PROXY: '1', XEO_AUTH_FAILURES_PER_ACCOUNT: '4', XEO_DATABASE_TIMEOUT: '2' };
    // A small raster, imported once: both nodes (and their compute threads) read it from the shared records.
    const width = 64;
    const band = Uint16Array.from({ length: width * width }, (_, i) => 100 + (i % width) + Math.floor(i / width));
    await writeCog(path.join(files, 'small_20240301.tif'), { width, height: width, epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], bands: [band], nodata: 0 });
    const imp = xeo(['import', '--collection', 'SMALL', path.join(files, 'small_20240301.tif')], { dataDir: tempDir(), env });
    expect(imp.status, imp.stderr).toBe(0);
    const add = xeo(['users', 'add', 'alice', '--password', 'secret'], { dataDir: tempDir(), env });
    expect(add.status, add.stderr).toBe(0);
    [a, b] = await Promise.all([startServer(env), startServer(env)]);
    token = await login(a, 'alice', 'secret');
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    for (const s of [a, b]) if (s) removeDir(s.dataDir);
    pg?.remove();
    removeDir(files);
  });

  const auth = () => ({ authorization: token, 'content-type': 'application/json' });

  it('a token issued by one node is good on the other', async () => {
    const me = await http('GET', `${b.base}/me`, { headers: auth() });
    expect(me.status).toBe(200);
    expect(me.json.user_id).toBe('alice');
  });

  it('both nodes sign with the same key and publish the same key set; a revocation reaches both at once', async () => {
    const [ka, kb] = await Promise.all([a, b].map((s) => http('GET', `${s.url}/.well-known/jwks.json`)));
    expect(ka.json.keys.length).toBeGreaterThan(0);
    expect(kb.json).toEqual(ka.json);
    // A token issued by b, used on both (each now trusts it from memory), then revoked by the
    // command line: the change feed tells both nodes, which refuse it at once.
    const raw = (await http('GET', `${b.url}/1.3.0/credentials/basic`, { headers: { authorization: basicHeader('alice', 'secret') } })).json.access_token;
    for (const s of [a, b]) expect((await http('GET', `${s.url}/1.3.0/me`, { token: `Bearer ${raw}` })).status).toBe(200);
    const r = xeo(['tokens', 'revoke', raw], { dataDir: tempDir(), env });
    expect(r.status, r.stderr).toBe(0);
    // The notice travels through the database: within moments, not after the minute a node trusts a token from memory.
    for (const s of [a, b]) {
      let r = await http('GET', `${s.url}/1.3.0/me`, { token: `Bearer ${raw}` });
      for (let i = 0; i < 30 && r.status === 200; i++) {
        await new Promise((done) => setTimeout(done, 100));
        r = await http('GET', `${s.url}/1.3.0/me`, { token: `Bearer ${raw}` });
      }
      expectError(r, 403, 'TokenInvalid');
    }
    // the other tokens of alice stay good
    expect((await http('GET', `${b.base}/me`, { headers: auth() })).status).toBe(200);
  });

  it('a stored process and a job written through one node are read through the other', async () => {
    const graph = { process_graph: { a: { process_id: 'absolute', arguments: { x: -3 }, result: true } } };
    expect((await http('PUT', `${a.base}/process_graphs/shared`, { headers: auth(), body: JSON.stringify(graph) })).status).toBe(200);
    const got = await http('GET', `${b.base}/process_graphs/shared`, { headers: auth() });
    expect(got.json.process_graph).toEqual(graph.process_graph);
    const job = await http('POST', `${b.base}/jobs`, { headers: auth(), body: JSON.stringify({ process: graph, title: 'from b' }) });
    expect(job.status).toBe(201);
    const id = job.headers['openeo-identifier'] ?? job.headers['xeo-identifier'];
    const seen = await http('GET', `${a.base}/jobs/${id}`, { headers: auth() });
    expect(seen.json.title).toBe('from b');
  });

  it('the compute threads of either node read the shared catalogue', async () => {
    expect((await http('GET', `${b.base}/collections/SMALL`)).status).toBe(200);
    const graph = {
      process_graph: {
        load: { process_id: 'load_collection', arguments: { id: 'SMALL', spatial_extent: { west: 600000, south: 5299360, east: 600640, north: 5300000, crs: 32633 }, temporal_extent: null } },
        mean: {
          process_id: 'reduce_dimension',
          arguments: { data: { from_node: 'load' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
        },
        save: { process_id: 'save_result', arguments: { data: { from_node: 'mean' }, format: 'JSON' }, result: true },
      },
    };
    const [ra, rb] = await Promise.all([a, b].map((s) => http('POST', `${s.base}/result`, { headers: auth(), body: JSON.stringify({ process: graph }) })));
    expect(ra.status, ra.text).toBe(200);
    expect(rb.status).toBe(200);
    // The pixels as imported: 100 + column + row (64 x 64, one date, so the mean is the value).
    const cube = JSON.parse(ra.text);
    expect(cube.data[0][0].slice(0, 3)).toEqual([100, 101, 102]);
    expect(cube.data[0][63][63]).toBe(226);
    expect(rb.body.toString()).toBe(ra.body.toString());
  });

  /** A tile of the SMALL collection, and a service drawing it. */
  const [w, south, e, n] = transformBox([600000, 5299360, 600640, 5300000], 32633, 4326);
  const z = 15;
  const x = Math.floor((((w + e) / 2 + 180) / 360) * 2 ** z);
  const lat = (((south + n) / 2) * Math.PI) / 180;
  const y = Math.floor(((1 - Math.log(Math.tan(lat) + 1 / Math.cos(lat)) / Math.PI) / 2) * 2 ** z);
  const smallService = () => ({
    type: 'XYZ',
    configuration: { colormap: 'viridis', min: 100, max: 230 },
    process: {
      process_graph: {
        load: { process_id: 'load_collection', arguments: { id: 'SMALL', spatial_extent: null, temporal_extent: null } },
        r: {
          process_id: 'reduce_dimension',
          arguments: { data: { from_node: 'load' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
        },
        save: { process_id: 'save_result', arguments: { data: { from_node: 'r' }, format: 'PNG' }, result: true },
      },
    },
  });

  it('a service changed through one node is drawn new by the other at once, not after its cache expires', async () => {
    const created = await http('POST', `${a.base}/services`, { headers: auth(), body: JSON.stringify(smallService()) });
    expect(created.status, created.text).toBe(201);
    const id = created.headers['xeo-identifier'];
    const tile = () => http('GET', `${b.url}/xyz/${id}/${z}/${x}/${y}.png`);
    const before = await tile();
    expect(before.status, before.text).toBe(200);
    expect((await tile()).headers.etag).toBe(before.headers.etag); // cached on b
    const patched = await http('PATCH', `${a.base}/services/${id}`, { headers: auth(), body: JSON.stringify({ configuration: { colormap: 'greys', min: 100, max: 230 } }) });
    expect(patched.status, patched.text).toBe(204);
    // b hears of it through the database within moments (its own cache would keep the old tile for 15 s).
    let after = await tile();
    for (let i = 0; i < 10 && after.headers.etag === before.headers.etag; i++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await tile();
    }
    expect(after.status).toBe(200);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect(after.body.equals(before.body)).toBe(false);
  });

  it('failed sign-ins count on every node together, and a wait decided on one holds on the other', async () => {
    const signIn = (node: TestServer, password: string, from: string) =>
      http('GET', `${node.base}/credentials/basic`, { headers: { authorization: basicHeader('alice', password), 'x-forwarded-for': from, origin: 'https://x.example' } });
    const attacker = '203.0.113.50';
    // Four failures, two on each node: neither node alone has seen its limit of four.
    for (const node of [a, b, a, b]) expectError(await signIn(node, 'guess', attacker), 403, 'CredentialsInvalid');
    const held = await signIn(a, 'guess', attacker);
    expectError(held, 429, 'TooManyRequests');
    expectRetryAfter(held.headers['retry-after']);
    // B heard of the wait: even the right password from that address waits there.
    expectError(await signIn(b, 'secret', attacker), 429, 'TooManyRequests');
    // The real user, from another address, signs in on either node.
    for (const node of [a, b]) expect((await signIn(node, 'secret', '198.51.100.70')).status).toBe(200);
  });

  it('a node that starts settles only its own interrupted runs, not a run another node is doing', async () => {
    const records = await openStore({ dataDir: tempDir(), databaseUrl: env.XEO_DATABASE_URL });
    await records.jobs.create({ id: 'elsewhere-job', userId: 'alice', title: null, description: null, process: { process_graph: {} }, plan: 'free', budget: null, logLevel: 'info' });
    await records.jobQueue.enqueue('elsewhere-job');
    expect((await records.jobQueue.claim('another-node'))?.id).toBe('elsewhere-job');
    await records.close();
    const c = await startServer(env);
    try {
      const job = await http('GET', `${c.base}/jobs/elsewhere-job`, { headers: auth() });
      expect(job.json.status).toBe('running');
    } finally {
      await c.stop();
      removeDir(c.dataDir);
    }
  });

  it('a hung database (SIGSTOP): what needs records answers 503 within its deadline, while cached tiles and discovery stay fast; then work resumes', async () => {
    const created = await http('POST', `${b.base}/services`, { headers: auth(), body: JSON.stringify(smallService()) });
    expect(created.status, created.text).toBe(201);
    const tile = `${b.url}/xyz/${created.headers['xeo-identifier']}/${z}/${x}/${y}.png`;
    expect((await http('GET', tile)).status).toBe(200);
    pg.freeze();
    try {
      const records = watched(http('GET', `${b.base}/jobs`, { headers: auth() }));
      await new Promise((r) => setTimeout(r, 200));
      // While that request waits on the database: the cached tile, discovery and a signed-in
      // request that needs no records answer, and that one still waits (a frozen event loop would
      // hold them all until the database's deadline).
      const fast = await Promise.all([http('GET', tile), http('GET', `${b.base}/`), http('GET', `${b.base}/processes`), http('GET', `${b.base}/file_formats`)]);
      for (const f of fast) expect(f.status).toBe(200);
      expect(records.settled, 'the request that needs records still waits').toBe(false);
      // It ends at the database's deadline with a 503 to retry, not a hang.
      const r = await records.promise;
      expectError(r, 503, 'InfrastructureBusy');
      expectRetryAfter(r.headers['retry-after']);
    } finally {
      pg.thaw();
    }
    expect((await http('GET', `${b.base}/jobs`, { headers: auth() })).status).toBe(200);
  });

  it('a slow database (a proxy of ours that delays every packet): records come late or, past the deadline, as a 503; cached tiles never wait', async () => {
    const target = new URL(env.XEO_DATABASE_URL);
    const proxy = await startDelayProxy({ host: target.hostname, port: Number(target.port) }, 0);
    const c = await startServer({ ...env, XEO_DATABASE_URL: `postgres://postgres@${proxy.host}:${proxy.port}${target.pathname}` });
    try {
      const created = await http('POST', `${c.base}/services`, { headers: auth(), body: JSON.stringify(smallService()) });
      expect(created.status, created.text).toBe(201);
      const tile = `${c.url}/xyz/${created.headers['xeo-identifier']}/${z}/${x}/${y}.png`;
      expect((await http('GET', tile)).status).toBe(200);
      const timed = async (url: string, headers: Record<string, string> = {}) => {
        const t0 = performance.now();
        const r = await http('GET', url, { headers });
        return { r, ms: performance.now() - t0 };
      };
      // 150 ms each way: a request that reads one record takes a round trip longer, and still answers.
      proxy.delayMs = 150;
      const slow = await timed(`${c.base}/jobs`, auth());
      expect(slow.r.status).toBe(200);
      expect(slow.ms).toBeGreaterThan(300);
      // 3 s each way, past the 2 s deadline: 503, while the cached tile answers before it.
      proxy.delayMs = 3000;
      const late = watched(http('GET', `${c.base}/jobs`, { headers: auth() }));
      const cached = await http('GET', tile);
      expect(cached.status).toBe(200);
      expect(late.settled, 'the request that needs records still waits').toBe(false);
      expectError(await late.promise, 503, 'InfrastructureBusy');
      proxy.delayMs = 0;
      expect((await http('GET', `${c.base}/jobs`, { headers: auth() })).status).toBe(200);
    } finally {
      await c.stop();
      removeDir(c.dataDir);
      await proxy.close();
    }
  });

  it('without the database: a JSON 503 with Retry-After and CORS, no crash; then work resumes', async () => {
    pg.stop();
    try {
      const r = await http('GET', `${b.base}/process_graphs`, { headers: { ...auth(), origin: 'https://editor.example' } });
      expectError(r, 503, 'InfrastructureBusy');
      expectRetryAfter(r.headers['retry-after']);
      expect(r.headers['access-control-allow-origin']).toBeDefined();
      // Discovery needs no records and stays up.
      expect((await http('GET', `${b.base}/processes`)).status).toBe(200);
    } finally {
      pg.start();
    }
    const again = await http('GET', `${b.base}/process_graphs`, { headers: auth() });
    expect(again.status).toBe(200);
    expect(again.json.processes.map((p: { id: string }) => p.id)).toEqual(['shared']);
  });
});
