// Edge cases of the logic and comparison processes beyond the examples of their definitions:
// three-valued logic tables, NaN and infinities, strict typing, delta and case options, bounds
// of between, and booleans stored as numbers in pixel vectors.
import { describe, it, expect } from 'vitest';
import { evaluateGraph, rootScope } from '../src/graph/evaluate.js';
import { predefined } from '../src/processes/registry.js';
import { liftScalar } from '../src/datacube/pixels.js';

const env = { predefined: (id: string) => predefined.get(id), userProcess: () => null };
const run = (id: string, args: Record<string, unknown>) => evaluateGraph({ n: { process_id: id, arguments: args, result: true } }, env, rootScope());
/** Runs the scalar form directly (NaN and infinities cannot be written in JSON). */
const scalar = (id: string, args: Record<string, unknown>) => {
  const def = predefined.get(id)!;
  const full: Record<string, unknown> = {};
  for (const p of def.spec.parameters) full[p.name] = p.name in args ? args[p.name] : 'default' in p ? p.default : null;
  return def.scalar!(full);
};

const B = [null, false, true] as const;

describe('three-valued logic', () => {
  // rows: x = null, false, true; columns: y = null, false, true
  const tables: Record<string, (boolean | null)[][]> = {
    and: [
      [null, false, null],
      [false, false, false],
      [null, false, true],
    ],
    or: [
      [null, null, true],
      [null, false, true],
      [true, true, true],
    ],
    xor: [
      [null, null, null],
      [null, false, true],
      [null, true, false],
    ],
  };
  for (const [id, table] of Object.entries(tables)) {
    it(`${id} follows its full truth table`, async () => {
      for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) expect(await run(id, { x: B[i], y: B[j] }), `${id}(${B[i]}, ${B[j]})`).toBe(table[i][j]);
    });
  }

  it('reads numbers as booleans (pixel encoding): 0 false, non-zero true, NaN no-data', () => {
    expect(scalar('and', { x: 1, y: 1 })).toBe(true);
    expect(scalar('and', { x: 1, y: 0 })).toBe(false);
    expect(scalar('or', { x: 0, y: NaN })).toBe(null);
    expect(scalar('or', { x: NaN, y: 2 })).toBe(true);
    expect(scalar('xor', { x: 0, y: 1 })).toBe(true);
    expect(scalar('not', { x: 0 })).toBe(true);
    expect(scalar('not', { x: NaN })).toBe(null);
  });

  it('stops once the outcome is decided, otherwise rejects non-boolean operands', async () => {
    expect(await run('and', { x: false, y: 'yes' })).toBe(false);
    expect(await run('or', { x: true, y: 'yes' })).toBe(true);
    await expect(run('and', { x: true, y: 'yes' })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(run('xor', { x: [true], y: true })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(run('not', { x: 'true' })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });

  it('works over pixel vectors of 1/0/NaN', () => {
    const x = new Float32Array([1, 1, 0, NaN, NaN]);
    const y = new Float32Array([1, NaN, NaN, 0, 1]);
    const and = liftScalar('and', predefined.get('and')!.scalar!, { x, y }, 5);
    expect(Array.from(and as Float32Array)).toEqual([1, NaN, 0, 0, NaN]);
    const or = liftScalar('or', predefined.get('or')!.scalar!, { x, y }, 5);
    expect(Array.from(or as Float32Array)).toEqual([1, 1, NaN, NaN, 1]);
  });
});

describe('if', () => {
  it('returns reject for false and no-data, and null without reject', async () => {
    expect(await run('if', { value: null, accept: 1 })).toBe(null);
    expect(await run('if', { value: false, accept: 1, reject: { a: 1 } })).toEqual({ a: 1 });
    expect(await run('if', { value: true, accept: null, reject: 2 })).toBe(null);
  });

  it('treats pixel booleans (1/0/NaN) as true/false/no-data', () => {
    expect(scalar('if', { value: 1, accept: 'A', reject: 'B' })).toBe('A');
    expect(scalar('if', { value: 0, accept: 'A', reject: 'B' })).toBe('B');
    expect(scalar('if', { value: NaN, accept: 'A', reject: 'B' })).toBe('B');
    const value = new Float32Array([1, 0, NaN]);
    const out = liftScalar('if', predefined.get('if')!.scalar!, { value, accept: new Float32Array([5, 6, 7]), reject: 0 }, 3);
    expect(Array.from(out as Float32Array)).toEqual([5, 0, 0]);
  });
});

describe('between', () => {
  it('includes both bounds by default and excludes max on request', async () => {
    expect(await run('between', { x: 0, min: 0, max: 1 })).toBe(true);
    expect(await run('between', { x: 0, min: 0, max: 1, exclude_max: true })).toBe(true);
    expect(await run('between', { x: 1, min: 1, max: 1 })).toBe(true);
    expect(await run('between', { x: 1, min: 1, max: 1, exclude_max: true })).toBe(false);
    expect(await run('between', { x: 1.0001, min: 0, max: 1 })).toBe(false);
    expect(await run('between', { x: -1, min: 0, max: 1 })).toBe(false);
  });

  it('gives false for swapped bounds, NaN and non-numbers; null for no-data', async () => {
    expect(await run('between', { x: 0, min: 1, max: -1 })).toBe(false);
    expect(await run('between', { x: 1, min: 1, max: 0.5 })).toBe(false);
    expect(scalar('between', { x: NaN, min: 0, max: 1 })).toBe(false);
    expect(scalar('between', { x: Infinity, min: 0, max: Infinity })).toBe(true);
    expect(await run('between', { x: '0.5', min: 0, max: 1 })).toBe(false);
    expect(await run('between', { x: true, min: 0, max: 1 })).toBe(false);
    expect(await run('between', { x: [0.5], min: 0, max: 1 })).toBe(false);
    expect(await run('between', { x: null, min: 0, max: 1, exclude_max: true })).toBe(null);
  });
});

describe('eq / neq', () => {
  it('follows IEEE for NaN and infinities', () => {
    expect(scalar('eq', { x: NaN, y: NaN })).toBe(false);
    expect(scalar('neq', { x: NaN, y: NaN })).toBe(true);
    expect(scalar('eq', { x: NaN, y: 1, delta: 10 })).toBe(false);
    expect(scalar('neq', { x: NaN, y: 1, delta: 10 })).toBe(true);
    expect(scalar('eq', { x: Infinity, y: Infinity })).toBe(true);
    expect(scalar('eq', { x: Infinity, y: Infinity, delta: 0.1 })).toBe(true);
    expect(scalar('eq', { x: Infinity, y: -Infinity, delta: 1e300 })).toBe(false);
    expect(scalar('eq', { x: 0, y: -0 })).toBe(true);
  });

  it('gives null for no-data in either operand, options notwithstanding', async () => {
    expect(await run('eq', { x: null, y: null })).toBe(null);
    expect(await run('neq', { x: null, y: 'a' })).toBe(null);
    expect(await run('eq', { x: null, y: 1, delta: 1 })).toBe(null);
    expect(await run('neq', { x: 'a', y: null, case_sensitive: false })).toBe(null);
  });

  it('checks types strictly and treats integers and decimals alike', async () => {
    expect(await run('eq', { x: 1, y: 1.0 })).toBe(true);
    expect(await run('eq', { x: true, y: true })).toBe(true);
    expect(await run('eq', { x: true, y: 1 })).toBe(false);
    expect(await run('neq', { x: false, y: 0 })).toBe(true);
    expect(await run('eq', { x: '', y: false })).toBe(false);
    expect(await run('eq', { x: 'a', y: 'a' })).toBe(true);
  });

  it('applies delta only to two numbers, inclusively', async () => {
    expect(await run('eq', { x: 1.5, y: 1, delta: 0.5 })).toBe(true);
    expect(await run('neq', { x: 1.5, y: 1, delta: 0.5 })).toBe(false);
    expect(await run('eq', { x: '1', y: 1, delta: 10 })).toBe(false);
    expect(await run('eq', { x: 'a', y: 'a', delta: 10 })).toBe(true);
  });

  it('applies case_sensitive only to two strings', async () => {
    expect(await run('eq', { x: 'ABC', y: 'abc', case_sensitive: false })).toBe(true);
    expect(await run('neq', { x: 'ABC', y: 'abd', case_sensitive: false })).toBe(true);
    expect(await run('eq', { x: true, y: 'true', case_sensitive: false })).toBe(false);
  });

  it('compares date-time strings as plain strings', async () => {
    expect(await run('eq', { x: '2018-01-01T00:00:00Z', y: '2018-01-01T00:00:00Z' })).toBe(true);
    expect(await run('eq', { x: '2018-01-01T00:00:00Z', y: '2018-01-01T01:00:00+01:00' })).toBe(false);
    expect(await run('eq', { x: '2018-01-01t00:00:00z', y: '2018-01-01T00:00:00Z', case_sensitive: false })).toBe(true);
  });

  it('rejects operands outside their schema', async () => {
    await expect(run('eq', { x: [1], y: [1] })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(run('neq', { x: 1, y: { a: 1 } })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('gt / gte / lt / lte', () => {
  it('give null for no-data whatever the other operand', async () => {
    for (const id of ['gt', 'gte', 'lt', 'lte']) {
      expect(await run(id, { x: null, y: null }), id).toBe(null);
      expect(await run(id, { x: 'a', y: null }), id).toBe(null);
      expect(await run(id, { x: null, y: true }), id).toBe(null);
    }
  });

  it('give false with NaN, also against itself', () => {
    for (const id of ['gt', 'gte', 'lt', 'lte']) {
      expect(scalar(id, { x: NaN, y: NaN }), id).toBe(false);
      expect(scalar(id, { x: NaN, y: 0 }), id).toBe(false);
      expect(scalar(id, { x: 0, y: NaN }), id).toBe(false);
    }
  });

  it('order infinities', () => {
    expect(scalar('gt', { x: Infinity, y: 1e308 })).toBe(true);
    expect(scalar('lt', { x: -Infinity, y: -1e308 })).toBe(true);
    expect(scalar('gte', { x: Infinity, y: Infinity })).toBe(true);
    expect(scalar('lte', { x: -Infinity, y: -Infinity })).toBe(true);
  });

  it('give false for unequal non-numbers, true for equal ones only with gte/lte', async () => {
    expect(await run('gt', { x: 'b', y: 'a' })).toBe(false);
    expect(await run('lt', { x: 'a', y: 'b' })).toBe(false);
    expect(await run('gt', { x: 'a', y: 'a' })).toBe(false);
    expect(await run('gte', { x: 'a', y: 'a' })).toBe(true);
    expect(await run('lte', { x: 'a', y: 'a' })).toBe(true);
    expect(await run('gte', { x: 'A', y: 'a' })).toBe(false);
    expect(await run('gte', { x: true, y: true })).toBe(true);
    expect(await run('lte', { x: false, y: false })).toBe(true);
    expect(await run('gte', { x: 1, y: '1' })).toBe(false);
    expect(await run('lte', { x: '1', y: 1 })).toBe(false);
    expect(await run('gte', { x: '2018-01-02T00:00:00Z', y: '2018-01-01T00:00:00Z' })).toBe(false);
    expect(await run('lte', { x: '2018-01-01T00:00:00Z', y: '2018-01-01T00:00:00Z' })).toBe(true);
  });

  it('reject operands outside their schema', async () => {
    await expect(run('gt', { x: [2], y: 1 })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    await expect(run('lte', { x: 1, y: { a: 1 } })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('value checks', () => {
  const values: [string, unknown][] = [
    ['null', null],
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['-Infinity', -Infinity],
    ['0', 0],
    ['-1.5', -1.5],
    ['string', 'NaN'],
    ['empty string', ''],
    ['boolean', false],
    ['empty array', []],
    ['array of NaN', [NaN]],
    ['object', {}],
  ];
  const expected: Record<string, boolean[]> = {
    //            null   NaN    Inf    -Inf   0      -1.5   str    ''     bool   []     [NaN]  {}
    is_nan: [false, true, false, false, false, false, false, false, false, false, false, false],
    is_nodata: [true, false, false, false, false, false, false, false, false, false, false, false],
    is_valid: [false, false, false, false, true, true, true, true, true, true, true, true],
    is_infinite: [false, false, true, true, false, false, false, false, false, false, false, false],
  };
  for (const [id, answers] of Object.entries(expected)) {
    it(`${id} on every kind of value`, () => {
      values.forEach(([name, v], i) => expect(scalar(id, { x: v }), `${id}(${name})`).toBe(answers[i]));
    });
  }

  it('see no-data pixels (NaN in a vector) as no-data', () => {
    const x = new Float32Array([NaN, 1, Infinity]);
    const nodata = liftScalar('is_nodata', predefined.get('is_nodata')!.scalar!, { x }, 3);
    expect(Array.from(nodata as Float32Array)).toEqual([1, 0, 0]);
    const valid = liftScalar('is_valid', predefined.get('is_valid')!.scalar!, { x }, 3);
    expect(Array.from(valid as Float32Array)).toEqual([0, 1, 0]);
  });
});
