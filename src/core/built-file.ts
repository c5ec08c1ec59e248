// Thread entry files are built JavaScript: beside the calling module when it runs from dist/, or
// in dist/ when it runs from its TypeScript source (tests run on sources), so `npm run build`
// must have run. One rule for every module that starts a thread.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The built `name` (e.g. `./kernel-helper.js`) next to the module at `here` (its import.meta.url),
 * else the same file under dist/ for a module under src/; null when neither exists.
 */
export function builtFile(here: string, name: string): URL | null {
  const beside = new URL(name, here);
  const candidates = [beside];
  const source = fileURLToPath(beside);
  const m = /^(.*)[\\/]src[\\/](.*)$/.exec(source);
  if (m && !/[\\/]dist$/.test(m[1])) candidates.push(new URL(`file://${m[1]}/dist/src/${m[2].replace(/\\/g, '/')}`));
  return candidates.find((u) => existsSync(fileURLToPath(u))) ?? null;
}
