// Reads what test/support/module-trace.ts recorded: one list of resolved module URLs per thread.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built hook, for `node --import`. */
export const MODULE_TRACE_HOOK = path.join(path.dirname(fileURLToPath(import.meta.url)), 'module-trace.js');

export interface ThreadTrace {
  /** The thread's first module (its entry script). */
  entry: string;
  /** Every module URL it resolved (node: built-ins included), in load order. */
  urls: string[];
}

export function readTraces(dir: string): ThreadTrace[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.txt'))
    .map((f) => {
      const urls = readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean);
      return { entry: urls[0] ?? '', urls };
    });
}
