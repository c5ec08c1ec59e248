// A graceful stop over HTTP: on SIGTERM the node says it is not ready (503 on a connection opened
// before), takes no new connection, lets a /result, an upload and a tile render in flight finish,
// and exits 0; a request still in flight after XEO_DRAIN_SECONDS is cut and the node exits 0 all
// the same. (A worker handing its chunks back to the queue is tested in cluster.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'undici';
import { addUser, http, login, removeDir, startServer, type TestServer } from './helpers.js';
import { DEMO_COLLECTION, demoDataDir } from './demo-data.js';
import { tileAt } from '../src/tiles/tile-grid.js';

const KB = 1024;
let dataDir: string;
let s: TestServer;
let token: string;
let service: string;

const exited = (server: TestServer) => new Promise<number | null>((resolve) => (server.proc.exitCode !== null ? resolve(server.proc.exitCode) : server.proc.once('exit', (code) => resolve(code))));

/** An upload body that sends `chunks` pieces of 64 KB, `pauseMs` apart, counting what it sent. */
function slowBody(chunks: number, pauseMs: number, sent: { n: number }): AsyncIterable<Uint8Array> {
  return (async function* () {
    for (let i = 0; i < chunks; i++) {
      if (i) await new Promise((r) => setTimeout(r, pauseMs));
      sent.n++;
      yield Buffer.alloc(64 * KB, i);
    }
  })();
}

beforeAll(async () => {
  dataDir = await demoDataDir();
  s = await startServer({ XEO_DRAIN_SECONDS: '30', XEO_COMPUTE_THREADS: '1', XEO_SYNC_MAX_VALUES: String(128 * 1024 * 1024) }, dataDir);
  addUser(dataDir, 'alice', 'pa');
  token = await login(s, 'alice', 'pa');
  const r = await http('POST', `${s.base}/services`, {
    headers: { authorization: token, 'content-type': 'application/json' },
    body: JSON.stringify({
      type: 'XYZ',
      process: {
        process_graph: {
          l: { process_id: 'load_collection', arguments: { id: DEMO_COLLECTION, spatial_extent: null, temporal_extent: ['2024-06-01', '2024-07-01'], bands: ['B04', 'B08'] } },
          n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } }, result: true },
        },
      },
      configuration: { colormap: 'ndvi', min: -1, max: 1 },
    }),
  });
  expect(r.status, r.text).toBe(201);
  service = r.headers['xeo-identifier'];
}, 180_000);

afterAll(async () => {
  await s?.stop();
  removeDir(dataDir);
});

describe('SIGTERM', () => {
  it('turns readiness to 503, refuses new connections, lets a /result, an upload and a tile in flight finish, and exits 0', async () => {
    // A connection opened before the stop, as a load balancer keeps one.
    const kept = new Client(s.url, { pipelining: 1, keepAliveTimeout: 60_000 });
    try {
      expect((await kept.request({ path: '/readyz', method: 'GET' })).statusCode).toBe(200);
      // The season's highest NDVI over the whole scene at full resolution: a few seconds of compute.
      const endedAt = (p: Promise<unknown>) => p.then(() => performance.now());
      const result = http('POST', `${s.base}/result`, {
        headers: { authorization: token, 'content-type': 'application/json' },
        body: JSON.stringify({
          process: {
            process_graph: {
              l: { process_id: 'load_collection', arguments: { id: DEMO_COLLECTION, spatial_extent: null, temporal_extent: null, bands: ['B04', 'B08'] } },
              n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
              m: {
                process_id: 'reduce_dimension',
                arguments: { data: { from_node: 'n' }, dimension: 't', reducer: { process_graph: { x: { process_id: 'max', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
              },
              s: { process_id: 'save_result', arguments: { data: { from_node: 'm' }, format: 'GTiff' }, result: true },
            },
          },
        }),
      });
      const sent = { n: 0 };
      const CHUNKS = 30;
      const upload = http('PUT', `${s.base}/files/drain/upload.bin`, { headers: { authorization: token, 'content-type': 'application/octet-stream' }, body: slowBody(CHUNKS, 100, sent) });
      const t = tileAt(16.745, 47.93, 12);
      const tile = http('GET', `${s.url}/xyz/${service}/${t.z}/${t.x}/${t.y}.png`);
      while (sent.n < 3) await new Promise((r) => setTimeout(r, 20));
      // One compute thread: the tile waits behind the /result, so both are surely in flight.
      const ends = Promise.all([endedAt(result), endedAt(upload), endedAt(tile)]);
      const exit = exited(s);
      const killedAt = performance.now();
      s.proc.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 150));

      // Not ready at once, on the connection that was open...
      const ready = await kept.request({ path: '/readyz', method: 'GET' });
      const readyBody = (await ready.body.json()) as { status: string; not_ready: string[] };
      expect(ready.statusCode).toBe(503);
      expect(readyBody.status).toBe('draining');
      // ...while a new connection is refused (a client of its own: a pooled one may reuse a connection).
      const fresh = new Client(s.url);
      await expect(fresh.request({ path: '/healthz', method: 'GET' })).rejects.toThrow();
      // the client never connected: closing it has nothing to report
      await fresh.close().catch(() => {});
      expect(sent.n, 'the upload is still being sent').toBeLessThan(CHUNKS);

      const [r, u, tl] = await Promise.all([result, upload, tile]);
      for (const at of await ends) expect(at, 'answered after the SIGTERM').toBeGreaterThan(killedAt);
      expect(r.status, r.text.slice(0, 300)).toBe(200);
      expect(r.body.subarray(0, 4).toString('latin1')).toBe('II*\0');
      expect(u.status, u.text).toBe(200);
      expect(tl.status).toBe(200);
      expect(tl.body.subarray(1, 4).toString('latin1')).toBe('PNG');
      expect(await exit).toBe(0);
      const file = path.join(dataDir, 'files', 'alice', 'drain', 'upload.bin');
      expect(existsSync(file)).toBe(true);
      expect(statSync(file).size).toBe(CHUNKS * 64 * KB);
      const out = s.output();
      expect(out).toMatch(/SIGTERM received/);
      expect(out).toMatch(/stopping: not ready, no new connections/);
      expect(out).toMatch(/every request in flight has finished/);
      expect(out).toMatch(/\[xeo\] stopped/);
    } finally {
      // the server is gone: closing its connection has nothing to report
      await kept.close().catch(() => {});
    }
  });

  it('cuts what is still in flight after XEO_DRAIN_SECONDS and exits 0 all the same', async () => {
    s = await startServer({ XEO_DRAIN_SECONDS: '1', XEO_COMPUTE_THREADS: '1' }, dataDir);
    const sent = { n: 0 };
    // An upload that would take a minute.
    const upload = http('PUT', `${s.base}/files/drain/slow.bin`, { headers: { authorization: await login(s, 'alice', 'pa'), 'content-type': 'application/octet-stream' }, body: slowBody(600, 100, sent) }).catch(
      (e: Error) => e,
    );
    while (sent.n < 2) await new Promise((r) => setTimeout(r, 20));
    const exit = exited(s);
    s.proc.kill('SIGTERM');
    expect(await exit).toBe(0);
    // The server is gone while the client is still sending: it did not wait for the upload to end.
    expect(sent.n, 'chunks sent when the server had exited').toBeLessThan(600);
    expect(await upload).toBeInstanceOf(Error);
    expect(s.output()).toMatch(/1 request\(s\) still in flight after 1 s are cut short/);
    // A cut upload leaves no file behind.
    expect(existsSync(path.join(dataDir, 'files', 'alice', 'drain', 'slow.bin'))).toBe(false);
  });
});
