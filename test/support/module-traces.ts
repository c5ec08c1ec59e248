// Reads what test/support/module-trace.ts recorded: per thread, the modules it resolved and who
// imported each.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
/** The built hook, for `node --import` (beside this file in dist/, or in dist/ when this runs from its source). */
export const MODULE_TRACE_HOOK = here.split(path.sep).includes('dist') ? path.join(here, 'module-trace.js') : path.resolve(here, '../../dist/test/support/module-trace.js');

export interface ThreadTrace {
  /** The thread's first module (its entry script). */
  entry: string;
  /** Every module URL it resolved (node: built-ins included), once each, in load order. */
  urls: string[];
  /** The modules each module imports (by URL). */
  imports: Map<string, Set<string>>;
}

export function readTraces(dir: string): ThreadTrace[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.txt'))
    .map((f) => {
      const urls: string[] = [];
      const imports = new Map<string, Set<string>>();
      for (const line of readFileSync(path.join(dir, f), 'utf8').split('\n')) {
        if (!line) continue;
        const [url, parent] = line.split('\t');
        if (!urls.includes(url)) urls.push(url);
        if (parent) {
          let s = imports.get(parent);
          if (!s) imports.set(parent, (s = new Set()));
          s.add(url);
        }
      }
      return { entry: urls[0] ?? '', urls, imports };
    });
}

/** The modules reachable from the entry without passing through any of `avoid` (URLs). */
export function reachable(t: ThreadTrace, avoid: (url: string) => boolean = () => false): Set<string> {
  const seen = new Set<string>([t.entry]);
  const todo = [t.entry];
  while (todo.length) {
    for (const next of t.imports.get(todo.pop()!) ?? []) {
      if (seen.has(next) || avoid(next)) continue;
      seen.add(next);
      todo.push(next);
    }
  }
  return seen;
}

/** One way the entry reaches `url`: the chain of modules from the entry to it. */
export function chainTo(t: ThreadTrace, url: string): string[] {
  const from = new Map<string, string>();
  const todo = [t.entry];
  const seen = new Set(todo);
  while (todo.length) {
    const at = todo.shift()!;
    if (at === url) break;
    for (const next of t.imports.get(at) ?? []) {
      if (seen.has(next)) continue;
      seen.add(next);
      from.set(next, at);
      todo.push(next);
    }
  }
  const chain = [url];
  while (from.has(chain[0])) chain.unshift(from.get(chain[0])!);
  return chain;
}
