// The uWS server: one catch-all handler that routes through our route table, so routing, OPTIONS,
// CORS, authentication and error answers all happen in one place for every path and version.
import type { HttpRequest, HttpResponse, us_listen_socket } from 'uWebSockets.js';
import type { AppContext, AppRequest, AppRoute } from '../api/context.js';
import type { UwsModule } from './uws.js';
import { Router } from '../api/routes.js';
import { LATEST, splitVersion, looksLikeVersion } from '../api/versions.js';
import { createCors } from './cors.js';
import { ApiError, toApiError } from '../core/errors.js';
import { messageOf, pickLanguage, type Lang } from '../core/messages.js';
import { BodyReader } from './body.js';
import { RequestAborted } from '../core/errors.js';
import { ApiRequest } from '../api/request.js';
import { sendReply, type ResponseState } from './send.js';
import { fixedHeaders, isFixedHeaders, type HeaderList } from './header-bytes.js';
import type { Reply } from '../api/reply.js';
import { inRequest, log } from '../core/log.js';
import { gauge } from '../core/metrics.js';
import { familyIndex, observeRequest, UNMATCHED } from './metrics.js';
import { mountOps, type OpsEndpoints } from './ops.js';
import { RequestIds } from './request-ids.js';

/** Most bytes of a refused request's body read and dropped so that the answer arrives (else: close). */
const DRAIN_BYTES = 8 * 1024 * 1024;

export interface HttpServer {
  listen(host: string, port: number): Promise<number>;
  /** With HTTPS: takes the certificate files again (new connections get the new one; open ones keep theirs). */
  reloadTls(): Promise<void>;
  /** Stops accepting connections. */
  close(): void;
  /**
   * Stops accepting connections and waits until no request is in flight (answers on connections
   * still open close them), at most `ms`; resolves with the number still in flight then.
   */
  drain(ms: number): Promise<number>;
}

/** TLS 1.2 with forward secrecy and AEAD only (TLS 1.3 is always on): older protocols cannot agree on any of these. */
const MODERN_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** uSockets' LIBUS_LISTEN_EXCLUSIVE_PORT and LIBUS_LISTEN_DEFAULT (SO_REUSEPORT). */
const LISTEN_EXCLUSIVE_PORT = 1;
const LISTEN_SHARED_PORT = 0;

export function createHttpServer(uws: UwsModule, ctx: AppContext, rootRoutes: AppRoute[], ops: OpsEndpoints): HttpServer {
  const cors = createCors(ctx.brandWord);
  const routers = ctx.routers;
  const rootRouter = new Router(rootRoutes);
  // Each route's family for the request metrics, found once here rather than per request.
  for (const router of [rootRouter, ...routers.values()]) for (const r of router.routes) r.metricsFamily ??= familyIndex(r.path);
  const ids = new RequestIds(ctx.config.trustProxy > 0);
  const accessLog = ctx.config.accessLog;
  /** Requests answered asynchronously and not yet finished (those answered at once are never in flight). */
  let inFlight = 0;
  let draining = false;
  let idle: (() => void) | null = null;
  const settled = () => {
    if (--inFlight === 0 && idle) idle();
  };
  gauge('xeo_http_requests_in_flight', 'Requests being answered (a body being read, a computation, a stream being sent).', [], () => [{ labels: {}, value: inFlight }]);
  const tls = ctx.config.tls;
  // Browsers keep to HTTPS for a year once they have seen it here.
  const hsts: HeaderList = tls ? [['Strict-Transport-Security', 'max-age=31536000']] : [];
  /** A version's CORS headers, with HSTS over TLS (a list used for every answer is joined once). */
  const joined = new WeakMap<HeaderList, HeaderList>();
  const baseHeaders = (list: HeaderList): HeaderList => {
    if (!hsts.length) return list;
    let both = joined.get(list);
    if (both) return both;
    both = [...list, ...hsts];
    if (isFixedHeaders(list)) joined.set(list, fixedHeaders(both));
    return both;
  };
  const newApp = () => (tls ? uws.SSLApp({ cert_file_name: tls.cert, key_file_name: tls.key, ssl_ciphers: MODERN_CIPHERS }) : uws.App());
  let listenSocket: us_listen_socket | null = null;
  let bound: { host: string; port: number } | null = null;

  const onRequest = (res: HttpResponse, uReq: HttpRequest) => {
    const headers: Record<string, string> = {};
    uReq.forEach((k, v) => (headers[k] = v));
    const method = uReq.getCaseSensitiveMethod();
    dispatch(res, method === 'GET' ? method : method.toUpperCase(), uReq.getUrl(), uReq.getQuery() ?? '', headers);
  };
  const mount = (target: ReturnType<typeof newApp>) => {
    mountOps(target, ops);
    target.any('/*', onRequest);
    return target;
  };
  let app = mount(newApp());

  function dispatch(res: HttpResponse, method: string, url: string, rawQuery: string, headers: Record<string, string>): void {
    const started = performance.now();
    const id = ids.next(headers['x-request-id']);
    let family = UNMATCHED;
    // A run of slashes is one, as in nginx and most frameworks: tools join a base URL ending in '/'
    // with '/jobs/ID'. Only literal slashes: an encoded one (%2F) in a file path stays what it is.
    if (url.includes('//')) url = url.replace(/\/{2,}/g, '/');
    const split = splitVersion(url);
    const version = split?.version ?? null;
    let path = split ? split.rest : url;
    if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
    const base = baseHeaders(cors.headers(version, headers.origin));
    // The client's address costs a system call and a formatting: made only when asked for, and at
    // the latest before the callback of uWS returns (the response may be gone after it).
    let address: string | null = null;
    const addressOf = () => (address ??= clientAddress(Buffer.from(res.getRemoteAddressAsText()).toString(), headers['x-forwarded-for'], ctx.config.trustProxy));
    const state: ResponseState = { aborted: false, requestId: id };
    let request: AppRequest | null = null;
    let bodyReader: BodyReader | null = null;
    // uWS needs an abort handler before the callback returns unanswered; answers given at once skip it.
    const watchAbort = () =>
      res.onAborted(() => {
        state.aborted = true;
        state.onAbort?.();
        request?.markAborted();
      });
    const finish = (status: number) => {
      const ms = performance.now() - started;
      observeRequest(family, method, status, ms);
      if (accessLog) log.info(`${method} ${url} ${status} ${ms.toFixed(1)}ms`, { req: id });
    };
    const fail = (e: unknown, close = false): Promise<void> | void => {
      const { reply, closeConnection } = errorReply(e, pickLanguage(headers['accept-language']), method, url, id);
      if (!reply) return;
      // HEAD gets the head of the error answer only: a body would be read as the next response.
      const answer = (closeIt: boolean) => {
        finish(reply.status);
        return sendReply(res, state, reply, base, { headOnly: method === 'HEAD', closeConnection: closeIt || draining });
      };
      const reader = bodyReader;
      if (reader && !reader.complete && !close && !closeConnection) {
        // Refused before its body was read (a bad token, an unknown id): read and drop the rest
        // first. Closing on unread bytes makes the kernel reset the connection, and the reset can
        // discard the answer before the client reads it; a body too long to drain still closes.
        return reader.drain(DRAIN_BYTES).then((ended) => answer(!ended));
      }
      return answer(close || closeConnection || (reader !== null && !reader.complete));
    };
    const succeed = (reply: Reply) => {
      finish(reply.status);
      // While draining, answers close their connection: the client's next request goes to another node.
      return sendReply(res, state, reply, base, { headOnly: method === 'HEAD', closeConnection: (bodyReader !== null && !bodyReader.complete) || draining });
    };
    /** Follows an answer given later: the request is in flight until it is sent. */
    const later = (p: Promise<unknown>) => {
      inFlight++;
      p.then(settled, settled);
    };

    const router = version ? routers.get(version)! : rootRouter;
    const found = router.lookup(path);
    if (!found) {
      const first = url.split('/')[1] ?? '';
      return void fail(!version && looksLikeVersion(first) ? new ApiError('UnsupportedApiVersion', { version: first }) : new ApiError('NotFound'));
    }
    if (method === 'OPTIONS') {
      family = found.byMethod.values().next().value?.metricsFamily ?? UNMATCHED;
      finish(204);
      const head = [...base, ...cors.preflight([...found.byMethod.keys()], headers['access-control-request-headers'])];
      return void sendReply(res, state, { status: 204 }, head);
    }
    const route = found.byMethod.get(method === 'HEAD' ? 'GET' : method);
    if (!route) {
      const methods = [...found.byMethod.keys()];
      const err = new ApiError('MethodNotAllowed', { method, allowed: methods.join(', ') });
      err.headers = { Allow: ['OPTIONS', ...methods].join(', ') };
      return void fail(err);
    }
    family = route.metricsFamily!;
    const hasBody = route.body !== undefined && route.body !== 'none';
    const needsUser = route.auth === 'required' || (route.auth === 'optional' && headers.authorization !== undefined);

    if (!hasBody && !needsUser) {
      // Fast path (discovery, cached answers): a handler that answers at once is sent inside this
      // uWS callback, with no promise and no abort handler.
      request = new ApiRequest<AppContext>(ctx, id, method, path, rawQuery, headers, version ?? LATEST, found.params, null, addressOf);
      let out: Reply | Promise<Reply>;
      try {
        out = route.handler(request);
      } catch (e) {
        return void fail(e);
      }
      // A stream is written over several ticks, so it needs the abort handler too.
      if (!(out instanceof Promise) && !out.stream) return void succeed(out);
      addressOf();
      watchAbort();
      later(Promise.resolve(out).then(succeed, (e) => fail(e)));
      return;
    }

    const limit = route.body === 'json' ? ctx.config.maxJsonBodyBytes : ctx.config.maxUploadBytes;
    // Refuse a declared oversize body at once, without reading it.
    if (hasBody && Number(headers['content-length']) > limit) return void fail(new ApiError('PayloadTooLarge', { limit }), true);
    watchAbort();
    if (hasBody) bodyReader = new BodyReader(res, limit);
    addressOf();
    request = new ApiRequest<AppContext>(ctx, id, method, path, rawQuery, headers, version ?? LATEST, found.params, bodyReader, addressOf);
    const req = request;
    later(inRequest(id, () => run(req, route)).then(succeed, (e) => fail(e)));
  }

  async function run(req: AppRequest, route: AppRoute): Promise<Reply> {
    const authorization = req.headers.authorization;
    if (route.auth === 'required' || (route.auth === 'optional' && authorization)) {
      req.user = await ctx.auth.user(authorization, req.clientAddress);
    }
    return route.handler(req);
  }

  const listenOn = (target: typeof app, host: string, port: number, options: number) =>
    new Promise<us_listen_socket>((resolve, reject) => {
      const listen = target.listen as unknown as (h: string, p: number, options: number, cb: (s: us_listen_socket | false) => void) => void;
      listen.call(target, host, port, options, (sock) => (sock ? resolve(sock) : reject(new Error(`cannot listen on ${host}:${port} (address in use or not available)`))));
    });

  return {
    async listen(host, port) {
      // Exclusive: uWS otherwise shares the port (SO_REUSEPORT) with a server already running
      // there, and requests would alternate between the two. With HTTPS the port must be shared
      // with this server's own next listener when a renewed certificate comes in (reloadTls), so
      // exclusivity is checked first with a probe, then the listener opens shareable.
      // (uSockets makes a listener shareable only on a given port, so port 0 is resolved by the probe.)
      if (tls) {
        const probe = await listenOn(uws.App(), host, port, LISTEN_EXCLUSIVE_PORT);
        port = uws.us_socket_local_port(probe);
        uws.us_listen_socket_close(probe);
      }
      listenSocket = await listenOn(app, host, port, tls ? LISTEN_SHARED_PORT : LISTEN_EXCLUSIVE_PORT);
      bound = { host, port: uws.us_socket_local_port(listenSocket) };
      return bound.port;
    },
    async reloadTls() {
      if (!tls || !bound || !listenSocket) return;
      // The new certificate's listener opens beside the old one (both shareable), then the old one
      // closes: no moment without a listener, and open connections keep the app they started with.
      const next = mount(newApp());
      const sock = await listenOn(next, bound.host, bound.port, LISTEN_SHARED_PORT);
      uws.us_listen_socket_close(listenSocket);
      listenSocket = sock;
      app = next;
    },
    close() {
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = null;
    },
    async drain(ms) {
      draining = true;
      this.close();
      if (inFlight > 0) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          idle = resolve;
          timer = setTimeout(resolve, ms);
        });
        clearTimeout(timer);
        idle = null;
      }
      return inFlight;
    },
  };
}

/**
 * The one place where failures become HTTP answers: a JSON error object with a catalogue code,
 * whose `id` is the request's (also in its X-Request-Id header and its log lines).
 */
export function errorReply(e: unknown, lang: Lang, method: string, url: string, id: string): { reply: Reply | null; closeConnection: boolean } {
  if (e instanceof RequestAborted) return { reply: null, closeConnection: false };
  const err = toApiError(e, `${method} ${url}`, { req: id });
  if (err.code === 'StorageFailure') log.error(`${method} ${url}: ${err.message}`, { req: id });
  const msg = messageOf(err, lang, { id });
  return {
    reply: {
      status: err.status,
      json: { id, code: err.code, message: msg.text, links: [] },
      headers: { 'Content-Language': msg.lang, ...err.headers },
    },
    closeConnection: err.closeConnection,
  };
}

/**
 * The client's address: the connection's, unless `trusted` proxies are in front, whose
 * X-Forwarded-For entries (each appends the address it saw) are believed for that many hops.
 */
export function clientAddress(remote: string, forwarded: string | undefined, trusted: number): string {
  if (trusted <= 0 || !forwarded) return remote;
  const hops = forwarded.split(',').map((h) => h.trim()).filter(Boolean);
  return hops[Math.max(0, hops.length - trusted)] ?? remote;
}
