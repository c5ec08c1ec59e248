// Test harness: starts the real built server (`node dist/src/cli.js serve`) on an ephemeral
// loopback port with its own data dir, and talks HTTP to it with undici.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import net from 'node:net';
import { afterAll } from 'vitest';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CLI = path.join(ROOT, 'dist/src/cli.js');

export interface TestServer {
  /** Host root, e.g. http://127.0.0.1:41234 */
  url: string;
  /** Root of API 1.2.0 */
  base: string;
  dataDir: string;
  env: Record<string, string>;
  proc: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

/** The folders tempDir made for this test file, removed once its tests are done (whatever they removed themselves). */
const made: string[] = [];
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

export function tempDir(prefix = 'xeo-test-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export async function startServer(env: Record<string, string> = {}, dataDir = tempDir()): Promise<TestServer> {
  // The demo collection takes seconds to generate: tests that need it copy a prepared data dir.
  // A server starts no Python interpreter for UDFs unless its test asks for some (XEO_UDF_WORKERS):
  // each would cost a second of CPU at start in every test file. A stop waits for requests in
  // flight (XEO_DRAIN_SECONDS): a few seconds at most here, so a test that leaves one hanging does
  // not hold the suite.
  const fullEnv = { XEO_HOST: '127.0.0.1', XEO_PORT: '0', XEO_DATA_DIR: dataDir, XEO_DEMO: 'false', XEO_UDF_WORKERS: '0', XEO_DRAIN_SECONDS: '3', ...env };
  const proc = spawn(process.execPath, [CLI, 'serve'], { env: { ...process.env, ...fullEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`server did not start:\n${out}`));
    }, 90_000);
    const check = () => {
      const m = /listening on (https?:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    proc.stdout.on('data', check);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${out}`));
    });
  });
  // A server that ends on its own (a crash) says why in the test's output: its requests only see a closed socket.
  let stopping = false;
  proc.on('exit', (code, signal) => {
    if (!stopping) console.error(`[test] the server at ${url} ended on its own (${signal ?? `exit ${code}`}); its last output:\n${out.slice(-4000)}`);
  });
  return {
    url,
    base: `${url}/1.2.0`,
    dataDir,
    env: fullEnv,
    proc,
    output: () => out,
    stop: () => {
      stopping = true;
      return stopChild(proc);
    },
  };
}

/** Ends a child process we started (SIGTERM) and waits for it; nothing when it has ended already. */
export async function stopChild(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Runs the `xeo` CLI against a data dir. */
export function xeo(args: string[], opts: { dataDir: string; input?: string; env?: Record<string, string> }) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    env: { ...process.env, XEO_DATA_DIR: opts.dataDir, ...opts.env },
    input: opts.input ?? '',
    encoding: 'utf8',
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export function addUser(dataDir: string, name: string, password: string): void {
  const r = xeo(['users', 'add', name, '--password', password], { dataDir });
  if (r.status !== 0) throw new Error(`users add failed: ${r.stderr}`);
}

export interface Res {
  status: number;
  headers: Record<string, string>;
  text: string;
  body: Buffer;
  json: any;
}

export async function http(
  method: string,
  url: string,
  opts: { headers?: Record<string, string>; body?: string | Buffer | Uint8Array | AsyncIterable<Uint8Array>; token?: string; signal?: AbortSignal } = {},
): Promise<Res> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = opts.token;
  // Socket events waiting since a synchronous step (a spawnSync of the CLI) run first: a kept-alive
  // connection the server closed meanwhile leaves the pool instead of taking this request.
  await new Promise((r) => setImmediate(r));
  const res = await request(url, { method: method as never, headers, body: opts.body as never, signal: opts.signal });
  const body = Buffer.from(await res.body.arrayBuffer());
  const text = body.toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) flat[k] = Array.isArray(v) ? v.join(', ') : String(v);
  return { status: res.statusCode, headers: flat, text, body, json };
}

export const basicHeader = (name: string, password: string) => `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;

/** Signs in with HTTP Basic and returns the Authorization header value for later requests. */
export async function login(server: TestServer, name: string, password: string): Promise<string> {
  const r = await http('GET', `${server.base}/credentials/basic`, { headers: { authorization: basicHeader(name, password) } });
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`);
  return `Bearer basic//${r.json.access_token}`;
}

/** Checks the shape every error answer must have. */
export function expectError(r: Res, status: number, code: string): void {
  if (r.status !== status || r.json?.code !== code || typeof r.json?.message !== 'string' || !r.headers['access-control-allow-origin']) {
    throw new Error(`expected ${status} ${code} with CORS, got ${r.status} ${r.text} ${JSON.stringify(r.headers)}`);
  }
}

/**
 * The second byte of the zlib stream of a little-endian classic TIFF's first tile: it names the
 * deflate level's class (0x01 level 1, 0x5e levels 2-5, 0x9c level 6, 0xda levels 7-9).
 */
export function zlibLevelByte(tif: Buffer): number {
  const ifd = tif.readUInt32LE(4);
  for (let e = 0, n = tif.readUInt16LE(ifd); e < n; e++) {
    const at = ifd + 2 + e * 12;
    if (tif.readUInt16LE(at) !== 324) continue; // TileOffsets
    const first = tif.readUInt32LE(at + 4) === 1 ? tif.readUInt32LE(at + 8) : tif.readUInt32LE(tif.readUInt32LE(at + 8));
    return tif[first + 1];
  }
  throw new Error('no TileOffsets in the first IFD');
}

/** Checks a Retry-After value is what clients can use: a positive whole number of seconds. */
export function expectRetryAfter(value: string | undefined): void {
  if (value === undefined || !/^[1-9]\d*$/.test(value)) throw new Error(`expected Retry-After as a positive number of seconds, got ${JSON.stringify(value)}`);
}

/**
 * A promise and whether it has settled yet, so a test asserts order instead of time: the fast
 * requests finish while the hung one still waits (`expect(hung.settled).toBe(false)`).
 */
export function watched<T>(promise: Promise<T>): { readonly promise: Promise<T>; readonly settled: boolean } {
  const w = { promise, settled: false };
  const done = () => {
    w.settled = true;
  };
  promise.then(done, done);
  return w;
}

/**
 * One request over a plain socket, so the target reaches the server exactly as written (URL
 * parsers normalise `..`, `%2e` and runs of slashes themselves). Resolves once the answer is whole.
 */
export function rawRequest(server: TestServer, method: string, target: string, headers: Record<string, string> = {}, body = ''): Promise<{ status: number; json: any; text: string; head: string }> {
  const { port, hostname } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(port), hostname);
    let got = '';
    sock.on('data', (d) => {
      got += d;
      const end = got.indexOf('\r\n\r\n');
      const len = /content-length: (\d+)/i.exec(got);
      if (end > 0 && len && got.length >= end + 4 + Number(len[1])) {
        sock.destroy();
        const text = got.slice(end + 4);
        let json: unknown;
        try {
          json = JSON.parse(text || 'null');
        } catch {
          json = undefined;
        }
        resolve({ status: Number(got.slice(9, 12)), json, text, head: got.slice(0, end) });
      }
    });
    sock.on('error', reject);
    const extra = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    sock.write(`${method} ${target} HTTP/1.1\r\nHost: x\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
}
