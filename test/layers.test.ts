// The house keeps its layers: every import under src/ points down (or sideways within a layer) and no
// files import each other in a circle. Type-only imports count too: they are what a reader follows.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers.js';

const SRC = path.join(ROOT, 'src');

/** Bottom to top; a file may import its own layer or any layer below. */
const LAYERS: string[][] = [
  ['core'],
  ['process-catalog'],
  ['store', 'data', 'datacube', 'compile', 'files', 'udf', 'ml'],
  ['graph', 'processes', 'output', 'auth'],
  ['compute'],
  ['tiles', 'jobs', 'ingest'],
  ['api'],
  ['server', 'main.ts', 'cli.ts'],
];

function layerOf(rel: string): number {
  const top = rel.split('/')[0];
  const i = LAYERS.findIndex((l) => l.includes(top));
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
  const specs = [...text.matchAll(/^\s*(?:import|export)\b[^'"`;]*?from\s+'([^']+)'/gm), ...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].map((m) => m[1]);
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
