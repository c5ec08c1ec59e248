// The reference evaluator: parameter resolution order, user-defined processes and namespaces,
// child processes, argument checks, node order.
import { describe, it, expect } from 'vitest';
import { evaluateGraph, rootScope, resolveParameter, type EvalEnv } from '../src/graph/evaluate.js';
import { type Graph } from '../src/core/graph.js';
import { predefined } from '../src/processes/registry.js';

const udps: Record<string, { parameters?: any[]; process_graph: Graph }> = {
  plus_k: {
    parameters: [
      { name: 'x', description: 'a number', schema: { type: 'number' } },
      { name: 'k', description: 'what to add', schema: { type: 'number' }, optional: true, default: 10 },
    ],
    process_graph: { s: { process_id: 'add', arguments: { x: { from_parameter: 'x' }, y: { from_parameter: 'k' } }, result: true } },
  },
  // shadows the predefined `absolute`: with namespace null the user's process wins
  absolute: { parameters: [{ name: 'x', description: 'x', schema: {} }], process_graph: { c: { process_id: 'constant', arguments: { x: 'mine' }, result: true } } },
  loop: { parameters: [], process_graph: { l: { process_id: 'loop', arguments: {}, result: true } } },
};
const env: EvalEnv = { predefined: (id) => predefined.get(id), userProcess: (id) => udps[id] ?? null };
const run = (g: Graph, values: Record<string, unknown> = {}, defaults: Record<string, unknown> = {}) => evaluateGraph(g, env, rootScope(values, defaults));

describe('evaluator', () => {
  it('evaluates a one-node graph and chains of nodes, whatever the key order', async () => {
    expect(await run({ a: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } })).toBe(3);
    const g: Graph = {
      out: { process_id: 'multiply', arguments: { x: { from_node: 'sum' }, y: { from_node: 'diff' } }, result: true },
      sum: { process_id: 'add', arguments: { x: 3, y: 4 } },
      diff: { process_id: 'subtract', arguments: { x: { from_node: 'sum' }, y: 5 } },
    };
    expect(await run(g)).toBe(14);
  });

  it('resolves parameters: innermost value first, else the outermost default, else ProcessParameterMissing', async () => {
    const outer = { values: { a: 1 }, defaults: { b: 'outer' }, parent: null };
    const inner = { values: { c: 3 }, defaults: { b: 'inner', d: 4 }, parent: outer };
    const innermost = { values: { a: 99 }, defaults: {}, parent: inner };
    expect(resolveParameter(innermost, 'a')).toBe(99);
    expect(resolveParameter(inner, 'a')).toBe(1);
    expect(resolveParameter(innermost, 'b')).toBe('outer');
    expect(resolveParameter(innermost, 'd')).toBe(4);
    expect(() => resolveParameter(innermost, 'zz')).toThrow(expect.objectContaining({ code: 'ProcessParameterMissing' }));
  });

  it('passes parameters into child processes and their context', async () => {
    const g: Graph = {
      a: {
        process_id: 'array_apply',
        arguments: {
          data: [1, 2, 3],
          context: 100,
          process: {
            process_graph: {
              m: { process_id: 'add', arguments: { x: { from_parameter: 'x' }, y: { from_parameter: 'context' } } },
              r: { process_id: 'multiply', arguments: { x: { from_node: 'm' }, y: { from_parameter: 'factor' } }, result: true },
            },
          },
        },
        result: true,
      },
    };
    // `factor` comes from the root scope, through the child's scope chain
    expect(await run(g, { factor: 2 })).toEqual([202, 204, 206]);
  });

  it('calls user-defined processes with their defaults, preferring them for namespace null', async () => {
    expect(await run({ p: { process_id: 'plus_k', arguments: { x: 1 }, result: true } })).toBe(11);
    expect(await run({ p: { process_id: 'plus_k', namespace: 'user', arguments: { x: 1, k: 2 }, result: true } })).toBe(3);
    expect(await run({ p: { process_id: 'absolute', arguments: { x: -5 }, result: true } })).toBe('mine');
    expect(await run({ p: { process_id: 'absolute', namespace: 'backend', arguments: { x: -5 }, result: true } })).toBe(5);
    await expect(run({ p: { process_id: 'add', namespace: 'user', arguments: { x: 1, y: 1 }, result: true } })).rejects.toMatchObject({ code: 'ProcessUnsupported' });
    await expect(run({ p: { process_id: 'plus_k', arguments: { x: 1, q: 1 }, result: true } })).rejects.toMatchObject({ code: 'ProcessParameterUnsupported' });
    await expect(run({ p: { process_id: 'loop', arguments: {}, result: true } })).rejects.toMatchObject({ code: 'ProcessGraphInvalid' });
  });

  it('refuses unknown processes, missing and unknown arguments with catalogue codes', async () => {
    await expect(run({ a: { process_id: 'nope', arguments: {}, result: true } })).rejects.toMatchObject({ code: 'ProcessUnsupported' });
    await expect(run({ a: { process_id: 'add', arguments: { x: 1 }, result: true } })).rejects.toMatchObject({ code: 'ProcessParameterRequired' });
    await expect(run({ a: { process_id: 'add', arguments: { x: 1, y: 2, z: 3 }, result: true } })).rejects.toMatchObject({ code: 'ProcessParameterUnsupported' });
    await expect(run({ a: { process_id: 'add', arguments: { x: { from_parameter: 'nothing' }, y: 1 }, result: true } })).rejects.toMatchObject({
      code: 'ProcessParameterMissing',
    });
  });
});
