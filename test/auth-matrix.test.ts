// Other users (issue 8, part 2): every endpoint and method the capabilities list, in every served
// version, asked without a token, with malformed and expired tokens, and by another user on the
// first user's items. The answers must be the catalogue's (401 AuthenticationRequired, 403
// TokenInvalid / AuthenticationSchemeInvalid, 404 with the item kind's NotFound code, exactly as
// for an id that does not exist), never carry the owner's data, and change nothing of hers. Then
// the capabilities handed out without a token: tile URLs stop with their service, ids and signed
// result links are long random strings, and the links expire.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { http, login, removeDir, startServer, type Res } from './helpers.js';
import { demoDataDir } from './demo-data.js';
import { MANY_FAILURES, buildWorld, itemBody, paramsOf, type Endpoint, type World } from './fuzz/world.js';

let w: World;
/** An expired token of Alice's, and a signed link of hers that expired, minted by a server with 1 s lifetimes. */
let expired: { token: string; link: string; canonical: string };
/** A finished job of Alice's and its results document (when the server offers batch jobs). */
let finished: { id: string; doc: any } | null = null;

const ORIGIN = { origin: 'https://editor.example' }; // API 1.0.0-rc.2 sends CORS headers only to an Origin
const NOT_FOUND_CODES = ['ProcessGraphNotFound', 'FileNotFound', 'ServiceNotFound', 'JobNotFound'];
/** The item kind's not-found codes: the log of a synchronous request has none of its own in the catalogue. */
const notFoundCodes = (e: Endpoint) => (e.path.startsWith('/logs/') ? ['NotFound'] : NOT_FOUND_CODES);
const MALFORMED: [string, number, string][] = [
  ['Bearer nonsense', 403, 'TokenInvalid'],
  ['Bearer basic//', 403, 'TokenInvalid'],
  ['Bearer foo//x', 403, 'AuthenticationSchemeInvalid'],
];

/** The collection path of the items a path parameter names (`service_id` -> `/services`). */
function parentOf(param: string): string | null {
  const item = w.endpoints.find((e) => e.prefix === '/1.2.0' && e.listed && e.method === 'GET' && e.path.endsWith(`/{${param}}`) && paramsOf(e.path).length === 1);
  return item ? item.path.slice(0, item.path.lastIndexOf('/')) : null;
}
const api = (path: string, method = 'GET'): Endpoint => ({ prefix: '/1.2.0', path, method, auth: 'required', listed: true });

const has = (path: string, method: string) => w.endpoints.some((e) => e.prefix === '/1.2.0' && e.path === path && e.method === method);
const hasJobs = () => has('/jobs', 'POST');

beforeAll(async () => {
  w = await buildWorld({}, await demoDataDir());
  finished = w.results && { id: w.results.jobId, doc: w.results.doc };
  // Lifetimes of one second on a second server over the same data: its token and links are
  // refused by the first server too once they have expired. Waiting it out is the one sleep here.
  const short = await startServer({ ...MANY_FAILURES, XEO_TOKEN_TTL: '1', XEO_RESULT_LINK_TTL: '1' }, w.server.dataDir);
  try {
    const token = await login(short, 'alice', 'pa');
    const tokenDies = Date.now() + 1000;
    let linkDies = 0;
    let link = '';
    let canonical = '';
    if (finished) {
      const doc = (await http('GET', `${short.base}/jobs/${finished.id}/results`, { token })).json;
      link = (Object.values(doc.assets)[0] as { href: string }).href.replace(short.url, w.server.url);
      canonical = doc.links.find((l: { rel: string }) => l.rel === 'canonical').href.replace(short.url, w.server.url);
      linkDies = Number(new URL(link).searchParams.get('expires')) * 1000;
    }
    await new Promise((r) => setTimeout(r, Math.max(tokenDies, linkDies) - Date.now() + 50));
    expired = { token, link, canonical };
  } finally {
    await short.stop();
  }
}, 180_000);

afterAll(async () => {
  if (!w) return;
  await w.server.stop();
  removeDir(w.server.dataDir);
});

/** The listed endpoints of every version (the tile routes at the host root have their own tests below). */
const listed = () => w.endpoints.filter((e) => e.prefix !== '' && e.listed);

/** A URL of an endpoint with Alice's items (or the given values) in its path. */
function urlOf(e: Endpoint, values: Record<string, string> = {}): string {
  let path = e.path;
  for (const p of paramsOf(path)) path = path.replace(`{${p}}`, values[p] ?? w.ids[p]?.alice ?? 'x');
  return `${w.server.url}${e.prefix}${path === '/' ? '/' : path}`;
}

/** A request that, with the right token, would be well-formed: bodies for the methods that take one. */
function call(e: Endpoint, authorization: string | undefined, values: Record<string, string> = {}): Promise<Res> {
  const headers: Record<string, string> = { ...ORIGIN, 'content-type': 'application/json' };
  if (authorization !== undefined) headers.authorization = authorization;
  const body = ['POST', 'PUT', 'PATCH'].includes(e.method)
    ? JSON.stringify(e.method === 'PATCH' ? { title: 'changed by someone else' } : itemBody('written by someone else', w.graphs.collections[0], e.path))
    : undefined;
  return http(e.method, urlOf(e, values), { headers, body });
}

const describeCase = (e: Endpoint) => `${e.method} ${e.prefix}${e.path}`;

/** What is wrong with an answer, compared with the expected status and code ('' when right). */
function mismatch(r: Res, status: number, code?: string): string {
  if (r.status !== status) return `${r.status} ${r.text.slice(0, 160)} (expected ${status} ${code ?? ''})`;
  if (code && (r.json?.code !== code || typeof r.json?.message !== 'string')) return `${r.status} ${r.text.slice(0, 160)} (expected ${code})`;
  if (!r.headers['access-control-allow-origin']) return 'no CORS header';
  return '';
}

/** Alice's data: her marker, and the ids of her items nobody else can hold. */
function aliceDataIn(r: Res, url: string): string {
  if (r.text.includes(w.alice.marker)) return "Alice's marker";
  for (const p of w.serverIds) if (r.text.includes(w.ids[p].alice) && !url.includes(w.ids[p].alice)) return `Alice's ${p}`;
  return '';
}

/** Alice's view of everything she owns (every GET of API 1.2.0 with her ids): nobody else may change it. */
async function aliceView(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of w.endpoints.filter((x) => x.prefix === '/1.2.0' && x.method === 'GET' && x.auth === 'required')) {
    const r = await http('GET', urlOf(e), { token: w.alice.token });
    // Error answers carry a fresh tracking id each time; the rest must not change.
    out[e.path] = `${r.status} ${r.text.replace(/"id":"[0-9a-f]{16}"/, '"id":"-"')}`;
  }
  return out;
}

describe('authorization matrix: every listed endpoint and method', () => {
  it('discovers the protected endpoints from the capabilities, jobs included when offered', () => {
    const required = listed()
      .filter((e) => e.prefix === '/1.2.0' && e.auth === 'required')
      .map(describeCase);
    for (const must of ['GET /1.2.0/me', 'POST /1.2.0/result', 'GET /1.2.0/process_graphs', 'GET /1.2.0/files/{path}', 'PATCH /1.2.0/services/{service_id}']) expect(required).toContain(must);
    if (hasJobs()) expect(required).toContain('DELETE /1.2.0/jobs/{job_id}/results');
    expect(Object.keys(w.ids).sort()).toEqual(expect.arrayContaining(['path', 'process_graph_id', 'service_id', ...(hasJobs() ? ['job_id'] : [])]));
  });

  it('without a token: 401 AuthenticationRequired where a Bearer token is required, an answer where it is not', async () => {
    const wrong: string[] = [];
    for (const e of listed()) {
      const r = await call(e, undefined);
      const m = e.auth === 'required' || e.auth === 'basic' ? mismatch(r, 401, 'AuthenticationRequired') : r.status < 400 ? '' : `${r.status} ${r.text.slice(0, 120)}`;
      if (m) wrong.push(`${describeCase(e)}: ${m}`);
      if (e.method === 'GET' && e.auth === 'required') {
        const head = await http('HEAD', urlOf(e), { headers: ORIGIN });
        if (head.status !== 401 || head.body.length) wrong.push(`HEAD ${e.prefix}${e.path}: ${head.status} with ${head.body.length} bytes`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('with a malformed token: 403 TokenInvalid, or AuthenticationSchemeInvalid for an unknown method', async () => {
    const wrong: string[] = [];
    for (const e of listed()) {
      for (const [header, status, code] of MALFORMED) {
        const r = await call(e, header);
        // Public endpoints ignore the header; where a token may or must be sent, a bad one is refused.
        const m = e.auth === 'none' ? (r.status < 400 ? '' : `${r.status}`) : e.auth === 'basic' ? mismatch(r, 403, 'AuthenticationSchemeInvalid') : mismatch(r, status, code);
        if (m) wrong.push(`${describeCase(e)} with '${header}': ${m}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('with an expired token: 403 TokenInvalid', async () => {
    const wrong: string[] = [];
    for (const e of listed().filter((x) => x.auth === 'required' || x.auth === 'optional')) {
      const m = mismatch(await call(e, expired.token), 403, 'TokenInvalid');
      if (m) wrong.push(`${describeCase(e)}: ${m}`);
    }
    expect(wrong).toEqual([]);
    // the same token was good before it expired
    expect((await http('GET', `${w.server.base}/me`, { token: w.alice.token })).status).toBe(200);
  });

  it("with Bob's token on Alice's items: the item kind's 404, as for an id that does not exist, and nothing of hers", async () => {
    const before = await aliceView();
    const wrong: string[] = [];
    const protectedEps = listed().filter((e) => e.auth === 'required');
    // Creating under a name (PUT of a file or a stored process) makes Bob's own item: done last.
    const creates = (e: Endpoint) => e.method === 'PUT';
    for (const e of [...protectedEps.filter((x) => !creates(x)), ...protectedEps.filter(creates)]) {
      const items = paramsOf(e.path).filter((p) => p !== 'collection_id');
      const r = await call(e, w.bob.token);
      const leak = aliceDataIn(r, urlOf(e));
      if (leak) wrong.push(`${describeCase(e)}: ${leak} in Bob's answer ${r.text.slice(0, 120)}`);
      if (!items.length || creates(e)) {
        if (r.status === 401 || r.status === 403 || r.status >= 500) wrong.push(`${describeCase(e)}: ${r.status} ${r.text.slice(0, 120)}`);
        continue;
      }
      // What Alice hears for an id that does not exist is what Bob must hear for hers.
      const unknown = Object.fromEntries(items.map((p) => [p, p === 'path' ? 'nothing/here.txt' : 'nothing_here_0']));
      const own = await call(e, w.alice.token, unknown);
      if (own.status !== 404 || !notFoundCodes(e).includes(own.json?.code)) {
        wrong.push(`${describeCase(e)}: an unknown id answers ${own.status} ${own.text.slice(0, 120)}, not a NotFound code`);
        continue;
      }
      const m = mismatch(r, 404, own.json.code);
      if (m) wrong.push(`${describeCase(e)}: ${m}`);
    }
    expect(wrong).toEqual([]);
    // Alice's items, logs, lists and estimates are exactly as before.
    expect(await aliceView()).toEqual(before);
  });

  it("Bob's lists hold his items only, and what he wrote under Alice's names is his own", async () => {
    for (const e of w.endpoints.filter((x) => x.prefix === '/1.2.0' && x.method === 'GET' && x.auth === 'required' && !paramsOf(x.path).length)) {
      const r = await http('GET', urlOf(e), { token: w.bob.token });
      expect(r.status, e.path).toBe(200);
      expect(aliceDataIn(r, urlOf(e)), e.path).toBe('');
    }
    // (the log of a synchronous request is reached by its answer's link only: no list holds it)
    for (const p of Object.keys(w.ids).filter((x) => x !== 'collection_id' && x !== 'log_id')) {
      const list = parentOf(p);
      expect(list, p).not.toBeNull();
      const mine = (await http('GET', urlOf(api(list!)), { token: w.bob.token })).text;
      expect(mine, `${list} of Bob`).toContain(w.ids[p].bob);
    }
    // Bob's PUT above wrote his own file under Alice's path; each sees their own content.
    const file = `${w.server.base}/files/${w.ids.path.alice}`;
    const hers = (await http('GET', file, { token: w.alice.token })).text;
    const his = (await http('GET', file, { token: w.bob.token })).text;
    expect(hers).toContain(w.alice.marker);
    expect(his).toContain('written by someone else');
    expect(his).not.toContain(w.alice.marker);
  });
});

describe('capabilities handed out without a token', () => {
  /** A tile far from the demo data: answered at once, transparent, while the service is on. */
  const tileOf = async (id: string) => {
    const rec = (await http('GET', `${w.server.base}/services/${id}`, { token: w.alice.token })).json;
    return rec.url.replace('{z}', '10').replace('{x}', '0').replace('{y}', '0');
  };
  const patch = (id: string, body: unknown, token = w.alice.token) => http('PATCH', `${w.server.base}/services/${id}`, { token, body: JSON.stringify(body) });

  it('tile, WMTS and map page URLs stop working when the service is disabled or deleted, and only its owner can do either', async () => {
    const id = w.ids.service_id.alice;
    const tile = await tileOf(id);
    const urls = [tile, `${w.server.url}/wmts/${id}`, `${w.server.url}/viewer?service=${id}`];
    for (const u of urls) expect((await http('GET', u)).status, u).toBe(200);
    // Bob can neither switch it off nor delete it.
    expect((await patch(id, { enabled: false }, w.bob.token)).status).toBe(404);
    expect((await http('DELETE', `${w.server.base}/services/${id}`, { token: w.bob.token })).status).toBe(404);
    for (const u of urls) expect((await http('GET', u)).status, u).toBe(200);
    // Disabled: every public URL answers 404 ServiceNotFound, cached tile or not.
    expect((await patch(id, { enabled: false })).status).toBe(204);
    for (const u of urls) expect((await http('GET', u)).json?.code, u).toBe('ServiceNotFound');
    expect((await patch(id, { enabled: true })).status).toBe(204);
    expect((await http('GET', tile)).status).toBe(200);
    // Deleted: gone for good.
    const other = (await http('POST', `${w.server.base}/services`, { token: w.alice.token, body: JSON.stringify(itemBody(w.alice.marker, w.graphs.collections[0], '/services')) })).headers['xeo-identifier'];
    const otherTile = await tileOf(other);
    expect((await http('GET', otherTile)).status).toBe(200);
    expect((await http('DELETE', `${w.server.base}/services/${other}`, { token: w.alice.token })).status).toBe(204);
    for (const u of [otherTile, `${w.server.url}/wmts/${other}`, `${w.server.url}/viewer?service=${other}`]) {
      const r = await http('GET', u);
      expect(r.status, u).toBe(404);
      expect(r.json.code).toBe('ServiceNotFound');
    }
  });

  /** Bits of randomness in a set of ids: characters after their common prefix times the bits per character of their alphabet. */
  function randomBits(ids: string[]): number {
    let prefix = 0;
    while (ids.every((id) => id[prefix] === ids[0][prefix])) prefix++;
    const tails = ids.map((id) => id.slice(prefix));
    const alphabet = tails.every((t) => /^[0-9a-f]+$/.test(t)) ? 16 : tails.every((t) => /^[\w-]+$/.test(t)) ? 64 : 0;
    return Math.min(...tails.map((t) => t.length)) * Math.log2(alphabet);
  }

  it('service and job ids are long random strings (at least 96 bits)', async () => {
    for (const p of w.serverIds) {
      const collection = api(parentOf(p)!, 'POST');
      const ids = [w.ids[p].alice, w.ids[p].bob];
      for (let i = 0; i < 8; i++) {
        const r = await http('POST', urlOf(collection), { token: w.alice.token, body: JSON.stringify(itemBody('id test', w.graphs.collections[0], collection.path)) });
        expect(r.status, r.text).toBe(201);
        ids.push(r.headers['xeo-identifier']);
      }
      expect(new Set(ids).size, p).toBe(ids.length);
      expect(randomBits(ids), `${p}: ${ids.join(' ')}`).toBeGreaterThanOrEqual(96);
    }
    expect(w.serverIds).toEqual(expect.arrayContaining(['service_id', ...(hasJobs() ? ['job_id'] : [])]));
  });

  it('signed result links work without a token, are long and random, refuse any change, and expire', async (ctx) => {
    if (!finished) return ctx.skip();
    const asset = Object.values(finished.doc.assets)[0] as { href: string };
    const link = new URL(asset.href);
    const signature = link.searchParams.get('signature')!;
    expect(signature.length * 6, 'bits of the signature').toBeGreaterThanOrEqual(96);
    expect((await http('GET', link.href)).status).toBe(200);
    // Anyone holding the link may download; no one can make another from it.
    const tampered = (sig: string) => {
      const u = new URL(link.href);
      u.searchParams.set('signature', sig);
      return u.href;
    };
    const later = new URL(link.href);
    later.searchParams.set('expires', String(Number(link.searchParams.get('expires')) + 3600));
    const otherJob = link.href.replace(finished.id, w.ids.job_id?.alice ?? 'x');
    for (const u of [tampered(signature.slice(0, -1) + (signature.endsWith('A') ? 'B' : 'A')), tampered(''), tampered(signature.slice(0, 16)), later.href, otherJob]) {
      const r = await http('GET', u);
      expect(r.status, u).toBe(404);
      expect(r.json.code).toBe('NotFound');
    }
    // Bob learns nothing of the job through the API, link or not.
    expect((await http('GET', `${w.server.base}/jobs/${finished.id}/results`, { token: w.bob.token })).json.code).toBe('JobNotFound');
    // Links made with a lifetime of one second answer 410 once it has passed.
    for (const u of [expired.link, expired.canonical]) {
      const r = await http('GET', u);
      expect(r.status, u).toBe(410);
      expect(r.json.code).toBe('ResultLinkExpired');
    }
  });
});
