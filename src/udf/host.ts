// The main thread's side of the UDF runtimes: starts the UDF host thread (host-thread.ts) with
// its I/O folder on tmpfs, gives every engine thread spawned afterwards a MessagePort to it
// (udfLinkForThread, like the STAC search bridge), and answers GET /udf_runtimes from what the
// host found at start (the interpreter's own versions, or what is missing).
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, chmodSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { Config } from '../core/config.js';
import { missingForPython, type SandboxSettings } from './sandbox.js';
import type { HostInit, ToHostThread, FromHostThread } from './host-thread.js';
import type { HostLink, RuntimeInfo } from './protocol.js';
import { THREAD_NAMES } from '../core/thread-names.js';

/** Our Python files (the runner and the `openeo` package): beside this file in src/, or src/udf/python seen from dist/src/udf. */
export function pythonSourceDir(): string {
  const candidates = ['./python', '../../../src/udf/python'].map((p) => fileURLToPath(new URL(p, import.meta.url)));
  const found = candidates.find((p) => existsSync(path.join(p, 'xeo_runner.py')));
  if (!found) throw new Error(`the UDF runner is missing (looked in ${candidates.join(', ')})`);
  return found;
}

/** The installed AssemblyScript compiler's version (node_modules above this file). */
function ascVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++, dir = path.dirname(dir)) {
    const p = path.join(dir, 'node_modules/assemblyscript/package.json');
    if (existsSync(p)) return (JSON.parse(readFileSync(p, 'utf8')) as { version: string }).version;
  }
  return 'unknown';
}

/** Folders of hosts that ended without cleaning up (their process is gone). */
function sweepStale(root: string): void {
  for (const name of readdirSync(root)) {
    const m = /^xeo-udf-(\d+)-/.exec(name);
    if (!m) continue;
    try {
      process.kill(Number(m[1]), 0);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ESRCH') rmSync(path.join(root, name), { recursive: true, force: true });
    }
  }
}

export class UdfHost {
  private readonly worker: Worker;
  readonly ioRoot: string;
  private nextId = 1;
  private readonly waiting = new Map<number, (i: RuntimeInfo) => void>();
  private closing: Promise<void> | null = null;
  private readonly callValues: number;
  private readonly asVersion = ascVersion();

  constructor(config: Config) {
    const shm = config.udf.ioDir ?? (existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir());
    sweepStale(shm);
    this.ioRoot = mkdtempSync(path.join(shm, `xeo-udf-${process.pid}-`));
    // The sandboxes' user must reach its own folder below (not list the others).
    chmodSync(this.ioRoot, 0o711);
    const runnerDir = path.join(this.ioRoot, 'python');
    cpSync(pythonSourceDir(), runnerDir, { recursive: true, filter: (src) => !src.includes('__pycache__') });
    makeReadable(runnerDir);
    const u = config.udf;
    this.callValues = u.callValues;
    const root = typeof process.getuid === 'function' && process.getuid() === 0;
    const sandbox: SandboxSettings = {
      python: u.python,
      bwrap: u.bwrap,
      runnerDir,
      ioRoot: this.ioRoot,
      memoryBytes: u.memoryBytes,
      outputBytes: u.outputBytes,
      logBytes: u.logBytes,
      printBytes: u.printBytes,
      processes: u.processes,
      tmpBytes: u.tmpBytes,
      lifetimeCpuSeconds: 24 * 3600,
      uid: root ? u.uid : null,
      hide: [config.dataDir].filter((p) => p === '/usr' || p.startsWith('/usr/')),
    };
    const missing = u.workers === 0 ? 'XEO_UDF_WORKERS is 0: the Python runtime is turned off' : missingForPython(u);
    const init: HostInit = {
      sandbox,
      pool: { workers: u.workers, perUser: Math.max(1, Math.floor(u.workers / 2)), queue: 256, maxCalls: 5000, idleMs: 10 * 60 * 1000, filesIdleMs: 30 * 1000 },
      missing,
      cacheDir: path.join(config.dataDir, 'kernels'),
      ascVersion: this.asVersion,
    };
    this.worker = new Worker(new URL('./host-thread.js', import.meta.url), { name: THREAD_NAMES.udfHost, workerData: init });
    this.worker.on('message', (m: FromHostThread) => {
      if (m.type === 'info') {
        this.waiting.get(m.id)?.(m.info);
        this.waiting.delete(m.id);
        if (this.waiting.size === 0) this.worker.unref();
      }
    });
    this.worker.on('error', (e) => console.error('[xeo] the UDF host thread failed:', e));
    this.worker.unref();
  }

  /** A port to the host for a new engine thread (pass it in workerData and its transferList). */
  linkForThread(): HostLink {
    const { port1, port2 } = new MessageChannel();
    this.worker.postMessage({ type: 'port', port: port1 } satisfies ToHostThread, [port1]);
    return { port: port2, callValues: this.callValues, asVersion: this.asVersion };
  }

  /** What the runtimes are here (Python's versions come from the interpreter once it has started). */
  info(): Promise<RuntimeInfo> {
    return new Promise((resolve) => {
      const id = this.nextId++;
      this.waiting.set(id, resolve);
      // Held while an answer is due: a start-up that awaits nothing else would otherwise end the process.
      this.worker.ref();
      this.worker.postMessage({ type: 'info', id } satisfies ToHostThread);
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      const closed = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 5000);
        this.worker.on('message', (m: FromHostThread) => {
          if (m.type === 'closed') {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      this.worker.postMessage({ type: 'close' } satisfies ToHostThread);
      await closed;
      await this.worker.terminate();
      await rm(this.ioRoot, { recursive: true, force: true });
    })();
    return this.closing;
  }
}

function makeReadable(dir: string): void {
  chmodSync(dir, 0o755);
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) makeReadable(p);
    else chmodSync(p, 0o644);
  }
}
