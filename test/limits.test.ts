// Configurable limits, each answered with a clear error: the size and nesting of process graphs,
// and how many synchronous computations one user may run at a time. (Body size, upload size, the
// storage quota and the synchronous pixel limit are tested with their endpoints.)
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startServer, http, expectError, removeDir, addUser, login, type TestServer } from './helpers.js';

let s: TestServer;
let alice: string;
let bob: string;

beforeAll(async () => {
  s = await startServer({ XEO_MAX_GRAPH_NODES: '40', XEO_MAX_GRAPH_DEPTH: '4', XEO_USER_CONCURRENCY: '1', XEO_MAX_JOBS_PER_USER: '3' });
  addUser(s.dataDir, 'alice', 'pa');
  addUser(s.dataDir, 'bob', 'pb');
  alice = await login(s, 'alice', 'pa');
  bob = await login(s, 'bob', 'pb');
});
afterAll(async () => {
  await s.stop();
  removeDir(s.dataDir);
});

/** A chain of n add nodes. */
function chain(n: number) {
  const g: Record<string, unknown> = { n0: { process_id: 'add', arguments: { x: 1, y: 1 } } };
  for (let i = 1; i < n; i++) g[`n${i}`] = { process_id: 'add', arguments: { x: { from_node: `n${i - 1}` }, y: 1 } };
  (g[`n${n - 1}`] as { result?: boolean }).result = true;
  return g;
}

/** A root array_apply with `levels` more array_apply levels below (depth levels + 2 with the innermost add). */
function nested(levels: number): Record<string, unknown> {
  let inner: Record<string, unknown> = { a: { process_id: 'add', arguments: { x: { from_parameter: 'x' }, y: 1 }, result: true } };
  for (let i = 0; i < levels; i++) {
    inner = { a: { process_id: 'array_apply', arguments: { data: [1, 2], process: { process_graph: inner } }, result: true } };
  }
  return { top: { process_id: 'array_apply', arguments: { data: [1, 2], process: { process_graph: inner } }, result: true } };
}

const result = (graph: unknown, token = alice) => http('POST', `${s.base}/result`, { token, body: JSON.stringify({ process: { process_graph: graph } }) });

describe('graph limits', () => {
  it('accepts a graph at the node limit and refuses one above it everywhere a graph is taken', async () => {
    expect((await result(chain(40))).json).toBe(41);
    const big = chain(41);
    const r = await result(big);
    expectError(r, 400, 'ProcessGraphComplexity');
    expect(r.json.message).toContain('41 nodes');
    expect(r.json.message).toContain('40');
    const v = await http('POST', `${s.base}/validation`, { body: JSON.stringify({ process_graph: big }) });
    expect(v.status).toBe(200);
    expect(v.json.errors.map((e: any) => e.code)).toEqual(['ProcessGraphComplexity']);
    expectError(await http('PUT', `${s.base}/process_graphs/big`, { token: alice, body: JSON.stringify({ process_graph: big }) }), 400, 'ProcessGraphComplexity');
  });

  it('counts the nodes of child processes too', async () => {
    // The root graph, two array_apply levels and the innermost add: depth 4, fine; one more: too deep.
    expect((await result(nested(2))).status).toBe(200);
    const r = await result(nested(3));
    expectError(r, 400, 'ProcessGraphComplexity');
    expect(r.json.message).toMatch(/5 levels/);
    // 20 child processes of two nodes each beside a root node: 41 nodes.
    const wide: Record<string, unknown> = {};
    for (let i = 0; i < 20; i++) {
      wide[`c${i}`] = {
        process_id: 'array_apply',
        arguments: {
          data: [1],
          process: { process_graph: { a: { process_id: 'add', arguments: { x: { from_parameter: 'x' }, y: 1 } }, b: { process_id: 'add', arguments: { x: { from_node: 'a' }, y: 1 }, result: true } } },
        },
      };
    }
    wide.r = { process_id: 'add', arguments: { x: 1, y: 2 }, result: true };
    expectError(await result(wide), 400, 'ProcessGraphComplexity');
  });
});

describe('concurrent computations per user', () => {
  it('refuses a second computation of the same user with 429 while others still run theirs', async () => {
    // A computation that takes a while: a child process run for each of 300,000 values.
    const slow = {
      c: { process_id: 'array_create', arguments: { data: [1], repeat: 300000 } },
      a: { process_id: 'array_apply', arguments: { data: { from_node: 'c' }, process: { process_graph: { p: { process_id: 'multiply', arguments: { x: { from_parameter: 'x' }, y: 2 }, result: true } } } } },
      s: { process_id: 'sum', arguments: { data: { from_node: 'a' } }, result: true },
    };
    const first = result(slow);
    await new Promise((r) => setTimeout(r, 150));
    const second = await result({ a: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } });
    expectError(second, 429, 'TooManyRequests');
    expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);
    const other = await result({ a: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } }, bob);
    expect(other.json).toBe(3);
    const done = await first;
    expect(done.status, done.text).toBe(200);
    expect(done.json).toBe(600000);
    // The slot is free again.
    expect((await result({ a: { process_id: 'add', arguments: { x: 2, y: 2 }, result: true } })).json).toBe(4);
  });
});

describe('batch jobs per user', () => {
  it('refuses a job beyond the limit until one is deleted, for that user only', async () => {
    const body = JSON.stringify({ process: { process_graph: chain(2) } });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await http('POST', `${s.base}/jobs`, { token: alice, body });
      expect(r.status).toBe(201);
      ids.push(r.headers['xeo-identifier']);
    }
    const over = await http('POST', `${s.base}/jobs`, { token: alice, body });
    expectError(over, 400, 'JobQuotaExceeded');
    expect(over.json.message).toContain('3 batch jobs');
    expect((await http('POST', `${s.base}/jobs`, { token: bob, body })).status).toBe(201);
    expect((await http('DELETE', `${s.base}/jobs/${ids[0]}`, { token: alice })).status).toBe(204);
    expect((await http('POST', `${s.base}/jobs`, { token: alice, body })).status).toBe(201);
  });
});
