// One plain test per bug the fuzz suite found (issue 8), so each stays fixed whatever the fuzz
// generators draw in future: HEAD errors without bodies, prototype names in graphs, stack depth
// (long chains, deep JSON), answers that get through when the body is refused, tiny upload
// chunks, empty downloads, a PUT/DELETE race, bad tile names and encodings.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import net from 'node:net';
import { startServer, http, expectError, removeDir, addUser, login, type TestServer } from './helpers.js';
import { send } from './fuzz/raw-client.js';

let s: TestServer;
let token: string;
let port: number;
beforeAll(async () => {
  // Graphs may be as large as an operator allows; the evaluator must not be what limits them.
  s = await startServer({ XEO_MAX_GRAPH_NODES: '30000' });
  port = Number(new URL(s.url).port);
  addUser(s.dataDir, 'alice', 'pa');
  token = await login(s, 'alice', 'pa');
});
afterAll(async () => {
  await s.stop();
  removeDir(s.dataDir);
});

const graph = (g: unknown) => JSON.stringify({ process: { process_graph: g } });
const result = (g: unknown) => http('POST', `${s.base}/result`, { token, body: graph(g) });

/** Writes all of `payload` at once (as clients that send before they read do), then reads until the server closes. */
function exchange(payload: Buffer | string): Promise<string> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let got = '';
    sock.on('data', (d) => (got += d.toString('latin1')));
    sock.on('error', () => resolve(got));
    sock.on('close', () => resolve(got));
    sock.write(payload);
  });
}

/** Sends `first`, and `then` on the same connection once the first answer is whole; answers all that came back. */
function exchangeInTurn(first: Buffer, then: string): Promise<string> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let got = '';
    let sent = false;
    sock.on('data', (d) => {
      got += d.toString('latin1');
      const end = got.indexOf('\r\n\r\n');
      const length = /content-length: *(\d+)/i.exec(got.slice(0, end));
      if (!sent && end >= 0 && length && got.length >= end + 4 + Number(length[1])) {
        sent = true;
        sock.write(then);
      }
    });
    sock.on('error', () => resolve(got));
    sock.on('close', () => resolve(got));
    sock.write(first);
  });
}

describe('HTTP', () => {
  it('answers HEAD errors without a body, so the next answer on the connection is read right', async () => {
    const answer = await exchange('HEAD /1.2.0/nope HTTP/1.1\r\nHost: x\r\n\r\nGET /1.2.0/conformance HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const [first, second] = answer.split(/(?=HTTP\/1\.1 )/);
    expect(first).toMatch(/^HTTP\/1\.1 404 /);
    expect(first.endsWith('\r\n\r\n')).toBe(true);
    expect(second).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('delivers the answer to a refused request whose body it never read', async () => {
    const body = Buffer.alloc(2_000_000, 0x20);
    for (const auth of ['Bearer basic//wrong', token]) {
      const head = `PATCH /1.2.0/services/nope HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Length: ${body.length}\r\n\r\n`;
      // The next request follows the answer, not pipelined behind the body: uWS closes a connection
      // that pipelines a request while an asynchronous answer is pending (docs/api.md, Errors).
      const next = 'GET /1.2.0/conformance HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
      const answer = await exchangeInTurn(Buffer.concat([Buffer.from(head), body]), next);
      const statuses = answer.match(/HTTP\/1\.1 \d+/g) ?? [];
      expect(statuses[0]).toBe(auth === token ? 'HTTP/1.1 404' : 'HTTP/1.1 403');
      // uWS 20.57 keeps the connection in most runs and sometimes closes it after such an answer
      // (under load; not understood yet): the answer itself must always arrive, whole.
      if (statuses.length > 1) expect(statuses).toEqual([statuses[0], 'HTTP/1.1 200']);
    }
  });

  it('refuses JSON nested more than 1000 levels deep, and stores and answers 999 levels', async () => {
    const body = (n: number) => `{"process_graph":{"a":{"process_id":"add","arguments":{"x":1,"y":2},"result":true}},"examples":${'['.repeat(n - 1)}${']'.repeat(n - 1)}}`;
    expectError(await http('PUT', `${s.base}/process_graphs/deep`, { token, body: body(1001) }), 400, 'JsonInvalid');
    expectError(await http('PUT', `${s.base}/process_graphs/deep`, { token, body: body(10_000) }), 400, 'JsonInvalid');
    expect((await http('PUT', `${s.base}/process_graphs/deep`, { token, body: body(999) })).status).toBe(200);
    expect((await http('GET', `${s.base}/process_graphs/deep`, { token })).status).toBe(200);
  });
});

describe('process graphs', () => {
  it('treats prototype member names as the unknown names they are', async () => {
    for (const id of ['valueOf', 'constructor', '__proto__', 'toString']) {
      const g = { a: { process_id: 'add', arguments: { x: { from_node: id }, y: 1 }, result: true } };
      expectError(await result(g), 400, 'ProcessGraphInvalid');
      expect((await http('POST', `${s.base}/validation`, { body: graph(g) })).json.errors[0].code).toBe('ProcessGraphInvalid');
    }
    expectError(await result({ a: { process_id: 'add', arguments: { x: { from_parameter: 'constructor' }, y: 1 }, result: true } }), 400, 'ProcessParameterMissing');
  });

  it('runs a chain of 20,000 nodes', async () => {
    const g: Record<string, unknown> = { n0: { process_id: 'add', arguments: { x: 1, y: 1 } } };
    for (let i = 1; i < 20_000; i++) g[`n${i}`] = { process_id: 'add', arguments: { x: { from_node: `n${i - 1}` }, y: 1 } };
    (g.n19999 as { result?: boolean }).result = true;
    const r = await result(g);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toBe(20_001);
  });
});

describe('files', () => {
  it('takes a 2 MB upload in 7-byte chunks quickly and intact', async () => {
    const data = Buffer.alloc(2_000_000);
    for (let i = 0; i < data.length; i++) data[i] = i % 251;
    const t0 = performance.now();
    const r = await send(port, { method: 'PUT', target: '/1.2.0/files/tiny-chunks.bin', headers: [['Authorization', token]], body: data, chunked: 7 });
    expect(r.status, r.body.toString()).toBe(200);
    expect(performance.now() - t0).toBeLessThan(5000);
    expect((await http('GET', `${s.base}/files/tiny-chunks.bin`, { token })).body.equals(data)).toBe(true);
  });

  it('downloads an empty file at once', async () => {
    expect((await http('PUT', `${s.base}/files/empty.txt`, { token, body: '' })).status).toBe(200);
    const r = await send(port, { method: 'GET', target: '/1.2.0/files/empty.txt', headers: [['Authorization', token]] }, 5000);
    expect(r.status).toBe(200);
    expect(r.headers['content-length']).toBe('0');
  });

  it('never fails an upload because a delete in the same folder pruned it', async () => {
    const statuses = new Set<number>();
    await Promise.all(
      Array.from({ length: 6 }, async (_, worker) => {
        for (let i = 0; i < 40; i++) {
          statuses.add((await http('PUT', `${s.base}/files/race/deep/f${worker % 2}.txt`, { token, body: 'x' })).status);
          statuses.add((await http('DELETE', `${s.base}/files/race/deep/f${(worker + 1) % 2}.txt`, { token })).status);
        }
      }),
    );
    expect([...statuses].sort()).toEqual(expect.arrayContaining([200]));
    expect(
      [...statuses].every((x) => [200, 204, 404].includes(x)),
      [...statuses].join(),
    ).toBe(true);
  });
});

describe('names in public URLs', () => {
  it('answers tile names with two endings or odd endings 400 TileInvalid, and badly encoded result links 404', async () => {
    for (const y of ['1.png.png', '0.constructor', '0.__proto__', '0.toString']) expectError(await http('GET', `${s.url}/xyz/some-service/1/0/${y}`), 400, 'TileInvalid');
    expectError(await http('GET', `${s.base}/download/j-x/%u002e?expires=1&signature=x`), 404, 'NotFound');
  });

  it('refuses configuration members named like prototype members', async () => {
    const body = { type: 'XYZ', configuration: { constructor: 1 }, process: { process_graph: { a: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } } } };
    expectError(await http('POST', `${s.base}/services`, { token, body: JSON.stringify(body) }), 400, 'ServiceConfigUnsupported');
  });
});
