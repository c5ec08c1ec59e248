// HTTP for remote data through undici: keep-alive connection pools (one for the administrator's
// data, one guarded by the outbound rules for users' URLs), timeouts, redirects checked again by
// the same rules, retries with backoff on transient failures (network errors, 429, 5xx), and a
// count of requests and bytes for Server-Timing. Failures are RemoteError: the URL and a reason,
// never a socket error code (it would tell a user whether a port is open).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request, type Dispatcher } from 'undici';
import { addTraffic } from '../core/stages.js';
import { outbound, outboundSeconds, OUTBOUND_SLOTS, type OutboundKind } from '../core/metrics.js';
import { checkUrl, guardedConnector, OutboundRefused, TRUSTED, type AllowEntry, type OutboundPolicy } from './outbound.js';

const TIMEOUTS = { headersTimeout: 15_000, bodyTimeout: 30_000 };
const CONNECT_TIMEOUT = 10_000;
const RETRIES = 3;
const MAX_REDIRECTS = 5;
const MAX_RANGE_ANSWER = 64 * 1024 * 1024;

// Enough connections per host that the blocks of every band of a tile go out at once.
const trustedAgent = new Agent({ connections: 32, keepAliveTimeout: 30_000, connect: { timeout: CONNECT_TIMEOUT }, ...TIMEOUTS });
// Users' URLs go through a pool whose connector checks each address against the rules, one pool
// per allow list (a thread has one: its engine's).
const NOTHING_ALLOWED: readonly AllowEntry[] = Object.freeze([]);
const guardedAgents = new WeakMap<readonly AllowEntry[], Agent>();

function agentFor(policy: OutboundPolicy): Dispatcher {
  if (policy.trusted) return trustedAgent;
  const allow = policy.allow ?? NOTHING_ALLOWED;
  let agent = guardedAgents.get(allow);
  if (!agent) guardedAgents.set(allow, (agent = new Agent({ connections: 32, keepAliveTimeout: 30_000, connect: guardedConnector(allow, { timeout: CONNECT_TIMEOUT }), ...TIMEOUTS })));
  return agent;
}

/** A remote document or file that cannot be read; the message names the URL and why. */
export class RemoteError extends Error {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`${url} cannot be read: ${reason}`);
  }
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The URL that answered (after redirects). */
  url: string;
  /** Attempts it took (more than one after transient failures). */
  attempts: number;
}

export interface HttpOptions {
  policy: OutboundPolicy;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** Bodies larger than this are refused (RemoteError). */
  maxBytes?: number;
  /** Time for the headers and for the body of each attempt (default: the pool's 15 s and 30 s). */
  timeoutMs?: number;
  /** What the request is for, in the metrics (xeo_outbound_*); null: not counted. */
  kind?: OutboundKind | null;
}

const transient = (status: number) => status === 429 || (status >= 500 && status !== 501);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function retryAfterMs(h: string | string[] | undefined): number | null {
  const v = Array.isArray(h) ? h[0] : h;
  if (!v || !/^\d+$/.test(v)) return null;
  return Math.min(5_000, Number(v) * 1000);
}

/** One exchange, redirects followed (each target checked by the rules again). */
async function once(url: string, o: HttpOptions): Promise<HttpAnswer> {
  let current = url;
  let method = o.method ?? 'GET';
  let body = o.body;
  for (let hop = 0; ; hop++) {
    checkUrl(current, o.policy);
    const timeouts = o.timeoutMs ? { headersTimeout: o.timeoutMs, bodyTimeout: o.timeoutMs } : {};
    const res = await request(current, { method, headers: o.headers, body, signal: o.signal, dispatcher: agentFor(o.policy), ...timeouts });
    const location = res.headers.location;
    if (res.statusCode >= 300 && res.statusCode < 400 && typeof location === 'string') {
      await res.body.dump();
      addTraffic(0);
      if (hop >= MAX_REDIRECTS) throw new RemoteError(url, `more than ${MAX_REDIRECTS} redirects`);
      current = new URL(location, current).href;
      if (res.statusCode === 303) {
        method = 'GET';
        body = undefined;
      }
      continue;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of res.body) {
      size += c.length;
      if (o.maxBytes !== undefined && size > o.maxBytes) {
        res.body.destroy();
        addTraffic(size);
        throw new RemoteError(url, `it is larger than ${o.maxBytes} bytes`);
      }
      chunks.push(c);
    }
    addTraffic(size);
    return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), url: current, attempts: 1 };
  }
}

/**
 * An HTTP exchange for remote data, retried with exponential backoff (and Retry-After) on network
 * errors, 429 and 5xx. Refusals by the outbound rules and aborts are never retried.
 */
export async function httpRequest(url: string, o: HttpOptions): Promise<HttpAnswer> {
  const kind = o.kind === undefined ? 'document' : o.kind;
  if (kind === null) return attempts(url, o);
  const t0 = performance.now();
  let host: string;
  try {
    host = new URL(url).host;
  } catch {
    host = 'invalid';
  }
  try {
    const res = await attempts(url, o);
    outbound.add([host, kind, res.status < 400 ? 'ok' : 'http_error'], 0);
    outbound.add([host, kind, res.status < 400 ? 'ok' : 'http_error'], 1, res.body.length);
    return res;
  } catch (e) {
    outbound.add([host, kind, e instanceof OutboundRefused ? 'refused' : o.signal?.aborted ? 'canceled' : 'failed'], 0);
    throw e;
  } finally {
    outboundSeconds.observe(OUTBOUND_SLOTS[kind], (performance.now() - t0) / 1000);
  }
}

async function attempts(url: string, o: HttpOptions): Promise<HttpAnswer> {
  let last = 'no answer';
  for (let attempt = 0; attempt <= RETRIES; attempt++) {
    let wait = 50 * 2 ** attempt * (1 + Math.random());
    try {
      const res = await once(url, o);
      if (!transient(res.status) || attempt === RETRIES) return { ...res, attempts: attempt + 1 };
      last = `HTTP ${res.status}`;
      wait = retryAfterMs(res.headers['retry-after']) ?? wait;
    } catch (e) {
      if (o.signal?.aborted) throw o.signal.reason ?? e;
      if (e instanceof OutboundRefused) throw e;
      if (e instanceof RemoteError) throw e;
      // The socket error's code would say whether something listens there: keep it to ourselves.
      last = 'no answer from the host';
    }
    if (attempt < RETRIES) await sleep(wait);
  }
  throw new RemoteError(url, `${last} after ${RETRIES + 1} attempts`);
}

const answered = (res: HttpAnswer) => `it answered HTTP ${res.status}${res.attempts > 1 ? ` after ${res.attempts} attempts` : ''}`;

/** A JSON document (STAC): 200 and valid JSON, or a RemoteError saying which. */
export async function fetchJson(url: string, policy: OutboundPolicy, maxBytes = 16 * 1024 * 1024): Promise<any> {
  const res = await httpRequest(url, { policy, maxBytes, headers: { accept: 'application/geo+json, application/json' } });
  if (res.status !== 200) throw new RemoteError(url, answered(res));
  try {
    return JSON.parse(res.body.toString('utf8'));
  } catch {
    throw new RemoteError(url, 'it is not JSON');
  }
}

/** Bytes [start, end) of a remote file: the answer's body and the file's size from Content-Range (null if unknown). */
export async function fetchRange(url: string, policy: OutboundPolicy, start: number, end: number, signal?: AbortSignal): Promise<{ data: Buffer; size: number | null }> {
  // A server that ignores Range sends the whole file: bounded, so a huge one is refused, not held.
  const res = await httpRequest(url, { policy, signal, kind: 'read', headers: { range: `bytes=${start}-${end - 1}` }, maxBytes: Math.max(MAX_RANGE_ANSWER, 2 * (end - start)) });
  if (res.status === 206) {
    const m = /\/(\d+)\s*$/.exec(String(res.headers['content-range'] ?? ''));
    return { data: res.body, size: m ? Number(m[1]) : null };
  }
  if (res.status === 200) return { data: res.body.subarray(start, end), size: res.body.length };
  if (res.status === 416) return { data: Buffer.alloc(0), size: Number(/\/(\d+)/.exec(String(res.headers['content-range'] ?? ''))?.[1] ?? start) };
  throw new RemoteError(url, `${answered(res)} to a range request`);
}

/** A JSON document over HTTP (STAC API pages, token endpoints): its status and parsed body. */
export interface JsonResponse {
  status: number;
  /** Parsed body; undefined when the body is not JSON. */
  body: unknown;
}

const MAX_JSON_BYTES = 16 * 1024 * 1024;

/**
 * A JSON exchange (GET, or POST with a JSON body) under `policy`: TRUSTED (the default) for the
 * administrator's STAC APIs and token endpoints, ON_USERS_BEHALF for a user's. Retried like every
 * request; network failures are RemoteError, refusals OutboundRefused.
 */
export async function requestJson(
  url: string,
  opts: { method?: 'GET' | 'POST'; body?: unknown; headers?: Record<string, string>; timeoutMs?: number; policy?: OutboundPolicy; kind?: OutboundKind | null } = {},
): Promise<JsonResponse> {
  const res = await httpRequest(url, {
    policy: opts.policy ?? TRUSTED,
    kind: opts.kind,
    method: opts.method ?? 'GET',
    timeoutMs: opts.timeoutMs,
    maxBytes: MAX_JSON_BYTES,
    headers: {
      accept: 'application/geo+json, application/json',
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  let body: unknown;
  try {
    body = JSON.parse(res.body.toString('utf8'));
  } catch {
    body = undefined;
  }
  return { status: res.status, body };
}

/**
 * Runs the client's code once against a loopback server of its own (a JSON document, GET and
 * POST), so the first real request of a thread (a STAC search on the main thread) does not pay for
 * the JIT of undici and of this module. Counted nowhere: the traffic counters are reset per graph.
 */
export async function warmUpHttp(): Promise<void> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"type":"FeatureCollection","features":[]}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    for (let i = 0; i < 3; i++) {
      await requestJson(url, { kind: null });
      await requestJson(url, { method: 'POST', body: { limit: 1 }, kind: null });
    }
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}
