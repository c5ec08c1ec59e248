// Shared bench helpers: start servers as child processes on loopback ephemeral ports (so the load
// generator and the server do not share an event loop), stop them, and drive autocannon.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { THREAD_NAMES } from '../src/core/thread-names.js';

/** The compiled bench dir (dist/bench) and the project root. */
export const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(BENCH_DIR, '../..');
export const CLI = path.join(ROOT, 'dist/src/cli.js');

// Temp dirs are removed at exit at the latest, also when a signal cuts the bench's finally short.
const dirs = new Set<string>();
export function tempDir(prefix = 'xeo-bench-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);
}

export interface Child {
  /** e.g. http://127.0.0.1:41234 */
  url: string;
  proc: ChildProcess;
  /** The tail of the child's stdout and stderr, for error messages. */
  output(): string;
  stop(): Promise<void>;
}

// Children still running, so an interrupted or crashing bench does not leave servers behind.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    for (const p of live) p.kill('SIGKILL');
    process.exit(128 + constants.signals[sig]);
  });
}

/**
 * Starts `node script ...args` and waits for its "listening on http(s)://..." line (or the `ready`
 * pattern, whose first group becomes `url`: a worker has no URL, only a ready line).
 */
export async function startChild(
  script: string,
  args: string[],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
  ready = /listening on (https?:\/\/127\.0\.0\.1:\d+)/,
  startMs = 20000,
): Promise<Child> {
  const proc = spawn(process.execPath, [...nodeArgs, script, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
  let out = '';
  const keep = (d: Buffer) => (out = (out + d).slice(-64 * 1024));
  proc.stdout.on('data', keep);
  proc.stderr.on('data', keep);
  const child: Child = {
    url: '',
    proc,
    output: () => out,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const hard = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(hard);
    },
  };
  try {
    child.url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${path.basename(script)} did not start within ${startMs / 1000} s:\n${out}`)), startMs);
      proc.stdout.on('data', () => {
        const m = ready.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${path.basename(script)} exited (${code ?? signal}) before listening:\n${out}`));
      });
    });
  } catch (e) {
    await child.stop();
    throw e;
  }
  return child;
}

export interface XeoChild extends Child {
  dataDir: string;
}

/** Starts the built Xeo CLI on 127.0.0.1 with a fresh data dir, removed again on stop. */
export async function startXeo(env: Record<string, string> = {}, nodeArgs: string[] = [], startMs = 20000): Promise<XeoChild> {
  const dataDir = tempDir('xeo-bench-data-');
  // Access logging off unless asked for: it would measure console.error, not the server.
  const fullEnv = { XEO_HOST: '127.0.0.1', XEO_PORT: '0', XEO_DATA_DIR: dataDir, XEO_ACCESS_LOG: '0', ...env };
  let child: Child;
  try {
    child = await startChild(CLI, ['serve'], fullEnv, nodeArgs, undefined, startMs);
  } catch (e) {
    removeDir(dataDir);
    throw e;
  }
  return {
    ...child,
    dataDir,
    async stop() {
      await child.stop();
      removeDir(dataDir);
    },
  };
}

/**
 * Waits (up to 30 s) until a server's kernel cache in `dataDir` holds a compiled module: tier 1
 * compiles in the background after a graph first runs. A module is written under a temporary name
 * (`.tmp`) and then renamed, so only a `.wasm` counts: a copy of the cache taken while only the
 * temporary file is there holds no module, and the server given it compiles one during its job.
 */
export async function untilKernelOnDisk(dataDir: string): Promise<void> {
  const dir = path.join(dataDir, 'kernels');
  for (let i = 0; i < 300 && !(existsSync(dir) && readdirSync(dir).some((f) => f.endsWith('.wasm'))); i++) await new Promise((r) => setTimeout(r, 100));
}

/** Runs clean-up steps in reverse order, all of them even when some fail. */
export class Cleanup {
  private steps: (() => unknown)[] = [];
  add(step: () => unknown): void {
    this.steps.push(step);
  }
  async run(): Promise<void> {
    for (const step of this.steps.splice(0).reverse()) {
      try {
        await step();
      } catch (e) {
        console.error(`cleanup failed: ${(e as Error).message}`);
      }
    }
  }
}

/** CPU seconds (user + system) in the text of a /proc stat file (a process's or a thread's). */
function statCpuSeconds(stat: string): number {
  // Fields after the ") " that ends the command name: utime is the 12th, stime the 13th, in
  // clock ticks (USER_HZ, 100 on Linux).
  const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** CPU seconds (user + system) a process has used so far; null where /proc is missing. */
export function cpuSeconds(pid: number | undefined): number | null {
  try {
    return statCpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * Seconds a process's main thread has so far spent runnable but waiting for a CPU, by the
 * scheduler's own account (Linux's /proc/PID/task/PID/schedstat: nanoseconds on a CPU, nanoseconds
 * waiting for one, turns); null where the kernel keeps none.
 */
export function mainThreadWaitS(pid: number | undefined): number | null {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e9;
  } catch {
    return null;
  }
}

/** A process and all its descendants (the UDF sandbox's interpreters, say), by /proc's children lists. */
function processTree(pid: number): number[] {
  const all = [pid];
  for (let i = 0; i < all.length; i++) {
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${all[i]}/task`);
    } catch {
      continue; // the process ended meanwhile
    }
    for (const t of tasks) {
      try {
        for (const c of readFileSync(`/proc/${all[i]}/task/${t}/children`, 'utf8').split(' ')) if (c.trim()) all.push(Number(c));
      } catch {
        // the thread ended meanwhile
      }
    }
  }
  return all;
}

/**
 * Waits until a server has finished starting: `/readyz` answers 200 and the server with its child
 * processes has used at most one clock tick (10 ms) of CPU in 300 ms (compute threads loaded, the
 * UDF runtime's first interpreter started), at most `maxMs`. A server in service has done this
 * long before a job arrives; a bench that sends one right after the start measures the start-up
 * beside it.
 */
export async function settled(xeo: Child, maxMs = 20_000): Promise<void> {
  const end = performance.now() + maxMs;
  const treeCpu = () => processTree(xeo.proc.pid!).reduce((s, p) => s + (cpuSeconds(p) ?? 0), 0);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  while (performance.now() < end) {
    // not answering yet counts as not ready
    const r = await fetch(`${xeo.url}/readyz`).catch(() => null);
    await r?.body?.cancel();
    if (r?.status === 200) break;
    await sleep(100);
  }
  let last = treeCpu();
  while (performance.now() < end) {
    await sleep(300);
    const now = treeCpu();
    if (now - last <= 0.015) return;
    last = now;
  }
}

export interface Load {
  reqPerSec: number;
  requests: number;
  seconds: number;
  /** autocannon's percentiles: whole milliseconds, corrected for coordinated omission at a set rate. */
  p50Ms: number;
  p99Ms: number;
  /**
   * Every 2xx answer's own latency in ms, to the microsecond (no correction), in arrival order;
   * null unless asked for (a callback per answer costs the load generator at high rates).
   */
  latenciesMs: number[] | null;
  /** CPU seconds the server used during the run, when its pid was given and /proc exists. */
  serverCpuS: number | null;
  /**
   * Seconds the server's event loop (its main thread) and the load generator (this process's
   * main thread) were runnable but waiting for a CPU during the run (mainThreadWaitS), when known.
   */
  serverWaitS: number | null;
  loadgenWaitS: number | null;
}

/**
 * One autocannon run; throws unless every answer was 2xx with no errors or timeouts. With the
 * server's pid it also records the server's CPU time: autocannon is one JS thread and often the
 * bottleneck, and then the server's CPU per request shows its cost better than req/s does.
 * `latencies` keeps every answer's own latency (for pooledP99).
 */
export async function cannon(opts: autocannon.Options, serverPid?: number, { latencies = false } = {}): Promise<Load> {
  const cpu0 = cpuSeconds(serverPid);
  const [serverWait0, loadgenWait0] = [mainThreadWaitS(serverPid), mainThreadWaitS(process.pid)];
  const run = autocannon({ connections: 50, pipelining: 1, duration: 5, ...opts });
  const latenciesMs: number[] | null = latencies ? [] : null;
  if (latenciesMs) {
    run.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status >= 200 && status < 300) latenciesMs.push(ms);
    });
  }
  const r = await run;
  const cpu1 = cpuSeconds(serverPid);
  const [serverWait1, loadgenWait1] = [mainThreadWaitS(serverPid), mainThreadWaitS(process.pid)];
  const since = (a: number | null, b: number | null) => (a !== null && b !== null ? b - a : null);
  if (r.non2xx || r.errors || r.timeouts || r.requests.total === 0) {
    throw new Error(`load on ${opts.url} was not all 2xx: ${r.requests.total} answers, non2xx ${r.non2xx}, errors ${r.errors}, ` + `timeouts ${r.timeouts}, statuses ${JSON.stringify(r.statusCodeStats)}`);
  }
  return {
    reqPerSec: r.requests.total / r.duration,
    requests: r.requests.total,
    seconds: r.duration,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    latenciesMs,
    serverCpuS: since(cpu0, cpu1),
    serverWaitS: since(serverWait0, serverWait1),
    loadgenWaitS: since(loadgenWait0, loadgenWait1),
  };
}

/** The p-quantile (0 to 1) of xs: the value at rank floor(p * (n - 1)) of the sorted values. */
export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * (s.length - 1)))] : NaN;
}

/**
 * The p99 of the answers of several loads (run with `latencies`), pooled. autocannon's own p99
 * keeps whole milliseconds, truncated (1.71 ms counts as 1); and at a set rate it adds made-up
 * answers for coordinated omission at an interval of ceil(1 / rate) ms, `rate` being a
 * connection's requests per second: 1 ms for any rate above one a second, so an answer of 6 ms
 * counts six times. Where a cached tile's p99 is a few milliseconds, both move a ratio of p99s.
 */
export function pooledP99(loads: Load[]): number {
  return pct(
    loads.flatMap((l) => {
      if (!l.latenciesMs) throw new Error('pooledP99: a load run without latencies');
      return l.latenciesMs;
    }),
    0.99,
  );
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export const round = (x: number, digits = 0): number => Number(x.toFixed(digits));

/** A plain text table: first row is the header; numbers are right-aligned. */
export function table(rows: (string | number)[][]): string {
  const cells = rows.map((r) => r.map(String));
  const widths = cells[0].map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[], raw: (string | number)[]) => r.map((c, i) => (typeof raw[i] === 'number' ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ');
  const head = line(cells[0], rows[0]);
  return [head, '-'.repeat(head.length), ...cells.slice(1).map((r, i) => line(r, rows[i + 1]))].join('\n');
}

/** The kinds of a server's threads, by their names in /proc (comm; ours in src/core/thread-names.ts). */
const THREAD_KINDS: Record<string, string> = {
  MainThread: 'main',
  [THREAD_NAMES.job]: 'job',
  [THREAD_NAMES.deflate]: 'deflate',
  [THREAD_NAMES.compute]: 'compute',
  'libuv-worker': 'pool',
  V8Worker: 'v8',
};
const OUR_THREADS = new Set<string>(Object.values(THREAD_NAMES));

/**
 * CPU seconds of a process's threads by kind: `main` (the event loop), `job` (job threads),
 * `deflate` (a job's deflate threads: its COG tiles, the blocks of local files it reads),
 * `compute` (tiles and /result), `workers` (our other worker threads: compilers, kernel helpers,
 * the UDF host), `pool` (libuv's pool: zlib, file I/O), `v8` (V8's background threads: concurrent
 * garbage collection and compilation), `other`. Threads that ended are not counted.
 */
export function threadCpu(pid: number | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const t of tasks) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
      const kind = THREAD_KINDS[name] ?? (OUR_THREADS.has(name) ? 'workers' : 'other');
      out[kind] = (out[kind] ?? 0) + statCpuSeconds(readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8'));
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

/** The CPU seconds each kind of thread spent between two threadCpu() readings. */
export function threadCpuSince(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, round(v - (before[k] ?? 0), 2)]));
}

/** A finished job's own account of its chunks' wall time: its log's "Time in the chunks" line (src/jobs/runner.ts). */
export function chunkTimesLine(logs: { message: string }[]): string | undefined {
  return logs.find((l) => l.message.startsWith('Time in the chunks'))?.message;
}

/** The stages of a chunkTimesLine, in seconds (none when the job logged no such line). */
export function chunkStages(line: string | undefined): Record<string, number> {
  const m = /reading ([\d.]+) s, warping ([\d.]+) s, computing ([\d.]+) s, writing the result ([\d.]+) s/.exec(line ?? '');
  return m ? { read: Number(m[1]), warp: Number(m[2]), compute: Number(m[3]), write: Number(m[4]) } : {};
}

/** kB of a /proc/PID/status field (VmHWM: peak resident set; VmRSS: now). */
export function procKb(pid: number | undefined, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]);
}

/** The resident set of a process now, in MB. */
export const rssMb = (pid: number): number => procKb(pid, 'VmRSS') / 1024;
