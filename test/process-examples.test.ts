// The openEO process definitions are the oracle of our process library: every registered process
// serves exactly the facts of its definition, and every example it gives (arguments -> returns)
// comes out of our evaluator. The facts and examples are a fixture generated from the definitions
// (test/fixtures/make-process-fixtures.mjs), so this runs without the spec folder.
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { evaluateGraph, rootScope } from '../src/graph/evaluate.js';
import { predefined } from '../src/processes/registry.js';

const examples: Record<string, { arguments: Record<string, unknown>; returns?: unknown }[]> = JSON.parse(readFileSync(new URL('./fixtures/process-examples.json', import.meta.url), 'utf8'));
const facts: Record<string, any> = JSON.parse(readFileSync(new URL('../src/process-catalog/schemas.json', import.meta.url), 'utf8'));

const env = { predefined: (id: string) => predefined.get(id), userProcess: () => null };
const run = (id: string, args: Record<string, unknown>) => evaluateGraph({ n: { process_id: id, arguments: args, result: true } }, env, rootScope());

/** Equal as JSON values; numbers within the precision the example is written in. */
function same(actual: unknown, expected: unknown): boolean {
  if (typeof expected === 'number' && typeof actual === 'number') {
    if (Number.isInteger(expected)) return Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected));
    const decimals = (String(expected).split('.')[1] ?? '').replace(/e.*/, '').length;
    return Math.abs(actual - expected) <= Math.max(0.5 * 10 ** -decimals, 1e-9 * Math.abs(expected));
  }
  if (Array.isArray(expected)) return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => same(actual[i], e));
  if (expected && typeof expected === 'object') {
    if (!actual || typeof actual !== 'object' || Array.isArray(actual)) return false;
    const ek = Object.keys(expected);
    return ek.length === Object.keys(actual).length && ek.every((k) => same((actual as any)[k], (expected as any)[k]));
  }
  return actual === expected;
}

describe('process definitions', () => {
  for (const spec of predefined.specs()) {
    it(`${spec.id} serves the facts of its definition`, () => {
      const f = facts[spec.id];
      expect(f).toBeDefined();
      expect(spec.categories).toEqual(f.categories);
      expect(spec.parameters.map((p) => ({ ...p, description: undefined }))).toEqual(f.parameters.map((p: any) => ({ ...p, description: undefined })));
      expect(spec.returns.schema).toEqual(f.returns.schema);
      expect(Object.keys(spec.exceptions ?? {}).sort()).toEqual(Object.keys(f.exceptions).sort());
      expect(spec.summary.length).toBeGreaterThan(0);
      expect(spec.description.length).toBeGreaterThan(0);
    });
  }
});

describe('process examples', () => {
  for (const [id, list] of Object.entries(examples)) {
    if (!predefined.has(id)) continue;
    list.forEach((ex, i) => {
      if (!('returns' in ex)) return;
      it(`${id} #${i + 1}: ${JSON.stringify(ex.arguments).slice(0, 80)}`, async () => {
        const got = await run(id, ex.arguments);
        if (!same(got, ex.returns)) expect(got).toEqual(ex.returns);
      });
    });
  }
});
