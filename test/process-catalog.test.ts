// The process catalogue (definitions, texts, kernel lowerings: src/process-catalog/) and the
// implementations (src/processes/) agree: every offered process has exactly one implementation, a
// start fails otherwise, every lowering makes a program both kernel tiers take, and the
// differential tests of the kernels (test/kernels-differential.test.ts, tier 0 and tier 1 against
// the JS engine) generate every lowered process, with the arguments its definition names.
import { describe, it, expect } from 'vitest';
import { processCatalog } from '../src/process-catalog/catalog.js';
import { argumentsOf, type Lowering } from '../src/process-catalog/lowerings.js';
import { implementations, predefined, Registry } from '../src/processes/registry.js';
import { implementScalar } from '../src/processes/implement.js';
import { fuseChild, type ChildShape } from '../src/compile/fuse.js';
import { encodeProgram } from '../src/compile/tier0.js';
import { generateSource } from '../src/compile/codegen.js';
import { randomChild, type Shape } from './kernel-graphs.js';
import { Rng } from './rng.js';

const lowered = processCatalog.ids().filter((id) => processCatalog.get(id)!.lowering);
const env = { outer: () => undefined, shadowed: () => false, predefined: (id: string) => predefined.get(id) };

describe('the process catalogue and the implementations', () => {
  it('every offered process has exactly one implementation, joined to its definition', () => {
    const ids = processCatalog.ids();
    expect(ids.length).toBeGreaterThan(100);
    expect(implementations.map((i) => i.id).sort()).toEqual([...ids].sort());
    for (const id of ids) expect(predefined.get(id)?.spec, id).toBe(processCatalog.get(id)!.spec);
    expect(predefined.specs()).toEqual(processCatalog.specs());
  });

  it('a start fails on a process without implementation, one implemented twice, or one not offered', () => {
    const [first, ...rest] = implementations;
    expect(() => new Registry(processCatalog, rest)).toThrow(`process ${first.id} is in the process catalogue but has no implementation`);
    expect(() => new Registry(processCatalog, [...implementations, first])).toThrow(`process ${first.id} is implemented twice`);
    expect(() => new Registry(processCatalog, [...implementations, implementScalar('not_offered', () => 1)])).toThrow('process not_offered is implemented but not in the process catalogue');
  });
});

/** A child graph calling `id` once: every argument its lowering reads from the pixels, numbers for the rest. */
function childOf(id: string, l: Lowering): { graph: Record<string, unknown>; shape: ChildShape } {
  const labels = ['a', 'b', 'c'];
  const array: ChildShape = { kind: 'array', param: 'data', labels };
  const pixel = { from_parameter: 'x' };
  const call = (args: Record<string, unknown>) => ({ n: { process_id: id, arguments: args, result: true } });
  switch (l.kind) {
    case 'op': {
      const args: Record<string, unknown> = Object.fromEntries(l.operands.map((name) => [name, pixel]));
      // immediates 0 and 1: ordered bounds for clip, non-empty ranges for linscale
      Object.values(l.immediates ?? {}).forEach((name, i) => (args[name] = i % 2));
      return { graph: call(args), shape: { kind: 'value', param: 'x' } };
    }
    case 'const':
      return { graph: call(Object.fromEntries((l.operands ?? []).map((name) => [name, pixel]))), shape: { kind: 'value', param: 'x' } };
    case 'pass':
      return { graph: call({ [l.operand]: pixel }), shape: { kind: 'value', param: 'x' } };
    case 'reduce':
      return { graph: call({ [l.array]: { from_parameter: 'data' } }), shape: array };
    case 'element':
      return { graph: call({ [l.array]: { from_parameter: 'data' }, [l.index]: 1 }), shape: array };
  }
}

describe('kernel lowerings', () => {
  it('name parameters of their processes only (the catalogue checks it at start)', () => {
    expect(lowered.length).toBeGreaterThan(50);
    for (const id of lowered) {
      const l = processCatalog.get(id)!.lowering!;
      const params = processCatalog.get(id)!.spec.parameters.map((p) => p.name);
      for (const name of [...argumentsOf(l), ...Object.keys(l.fixed ?? {}), ...(l.ignored ?? [])]) expect(params, `${id}: ${name}`).toContain(name);
    }
  });

  it('each make a program that tier 0 encodes and tier 1 generates code for', () => {
    for (const id of lowered) {
      const { graph, shape } = childOf(id, processCatalog.get(id)!.lowering!);
      const { fused, reason } = fuseChild(graph, shape, env);
      expect(fused, `${id}: ${reason}`).not.toBeNull();
      expect(() => encodeProgram(fused!.program), id).not.toThrow();
      expect(() => generateSource(fused!.program), id).not.toThrow();
    }
  });

  it('the differential tests generate every lowered process, with the arguments of its definition', () => {
    const seen = new Set<string>();
    const rng = new Rng(1);
    for (let i = 0; i < 3000; i++) {
      const shape: Shape = i % 2 ? { kind: 'value' } : { kind: 'array', n: 1 + rng.int(6) };
      for (const node of Object.values(randomChild(rng, shape)) as { process_id: string; arguments: Record<string, unknown> }[]) {
        seen.add(node.process_id);
        const params = processCatalog.get(node.process_id)?.spec.parameters ?? [];
        for (const name of Object.keys(node.arguments))
          expect(
            params.map((p) => p.name),
            `${node.process_id}: ${name}`,
          ).toContain(name);
        for (const p of params) if (!p.optional) expect(node.arguments, `${node.process_id} without ${p.name}`).toHaveProperty(p.name);
      }
    }
    expect(lowered.filter((id) => !seen.has(id))).toEqual([]);
    expect([...seen].filter((id) => !lowered.includes(id))).toEqual([]);
  });
});
