// Loads the native uWebSockets.js binary directly. The npm build falls back to a slow pure-JS
// server when its binary does not load; Xeo refuses to run on that instead of being quietly slow.
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as Uws from '@trufflesuite/uws-js-unofficial';

const require = createRequire(import.meta.url);

export type UwsModule = typeof Uws;

export function loadUws(): UwsModule {
  const pkg = path.dirname(require.resolve('@trufflesuite/uws-js-unofficial/package.json'));
  const binary = path.join(pkg, 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
  try {
    return require(binary) as UwsModule;
  } catch (e) {
    throw new Error(
      `the native uWebSockets.js binary did not load (${binary}): ${(e as Error).message}\n` +
        'Xeo does not run on the JavaScript fallback. Use Node.js 20 on Linux x64 (see README).',
    );
  }
}
