// What the UDF test files share: whether this machine can run the Python sandbox, graphs on a small
// window of the demo collection, run_udf child processes, and reading cubes out of JSON answers.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { expect } from 'vitest';
import { http, type Res, type TestServer } from './helpers.js';
import { DEMO, pixels } from './jobs-helpers.js';

/** Debian's interpreter with the libraries, and bubblewrap: what the Python runtime needs. */
export const hasUdfPython = existsSync('/usr/bin/bwrap') && spawnSync('/usr/bin/python3', ['-c', 'import numpy, pandas, xarray, scipy'], { encoding: 'utf8' }).status === 0;

/** A 32 x 32 px window of the demo (a town, fields, a river). */
export const WINDOW = pixels(700, 900, 32, 32);

export const load = (bands = ['B04', 'B08'], temporal: [string, string] | null = null, extent: unknown = WINDOW) => ({
  process_id: 'load_collection',
  arguments: { id: DEMO, spatial_extent: extent, temporal_extent: temporal, bands },
});

/** A child process that is run_udf alone on the parent's `param`. */
export const udfChild = (param: string, udf: string, runtime = 'Python', extra: Record<string, unknown> = {}) => ({
  process_graph: { u: { process_id: 'run_udf', arguments: { data: { from_parameter: param }, udf, runtime, ...extra }, result: true } },
});

export const child = (node: Record<string, unknown>) => ({ process_graph: node });

export const post = (s: TestServer, token: string, path: string, body: unknown): Promise<Res> => http('POST', `${s.base}${path}`, { token, body: JSON.stringify(body) });

/** POST /result of a graph (its result node answers JSON). */
export const result = (s: TestServer, token: string, graph: unknown) => post(s, token, '/result', { process: { process_graph: graph } });

/** A cube of a JSON answer: dimension names, labels and all values flat (null as NaN). */
export function cubeOf(r: Res): { dims: string[]; labels: Record<string, unknown[]>; values: number[] } {
  expect(r.status, r.text.slice(0, 600)).toBe(200);
  expect(r.json.type).toBe('datacube');
  const values: number[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else values.push(v === null ? NaN : (v as number));
  };
  walk(r.json.data);
  return { dims: r.json.dimensions.map((d: any) => d.name), labels: Object.fromEntries(r.json.dimensions.map((d: any) => [d.name, d.labels])), values };
}

/** Same length, same no-data, values equal within `tol` (relative, or absolute near 0); some data unless `empty` is allowed. */
export function expectSameValues(got: number[], want: number[], tol = 1e-5, empty = false): void {
  expect(got.length).toBe(want.length);
  let bad = 0;
  let first = '';
  for (let i = 0; i < want.length; i++) {
    const a = got[i];
    const b = want[i];
    const ok = (Number.isNaN(a) && Number.isNaN(b)) || Math.abs(a - b) <= tol * Math.max(1, Math.abs(b));
    if (!ok && bad++ === 0) first = `at ${i}: got ${a}, want ${b}`;
  }
  expect(bad, `${bad} of ${want.length} values differ, first ${first}`).toBe(0);
  if (!empty)
    expect(
      want.some((v) => !Number.isNaN(v)),
      'the comparison saw only no-data',
    ).toBe(true);
}

/** The log a response links to with rel=monitor. */
export async function monitorLog(s: TestServer, token: string, r: Res): Promise<any[]> {
  const m = /^<([^>]+)>;\s?rel="monitor"$/.exec(r.headers.link ?? '');
  expect(m, `no monitor link in ${JSON.stringify(r.headers)}`).not.toBeNull();
  const logs = await http('GET', m![1], { token });
  expect(logs.status, logs.text).toBe(200);
  return logs.json.logs;
}
