// HTTP behaviour shared by all endpoints: CORS on every answer, preflights, body limits and
// parsing, aborted requests, localized errors, 405.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import net from 'node:net';
import { startServer, http, expectError, removeDir, addUser, login, type TestServer } from './helpers.js';

let s: TestServer;
let token: string;
beforeAll(async () => {
  s = await startServer({ XEO_MAX_BODY_BYTES: '65536' });
  addUser(s.dataDir, 'alice', 'secret-a');
  token = await login(s, 'alice', 'secret-a');
});
afterAll(async () => {
  await s.stop();
  removeDir(s.dataDir);
});

/** Sends raw bytes over a socket and returns what came back until the server closed or went quiet. */
function raw(payload: string | Buffer, opts: { endAfterWrite?: boolean; waitMs?: number } = {}): Promise<string> {
  const { port, hostname } = new URL(s.url);
  return new Promise((resolve) => {
    const sock = net.connect(Number(port), hostname);
    let got = '';
    sock.on('data', (d) => (got += d));
    sock.on('error', () => resolve(got));
    sock.on('close', () => resolve(got));
    sock.write(payload);
    if (opts.endAfterWrite) sock.end();
    setTimeout(() => {
      sock.destroy();
      resolve(got);
    }, opts.waitMs ?? 1500);
  });
}

describe('CORS', () => {
  it('sends the 1.x CORS headers on successes, errors and 404s', async () => {
    for (const url of [`${s.base}/`, `${s.base}/me`, `${s.base}/nope`, `${s.url}/.well-known/xeo`, `${s.url}/nothing`]) {
      const r = await http('GET', url, { headers: { origin: 'https://editor.example' } });
      expect(r.headers['access-control-allow-origin'], url).toBe('*');
      expect(r.headers['access-control-expose-headers'], url).toBe('Link, Location, Xeo-Costs, Xeo-Identifier, X-Request-Id');
      expect(r.headers['access-control-allow-credentials'], url).toBeUndefined();
    }
  });

  it('answers preflights with 204, the methods of that path and the allowed headers', async () => {
    const r = await http('OPTIONS', `${s.base}/process_graphs/abc`, {
      headers: { origin: 'https://editor.example', 'access-control-request-method': 'PUT', 'access-control-request-headers': 'authorization,content-type,x-trace' },
    });
    expect(r.status).toBe(204);
    expect(r.body.length).toBe(0);
    expect(r.headers['access-control-allow-methods']).toBe('OPTIONS, GET, PUT, PATCH, DELETE');
    expect(r.headers['access-control-allow-headers']).toMatch(/Authorization/);
    expect(r.headers['access-control-allow-headers']).toMatch(/Content-Type/);
    expect(r.headers['access-control-allow-headers']).toMatch(/x-trace/);
    expect(r.headers['access-control-allow-origin']).toBe('*');
    // nested file paths and endpoints we do not offer still pass the preflight
    expect((await http('OPTIONS', `${s.base}/files/a/b/c.txt`)).headers['access-control-allow-methods']).toBe('OPTIONS, GET, PUT, DELETE');
    expect((await http('OPTIONS', `${s.base}/jobs`)).status).toBe(204);
    expect((await http('OPTIONS', `${s.url}/.well-known/xeo`)).status).toBe(204);
  });

  it('echoes the Origin with credentials for 1.0.0-rc.2 and sends nothing without an Origin', async () => {
    const withOrigin = await http('GET', `${s.url}/1.0.0-rc.2/nope`, { headers: { origin: 'https://editor.example' } });
    expect(withOrigin.status).toBe(404);
    expect(withOrigin.headers['access-control-allow-origin']).toBe('https://editor.example');
    expect(withOrigin.headers['access-control-allow-credentials']).toBe('true');
    expect(withOrigin.headers['access-control-expose-headers']).toContain('Xeo-Identifier');
    const without = await http('GET', `${s.url}/1.0.0-rc.2/`);
    expect(without.status).toBe(200);
    expect(without.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('request bodies', () => {
  it('rejects malformed JSON with JsonInvalid and a missing body with BodyMissing', async () => {
    const put = (body: string) => http('PUT', `${s.base}/process_graphs/x1`, { token, body, headers: { 'content-type': 'application/json' } });
    expectError(await put('{"process_graph": '), 400, 'JsonInvalid');
    expectError(await put('[1,2]'), 400, 'JsonInvalid');
    expectError(await put(''), 400, 'BodyMissing');
    expectError(await http('PUT', `${s.base}/process_graphs/x1`, { token, body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]) }), 400, 'JsonInvalid');
    expectError(await put('['.repeat(60000)), 400, 'JsonInvalid');
  });

  it('refuses a declared oversize body with 413 without reading it', async () => {
    const head = `PUT /1.2.0/process_graphs/x2 HTTP/1.1\r\nHost: x\r\nAuthorization: ${token}\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n`;
    const answer = await raw(head);
    expect(answer).toMatch(/^HTTP\/1.1 413/);
    expect(answer).toContain('"code":"PayloadTooLarge"');
    expect(answer).toContain('Access-Control-Allow-Origin: *');
  });

  it('stops a chunked body at the limit with 413', async () => {
    async function* chunks() {
      for (let i = 0; i < 200; i++) yield Buffer.alloc(4096, 32);
    }
    const r = await http('PUT', `${s.base}/process_graphs/x3`, { token, body: chunks(), headers: { 'content-type': 'application/json' } }).catch((e) => e);
    // The server may cut the connection while the client still sends; if an answer arrives, it is 413.
    if (!(r instanceof Error)) expectError(r, 413, 'PayloadTooLarge');
    expect((await http('GET', `${s.base}/`)).status).toBe(200);
  });

  it('survives clients that vanish mid-body and mid-download', async () => {
    const head = `PUT /1.2.0/process_graphs/x4 HTTP/1.1\r\nHost: x\r\nAuthorization: ${token}\r\nContent-Length: 5000\r\n\r\n{"process_graph":`;
    await raw(head, { endAfterWrite: true, waitMs: 300 });
    await raw(`GET /1.2.0/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n`, { endAfterWrite: true, waitMs: 50 });
    expect((await http('GET', `${s.base}/`)).status).toBe(200);
    expectError(await http('GET', `${s.base}/process_graphs/x4`, { token }), 404, 'ProcessGraphNotFound');
  });
});

describe('errors', () => {
  it('answers 405 with Allow for a method the path does not have', async () => {
    const r = await http('DELETE', `${s.base}/me`, { token });
    expectError(r, 405, 'MethodNotAllowed');
    expect(r.headers.allow).toBe('OPTIONS, GET');
  });

  it('translates common messages to German by Accept-Language and says so', async () => {
    const de = await http('GET', `${s.base}/me`, { headers: { 'accept-language': 'fr;q=0.9, de-AT;q=0.8, en;q=0.5' } });
    expectError(de, 401, 'AuthenticationRequired');
    expect(de.headers['content-language']).toBe('de');
    expect(de.json.message).toMatch(/authentifizieren/);
    const en = await http('GET', `${s.base}/me`, { headers: { 'accept-language': 'en-GB, de;q=0.5' } });
    expect(en.headers['content-language']).toBe('en');
    expect(en.json.message).toMatch(/authenticate/);
    expect((await http('GET', `${s.base}/me`)).headers['content-language']).toBe('en');
    // a code without a German text falls back to English, labelled as such
    const fallback = await http('GET', `${s.url}/1.0.1/jobs`, { headers: { 'accept-language': 'de' } });
    expect(fallback.headers['content-language']).toMatch(/^(de|en)$/);
  });

  it('gives each error a tracking id', async () => {
    const a = await http('GET', `${s.base}/nope`);
    const b = await http('GET', `${s.base}/nope`);
    expect(a.json.id).toMatch(/^[0-9a-f]{16}$/);
    expect(a.json.id).not.toBe(b.json.id);
  });

  it('rejects a bad limit with QueryParameterInvalid', async () => {
    for (const limit of ['0', '-1', 'abc', '1.5', '1e3']) {
      expectError(await http('GET', `${s.base}/process_graphs?limit=${limit}`, { token }), 400, 'QueryParameterInvalid');
    }
    expect((await http('GET', `${s.base}/process_graphs?limit=`, { token })).status).toBe(200);
    expect((await http('GET', `${s.base}/process_graphs?limit=999999999999`, { token })).status).toBe(200);
  });
});
