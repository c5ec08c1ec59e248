// A process's definition as GET /processes serves it: the facts of schemas.json (ids, categories,
// parameter names, schemas, optionality, defaults, return schemas, exception codes: exact copies of
// the openEO definitions, written by test/fixtures/make-process-fixtures.mjs) joined with our own
// words from texts/. Every parameter and exception of the facts needs its text, and no text may
// name a parameter the facts do not have: a process with a missing or stray text fails at start.
import schemas from './schemas.json' with { type: 'json' };
import type { ProcessSpec } from '../core/process.js';

/** Our words for one process. */
export interface ProcessTexts {
  summary: string;
  description: string;
  /** One line per parameter, by name. */
  parameters: Record<string, string>;
  returns: string;
  /** Our message per exception code the definition lists. */
  exceptions?: Record<string, string>;
}

type Facts = {
  categories: string[];
  experimental?: boolean;
  deprecated?: boolean;
  parameters: { name: string; schema: unknown; optional?: boolean; default?: unknown; deprecated?: boolean; experimental?: boolean }[];
  returns: { schema: unknown };
  exceptions: Record<string, { http?: number }>;
};
const FACTS = schemas as unknown as Record<string, Facts>;

/** The definition of process `id`: its facts in our words. */
export function specFor(id: string, t: ProcessTexts): ProcessSpec {
  const f = FACTS[id];
  if (!f) throw new Error(`no openEO definition for process ${id}`);
  const spec: ProcessSpec = {
    id,
    summary: t.summary,
    description: t.description,
    categories: f.categories,
    parameters: f.parameters.map((p) => {
      const text = t.parameters[p.name];
      if (text === undefined) throw new Error(`process ${id}: no text for parameter ${p.name}`);
      return { ...p, description: text };
    }),
    returns: { description: t.returns, schema: f.returns.schema },
  };
  for (const k of Object.keys(t.parameters)) {
    if (!f.parameters.some((p) => p.name === k)) throw new Error(`process ${id}: unknown parameter ${k}`);
  }
  const codes = Object.keys(f.exceptions);
  if (codes.length) {
    spec.exceptions = {};
    for (const code of codes) {
      const message = t.exceptions?.[code];
      if (!message) throw new Error(`process ${id}: no message for exception ${code}`);
      spec.exceptions[code] = { message, ...(f.exceptions[code].http ? { http: f.exceptions[code].http } : {}) };
    }
  }
  if (f.experimental) spec.experimental = true;
  if (f.deprecated) spec.deprecated = true;
  return spec;
}
