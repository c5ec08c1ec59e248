// Edge cases of the array processes beyond the examples of their definitions: labeled arrays,
// no-data and NaN, empty arrays, child processes, exceptions and the stability of sorting.
import { describe, it, expect } from 'vitest';
import { evaluateGraph, rootScope } from '../src/graph/evaluate.js';
import { predefined } from '../src/processes/registry.js';
import { labelsOf, withLabels, type Labels } from '../src/core/labels.js';

const env = { predefined: (id: string) => predefined.get(id), userProcess: () => null };
/** Runs one process; `params` are values reachable with from_parameter (e.g. labeled arrays). */
const run = (id: string, args: Record<string, unknown>, params: Record<string, unknown> = {}) => evaluateGraph({ n: { process_id: id, arguments: args, result: true } }, env, rootScope(params));
const p = (name: string) => ({ from_parameter: name });
const labeled = (values: unknown[], labels: Labels) => withLabels(values.slice(), labels);
/** A child process made of one node. */
const child = (process_id: string, args: Record<string, unknown>) => ({ process_graph: { c: { process_id, arguments: args, result: true } } });

describe('array_append', () => {
  it('appends to a labeled array with a label, or the next index', async () => {
    const d = labeled([1, 2], ['a', 'b']);
    const r1 = (await run('array_append', { data: p('d'), value: 3, label: 'c' }, { d })) as unknown[];
    expect(r1).toEqual([1, 2, 3]);
    expect(labelsOf(r1)).toEqual(['a', 'b', 'c']);
    const r2 = (await run('array_append', { data: p('d'), value: null }, { d })) as unknown[];
    expect(r2).toEqual([1, 2, null]);
    expect(labelsOf(r2)).toEqual(['a', 'b', 2]);
    expect(labelsOf(d)).toEqual(['a', 'b']); // input untouched
  });
  it('appends an array as one element', async () => {
    expect(await run('array_append', { data: [1], value: [2, 3] })).toEqual([1, [2, 3]]);
  });
  it('raises LabelExists and ArrayNotLabeled', async () => {
    await expect(run('array_append', { data: p('d'), value: 3, label: 'a' }, { d: labeled([1], ['a']) })).rejects.toMatchObject({ code: 'LabelExists' });
    await expect(run('array_append', { data: p('d'), value: 3 }, { d: labeled([1, 2], [2, 0]) })).rejects.toMatchObject({ code: 'LabelExists' });
    await expect(run('array_append', { data: [1], value: 3, label: 'x' })).rejects.toMatchObject({ code: 'ArrayNotLabeled' });
  });
});

describe('array_apply / array_filter', () => {
  it('array_apply hands x, index, label and context to the child and keeps labels', async () => {
    const d = labeled([10, 20], ['a', 'b']);
    const process = child('array_create', { data: [p('x'), p('index'), p('label'), p('context')] });
    const r = (await run('array_apply', { data: p('d'), process, context: 'ctx' }, { d })) as unknown[];
    expect(r).toEqual([
      [10, 0, 'a', 'ctx'],
      [20, 1, 'b', 'ctx'],
    ]);
    expect(labelsOf(r)).toEqual(['a', 'b']);
  });
  it('array_apply gives label null and context null by default for plain arrays', async () => {
    const process = child('array_create', { data: [p('label'), p('context')] });
    expect(await run('array_apply', { data: [5], process })).toEqual([[null, null]]);
    expect(await run('array_apply', { data: [], process })).toEqual([]);
  });
  it('array_filter keeps the elements for which the condition is true, with their labels', async () => {
    const d = labeled([5, 6, 7, 8], ['w', 'x', 'y', 'z']);
    const condition = child('array_contains', { data: [1, 3], value: p('index') });
    const r = (await run('array_filter', { data: p('d'), condition }, { d })) as unknown[];
    expect(r).toEqual([6, 8]);
    expect(labelsOf(r)).toEqual(['x', 'z']);
    const byLabel = child('array_contains', { data: p('context'), value: p('label') });
    const r2 = (await run('array_filter', { data: p('d'), condition: byLabel, context: ['w', 'y'] }, { d })) as unknown[];
    expect(r2).toEqual([5, 7]);
    expect(await run('array_filter', { data: [], condition })).toEqual([]);
  });
  it('array_filter drops elements whose condition is null', async () => {
    // array_find gives null (no match) or an index (not true): nothing is kept
    const condition = child('array_find', { data: [1], value: p('x') });
    expect(await run('array_filter', { data: [1, 2], condition })).toEqual([]);
  });
});

describe('array_concat', () => {
  it('keeps labels only if both arrays are labeled', async () => {
    const a = labeled([1], ['a']);
    const b = labeled([2], ['b']);
    const r = (await run('array_concat', { array1: p('a'), array2: p('b') }, { a, b })) as unknown[];
    expect(r).toEqual([1, 2]);
    expect(labelsOf(r)).toEqual(['a', 'b']);
    const r2 = (await run('array_concat', { array1: p('a'), array2: [3] }, { a })) as unknown[];
    expect(r2).toEqual([1, 3]);
    expect(labelsOf(r2)).toBeNull();
  });
  it('raises ArrayLabelConflict for a shared label', async () => {
    await expect(run('array_concat', { array1: p('a'), array2: p('b') }, { a: labeled([1], ['a']), b: labeled([2], ['a']) })).rejects.toMatchObject({
      code: 'ArrayLabelConflict',
    });
  });
  it('does not flatten nested arrays', async () => {
    expect(await run('array_concat', { array1: [[1]], array2: [[2], []] })).toEqual([[1], [2], []]);
  });
  it('takes a single value as an array of one (a labeled array1 then loses its labels)', async () => {
    const r = (await run('array_concat', { array1: p('a'), array2: 3 }, { a: labeled([1, 2], ['x', 'y']) })) as unknown[];
    expect(r).toEqual([1, 2, 3]);
    expect(labelsOf(r)).toBeNull();
    expect(await run('array_concat', { array1: 'a', array2: [null] })).toEqual(['a', null]);
    expect(await run('array_concat', { array1: [], array2: null })).toEqual([null]);
    await expect(run('array_concat', { array1: [1], array2: { a: 1 } })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('array_contains / array_find', () => {
  it('never matches NaN, null, arrays or objects', async () => {
    expect(await run('array_contains', { data: p('d'), value: p('v') }, { d: [NaN], v: NaN })).toBe(false);
    expect(await run('array_find', { data: p('d'), value: p('v') }, { d: [NaN], v: NaN })).toBeNull();
    expect(await run('array_find', { data: [1, null], value: null })).toBeNull();
    expect(await run('array_contains', { data: [[1, 2]], value: [1, 2] })).toBe(false);
  });
  it('compares strictly (types, case, temporal strings as text)', async () => {
    expect(await run('array_contains', { data: [true, 1], value: 1 })).toBe(true);
    expect(await run('array_find', { data: [true, 1], value: 1 })).toBe(1);
    expect(await run('array_find', { data: [1, 'true'], value: true })).toBeNull();
    expect(await run('array_contains', { data: ['2020-01-01T00:00:00Z'], value: '2020-01-01T00:00:00+00:00' })).toBe(false);
    expect(await run('array_find', { data: [1.0, 2], value: 1 })).toBe(0);
  });
  it('finds the last match with reverse, and nothing in an empty array', async () => {
    expect(await run('array_find', { data: ['a', 'b', 'a'], value: 'a', reverse: true })).toBe(2);
    expect(await run('array_find', { data: [], value: 1 })).toBeNull();
    expect(await run('array_contains', { data: [], value: 1 })).toBe(false);
  });
});

describe('array_create', () => {
  it('repeats and drops labels', async () => {
    const r = (await run('array_create', { data: p('d'), repeat: 2 }, { d: labeled([1, 2], ['a', 'b']) })) as unknown[];
    expect(r).toEqual([1, 2, 1, 2]);
    expect(labelsOf(r)).toBeNull();
    expect(await run('array_create', { data: [], repeat: 5 })).toEqual([]);
    expect(await run('array_create', { data: [[1]], repeat: 2 })).toEqual([[1], [1]]);
  });
  it('refuses a repeat below 1', async () => {
    await expect(run('array_create', { data: [1], repeat: 0 })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('array_element', () => {
  const d = labeled(['x', 'y', null], ['B02', 'B03', 'B04']);
  it('selects by index or label', async () => {
    expect(await run('array_element', { data: p('d'), label: 'B03' }, { d })).toBe('y');
    expect(await run('array_element', { data: p('d'), label: 'B04' }, { d })).toBeNull();
    expect(await run('array_element', { data: p('d'), index: 0 }, { d })).toBe('x');
  });
  it('raises the four exceptions', async () => {
    await expect(run('array_element', { data: [1] })).rejects.toMatchObject({ code: 'ArrayElementParameterMissing' });
    await expect(run('array_element', { data: [1], index: 0, label: 'a' })).rejects.toMatchObject({ code: 'ArrayElementParameterConflict' });
    await expect(run('array_element', { data: [1], label: 'a' })).rejects.toMatchObject({ code: 'ArrayNotLabeled' });
    await expect(run('array_element', { data: [1], label: 'a', return_nodata: true })).rejects.toMatchObject({ code: 'ArrayNotLabeled' });
    await expect(run('array_element', { data: [1], index: 1 })).rejects.toMatchObject({ code: 'ArrayElementNotAvailable' });
    await expect(run('array_element', { data: p('d'), label: 'B08' }, { d })).rejects.toMatchObject({ code: 'ArrayElementNotAvailable' });
  });
  it('gives null for a missing element with return_nodata', async () => {
    expect(await run('array_element', { data: [1], index: 3, return_nodata: true })).toBeNull();
    expect(await run('array_element', { data: p('d'), label: 'B08', return_nodata: true }, { d })).toBeNull();
  });
  it('compares labels strictly', async () => {
    await expect(run('array_element', { data: p('d'), label: '1' }, { d: labeled([5, 6], [0, 1]) })).rejects.toMatchObject({ code: 'ArrayElementNotAvailable' });
    expect(await run('array_element', { data: p('d'), label: 1 }, { d: labeled([5, 6], [0, 1]) })).toBe(6);
  });
});

describe('array_interpolate_linear', () => {
  it('fills NaN and null between numbers, leaves the edges', async () => {
    expect(await run('array_interpolate_linear', { data: p('d') }, { d: [NaN, 0, NaN, null, 3, NaN] })).toEqual([NaN, 0, 1, 2, 3, NaN]);
  });
  it('keeps arrays with fewer than two numbers', async () => {
    expect(await run('array_interpolate_linear', { data: [] })).toEqual([]);
    expect(await run('array_interpolate_linear', { data: [null, null] })).toEqual([null, null]);
    expect(await run('array_interpolate_linear', { data: [null, 4, null] })).toEqual([null, 4, null]);
  });
  it('uses numeric labels as positions and keeps labels', async () => {
    const d = labeled([0, null, 10], [0, 1, 10]);
    const r = (await run('array_interpolate_linear', { data: p('d') }, { d })) as unknown[];
    expect(r).toEqual([0, 1, 10]);
    expect(labelsOf(r)).toEqual([0, 1, 10]);
  });
  it('uses dates as positions', async () => {
    const d = labeled([0, null, 30], ['2020-01-01', '2020-01-02T00:00:00Z', '2020-01-31T02:00:00+02:00']);
    expect(await run('array_interpolate_linear', { data: p('d') }, { d })).toEqual([0, 1, 30]);
  });
  it('uses indices for other labels', async () => {
    const d = labeled([0, null, 30], ['B02', 'B03', 'B08']);
    expect(await run('array_interpolate_linear', { data: p('d') }, { d })).toEqual([0, 15, 30]);
  });
  it('keeps infinities as anchors', async () => {
    expect(await run('array_interpolate_linear', { data: p('d') }, { d: [1, null, Infinity] })).toEqual([1, Infinity, Infinity]);
    expect(await run('array_interpolate_linear', { data: p('d') }, { d: [-Infinity, null, -Infinity] })).toEqual([-Infinity, -Infinity, -Infinity]);
  });
});

describe('array_labels', () => {
  it('gives labels or indices', async () => {
    expect(await run('array_labels', { data: p('d') }, { d: labeled([1, 2], ['a', 'b']) })).toEqual(['a', 'b']);
    expect(await run('array_labels', { data: [7, 8, 9] })).toEqual([0, 1, 2]);
    expect(await run('array_labels', { data: [] })).toEqual([]);
  });
});

describe('count', () => {
  it('counts valid elements by default: not null, NaN or infinite', async () => {
    expect(await run('count', { data: p('d') }, { d: [1, NaN, Infinity, -Infinity, null, 'a', false, [], {}] })).toBe(5);
  });
  it('counts everything with condition true', async () => {
    expect(await run('count', { data: p('d'), condition: true }, { d: [NaN, null] })).toBe(2);
  });
  it('counts the elements a child process accepts, with context', async () => {
    const condition = child('array_contains', { data: p('context'), value: p('x') });
    expect(await run('count', { data: [1, 2, 3, 2, null], condition, context: [2, 3] })).toBe(3);
    expect(await run('count', { data: [], condition, context: [2] })).toBe(0);
  });
  it('refuses condition false', async () => {
    await expect(run('count', { data: [1], condition: false })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('first / last', () => {
  it('give null for empty and all-null arrays', async () => {
    for (const id of ['first', 'last']) {
      expect(await run(id, { data: [] })).toBeNull();
      expect(await run(id, { data: [null, null] })).toBeNull();
      expect(await run(id, { data: [], ignore_nodata: false })).toBeNull();
    }
  });
  it('do not skip NaN, false or 0', async () => {
    expect(await run('first', { data: p('d') }, { d: [null, NaN, 1] })).toBeNaN();
    expect(await run('last', { data: [0, false, null] })).toBe(false);
    expect(await run('first', { data: [null, 0] })).toBe(0);
  });
});

describe('order / sort / rearrange', () => {
  const data = [3, null, 1, 3, NaN, 1];
  it('treat NaN as no-data and keep ties in their original order', async () => {
    expect(await run('order', { data: p('d') }, { d: data })).toEqual([2, 5, 0, 3]);
    expect(await run('order', { data: p('d'), asc: false }, { d: data })).toEqual([0, 3, 2, 5]);
    expect(await run('order', { data: p('d'), nodata: false }, { d: data })).toEqual([1, 4, 2, 5, 0, 3]);
    expect(await run('order', { data: p('d'), asc: false, nodata: true }, { d: data })).toEqual([0, 3, 2, 5, 1, 4]);
    const s = (await run('sort', { data: p('d'), nodata: true }, { d: data })) as unknown[];
    expect(s.slice(0, 5)).toEqual([1, 1, 3, 3, null]);
    expect(s[5]).toBeNaN();
  });
  it('handle empty and all-no-data arrays', async () => {
    expect(await run('order', { data: [] })).toEqual([]);
    expect(await run('sort', { data: [null, null] })).toEqual([]);
    expect(await run('sort', { data: [null, null], nodata: false })).toEqual([null, null]);
  });
  it('sort infinities', async () => {
    expect(await run('sort', { data: p('d') }, { d: [Infinity, 0, -Infinity] })).toEqual([-Infinity, 0, Infinity]);
  });
  it('compare dates and date-times as instants, not as text', async () => {
    const d = ['2020-01-01T12:00:00+02:00', '2020-01-01T11:00:00Z', '2020-01-01', '1999-12-31T23:59:59.5Z'];
    expect(await run('order', { data: d })).toEqual([3, 2, 0, 1]);
    expect(await run('sort', { data: d, asc: false })).toEqual([d[1], d[0], d[2], d[3]]);
  });
  it('refuse strings that are not dates', async () => {
    await expect(run('sort', { data: ['b', 'a'] })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
  it('are stable on long arrays (merge sort path)', async () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const d = Array.from({ length: 1000 }, () => (rnd() < 0.1 ? null : Math.floor(rnd() * 50)));
    const idx = d.map((_, i) => i).filter((i) => d[i] !== null);
    const asc = [...idx].sort((a, b) => (d[a] as number) - (d[b] as number) || a - b);
    const desc = [...idx].sort((a, b) => (d[b] as number) - (d[a] as number) || a - b);
    expect(await run('order', { data: d })).toEqual(asc);
    expect(await run('order', { data: d, asc: false })).toEqual(desc);
    const nulls = d.map((_, i) => i).filter((i) => d[i] === null);
    expect(await run('order', { data: d, nodata: false })).toEqual([...nulls, ...asc]);
  });
  it('rearrange repeats positions and refuses positions outside the array', async () => {
    expect(await run('rearrange', { data: ['a', 'b'], order: [1, 1, 0] })).toEqual(['b', 'b', 'a']);
    expect(await run('rearrange', { data: ['a'], order: [] })).toEqual([]);
    await expect(run('rearrange', { data: ['a'], order: [1] })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('all / any', () => {
  it('follow the three-valued tables', async () => {
    expect(await run('all', { data: [null, null], ignore_nodata: false })).toBeNull();
    expect(await run('all', { data: [null, false], ignore_nodata: false })).toBe(false);
    expect(await run('all', { data: [true, true], ignore_nodata: false })).toBe(true);
    expect(await run('any', { data: [null, true], ignore_nodata: false })).toBe(true);
    expect(await run('any', { data: [false, false], ignore_nodata: false })).toBe(false);
    expect(await run('any', { data: [], ignore_nodata: false })).toBe(false);
    expect(await run('all', { data: [], ignore_nodata: false })).toBe(true);
  });
  it('read numbers as booleans (cube values) and NaN as no-data', async () => {
    expect(await run('all', { data: [1, 1, null] })).toBe(true);
    expect(await run('all', { data: [1, 0] })).toBe(false);
    expect(await run('any', { data: [0, 2] })).toBe(true);
    expect(await run('any', { data: p('d'), ignore_nodata: false }, { d: [0, NaN] })).toBeNull();
  });
  it('refuse other types', async () => {
    await expect(run('all', { data: ['true'] })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
  });
});

describe('array_create_labeled / array_find_label', () => {
  it('creates a labeled array whose labels other processes see', async () => {
    const graph = {
      c: { process_id: 'array_create_labeled', arguments: { data: [1, 2], labels: ['a', 'b'] } },
      e: { process_id: 'array_element', arguments: { data: { from_node: 'c' }, label: 'b' } },
      f: { process_id: 'array_find_label', arguments: { data: { from_node: 'c' }, label: 'a' } },
      r: { process_id: 'array_create', arguments: { data: [{ from_node: 'e' }, { from_node: 'f' }] }, result: true },
    };
    expect(await evaluateGraph(graph, env, rootScope())).toEqual([2, 0]);
  });
  it('raises ArrayLengthMismatch and refuses duplicate labels', async () => {
    await expect(run('array_create_labeled', { data: [1], labels: ['a', 'b'] })).rejects.toMatchObject({ code: 'ArrayLengthMismatch' });
    await expect(run('array_create_labeled', { data: [1, 2], labels: ['a', 'a'] })).rejects.toMatchObject({ code: 'ProcessParameterInvalid' });
    expect(await run('array_create_labeled', { data: [], labels: [] })).toEqual([]);
  });
  it('array_find_label gives null for unknown labels and unlabeled arrays', async () => {
    expect(await run('array_find_label', { data: [1, 2], label: 0 })).toBeNull();
    expect(await run('array_find_label', { data: p('d'), label: '2' }, { d: labeled([1, 2], [1, 2]) })).toBeNull();
    expect(await run('array_find_label', { data: p('d'), label: 2 }, { d: labeled([1, 2], [1, 2]) })).toBe(1);
  });
});

describe('array_modify', () => {
  it('raises ArrayElementNotAvailable beyond the end, appends at the end', async () => {
    await expect(run('array_modify', { data: [1], values: [2], index: 2 })).rejects.toMatchObject({ code: 'ArrayElementNotAvailable' });
    expect(await run('array_modify', { data: [1], values: [2, 3], index: 1 })).toEqual([1, 2, 3]);
    expect(await run('array_modify', { data: [], values: [[1]], index: 0 })).toEqual([[1]]);
  });
  it('keeps labels when both arrays are labeled, or one is empty', async () => {
    const d = labeled([1, 2, 3], ['a', 'b', 'c']);
    const r = (await run('array_modify', { data: p('d'), values: p('v'), index: 1, length: 1 }, { d, v: labeled([9], ['b']) })) as unknown[];
    expect(r).toEqual([1, 9, 3]);
    expect(labelsOf(r)).toEqual(['a', 'b', 'c']); // replacing 'b' by a new 'b' is no conflict
    const removed = (await run('array_modify', { data: p('d'), values: [], index: 0, length: 2 }, { d })) as unknown[];
    expect(removed).toEqual([3]);
    expect(labelsOf(removed)).toEqual(['c']);
    const fresh = (await run('array_modify', { data: [], values: p('v'), index: 0 }, { v: labeled([9], ['z']) })) as unknown[];
    expect(labelsOf(fresh)).toEqual(['z']);
    const mixed = (await run('array_modify', { data: p('d'), values: [0], index: 0 }, { d })) as unknown[];
    expect(mixed).toEqual([0, 1, 2, 3]);
    expect(labelsOf(mixed)).toBeNull();
  });
  it('raises ArrayLabelConflict for a label of a kept element', async () => {
    const d = labeled([1, 2], ['a', 'b']);
    await expect(run('array_modify', { data: p('d'), values: p('v'), index: 0 }, { d, v: labeled([9], ['b']) })).rejects.toMatchObject({ code: 'ArrayLabelConflict' });
  });
});

describe('scalar forms', () => {
  it('never hand back the input array', () => {
    const buf = labeled([2, null, 1], ['a', 'b', 'c']);
    for (const id of ['array_create', 'array_interpolate_linear', 'sort', 'array_concat', 'array_modify']) {
      const s = predefined.get(id)!.scalar!;
      const out = s({ data: buf, array1: buf, array2: [], repeat: 1, values: [], index: 0, length: 0, asc: true, nodata: true });
      expect(out).not.toBe(buf);
    }
    expect(buf).toEqual([2, null, 1]);
  });
});
