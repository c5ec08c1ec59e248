// Writes a Reply to a uWS response: status, headers, and a body from bytes or from a stream with
// backpressure (the stream is read only as fast as the socket drains). Every write is corked,
// because replies are written after awaits, outside uWS's own callback.
import type { HttpResponse } from '@trufflesuite/uws-js-unofficial';
import { STATUS_CODES } from 'node:http';
import type { Readable } from 'node:stream';
import type { Reply } from '../api/reply.js';
import type { HeaderList } from './cors.js';
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

/**
 * What browsers rely on to contain a page, on every answer: no guessing of types, no referrer
 * leaving us. An answer that is not a page of ours (JSON, images, files) also gets a policy that
 * lets nothing in it run or be framed, should a browser ever open it as a document; pages give
 * their own policy.
 */
const BROWSER_HEADERS: HeaderList = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
];
const NOT_A_PAGE = "default-src 'none'; frame-ancestors 'none'; sandbox";

function writeHead(res: HttpResponse, state: ResponseState, status: number, base: HeaderList, headers: Record<string, string> | undefined, contentType?: string) {
  res.writeStatus(statusLine(status));
  if (state.requestId !== undefined) res.writeHeader('X-Request-Id', state.requestId);
  for (let i = 0; i < base.length; i++) res.writeHeader(base[i][0], base[i][1]);
  for (let i = 0; i < BROWSER_HEADERS.length; i++) res.writeHeader(BROWSER_HEADERS[i][0], BROWSER_HEADERS[i][1]);
  if (!headers?.['Content-Security-Policy']) res.writeHeader('Content-Security-Policy', NOT_A_PAGE);
  if (contentType) res.writeHeader('Content-Type', contentType);
  if (headers) for (const k in headers) res.writeHeader(k, headers[k]);
}

/** Sends a reply; `headOnly` for HEAD requests. Resolves when the last byte was handed to uWS. */
export async function sendReply(
  res: HttpResponse,
  state: ResponseState,
  reply: Reply,
  base: HeaderList,
  opts: { headOnly?: boolean; closeConnection?: boolean } = {},
): Promise<void> {
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
    await pipeStream(res, state, reply, base);
    return;
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
