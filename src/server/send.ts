// Writes a Reply to a uWS response: status, headers, and a body from bytes or from a stream with
// backpressure (the stream is read only as fast as the socket drains). Every write is corked,
// because replies are written after awaits, outside uWS's own callback.
import type { HttpResponse } from 'uWebSockets.js';
import { STATUS_CODES } from 'node:http';
import type { Readable } from 'node:stream';
import type { Reply } from '../api/reply.js';
import { encodedList, fixedHeaders, type HeaderList } from './header-bytes.js';
import { log } from '../core/log.js';

export interface ResponseState {
  aborted: boolean;
  /** Sent as X-Request-Id with the answer. */
  requestId?: string;
  /** Resolves a pending wait for writability when the client goes away. */
  onAbort?: () => void;
}

const statusLines = new Map<number, string>();
export function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (!line) statusLines.set(status, (line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`));
  return line;
}

// Header names and values that never change are handed to uWS as bytes made once: a string is
// converted to UTF-8 by uWS on every call, and on a cached tile those conversions were a tenth of
// the server's work.
const encodedStatus = new Map<number, Buffer>();
const statusBytes = (status: number) => {
  let b = encodedStatus.get(status);
  if (!b) encodedStatus.set(status, (b = Buffer.from(statusLine(status), 'latin1')));
  return b;
};
/**
 * Bytes of texts from a small set (header names set by our code, the content types of our
 * formats), made on first use; past 64 of them a text is handed over as it is, so the map never
 * grows should one ever be made from data.
 */
function byteCache(encoding: BufferEncoding): (text: string) => Buffer | string {
  const made = new Map<string, Buffer>();
  return (text) => {
    const b = made.get(text);
    if (b) return b;
    if (made.size >= 64) return text;
    const bytes = Buffer.from(text, encoding);
    made.set(text, bytes);
    return bytes;
  };
}
const nameBytes = byteCache('latin1');
const typeBytes = byteCache('utf8');
const X_REQUEST_ID = Buffer.from('X-Request-Id');
const CONTENT_TYPE = Buffer.from('Content-Type');

/**
 * What browsers rely on to contain a page, on every answer: no guessing of types, no referrer
 * leaving us. An answer that is not a page of ours (JSON, images, files) also gets a policy that
 * lets nothing in it run or be framed, should a browser ever open it as a document; pages give
 * their own policy.
 */
const BROWSER_HEADERS: HeaderList = fixedHeaders([
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
]);
const NOT_A_PAGE: HeaderList = fixedHeaders([['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'; sandbox"]]);

function writeList(res: HttpResponse, list: HeaderList): void {
  const enc = encodedList(list);
  if (enc) for (let i = 0; i < enc.length; i++) res.writeHeader(enc[i][0], enc[i][1]);
  else for (let i = 0; i < list.length; i++) res.writeHeader(list[i][0], list[i][1]);
}

function writeHead(res: HttpResponse, state: ResponseState, status: number, base: HeaderList, headers: Record<string, string> | undefined, contentType?: string) {
  res.writeStatus(statusBytes(status));
  if (state.requestId !== undefined) res.writeHeader(X_REQUEST_ID, state.requestId);
  writeList(res, base);
  writeList(res, BROWSER_HEADERS);
  if (!headers?.['Content-Security-Policy']) writeList(res, NOT_A_PAGE);
  if (contentType) res.writeHeader(CONTENT_TYPE, typeBytes(contentType));
  if (headers) for (const k in headers) res.writeHeader(nameBytes(k), headers[k]);
}

/**
 * Sends a reply; `headOnly` for HEAD requests. An answer whose bytes are at hand is sent at once
 * (no promise: on the cached tile path every allocation counts); a streamed one returns a promise
 * that resolves when its last byte was handed to uWS.
 */
export function sendReply(res: HttpResponse, state: ResponseState, reply: Reply, base: HeaderList, opts: { headOnly?: boolean; closeConnection?: boolean } = NO_OPTIONS): void | Promise<void> {
  if (state.aborted) {
    reply.stream?.destroy();
    return;
  }
  const close = opts.closeConnection ?? false;
  if (reply.stream) {
    if (opts.headOnly) {
      reply.stream.destroy();
      res.cork(() => {
        writeHead(res, state, reply.status, base, reply.headers, reply.contentType);
        endHead(res, reply.size);
      });
      return;
    }
    return pipeStream(res, state, reply, base);
  }
  let body: Buffer | string | undefined = reply.body;
  let type = reply.contentType;
  if (reply.json !== undefined) {
    body = JSON.stringify(reply.json);
    type ??= 'application/json';
  }
  res.cork(() => {
    writeHead(res, state, reply.status, base, reply.headers, body === undefined ? undefined : type);
    if (body === undefined || reply.status === 204 || reply.status === 304) res.endWithoutBody(0, close);
    else if (opts.headOnly) endHead(res, Buffer.byteLength(body));
    else res.end(body, close);
  });
}
const NO_OPTIONS = {};

/**
 * Ends a HEAD answer. This uWS build leaves the response open (and then aborts the process) when
 * endWithoutBody() gets any argument but 0, so the length goes out as a plain header. HEAD routes
 * never read a body, so the connection never needs closing here.
 */
function endHead(res: HttpResponse, size: number | undefined): void {
  if (size !== undefined) res.writeHeader('Content-Length', String(size));
  res.endWithoutBody();
}

async function pipeStream(res: HttpResponse, state: ResponseState, reply: Reply, base: HeaderList): Promise<void> {
  const stream = reply.stream as Readable;
  const total = reply.size;
  res.cork(() => writeHead(res, state, reply.status, base, reply.headers, reply.contentType));
  let ended = false;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (state.aborted) break;
      if (total === undefined) {
        let ok = true;
        res.cork(() => (ok = res.write(chunk)));
        if (!ok) await writable(res, state, () => true);
        continue;
      }
      const startOffset = res.getWriteOffset();
      let ok = false;
      let done = false;
      res.cork(() => ([ok, done] = res.tryEnd(chunk, total)));
      if (done) {
        ended = true;
        break;
      }
      if (!ok) {
        // uWS kept what it could not send; onWritable tells how far the socket got.
        await writable(res, state, (offset) => {
          const [ok2, done2] = res.tryEnd(chunk.subarray(offset - startOffset), total);
          if (done2) ended = true;
          return ok2 || done2;
        });
      }
    }
    // A source of known size ends the answer with its last byte; an empty one has no last byte
    // (an empty file used to leave the head unfinished until uWS dropped the connection), and one
    // shorter than it said must not pass for complete: cut the connection.
    if (!state.aborted && !ended) {
      if (total === undefined || total === 0) res.cork(() => res.end());
      else res.close();
    }
  } catch (e) {
    // The source failed after the head went out: all we can do is cut the connection.
    log.warn(`a streamed answer failed after its head was sent: ${(e as Error).message}`, { req: state.requestId });
    if (!state.aborted) res.close();
  } finally {
    stream.destroy();
  }
}

function writable(res: HttpResponse, state: ResponseState, retry: (offset: number) => boolean): Promise<void> {
  return new Promise((resolve) => {
    state.onAbort = resolve;
    res.onWritable((offset) => {
      const ok = retry(offset);
      if (ok) {
        state.onAbort = undefined;
        resolve();
      }
      return ok;
    });
  });
}
