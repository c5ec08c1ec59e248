// The UDF host thread: one per process (API node or `xeo worker`), started by host.ts. It owns
// the warm pool of sandboxed Python interpreters (pool.ts) and the AssemblyScript compiler
// (as-compiler.ts) for every engine thread of the process, each of which talks to it over a
// MessagePort of its own (client.ts). It carries control messages only: an engine thread leases an
// interpreter, writes the cube's values into its in.bin and reads the answer from its out.bin
// itself, so neither this thread nor the server's event loop ever holds pixels. Spawning and killing
// interpreters (fork and exec take milliseconds) happens here, not on the event loop.
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { readFile } from 'node:fs/promises';
import { ApiError, ProcessException, errorToData, toApiError } from '../core/errors.js';
import { SandboxPool, type PoolOptions } from './pool.js';
import type { SandboxSettings } from './sandbox.js';
import { compileUdf } from './as-compiler.js';
import type { FromHost, RuntimeInfo, ToHost } from './protocol.js';
import { versionMatches } from './versions.js';

export interface HostInit {
  sandbox: SandboxSettings;
  pool: PoolOptions;
  /** Why Python cannot run here (checked by the main thread), or null. */
  missing: string | null;
  /** Where compiled AssemblyScript UDFs are kept. */
  cacheDir: string;
  ascVersion: string;
}

export type ToHostThread = { type: 'port'; port: MessagePort } | { type: 'info'; id: number } | { type: 'close' };
export type FromHostThread = { type: 'info'; id: number; info: RuntimeInfo } | { type: 'closed' };

const init = workerData as HostInit;
const pool = new SandboxPool(init.sandbox, init.pool);
if (!init.missing) pool.start();
let ports = 0;

/** Versions Debian's packages report wrongly (xarray says 999): the installed package's version instead. */
async function packageVersions(libs: Record<string, string>): Promise<Record<string, string>> {
  const wrong = Object.entries(libs).filter(([, v]) => !/^\d+\.\d+/.test(v) || /^9{3,}/.test(v));
  if (!wrong.length) return libs;
  let status: string;
  try {
    status = await readFile('/var/lib/dpkg/status', 'utf8');
  } catch {
    return libs;
  }
  const out = { ...libs };
  for (const [name] of wrong) {
    const stanza = status.split('\n\n').find((s) => new RegExp(`^Package: python3-${name.toLowerCase()}$`, 'm').test(s));
    const v = stanza && /^Version: (?:\d+:)?([^\s-]+)/m.exec(stanza);
    if (v) out[name] = v[1];
  }
  return out;
}

async function info(): Promise<RuntimeInfo> {
  const assemblyscript = { version: init.ascVersion };
  if (init.missing) return { python: { available: false, missing: init.missing }, assemblyscript };
  try {
    const hello = await pool.probe;
    return { python: { available: true, version: hello.python, libraries: await packageVersions(hello.libraries) }, assemblyscript };
  } catch (e) {
    return { python: { available: false, missing: (e as Error).message }, assemblyscript };
  }
}

/**
 * Null when Python runs here; else a promise of why not (null once the first interpreter has
 * started after all).
 */
function pythonMissing(): Promise<string | null> | null {
  if (init.missing) return Promise.resolve(init.missing);
  if (probed === 'ok') return null;
  return pool.probe.then(
    (hello) => ((probed = 'ok'), (pythonVersion = hello.python), null),
    (e: Error) => e.message,
  );
}
let probed: 'ok' | null = null;
let pythonVersion = '';

function serve(port: MessagePort): void {
  const prefix = `p${++ports}:`;
  /** Leases of this engine thread not yet released. */
  const open = new Set<string>();
  const post = (m: FromHost, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);
  const lease = (m: Extract<ToHost, { type: 'lease' }>, key: string) => {
    open.add(key);
    void pool.lease({ id: key, user: m.user, timeoutMs: m.timeoutMs }).then((a) => {
      if (!a.ok) open.delete(key);
      post(a.ok ? { type: 'leased', id: m.id, ok: true, dir: a.dir } : { type: 'leased', id: m.id, ok: false, error: a.error });
    });
  };
  port.on('message', (m: ToHost) => {
    const key = prefix + m.id;
    switch (m.type) {
      case 'lease': {
        const refuse = (e: ApiError) => post({ type: 'leased', id: m.id, ok: false, error: errorToData(e) });
        const go = () => {
          if (m.version !== null && !versionMatches(m.version, pythonVersion)) {
            return refuse(new ProcessException('InvalidVersion', `the Python runtime has no version '${m.version}' here (it is ${pythonVersion})`));
          }
          lease(m, key);
        };
        const unavailable = pythonMissing();
        if (unavailable === null) return go();
        void unavailable.then((why) => (why === null ? go() : refuse(new ProcessException('InvalidRuntime', `the Python runtime does not run here: ${why}`))));
        return;
      }
      case 'call':
        void pool.exec(key, m.spec, m.input).then((a) => {
          if (!a.ok || !a.output) open.delete(key);
          post(a.ok ? { type: 'result', id: m.id, ok: true, reply: a.reply, output: a.output } : { type: 'result', id: m.id, ok: false, error: a.error, logs: a.logs });
        });
        return;
      case 'release':
        open.delete(key);
        pool.release(key);
        return;
      case 'cancel':
        open.delete(key);
        pool.cancel(key);
        return;
      case 'compile':
        compileUdf(m.hash, m.source, m.userLines, init.cacheDir).then(
          (wasm) => {
            const copy = wasm.slice();
            post({ type: 'compiled', id: m.id, ok: true, wasm: copy }, [copy.buffer]);
          },
          (e) => post({ type: 'compiled', id: m.id, ok: false, error: errorToData(e instanceof ApiError ? e : toApiError(e, 'AssemblyScript UDF compile')) }),
        );
        return;
    }
  });
  // The engine thread ended (a job's thread is ended on cancel): whatever it ran ends too.
  port.on('close', () => {
    for (const key of open) pool.cancel(key);
    open.clear();
  });
}

parentPort!.on('message', (m: ToHostThread) => {
  if (m.type === 'port') serve(m.port);
  else if (m.type === 'info') void info().then((i) => parentPort!.postMessage({ type: 'info', id: m.id, info: i } satisfies FromHostThread));
  else if (m.type === 'close') void pool.close().then(() => parentPort!.postMessage({ type: 'closed' } satisfies FromHostThread));
});
