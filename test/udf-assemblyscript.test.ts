// The AssemblyScript runtime of run_udf end to end: random pixel graphs written both as built-in
// child processes and as AssemblyScript UDFs give the same values; compile errors name their line
// and column; what a UDF may not do (import anything, loop forever, allocate without end) is
// refused or stopped. The server here has no Python (its interpreter is missing), so this file also
// checks that the Python runtime is then not listed and that asking for it names what is missing.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expectError, http, ROOT, type TestServer } from './helpers.js';
import { useDemoServer } from './demo-data.js';
import { Rng } from './rng.js';
import { decodePng } from './png-decode.js';
import { child, cubeOf, expectSameValues, load, post, result, udfChild } from './udf-helpers.js';

const { tileAt } = await import(path.join(ROOT, 'dist/src/tiles/tile-grid.js'));

let s: TestServer;
let alice: string;

useDemoServer({ env: { XEO_UDF_WORKERS: '1', XEO_UDF_PYTHON: '/usr/bin/no-such-python3', XEO_UDF_TIMEOUT: '3' }, users: { alice: 'pa' } }, (w) => {
  s = w.server;
  alice = w.tokens.alice;
});

const AS = 'AssemblyScript';

/** A random expression over `x`, as a built-in child graph (nodes) and as AssemblyScript. */
function randomExpression(rng: Rng, depth: number, nodes: Record<string, unknown>, leaf: () => { ref: unknown; src: string }): { ref: unknown; src: string } {
  if (depth === 0 || rng.next() < 0.25) {
    if (rng.next() < 0.7) return leaf();
    const c = Math.round((rng.next() * 200 - 100) * 100) / 100;
    return { ref: c, src: `(${c.toFixed(2)})` };
  }
  const unary = ['absolute', 'sqrt', 'floor', 'ceil', 'sin', 'cos', 'ln'];
  const binary = ['add', 'subtract', 'multiply', 'divide', 'min', 'max'];
  const asUnary: Record<string, string> = { absolute: 'Math.abs', sqrt: 'Math.sqrt', floor: 'Math.floor', ceil: 'Math.ceil', sin: 'Math.sin', cos: 'Math.cos', ln: 'Math.log' };
  if (rng.next() < 0.35) {
    const op = unary[Math.floor(rng.next() * unary.length)];
    const a = randomExpression(rng, depth - 1, nodes, leaf);
    const id = `n${Object.keys(nodes).length}`;
    nodes[id] = { process_id: op, arguments: { x: a.ref } };
    return { ref: { from_node: id }, src: `${asUnary[op]}(${a.src})` };
  }
  const op = binary[Math.floor(rng.next() * binary.length)];
  const a = randomExpression(rng, depth - 1, nodes, leaf);
  const b = randomExpression(rng, depth - 1, nodes, leaf);
  const id = `n${Object.keys(nodes).length}`;
  if (op === 'min' || op === 'max') {
    nodes[id] = { process_id: op, arguments: { data: [a.ref, b.ref], ignore_nodata: false } };
    // NaN (no-data) in, NaN out, as the built-in with ignore_nodata false.
    return { ref: { from_node: id }, src: `nanOr${op}(${a.src}, ${b.src})` };
  }
  nodes[id] = { process_id: op, arguments: { x: a.ref, y: b.ref } };
  const sym = { add: '+', subtract: '-', multiply: '*', divide: '/' }[op];
  return { ref: { from_node: id }, src: `(${a.src} ${sym} ${b.src})` };
}

const HELPERS = `
function nanOrmin(a: f64, b: f64): f64 { return isNaN(a) || isNaN(b) ? NaN : Math.min(a, b); }
function nanOrmax(a: f64, b: f64): f64 { return isNaN(a) || isNaN(b) ? NaN : Math.max(a, b); }
`;

/** Random graphs in one UDF: case k of a switch on the context's first number is graph k. */
function randomCases(seed: number, count: number, leaf: (rng: Rng) => { ref: unknown; src: string }, resultNode: (ref: unknown, nodes: Record<string, unknown>) => void) {
  const rng = new Rng(seed);
  const graphs: Record<string, unknown>[] = [];
  const cases: string[] = [];
  for (let k = 0; k < count; k++) {
    const nodes: Record<string, unknown> = {};
    const e = randomExpression(rng, 3, nodes, () => leaf(rng));
    resultNode(e.ref, nodes);
    graphs.push(nodes);
    cases.push(`    case ${k}: return ${e.src};`);
  }
  return { graphs, cases };
}

describe('AssemblyScript UDFs', () => {
  it('GET /udf_runtimes lists AssemblyScript with its compiler version; Python, whose interpreter is missing, is not listed', async () => {
    const r = await http('GET', `${s.base}/udf_runtimes`);
    expect(r.status).toBe(200);
    const version = JSON.parse(readFileSync(path.join(ROOT, 'node_modules/assemblyscript/package.json'), 'utf8')).version;
    const minor = version.split('.').slice(0, 2).join('.');
    expect(r.json).toEqual({
      AssemblyScript: expect.objectContaining({ type: 'language', default: minor, versions: { [minor]: { libraries: { assemblyscript: { version } } } } }),
    });
    const py = await result(s, alice, {
      l: load(),
      a: { process_id: 'apply', arguments: { data: { from_node: 'l' }, process: udfChild('x', 'def apply_datacube(cube, context):\n    return cube\n') }, result: true },
    });
    expectError(py, 400, 'InvalidRuntime');
    expect(py.json.message).toContain('/usr/bin/no-such-python3');
  });

  it('random apply graphs give the values of the built-in kernels', async () => {
    const { graphs, cases } = randomCases(
      2024,
      12,
      () => ({ ref: { from_parameter: 'x' }, src: 'x' }),
      (ref, nodes) => {
        nodes.out = { process_id: 'multiply', arguments: { x: ref, y: 1 }, result: true };
      },
    );
    let withData = 0;
    const source = `${HELPERS}\nexport function apply(x: f64): f64 {\n  switch (<i32>contextValue(0)) {\n${cases.join('\n')}\n  }\n  return NaN;\n}\n`;
    for (const [k, g] of graphs.entries()) {
      const run = (process: unknown) => result(s, alice, { l: load(['B04']), a: { process_id: 'apply', arguments: { data: { from_node: 'l' }, process, context: { k } }, result: true } });
      const builtIn = cubeOf(await run(child(g)));
      const udf = cubeOf(await run(udfChild('x', source, AS, { context: { from_parameter: 'context' } })));
      // A random graph may give no-data everywhere (the root of a negative number, say): then both must.
      expectSameValues(udf.values, builtIn.values, 1e-3, true);
      if (builtIn.values.some((v) => !Number.isNaN(v))) withData++;
    }
    expect(withData).toBeGreaterThan(graphs.length / 2);
  });

  it('random reducers over bands give the values of the built-in kernels', async () => {
    const { graphs, cases } = randomCases(
      7,
      6,
      (rng) => {
        const i = rng.next() < 0.5 ? 0 : 1;
        return { ref: { from_node: `b${i}` }, src: `values[${i}]` };
      },
      (ref, nodes) => {
        nodes.b0 = { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: 0 } };
        nodes.b1 = { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: 1 } };
        nodes.out = { process_id: 'multiply', arguments: { x: ref, y: 1 }, result: true };
      },
    );
    let withData = 0;
    const source = `${HELPERS}\nexport function reduce(values: Float64Array): f64 {\n  switch (<i32>contextValue(0)) {\n${cases.join('\n')}\n  }\n  return NaN;\n}\n`;
    for (const [k, g] of graphs.entries()) {
      const run = (reducer: unknown) => result(s, alice, { l: load(), r: { process_id: 'reduce_dimension', arguments: { data: { from_node: 'l' }, dimension: 'bands', reducer, context: [k] }, result: true } });
      const builtIn = cubeOf(await run(child(g)));
      const udf = cubeOf(await run(udfChild('data', source, AS, { context: { from_parameter: 'context' } })));
      expect(udf.labels).toEqual(builtIn.labels);
      expectSameValues(udf.values, builtIn.values, 1e-3, true);
      if (builtIn.values.some((v) => !Number.isNaN(v))) withData++;
    }
    expect(withData).toBeGreaterThan(graphs.length / 2);
  });

  it('run_udf on its own reduces an array or applies to a number', async () => {
    const source = `export function reduce(values: Float64Array): f64 {\n  let s = 0.0;\n  for (let i = 0; i < values.length; i++) s += values[i];\n  return s * contextValue(0);\n}\nexport function apply(x: f64): f64 {\n  return x + 1.0;\n}\n`;
    const run = (data: unknown) => result(s, alice, { u: { process_id: 'run_udf', arguments: { data, udf: source, runtime: AS, context: [2] }, result: true } });
    expect((await run([1, 2, 3.5])).json).toBe(13);
    expect((await run(41)).json).toBe(42);
  });

  it('apply_dimension over time equals the built-in cumsum', async () => {
    const source = `export function apply_dimension(values: Float64Array, out: Float64Array): void {
  let sum = 0.0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (isNaN(v)) out[i] = NaN;
    else {
      sum += v;
      out[i] = sum;
    }
  }
}
`;
    const run = (process: unknown) => result(s, alice, { l: load(), a: { process_id: 'apply_dimension', arguments: { data: { from_node: 'l' }, dimension: 't', process }, result: true } });
    const builtIn = cubeOf(await run(child({ c: { process_id: 'cumsum', arguments: { data: { from_parameter: 'data' } }, result: true } })));
    const udf = cubeOf(await run(udfChild('data', source, AS)));
    expect(udf.labels).toEqual(builtIn.labels);
    expectSameValues(udf.values, builtIn.values, 1e-6);
  });

  it('map tiles of an NDVI UDF equal the tiles of the built-in ndvi', async () => {
    const ndvi = `export function reduce(values: Float64Array): f64 {\n  return (values[1] - values[0]) / (values[1] + values[0]);\n}\n`;
    const day: [string, string] = ['2024-06-21', '2024-06-22'];
    const service = async (node: unknown) => {
      const r = await post(s, alice, '/services', {
        type: 'XYZ',
        configuration: { colormap: 'ndvi', min: -0.2, max: 0.9 },
        process: { process_graph: { l: load(['B04', 'B08'], day, null), n: { ...(node as object), result: true } } },
      });
      expect(r.status, r.text).toBe(201);
      return (await http('GET', `${s.base}/services/${r.headers['xeo-identifier']}`, { token: alice })).json.url as string;
    };
    const t = tileAt(16.745, 47.93, 14);
    const tile = async (url: string) => {
      const r = await http('GET', url.replace('{z}', t.z).replace('{x}', t.x).replace('{y}', t.y));
      expect(r.status, r.text).toBe(200);
      return decodePng(r.body);
    };
    const udf = await tile(await service({ process_id: 'reduce_dimension', arguments: { data: { from_node: 'l' }, dimension: 'bands', reducer: udfChild('data', ndvi, AS) } }));
    const builtIn = await tile(await service({ process_id: 'ndvi', arguments: { data: { from_node: 'l' } } }));
    expect(udf.indices).toEqual(builtIn.indices);
    expect(new Set(udf.indices).size).toBeGreaterThan(10);
  });

  const applyAs = (source: string) => result(s, alice, { l: load(['B04']), a: { process_id: 'apply', arguments: { data: { from_node: 'l' }, process: udfChild('x', source, AS) }, result: true } });

  it('compile errors name their line and column; a missing entry point or an import is refused', async () => {
    const r = await applyAs('export function apply(x: f64): f64 {\n  return x * foo;\n}\n');
    expectError(r, 400, 'UdfInvalid');
    expect(r.json.message).toContain("Cannot find name 'foo'. (line 2, column 14 of the AssemblyScript source)");
    const none = await applyAs('export function other(x: f64): f64 {\n  return x;\n}\n');
    expectError(none, 400, 'UdfInvalid');
    expect(none.json.message).toContain('export function apply(x: f64): f64');
    const imports = await applyAs('@external("env", "steal")\ndeclare function steal(): f64;\nexport function apply(x: f64): f64 {\n  return x + steal();\n}\n');
    expectError(imports, 400, 'UdfInvalid');
    expect(imports.json.message).toContain('imports env.steal');
    const ok = 'export function apply(x: f64): f64 {\n  return x;\n}\n';
    const version = (v: string) => result(s, alice, { l: load(['B04']), a: { process_id: 'apply', arguments: { data: { from_node: 'l' }, process: udfChild('x', ok, AS, { version: v }) }, result: true } });
    expectError(await version('9.9'), 400, 'InvalidVersion');
    expect((await version('0')).status).toBe(200);
  });

  it('an endless loop is stopped at the time limit, an allocation without end at the memory limit', async () => {
    const loop = await applyAs('export function apply(x: f64): f64 {\n  let y = x;\n  while (true) { y += 1.0; }\n  return y;\n}\n');
    expectError(loop, 400, 'UdfFailed');
    expect(loop.json.message).toContain('ran longer than the 3 s');
    const grow = await applyAs('const keep = new Array<Float64Array>();\nexport function apply(x: f64): f64 {\n  keep.push(new Float64Array(1 << 20));\n  return x;\n}\n');
    expectError(grow, 400, 'UdfFailed');
    expect(grow.json.message).toMatch(/abort|trapped/);
    // The thread that ran them serves the next UDF as before.
    expect(cubeOf(await applyAs('export function apply(x: f64): f64 {\n  return x + 1.0;\n}\n')).values.length).toBe(8 * 32 * 32);
  });
});
