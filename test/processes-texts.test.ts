// Edge cases of the text and date processes beyond the examples of their definitions.
import { describe, it, expect } from 'vitest';
import { evaluateGraph, rootScope } from '../src/graph/evaluate.js';
import { predefined } from '../src/processes/registry.js';

const env = { predefined: (id: string) => predefined.get(id), userProcess: () => null };
const run = (id: string, args: Record<string, unknown>) => evaluateGraph({ n: { process_id: id, arguments: args, result: true } }, env, rootScope());
const invalid = { code: 'ProcessParameterInvalid' };

describe('text_begins / text_ends / text_contains', () => {
  it('match an empty pattern everywhere, also in an empty text', async () => {
    for (const id of ['text_begins', 'text_ends', 'text_contains']) {
      expect(await run(id, { data: '', pattern: '' })).toBe(true);
      expect(await run(id, { data: 'abc', pattern: '' })).toBe(true);
      expect(await run(id, { data: '', pattern: 'a' })).toBe(false);
    }
  });
  it('pass null through regardless of case sensitivity', async () => {
    for (const id of ['text_begins', 'text_ends', 'text_contains', 'text_find']) {
      expect(await run(id, { data: null, pattern: 'x', case_sensitive: false })).toBeNull();
    }
  });
  it('do not read the pattern as a regular expression', async () => {
    expect(await run('text_contains', { data: 'a.b', pattern: '.' })).toBe(true);
    expect(await run('text_contains', { data: 'ab', pattern: 'a.' })).toBe(false);
    expect(await run('text_begins', { data: '[x]y', pattern: '[x]' })).toBe(true);
    expect(await run('text_ends', { data: 'x$', pattern: '$' })).toBe(true);
  });
  it('compare case-insensitively beyond ASCII', async () => {
    expect(await run('text_ends', { data: 'STRASSE ÖL', pattern: 'öl', case_sensitive: false })).toBe(true);
    // Greek final sigma and sigma are the same letter.
    expect(await run('text_contains', { data: 'ΟΔΟΣ', pattern: 'σ', case_sensitive: false })).toBe(true);
    expect(await run('text_ends', { data: 'οδος', pattern: 'Σ', case_sensitive: false })).toBe(true);
    expect(await run('text_begins', { data: 'Ä', pattern: 'ä' })).toBe(false);
  });
  it('refuse a non-text data or pattern', async () => {
    await expect(run('text_contains', { data: 5, pattern: '5' })).rejects.toMatchObject(invalid);
    await expect(run('text_begins', { data: 'abc', pattern: null })).rejects.toMatchObject(invalid);
  });
});

describe('text_find', () => {
  it('finds the first occurrence, 0 for an empty pattern, null if absent', async () => {
    expect(await run('text_find', { data: 'abab', pattern: 'b' })).toBe(1);
    expect(await run('text_find', { data: 'abc', pattern: '' })).toBe(0);
    expect(await run('text_find', { data: '', pattern: 'a' })).toBeNull();
  });
  it('counts characters, not UTF-16 code units', async () => {
    expect(await run('text_find', { data: '😀😀x', pattern: 'x' })).toBe(2);
    expect(await run('text_find', { data: '😀A😀x', pattern: 'a', case_sensitive: false })).toBe(1);
  });
  it('reports positions in the original text when lower casing changes lengths', async () => {
    // "İ" lower-cases to two code units.
    expect(await run('text_find', { data: 'İİabc', pattern: 'B', case_sensitive: false })).toBe(3);
  });
});

describe('text_concat', () => {
  it('writes numbers, booleans and null as text', async () => {
    expect(await run('text_concat', { data: [0, -0, 1e21, 0.1, true, null], separator: ',' })).toBe('0,0,1e+21,0.1,true,null');
  });
  it('converts a non-text separator', async () => {
    expect(await run('text_concat', { data: ['a', 'b'], separator: true })).toBe('atrueb');
    expect(await run('text_concat', { data: ['a', 'b'], separator: null })).toBe('anullb');
    expect(await run('text_concat', { data: ['a', 'b'], separator: -1.5 })).toBe('a-1.5b');
  });
  it('gives a single element unchanged and an empty array as empty text', async () => {
    expect(await run('text_concat', { data: ['only'], separator: '-' })).toBe('only');
    expect(await run('text_concat', { data: [], separator: '-' })).toBe('');
  });
  it('refuses objects and arrays as elements', async () => {
    await expect(run('text_concat', { data: [{ a: 1 }] })).rejects.toMatchObject(invalid);
    await expect(run('text_concat', { data: [[1]] })).rejects.toMatchObject(invalid);
  });
});

describe('date_shift', () => {
  it('clamps to the last day of the month', async () => {
    expect(await run('date_shift', { date: '2021-01-31', value: 1, unit: 'month' })).toBe('2021-02-28');
    expect(await run('date_shift', { date: '2020-03-31', value: -1, unit: 'month' })).toBe('2020-02-29');
    expect(await run('date_shift', { date: '2020-05-31T10:00:00Z', value: -1, unit: 'month' })).toBe('2020-04-30T10:00:00Z');
    expect(await run('date_shift', { date: '2024-02-29', value: -4, unit: 'year' })).toBe('2020-02-29');
    expect(await run('date_shift', { date: '2024-02-29', value: 100, unit: 'year' })).toBe('2124-02-29');
    expect(await run('date_shift', { date: '2000-02-29', value: 100, unit: 'year' })).toBe('2100-02-28');
  });
  it('crosses year boundaries with months', async () => {
    expect(await run('date_shift', { date: '2020-11-15', value: 14, unit: 'month' })).toBe('2022-01-15');
    expect(await run('date_shift', { date: '2020-01-15', value: -13, unit: 'month' })).toBe('2018-12-15');
  });
  it('keeps the time zone offset and the wall-clock time', async () => {
    // In UTC this is 2020-03-30T23:00Z; the month step works on the local date.
    expect(await run('date_shift', { date: '2020-03-31T01:00:00+02:00', value: 1, unit: 'month' })).toBe('2020-04-30T01:00:00+02:00');
    expect(await run('date_shift', { date: '2020-01-01T23:30:00-05:30', value: 1, unit: 'hour' })).toBe('2020-01-02T00:30:00-05:30');
    expect(await run('date_shift', { date: '2020-01-01T00:00:00z', value: 2, unit: 'week' })).toBe('2020-01-15T00:00:00z');
  });
  it('has no effect with 0 and handles fractions of seconds', async () => {
    expect(await run('date_shift', { date: '2020-01-01T12:00:00Z', value: 0, unit: 'year' })).toBe('2020-01-01T12:00:00Z');
    expect(await run('date_shift', { date: '2020-01-01T00:00:00.5Z', value: -501, unit: 'millisecond' })).toBe('2019-12-31T23:59:59.999Z');
    expect(await run('date_shift', { date: '2020-01-01T00:00:00.123456Z', value: 1, unit: 'second' })).toBe('2020-01-01T00:00:01.123456Z');
    expect(await run('date_shift', { date: '2020-01-01T00:00:00.250Z', value: 750, unit: 'millisecond' })).toBe('2020-01-01T00:00:01Z');
  });
  it('never returns a leap second', async () => {
    expect(await run('date_shift', { date: '2016-12-31T23:59:60Z', value: 1, unit: 'day' })).toBe('2017-01-01T23:59:59Z');
    expect(await run('date_shift', { date: '2016-12-31T23:59:60Z', value: 1, unit: 'second' })).toBe('2017-01-01T00:00:00Z');
  });
  it('keeps a date-only input a date, truncating the time', async () => {
    expect(await run('date_shift', { date: '2018-01-01', value: 1439, unit: 'minute' })).toBe('2018-01-01');
    expect(await run('date_shift', { date: '2018-01-01', value: -1, unit: 'millisecond' })).toBe('2017-12-31');
    expect(await run('date_shift', { date: '2018-01-01', value: 1, unit: 'week' })).toBe('2018-01-08');
  });
  it('refuses invalid dates, units and values', async () => {
    await expect(run('date_shift', { date: '2021-02-29', value: 1, unit: 'day' })).rejects.toMatchObject(invalid);
    await expect(run('date_shift', { date: '2021-01-01T24:00:00Z', value: 1, unit: 'day' })).rejects.toMatchObject(invalid);
    await expect(run('date_shift', { date: '12:00:00', value: 1, unit: 'hour' })).rejects.toMatchObject(invalid);
    await expect(run('date_shift', { date: null, value: 1, unit: 'day' })).rejects.toMatchObject(invalid);
    await expect(run('date_shift', { date: '2021-01-01', value: 1.5, unit: 'day' })).rejects.toMatchObject(invalid);
    await expect(run('date_shift', { date: '2021-01-01', value: 1, unit: 'fortnight' })).rejects.toMatchObject(invalid);
    await expect(run('date_shift', { date: '9999-12-31', value: 1, unit: 'day' })).rejects.toMatchObject(invalid);
  });
});

describe('date_between', () => {
  it('includes min and max, excludes max on request', async () => {
    expect(await run('date_between', { x: '2020-01-01', min: '2020-01-01', max: '2020-01-01' })).toBe(true);
    expect(await run('date_between', { x: '2020-01-01', min: '2020-01-01', max: '2020-01-01', exclude_max: true })).toBe(false);
    expect(await run('date_between', { x: '2020-06-01', min: '2020-01-01', max: '2021-01-01', exclude_max: true })).toBe(true);
  });
  it('gives false for swapped bounds and null for a null x', async () => {
    expect(await run('date_between', { x: '2020-06-01', min: '2021-01-01', max: '2020-01-01' })).toBe(false);
    expect(await run('date_between', { x: null, min: '2020-01-01', max: '2021-01-01' })).toBeNull();
  });
  it('compares instants across time zones and dates as midnight UTC', async () => {
    expect(await run('date_between', { x: '2020-01-01T01:00:00+01:00', min: '2020-01-01', max: '2020-01-01' })).toBe(true);
    expect(await run('date_between', { x: '2020-01-01T00:59:59+01:00', min: '2020-01-01', max: '2020-01-02' })).toBe(false);
    expect(await run('date_between', { x: '2020-01-01T12:00:00.001Z', min: '2020-01-01T00:00:00Z', max: '2020-01-01T12:00:00Z' })).toBe(false);
  });
  it('compares times of day', async () => {
    expect(await run('date_between', { x: '12:00:00', min: '08:00:00', max: '16:00:00' })).toBe(true);
    expect(await run('date_between', { x: '16:00:00', min: '08:00:00', max: '16:00:00', exclude_max: true })).toBe(false);
    expect(await run('date_between', { x: '2020-05-05T10:30:00+02:00', min: '08:00:00', max: '09:00:00' })).toBe(true);
    expect(await run('date_between', { x: '2020-05-05', min: '00:00:00', max: '01:00:00' })).toBe(true);
  });
  it('refuses mixing times with dates and invalid values', async () => {
    await expect(run('date_between', { x: '12:00:00', min: '2020-01-01', max: '2021-01-01' })).rejects.toMatchObject(invalid);
    await expect(run('date_between', { x: '2020-01-01', min: '08:00:00', max: '2021-01-01' })).rejects.toMatchObject(invalid);
    await expect(run('date_between', { x: '2020-13-01', min: '2020-01-01', max: '2021-01-01' })).rejects.toMatchObject(invalid);
    await expect(run('date_between', { x: '2020-01-01', min: null, max: '2021-01-01' })).rejects.toMatchObject(invalid);
  });
});

describe('date_difference', () => {
  it('is positive when date2 is later, in every fixed unit', async () => {
    expect(await run('date_difference', { date1: '2020-01-01', date2: '2020-01-15', unit: 'week' })).toBe(2);
    expect(await run('date_difference', { date1: '2020-01-01', date2: '2020-01-01T01:30:00Z', unit: 'hour' })).toBe(1.5);
    expect(await run('date_difference', { date1: '2020-01-01', date2: '2020-01-01T00:00:00.001Z', unit: 'millisecond' })).toBe(1);
    expect(await run('date_difference', { date1: '2020-01-01', date2: '2020-01-01T00:01:30Z', unit: 'minute' })).toBe(1.5);
  });
  it('ignores leap seconds', async () => {
    expect(await run('date_difference', { date1: '2016-12-31T23:59:59Z', date2: '2017-01-01T00:00:00Z' })).toBe(1);
    expect(await run('date_difference', { date1: '2016-12-31T23:59:60Z', date2: '2017-01-01T00:00:00Z' })).toBe(1);
  });
  it('counts calendar months and years like date_shift', async () => {
    expect(await run('date_difference', { date1: '2020-01-31', date2: '2020-02-29', unit: 'month' })).toBe(1);
    expect(await run('date_difference', { date1: '2020-02-29', date2: '2020-01-31', unit: 'month' })).toBe(-1);
    expect(await run('date_difference', { date1: '2020-01-01', date2: '2021-01-01', unit: 'year' })).toBe(1);
    expect(await run('date_difference', { date1: '2021-01-01', date2: '2022-01-01', unit: 'year' })).toBe(1);
    expect(await run('date_difference', { date1: '2020-02-29', date2: '2021-02-28', unit: 'year' })).toBe(1);
    expect(await run('date_difference', { date1: '2020-01-01', date2: '2020-01-16T12:00:00Z', unit: 'month' })).toBeCloseTo(15.5 / 31, 12);
    expect(await run('date_difference', { date1: '2020-01-01', date2: '2021-07-02', unit: 'year' })).toBeCloseTo(1 + 182 / 365, 12);
    expect(await run('date_difference', { date1: '2020-03-15', date2: '2020-03-15', unit: 'month' })).toBe(0);
    expect(await run('date_difference', { date1: '2020-03-15T10:00:00Z', date2: '2020-01-15T10:00:00Z', unit: 'month' })).toBe(-2);
  });
  it('counts months on the wall clock of date1', async () => {
    // 2020-01-31T23:00-02:00 is 2020-02-01T01:00Z; one month later on its own clock is 2020-02-29T23:00-02:00.
    expect(await run('date_difference', { date1: '2020-01-31T23:00:00-02:00', date2: '2020-03-01T01:00:00Z', unit: 'month' })).toBe(1);
  });
  it('refuses invalid dates and units', async () => {
    await expect(run('date_difference', { date1: 'yesterday', date2: '2020-01-01' })).rejects.toMatchObject(invalid);
    await expect(run('date_difference', { date1: '2020-01-01', date2: '10:00:00' })).rejects.toMatchObject(invalid);
    await expect(run('date_difference', { date1: '2020-01-01', date2: '2020-01-02', unit: 'decade' })).rejects.toMatchObject(invalid);
  });
});
