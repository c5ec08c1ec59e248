// The operator's endpoints: GET /healthz, GET /readyz and GET /metrics (HEAD too). They are routes
// of uWS itself, matched before the API's catch-all, so they answer on the event loop ahead of any
// routing, authentication, throttle or queue, and never wait for compute. They are not in the
// route table (so not listed in GET /). /metrics is on the API port unless XEO_METRICS_PORT gives
// it a listener of its own (listenOps), which serves the health endpoints too; a worker has only that.
import type { HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { UwsModule } from './uws.js';
import type { Readiness } from './health.js';
import type { MetricsRegistry } from './metrics.js';
import { statusLine } from './send.js';
import { log } from '../core/log.js';
import { RequestIds } from './request-ids.js';

/** Ids of the error answers of these endpoints (their successes need none). */
const errorIds = new RequestIds(false);

export interface OpsEndpoints {
  readiness: Readiness;
  /** Null: /metrics is not served on this listener. */
  metrics: MetricsRegistry | null;
}

type Answer = { status: number; type: string; body: string; headers?: [string, string][] };

function send(res: HttpResponse, head: boolean, a: Answer, aborted: { v: boolean }): void {
  if (aborted.v) return;
  res.cork(() => {
    res.writeStatus(statusLine(a.status));
    res.writeHeader('Content-Type', a.type);
    res.writeHeader('Cache-Control', 'no-store');
    res.writeHeader('X-Content-Type-Options', 'nosniff');
    res.writeHeader('Access-Control-Allow-Origin', '*');
    for (const [k, v] of a.headers ?? []) res.writeHeader(k, v);
    if (head) {
      res.writeHeader('Content-Length', String(Buffer.byteLength(a.body)));
      res.endWithoutBody();
    } else res.end(a.body);
  });
}

const json = (status: number, body: unknown): Answer => ({ status, type: 'application/json', body: JSON.stringify(body) });

/** An error answer as every other of ours: id, catalogue code, message, links. */
function error(status: number, code: string, message: string): Answer {
  const id = errorIds.next(undefined);
  return { ...json(status, { id, code, message, links: [] }), headers: [['X-Request-Id', id]] };
}

/** Registers the endpoints on a uWS app (GET and HEAD; other methods 405). */
export function mountOps(app: TemplatedApp, ops: OpsEndpoints): void {
  const route = (path: string, answer: () => Answer | Promise<Answer>) =>
    app.any(path, (res, req) => {
      const method = req.getCaseSensitiveMethod().toUpperCase();
      const aborted = { v: false };
      if (method !== 'GET' && method !== 'HEAD') {
        const e = error(405, 'MethodNotAllowed', `${path} answers GET and HEAD.`);
        return send(res, false, { ...e, headers: [...(e.headers ?? []), ['Allow', 'GET, HEAD']] }, aborted);
      }
      const head = method === 'HEAD';
      let a: Answer | Promise<Answer>;
      try {
        a = answer();
      } catch (e) {
        log.error(`${path} failed`, { err: e });
        a = error(500, 'Internal', 'The answer could not be made.');
      }
      if (!(a instanceof Promise)) return send(res, head, a, aborted);
      res.onAborted(() => (aborted.v = true));
      a.then(
        (x) => send(res, head, x, aborted),
        (e: unknown) => {
          log.error(`${path} failed`, { err: e });
          send(res, head, error(500, 'Internal', 'The answer could not be made.'), aborted);
        },
      );
    });
  route('/healthz', () => json(200, { status: 'ok' }));
  route('/readyz', async () => {
    const r = await ops.readiness.report();
    return json(r.ready ? 200 : 503, r.ready ? { status: r.status, components: r.components } : { status: r.status, not_ready: r.not_ready, components: r.components });
  });
  const metrics = ops.metrics;
  if (metrics) route('/metrics', async () => ({ status: 200, type: metrics.contentType, body: await metrics.text() }));
}

/** A listener of its own for the operator's endpoints (XEO_METRICS_PORT). */
export async function listenOps(uws: UwsModule, host: string, port: number, ops: OpsEndpoints): Promise<{ port: number; close(): void }> {
  const app = uws.App();
  mountOps(app, ops);
  app.any('/*', (res) => send(res, false, error(404, 'NotFound', 'This port serves /metrics, /healthz and /readyz.'), { v: false }));
  // Exclusive (uSockets' LIBUS_LISTEN_EXCLUSIVE_PORT): not shared with a server already there.
  const listen = app.listen as unknown as (h: string, p: number, options: number, cb: (s: us_listen_socket | false) => void) => void;
  const sock = await new Promise<us_listen_socket>((resolve, reject) =>
    listen.call(app, host, port, 1, (s) => (s ? resolve(s) : reject(new Error(`cannot listen on ${host}:${port} for metrics (address in use or not available)`)))),
  );
  return { port: uws.us_socket_local_port(sock), close: () => uws.us_listen_socket_close(sock) };
}
