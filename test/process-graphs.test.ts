// Stored user-defined processes: lifecycle, structural validation, isolation, paging.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startServer, http, expectError, removeDir, addUser, login, type TestServer } from './helpers.js';

let s: TestServer;
let alice: string;
let bob: string;
beforeAll(async () => {
  s = await startServer();
  addUser(s.dataDir, 'alice', 'pa');
  addUser(s.dataDir, 'bob', 'pb');
  alice = await login(s, 'alice', 'pa');
  bob = await login(s, 'bob', 'pb');
});
afterAll(async () => {
  await s.stop();
  removeDir(s.dataDir);
});

const addGraph = {
  sum: { process_id: 'add', arguments: { x: { from_parameter: 'a' }, y: 1 }, result: true },
};
const udp = (graph: unknown = addGraph) => ({
  summary: 'Adds one',
  description: 'Adds one to a number.',
  parameters: [{ name: 'a', description: 'A number', schema: { type: 'number' } }],
  returns: { schema: { type: 'number' } },
  process_graph: graph,
});
const put = (id: string, body: unknown, token = alice, prefix = s.base) =>
  // With an Origin, as browsers send it: API 1.0.0-rc.2 sends CORS headers only then.
  http('PUT', `${prefix}/process_graphs/${id}`, { token, body: JSON.stringify(body), headers: { 'content-type': 'application/json', origin: 'http://client.test' } });

describe('lifecycle', () => {
  it('stores with PUT, reads, replaces, lists and deletes', async () => {
    const created = await put('add_one', { ...udp(), id: 'ignored_id' });
    expect(created.status).toBe(200);
    expect(created.body.length).toBe(0);
    const got = await http('GET', `${s.base}/process_graphs/add_one`, { token: alice });
    expect(got.status).toBe(200);
    expect(got.json).toMatchObject({ id: 'add_one', summary: 'Adds one', process_graph: addGraph });
    expect((await put('add_one', { ...udp(), summary: 'Adds one, again' })).status).toBe(200);
    expect((await http('GET', `${s.base}/process_graphs/add_one`, { token: alice })).json.summary).toBe('Adds one, again');
    const list = await http('GET', `${s.base}/process_graphs`, { token: alice });
    expect(list.json.processes).toEqual([{ id: 'add_one', summary: 'Adds one, again', description: 'Adds one to a number.', parameters: udp().parameters, returns: udp().returns }]);
    expect(list.json.links).toEqual(expect.any(Array));
    const del = await http('DELETE', `${s.base}/process_graphs/add_one`, { token: alice });
    expect(del.status).toBe(204);
    expectError(await http('GET', `${s.base}/process_graphs/add_one`, { token: alice }), 404, 'ProcessGraphNotFound');
    expectError(await http('DELETE', `${s.base}/process_graphs/add_one`, { token: alice }), 404, 'ProcessGraphNotFound');
  });

  it('creates with POST (201, Location, Xeo-Identifier) and updates first-level members with PATCH', async () => {
    const r = await http('POST', `${s.base}/process_graphs`, { token: alice, body: JSON.stringify({ title: 'Plus one', process_graph: addGraph }) });
    expect(r.status).toBe(201);
    expect(r.body.length).toBe(0);
    const id = r.headers['xeo-identifier'];
    expect(id).toMatch(/^\w+$/);
    expect(r.headers.location).toBe(`${s.base}/process_graphs/${id}`);
    const got = (await http('GET', r.headers.location, { token: alice })).json;
    expect(got).toMatchObject({ id, summary: 'Plus one', process_graph: addGraph });

    const patch = (body: unknown) => http('PATCH', `${s.base}/process_graphs/${id}`, { token: alice, body: JSON.stringify(body) });
    expect((await patch({ description: 'New text' })).status).toBe(204);
    const after = (await http('GET', r.headers.location, { token: alice })).json;
    expect(after).toMatchObject({ id, summary: 'Plus one', description: 'New text', process_graph: addGraph });
    expect((await patch({})).status).toBe(204);
    expectError(await patch({ id: 'other' }), 400, 'PropertyNotEditable');
    expectError(await patch({ process_graph: null }), 400, 'ProcessGraphMissing');
    expectError(await patch({ process_graph: { a: { process_id: 'add', arguments: {} } } }), 400, 'ProcessGraphInvalid');
    // a refused PATCH changes nothing
    expect((await http('GET', r.headers.location, { token: alice })).json).toEqual(after);
    expectError(await http('PATCH', `${s.base}/process_graphs/pg_missing`, { token: alice, body: '{"summary":"x"}' }), 404, 'ProcessGraphNotFound');
  });

  it('needs a token', async () => {
    expectError(await http('GET', `${s.base}/process_graphs`), 401, 'AuthenticationRequired');
    expectError(await put('x', udp(), ''), 401, 'AuthenticationRequired');
  });
});

describe('structural validation', () => {
  const cases: [string, unknown][] = [
    ['no result node', { a: { process_id: 'add', arguments: { x: 1, y: 2 } } }],
    ['two result nodes', { a: { process_id: 'add', arguments: {}, result: true }, b: { process_id: 'add', arguments: {}, result: true } }],
    ['dangling from_node', { a: { process_id: 'add', arguments: { x: { from_node: 'zzz' } }, result: true } }],
    [
      'a cycle',
      {
        a: { process_id: 'add', arguments: { x: { from_node: 'b' } } },
        b: { process_id: 'add', arguments: { x: { from_node: 'a' } }, result: true },
      },
    ],
    ['a self reference', { a: { process_id: 'add', arguments: { x: { from_node: 'a' } }, result: true } }],
    ['from_node with extra keys', { a: { process_id: 'add', arguments: { x: { from_node: 'a', y: 1 } }, result: true } }],
    ['from_parameter not a name', { a: { process_id: 'add', arguments: { x: { from_parameter: 5 } }, result: true } }],
    ['a bad process id', { a: { process_id: 'add-one', arguments: {}, result: true } }],
    ['missing arguments', { a: { process_id: 'add', result: true } }],
    ['a child graph without result', { a: { process_id: 'apply', arguments: { process: { process_graph: { b: { process_id: 'absolute', arguments: {} } } } }, result: true } }],
    [
      'from_node into a parent graph',
      {
        outer: { process_id: 'add', arguments: {} },
        a: { process_id: 'apply', arguments: { process: { process_graph: { b: { process_id: 'absolute', arguments: { x: { from_node: 'outer' } }, result: true } } } }, result: true },
      },
    ],
    ['an empty graph', {}],
    ['not an object', [1, 2]],
    ['a node with the reserved key process_graph', { a: { process_id: 'add', arguments: {}, result: true, process_graph: {} } }],
    ['a non-boolean result', { a: { process_id: 'add', arguments: {}, result: 'yes' } }],
  ];
  for (const [name, graph] of cases) {
    it(`rejects ${name}`, async () => {
      const r = await put('bad_graph', { process_graph: graph });
      expectError(r, 400, 'ProcessGraphInvalid');
      expectError(await http('GET', `${s.base}/process_graphs/bad_graph`, { token: alice }), 404, 'ProcessGraphNotFound');
    });
  }

  it('reports every problem with where it is', async () => {
    const r = await put('bad_graph', {
      process_graph: { a: { process_id: 'add', arguments: { x: { from_node: 'nope' } } }, b: { process_id: 5, arguments: {} } },
    });
    expectError(r, 400, 'ProcessGraphInvalid');
    expect(r.json.message).toContain("a.arguments.x: 'from_node' refers to 'nope'");
    expect(r.json.message).toContain('b:');
    expect(r.json.message).toContain('result');
  });

  it('accepts child graphs, nested references and parameters', async () => {
    const graph = {
      load: { process_id: 'load_collection', arguments: { id: 'S2', spatial_extent: { west: 1, east: 2, south: 3, north: 4 }, temporal_extent: null, bands: [{ from_parameter: 'band' }] } },
      apply: {
        process_id: 'apply',
        arguments: {
          data: { from_node: 'load' },
          process: { process_graph: { abs: { process_id: 'absolute', arguments: { x: { from_parameter: 'x' } }, result: true } } },
        },
      },
      out: { process_id: 'save_result', namespace: null, arguments: { data: { from_node: 'apply' }, format: 'GTiff', options: { list: [{ from_node: 'apply' }] } }, result: true },
    };
    expect((await put('nested_ok', { process_graph: graph })).status).toBe(200);
  });

  it('rejects what is not a process', async () => {
    expectError(await put('no_graph', { summary: 'nothing' }), 400, 'ProcessGraphMissing');
    expectError(await put('bad_meta', { process_graph: addGraph, parameters: 'x' }), 400, 'ProcessInvalid');
    expectError(await put('bad_meta', { process_graph: addGraph, parameters: [{ description: 'no name' }] }), 400, 'ProcessInvalid');
    expectError(await put('bad-id', { process_graph: addGraph }), 400, 'ProcessInvalid');
    expectError(await http('GET', `${s.base}/process_graphs/bad-id`, { token: alice }), 404, 'ProcessGraphNotFound');
  });

  it('knows that API 1.0.0-rc.2 nodes have no namespace', async () => {
    const graph = { a: { process_id: 'add', namespace: 'backend', arguments: { x: 1, y: 2 }, result: true } };
    expect((await put('with_ns', { process_graph: graph })).status).toBe(200);
    expectError(await put('with_ns', { process_graph: graph }, alice, `${s.url}/1.0.0-rc.2`), 400, 'ProcessGraphInvalid');
    const plain = { a: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } };
    expect((await put('without_ns', { process_graph: plain }, alice, `${s.url}/1.0.0-rc.2`)).status).toBe(200);
  });
});

describe('isolation and paging', () => {
  it('shows each user only their own processes', async () => {
    expect((await put('private_one', udp())).status).toBe(200);
    expectError(await http('GET', `${s.base}/process_graphs/private_one`, { token: bob }), 404, 'ProcessGraphNotFound');
    expectError(await http('DELETE', `${s.base}/process_graphs/private_one`, { token: bob }), 404, 'ProcessGraphNotFound');
    expectError(await http('PATCH', `${s.base}/process_graphs/private_one`, { token: bob, body: '{"summary":"mine"}' }), 404, 'ProcessGraphNotFound');
    expect((await http('GET', `${s.base}/process_graphs`, { token: bob })).json.processes).toEqual([]);
    // bob may use the same id for his own process; alice's stays as it was
    expect((await put('private_one', { ...udp(), summary: 'Bob' }, bob)).status).toBe(200);
    expect((await http('GET', `${s.base}/process_graphs/private_one`, { token: alice })).json.summary).toBe('Adds one');
  });

  it('pages with limit and next links until the end', async () => {
    for (let i = 0; i < 7; i++) expect((await put(`page_${i}`, udp(), bob)).status).toBe(200);
    const all = (await http('GET', `${s.base}/process_graphs`, { token: bob })).json.processes.map((p: any) => p.id);
    const seen: string[] = [];
    let url: string | undefined = `${s.base}/process_graphs?limit=3`;
    let pages = 0;
    while (url) {
      const r = await http('GET', url, { token: bob });
      expect(r.json.processes.length).toBeLessThanOrEqual(3);
      seen.push(...r.json.processes.map((p: any) => p.id));
      url = r.json.links.find((l: any) => l.rel === 'next')?.href;
      pages++;
    }
    expect(seen).toEqual(all);
    expect(pages).toBe(Math.ceil(all.length / 3));
  });
});
