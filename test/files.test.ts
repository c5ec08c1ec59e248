// User files: streamed upload and download, atomic writes, quota, isolation, and every way of
// trying to leave the user's folder.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import net from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { startServer, http, expectError, removeDir, addUser, login, tempDir, rawRequest as raw, type TestServer } from './helpers.js';

const QUOTA = 300_000;
let s: TestServer;
let alice: string;
let bob: string;
let outside: string;
beforeAll(async () => {
  s = await startServer({ XEO_USER_QUOTA_BYTES: String(QUOTA) });
  addUser(s.dataDir, 'alice', 'pa');
  addUser(s.dataDir, 'bob', 'pb');
  addUser(s.dataDir, 'big', 'pc');
  alice = await login(s, 'alice', 'pa');
  bob = await login(s, 'bob', 'pb');
  outside = tempDir('xeo-outside-');
  writeFileSync(path.join(outside, 'secret.txt'), 'do not read');
});
afterAll(async () => {
  if (process.env.XEO_TEST_DEBUG) console.log(s.output());
  await s.stop();
  removeDir(s.dataDir);
  removeDir(outside);
});

const put = (p: string, body: string | Buffer | AsyncIterable<Uint8Array>, token = alice) => http('PUT', `${s.base}/files/${p}`, { token, body, headers: { 'content-type': 'application/octet-stream' } });

/** Raw HTTP as sent (see helpers.ts), with a user's token. */
const rawRequest = (method: string, target: string, token: string, body = '') => raw(s, method, target, { Authorization: token }, body);

describe('file lifecycle', () => {
  it('uploads, lists, downloads and deletes, with nested URL-encoded paths', async () => {
    const up = await put('europe/%C3%B6sterreich/m%C3%BCnster.txt', 'grüß gott');
    expect(up.status).toBe(200);
    expect(up.json).toEqual({ path: 'europe/österreich/münster.txt', size: Buffer.byteLength('grüß gott'), modified: expect.any(String) });
    expect(new Date(up.json.modified).getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect((await put('a.txt', 'A')).status).toBe(200);
    const list = await http('GET', `${s.base}/files`, { token: alice });
    expect(list.json.files.map((f: any) => f.path)).toEqual(['a.txt', 'europe/österreich/münster.txt']);
    expect(list.json.links).toEqual(expect.any(Array));
    const down = await http('GET', `${s.base}/files/europe/%C3%B6sterreich/m%C3%BCnster.txt`, { token: alice });
    expect(down.status).toBe(200);
    expect(down.headers['content-type']).toBe('application/octet-stream');
    expect(down.text).toBe('grüß gott');
    expect(down.headers['access-control-allow-origin']).toBe('*');
    // replacing a file keeps one entry
    expect((await put('a.txt', 'AA')).json.size).toBe(2);
    expect((await http('GET', `${s.base}/files/a.txt`, { token: alice })).text).toBe('AA');
    expect((await http('DELETE', `${s.base}/files/europe/%C3%B6sterreich/m%C3%BCnster.txt`, { token: alice })).status).toBe(204);
    // the folders it left empty are gone
    expect(existsSync(path.join(s.dataDir, 'files', 'alice', 'europe'))).toBe(false);
    expectError(await http('GET', `${s.base}/files/europe/%C3%B6sterreich/m%C3%BCnster.txt`, { token: alice }), 404, 'FileNotFound');
    expectError(await http('DELETE', `${s.base}/files/nothing.txt`, { token: alice }), 404, 'FileNotFound');
  });

  it('streams a large file in and out unchanged', async () => {
    const part = randomBytes(1 << 20);
    const parts = 40;
    async function* body() {
      for (let i = 0; i < parts; i++) yield part;
    }
    const expected = createHash('sha256');
    for (let i = 0; i < parts; i++) expected.update(part);
    const big = await startServer({}, s.dataDir);
    try {
      const token = await login(big, 'big', 'pc');
      const up = await http('PUT', `${big.base}/files/big.bin`, { token, body: body() });
      expect(up.status).toBe(200);
      expect(up.json.size).toBe(parts << 20);
      // read slowly at first, so the server has to hold back (backpressure) rather than buffer
      const res = await request(`${big.base}/files/big.bin`, { headers: { authorization: token } });
      expect(res.statusCode).toBe(200);
      expect(Number(res.headers['content-length'])).toBe(parts << 20);
      const hash = createHash('sha256');
      let n = 0;
      for await (const chunk of res.body) {
        hash.update(chunk);
        if (n++ < 5) await new Promise((r) => setTimeout(r, 50));
      }
      expect(hash.digest('hex')).toBe(expected.digest('hex'));
      expect((await http('DELETE', `${big.base}/files/big.bin`, { token })).status).toBe(204);
    } finally {
      await big.stop();
    }
  });

  it('refuses operations on folders and files used as folders', async () => {
    expect((await put('dir/inner.txt', 'x')).status).toBe(200);
    expectError(await http('GET', `${s.base}/files/dir`, { token: alice }), 400, 'FileOperationUnsupported');
    expectError(await http('DELETE', `${s.base}/files/dir`, { token: alice }), 400, 'FileOperationUnsupported');
    expectError(await put('dir', 'x'), 400, 'FolderOperationUnsupported');
    expectError(await put('dir/inner.txt/below.txt', 'x'), 400, 'FilePathInvalid');
    expect((await http('GET', `${s.base}/files/dir/inner.txt`, { token: alice })).text).toBe('x');
  });

  it('downloads byte ranges (Range, HEAD)', async () => {
    expect((await put('range.txt', '0123456789')).status).toBe(200);
    const get = (range: string) => http('GET', `${s.base}/files/range.txt`, { token: alice, headers: { range } });
    const mid = await get('bytes=2-5');
    expect(mid.status).toBe(206);
    expect(mid.text).toBe('2345');
    expect(mid.headers['content-range']).toBe('bytes 2-5/10');
    expect((await get('bytes=-3')).text).toBe('789');
    expect((await get('bytes=7-')).text).toBe('789');
    const whole = await http('GET', `${s.base}/files/range.txt`, { token: alice });
    expect(whole.status).toBe(200);
    expect(whole.headers['accept-ranges']).toBe('bytes');
    expectError(await get('bytes=10-'), 416, 'RangeNotSatisfiable');
    const head = await http('HEAD', `${s.base}/files/range.txt`, { token: alice, headers: { range: 'bytes=0-3' } });
    expect(head.status).toBe(206);
    expect(head.headers['content-length']).toBe('4');
  });
});

describe('path safety', () => {
  const attempts = [
    '/1.2.0/files/../bob/x.txt',
    '/1.2.0/files/a/../../bob/x.txt',
    '/1.2.0/files/%2e%2e/bob/x.txt',
    '/1.2.0/files/%2E%2E%2Fbob%2Fx.txt',
    '/1.2.0/files/./x.txt',
    '/1.2.0/files/%2Fetc%2Fpasswd',
    '/1.2.0/files/x%00.txt',
    '/1.2.0/files/a%5C..%5Cx.txt',
    '/1.2.0/files/c%3A%5Cwindows',
    '/1.2.0/files/bad%E0%A4%A',
  ];
  it("reads a literal run of slashes as one: files//etc/passwd is the user's own etc/passwd", async () => {
    expect((await rawRequest('PUT', '/1.2.0/files//etc/passwd', alice, 'mine')).status).toBe(200);
    expect(readFileSync(path.join(s.dataDir, 'files', 'alice', 'etc', 'passwd'), 'utf8')).toBe('mine');
    expect((await rawRequest('DELETE', '/1.2.0/files/etc//passwd', alice)).status).toBe(204);
  });

  for (const target of attempts) {
    it(`refuses ${target}`, async () => {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const r = await rawRequest(method, target, alice, method === 'PUT' ? 'evil' : '');
        expect([400, 404], `${method} ${target}: ${JSON.stringify(r.json)}`).toContain(r.status);
        expect(['FilePathInvalid', 'NotFound'], `${method} ${target}`).toContain(r.json.code);
        expect(r.head).toMatch(/Access-Control-Allow-Origin: \*/);
      }
    });
  }

  it('touched nothing outside the users folders', async () => {
    expect(readdirSync(path.join(s.dataDir, 'files')).sort()).toEqual(expect.not.arrayContaining(['etc', 'x.txt']));
    expect(existsSync(path.join(s.dataDir, 'files', 'bob', 'x.txt'))).toBe(false);
  });

  it('does not follow symlinks planted in a user folder', async () => {
    const home = path.join(s.dataDir, 'files', 'alice');
    mkdirSync(home, { recursive: true });
    symlinkSync(outside, path.join(home, 'link'));
    symlinkSync(path.join(outside, 'secret.txt'), path.join(home, 'file-link'));
    expectError(await http('GET', `${s.base}/files/link/secret.txt`, { token: alice }), 400, 'FilePathInvalid');
    expectError(await http('GET', `${s.base}/files/file-link`, { token: alice }), 400, 'FilePathInvalid');
    expectError(await put('link/new.txt', 'x'), 400, 'FilePathInvalid');
    expectError(await http('DELETE', `${s.base}/files/file-link`, { token: alice }), 400, 'FilePathInvalid');
    expect(readdirSync(outside)).toEqual(['secret.txt']);
    const list = (await http('GET', `${s.base}/files`, { token: alice })).json.files.map((f: any) => f.path);
    expect(list).not.toContain('link/secret.txt');
  });
});

describe('quota, isolation, atomicity', () => {
  it('keeps each user to their own files', async () => {
    expect((await put('only-alice.txt', 'mine')).status).toBe(200);
    expectError(await http('GET', `${s.base}/files/only-alice.txt`, { token: bob }), 404, 'FileNotFound');
    expectError(await http('DELETE', `${s.base}/files/only-alice.txt`, { token: bob }), 404, 'FileNotFound');
    expect((await http('GET', `${s.base}/files`, { token: bob })).json.files).toEqual([]);
    expect((await put('only-alice.txt', 'bobs', bob)).status).toBe(200);
    expect((await http('GET', `${s.base}/files/only-alice.txt`, { token: alice })).text).toBe('mine');
    expectError(await http('GET', `${s.base}/files`), 401, 'AuthenticationRequired');
  });

  it('enforces the quota, declared or streamed, and reports it in /me', async () => {
    const used = (await http('GET', `${s.base}/files`, { token: bob })).json.files.reduce((n: number, f: any) => n + f.size, 0);
    expect((await put('q1.bin', Buffer.alloc(200_000), bob)).status).toBe(200);
    const me = (await http('GET', `${s.base}/me`, { token: bob })).json;
    expect(me.storage).toEqual({ quota: QUOTA, free: QUOTA - used - 200_000 });
    expectError(await put('q2.bin', Buffer.alloc(200_000), bob), 400, 'StorageQuotaExceeded');
    async function* chunked() {
      for (let i = 0; i < 20; i++) yield Buffer.alloc(10_000, 1);
    }
    expectError(await put('q3.bin', chunked(), bob), 400, 'StorageQuotaExceeded');
    const names = (await http('GET', `${s.base}/files`, { token: bob })).json.files.map((f: any) => f.path);
    expect(names).not.toContain('q2.bin');
    expect(names).not.toContain('q3.bin');
    expect(readdirSync(path.join(s.dataDir, 'tmp'))).toEqual([]);
    // replacing a file counts only the difference
    expect((await put('q1.bin', Buffer.alloc(250_000), bob)).status).toBe(200);
  });

  it('leaves the old content when an upload is cut off', async () => {
    expect((await put('atomic.txt', 'old content')).status).toBe(200);
    const { port, hostname } = new URL(s.url);
    await new Promise<void>((resolve) => {
      const sock = net.connect(Number(port), hostname, () => {
        sock.write(`PUT /1.2.0/files/atomic.txt HTTP/1.1\r\nHost: x\r\nAuthorization: ${alice}\r\nContent-Length: 100000\r\n\r\n`);
        sock.write(Buffer.alloc(30_000, 65));
        setTimeout(() => {
          sock.destroy();
          resolve();
        }, 200);
      });
    });
    await new Promise((r) => setTimeout(r, 200));
    expect((await http('GET', `${s.base}/files/atomic.txt`, { token: alice })).text).toBe('old content');
    expect(readdirSync(path.join(s.dataDir, 'tmp'))).toEqual([]);
    expect((await http('GET', `${s.base}/`)).status).toBe(200);
  });

  it('answers the next request on a connection whose refused upload arrived whole while its reading was paused', async () => {
    // The whole body lands in one burst, past the reader's 1 MiB mark, before the quota is judged:
    // uWS delivers what it has read even after a pause, so the body ends while the socket is paused.
    // A kept-alive answer on a paused socket left the next request unread until uWS's timeout reset it.
    const { port, hostname } = new URL(s.url);
    for (let round = 0; round < 3; round++) {
      const sock = net.connect(Number(port), hostname);
      let got = '';
      sock.on('error', () => {});
      sock.on('data', (d: Buffer) => (got += d.toString('latin1')));
      const answers = (n: number) =>
        new Promise<void>((resolve, reject) => {
          const t0 = Date.now();
          const check = setInterval(() => {
            const done = (got.match(/HTTP\/1\.1 \d{3}/g) ?? []).length >= n;
            if (!done && Date.now() - t0 < 4000 && !sock.destroyed) return;
            clearInterval(check);
            if (done) resolve();
            else reject(new Error(`${n} answers expected within 4 s, got:\n${got.slice(0, 2000)}`));
          }, 10);
        });
      const body = Buffer.alloc(3 * 1024 * 1024, 1);
      sock.write(Buffer.concat([Buffer.from(`PUT /1.2.0/files/burst.bin HTTP/1.1\r\nHost: x\r\nAuthorization: ${bob}\r\nContent-Length: ${body.length}\r\n\r\n`), body]));
      await answers(1);
      expect(got).toContain('StorageQuotaExceeded');
      expect(got).not.toMatch(/connection: close/i);
      sock.write(`GET /1.2.0/files HTTP/1.1\r\nHost: x\r\nAuthorization: ${bob}\r\n\r\n`);
      await answers(2);
      expect(got.slice(got.lastIndexOf('HTTP/1.1 '))).toMatch(/^HTTP\/1\.1 200/);
      sock.destroy();
    }
  });

  it('pages the file list', async () => {
    for (let i = 0; i < 5; i++) expect((await put(`page/f${i}.txt`, 'x')).status).toBe(200);
    const first = (await http('GET', `${s.base}/files?limit=2`, { token: alice })).json;
    expect(first.files.length).toBe(2);
    const next = first.links.find((l: any) => l.rel === 'next').href;
    const second = (await http('GET', next, { token: alice })).json;
    expect(second.files[0].path > first.files[1].path).toBe(true);
  });
});
