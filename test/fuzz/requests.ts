// The request families of the fuzz suite. Each is a fast-check arbitrary of whole HTTP requests
// (method, raw target, headers, body and its framing) over the endpoints the server lists.
import fc from 'fast-check';
import type { RawRequest } from './raw-client.js';
import type { Endpoint, World } from './world.js';
import { paramsOf, itemBody } from './world.js';
import { type J, of, obj, text, mutate, mutation, anyJson, encode, encoding, bigValue, raw } from './json.js';
import { graphArbitrary, graphBody } from './graphs.js';

export type Who = 'alice' | 'bob' | 'anonymous' | 'malformed';

export interface FuzzRequest extends RawRequest {
  family: string;
  who: Who;
  /** The endpoint template and method the request was made for (`GET /1.2.0/services/{service_id}`). */
  endpoint?: string;
}

/** How a failing request is printed by fast-check: enough to replay it, without megabytes of body. */
function printable(r: FuzzRequest): FuzzRequest {
  Object.defineProperty(r, fc.toStringMethod, {
    enumerable: false,
    value: () => {
      const body = r.body ? ` body(${r.body.length} B${r.chunked ? `, chunked by ${r.chunked}` : ''})=${JSON.stringify(r.body.subarray(0, 300).toString('latin1'))}` : '';
      const declared = r.declaredLength !== undefined ? ` declared=${r.declaredLength}` : '';
      const target = r.target.length > 300 ? `${r.target.slice(0, 300)}...(${r.target.length} chars)` : r.target;
      const headers = r.headers.map(([k, v]) => `${k}: ${v.length > 120 ? `${v.slice(0, 120)}...(${v.length})` : v}`).join(' | ');
      return `[${r.family}/${r.who}] ${r.method} ${target} {${headers}}${declared}${body}`;
    },
  });
  return r;
}

// --- pieces ------------------------------------------------------------------------------------

const utf8AsLatin1 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');

/** Path segments that try to escape, confuse a decoder, or simply be too much. */
const SEGMENTS = [
  '%00',
  '%2e%2e',
  '..',
  '.',
  '%2e',
  '%2F',
  '%2f..%2f',
  '%ff',
  '%c0%af',
  '%e0%80%af',
  '%',
  '%zz',
  '%u002e',
  '~',
  '-',
  '_',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  'prototype',
  '%20',
  '+',
  ';',
  ',',
  '*',
  "'",
  '%22',
  '%5c',
  '@',
  ':',
  'a'.repeat(256),
  'a'.repeat(5000),
  utf8AsLatin1('é'),
  utf8AsLatin1('日本語'),
  utf8AsLatin1('\u202e'),
  '\xff\xfe',
  '\xc0\xaf',
  'CON',
  'aux.txt',
  '.hidden',
  'a.',
  'x'.repeat(30_000),
];
const TILE_NUMBERS = ['0', '1', '2', '13', '22', '30', '31', '-1', '01', '1e3', '0x1', 'abc', '', '4294967296', '99999999999', '9'.repeat(40), '1.5', '%201', '%31'];
const TILE_ENDINGS = ['', '.png', '.jpg', '.jpeg', '.PNG', '.gif', '.png.png', '.', '.%00', '.png?x', '.webp'];

function paramValue(world: World, name: string): fc.Arbitrary<string> {
  const ids = world.ids[name];
  const real = ids ? [ids.alice, ids.bob] : [];
  const choices: fc.Arbitrary<string>[] = [
    fc.constantFrom(...SEGMENTS),
    fc.string({ minLength: 1, maxLength: 20 }).map(encodeURIComponent),
    fc.constantFrom('nope', 'x1', 'AAAAAAAAAAAAAAAAAAAAAA', 'j-00000000000000000000000000000000', 'pg_0000000000000000'),
  ];
  if (real.length) choices.push(fc.constantFrom(...real), fc.constantFrom(...real), fc.constantFrom(...real.map((r) => r.toUpperCase())));
  if (name === 'path') choices.push(fc.constantFrom('a/b/c', 'a//b', '../x', 'a/%2e%2e/%2e%2e/b', 'a/', '/a', 'a/b/../../../../etc/passwd', `${'d/'.repeat(200)}f`));
  if (name === 'z' || name === 'x') choices.push(fc.constantFrom(...TILE_NUMBERS), fc.constantFrom(...TILE_NUMBERS));
  if (name === 'y') choices.push(fc.tuple(fc.constantFrom(...TILE_NUMBERS), fc.constantFrom(...TILE_ENDINGS)).map(([n, e]) => n + e));
  return fc.oneof(...choices);
}

const QUERY_KEYS = [
  'limit',
  'offset',
  'after',
  'level',
  'partial',
  'expires',
  'signature',
  'service',
  'request',
  'REQUEST',
  'layer',
  'tilematrix',
  'tilecol',
  'tilerow',
  'format',
  'v',
  'limit[]',
  '__proto__',
  '',
];
const QUERY_VALUES = [
  '',
  '0',
  '-1',
  '1',
  '2',
  '1e309',
  'abc',
  '999999999999999999999',
  '1.5',
  '%201',
  '+1',
  '0x10',
  '1e3',
  '%00',
  '%',
  '%zz',
  '%ff',
  'NaN',
  'Infinity',
  'debug',
  'info',
  'warning',
  'error',
  'DEBUG',
  'true',
  'false',
  'GetTile',
  'GetCapabilities',
  'gettile',
  'image/jpeg',
  'a'.repeat(10_000),
  '&',
  '==',
  '9'.repeat(400),
];
const queryString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  {
    weight: 6,
    arbitrary: fc
      .array(
        fc.tuple(fc.oneof(fc.constantFrom(...QUERY_KEYS), fc.string({ maxLength: 6 }).map(encodeURIComponent)), fc.oneof(fc.constantFrom(...QUERY_VALUES), fc.string({ maxLength: 10 }).map(encodeURIComponent))),
        { minLength: 1, maxLength: 5 },
      )
      .map((pairs) => `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`),
  },
  { weight: 1, arbitrary: fc.constantFrom('?', '??', '?&&&', '?=', '?limit', '?limit&limit=1', '?limit=1&limit=abc', '?%', `?${utf8AsLatin1('ü=ü')}`, '?\xff=\xfe') },
);

/** A template filled in, with odd variations of the whole path now and then. */
function target(world: World, ep: Endpoint): fc.Arbitrary<string> {
  const names = paramsOf(ep.path);
  return fc
    .tuple(
      fc.tuple(...names.map((n) => paramValue(world, n))),
      queryString,
      fc.oneof({ weight: 12, arbitrary: fc.constant('none') }, { weight: 6, arbitrary: fc.constantFrom('slash', 'double', 'upper', 'version', 'unversioned', 'dotdot') }),
      fc.constantFrom('/1.0.1', '/1.0.0-rc.2', '/0.4.2', '/v1', '/1.2.0.0', '/1.2', ''),
    )
    .map(([values, query, variation, version]) => {
      let path = ep.path;
      names.forEach((n, i) => (path = path.replace(`{${n}}`, values[i])));
      let full = ep.prefix + (path === '/' && ep.prefix ? '' : path);
      if (variation === 'slash') full += '/';
      else if (variation === 'double') full = full.replace(/\//g, '//');
      else if (variation === 'upper') full = full.toUpperCase();
      else if (variation === 'version') full = version + path;
      else if (variation === 'unversioned') full = path;
      else if (variation === 'dotdot') full = `${ep.prefix}/..${path}`;
      return (full || '/') + query;
    });
}

const MALFORMED_AUTH = [
  'Bearer',
  'Bearer ',
  'Bearer basic//',
  'Bearer basic/',
  'Bearer basic//x',
  'Bearer oidc//x',
  'Bearer oidc/x/y',
  'Bearer foo//x',
  'Bearer nonsense',
  'Basic !!!',
  'Basic',
  'Basic Og==',
  'Basic YWxpY2U6cGE=',
  'Digest x',
  'bearer basic//x',
  'Bearer basic//x/y/z',
  `Bearer basic//${'a'.repeat(10_000)}`,
  'Bearer \xff\xfe',
  `Bearer ${utf8AsLatin1('basic//é')}`,
  'Bearer basic//%00',
  'Bearer  basic//x',
  'Bearer oidc/__proto__/x',
  'Bearer oidc/constructor/x',
  // JWT-shaped: the raw form of API 1.3.0
  'Bearer a.b.c',
  'Bearer ..',
  'Bearer e30.e30.',
  'Bearer eyJhbGciOiJub25lIn0.e30.',
  `Bearer ${'eyJ'.repeat(1000)}.e30.x`,
  'Bearer e30.bm90IGpzb24.x',
  'Bearer basic//a.b.c',
];

function authorization(world: World): fc.Arbitrary<{ who: Who; header?: string }> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant({ who: 'alice', header: world.alice.token }) },
    { weight: 2, arbitrary: fc.constant({ who: 'bob', header: world.bob.token }) },
    { weight: 2, arbitrary: fc.constant({ who: 'anonymous' }) },
    { weight: 2, arbitrary: fc.constantFrom(...MALFORMED_AUTH).map((header) => ({ who: 'malformed', header })) },
    // Alice's token, mangled: other case, a repeated scheme, cut or extended.
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          (t: string) => t.toLowerCase(),
          (t: string) => `Bearer ${t}`,
          (t: string) => `${t}x`,
          (t: string) => t.slice(0, -1),
          (t: string) => `${t}, ${t}`,
        )
        .map((f) => ({ who: 'malformed', header: f(world.alice.token) })),
    },
    // Padding around a header value is not part of it (RFC 9110 5.5): still Alice.
    { weight: 1, arbitrary: fc.constantFrom(` ${world.alice.token}`, `${world.alice.token} `, `\t${world.alice.token}\t`).map((header) => ({ who: 'alice', header })) },
    // Her JWT raw (API 1.3.0's form) is Alice too; forged from it, nobody.
    { weight: 1, arbitrary: fc.constant({ who: 'alice', header: world.alice.token.replace('basic//', '') }) },
    { weight: 2, arbitrary: fc.constantFrom(...world.forgedJwts).map((header) => ({ who: 'malformed', header })) },
  );
}

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'text/plain',
  'application/octet-stream',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded',
  '',
  ';;;',
  'a'.repeat(3000),
];
const LANGUAGES = ['de', 'de-AT;q=0.8, en;q=0.5', ';;;', '*;q=-1', 'de;q=abc', 'en;q=0.5,de;q=1e309', 'x'.repeat(5000), 'de-DE-u-co-phonebk', '*', ',,,', 'q=1', utf8AsLatin1('日本語')];
const ORIGINS = ['https://editor.openeo.org', 'null', '*', 'http://evil.example', 'x'.repeat(2000), utf8AsLatin1('https://é.example')];

/** Extra headers: some harmless, some absurd (long, many, with bytes above 0x7f). */
const extraHeaders: fc.Arbitrary<[string, string][]> = fc
  .record({
    contentType: fc.option(fc.constantFrom(...CONTENT_TYPES), { freq: 2 }),
    language: fc.option(fc.constantFrom(...LANGUAGES), { freq: 4 }),
    origin: fc.option(fc.constantFrom(...ORIGINS), { freq: 3 }),
    preflight: fc.option(fc.tuple(fc.constantFrom('GET', 'PUT', 'FOO', ''), fc.constantFrom('authorization,content-type', 'x-a,,x-b', ' , ', 'a'.repeat(3000), '\xff')), { freq: 4 }),
    conditional: fc.option(
      fc.constantFrom<[string, string]>(
        ['If-None-Match', '"x"'],
        ['If-None-Match', '*'],
        ['If-None-Match', 'W/"' + 'a'.repeat(1000) + '"'],
        ['If-Modified-Since', 'yesterday'],
        ['Range', 'bytes=0-1'],
        ['Range', 'bytes=99999999999999999999-'],
        ['Range', 'bytes=-0'],
        ['Range', 'lines=1-2'],
        ['Accept', 'application/geo+json'],
        ['Accept', '*/*;q=abc'],
      ),
      { freq: 3 },
    ),
    long: fc.option(fc.integer({ min: 1000, max: 16_000 }), { freq: 8 }),
    many: fc.option(fc.integer({ min: 5, max: 35 }), { freq: 8 }),
  })
  .map((h) => {
    const out: [string, string][] = [];
    if (h.contentType !== null) out.push(['Content-Type', h.contentType]);
    if (h.language !== null) out.push(['Accept-Language', h.language]);
    if (h.origin !== null) out.push(['Origin', h.origin]);
    if (h.preflight) out.push(['Access-Control-Request-Method', h.preflight[0]], ['Access-Control-Request-Headers', h.preflight[1]]);
    if (h.conditional) out.push(h.conditional);
    if (h.long) out.push(['X-Long', 'a'.repeat(h.long)]);
    if (h.many) for (let i = 0; i < h.many; i++) out.push([`X-Junk-${i}`, `v${i}`]);
    return out;
  });

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
const METHODS = ['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE', 'TRACE', 'CONNECT'];

/** A body for a method: well-formed item bodies with members mutated, or any JSON, or something big. */
function bodyFor(world: World): fc.Arbitrary<J | null> {
  const collection = world.graphs.collections[0];
  const bases: J[] = [
    of(itemBody('fuzz', collection)),
    of({ title: 'x' }),
    of({ enabled: false }),
    of({ configuration: { tile_size: 512, colormap: 'greys', min: 0, max: 1 }, log_level: 'debug', plan: 'free', budget: 1 }),
    of({ process_graph: { a: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } }, parameters: [{ name: 'x', schema: {} }], returns: { schema: {} } }),
  ];
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 8, arbitrary: fc.tuple(fc.constantFrom(...bases), fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([b, m]) => mutate(b, m)) },
    { weight: 2, arbitrary: anyJson },
    { weight: 1, arbitrary: bigValue.map((v) => obj([['process_graph', v]])) },
  );
}

/** Wire framing of a body: Content-Length, chunked, or a declared length over the limit. */
const framing = fc.constantFrom<'length' | 'chunked' | 'overDeclared'>('length', 'length', 'length', 'length', 'chunked', 'overDeclared');

function assemble(
  family: string,
  method: string,
  tgt: string,
  auth: { who: Who; header?: string },
  headers: [string, string][],
  body: Buffer | null,
  frame: 'length' | 'chunked' | 'overDeclared',
  limit: number,
): FuzzRequest {
  const h: [string, string][] = auth.header === undefined ? [] : [['Authorization', auth.header]];
  h.push(...headers);
  const r: FuzzRequest = { family, who: auth.who, method, target: tgt, headers: h };
  if (body) {
    r.body = body;
    // Tiny chunks for small bodies (many chunk headers), big ones for big bodies (else millions of writes).
    if (frame === 'chunked') r.chunked = body.length > 65_536 ? 16_384 + (body.length % 65_536) : 1 + (body.length % 97);
    if (frame === 'overDeclared') {
      r.declaredLength = limit + 1 + (body.length % 1000);
      r.body = body.subarray(0, 0);
    }
  }
  return printable(r);
}

// --- families ----------------------------------------------------------------------------------

/** Every endpoint and method (declared, preflight, HEAD, not allowed) with mutated well-formed bodies. */
export function endpointRequests(world: World, limit: number): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      // The current version most (the others share its handlers), then everything.
      ep: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...world.endpoints.filter((e) => e.prefix === '/1.2.0')) }, { weight: 2, arbitrary: fc.constantFrom(...world.endpoints) }),
      method: fc.oneof({ weight: 6, arbitrary: fc.constant('') }, { weight: 4, arbitrary: fc.constantFrom(...METHODS) }),
      auth: authorization(world),
      headers: fc.oneof({ weight: 3, arbitrary: fc.constant<[string, string][]>([]) }, { weight: 1, arbitrary: extraHeaders }),
      body: bodyFor(world),
      enc: encoding,
      frame: framing,
      seed: fc.nat(),
    })
    .chain((r) => target(world, r.ep).map((tgt) => ({ ...r, tgt })))
    .map((r) => {
      const method = r.method || r.ep.method;
      const withBody = BODY_METHODS.has(method) || (r.body !== null && r.seed % 10 === 0);
      const body = withBody && r.body ? encode(text(r.body), r.enc) : null;
      const req = assemble('endpoints', method, r.tgt, r.auth, r.headers, body, r.frame, limit);
      req.endpoint = `${method} ${r.ep.prefix}${r.ep.path}`;
      return req;
    });
}

/** Adversarial process graphs to everything that takes a body, mostly /result and /validation. */
export function graphRequests(world: World, limit: number): fc.Arbitrary<FuzzRequest> {
  const bodyEndpoints = world.endpoints.filter((e) => BODY_METHODS.has(e.method) && e.prefix === '/1.2.0');
  const hot = bodyEndpoints.filter((e) => e.path === '/result' || e.path === '/validation');
  return fc
    .record({
      ep: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...hot) }, { weight: 1, arbitrary: fc.constantFrom(...bodyEndpoints) }),
      graph: graphArbitrary(world.graphs),
      form: fc.nat(),
      extra: fc.array(
        fc.tuple(fc.constantFrom('title', 'budget', 'plan', 'type', 'configuration', 'log_level', 'description'), fc.constantFrom('null', '1', '0.000001', '1e309', '"free"', '"XYZ"', '{}', '"debug"').map(raw)),
        { maxLength: 2 },
      ),
      auth: fc.oneof({ weight: 8, arbitrary: fc.constant({ who: 'alice', header: world.alice.token }) }, { weight: 1, arbitrary: authorization(world) }),
    })
    .chain((r) => target(world, r.ep).map((tgt) => ({ ...r, tgt })))
    .map((r) => {
      // Mostly the plain template: the graph is the point here, not the path.
      const tgt = r.form % 5 === 0 ? r.tgt : r.ep.prefix + r.ep.path.replace(/\{(\w+)\}/g, (_, n: string) => world.ids[n]?.alice ?? 'fuzz_pg');
      const body = Buffer.from(text(graphBody(r.graph, r.form, r.extra)), 'utf8');
      return assemble('graphs', r.ep.method, tgt, r.auth, [['Content-Type', 'application/json']], body, 'length', limit);
    });
}

/** Bodies that break the framing or the encoding: empty, absent, broken, not UTF-8, at and over the limit. */
export function bodyRequests(world: World, limit: number): fc.Arbitrary<FuzzRequest> {
  const bodyEndpoints = world.endpoints.filter((e) => BODY_METHODS.has(e.method));
  const sized = (n: number) => Buffer.from(text(raw(`{"process_graph":[${'0,'.repeat(Math.max(0, Math.floor((n - 21) / 2)))}0]}`)), 'utf8');
  return fc
    .record({
      ep: fc.constantFrom(...bodyEndpoints),
      auth: fc.oneof({ weight: 4, arbitrary: fc.constant({ who: 'alice', header: world.alice.token }) }, { weight: 1, arbitrary: authorization(world) }),
      kind: fc.constantFrom('empty', 'none', 'encoded', 'atLimit', 'overLimit', 'overChunked', 'overDeclared', 'nul'),
      json: anyJson,
      enc: encoding,
      chunk: fc.constantFrom(1, 7, 1024, 65_536),
      headers: fc.oneof(fc.constant<[string, string][]>([]), extraHeaders),
    })
    .chain((r) => target(world, r.ep).map((tgt) => ({ ...r, tgt })))
    .map((r) => {
      const base = assemble('bodies', r.ep.method, r.tgt, r.auth, r.headers, null, 'length', limit);
      switch (r.kind) {
        case 'empty':
          base.body = Buffer.alloc(0);
          break;
        case 'none':
          break;
        case 'encoded':
          base.body = encode(text(r.json), r.enc);
          break;
        case 'nul':
          base.body = Buffer.from('{"title":"a\u0000b"}\u0000', 'utf8');
          break;
        case 'atLimit':
          base.body = sized(limit);
          base.chunked = r.chunk === 1 ? undefined : r.chunk;
          break;
        case 'overLimit':
          base.body = sized(limit + 1 + r.chunk);
          break;
        case 'overChunked':
          base.body = sized(limit + r.chunk);
          base.chunked = Math.max(r.chunk, 1024);
          break;
        case 'overDeclared':
          base.declaredLength = limit + r.chunk;
          break;
      }
      return base;
    });
}

/** Paths, queries and headers gone wrong, on every endpoint. */
export function envelopeRequests(world: World, limit: number): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      ep: fc.constantFrom(...world.endpoints),
      method: fc.constantFrom('GET', 'GET', 'HEAD', 'OPTIONS', 'DELETE'),
      auth: authorization(world),
      headers: extraHeaders,
      raw: fc.option(
        fc.constantFrom(
          '/%',
          '/%00',
          '/\xff',
          '/1.2.0/%',
          '/1.2.0/\xc0\xaf',
          '//',
          '/./1.2.0/',
          '/1.2.0/./me',
          '/1.2.0/me/..',
          '/1.2.0/me?x=1#frag',
          '/#',
          '/.well-known/',
          '/.well-known/XEO',
          '/xyz',
          '/xyz/',
          '/wmts',
          '/wmts/',
          '/viewer/',
          '/viewer?service',
          '/viewer?service=',
          `/viewer?service=${'a'.repeat(5000)}`,
        ),
        { freq: 6 },
      ),
    })
    .chain((r) => target(world, r.ep).map((tgt) => ({ ...r, tgt })))
    .map((r) => assemble('envelope', r.method, r.raw ?? r.tgt, r.auth, r.headers, null, 'length', limit));
}

const RANGES = [
  'bytes=0-0',
  'bytes=0-',
  'bytes=5-',
  'bytes=-5',
  'bytes=-0',
  'bytes=0-99999999999',
  'bytes=99999999999-',
  'bytes=1-0',
  'bytes=0-1,2-3',
  'bytes=abc',
  'bytes=-',
  'bytes=',
  'lines=0-1',
  'bytes=9007199254740993-',
];

/** Signed result links as handed out, and changed in every part: signature, expiry, asset, job. */
function signedLinks(world: World): fc.Arbitrary<{ target: string; range: string | null }> | null {
  if (!world.results) return null;
  const otherJob = world.ids.job_id?.bob ?? 'nope';
  return fc
    .record({
      link: fc.constantFrom(...world.results.links),
      change: fc.constantFrom('none', 'none', 'signature', 'noSignature', 'expires', 'expiresJunk', 'asset', 'job'),
      junk: fc.constantFrom('', 'abc', '1e309', '-1', '0', '99999999999999999999', '0x10', '1.5', '%00', '%'),
      segment: fc.constantFrom(...SEGMENTS.filter((x) => x.length < 1000)),
      range: fc.option(fc.constantFrom(...RANGES), { freq: 2 }),
    })
    .map((r) => {
      const u = new URL(r.link);
      const sig = u.searchParams.get('signature') ?? '';
      if (r.change === 'signature') u.searchParams.set('signature', sig.slice(0, -1) + (sig.endsWith('A') ? 'B' : 'A'));
      if (r.change === 'noSignature') u.searchParams.delete('signature');
      if (r.change === 'expires') u.searchParams.set('expires', String(Number(u.searchParams.get('expires')) + 1));
      let query = u.search;
      if (r.change === 'expiresJunk') query = query.replace(/expires=[^&]*/, `expires=${r.junk}`);
      let path = u.pathname;
      if (r.change === 'asset') path = path.split('/').length > 4 ? path.replace(/[^/]*$/, r.segment) : `${path}/${r.segment}`;
      if (r.change === 'job') path = path.replace(world.results!.jobId, otherJob);
      return { target: path + query, range: r.range };
    });
}

/** Tiles, WMTS, the map page and signed result links: the public routes where an id or a signature is the key. */
export function tileRequests(world: World, limit: number): fc.Arbitrary<FuzzRequest> {
  const ids = world.ids.service_id ? [world.ids.service_id.alice, world.ids.service_id.bob] : ['nope'];
  const wmtsQuery = fc
    .record({
      request: fc.constantFrom('GetTile', 'gettile', 'GetCapabilities', 'GetFeatureInfo', '', '%00'),
      layer: fc.option(fc.constantFrom(...ids, 'nope', ''), { freq: 2 }),
      tm: fc.constantFrom(...TILE_NUMBERS),
      col: fc.constantFrom(...TILE_NUMBERS),
      row: fc.constantFrom(...TILE_NUMBERS),
      format: fc.constantFrom('image/png', 'image/jpeg', 'image/gif', ''),
    })
    .map((q) => `?SERVICE=WMTS&REQUEST=${q.request}${q.layer === null ? '' : `&LAYER=${q.layer}`}&TILEMATRIX=${q.tm}&TILECOL=${q.col}&TILEROW=${q.row}&FORMAT=${q.format}`);
  return fc
    .record({
      id: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ids) }, { weight: 1, arbitrary: fc.constantFrom(...SEGMENTS) }),
      z: fc.oneof(fc.constantFrom(...TILE_NUMBERS), fc.integer({ min: 0, max: 24 }).map(String)),
      x: fc.oneof(fc.constantFrom(...TILE_NUMBERS), fc.nat(1 << 24).map(String)),
      y: fc.oneof(fc.constantFrom(...TILE_NUMBERS), fc.nat(1 << 24).map(String)),
      end: fc.constantFrom(...TILE_ENDINGS),
      kind: fc.constantFrom('xyz', 'xyz', 'xyz', 'wmts', 'viewer', ...(world.results ? (['download', 'download'] as const) : [])),
      download: signedLinks(world) ?? fc.constant(null),
      wmts: wmtsQuery,
      query: queryString,
      method: fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'OPTIONS', 'POST'),
      headers: fc.oneof(fc.constant<[string, string][]>([]), extraHeaders),
      auth: fc.oneof({ weight: 3, arbitrary: fc.constant({ who: 'anonymous' }) }, { weight: 1, arbitrary: authorization(world) }),
    })
    .map((r) => {
      if (r.kind === 'download' && r.download) {
        const headers: [string, string][] = r.download.range ? [['Range', r.download.range], ...r.headers] : r.headers;
        return assemble('tiles', r.method, r.download.target, r.auth, headers, null, 'length', limit);
      }
      const tgt = r.kind === 'xyz' ? `/xyz/${r.id}/${r.z}/${r.x}/${r.y}${r.end}${r.query}` : r.kind === 'wmts' ? `/wmts/${r.id}${r.wmts}` : `/viewer?service=${r.id}`;
      return assemble('tiles', r.method, tgt, r.auth, r.headers, null, 'length', limit);
    });
}
