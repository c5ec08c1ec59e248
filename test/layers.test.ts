// The house keeps its layers: every import under src/ points down the ladder (or within a folder)
// and no files import each other in a circle. Type-only imports count too: they are what a reader
// follows. The ladder (test/support/ladder.ts) is the one docs/architecture.md shows. And the
// thread line holds: what the main thread loads, and what engine threads load, as a module-loading
// hook sees it in a running server.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser, http, login, ROOT, startServer, tempDir, type TestServer } from './helpers.js';
import { LAYERS, withLadder } from './support/ladder.js';
import { chainTo, MODULE_TRACE_HOOK, readTraces, type ThreadTrace } from './support/module-traces.js';

const SRC = path.join(ROOT, 'src');

function layerOf(rel: string): number {
  const top = rel.split('/')[0];
  const i = LAYERS.indexOf(top);
  if (i < 0) throw new Error(`${rel} lies in no layer: add its folder to LAYERS`);
  return i;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

/** Relative imports of a file, as paths below src/ (`.js` specifiers name `.ts` sources). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [
    ...text.matchAll(/^\s*(?:import|export)\b[^'"`;]*?from\s+'([^']+)'/gm),
    // Side-effect imports (`import './x.js';`) load a module as much as named ones do.
    ...text.matchAll(/^\s*import\s+'([^']+)'/gm),
    ...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
  ].map((m) => m[1]);
  return specs
    .filter((s) => s.startsWith('.'))
    .map((s) => path.relative(SRC, path.resolve(path.dirname(file), s)).replace(/\.js$/, '.ts'))
    .filter((rel) => !rel.startsWith('..') && rel.endsWith('.ts'));
}

const files = sources(SRC).map((f) => path.relative(SRC, f));
const graph = new Map(files.map((f) => [f, importsOf(path.join(SRC, f))]));

describe('layers of src/', () => {
  it('every file lies in a known layer', () => {
    for (const f of files) expect(() => layerOf(f)).not.toThrow();
  });

  it('no import points up a layer', () => {
    const upward: string[] = [];
    for (const [from, tos] of graph) {
      for (const to of tos) if (graph.has(to) && layerOf(to) > layerOf(from)) upward.push(`${from} -> ${to}`);
    }
    expect(upward).toEqual([]);
  });

  it('no import names a missing file', () => {
    const missing = [...graph].flatMap(([from, tos]) => tos.filter((t) => !graph.has(t)).map((t) => `${from} -> ${t}`));
    expect(missing).toEqual([]);
  });

  it('no files import each other in a circle', () => {
    // Tarjan's strongly connected components; any component of more than one file is a circle.
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const circles: string[][] = [];
    let next = 0;
    const visit = (v: string) => {
      index.set(v, next);
      low.set(v, next++);
      stack.push(v);
      onStack.add(v);
      for (const w of graph.get(v) ?? []) {
        if (!graph.has(w)) continue;
        if (!index.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
      if (low.get(v) === index.get(v)) {
        const scc: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          scc.push(w);
        } while (w !== v);
        if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) circles.push(scc.sort());
      }
    };
    for (const f of files) if (!index.has(f)) visit(f);
    expect(circles).toEqual([]);
  });
});

describe('the ladder of docs/architecture.md', () => {
  it("is the one generated from this test's list", () => {
    const page = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
    expect(page, 'run npm run docs:ladder').toBe(withLadder(page));
  });
});

// --- the thread line -------------------------------------------------------------------------

const BUILT = pathToFileURL(path.join(ROOT, 'dist/src')).href + '/';
/** A module of ours by its source path below src/ (`engine/execute.ts`), or null for anything else. */
const ours = (url: string): string | null => (url.startsWith(BUILT) ? url.slice(BUILT.length).replace(/\.js$/, '.ts') : null);

/**
 * What the main thread never loads: the engine and its runtime, the compiler, process
 * implementations, data readers. (processes/cubes/extents.ts parses spatial and temporal extents
 * for processes and for the extents of services alike; it implements no process.)
 */
const ENGINE_SIDE = [/^engine\//, /^wasm\//, /^compile\//, /^ml\//, /^processes\/(?!cubes\/extents\.ts$)/, /^data\/(cog-reader|range-source|load|lazy|warp|vector-read)\.ts$/];
/** What engine threads never load: the transport, the API and the job service. */
const MAIN_SIDE = [/^server\//, /^api\//, /^jobs\/service\.ts$/];
/** Threads that run graphs: compute threads and batch job threads. */
const ENGINE_ENTRY = /^(engine\/compute-thread|jobs\/worker)\.ts$/;
/** The modules of `t` that match a rule, each with the chain of imports that brought it in. */
function offenders(t: ThreadTrace, rules: RegExp[]): string[] {
  const hit = (u: string) => rules.some((r) => r.test(ours(u) ?? ''));
  const show = (u: string) =>
    chainTo(t, u)
      .map((x) => ours(x) ?? x.replace(/^.*\/node_modules\//, ''))
      .join(' -> ');
  return t.urls.filter(hit).map(show);
}

describe('the thread line, in the built files as a module-loading hook sees them', () => {
  let traces: ThreadTrace[] = [];
  let server: TestServer;

  beforeAll(async () => {
    const dir = tempDir('xeo-trace-');
    server = await startServer({ NODE_OPTIONS: `--import=${pathToFileURL(MODULE_TRACE_HOOK).href}`, XEO_MODULE_TRACE: dir, XEO_JOB_THREADS: '1' });
    addUser(server.dataDir, 'alice', 'secret-pw');
    const token = await login(server, 'alice', 'secret-pw');
    const json = { 'content-type': 'application/json' };
    const graph = { a: { process_id: 'add', arguments: { x: 1, y: 2 }, result: true } };
    // A graph on a compute thread, and a batch job on a job thread: what they load on first use counts too.
    const r = await http('POST', `${server.base}/result`, { token, headers: json, body: JSON.stringify({ process: { process_graph: graph } }) });
    expect(r.status, r.text).toBe(200);
    const created = await http('POST', `${server.base}/jobs`, { token, headers: json, body: JSON.stringify({ process: { process_graph: graph } }) });
    expect(created.status, created.text).toBe(201);
    const id = created.headers['xeo-identifier'];
    expect((await http('POST', `${server.base}/jobs/${id}/results`, { token })).status).toBe(202);
    let status = '';
    for (let i = 0; i < 600 && status !== 'finished' && status !== 'error'; i++) {
      if (i) await new Promise((res) => setTimeout(res, 100));
      status = (await http('GET', `${server.base}/jobs/${id}`, { token })).json.status;
    }
    expect(status).toBe('finished');
    await server.stop();
    traces = readTraces(dir);
  }, 120_000);
  afterAll(() => server?.stop());

  it('the main thread reaches no engine module, process implementation, compiler or data reader', () => {
    const main = traces.find((t) => ours(t.entry) === 'cli.ts');
    expect(main, 'the trace of the main thread').toBeDefined();
    expect(ours(main!.urls.find((u) => ours(u) === 'main.ts') ?? ''), 'main.ts loaded').toBe('main.ts');
    expect(offenders(main!, ENGINE_SIDE), 'modules of the engine side the main thread loads, each with how it gets there').toEqual([]);
  });

  it('engine threads never reach the server, the API or the job service', () => {
    const engines = traces.filter((t) => ENGINE_ENTRY.test(ours(t.entry) ?? ''));
    expect(new Set(engines.map((t) => ours(t.entry)))).toEqual(new Set(['engine/compute-thread.ts', 'jobs/worker.ts']));
    for (const t of engines) expect(offenders(t, MAIN_SIDE), `modules of the main side ${ours(t.entry)} loads`).toEqual([]);
  });
});
