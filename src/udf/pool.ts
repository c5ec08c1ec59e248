// The warm pool of sandboxed Python interpreters (sandbox.ts), run by the UDF host thread for
// every engine thread of this process. An interpreter starts fresh (libraries imported, no user
// code), is given to one user at their first call and from then on runs only that user's UDFs;
// it is never handed to another user: when the pool is full and another user needs one, an idle
// interpreter of someone else is ended and a fresh one started. A spare fresh interpreter is kept
// started whenever the pool has room, so a new user's first call does not wait for the imports.
//
// A call is leased first: the engine thread gets the interpreter's I/O folder and writes the cube
// into its in.bin (over the pages of the previous call: tmpfs keeps them, so no page is allocated
// and zeroed again), then the call runs with a wall-time limit (the interpreter is killed when it
// passes), and the engine reads the answer from out.bin before it releases the interpreter. A
// cancel kills a running interpreter at once; an interpreter that ends is replaced.
import { truncate } from 'node:fs/promises';
import path from 'node:path';
import { ApiError, errorToData, type ErrorData } from '../core/errors.js';
import { Sandbox, type SandboxSettings } from './sandbox.js';
import type { CallSpec, RunnerHello, RunnerReply, UdfLogEntry } from './protocol.js';

export interface PoolOptions {
  /** Interpreters in all. */
  workers: number;
  /** Interpreters one user may hold while others wait. */
  perUser: number;
  /** Calls waiting for an interpreter before new ones are refused (503). */
  queue: number;
  /** Calls after which an interpreter is retired (replaced by a fresh one). */
  maxCalls: number;
  /** An interpreter idle this long is ended (its memory given back) and replaced by a fresh one. */
  idleMs: number;
  /** An interpreter idle this long gives back the pages of its data files. */
  filesIdleMs: number;
}

export interface LeaseRequest {
  id: string;
  user: string;
  timeoutMs: number;
}

export type LeaseAnswer = { ok: true; dir: string } | { ok: false; error: ErrorData };

export type PoolAnswer = { ok: true; reply: RunnerReply; output: string | null } | { ok: false; error: ErrorData; logs: UdfLogEntry[] };

interface Interp {
  sb: Sandbox;
  user: string | null;
  ready: boolean;
  busy: Active | null;
  lastUsed: number;
  calls: number;
  /** Its data files hold pages (given back when it has been idle for filesIdleMs). */
  filled: boolean;
}

interface Active {
  lease: LeaseRequest;
  interp: Interp;
  phase: 'leased' | 'running' | 'holding';
  /** Why the interpreter was ended under this call (a timeout, a cancel). */
  why?: string;
}

interface Waiting {
  lease: LeaseRequest;
  done(a: LeaseAnswer): void;
  since: number;
}

const errorData = (e: ApiError) => errorToData(e);
const failed = (e: ApiError, logs: UdfLogEntry[] = []): PoolAnswer => ({ ok: false, error: errorData(e), logs });
const CANCELLED = 'the request was cancelled';

export class SandboxPool {
  private readonly interps: Interp[] = [];
  private readonly waiting: Waiting[] = [];
  private readonly active = new Map<string, Active>();
  private next = 1;
  private closed = false;
  private sweeper: NodeJS.Timeout;
  /** The first interpreter's hello (versions), or why none starts. */
  readonly probe: Promise<RunnerHello>;
  private resolveProbe!: (h: RunnerHello) => void;
  private rejectProbe!: (e: Error) => void;
  private probed = false;
  /** Interpreters that failed to start in a row; past 3, none is started for 30 s. */
  private startFailures = 0;
  private pausedUntil = 0;

  constructor(
    private readonly settings: SandboxSettings,
    private readonly opts: PoolOptions,
  ) {
    this.probe = new Promise((resolve, reject) => {
      this.resolveProbe = resolve;
      this.rejectProbe = reject;
    });
    // the probe is awaited where readiness is asked; this only keeps an early failure from counting as unhandled
    this.probe.catch(() => {});
    this.sweeper = setInterval(() => this.sweep(), 5000);
    this.sweeper.unref();
  }

  /** Starts the first (fresh) interpreter: it answers the probe with the versions. */
  start(): void {
    if (this.opts.workers > 0) void this.spawn();
    else this.rejectProbe(new Error('XEO_UDF_WORKERS is 0'));
  }

  stats(): { interpreters: number; fresh: number; busy: number; waiting: number } {
    return {
      interpreters: this.interps.length,
      fresh: this.interps.filter((i) => i.user === null).length,
      busy: this.interps.filter((i) => i.busy).length,
      waiting: this.waiting.length,
    };
  }

  /** An interpreter of the lease's user, for one call: its I/O folder, where the caller writes in.bin. */
  lease(l: LeaseRequest): Promise<LeaseAnswer> {
    return new Promise<LeaseAnswer>((done) => {
      if (this.closed) return done({ ok: false, error: errorData(new ApiError('InfrastructureMaintenance')) });
      if (this.waiting.length >= this.opts.queue) {
        const e = new ApiError('InfrastructureBusy', {}, 'All interpreters of user-defined functions are busy and too many calls wait for one. Please retry shortly.');
        e.headers = { 'Retry-After': '2' };
        return done({ ok: false, error: errorData(e) });
      }
      this.waiting.push({ lease: l, done, since: Date.now() });
      this.pump();
    });
  }

  /** Runs the leased call; with a cube answer the interpreter stays held until release(). */
  async exec(id: string, spec: CallSpec, input: boolean): Promise<PoolAnswer> {
    const a = this.active.get(id);
    if (!a || a.phase !== 'leased') return failed(new ApiError('ClientClosedRequest'));
    const interp = a.interp;
    if (interp.sb.ended_) return this.endedUnder(a, interp.sb.ended_);
    a.phase = 'running';
    interp.calls++;
    interp.filled = true;
    const timer = setTimeout(() => {
      a.why = `it ran longer than the ${Math.round(a.lease.timeoutMs / 1000)} s one call may take and was stopped`;
      interp.sb.kill(a.why);
    }, a.lease.timeoutMs);
    try {
      const reply = await interp.sb.request({ ...spec, type: 'call', id: interp.calls, ...(input ? { input: '/io/in.bin' } : {}), cpuSeconds: Math.ceil(a.lease.timeoutMs / 1000) });
      reply.logs = [...interp.sb.takeRawLogs(), ...(Array.isArray(reply.logs) ? reply.logs : [])];
      if (reply.ok && spec.kind === 'cube') {
        // The caller reads out.bin, then releases the interpreter.
        a.phase = 'holding';
        return { ok: true, reply, output: path.join(interp.sb.dir, 'out.bin') };
      }
      this.free(a);
      return { ok: true, reply, output: null };
    } catch (e) {
      return this.endedUnder(a, interp.sb.ended_ ?? (e as Error).message);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The caller is done with the lease (the answer read, or it gave up before the call). */
  release(id: string): void {
    const a = this.active.get(id);
    if (a && a.phase !== 'running') this.free(a);
  }

  /** The caller gave up: a waiting lease is dropped, a running call ends with its interpreter. */
  cancel(id: string): void {
    const w = this.waiting.findIndex((x) => x.lease.id === id);
    if (w >= 0) {
      const [x] = this.waiting.splice(w, 1);
      x.done({ ok: false, error: errorData(new ApiError('ClientClosedRequest')) });
      return;
    }
    const a = this.active.get(id);
    if (!a) return;
    if (a.phase !== 'running') return this.free(a);
    a.why = CANCELLED;
    a.interp.sb.kill(CANCELLED);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    for (const w of this.waiting.splice(0)) w.done({ ok: false, error: errorData(new ApiError('InfrastructureMaintenance')) });
    await Promise.all(
      this.interps.splice(0).map(async (i) => {
        i.sb?.kill('the server is stopping');
        // stopping: an I/O folder that cannot be removed is in the pool's temporary root, gone with it
        await i.sb?.remove().catch(() => {});
      }),
    );
  }

  // -------------------------------------------------------------------------------------------

  private endedUnder(a: Active, reason: string): PoolAnswer {
    this.active.delete(a.lease.id);
    const why = a.why ?? reason;
    return failed(why === CANCELLED ? new ApiError('ClientClosedRequest') : new ApiError('UdfFailed', { reason: why }), a.interp.sb.takeRawLogs());
  }

  private free(a: Active): void {
    this.active.delete(a.lease.id);
    const interp = a.interp;
    if (interp.busy !== a) return;
    interp.busy = null;
    interp.lastUsed = Date.now();
    if (interp.calls >= this.opts.maxCalls) interp.sb.kill('retired after its share of calls');
    this.pump();
  }

  private async spawn(): Promise<void> {
    if (this.closed || Date.now() < this.pausedUntil) return;
    const id = `sb-${process.pid}-${this.next++}`;
    const interp = { sb: null as unknown as Sandbox, user: null, ready: false, busy: null, lastUsed: Date.now(), calls: 0, filled: false } as Interp;
    this.interps.push(interp);
    let sb: Sandbox;
    try {
      sb = await Sandbox.start(id, this.settings);
    } catch (e) {
      this.drop(interp);
      this.failProbe(e as Error);
      return;
    }
    interp.sb = sb;
    sb.onExit(() => this.onExit(interp));
    try {
      const hello = await sb.hello;
      interp.ready = true;
      this.startFailures = 0;
      if (!this.probed) {
        this.probed = true;
        this.resolveProbe(hello);
      }
    } catch (e) {
      const why = `${(e as Error).message}${describeStartFailure(sb.takeRawLogs())}`;
      if (++this.startFailures >= 3) {
        this.pausedUntil = Date.now() + 30_000;
        console.error(`[xeo] UDF interpreters fail to start (${why}); trying again in 30 s`);
      }
      this.failProbe(new Error(why));
      return;
    }
    this.pump();
  }

  private failProbe(e: Error): void {
    if (this.probed) return;
    this.probed = true;
    this.rejectProbe(e);
    // Without a working interpreter every waiting call fails now, not at its timeout.
    for (const w of this.waiting.splice(0)) w.done({ ok: false, error: errorData(new ApiError('UdfFailed', { reason: `the Python runtime cannot start: ${e.message}` })) });
  }

  private drop(interp: Interp): void {
    const k = this.interps.indexOf(interp);
    if (k >= 0) this.interps.splice(k, 1);
  }

  private onExit(interp: Interp): void {
    this.drop(interp);
    // an I/O folder that cannot be removed is in the pool's temporary root, gone with it
    void interp.sb.remove().catch(() => {});
    // A running call learns it from its request; a lease not yet running fails when it runs.
    const a = interp.busy;
    if (a && a.phase === 'holding') this.active.delete(a.lease.id);
    // Keep the pool warm: a fresh interpreter takes the place of the one that ended.
    if (!this.closed && this.probed && this.interps.length < this.opts.workers) void this.spawn();
    this.pump();
  }

  /** Gives waiting leases interpreters, in order of arrival. */
  private pump(): void {
    if (this.closed) return;
    for (let k = 0; k < this.waiting.length;) {
      const w = this.waiting[k];
      const interp = this.pick(w.lease.user);
      if (interp === 'wait') {
        k++;
        continue;
      }
      this.waiting.splice(k, 1);
      const a: Active = { lease: w.lease, interp, phase: 'leased' };
      interp.busy = a;
      this.active.set(w.lease.id, a);
      w.done({ ok: true, dir: interp.sb.dir });
    }
    // A spare: one fresh interpreter started whenever there is room for it.
    const fresh = this.interps.filter((i) => i.user === null).length;
    if (this.probed && fresh === 0 && this.interps.length < this.opts.workers) void this.spawn();
  }

  private pick(user: string): Interp | 'wait' {
    const own = this.interps.filter((i) => i.user === user);
    const idleOwn = own.find((i) => i.ready && !i.busy);
    if (idleOwn) return idleOwn;
    if (own.length >= this.opts.perUser && own.length > 0) return 'wait';
    const fresh = this.interps.find((i) => i.user === null && i.ready && !i.busy);
    if (fresh) {
      fresh.user = user;
      return fresh;
    }
    // A fresh one still starting will do: wait for it rather than end someone's interpreter.
    if (this.interps.some((i) => i.user === null && !i.ready)) return 'wait';
    if (this.interps.length < this.opts.workers) {
      void this.spawn();
      return 'wait';
    }
    // Full: end the longest-idle interpreter of another user to make room for a fresh one.
    const victim = this.interps.filter((i) => i.user !== null && i.user !== user && i.ready && !i.busy).sort((a, b) => a.lastUsed - b.lastUsed)[0];
    victim?.sb.kill('its place in the pool went to another user');
    return 'wait';
  }

  /** Ends interpreters idle for long, gives back the data pages of those idle for a while, times out waiting leases. */
  private sweep(): void {
    const now = Date.now();
    for (const i of this.interps) {
      if (i.user === null || !i.ready || i.busy) continue;
      if (now - i.lastUsed > this.opts.idleMs) i.sb.kill('idle');
      else if (i.filled && now - i.lastUsed > this.opts.filesIdleMs) {
        i.filled = false;
        // only gives pages back early: the next call writes over a file that could not be cut
        for (const f of ['in.bin', 'out.bin']) void truncate(path.join(i.sb.dir, f), 0).catch(() => {});
      }
    }
    for (let k = 0; k < this.waiting.length;) {
      const w = this.waiting[k];
      if (now - w.since > w.lease.timeoutMs) {
        this.waiting.splice(k, 1);
        const e = new ApiError('InfrastructureBusy', {}, 'No interpreter for user-defined functions became free in time. Please retry shortly.');
        e.headers = { 'Retry-After': '5' };
        w.done({ ok: false, error: errorData(e) });
      } else k++;
    }
  }
}

/** Why an interpreter did not start, from what it printed (a missing library, mostly). */
function describeStartFailure(logs: UdfLogEntry[]): string {
  const text = logs.map((l) => l.message).join('\n');
  const m = /No module named '([\w.]+)'/.exec(text);
  if (m) {
    const lib = m[1].split('.')[0];
    return `: the Python library ${lib} is not installed (Debian package python3-${lib.toLowerCase()})`;
  }
  const last = logs.filter((l) => l.message.trim()).slice(-1)[0];
  return last ? `: ${last.message.slice(0, 300)}` : '';
}
