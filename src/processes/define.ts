// Builds a ProcessDef from the facts of src/processes/schemas.json (ids, schemas, defaults: exact
// copies of the openEO definitions) and our own texts. A process whose values are plain JSON
// values and that calls no child process gives a synchronous `scalar` function: the evaluator
// lifts it over cube pixels without a promise per value.
import schemas from './schemas.json' with { type: 'json' };
import type { ProcessArgs, ProcessContext, ProcessDef, ProcessSpec } from '../core/process.js';

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

/** A process evaluated on plain values (may be async, may call child processes). */
export function define(id: string, texts: ProcessTexts, run: (args: ProcessArgs, ctx: ProcessContext) => unknown): ProcessDef {
  return { spec: specFor(id, texts), run };
}

/**
 * A synchronous process on plain values: `fn` gets the arguments by name, defaults applied.
 * It must not call child processes.
 */
export function defineScalar(id: string, texts: ProcessTexts, fn: (a: Record<string, any>) => unknown): ProcessDef {
  const spec = specFor(id, texts);
  const defaults: Record<string, unknown> = {};
  for (const p of spec.parameters) defaults[p.name] = 'default' in p ? p.default : null;
  return {
    spec,
    scalar: fn,
    run: (args) => {
      const a: Record<string, unknown> = {};
      for (const p of spec.parameters) a[p.name] = args.get(p.name);
      return fn(a);
    },
  };
}
