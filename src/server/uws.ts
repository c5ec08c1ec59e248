// Loads the native uWebSockets.js binary for this Node.js directly, by its ABI number. Xeo never
// runs on anything but the native server: a missing or unloadable binary stops the start with a
// message that names the fix (a supported Node.js, a C library new enough for the binaries).
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as Uws from 'uWebSockets.js';

const require = createRequire(import.meta.url);

export type UwsModule = typeof Uws;

/** The Node.js ABIs (process.versions.modules) the uWebSockets.js package ships Linux binaries for. */
const SUPPORTED_ABIS: Record<string, string> = { '127': 'Node.js 22', '137': 'Node.js 24', '141': 'Node.js 25' };

/**
 * The largest request head uWS reads (its `UWS_HTTP_MAX_HEADERS_SIZE`, read when the binary loads;
 * uWS's own default is 4 KiB). A larger head, or one of 100 header fields or more, gets uWS's own
 * `431` before our code sees the request. 16 KiB is what Node's HTTP server allows: long JWTs and
 * cookies of a proxy in front fit.
 */
export const UWS_MAX_HEAD_BYTES = Number(process.env.UWS_HTTP_MAX_HEADERS_SIZE) || 16384;

/** The C library the official uWebSockets.js binaries are built against. */
const GLIBC_NEEDED = '2.38';

function glibcRuntime(): string | undefined {
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return report?.header?.glibcVersionRuntime;
}

function newerOrEqual(have: string, need: string): boolean {
  const [a, b] = [have, need].map((v) => v.split('.').map(Number));
  return a[0] > b[0] || (a[0] === b[0] && (a[1] ?? 0) >= (b[1] ?? 0));
}

/** Why this process cannot load the binary, in a user's words, or undefined when it should load. */
export function uwsObstacle(): string | undefined {
  const abi = process.versions.modules;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return `Xeo runs on Linux x64; this is ${process.platform} ${process.arch}.`;
  }
  if (!SUPPORTED_ABIS[abi]) {
    return `Node.js ${process.versions.node} (ABI ${abi}) is not supported: use Node.js 24 LTS (or 22).`;
  }
  const glibc = glibcRuntime();
  if (glibc && !newerOrEqual(glibc, GLIBC_NEEDED)) {
    return (
      `the uWebSockets.js binaries need glibc ${GLIBC_NEEDED} or newer and this system has ${glibc} ` +
      '(Debian 12, Ubuntu 22.04 and older). Run Xeo on Debian 13, Ubuntu 24.04 or newer, or give Node.js a ' +
      'newer C library of its own with `.ci/node24 <folder>` and put `<folder>/bin` first on PATH (README, "Start").'
    );
  }
  return undefined;
}

export function loadUws(): UwsModule {
  const pkg = path.dirname(require.resolve('uWebSockets.js'));
  const binary = path.join(pkg, `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
  process.env.UWS_HTTP_MAX_HEADERS_SIZE = String(UWS_MAX_HEAD_BYTES);
  try {
    return require(binary) as UwsModule;
  } catch (e) {
    const why = uwsObstacle();
    throw new Error(`the native uWebSockets.js binary did not load (${binary}): ${why ?? (e as Error).message}\n` + 'Xeo does not run without its native server.', { cause: e });
  }
}
