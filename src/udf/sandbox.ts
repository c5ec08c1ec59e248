// One sandboxed Python interpreter: Debian's CPython running our runner (python/xeo_runner.py)
// inside bubblewrap. The sandbox has
//   - its own user, PID, network, IPC, UTS and cgroup namespaces (no network but its own loopback,
//     no other process to see, no capabilities, no new privileges, no nested user namespaces);
//   - a read-only file system of /usr (interpreter and libraries), the shared-library links of
//     /etc/alternatives that /usr needs (BLAS, LAPACK), the runner, and its own I/O folder;
//     nothing else of the host: no /etc/passwd, no home, no data dir, no other sandbox's files;
//   - a private /tmp and /dev/shm of bounded size, thrown away with the sandbox;
//   - the runner's own limits (address space, file size, processes, open files, CPU time), set
//     once the libraries are imported and before any user code runs.
// Control messages go over fds 3 (to the runner) and 4 (from it), data as raw float32 files in
// the I/O folder: the engine thread writes the cube into its in.bin, the runner writes the answer
// to its out.bin (the only file the sandbox may write outside /tmp). Its standard output and error
// are counted (a UDF that writes past the limit is stopped) and kept as log lines of the call.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { chmod, chown, mkdir, rm, writeFile } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { RunnerHello, RunnerReply, RunnerRequest, UdfLogEntry } from './protocol.js';

export interface SandboxSettings {
  python: string;
  bwrap: string;
  /** Folder of the runner and our `openeo` package (world-readable), bound at /xeo. */
  runnerDir: string;
  /** Where each sandbox's I/O folder is made (on tmpfs: /dev/shm). */
  ioRoot: string;
  memoryBytes: number;
  outputBytes: number;
  logBytes: number;
  printBytes: number;
  processes: number;
  tmpBytes: number;
  /** CPU seconds an interpreter may use in its whole life (it is retired before). */
  lifetimeCpuSeconds: number;
  /** Run bubblewrap as this user (when Xeo runs as root), or null to run it as ourselves. */
  uid: number | null;
  /** Host paths under /usr that must stay hidden (the data dir, should it lie there). */
  hide: string[];
}

/** Largest control message accepted from a runner (answers carry logs and small JSON, never pixels). */
const MAX_MESSAGE = 32 * 1024 * 1024;
/** Seconds an interpreter may take to import its libraries and say hello. */
const START_SECONDS = 60;

/** bwrap arguments that recreate the host's merged-/usr links and the shared-library alternatives /usr needs. */
function systemLinks(): string[] {
  const out: string[] = [];
  for (const p of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    try {
      const st = lstatSync(p);
      if (st.isSymbolicLink()) out.push('--symlink', readlinkSync(p), p);
      else if (st.isDirectory()) out.push('--ro-bind', p, p);
    } catch {
      // not on this system
    }
  }
  // Debian resolves libblas.so.3, liblapack.so.3, libopenblas.so.0 ... through /etc/alternatives:
  // recreate exactly those links (pointing into /usr), nothing else of /etc.
  try {
    for (const name of readdirSync('/etc/alternatives')) {
      if (!/^lib.*\.so(\.\d+)*(-.*)?$/.test(name)) continue;
      const target = readlinkSync(path.join('/etc/alternatives', name));
      if (target.startsWith('/usr/')) out.push('--symlink', target, path.join('/etc/alternatives', name));
    }
  } catch {
    // no alternatives on this system
  }
  return out;
}

let links: string[] | null = null;

/**
 * A seccomp filter (classic BPF, as bubblewrap's --seccomp reads it) that refuses signals to PID 1
 * of the sandbox, the init bubblewrap leaves there: kill, tkill and tgkill of pid 1 and
 * pidfd_open(1) fail with EPERM, so a UDF that tries to kill its parent gets an error it can see
 * (from inside a PID namespace such signals would otherwise be dropped without a word). Null on
 * architectures it is not written for.
 */
export function seccompProgram(arch = process.arch): Buffer | null {
  const sys = arch === 'x64' ? { audit: 0xc000003e, nr: [62, 200, 234, 434] } : arch === 'arm64' ? { audit: 0xc00000b7, nr: [129, 130, 131, 434] } : null;
  if (!sys) return null;
  const LD = 0x20; // BPF_LD | BPF_W | BPF_ABS
  const JEQ = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
  const RET = 0x06; // BPF_RET | BPF_K
  const ALLOW = 0x7fff0000;
  const EPERM = 0x00050001;
  const [kill, tkill, tgkill, pidfdOpen] = sys.nr;
  const prog: [number, number, number, number][] = [
    [LD, 0, 0, 4], // arch
    [JEQ, 0, 8, sys.audit], // another ABI: allow
    [LD, 0, 0, 0], // syscall number
    [JEQ, 3, 0, kill],
    [JEQ, 2, 0, tkill],
    [JEQ, 1, 0, tgkill],
    [JEQ, 0, 3, pidfdOpen],
    [LD, 0, 0, 16], // first argument (low word)
    [JEQ, 0, 1, 1], // pid 1
    [RET, 0, 0, EPERM],
    [RET, 0, 0, ALLOW],
  ];
  const out = Buffer.alloc(prog.length * 8);
  prog.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}

const SECCOMP_FD = 5;

export function bwrapArgs(s: SandboxSettings, ioDir: string): string[] {
  links ??= systemLinks();
  const settings = {
    memoryBytes: s.memoryBytes,
    outputBytes: s.outputBytes,
    logBytes: s.logBytes,
    printBytes: s.printBytes,
    processes: s.processes,
    lifetimeCpuSeconds: s.lifetimeCpuSeconds,
  };
  const hide = s.hide.flatMap((p) => ['--tmpfs', p, '--remount-ro', p]);
  return [
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    '--uid',
    '1000',
    '--gid',
    '1000',
    '--hostname',
    'udf',
    '--die-with-parent',
    '--new-session',
    ...(seccompProgram() ? ['--seccomp', String(SECCOMP_FD)] : []),
    '--cap-drop',
    'ALL',
    '--clearenv',
    '--setenv',
    'HOME',
    '/tmp',
    '--setenv',
    'LANG',
    'C.UTF-8',
    '--setenv',
    'PATH',
    '/usr/bin:/bin',
    '--setenv',
    'TMPDIR',
    '/tmp',
    '--setenv',
    'OPENBLAS_NUM_THREADS',
    '1',
    '--setenv',
    'OMP_NUM_THREADS',
    '1',
    '--setenv',
    'MKL_NUM_THREADS',
    '1',
    '--setenv',
    'NUMEXPR_NUM_THREADS',
    '1',
    '--setenv',
    'MPLCONFIGDIR',
    '/tmp',
    '--ro-bind',
    '/usr',
    '/usr',
    ...links,
    ...hide,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(s.tmpBytes),
    '--tmpfs',
    '/tmp',
    '--size',
    String(Math.min(s.tmpBytes, 16 * 1024 * 1024)),
    '--tmpfs',
    '/dev/shm',
    '--remount-ro',
    '/dev',
    '--ro-bind',
    s.runnerDir,
    '/xeo',
    '--ro-bind',
    ioDir,
    '/io',
    '--bind',
    path.join(ioDir, 'out.bin'),
    '/io/out.bin',
    '--remount-ro',
    '/',
    '--chdir',
    '/tmp',
    s.python,
    '-I',
    '-B',
    '/xeo/xeo_runner.py',
    JSON.stringify(settings),
  ];
}

/** Whether the host has what the Python runtime needs; the reason when not. */
export function missingForPython(s: Pick<SandboxSettings, 'python' | 'bwrap'>): string | null {
  if (process.platform !== 'linux') return 'the Python runtime needs Linux (bubblewrap namespaces)';
  if (!existsSync(s.bwrap)) return `bubblewrap is not installed (${s.bwrap}; Debian package bubblewrap)`;
  if (!existsSync(s.python)) return `the Python interpreter ${s.python} is missing (Debian package python3)`;
  return null;
}

/** Why an interpreter ended, in words (bubblewrap passes its child's signal on as 128 + the signal's number). */
function exitText(code: number | null, signal: NodeJS.Signals | null): string {
  const name = signal ?? (code !== null && code > 128 ? Object.entries(osConstants.signals).find(([, n]) => n === code - 128)?.[0] : undefined);
  if (name === 'SIGXCPU') return "the UDF's interpreter used up its CPU time and was stopped";
  if (name) return `the UDF's interpreter was ended by ${name}`;
  return `the UDF's interpreter ended (exit code ${code})`;
}

export type ExitListener = (reason: string) => void;

/** A running sandbox and its runner, one request at a time. */
export class Sandbox {
  readonly proc: ChildProcess;
  /** The runner's libraries and versions, once it has said hello. */
  readonly hello: Promise<RunnerHello>;
  private readonly toRunner: Writable;
  private buffer: Buffer = Buffer.alloc(0);
  private pending: { resolve(r: RunnerReply): void; reject(e: Error): void } | null = null;
  private helloWait: { resolve(h: RunnerHello): void; reject(e: Error): void } | null = null;
  private exitReason: string | null = null;
  private readonly exitListeners: ExitListener[] = [];
  /** Raw standard output and error of the call under way: kept as log lines (bounded), counted. */
  private raw = { bytes: 0, kept: 0, text: '' };
  private startTimer: NodeJS.Timeout;

  private constructor(
    readonly id: string,
    readonly dir: string,
    private readonly settings: SandboxSettings,
  ) {
    const asUser = settings.uid !== null ? { uid: settings.uid, gid: settings.uid } : {};
    const filter = seccompProgram();
    this.proc = spawn(settings.bwrap, bwrapArgs(settings, dir), {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe', ...(filter ? (['pipe'] as const) : [])],
      env: { PATH: '/usr/bin:/bin' },
      detached: true,
      ...asUser,
    });
    this.toRunner = this.proc.stdio[3] as Writable;
    if (filter) {
      const fd = (this.proc.stdio as unknown as Writable[])[SECCOMP_FD];
      fd.on('error', () => {});
      fd.end(filter);
    }
    const fromRunner = this.proc.stdio[4] as Readable;
    this.hello = new Promise<RunnerHello>((resolve, reject) => (this.helloWait = { resolve, reject }));
    // awaited by start-up, which reports the failure; this only keeps it from counting as unhandled meanwhile
    this.hello.catch(() => {});
    fromRunner.on('data', (chunk: Buffer) => this.onControl(chunk));
    for (const [i, stream] of [this.proc.stdout!, this.proc.stderr!].entries()) stream.on('data', (chunk: Buffer) => this.onRaw(chunk, i === 0 ? 'info' : 'warning'));
    this.toRunner.on('error', () => {});
    fromRunner.on('error', () => {});
    this.proc.on('error', (e) => this.ended(`the sandbox could not start: ${e.message}`));
    this.proc.on('exit', (code, signal) => this.ended(exitText(code, signal)));
    this.startTimer = setTimeout(() => this.kill(`the UDF interpreter did not start within ${START_SECONDS} s`), START_SECONDS * 1000);
    this.startTimer.unref();
  }

  /** Makes the sandbox's I/O folder and starts it. */
  static async start(id: string, settings: SandboxSettings): Promise<Sandbox> {
    const dir = path.join(settings.ioRoot, id);
    await mkdir(dir, { mode: 0o755 });
    const out = path.join(dir, 'out.bin');
    await writeFile(out, '', { mode: 0o600 });
    if (settings.uid !== null) await chown(out, settings.uid, settings.uid);
    await chmod(dir, 0o755);
    return new Sandbox(id, dir, settings);
  }

  get ended_(): string | null {
    return this.exitReason;
  }

  onExit(fn: ExitListener): void {
    if (this.exitReason !== null) fn(this.exitReason);
    else this.exitListeners.push(fn);
  }

  /** Sends one request; the answer, or a rejection when the interpreter ends first. */
  request(msg: RunnerRequest): Promise<RunnerReply> {
    if (this.exitReason !== null) return Promise.reject(new Error(this.exitReason));
    if (this.pending) return Promise.reject(new Error('the interpreter is busy'));
    this.raw = { bytes: 0, kept: 0, text: '' };
    const body = Buffer.from(JSON.stringify(msg), 'utf8');
    const head = Buffer.alloc(4);
    head.writeUInt32LE(body.length);
    return new Promise<RunnerReply>((resolve, reject) => {
      this.pending = { resolve, reject };
      this.toRunner.write(Buffer.concat([head, body]));
    });
  }

  /** The raw output of the call under way, as log entries (then cleared). */
  takeRawLogs(): UdfLogEntry[] {
    const text = this.raw.text;
    this.raw = { bytes: 0, kept: 0, text: '' };
    return text
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => ({ level: l.startsWith('\u0001') ? 'warning' : 'info', message: l.replace(/^\u0001/, '') }));
  }

  /** Ends the sandbox at once (SIGKILL to its process group; bubblewrap takes the rest along). */
  kill(reason: string): void {
    if (this.exitReason === null) this.ended(reason);
    try {
      if (this.proc.pid) process.kill(-this.proc.pid, 'SIGKILL');
    } catch {
      // gone already
    }
    this.proc.kill('SIGKILL');
  }

  /** Removes the I/O folder (after the sandbox has ended). */
  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }

  private ended(reason: string): void {
    clearTimeout(this.startTimer);
    if (this.exitReason === null) this.exitReason = reason;
    const why = new Error(this.exitReason);
    this.helloWait?.reject(why);
    this.helloWait = null;
    const p = this.pending;
    this.pending = null;
    p?.reject(why);
    for (const fn of this.exitListeners.splice(0)) fn(this.exitReason);
  }

  private onRaw(chunk: Buffer, level: 'info' | 'warning'): void {
    this.raw.bytes += chunk.length;
    if (this.raw.bytes > this.settings.printBytes) {
      this.kill(`the UDF wrote more than ${this.settings.printBytes} bytes to its standard output and error`);
      return;
    }
    if (this.raw.kept >= this.settings.logBytes) return;
    const text = chunk.toString('utf8', 0, Math.min(chunk.length, this.settings.logBytes - this.raw.kept));
    this.raw.kept += text.length;
    this.raw.text += level === 'warning' ? text.replace(/(^|\n)(?=.)/g, '$1\u0001') : text;
  }

  private onControl(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    while (this.buffer.length >= 4) {
      const n = this.buffer.readUInt32LE(0);
      if (n > MAX_MESSAGE) {
        this.kill('the UDF broke the control channel of its interpreter');
        return;
      }
      if (this.buffer.length < 4 + n) return;
      const body = this.buffer.subarray(4, 4 + n);
      this.buffer = this.buffer.subarray(4 + n);
      let msg: { type?: string };
      try {
        msg = JSON.parse(body.toString('utf8'));
      } catch {
        this.kill('the UDF broke the control channel of its interpreter');
        return;
      }
      if (msg.type === 'hello' && this.helloWait) {
        clearTimeout(this.startTimer);
        this.helloWait.resolve(msg as RunnerHello);
        this.helloWait = null;
      } else if (msg.type === 'result' && this.pending) {
        const p = this.pending;
        this.pending = null;
        p.resolve(msg as RunnerReply);
      } else {
        this.kill('the UDF broke the control channel of its interpreter');
        return;
      }
    }
  }
}
