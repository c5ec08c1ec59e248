// HTTPS (XEO_TLS_CERT, XEO_TLS_KEY): the same server on TLS with a certificate made here with
// openssl, modern protocols only, Strict-Transport-Security, https links, a certificate renewed
// without a restart, a plain-HTTP door that only redirects, and the official JS client over HTTPS.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import tls from 'node:tls';
import { Agent, request } from 'undici';
import { addUser, removeDir, ROOT, startServer, tempDir, type TestServer } from './helpers.js';
import { describeWithTool } from './system-tools.js';
import { hasOpenssl, selfSignedCertificate } from '../bench/certificate.js';
import { freePort } from '../bench/ports.js';

/** The certificate the server shows to a connection, and the protocol agreed. */
function handshake(port: number, opts: tls.ConnectionOptions = {}): Promise<{ cn: string; protocol: string | null }> {
  return new Promise((resolve, reject) => {
    const sock = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...opts }, () => {
      const peer = sock.getPeerCertificate();
      resolve({ cn: String(peer.subject?.CN), protocol: sock.getProtocol() });
      sock.end();
    });
    sock.on('error', reject);
  });
}

describeWithTool(hasOpenssl, 'openssl', 'HTTPS', () => {
  let s: TestServer;
  let dir: string;
  let files: { cert: string; key: string };
  let agent: Agent;
  let redirectPort: number;

  beforeAll(async () => {
    dir = tempDir('xeo-tls-');
    files = selfSignedCertificate(dir, 'first');
    redirectPort = await freePort();
    s = await startServer({ XEO_BRAND: 'openeo', XEO_TLS_CERT: files.cert, XEO_TLS_KEY: files.key, XEO_HTTP_REDIRECT_PORT: String(redirectPort) });
    agent = new Agent({ connect: { ca: readFileSync(files.cert) } });
  });
  afterAll(async () => {
    await s?.stop();
    await agent?.close();
    if (s) removeDir(s.dataDir);
    removeDir(dir);
  });

  it('serves the API over HTTPS with Strict-Transport-Security and https links', async () => {
    expect(s.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const r = await request(`${s.base}/`, { dispatcher: agent });
    expect(r.statusCode).toBe(200);
    expect(r.headers['strict-transport-security']).toBe('max-age=31536000');
    const caps = (await r.body.json()) as { links: { rel: string; href: string }[] };
    expect(caps.links.find((l) => l.rel === 'self')!.href).toBe(`${s.base}/`);
  });

  it('speaks only modern protocols: TLS 1.3 and 1.2 with forward secrecy, never 1.1', async () => {
    expect((await handshake(Number(new URL(s.url).port))).protocol).toBe('TLSv1.3');
    expect((await handshake(Number(new URL(s.url).port), { maxVersion: 'TLSv1.2' })).protocol).toBe('TLSv1.2');
    await expect(handshake(Number(new URL(s.url).port), { maxVersion: 'TLSv1.1', minVersion: 'TLSv1' })).rejects.toThrow();
  });

  it('takes a renewed certificate on SIGHUP without a restart, while connections are open', async () => {
    const port = Number(new URL(s.url).port);
    expect((await handshake(port)).cn).toBe('first');
    // A connection that stays open across the reload.
    const open = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
    await new Promise((r) => open.once('secureConnect', r));
    const next = selfSignedCertificate(dir, 'second');
    writeFileSync(files.cert, readFileSync(next.cert));
    writeFileSync(files.key, readFileSync(next.key));
    s.proc.kill('SIGHUP');
    let cn = '';
    for (let i = 0; i < 50 && cn !== 'second'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      cn = (await handshake(port).catch(() => ({ cn: '' }))).cn;
    }
    expect(cn).toBe('second');
    expect(s.proc.exitCode).toBeNull();
    expect(s.output()).not.toContain('reload failed');
    open.destroy();
    const again = new Agent({ connect: { ca: readFileSync(files.cert) } });
    expect((await request(`${s.base}/`, { dispatcher: again })).statusCode).toBe(200);
    await again.close();
  });

  it('still refuses to share its port with a second server (its listener is shareable only for its own renewals)', async () => {
    const port = new URL(s.url).port;
    await expect(startServer({ XEO_TLS_CERT: files.cert, XEO_TLS_KEY: files.key, XEO_PORT: port })).rejects.toThrow(/address in use/);
    await expect(startServer({ XEO_PORT: port })).rejects.toThrow(/address in use/);
  });

  it('redirects plain HTTP to HTTPS and serves nothing there', async () => {
    const r = await request(`http://127.0.0.1:${redirectPort}/1.2.0/collections?limit=1`);
    expect(r.statusCode).toBe(308);
    expect(r.headers.location).toBe(`${s.url}/1.2.0/collections?limit=1`);
    await r.body.dump();
  });

  it('is used by the official JavaScript client over HTTPS', async () => {
    addUser(s.dataDir, 'alice', 'secret-a');
    const script = `
      import { OpenEO } from '@openeo/js-client';
      const con = await OpenEO.connect(${JSON.stringify(s.url)});
      await con.authenticateBasic('alice', 'secret-a');
      const collections = await con.listCollections();
      const me = await con.describeAccount();
      console.log(JSON.stringify({ version: con.capabilities().apiVersion(), collections: collections.collections.length, user: me.user_id }));
    `;
    const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, env: { ...process.env, NODE_EXTRA_CA_CERTS: files.cert }, encoding: 'utf8', timeout: 60_000 });
    expect(out.status, out.stderr.slice(-2000)).toBe(0);
    expect(JSON.parse(out.stdout.trim().split('\n').pop()!)).toEqual({ version: '1.3.0', collections: 0, user: 'alice' });
  });
});
