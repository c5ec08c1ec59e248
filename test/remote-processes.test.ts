// The Remote Process Definition extension over HTTP: nodes whose namespace is the URL of a process
// (or of a list of processes) served by a small HTTP server of ours on loopback (allowed through
// XEO_OUTBOUND_ALLOW, plain http allowed by XEO_REMOTE_PROCESS_HTTP). Validation, /result, stored
// processes and batch jobs use them as they use stored processes; every way a namespace
// can be unusable is ProcessNamespaceInvalid (400); the user's token never reaches that server; the
// documents are kept for the TTL and size-limited. A server with the default settings refuses the same
// plain-http URL (its outbound rules allow the address, so only the scheme can be the reason).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startServer, http, expectError, removeDir, addUser, login, type TestServer } from './helpers.js';
import { Jobs } from './jobs-helpers.js';

/** Long enough that nothing kept expires while this file runs: keeping is checked by outcome, not by the clock. */
const TTL_S = 3600;
let s: TestServer;
let token: string;
let remote: Server;
let base: string;
/** What the remote server was asked: path and headers. */
const asked: { path: string; headers: IncomingHttpHeaders }[] = [];

/** A remote process the tests change while a server keeps its earlier version. */
let changing = 2;

/** x * factor, as a remote process. */
const scale = (id: string, factor: number) => ({
  id,
  summary: `multiplies by ${factor}`,
  parameters: [{ name: 'x', description: 'a number', schema: { type: 'number' } }],
  returns: { schema: { type: 'number' } },
  process_graph: { m: { process_id: 'multiply', arguments: { x: { from_parameter: 'x' }, y: factor }, result: true } },
});

const DOCS: Record<string, unknown> = {
  '/double': scale('double', 2),
  // a list (as GET /process_graphs answers): the node's id picks the process; one calls another remote one
  '/list': {
    processes: [
      scale('triple', 3),
      {
        id: 'sextuple',
        parameters: [{ name: 'x', description: 'a number', schema: { type: 'number' } }],
        process_graph: {
          t: { process_id: 'triple', namespace: 'LIST', arguments: { x: { from_parameter: 'x' } } },
          d: { process_id: 'double', namespace: 'DOUBLE', arguments: { x: { from_node: 't' } }, result: true },
        },
      },
      { id: 'no_graph', summary: 'listed without its graph' },
    ],
    links: [],
  },
  '/not-a-process': { hello: 'world' },
  '/broken-graph': { id: 'broken_graph', process_graph: { a: { process_id: 'add', arguments: { x: { from_node: 'nowhere' } }, result: true } } },
  '/job-graph': {
    id: 'ndvi_anywhere',
    process_graph: { a: { process_id: 'add', arguments: { x: 40, y: 2 }, result: true } },
    default_synchronous_options: { log_level: 'error' },
  },
};

const node = (id: string, namespace: string, args: Record<string, unknown> = { x: 7 }) => ({ n: { process_id: id, namespace, arguments: args, result: true } });
const post = (path: string, body: unknown, version = '1.3.0') =>
  http('POST', `${s.url}/${version}${path}`, { token, body: JSON.stringify(body), headers: { 'content-type': 'application/json', origin: 'http://x.test' } });
const result = (graph: unknown, version = '1.3.0') => post('/result', { process: { process_graph: graph } }, version);

beforeAll(async () => {
  remote = createServer((req, res) => {
    asked.push({ path: req.url!, headers: req.headers });
    if (req.url === '/huge') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ ...scale('huge', 1), padding: 'x'.repeat(4096) }));
    }
    if (req.url === '/not-json') return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>');
    if (req.url === '/moved') return res.writeHead(302, { location: '/double' }).end();
    if (req.url === '/changing') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(scale('changing', changing)));
    const doc = DOCS[req.url!];
    if (!doc) return res.writeHead(404).end('{}');
    const text = JSON.stringify(doc)
      .replaceAll('"LIST"', JSON.stringify(`${base}/list`))
      .replaceAll('"DOUBLE"', JSON.stringify(`${base}/double`));
    res.writeHead(200, { 'content-type': 'application/json' }).end(text);
  });
  await new Promise<void>((r) => remote.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
  s = await startServer({
    XEO_OUTBOUND_ALLOW: '127.0.0.1',
    XEO_REMOTE_PROCESS_HTTP: 'true',
    XEO_REMOTE_PROCESS_TTL: String(TTL_S),
    XEO_REMOTE_PROCESS_MAX_BYTES: '2048',
  });
  addUser(s.dataDir, 'alice', 'pa');
  token = await login(s, 'alice', 'pa');
});
afterAll(async () => {
  await s?.stop();
  if (s) removeDir(s.dataDir);
  remote.closeAllConnections();
  await new Promise((r) => remote.close(r));
});

describe('processes named by URL', () => {
  it('run in /result and pass validation on every version with namespaces, by themselves and from a list', async () => {
    for (const v of ['1.3.0', '1.2.0', '1.0.1']) {
      const r = await result(node('double', `${base}/double`), v);
      expect(r.status, `${v}: ${r.text}`).toBe(200);
      expect(r.json).toBe(14);
      expect((await result(node('triple', `${base}/list`), v)).json).toBe(21);
      // through each other: a process of the list calls one of the list and one by itself
      expect((await result(node('sextuple', `${base}/list`), v)).json).toBe(42);
      expect((await post('/validation', { process_graph: node('double', `${base}/double`) }, v)).json.errors).toEqual([]);
      // their parameters are checked as a stored process's are
      const bad = (await post('/validation', { process_graph: node('double', `${base}/double`, { x: 'seven' }) }, v)).json.errors;
      expect(bad.map((e: { code: string }) => e.code)).toEqual(['ProcessParameterInvalid']);
      expect((await post('/validation', { process_graph: node('double', `${base}/double`, { y: 1 }) }, v)).json.errors.map((e: { code: string }) => e.code)).toContain('ProcessParameterUnsupported');
    }
    // API 1.0.0-rc.2 has no namespaces at all
    expectError(
      await http('POST', `${s.url}/1.0.0-rc.2/result`, { token, body: JSON.stringify({ process: { process_graph: node('double', `${base}/double`) } }), headers: { origin: 'http://x.test' } }),
      400,
      'ProcessGraphInvalid',
    );
  });

  it('are read without the user’s credentials, once per TTL', async () => {
    asked.length = 0;
    changing = 2;
    expect((await result(node('changing', `${base}/changing`))).json).toBe(14);
    expect(asked.map((a) => a.path)).toEqual(['/changing']);
    // changed at the source: this server keeps what it read for the TTL and asks no more
    changing = 3;
    for (let i = 0; i < 3; i++) expect((await result(node('changing', `${base}/changing`))).json).toBe(14);
    expect(asked.length).toBe(1);
    for (const a of asked) {
      expect(a.headers.authorization).toBeUndefined();
      expect(a.headers.cookie).toBeUndefined();
    }
  });

  it('answer ProcessNamespaceInvalid when the URL cannot be used, also in /validation', async () => {
    const cases: [string, string, RegExp][] = [
      ['double', `${base}/nothing-here`, /HTTP 404/],
      ['double', `${base}/not-json`, /not JSON/],
      ['double', `${base}/not-a-process`, /neither a process nor a list/],
      ['triple', `${base}/double`, /holds process 'double', not 'triple'/],
      ['quadruple', `${base}/list`, /no process 'quadruple'/],
      ['no_graph', `${base}/list`, /process graph is not valid/],
      ['broken_graph', `${base}/broken-graph`, /process graph is not valid/],
      ['huge', `${base}/huge`, /larger than 2048 bytes/],
      // an address the outbound rules refuse (loopback, but not the one allowed)
      ['double', `http://127.0.0.2:${new URL(base).port}/double`, /loopback/],
      ['double', 'http://user:secret@127.0.0.1/double', /credentials/],
    ];
    for (const [id, ns, why] of cases) {
      const r = await result(node(id, ns));
      expectError(r, 400, 'ProcessNamespaceInvalid');
      expect(r.json.message, ns).toMatch(why);
      expect(r.json.message).toContain(ns.includes('secret') ? 'http://user:secret@127.0.0.1/double' : ns);
      const v = (await post('/validation', { process_graph: node(id, ns) })).json.errors;
      expect(
        v.map((e: { code: string }) => e.code),
        ns,
      ).toEqual(['ProcessNamespaceInvalid']);
    }
    // a redirect is followed (and checked by the same rules)
    expect((await result(node('double', `${base}/moved`))).json).toBe(14);
    // a namespace that is no URL is no remote process: the process is unknown there
    expectError(await result(node('double', 'ftp://example.org/double')), 400, 'ProcessUnsupported');
  });

  it('are used by stored processes and batch jobs as stored processes are', async () => {
    // a stored process that calls a remote one is checked when it is stored, and runs
    const udp = {
      parameters: [{ name: 'v', description: 'v', schema: { type: 'number' } }],
      process_graph: { d: { process_id: 'double', namespace: `${base}/double`, arguments: { x: { from_parameter: 'v' } }, result: true } },
    };
    expect((await http('PUT', `${s.url}/1.3.0/process_graphs/double_it`, { token, body: JSON.stringify(udp) })).status).toBe(200);
    expect((await result({ u: { process_id: 'double_it', namespace: 'user', arguments: { v: 5 }, result: true } })).json).toBe(10);
    // one whose remote process cannot be read is kept as a draft, and fails when it runs
    const bad = { process_graph: { d: { process_id: 'double', namespace: `${base}/nothing-here`, arguments: { x: 1 }, result: true } } };
    expect((await http('PUT', `${s.url}/1.3.0/process_graphs/broken`, { token, body: JSON.stringify(bad) })).status).toBe(200);
    expectError(await result({ u: { process_id: 'broken', namespace: 'user', arguments: {}, result: true } }), 400, 'ProcessNamespaceInvalid');
    // a batch job fetches it when it runs
    const jobs = new Jobs({ ...s, base: `${s.url}/1.3.0` }, token);
    const job = await jobs.run(node('sextuple', `${base}/list`));
    expect(job.status).toBe('finished');
    const doc = (await jobs.call('GET', `/jobs/${job.id}/results`)).json;
    const asset = Object.values<{ href: string }>(doc.assets)[0];
    expect(JSON.parse((await http('GET', asset.href)).text)).toBe(42);
    // its defaults count like a stored process's: here the log level of a synchronous request
    const quiet = await result({ n: { process_id: 'ndvi_anywhere', namespace: `${base}/job-graph`, arguments: {}, result: true } });
    expect(quiet.json).toBe(42);
    expect(quiet.headers.link).toBeUndefined();
  });
});

describe('processes named by URL, on servers with other settings', () => {
  let plain: TestServer;
  let brief: TestServer;
  let plainToken: string;
  let briefToken: string;
  beforeAll(async () => {
    // Both allow the remote server's address (as the first server does): the outbound rules are not
    // what refuses or lets a request through here.
    [plain, brief] = await Promise.all([startServer({ XEO_OUTBOUND_ALLOW: '127.0.0.1' }), startServer({ XEO_OUTBOUND_ALLOW: '127.0.0.1', XEO_REMOTE_PROCESS_HTTP: 'true', XEO_REMOTE_PROCESS_TTL: '1' })]);
    addUser(plain.dataDir, 'alice', 'pa');
    addUser(brief.dataDir, 'alice', 'pa');
    [plainToken, briefToken] = await Promise.all([login(plain, 'alice', 'pa'), login(brief, 'alice', 'pa')]);
  });
  afterAll(async () => {
    await Promise.all([plain?.stop(), brief?.stop()]);
    if (plain) removeDir(plain.dataDir);
    if (brief) removeDir(brief.dataDir);
  });
  const resultOn = (srv: TestServer, as: string, graph: unknown) =>
    http('POST', `${srv.url}/1.3.0/result`, { token: as, body: JSON.stringify({ process: { process_graph: graph } }), headers: { 'content-type': 'application/json', origin: 'http://x.test' } });

  it('refuse plain http by default, and read it where XEO_REMOTE_PROCESS_HTTP allows it', async () => {
    asked.length = 0;
    const r = await resultOn(plain, plainToken, node('double', `${base}/double`));
    expectError(r, 400, 'ProcessNamespaceInvalid');
    expect(r.json.message).toContain('only https://');
    expect(r.json.message).not.toMatch(/loopback/);
    expect(asked).toEqual([]);
    const v = (
      await http('POST', `${plain.url}/1.3.0/validation`, { token: plainToken, body: JSON.stringify({ process_graph: node('double', `${base}/double`) }), headers: { 'content-type': 'application/json' } })
    ).json.errors;
    expect(v.map((e: { code: string }) => e.code)).toEqual(['ProcessNamespaceInvalid']);
    // the same URL, the same outbound rules, plain http allowed: read and run
    expect((await resultOn(brief, briefToken, node('double', `${base}/double`))).json).toBe(14);
    expect(asked.map((a) => a.path)).toEqual(['/double']);
  });

  it('read the document again once the TTL has passed', async () => {
    changing = 2;
    expect((await resultOn(brief, briefToken, node('changing', `${base}/changing`))).json).toBe(14);
    changing = 5;
    // Asked until the new version answers: every answer is one of the two versions, and the new one
    // comes (the test's own timeout bounds the wait, not a guess at how long the TTL takes here).
    let answer = 14;
    while (answer !== 35) {
      await new Promise((r) => setTimeout(r, 200));
      answer = (await resultOn(brief, briefToken, node('changing', `${base}/changing`))).json;
      expect([14, 35]).toContain(answer);
    }
  });
});
