// A small HTTP file server of our own standing for remote storage (S3, a CDN) in tests and the
// `remote` bench: serves files with Range requests and keep-alive, adds a delay to every request,
// counts requests, bytes and connections, and can be told to fail (5xx, 429, a dropped connection),
// to redirect, or to answer fixed JSON documents (STAC Items). Only ever listens on loopback.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { open, stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';

export interface Hit {
  method: string;
  path: string;
  range: string | null;
  status: number;
  bytes: number;
  /** Date.now() when the request arrived. */
  at: number;
}

type Failure = { status: number; retryAfter?: number } | 'drop';

export class RangeServer {
  /** e.g. http://127.0.0.1:41234 */
  url = '';
  /** Milliseconds added before answering each request. */
  delayMs = 0;
  readonly hits: Hit[] = [];
  connections = 0;
  private readonly files = new Map<string, string>();
  private readonly docs = new Map<string, { body: string; type: string }>();
  private readonly redirects = new Map<string, { location: string; status: number }>();
  private readonly failures: Failure[] = [];
  private server: Server | null = null;

  /** Serves the local file `file` at `path` (e.g. /cogs/b04.tif). */
  file(path: string, file: string): this {
    this.files.set(path, file);
    return this;
  }

  /** Serves a JSON document at `path`. */
  json(path: string, doc: unknown, type = 'application/json'): this {
    this.docs.set(path, { body: JSON.stringify(doc), type });
    return this;
  }

  /** Answers `path` with a redirect to `location`. */
  redirect(path: string, location: string, status = 302): this {
    this.redirects.set(path, { location, status });
    return this;
  }

  /** The next requests fail, one failure each, in order: an HTTP status (429 with Retry-After, 503) or a dropped connection. */
  fail(...failures: Failure[]): this {
    this.failures.push(...failures);
    return this;
  }

  /** Forgets failures not yet used. */
  clearFailures(): void {
    this.failures.length = 0;
  }

  get requests(): number {
    return this.hits.length;
  }
  get bytes(): number {
    return this.hits.reduce((s, h) => s + h.bytes, 0);
  }
  reset(): void {
    this.hits.length = 0;
    this.connections = 0;
  }

  async start(port = 0): Promise<this> {
    const server = createServer((req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 30_000;
    server.on('connection', () => this.connections++);
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }

  private record(req: IncomingMessage, status: number, bytes: number): void {
    const at = (req as IncomingMessage & { arrived?: number }).arrived ?? Date.now();
    this.hits.push({ method: req.method ?? 'GET', path: (req.url ?? '/').split('?')[0], range: (req.headers.range as string) ?? null, status, bytes, at });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    (req as IncomingMessage & { arrived?: number }).arrived = Date.now();
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]);
    const failure = this.failures.shift();
    if (failure === 'drop') {
      this.record(req, 0, 0);
      req.socket.destroy();
      return;
    }
    if (failure) {
      this.record(req, failure.status, 0);
      res.writeHead(failure.status, failure.retryAfter !== undefined ? { 'retry-after': String(failure.retryAfter) } : {});
      res.end();
      return;
    }
    const redirect = this.redirects.get(path);
    if (redirect) {
      this.record(req, redirect.status, 0);
      res.writeHead(redirect.status, { location: redirect.location });
      res.end();
      return;
    }
    const doc = this.docs.get(path);
    if (doc) {
      this.record(req, 200, doc.body.length);
      res.writeHead(200, { 'content-type': doc.type, 'content-length': Buffer.byteLength(doc.body) });
      res.end(doc.body);
      return;
    }
    const file = this.files.get(path);
    if (!file) {
      this.record(req, 404, 0);
      res.writeHead(404);
      res.end();
      return;
    }
    const size = (await stat(file)).size;
    const m = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ''));
    let start = 0;
    let end = size - 1;
    let status = 200;
    if (m) {
      start = Number(m[1]);
      end = m[2] ? Math.min(size - 1, Number(m[2])) : size - 1;
      if (start >= size) {
        this.record(req, 416, 0);
        res.writeHead(416, { 'content-range': `bytes */${size}` });
        res.end();
        return;
      }
      status = 206;
    }
    const length = end - start + 1;
    const buf = Buffer.alloc(length);
    const fh = await open(file, 'r');
    try {
      await fh.read(buf, 0, length, start);
    } finally {
      await fh.close();
    }
    const headers: Record<string, string | number> = { 'content-type': 'image/tiff', 'content-length': length, 'accept-ranges': 'bytes' };
    if (status === 206) headers['content-range'] = `bytes ${start}-${end}/${size}`;
    const body = req.method === 'HEAD' ? Buffer.alloc(0) : buf;
    this.record(req, status, body.length);
    res.writeHead(status, headers);
    res.end(body);
  }
}
