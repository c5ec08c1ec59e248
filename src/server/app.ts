// The uWS server: one catch-all handler that routes through our route table, so routing, OPTIONS,
// CORS, authentication and error answers all happen in one place for every path and version.
// createHttpServer puts it together from named steps: route families for the metrics, the headers
// of every answer, the listener (listener.ts), and per request dispatch: normalise the path, route
// it (unknown path, OPTIONS, method not allowed), then answer at once or after the body and the
// user (exchange.ts holds one request's answer and errorReply).
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { AppContext, AppRequest, AppRoute } from '../api/context.js';
import type { UwsModule } from './uws.js';
import { Router } from '../api/routes.js';
import { LATEST, splitVersion, looksLikeVersion, type VersionProfile } from '../api/versions.js';
import { createCors, type Cors } from './cors.js';
import { ApiError } from '../core/errors.js';
import type { Config } from '../core/config.js';
import { BodyReader } from './body.js';
import { ApiRequest } from '../api/request.js';
import { sendReply } from './send.js';
import { fixedHeaders, isFixedHeaders, type HeaderList } from './header-bytes.js';
import type { Reply } from '../api/reply.js';
import { inRequest } from '../core/log.js';
import { gauge } from '../core/metrics.js';
import { familyIndex } from './metrics.js';
import { mountOps, type OpsEndpoints } from './ops.js';
import { RequestIds } from './request-ids.js';
import { Exchange, InFlight } from './exchange.js';
import { Listener } from './listener.js';

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

export function createHttpServer(uws: UwsModule, ctx: AppContext, rootRoutes: AppRoute[], ops: OpsEndpoints): HttpServer {
  const rootRouter = new Router(rootRoutes);
  nameRouteFamilies([rootRouter, ...ctx.routers.values()]);
  const flight = new InFlight();
  gauge('xeo_http_requests_in_flight', 'Requests being answered (a body being read, a computation, a stream being sent).', [], () => [{ labels: {}, value: flight.count }]);
  const dispatcher = new Dispatcher(ctx, rootRouter, createCors(ctx.brandWord), answerHeaders(ctx.config.tls), flight);
  const onRequest = (res: HttpResponse, uReq: HttpRequest) => {
    const headers: Record<string, string> = {};
    uReq.forEach((k, v) => (headers[k] = v));
    const method = uReq.getCaseSensitiveMethod();
    dispatcher.dispatch(res, method === 'GET' ? method : method.toUpperCase(), uReq.getUrl(), uReq.getQuery() ?? '', headers);
  };
  const listener = new Listener(uws, ctx.config.tls, (app) => {
    mountOps(app, ops);
    app.any('/*', onRequest);
  });
  return {
    listen: (host, port) => listener.listen(host, port),
    reloadTls: () => listener.reloadTls(),
    close: () => listener.close(),
    async drain(ms) {
      flight.draining = true;
      listener.close();
      return flight.settle(ms);
    },
  };
}

/** Each route's family for the request metrics, found once here rather than per request. */
function nameRouteFamilies(routers: Router<AppContext>[]): void {
  for (const router of routers) for (const r of router.routes) r.metricsFamily ??= familyIndex(r.path);
}

/** The headers of every answer: a version's CORS headers, plus HSTS over TLS (a list used for every answer is joined once). */
function answerHeaders(tls: Config['tls']): (cors: HeaderList) => HeaderList {
  // Browsers keep to HTTPS for a year once they have seen it here.
  if (!tls) return (cors) => cors;
  const hsts: HeaderList = [['Strict-Transport-Security', 'max-age=31536000']];
  const joined = new WeakMap<HeaderList, HeaderList>();
  return (cors) => {
    let both = joined.get(cors);
    if (both) return both;
    both = [...cors, ...hsts];
    if (isFixedHeaders(cors)) joined.set(cors, fixedHeaders(both));
    return both;
  };
}

/** A run of slashes is one, and a trailing slash goes: the version and the path below it. */
function normalise(url: string): { url: string; version: VersionProfile | null; path: string } {
  // As in nginx and most frameworks: tools join a base URL ending in '/' with '/jobs/ID'. Only
  // literal slashes: an encoded one (%2F) in a file path stays what it is.
  if (url.includes('//')) url = url.replace(/\/{2,}/g, '/');
  const split = splitVersion(url);
  let path = split ? split.rest : url;
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  return { url, version: split?.version ?? null, path };
}

/** A request's route and the parameters of its path. */
type Routed = { route: AppRoute; params: Record<string, string> };

/** Routes each request and answers it, at once where it can. */
class Dispatcher {
  private readonly ids: RequestIds;
  private readonly settings: { accessLog: boolean; flight: InFlight };

  constructor(
    private readonly ctx: AppContext,
    private readonly rootRouter: Router<AppContext>,
    private readonly cors: Cors,
    private readonly withHsts: (cors: HeaderList) => HeaderList,
    flight: InFlight,
  ) {
    this.ids = new RequestIds(ctx.config.trustProxy > 0);
    this.settings = { accessLog: ctx.config.accessLog, flight };
  }

  dispatch(res: HttpResponse, method: string, rawUrl: string, rawQuery: string, headers: Record<string, string>): void {
    const id = this.ids.next(headers['x-request-id']);
    const { url, version, path } = normalise(rawUrl);
    const ex = new Exchange(this.settings, res, id, method, url, headers, this.withHsts(this.cors.headers(version, headers.origin)));
    const route = this.route(ex, version, path);
    if (!route) return;
    const hasBody = route.route.body !== undefined && route.route.body !== 'none';
    const needsUser = route.route.auth === 'required' || (route.route.auth === 'optional' && headers.authorization !== undefined);
    if (!hasBody && !needsUser) this.answerAtOnce(ex, route, rawQuery, version, path);
    else this.answerLater(ex, route, rawQuery, version, path, hasBody);
  }

  /** The route of the request, or null once an unknown path, a preflight or a wrong method is answered. */
  private route(ex: Exchange, version: VersionProfile | null, path: string): Routed | null {
    const router = version ? this.ctx.routers.get(version)! : this.rootRouter;
    const found = router.lookup(path);
    if (!found) {
      const first = ex.url.split('/')[1] ?? '';
      void ex.fail(!version && looksLikeVersion(first) ? new ApiError('UnsupportedApiVersion', { version: first }) : new ApiError('NotFound'));
      return null;
    }
    if (ex.method === 'OPTIONS') {
      ex.family = found.byMethod.values().next().value?.metricsFamily ?? ex.family;
      ex.finish(204);
      const head = [...ex.base, ...this.cors.preflight([...found.byMethod.keys()], ex.headers['access-control-request-headers'])];
      void sendReply(ex.res, ex.state, { status: 204 }, head);
      return null;
    }
    const route = found.byMethod.get(ex.method === 'HEAD' ? 'GET' : ex.method);
    if (!route) {
      const methods = [...found.byMethod.keys()];
      const err = new ApiError('MethodNotAllowed', { method: ex.method, allowed: methods.join(', ') });
      err.headers = { Allow: ['OPTIONS', ...methods].join(', ') };
      void ex.fail(err);
      return null;
    }
    ex.family = route.metricsFamily!;
    return { route, params: found.params };
  }

  /** The client's address, made only when asked for and at the latest before the uWS callback returns (the response may be gone after it). */
  private addressOf(ex: Exchange): () => string {
    let address: string | null = null;
    return () => (address ??= clientAddress(Buffer.from(ex.res.getRemoteAddressAsText()).toString(), ex.headers['x-forwarded-for'], this.ctx.config.trustProxy));
  }

  /**
   * Fast path (discovery, cached answers): a handler that answers at once is sent inside this uWS
   * callback, with no promise and no abort handler.
   */
  private answerAtOnce(ex: Exchange, { route, params }: Routed, rawQuery: string, version: VersionProfile | null, path: string): void {
    const addressOf = this.addressOf(ex);
    ex.request = new ApiRequest<AppContext>(this.ctx, ex.id, ex.method, path, rawQuery, ex.headers, version ?? LATEST, params, null, addressOf);
    let out: Reply | Promise<Reply>;
    try {
      out = route.handler(ex.request);
    } catch (e) {
      return void ex.fail(e);
    }
    // A stream is written over several ticks, so it needs the abort handler too.
    if (!(out instanceof Promise) && !out.stream) return void ex.succeed(out);
    addressOf();
    ex.watchAbort();
    ex.later(Promise.resolve(out));
  }

  /** A request with a body or a user to find first: read and authenticated off this callback, answered later. */
  private answerLater(ex: Exchange, { route, params }: Routed, rawQuery: string, version: VersionProfile | null, path: string, hasBody: boolean): void {
    const limit = route.body === 'json' ? this.ctx.config.maxJsonBodyBytes : this.ctx.config.maxUploadBytes;
    // Refuse a declared oversize body at once, without reading it.
    if (hasBody && Number(ex.headers['content-length']) > limit) return void ex.fail(new ApiError('PayloadTooLarge', { limit }), true);
    ex.watchAbort();
    if (hasBody) ex.bodyReader = new BodyReader(ex.res, limit);
    const addressOf = this.addressOf(ex);
    addressOf();
    const req = new ApiRequest<AppContext>(this.ctx, ex.id, ex.method, path, rawQuery, ex.headers, version ?? LATEST, params, ex.bodyReader, addressOf);
    ex.request = req;
    ex.later(inRequest(ex.id, () => this.run(req, route)));
  }

  private async run(req: AppRequest, route: AppRoute): Promise<Reply> {
    const authorization = req.headers.authorization;
    if (route.auth === 'required' || (route.auth === 'optional' && authorization)) {
      req.user = await this.ctx.auth.user(authorization, req.clientAddress);
    }
    return route.handler(req);
  }
}

/**
 * The client's address: the connection's, unless `trusted` proxies are in front, whose
 * X-Forwarded-For entries (each appends the address it saw) are believed for that many hops.
 */
export function clientAddress(remote: string, forwarded: string | undefined, trusted: number): string {
  if (trusted <= 0 || !forwarded) return remote;
  const hops = forwarded
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  return hops[Math.max(0, hops.length - trusted)] ?? remote;
}
