// Security at the door: sign-in guessing and invalid-token floods slowed down per client address
// (and per account from an address) before any hash is computed, the real user never locked out;
// the headers browsers rely on, on every answer; and in Chromium, markup in a title shown as text
// and an uploaded HTML file that never runs in our origin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { chromium, type Browser } from 'playwright-core';
import { addUser, basicHeader, expectError, http, login, removeDir, startServer, type TestServer } from './helpers.js';
import { hasChromium, describeWithTool, CHROMIUM, CHROMIUM_ARGS } from './system-tools.js';

let s: TestServer;
let token: string;
beforeAll(async () => {
  // One trusted proxy hop, so each test can speak from an address of its own (X-Forwarded-For).
  s = await startServer({ XEO_TRUST_PROXY: '1', XEO_AUTH_FAILURES_PER_ACCOUNT: '3', XEO_AUTH_FAILURES_PER_ADDRESS: '6', XEO_AUTH_MAX_DELAY: '4' });
  addUser(s.dataDir, 'alice', 'right-password');
  addUser(s.dataDir, 'bob', 'bobs-password');
  token = await login(s, 'alice', 'right-password');
});
afterAll(async () => {
  await s.stop();
  removeDir(s.dataDir);
});

const signIn = (name: string, password: string, from: string) =>
  http('GET', `${s.base}/credentials/basic`, { headers: { authorization: basicHeader(name, password), 'x-forwarded-for': from, origin: 'https://x.example' } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('guessing passwords', () => {
  it('slows down one account guessed from one address, with a wait that grows; the real user elsewhere signs in', async () => {
    const attacker = '203.0.113.5';
    for (let i = 0; i < 3; i++) expectError(await signIn('alice', `guess-${i}`, attacker), 403, 'CredentialsInvalid');
    const first = await signIn('alice', 'guess-3', attacker);
    expectError(first, 429, 'TooManyRequests');
    expect(Number(first.headers['retry-after'])).toBe(1);
    // Even the right password waits while the address is held back: guessing it gains nothing.
    expectError(await signIn('alice', 'right-password', attacker), 429, 'TooManyRequests');
    // The real user, from another address, is not locked out.
    expect((await signIn('alice', 'right-password', '198.51.100.7')).status).toBe(200);
    await sleep(1100);
    expectError(await signIn('alice', 'guess-4', attacker), 403, 'CredentialsInvalid');
    const second = await signIn('alice', 'guess-5', attacker);
    expectError(second, 429, 'TooManyRequests');
    expect(Number(second.headers['retry-after'])).toBe(2);
  });

  it('slows down one address trying many accounts', async () => {
    const sprayer = '203.0.113.9';
    for (let i = 0; i < 6; i++) expectError(await signIn(`user${i}`, 'Winter2026!', sprayer), 403, 'CredentialsInvalid');
    expectError(await signIn('bob', 'Winter2026!', sprayer), 429, 'TooManyRequests');
    expect((await signIn('bob', 'bobs-password', '192.0.2.44')).status).toBe(200);
  });

  it('slows down a flood of invalid bearer tokens from one address, not other clients', async () => {
    const flood = '203.0.113.77';
    const me = (auth: string, from: string) => http('GET', `${s.base}/me`, { headers: { authorization: auth, 'x-forwarded-for': from, origin: 'https://x.example' } });
    for (let i = 0; i < 6; i++) expectError(await me(`Bearer basic//forged-${i}`, flood), 403, 'TokenInvalid');
    expectError(await me('Bearer basic//forged-x', flood), 429, 'TooManyRequests');
    expect((await me(token, '192.0.2.10')).status).toBe(200);
  });

  it('believes X-Forwarded-For only from as many proxies as XEO_TRUST_PROXY says', async () => {
    const direct = await startServer({ XEO_AUTH_FAILURES_PER_ACCOUNT: '2' });
    try {
      addUser(direct.dataDir, 'carol', 'c-password');
      const attempt = (from: string) => http('GET', `${direct.base}/credentials/basic`, { headers: { authorization: basicHeader('carol', 'wrong'), 'x-forwarded-for': from } });
      expect((await attempt('10.0.0.1')).status).toBe(403);
      expect((await attempt('10.0.0.2')).status).toBe(403);
      // A new X-Forwarded-For does not make a new client when no proxy is trusted.
      expect((await attempt('10.0.0.3')).status).toBe(429);
    } finally {
      await direct.stop();
      removeDir(direct.dataDir);
    }
  });
});

describe('headers browsers rely on', () => {
  it('are on every answer: successes, errors, tiles of no service, downloads', async () => {
    const put = await http('PUT', `${s.base}/files/page.html`, { token, body: '<p>hi</p>', headers: { 'content-type': 'application/octet-stream' } });
    expect(put.status).toBe(200);
    for (const [url, auth] of [
      [`${s.base}/`, undefined],
      [`${s.base}/nope`, undefined],
      [`${s.base}/me`, token],
      [`${s.url}/xyz/nope/1/0/0.png`, undefined],
      [`${s.base}/files/page.html`, token],
    ] as const) {
      const r = await http('GET', url, auth ? { token: auth } : {});
      expect(r.headers['x-content-type-options'], url).toBe('nosniff');
      expect(r.headers['referrer-policy'], url).toBe('no-referrer');
      expect(r.headers['content-security-policy'], url).toContain("default-src 'none'");
      expect(r.headers['content-security-policy'], url).toContain("frame-ancestors 'none'");
    }
    const file = await http('GET', `${s.base}/files/page.html`, { token });
    expect(file.headers['content-type']).toBe('application/octet-stream');
    expect(file.headers['content-disposition']).toMatch(/^attachment;/);
  });
});

describeWithTool(hasChromium, 'chromium', 'pages in a browser', () => {
  let browser: Browser;
  let marker: Server;
  let hits = 0;
  let markerUrl = '';
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    // Counts every request: a script of an attacker's that ran would call it.
    marker = createServer((_req, res) => {
      hits++;
      res.end('ok');
    });
    await new Promise<void>((r) => marker.listen(0, '127.0.0.1', r));
    markerUrl = `http://127.0.0.1:${(marker.address() as { port: number }).port}/hit`;
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    marker?.close();
  });

  it('shows a title with markup as text, runs only its own bundled script, and cannot be framed', async () => {
    const title = `<img src="${markerUrl}" onerror="fetch('${markerUrl}')"><script>fetch('${markerUrl}')</script>`;
    const graph = { a: { process_id: 'absolute', arguments: { x: -1 }, result: true } };
    const created = await http('POST', `${s.base}/services`, { token, body: JSON.stringify({ type: 'XYZ', title, process: { process_graph: graph } }) });
    expect(created.status).toBe(201);
    const id = created.headers['xeo-identifier'];
    const res = await http('GET', `${s.url}/viewer?service=${id}`);
    const csp = res.headers['content-security-policy'];
    // Scripts from one file of ours only: no inline code, no other origin.
    expect(csp).toMatch(new RegExp(`script-src ${s.url.replace(/[.]/g, '\\.')}/viewer/map-page\\.js;`));
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    // The title reaches the page only inside its JSON settings, with < escaped.
    expect(res.text).not.toContain(title);
    const page = await browser.newPage();
    try {
      await page.goto(`${s.url}/viewer?service=${id}`);
      await page.waitForFunction(() => (document.querySelector('#info h1')?.textContent ?? '') !== '');
      expect(await page.textContent('#info h1')).toBe(title);
      expect(await page.locator('#panel img').count()).toBe(0);
      await sleep(500);
      expect(hits).toBe(0);
    } finally {
      await page.close();
    }
  });

  it('never runs an uploaded HTML file opened from its download link: it is downloaded, not shown', async () => {
    const html = `<html><body><script>fetch('${markerUrl}')</script><img src="${markerUrl}"></body></html>`;
    expect((await http('PUT', `${s.base}/files/evil.html`, { token, body: html, headers: { 'content-type': 'application/octet-stream' } })).status).toBe(200);
    const context = await browser.newContext({ acceptDownloads: true, extraHTTPHeaders: { authorization: token } });
    const page = await context.newPage();
    try {
      const download = page.waitForEvent('download');
      await page.goto(`${s.base}/files/evil.html`).catch(() => {}); // a download aborts the navigation
      expect((await download).suggestedFilename()).toBe('evil.html');
      await sleep(500);
      expect(hits).toBe(0);
      expect(page.url()).not.toContain('evil.html');
    } finally {
      await context.close();
    }
  });
});
