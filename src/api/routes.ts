// The route table's types and the router built from it. The same table feeds request routing, the
// `endpoints` list of GET /, the OPTIONS answers and the OpenAPI document, so they cannot drift.
import type { ApiVersion, VersionProfile } from './versions.js';
import type { ApiRequest, LinkBase } from './request.js';
import type { Reply } from './reply.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
/** none: public; optional: public, a token adds private data; required: Bearer; basic: HTTP Basic. */
export type AuthMode = 'none' | 'optional' | 'required' | 'basic';
/** json: buffered and parsed (size-limited); stream: the handler reads chunks with backpressure. */
export type BodyMode = 'none' | 'json' | 'stream';

/** A route of the table; `Ctx` is the application context handlers receive (api/context.ts). */
export interface Route<Ctx extends LinkBase = LinkBase> {
  method: Method;
  /** openEO-style path with `{param}` placeholders; a final `{path}` takes the rest of the URL. */
  path: string;
  summary: string;
  auth: AuthMode;
  body?: BodyMode;
  /** Success status, for the OpenAPI document. */
  status?: number;
  /** Listed in GET / `endpoints` (our own extras such as /openapi.json are not). */
  listed?: boolean;
  /** A spec endpoint we do not offer: answers the version's "unsupported" error. */
  placeholder?: boolean;
  /** Versions serving this route; all when absent. */
  versions?: readonly ApiVersion[];
  /** Whether the route exists in this configuration (e.g. only with OIDC providers). */
  enabled?: (ctx: Ctx) => boolean;
  /** Set by the server at start: the route's family in the request metrics. */
  metricsFamily?: number;
  handler: (req: ApiRequest<Ctx>) => Promise<Reply> | Reply;
}

interface Compiled<Ctx extends LinkBase> {
  /** The routes of this pattern's path, by method. */
  byMethod: Map<string, Route<Ctx>>;
  /** Matches the whole path; its groups are the parameters, in order. */
  regex: RegExp;
  /** Index of each `{param}` segment and its name. */
  params: [number, string][];
}

export class Router<Ctx extends LinkBase = LinkBase> {
  private readonly exact = new Map<string, Map<string, Route<Ctx>>>();
  /** Patterns by their first segment; those starting with a parameter under ''. */
  private readonly patterns = new Map<string, Compiled<Ctx>[]>();
  readonly routes: readonly Route<Ctx>[];

  constructor(routes: readonly Route<Ctx>[]) {
    this.routes = routes;
    /** One method map per pattern path: routes of the same path share it. */
    const byPath = new Map<string, Compiled<Ctx>>();
    for (const route of routes) {
      const segments = route.path.split('/').slice(1);
      const params: [number, string][] = [];
      segments.forEach((s, i) => {
        const m = /^\{(\w+)\}$/.exec(s);
        if (m) params.push([i, m[1]]);
      });
      if (params.length === 0) {
        let byMethod = this.exact.get(route.path);
        if (!byMethod) this.exact.set(route.path, (byMethod = new Map()));
        if (byMethod.has(route.method)) throw new Error(`route ${route.method} ${route.path} defined twice`);
        byMethod.set(route.method, route);
        continue;
      }
      let c = byPath.get(route.path);
      if (!c) {
        const last = params[params.length - 1];
        const greedy = last[1] === 'path' && last[0] === segments.length - 1;
        c = { byMethod: new Map(), params, regex: patternRegex(segments, params, greedy) };
        byPath.set(route.path, c);
        const first = params[0][0] === 0 ? '' : segments[0];
        let list = this.patterns.get(first);
        if (!list) this.patterns.set(first, (list = []));
        list.push(c);
      }
      // The first route of a method and path wins, as before.
      if (!c.byMethod.has(route.method)) c.byMethod.set(route.method, route);
    }
  }

  /** The routes for `path` keyed by method, with their path parameters (still URL-encoded). */
  lookup(path: string): { byMethod: Map<string, Route<Ctx>>; params: Record<string, string> } | null {
    const exact = this.exact.get(path);
    if (exact) return { byMethod: exact, params: {} };
    const slash = path.indexOf('/', 1);
    let found: { byMethod: Map<string, Route<Ctx>>; params: Record<string, string> } | null = null;
    for (const candidates of [this.patterns.get(slash < 0 ? path.slice(1) : path.slice(1, slash)), this.patterns.get('')]) {
      if (!candidates) continue;
      for (const c of candidates) {
        const m = c.regex.exec(path);
        if (!m) continue;
        const params: Record<string, string> = {};
        for (let i = 0; i < c.params.length; i++) params[c.params[i][1]] = m[i + 1];
        if (!found) {
          found = { byMethod: c.byMethod, params };
          continue;
        }
        if (!sameParams(found.params, params)) continue;
        // Two patterns of the same parameters (rare): their methods together, the first one's first.
        const merged: Map<string, Route<Ctx>> = new Map(found.byMethod);
        for (const [method, r] of c.byMethod) if (!merged.has(method)) merged.set(method, r);
        found = { byMethod: merged, params: found.params };
      }
    }
    return found;
  }

  /** Endpoint list for GET /: each path once, methods sorted in a stable order. */
  endpoints(): { path: string; methods: string[] }[] {
    const order = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
    const byPath = new Map<string, Set<string>>();
    for (const r of this.routes) {
      if (r.listed === false || (r.path === '/' && r.method === 'GET')) continue;
      let set = byPath.get(r.path);
      if (!set) byPath.set(r.path, (set = new Set()));
      set.add(r.method);
    }
    return [...byPath].map(([path, methods]) => ({ path, methods: order.filter((m) => methods.has(m)) }));
  }
}

/**
 * A pattern as one regular expression: literal segments as they are, a parameter as one non-empty
 * segment, a final `{path}` as the non-empty rest. One match, no split of the path per request.
 */
function patternRegex(segments: string[], params: [number, string][], greedy: boolean): RegExp {
  const isParam = new Set(params.map(([i]) => i));
  const parts = segments.map((seg, i) => (isParam.has(i) ? (greedy && i === segments.length - 1 ? '(.+)' : '([^/]+)') : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^/${parts.join('/')}$`);
}

function sameParams(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}

/** One router per version: the routes that version serves plus placeholders for the rest of the spec. */
export function buildRouters<Ctx extends LinkBase>(
  routes: readonly Route<Ctx>[],
  ctx: Ctx,
  versions: readonly VersionProfile[],
  placeholders: (v: VersionProfile, implemented: Route<Ctx>[]) => Route<Ctx>[],
): Map<VersionProfile, Router<Ctx>> {
  const out = new Map<VersionProfile, Router<Ctx>>();
  for (const v of versions) {
    const mine = routes.filter((r) => routeAvailable(r, v, ctx));
    out.set(v, new Router([...mine, ...placeholders(v, mine)]));
  }
  return out;
}

export function routeAvailable<Ctx extends LinkBase>(route: Route<Ctx>, version: VersionProfile, ctx: Ctx): boolean {
  if (route.versions && !route.versions.includes(version.apiVersion)) return false;
  return route.enabled ? route.enabled(ctx) : true;
}
