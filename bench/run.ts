// Bench runner: `node dist/bench/run.js NAME [--quick] [--https] [--shared-cores]` runs bench/NAME.ts and prints, as its very
// last line, one JSON object {"bench", "figures", "ratios"} for scripts to pick up.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface BenchOptions {
  quick: boolean;
  /** Serve over HTTPS (benches that offer it: soak). */
  https: boolean;
  /** Leave every process on all cores (the cluster bench confines each worker to a core of its own). */
  sharedCores: boolean;
}
export interface BenchResult {
  figures: Record<string, number>;
  ratios: Record<string, number>;
}

const DIR = path.dirname(fileURLToPath(import.meta.url));
const FLAGS = new Set(['--quick', '--https', '--shared-cores']);

/** Compiled modules next to this one that export `run`; helpers (lib, bare-server) do not. */
function available(): string[] {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.js') && f !== 'run.js')
    .filter((f) => /^export (async )?function run\(/m.test(readFileSync(path.join(DIR, f), 'utf8')))
    .map((f) => f.slice(0, -3))
    .sort();
}

function usage(message: string): never {
  console.error(`${message}\nUsage: npm run bench -- NAME [--quick] [--https] [--shared-cores]\nBenches: ${available().join(', ') || '(none)'}`);
  process.exit(2);
}

async function main(argv: string[]): Promise<void> {
  const name = argv.find((a) => !a.startsWith('-'));
  const flags = argv.filter((a) => a.startsWith('-'));
  if (!name) usage('no bench given');
  const bad = flags.filter((f) => !FLAGS.has(f));
  if (bad.length) usage(`unknown flag ${bad.join(' ')}`);
  if (argv.filter((a) => !a.startsWith('-')).length > 1) usage('give one bench');
  // Checked against the list so a NAME can never import a helper or a path outside the dir.
  if (!available().includes(name)) usage(`unknown bench '${name}'`);

  const mod = (await import(`./${name}.js`)) as { run: (opts: BenchOptions) => Promise<BenchResult> };
  const { figures, ratios } = await mod.run({ quick: flags.includes('--quick'), https: flags.includes('--https'), sharedCores: flags.includes('--shared-cores') });
  // Written last and with a callback, so nothing follows it and the exit does not cut it off.
  process.stdout.write(`${JSON.stringify({ bench: name, figures, ratios })}\n`, () => process.exit(0));
}

main(process.argv.slice(2)).catch((e) => {
  console.error(`bench failed: ${(e as Error).stack ?? e}`);
  // process.exit runs the 'exit' hooks of lib.ts, which kill any child still running.
  process.exit(1);
});
