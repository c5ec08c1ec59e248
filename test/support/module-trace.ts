// A module-loading hook that records what each thread loads: preloaded with
// `node --import <built module-trace.js>` and XEO_MODULE_TRACE set to a folder, every thread of
// the process (the main thread and each worker: --import runs in workers too) appends the URL of
// every module it resolves to `<folder>/<pid>-<threadId>.txt`, one a line with the module that
// imported it (tab-separated; none for the entry), in load order: the first line is the thread's
// entry. Used by the thread rule of test/layers.test.ts and by
// bench/startup.ts to count modules; without XEO_MODULE_TRACE it records nothing.
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import path from 'node:path';
import { threadId } from 'node:worker_threads';

const dir = process.env.XEO_MODULE_TRACE;
if (dir) {
  const file = path.join(dir, `${process.pid}-${threadId}.txt`);
  const seen = new Set<string>();
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const resolved = nextResolve(specifier, context);
      const line = `${resolved.url}\t${context.parentURL ?? ''}`;
      if (!seen.has(line)) {
        seen.add(line);
        appendFileSync(file, `${line}\n`);
      }
      return resolved;
    },
  });
}
