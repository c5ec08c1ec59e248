// An evaluation environment for engine tests: the registered processes (plus test-only ones), a
// run context with an empty catalog, and the log entries it collects.
import { predefined } from '../src/processes/registry.js';
import type { ProcessDef } from '../src/core/process.js';
import type { LogLevel, RunContext } from '../src/core/run-context.js';
import type { EvalEnv } from '../src/graph/evaluate.js';
import { createEngine, type Engine } from '../src/engine/engine.js';
import { tempDir } from './helpers.js';

export interface TestEnv {
  env: EvalEnv;
  run: RunContext;
  logs: { level: LogLevel; message: string; data?: any }[];
}

let engine: Engine | null = null;

/**
 * An engine built as a compute thread builds its own (createEngine), with the defaults of the
 * settings and no links to a main thread; its catalog of records is never opened by these tests
 * (their runs have a catalog of their own).
 */
export function testEngine(): Engine {
  return (engine ??= createEngine({ dataDir: tempDir(), databaseUrl: null, blockCacheBytes: 64 << 20, outboundAllow: '' }));
}

export function engineEnv(extra: ProcessDef[] = []): TestEnv {
  const defs = new Map<string, ProcessDef>([...predefined.specs().map((s) => [s.id, predefined.get(s.id)!] as const), ...extra.map((d) => [d.spec.id, d] as const)]);
  const logs: TestEnv['logs'] = [];
  const run: RunContext = {
    engine: testEngine(),
    catalog: { collections: { get: async () => null, items: async () => [] } },
    maxValues: 1e9,
    limitAdvice: '',
    results: [],
    log: (level, message, data) => logs.push({ level, message, data }),
    stats: { values: 0 },
  };
  return { env: { predefined: (id) => defs.get(id), userProcess: () => null, run }, run, logs };
}
