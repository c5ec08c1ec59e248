// GET /processes and POST /validation over HTTP.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startServer, http, expectError, removeDir, addUser, login, type TestServer } from './helpers.js';

let s: TestServer;
let token: string;
beforeAll(async () => {
  s = await startServer();
  addUser(s.dataDir, 'alice', 'pa');
  token = await login(s, 'alice', 'pa');
});
afterAll(async () => {
  await s.stop();
  removeDir(s.dataDir);
});

const validate = (body: unknown, auth?: string) => http('POST', `${s.base}/validation`, { body: JSON.stringify(body), token: auth });
const codes = async (graph: unknown, auth?: string) => {
  const r = await validate({ process_graph: graph }, auth);
  expect(r.status).toBe(200);
  return r.json.errors.map((e: any) => e.code);
};

describe('GET /processes', () => {
  it('lists the registered processes, sorted, with the members the spec requires', async () => {
    const r = await http('GET', `${s.base}/processes`);
    expect(r.status).toBe(200);
    const ids = r.json.processes.map((p: any) => p.id);
    expect(ids).toEqual([...ids].sort());
    expect(ids).toContain('add');
    expect(ids).toContain('array_apply');
    expect(ids).toContain('load_collection');
    for (const p of r.json.processes) {
      expect(typeof p.description).toBe('string');
      expect(Array.isArray(p.parameters)).toBe(true);
      expect(p.returns.schema).toBeDefined();
    }
    // The whole list whatever the limit (the JavaScript client reads only a first page).
    const page = await http('GET', `${s.base}/processes?limit=5`);
    expect(page.json.processes).toHaveLength(r.json.processes.length);
    expect(page.json.links.find((l: any) => l.rel === 'next')).toBeUndefined();
    expect((await http('GET', `${s.base}/processes?limit=0`)).status).toBe(400);
  });
});

describe('POST /validation', () => {
  it('answers an empty list for a valid graph, in both body forms', async () => {
    const graph = {
      a: { process_id: 'add', arguments: { x: 1, y: { from_parameter: 'free' } } },
      b: { process_id: 'multiply', arguments: { x: { from_node: 'a' }, y: 2 }, result: true },
    };
    expect((await validate({ process_graph: graph })).json).toEqual({ errors: [] });
    expect((await validate({ process: { process_graph: graph } })).json).toEqual({ errors: [] });
  });

  it('reports every problem with its catalogue code', async () => {
    expect(await codes({ a: { process_id: 'no_such_process', arguments: {}, result: true } })).toEqual(['ProcessUnsupported']);
    expect(await codes({ a: { process_id: 'add', arguments: { x: 1 }, result: true } })).toEqual(['ProcessParameterRequired']);
    expect(await codes({ a: { process_id: 'add', arguments: { x: 1, y: 2, z: 3 }, result: true } })).toEqual(['ProcessParameterUnsupported']);
    expect(await codes({ a: { process_id: 'add', arguments: { x: 'one', y: 2 }, result: true } })).toEqual(['ProcessParameterInvalid']);
    expect(await codes({ a: { process_id: 'add', arguments: { x: 1 }, result: true }, b: { process_id: 'nope', arguments: {} } })).toEqual(['ProcessParameterRequired', 'ProcessUnsupported']);
    // a string result cannot feed a number parameter
    expect(
      await codes({
        t: { process_id: 'text_concat', arguments: { data: ['a', 'b'] } },
        a: { process_id: 'add', arguments: { x: { from_node: 't' }, y: 1 }, result: true },
      }),
    ).toEqual(['ProcessParameterInvalid']);
    // processes inside child graphs are checked too
    expect(
      await codes({
        a: { process_id: 'array_apply', arguments: { data: [1], process: { process_graph: { c: { process_id: 'unknown_inner', arguments: {}, result: true } } } }, result: true },
      }),
    ).toEqual(['ProcessUnsupported']);
    expect(await codes({ a: { process_id: 'add', arguments: { x: { from_node: 'zz' }, y: 1 }, result: true } })).toEqual(['ProcessGraphInvalid']);
    const r = await validate({ process_graph: { a: { process_id: 'add', arguments: { x: 'one', y: 2 }, result: true } } });
    expect(r.json.errors[0].message).toMatch(/'x'.*'add'/);
  });

  it("knows the user's stored processes when a token is sent", async () => {
    const udp = { parameters: [{ name: 'v', description: 'v', schema: { type: 'number' } }], process_graph: { a: { process_id: 'absolute', arguments: { x: { from_parameter: 'v' } }, result: true } } };
    expect((await http('PUT', `${s.base}/process_graphs/my_abs`, { token, body: JSON.stringify(udp) })).status).toBe(200);
    const graph = { u: { process_id: 'my_abs', namespace: 'user', arguments: { v: -1 }, result: true } };
    expect(await codes(graph, token)).toEqual([]);
    expect(await codes(graph)).toEqual(['ProcessUnsupported']);
    expect(await codes({ u: { process_id: 'my_abs', arguments: { w: 1 }, result: true } }, token)).toEqual(['ProcessParameterUnsupported', 'ProcessParameterRequired']);
  });

  it('checks parameter references against the declared parameters and child scopes', async () => {
    const graph = {
      a: {
        process_id: 'array_apply',
        arguments: {
          data: [1, 2],
          process: { process_graph: { m: { process_id: 'multiply', arguments: { x: { from_parameter: 'x' }, y: { from_parameter: 'k' } }, result: true } } },
        },
      },
      b: { process_id: 'array_append', arguments: { data: { from_node: 'a' }, value: { from_parameter: 'offset' } }, result: true },
    };
    // without declared parameters, references may be resolved later
    expect((await validate({ process_graph: graph })).json.errors).toEqual([]);
    // declared: `k` and `offset` must be declared; `x` is the child's own parameter
    const declared = [
      { name: 'k', description: 'k', schema: {} },
      { name: 'offset', description: 'o', schema: {} },
    ];
    expect((await validate({ process_graph: graph, parameters: declared })).json.errors).toEqual([]);
    const r = await validate({ process_graph: graph, parameters: declared.slice(0, 1) });
    expect(r.json.errors.map((e: any) => e.code)).toEqual(['ProcessParameterMissing']);
    expect(r.json.errors[0].message).toContain("'offset'");
    // a stored process may be a draft: it is stored, and /validation tells what it misses
    const draft = await http('PUT', `${s.base}/process_graphs/uses_undeclared`, { token, body: JSON.stringify({ parameters: [], process_graph: graph }) });
    expect(draft.status).toBe(200);
    expect((await validate({ parameters: [], process_graph: graph })).json.errors.map((e: any) => e.code)).toEqual(['ProcessParameterMissing', 'ProcessParameterMissing']);
  });

  it('lists the first 100 problems of a graph with thousands, and counts the rest', async () => {
    // 5,000 references to nodes that do not exist, and 3,000 arguments the process does not have
    const dangling = { a: { process_id: 'sum', arguments: { data: Array.from({ length: 5000 }, (_, i) => ({ from_node: `n${i}` })) }, result: true } };
    const r = await validate({ process_graph: dangling });
    expect(r.status).toBe(200);
    expect(r.json.errors).toHaveLength(101);
    expect(r.json.errors[99].message).toContain("'n99'");
    expect(r.json.errors[100]).toMatchObject({ code: 'ProcessGraphInvalid', message: expect.stringContaining('4900 more problems are not listed') });
    expect(r.text.length).toBeLessThan(32 * 1024);
    const unknownArgs = Object.fromEntries([['x', 1], ['y', 2], ...Array.from({ length: 3000 }, (_, i) => [`z${i}`, i])]);
    const codesOf = (await validate({ process_graph: { a: { process_id: 'add', arguments: unknownArgs, result: true } } })).json.errors.map((e: any) => e.code);
    expect(codesOf).toEqual([...Array(100).fill('ProcessParameterUnsupported'), 'ProcessGraphInvalid']);
    // running it names the count without listing thousands
    const run = await http('POST', `${s.base}/result`, { token, body: JSON.stringify({ process: { process_graph: dangling } }) });
    expectError(run, 400, 'ProcessGraphInvalid');
    expect(run.json.message).toMatch(/^More than 100 problems in the process graph: /);
    expect(run.text.length).toBeLessThan(32 * 1024);
  });

  it('fails only for a broken request', async () => {
    expect((await validate({ summary: 'no graph' })).json.errors.map((e: any) => e.code)).toEqual(['ProcessGraphMissing']);
    expectError(await http('POST', `${s.base}/validation`, { body: '{' }), 400, 'JsonInvalid');
  });

  it('refuses to store a process under a predefined id', async () => {
    const r = await http('PUT', `${s.base}/process_graphs/add`, { token, body: JSON.stringify({ process_graph: { a: { process_id: 'subtract', arguments: { x: 1, y: 1 }, result: true } } }) });
    expectError(r, 400, 'PredefinedProcessExists');
  });
});
