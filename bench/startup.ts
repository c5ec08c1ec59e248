// What a start costs the main thread: the time to import main.js (the modules of `xeo serve`
// before it starts anything) and how many modules that loads, counted by a module-loading hook
// (test/support/module-trace.ts); and the time an embedded server takes from its spawn to the
// "listening on" line (its compute threads loaded and warmed up). Each figure is the median of
// several fresh processes. XEO_STARTUP_ROOT measures another build of the project (an older
// commit's, for a before/after) with this bench's own code.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { MODULE_TRACE_HOOK, readTraces } from '../test/support/module-traces.js';
import { median, removeDir, ROOT, round, startChild, table, tempDir } from './lib.js';

/** Milliseconds to import the module, in a fresh node. */
function importMs(file: string): number {
  const code = `const t = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)}); process.stdout.write(String(performance.now() - t)); process.exit(0);`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`importing ${file} failed:\n${r.stderr}`);
  return Number(r.stdout);
}

/** The modules the main thread resolves importing the file: all of them, and those of the project's own build. */
function moduleCount(root: string, file: string): { all: number; own: number } {
  const dir = tempDir('xeo-bench-trace-');
  try {
    const code = `await import(${JSON.stringify(pathToFileURL(file).href)}); process.exit(0);`;
    const r = spawnSync(process.execPath, ['--import', pathToFileURL(MODULE_TRACE_HOOK).href, '--input-type=module', '-e', code], { encoding: 'utf8', env: { ...process.env, XEO_MODULE_TRACE: dir } });
    if (r.status !== 0) throw new Error(`tracing ${file} failed:\n${r.stderr}`);
    const [main] = readTraces(dir).filter((t) => t.urls.length > 0);
    const files = main.urls.filter((u) => u.startsWith('file:') && u !== pathToFileURL(MODULE_TRACE_HOOK).href);
    const own = pathToFileURL(path.join(root, 'dist/src')).href;
    return { all: files.length, own: files.filter((u) => u.startsWith(own)).length };
  } finally {
    removeDir(dir);
  }
}

/** Milliseconds from spawning `xeo serve` (fresh data dir, no demo) to its "listening on" line. */
async function listenMs(root: string): Promise<number> {
  const dataDir = tempDir('xeo-bench-data-');
  const t0 = performance.now();
  const child = await startChild(path.join(root, 'dist/src/cli.js'), ['serve'], { XEO_HOST: '127.0.0.1', XEO_PORT: '0', XEO_DATA_DIR: dataDir, XEO_DEMO: 'false', XEO_UDF_WORKERS: '0', XEO_ACCESS_LOG: '0' });
  const ms = performance.now() - t0;
  await child.stop();
  removeDir(dataDir);
  return ms;
}

export async function run(opts: { quick: boolean }): Promise<{ figures: Record<string, number>; ratios: Record<string, number> }> {
  const root = path.resolve(process.env.XEO_STARTUP_ROOT ?? ROOT);
  const main = path.join(root, 'dist/src/main.js');
  const runs = opts.quick ? 3 : 7;
  // One import first, unmeasured: the file system cache, not the modules, would be measured.
  importMs(main);
  const imports: number[] = [];
  const listens: number[] = [];
  for (let i = 0; i < runs; i++) {
    imports.push(importMs(main));
    listens.push(await listenMs(root));
  }
  const count = moduleCount(root, main);
  const figures = {
    main_import_ms: round(median(imports), 1),
    main_import_min_ms: round(Math.min(...imports), 1),
    main_import_max_ms: round(Math.max(...imports), 1),
    main_modules: count.all,
    main_own_modules: count.own,
    listen_ms: round(median(listens)),
    listen_min_ms: round(Math.min(...listens)),
    listen_max_ms: round(Math.max(...listens)),
  };
  console.error(`build measured: ${root} (${runs} runs each)`);
  console.error(
    table([
      ['figure', 'median', 'min', 'max'],
      ['import main.js (ms)', figures.main_import_ms, figures.main_import_min_ms, figures.main_import_max_ms],
      ['listening after (ms)', figures.listen_ms, figures.listen_min_ms, figures.listen_max_ms],
      ['modules (all / own)', `${count.all} / ${count.own}`, '', ''],
    ]),
  );
  return { figures, ratios: {} };
}
