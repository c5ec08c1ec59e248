// A minimal HTTP/1.1 client over a plain socket, for requests no ordinary client would send (raw
// bytes in the path, lying or missing Content-Length, header abuse) and for answers no ordinary
// client would let us see (bytes after the framed body, e.g. a HEAD answer with a body). A request
// without a body is sent with `Connection: close` and its answer read until the server closes, so
// anything the server writes beyond what its framing announces is caught. A request with a body is
// sent keep-alive and its answer read as framed: a server that answers early may then skip the
// rest of the body instead of closing on unread data, whose reset could discard the answer.
import net from 'node:net';
import tls from 'node:tls';

/** A connection to the server on loopback, plain or TLS (any certificate: the test made it). */
export function connectTo(port: number, secure: boolean): net.Socket {
  return secure ? tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false }) : net.connect(port, '127.0.0.1');
}

export interface RawRequest {
  method: string;
  /** Request target as bytes in latin1 (one char per byte), e.g. `/1.2.0/files/%ff` or raw UTF-8. */
  target: string;
  headers: [string, string][];
  /** Sent with a Content-Length unless `chunked`. */
  body?: Buffer;
  /** Send the body with Transfer-Encoding: chunked, in pieces of this many bytes. */
  chunked?: number;
  /** A Content-Length to declare instead of the true one (only ever larger than the limit). */
  declaredLength?: number;
}

export interface RawResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
  /** Bytes that came after the body the framing announced. */
  trailing: number;
  ms: number;
}

export class NoAnswer extends Error {
  constructor(
    readonly reason: 'timeout' | 'closed' | 'malformed',
    detail: string,
    readonly ms: number,
  ) {
    super(`${reason}: ${detail}`);
  }
}

/** Bytes of the request head (request line and headers). */
export const headBytes = (req: RawRequest) => serialize(req)[0].length;

/** Header fields of the request head as sent (Host and the framing headers included). */
export const headFields = (req: RawRequest) => serialize(req)[0].toString('latin1').split('\r\n').filter(Boolean).length - 1;

const hasBody = (req: RawRequest) => req.body !== undefined || req.declaredLength !== undefined;

export function serialize(req: RawRequest): Buffer[] {
  const lines = [`${req.method} ${req.target} HTTP/1.1`, 'Host: 127.0.0.1'];
  if (!hasBody(req)) lines.push('Connection: close');
  for (const [k, v] of req.headers) lines.push(`${k}: ${v}`);
  const parts: Buffer[] = [];
  if (req.body !== undefined && req.chunked) {
    lines.push('Transfer-Encoding: chunked');
    parts.push(Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'));
    for (let i = 0; i < req.body.length; i += req.chunked) {
      const piece = req.body.subarray(i, i + req.chunked);
      parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`, 'latin1'), piece, Buffer.from('\r\n'));
    }
    parts.push(Buffer.from('0\r\n\r\n'));
    return parts;
  }
  if (req.body !== undefined || req.declaredLength !== undefined) lines.push(`Content-Length: ${req.declaredLength ?? req.body!.length}`);
  parts.push(Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'));
  if (req.body?.length) parts.push(req.body);
  return parts;
}

/** Whether `data` holds one whole answer, as its framing says. */
function complete(method: string, data: Buffer): boolean {
  try {
    parseResponse(method, data, 0);
  } catch {
    return false;
  }
  const end = data.indexOf('\r\n\r\n');
  const head = data.subarray(0, end).toString('latin1');
  // Without a length or chunked framing, the answer ends when the server closes.
  return /\r\ncontent-length:/i.test(head) || /\r\ntransfer-encoding: *chunked/i.test(head) || /^HTTP\/1\.1 (204|304)/.test(head) || method === 'HEAD';
}

/** Parses a complete answer (everything the server sent before closing). */
export function parseResponse(method: string, data: Buffer, ms: number): RawResponse {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) throw new NoAnswer(data.length ? 'malformed' : 'closed', `got ${data.length} bytes without a complete head`, ms);
  const head = data.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(head[0]);
  if (!m) throw new NoAnswer('malformed', `status line ${JSON.stringify(head[0])}`, ms);
  const status = Number(m[1]);
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    const k = line.slice(0, colon).trim().toLowerCase();
    const v = line.slice(colon + 1).trim();
    headers[k] = k in headers ? `${headers[k]}, ${v}` : v;
  }
  const rest = data.subarray(end + 4);
  if (method === 'HEAD' || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0), trailing: rest.length, ms };
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const pieces: Buffer[] = [];
    let at = 0;
    for (;;) {
      const eol = rest.indexOf('\r\n', at);
      if (eol < 0) throw new NoAnswer('malformed', 'chunked body cut off', ms);
      const size = parseInt(rest.subarray(at, eol).toString('latin1'), 16);
      if (!Number.isFinite(size)) throw new NoAnswer('malformed', 'bad chunk size', ms);
      at = eol + 2;
      if (size === 0) {
        at += 2;
        break;
      }
      pieces.push(rest.subarray(at, at + size));
      at += size + 2;
    }
    return { status, headers, body: Buffer.concat(pieces), trailing: Math.max(0, rest.length - at), ms };
  }
  if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    if (rest.length < n) throw new NoAnswer('malformed', `body of ${rest.length} bytes, Content-Length ${n}`, ms);
    return { status, headers, body: rest.subarray(0, n), trailing: rest.length - n, ms };
  }
  return { status, headers, body: rest, trailing: 0, ms };
}

/**
 * Sends one request on a fresh connection and reads the answer until the server closes. The body
 * goes out in pieces, and no more are written once an answer has begun: a server may answer (413,
 * 401) and close before reading a body, and writing on would only provoke a reset that can discard
 * the answer.
 */
export function send(port: number, req: RawRequest, timeoutMs = 20_000, secure = false): Promise<RawResponse> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const sock = connectTo(port, secure);
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      const ms = performance.now() - started;
      const data = Buffer.concat(chunks);
      if (err && !data.length) return reject(err instanceof NoAnswer ? err : new NoAnswer('closed', err.message, ms));
      try {
        resolve(parseResponse(req.method, data, ms));
      } catch (e) {
        reject(e);
      }
    };
    const timer = setTimeout(() => finish(new NoAnswer('timeout', `no close after ${timeoutMs} ms`, timeoutMs)), timeoutMs);
    sock.on('data', (d) => {
      chunks.push(d);
      if (hasBody(req) && complete(req.method, Buffer.concat(chunks))) finish();
    });
    sock.on('error', (e) => finish(e));
    sock.on('close', () => finish());
    // The request in pieces of 64 KiB, one per turn of the event loop, so that an early answer is
    // read (and stops the writing) before a reset caused by writing on could discard it.
    const all = Buffer.concat(serialize(req));
    let at = 0;
    const pump = () => {
      if (done || chunks.length || sock.destroyed || at >= all.length) return;
      const piece = all.subarray(at, (at += 65_536));
      sock.write(piece, (err) => {
        if (!err) setImmediate(pump);
      });
    };
    sock.once(secure ? 'secureConnect' : 'connect', pump);
  });
}
