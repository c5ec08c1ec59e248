// Running Xeo in production, over HTTP against one server on the demo collection with JSON logs,
// an access log and /metrics on a port of its own: liveness and readiness (a hung identity
// provider of our own on loopback makes /readyz answer 503 within its deadline, with one probe at
// a time), request ids, a real Prometheus (Debian's) scraping the metrics and read back through its
// query API, and the logs: JSON lines carrying request and job ids, never a token, a password or a
// signature.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { addUser, basicHeader, expectError, http, login, removeDir, startServer, type TestServer } from './helpers.js';
import { DEMO_COLLECTION, demoDataDir } from './demo-data.js';
import { openStore } from '../src/store/db.js';
import { RangeServer } from './support/range-server.js';
import { hasPrometheus, startPrometheus, type PrometheusServer } from '../bench/prometheus.js';
import { describeWithTool } from './system-tools.js';
import { tileAt } from '../src/tiles/tile-grid.js';
import type { ItemMeta } from '../src/core/catalog.js';

/** An identity provider's discovery document, of our own on loopback: answering, failing or hung. */
class IdentityProvider {
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  requests = 0;
  /** Hung requests that got an answer after all (none should: they are only ever dropped). */
  answeredWhileHung = 0;
  url = '';
  private server: Server | null = null;
  private hung: ServerResponse[] = [];

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      this.requests++;
      if (this.mode === 'hang') {
        res.on('finish', () => this.answeredWhileHung++);
        return void this.hung.push(res);
      }
      if (this.mode === 'fail') return void res.writeHead(500).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer: this.url, jwks_uri: `${this.url}/jwks` }));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const r of this.hung) r.destroy();
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

const JUNE = ['2024-06-01', '2024-07-01'];
const X0 = 620000;
const Y0 = 5320000;
/** 256 x 256 px of the demo scene, as a UTM bbox on pixel edges. */
const BBOX = { west: X0 + 5120, east: X0 + 7680, north: Y0 - 5120, south: Y0 - 7680, crs: 32633 };
const NDVI_TILE = tileAt(16.745, 47.93, 13);

let s: TestServer;
let token: string;
let metricsUrl: string;
const idp = new IdentityProvider();
const remote = new RangeServer();
let items: ItemMeta[];
/** Secrets the logs must never show, gathered as the tests make them. */
const secrets: string[] = [];

beforeAll(async () => {
  await idp.start();
  const dataDir = await demoDataDir();
  const records = await openStore(dataDir);
  items = await records.collections.items(DEMO_COLLECTION);
  await records.close();
  // A STAC ItemCollection of two June dates whose assets are the demo COGs, read with ranges.
  const june = items.filter((it) => it.datetime >= JUNE[0] && it.datetime < JUNE[1]);
  const features = june.map((it) => {
    const assets: Record<string, unknown> = {};
    for (const band of ['B04', 'B08']) {
      const name = `/data/${it.datetime.slice(0, 10)}/${band}.tif`;
      remote.file(name, it.assets[band].href);
      assets[band] = { href: `..${name}`, type: 'image/tiff; application=geotiff; profile=cloud-optimized', roles: ['data'] };
    }
    return { type: 'Feature', stac_version: '1.0.0', id: it.datetime, properties: { datetime: it.datetime }, geometry: null, assets, links: [] };
  });
  remote.json('/stac/items.json', { type: 'FeatureCollection', features }, 'application/geo+json');
  await remote.start();
  s = await startServer(
    {
      XEO_LOG_FORMAT: 'json',
      XEO_ACCESS_LOG: 'true',
      XEO_METRICS_PORT: '0',
      XEO_COMPUTE_THREADS: '1',
      XEO_OUTBOUND_ALLOW: '127.0.0.1',
      XEO_OIDC_PROVIDERS: JSON.stringify([{ id: 'test', issuer: idp.url, title: 'Test provider' }]),
    },
    dataDir,
  );
  const port = /Metrics, health and readiness on http:\/\/127\.0\.0\.1:(\d+)/.exec(s.output())?.[1];
  expect(port, s.output()).toBeDefined();
  metricsUrl = `http://127.0.0.1:${port}`;
  addUser(s.dataDir, 'alice', 'correct horse battery');
  token = await login(s, 'alice', 'correct horse battery');
  secrets.push(token.slice('Bearer basic//'.length), 'correct horse battery');
}, 180_000);

afterAll(async () => {
  await s?.stop();
  if (s) removeDir(s.dataDir);
  await remote.stop();
  await idp.stop();
});

const json = () => ({ authorization: token, 'content-type': 'application/json' });

/** A small batch job run to the end and its result downloaded; once, for the tests that look at it. */
let jobRun: Promise<string> | undefined;
const finishedJob = () =>
  (jobRun ??= (async () => {
    const job = await http('POST', `${s.base}/jobs`, {
      headers: json(),
      body: JSON.stringify({
        process: {
          process_graph: {
            l: { process_id: 'load_collection', arguments: { id: DEMO_COLLECTION, spatial_extent: BBOX, temporal_extent: JUNE, bands: ['B04', 'B08'] } },
            n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
            s: { process_id: 'save_result', arguments: { data: { from_node: 'n' }, format: 'GTiff' }, result: true },
          },
        },
      }),
    });
    expect(job.status, job.text).toBe(201);
    const id: string = job.headers['xeo-identifier'];
    expect((await http('POST', `${s.base}/jobs/${id}/results`, { headers: { authorization: token } })).status).toBe(202);
    for (let i = 0; ; i++) {
      const st = (await http('GET', `${s.base}/jobs/${id}`, { headers: { authorization: token } })).json.status;
      if (st === 'finished') break;
      expect(['queued', 'running'], `job status after ${i} polls`).toContain(st);
      expect(i).toBeLessThan(600);
      await new Promise((r) => setTimeout(r, 100));
    }
    const doc = await http('GET', `${s.base}/jobs/${id}/results`, { headers: { authorization: token } });
    const href: string = doc.json.assets['result.tif'].href;
    secrets.push(new URL(href).searchParams.get('signature')!);
    expect((await http('GET', href)).status).toBe(200);
    return id;
  })());

describe('health and readiness', () => {
  it('answer on the API port and on the metrics port, to GET and HEAD, and are not listed in GET /', async () => {
    for (const base of [s.url, metricsUrl]) {
      const live = await http('GET', `${base}/healthz`);
      expect(live.status).toBe(200);
      expect(live.json).toEqual({ status: 'ok' });
      const ready = await http('GET', `${base}/readyz`);
      expect(ready.status, ready.text).toBe(200);
      expect(ready.json.status).toBe('ready');
      const names = ready.json.components.map((c: { name: string }) => c.name);
      expect(names).toEqual(['records', 'compute threads', 'job threads', 'identity provider test']);
      for (const c of ready.json.components) {
        expect(c.status).toBe('ready');
        expect(typeof c.latency_ms).toBe('number');
      }
      expect(ready.json.components[0]).toMatchObject({ kind: 'records', engine: 'sqlite' });
      for (const p of ['/healthz', '/readyz']) {
        const head = await http('HEAD', `${base}${p}`);
        expect(head.status).toBe(200);
        expect(head.body.length).toBe(0);
        expect(Number(head.headers['content-length'])).toBeGreaterThan(0);
        const post = await http('POST', `${base}${p}`);
        expectError(post, 405, 'MethodNotAllowed');
        expect(post.json.id).toBe(post.headers['x-request-id']);
      }
    }
    // The metrics port serves nothing else (an error like every other of ours).
    expectError(await http('GET', `${metricsUrl}/1.2.0/`), 404, 'NotFound');
    // /metrics has a port of its own here, so the API port has none.
    expect((await http('GET', `${s.url}/metrics`)).status).toBe(404);
    expect((await http('GET', `${metricsUrl}/metrics`)).text).toMatch(/^# HELP /m);
    const root = await http('GET', `${s.base}/`);
    const paths = root.json.endpoints.map((e: { path: string }) => e.path);
    for (const p of ['/healthz', '/readyz', '/metrics']) expect(paths).not.toContain(p);
  });

  it('a hung identity provider makes /readyz answer 503 naming it within the deadline, with one probe at a time', async () => {
    // Past the second the last answer is kept.
    await new Promise((r) => setTimeout(r, 1100));
    idp.mode = 'hang';
    const before = idp.requests;
    const answers = await Promise.all(Array.from({ length: 20 }, () => http('GET', `${s.url}/readyz`)));
    // Every check answered while the provider still had not: none waited for the hung probe, and the
    // server's own measure says each answer came at the deadline, not later (no clock in this test).
    expect(idp.answeredWhileHung).toBe(0);
    for (const a of answers) {
      expect(a.status).toBe(503);
      expect(a.json.status).toBe('not ready');
      expect(a.json.not_ready).toEqual(['identity provider test']);
      expect(a.json.components.find((c: { name: string }) => c.name === 'identity provider test').detail).toMatch(/no answer within 2000 ms/);
    }
    // Twenty checks, one probe.
    expect(idp.requests - before).toBe(1);
    // Health never asks a component.
    expect((await http('GET', `${s.url}/healthz`)).status).toBe(200);
    idp.mode = 'fail';
    await new Promise((r) => setTimeout(r, 1100));
    const failing = await http('GET', `${s.url}/readyz`);
    expect(failing.status).toBe(503);
    expect(failing.json.components.at(-1).detail).toMatch(/HTTP 500/);
    idp.mode = 'ok';
    await new Promise((r) => setTimeout(r, 1100));
    expect((await http('GET', `${s.url}/readyz`)).status).toBe(200);
  });
});

describe('request ids', () => {
  it('are in the answer header, the error id and the access log line', async () => {
    const missing = await http('GET', `${s.base}/jobs/nosuchjob`, { headers: { authorization: token } });
    expect(missing.status).toBe(404);
    const id = missing.headers['x-request-id'];
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(missing.json.id).toBe(id);
    const ok = await http('GET', `${s.base}/`);
    expect(ok.headers['x-request-id']).toMatch(/^[0-9a-f]{16}$/);
    expect(ok.headers['x-request-id']).not.toBe(id);
    await new Promise((r) => setTimeout(r, 200));
    const line = logLines().find((l) => l.req === id);
    expect(line, 'the access log line of the request').toMatchObject({ level: 'info', msg: expect.stringMatching(/^GET \/1\.2\.0\/jobs\/nosuchjob 404 /) });
  });
});

function logLines(): Record<string, any>[] {
  return s
    .output()
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

describeWithTool(hasPrometheus, 'Prometheus (Debian prometheus)', 'metrics', () => {
  let prom: PrometheusServer;
  afterAll(async () => prom?.stop());

  it('a real Prometheus scrapes /metrics: requests, tiles, render stages, threads, outbound reads, records, jobs, memory, event-loop lag', async () => {
    // Work to count: a service's tile rendered then served from the cache, a /result reading remote
    // COGs, a small batch job and the download of its result.
    const created = await http('POST', `${s.base}/services`, {
      headers: json(),
      body: JSON.stringify({
        type: 'XYZ',
        process: {
          process_graph: {
            l: { process_id: 'load_collection', arguments: { id: DEMO_COLLECTION, spatial_extent: null, temporal_extent: JUNE, bands: ['B04', 'B08'] } },
            n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } }, result: true },
          },
        },
        configuration: { colormap: 'ndvi', min: -1, max: 1 },
      }),
    });
    expect(created.status, created.text).toBe(201);
    const tile = `${s.url}/xyz/${created.headers['xeo-identifier']}/${NDVI_TILE.z}/${NDVI_TILE.x}/${NDVI_TILE.y}.png`;
    expect((await http('GET', tile)).status).toBe(200);
    expect((await http('GET', tile)).status).toBe(200);
    const stac = `${remote.url}/stac/items.json`;
    const result = await http('POST', `${s.base}/result`, {
      headers: json(),
      body: JSON.stringify({
        process: {
          process_graph: {
            l: { process_id: 'load_stac', arguments: { url: stac, spatial_extent: BBOX, temporal_extent: JUNE, bands: ['B04', 'B08'] } },
            s: { process_id: 'save_result', arguments: { data: { from_node: 'l' }, format: 'GTiff' }, result: true },
          },
        },
      }),
    });
    expect(result.status, result.text).toBe(200);
    await finishedJob();

    const port = new URL(metricsUrl).port;
    prom = await startPrometheus([`127.0.0.1:${port}`]);
    const value = async (expr: string) => (await prom.query(expr))[0]?.value;
    /** Polls until the series reaches `min` (Prometheus scrapes every second). */
    const atLeast = async (expr: string, min: number) => {
      let v: number | undefined;
      for (let i = 0; i < 150; i++) {
        v = await value(expr);
        if (v !== undefined && v >= min) return v;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`${expr} = ${v}, expected >= ${min}; targets: ${JSON.stringify(await prom.targets())}\n${prom.output()}`);
    };
    await atLeast('up{job="xeo"}', 1);
    await atLeast('xeo_tiles_total{layer="service",result="miss"}', 1);
    await atLeast('xeo_tiles_total{layer="service",result="hit"}', 1);
    await atLeast('sum(xeo_http_request_duration_seconds_count{family="tiles",method="GET",status_class="2xx"})', 2);
    await atLeast('sum(xeo_http_request_duration_seconds_count{family="result",method="POST",status_class="2xx"})', 1);
    await atLeast('sum(xeo_http_request_duration_seconds_count{family="jobs",status_class="4xx"})', 1);
    await atLeast('sum(xeo_http_request_duration_seconds_bucket{family="tiles",le="+Inf"})', 2);
    await atLeast('xeo_tile_render_stage_seconds_count{stage="kernel"}', 1);
    await atLeast('xeo_thread_tasks_total{pool="compute",outcome="ok"}', 2);
    await atLeast('xeo_thread_tasks_total{pool="jobs",outcome="ok"}', 1);
    await atLeast('xeo_compute_threads{state="idle"}', 1);
    await atLeast(`sum(xeo_outbound_requests_total{host="${new URL(remote.url).host}",kind="read",outcome="ok"})`, 2);
    await atLeast(`sum(xeo_outbound_bytes_total{kind="read"})`, 1000);
    await atLeast(`sum(xeo_outbound_requests_total{kind="document",outcome="ok"})`, 1);
    await atLeast('xeo_outbound_request_seconds_count{kind="read"}', 2);
    await atLeast('xeo_component_calls_total{component="records",outcome="ok"}', 10);
    await atLeast('xeo_component_call_seconds_count{component="records"}', 10);
    await atLeast('xeo_job_transitions_total{status="queued"}', 1);
    await atLeast('xeo_job_transitions_total{status="finished"}', 1);
    await atLeast('xeo_job_chunks_done_total', 1);
    await atLeast('xeo_jobs_queued', 0);
    await atLeast('xeo_component_ready{component="records"}', 1);
    await atLeast('xeo_tile_cache_entries', 1);
    await atLeast('process_resident_memory_bytes', 10e6);
    expect(await value('nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    // Every series of one family has the same bucket bounds, ending in +Inf.
    const buckets = await prom.query('xeo_http_request_duration_seconds_bucket{family="tiles",method="GET",status_class="2xx"}');
    expect(buckets.map((b) => b.metric.le).sort((a, b) => Number(a) - Number(b))).toContain('+Inf');
  });
});

describe('logs', () => {
  it('are JSON lines; job lines carry the job id; tokens, passwords and signatures never appear', async () => {
    // The job's lines and its download, whether or not the metrics test ran it first.
    const jobId = await finishedJob();
    // A failed sign-in and a bearer token that is not ours, so both reach the server.
    expect((await http('GET', `${s.base}/credentials/basic`, { headers: { authorization: basicHeader('alice', 'wrong-password-xyz') } })).status).toBe(403);
    expect((await http('GET', `${s.base}/me`, { headers: { authorization: 'Bearer basic//not-a-token-4711' } })).status).toBe(403);
    secrets.push('wrong-password-xyz', 'not-a-token-4711');
    await new Promise((r) => setTimeout(r, 300));
    const lines = logLines();
    for (const l of lines) {
      expect(typeof l.time).toBe('string');
      expect(['debug', 'info', 'warn', 'error']).toContain(l.level);
      expect(typeof l.msg).toBe('string');
    }
    const jobLines = lines.filter((l) => l.job === jobId).map((l) => l.msg);
    expect(jobLines).toContainEqual(expect.stringMatching(/^run 1 started on this node/));
    expect(jobLines).toContainEqual(expect.stringMatching(/^run 1 finished/));
    // The download went through the access log without its query (the signature).
    expect(lines.some((l) => /^GET \/[\d.]+\/download\/[^ ?]+\/result\.tif 200 /.test(l.msg) && l.msg.includes(jobId))).toBe(true);
    const out = s.output();
    expect(secrets.length).toBeGreaterThanOrEqual(5);
    for (const secret of secrets) expect(out.includes(secret), `a secret in the log: ${secret.slice(0, 4)}…`).toBe(false);
  });
});
