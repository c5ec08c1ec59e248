// The world the hostile-input suites run against: the real server, two users with tokens, and
// one item of every kind each user can own (stored process, file, service, job, ...), found and
// created from the server's own description of itself (the capabilities `endpoints` of every
// version and our OpenAPI document), so that endpoints merged later are covered without changes here.
import { startServer, http, addUser, login, type TestServer } from '../helpers.js';
import type { GraphWorld, ProcessInfo } from './graphs.js';
import { SignJWT, generateKeyPair } from 'jose';

export type Auth = 'none' | 'optional' | 'required' | 'basic';

export interface Endpoint {
  /** Version prefix ('' for the unversioned routes at the host root). */
  prefix: string;
  /** Path template below the prefix, e.g. `/services/{service_id}`. */
  path: string;
  method: string;
  auth: Auth;
  /** Listed in the capabilities `endpoints` (not only in our OpenAPI document). */
  listed: boolean;
}

export interface User {
  name: string;
  /** Authorization header value. */
  token: string;
  /** A text in every item of this user (titles, descriptions, file names and contents), never in anyone else's answer. */
  marker: string;
}

export interface World {
  server: TestServer;
  port: number;
  alice: User;
  bob: User;
  endpoints: Endpoint[];
  /** Ids of each user's items, by the path parameter that names them (e.g. `service_id`). */
  ids: Record<string, { alice: string; bob: string }>;
  /**
   * The parameters whose ids only the server hands out (POST, and no PUT on the item): another
   * user can never hold an item of that id. Names a user chooses (file paths, ids of stored
   * processes) can exist in every user's space, each holding that user's own data.
   */
  serverIds: string[];
  graphs: GraphWorld;
  /** A finished batch job of Alice's and its results document with signed links (when jobs are offered). */
  results: { jobId: string; doc: any; links: string[] } | null;
  /** Authorization headers with JWTs forged from Alice's (each must be refused, never act as her). */
  forgedJwts: string[];
}

/** The unversioned routes at the host root (docs/api.md: Endpoints); no version document lists them. */
export const ROOT_ROUTES: Omit<Endpoint, 'prefix' | 'listed'>[] = [
  { path: '/', method: 'GET', auth: 'none' },
  { path: '/.well-known/xeo', method: 'GET', auth: 'none' },
  { path: '/.well-known/jwks.json', method: 'GET', auth: 'none' },
  { path: '/xyz/{service_id}/{z}/{x}/{y}', method: 'GET', auth: 'none' },
  { path: '/wmts/{service_id}', method: 'GET', auth: 'none' },
  { path: '/viewer', method: 'GET', auth: 'none' },
  { path: '/viewer/{asset}', method: 'GET', auth: 'none' },
  { path: '/previews/{collection_id}/{z}/{x}/{y}', method: 'GET', auth: 'none' },
  { path: '/previews/{collection_id}/wmts', method: 'GET', auth: 'none' },
];

function authOf(security: unknown): Auth {
  const s = JSON.stringify(security ?? []);
  if (s === '[]') return 'none';
  if (s.includes('Basic')) return 'basic';
  return s.includes('{}') ? 'optional' : 'required';
}

/** Every endpoint and method of every served version, with its authentication. */
export async function discover(url: string): Promise<Endpoint[]> {
  const out: Endpoint[] = ROOT_ROUTES.map((r) => ({ ...r, prefix: '', listed: true }));
  const wk = await http('GET', `${url}/.well-known/xeo`);
  for (const v of wk.json.versions as { url: string }[]) {
    const prefix = new URL(v.url).pathname.replace(/\/$/, '');
    const caps = (await http('GET', `${v.url}/`)).json;
    const doc = (await http('GET', `${v.url}/openapi.json`)).json;
    const listed = new Set<string>(['GET /']);
    for (const e of caps.endpoints as { path: string; methods: string[] }[]) for (const m of e.methods) listed.add(`${m.toUpperCase()} ${e.path}`);
    const seen = new Set<string>();
    for (const [path, ops] of Object.entries<Record<string, { security?: unknown }>>(doc.paths)) {
      for (const [m, op] of Object.entries(ops)) {
        const method = m.toUpperCase();
        seen.add(`${method} ${path}`);
        out.push({ prefix, path, method, auth: authOf(op.security), listed: listed.has(`${method} ${path}`) });
      }
    }
    // A listed endpoint our OpenAPI document forgot would be a bug of its own; cover it anyway.
    for (const l of listed) if (!seen.has(l)) out.push({ prefix, path: l.slice(l.indexOf(' ') + 1), method: l.slice(0, l.indexOf(' ')), auth: 'optional', listed: true });
  }
  return out;
}

export const paramsOf = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);

/** A graph every kind of item accepts: a real tile graph when a collection exists, else a scalar one. */
export function itemGraph(collection: string | undefined): Record<string, unknown> {
  if (!collection) return { a: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } };
  return {
    l: { process_id: 'load_collection', arguments: { id: collection, spatial_extent: null, temporal_extent: ['2024-06-01', '2024-07-01'], bands: ['B04', 'B08'] } },
    n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
    r: {
      process_id: 'reduce_dimension',
      arguments: { data: { from_node: 'n' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
      result: true,
    },
  };
}

/**
 * A body that creates an item at any of our collection endpoints: the members of a stored process,
 * a service and a job together (each endpoint ignores or stores the others).
 */
/**
 * A body that creates an item at `path` (the members that endpoint takes: top-level members of its
 * own are refused as unknown processing parameters); without a path, the members of all of them.
 */
export function itemBody(marker: string, collection: string | undefined, path?: string): Record<string, unknown> {
  const graph = itemGraph(collection);
  if (path === undefined) return { title: marker, description: marker, summary: marker, type: 'XYZ', process: { process_graph: graph }, process_graph: graph };
  if (path.startsWith('/process_graphs')) return { summary: marker, description: marker, process_graph: graph };
  if (path === '/result' || path === '/validation') return { process: { description: marker, process_graph: graph } };
  if (path.startsWith('/services')) return { title: marker, description: marker, type: 'XYZ', process: { process_graph: graph } };
  return { title: marker, description: marker, process: { process_graph: graph } };
}

const v12 = (eps: Endpoint[]) => eps.filter((e) => e.prefix === '/1.2.0');

/**
 * Creates one item of every kind for `user`: POST to a listed collection endpoint whose items
 * have their own path (`/x` + `/x/{id}`), or PUT to an item path that has no POST on its parent
 * (files). Returns the ids by path parameter name.
 */
export async function createItems(s: TestServer, eps: Endpoint[], user: User, collection: string | undefined): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  const api = v12(eps);
  const has = (method: string, path: string) => api.some((e) => e.method === method && e.path === path);
  const itemPaths = [...new Set(api.filter((e) => e.listed && /\/\{\w+\}$/.test(e.path) && paramsOf(e.path).length === 1).map((e) => e.path))];
  for (const path of itemPaths) {
    const param = paramsOf(path)[0];
    if (param === 'collection_id') continue;
    const parent = path.slice(0, path.lastIndexOf('/'));
    const body = JSON.stringify(itemBody(user.marker, collection, path));
    if (has('POST', parent)) {
      const r = await http('POST', `${s.base}${parent}`, { token: user.token, body, headers: { 'content-type': 'application/json' } });
      if (r.status !== 201) throw new Error(`cannot create an item at POST ${parent}: ${r.status} ${r.text}`);
      ids[param] = r.headers['xeo-identifier'] ?? r.headers.location.slice(r.headers.location.lastIndexOf('/') + 1);
    } else if (has('PUT', path)) {
      const id = param === 'path' ? `${user.name}-dir/notes.txt` : `${user.name}_${param}`;
      const r = await http('PUT', `${s.base}${path.replace(`{${param}}`, id)}`, { token: user.token, body, headers: { 'content-type': 'application/json' } });
      if (r.status >= 300) throw new Error(`cannot create an item at PUT ${path}: ${r.status} ${r.text}`);
      ids[param] = id;
    }
  }
  return ids;
}

/**
 * The world's server answers hundreds of bad credentials from one address by design of these
 * suites; slowing that down is tested on its own (security.test.ts), so its limit is raised here.
 */
export const MANY_FAILURES = { XEO_AUTH_FAILURES_PER_ADDRESS: '1000000', XEO_AUTH_FAILURES_PER_ACCOUNT: '1000000' };

export async function buildWorld(env: Record<string, string>, dataDir?: string): Promise<World> {
  const server = await startServer({ ...MANY_FAILURES, ...env }, dataDir);
  const port = Number(new URL(server.url).port);
  addUser(server.dataDir, 'alice', 'pa');
  addUser(server.dataDir, 'bob', 'pb');
  const alice: User = { name: 'alice', token: await login(server, 'alice', 'pa'), marker: 'ALICEMARK8b1f' };
  const bob: User = { name: 'bob', token: await login(server, 'bob', 'pb'), marker: 'BOBMARK3c7d' };
  const endpoints = await discover(server.url);
  const collections: string[] = (await http('GET', `${server.base}/collections`)).json.collections.map((c: { id: string }) => c.id);
  const a = await createItems(server, endpoints, alice, collections[0]);
  const b = await createItems(server, endpoints, bob, collections[0]);
  const ids: World['ids'] = {};
  for (const k of Object.keys(a)) ids[k] = { alice: a[k], bob: b[k] };
  const v = endpoints.filter((e) => e.prefix === '/1.2.0');
  const serverIds = Object.keys(a).filter((param) => {
    const item = v.find((e) => e.method === 'GET' && e.path.endsWith(`/{${param}}`));
    return item && !v.some((e) => e.method === 'PUT' && e.path === item.path);
  });
  if (collections[0]) ids.collection_id = { alice: collections[0], bob: collections[0] };
  // The log of a synchronous request of each (holding the user's marker): an item without a list.
  if (endpoints.some((e) => e.path === '/logs/{log_id}')) {
    const logOf = async (user: User) => {
      const body = JSON.stringify({ process: { process_graph: { i: { process_id: 'inspect', arguments: { data: 1, message: user.marker }, result: true } } } });
      const r = await http('POST', `${server.base}/result`, { token: user.token, body });
      if (r.status !== 200 || !r.headers.link) throw new Error(`a synchronous request kept no log: ${r.status} ${r.text}`);
      return r.headers['xeo-identifier'];
    };
    ids.log_id = { alice: await logOf(alice), bob: await logOf(bob) };
  }
  const processes: ProcessInfo[] = (await http('GET', `${server.base}/processes`)).json.processes.map((p: { id: string; parameters: { name: string }[] }) => ({
    id: p.id,
    parameters: p.parameters.map((x) => x.name),
  }));
  // Stored processes that call themselves and each other, for graphs to call.
  const put = (id: string, graph: unknown) => http('PUT', `${server.base}/process_graphs/${id}`, { token: alice.token, body: JSON.stringify({ parameters: [{ name: 'x', schema: {} }], process_graph: graph }) });
  const call = (id: string) => ({ c: { process_id: id, arguments: { x: { from_parameter: 'x' } }, result: true } });
  const stored: string[] = [];
  for (const [id, graph] of [
    ['self_rec', call('self_rec')],
    ['mut_b', { c: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } }],
    ['mut_a', call('mut_b')],
    ['mut_b', call('mut_a')],
  ] as const) {
    const r = await put(id, graph);
    if (r.status === 200 && !stored.includes(id)) stored.push(id);
  }
  const results = v.some((e) => e.method === 'POST' && e.path === '/jobs/{job_id}/results') ? await finishedJob(server, alice) : null;
  return { server, port, alice, bob, endpoints, ids, serverIds, graphs: { processes, stored, collections }, results, forgedJwts: await forgeries(server, alice.token) };
}

/**
 * JWTs forged from a valid one: unsigned (alg none), HMAC keyed with the server's public key
 * (algorithm confusion), signed by another key under the server's key id, claims altered under
 * the real signature, the signature cut; each raw and in the basic// and oidc/ forms.
 */
async function forgeries(s: TestServer, header: string): Promise<string[]> {
  const token = header.replace(/^Bearer basic\/\//, '');
  const [h, p, sig] = token.split('.');
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  const { kid } = JSON.parse(Buffer.from(h, 'base64url').toString());
  const jwk = (await http('GET', `${s.url}/.well-known/jwks.json`)).json.keys.find((k: { kid: string }) => k.kid === kid);
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
  const tokens = [
    `${b64({ alg: 'none', typ: 'JWT' })}.${p}.`,
    `${b64({ alg: 'none', kid })}.${b64({ ...claims, sub: 'bob' })}.`,
    await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid }).sign(new Uint8Array(Buffer.from(JSON.stringify(jwk)))),
    await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid }).sign(new Uint8Array(Buffer.from(jwk.x, 'base64url'))),
    await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid }).sign(privateKey),
    `${h}.${b64({ ...claims, exp: claims.exp + 86_400 })}.${sig}`,
    `${h}.${b64({ ...claims, iss: 'https://evil.example/1.3.0/credentials/basic' })}.${sig}`,
    `${h}.${p}`,
    `${h}.${p}.`,
    `${h}.${p}.${sig.slice(0, -2)}`,
    `${h}.${p}.${sig}.${sig}`,
  ];
  return tokens.flatMap((t) => [`Bearer ${t}`, `Bearer basic//${t}`, `Bearer oidc/x/${t}`]);
}

/** Runs a batch job that finishes at once (1 + 1) and fetches its results document. */
async function finishedJob(s: TestServer, user: User): Promise<World['results']> {
  const body = JSON.stringify({ title: user.marker, process: { process_graph: { a: { process_id: 'add', arguments: { x: 1, y: 1 }, result: true } } } });
  const jobId = (await http('POST', `${s.base}/jobs`, { token: user.token, body })).headers['xeo-identifier'];
  const started = await http('POST', `${s.base}/jobs/${jobId}/results`, { token: user.token });
  if (started.status !== 202) throw new Error(`cannot start a job: ${started.status} ${started.text}`);
  // Jobs report their progress only when asked: poll (it takes a few hundred milliseconds).
  for (let status = ''; status !== 'finished'; await new Promise((r) => setTimeout(r, 100))) {
    status = (await http('GET', `${s.base}/jobs/${jobId}`, { token: user.token })).json.status;
    if (status === 'error') throw new Error('the job failed');
  }
  const doc = (await http('GET', `${s.base}/jobs/${jobId}/results`, { token: user.token })).json;
  const links = [...Object.values<{ href: string }>(doc.assets).map((a) => a.href), doc.links.find((l: { rel: string }) => l.rel === 'canonical').href];
  return { jobId, doc, links };
}
