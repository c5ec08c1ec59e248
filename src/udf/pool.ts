// The warm pool of sandboxed Python interpreters (sandbox.ts), run by the UDF host thread for
// every engine thread of this process. An interpreter starts fresh (libraries imported, no user
// code), is given to one user at their first call and from then on runs only that user's UDFs;
// it is never handed to another user: when the pool is full and another user needs one, an idle
// interpreter of someone else is ended and a fresh one started. A spare fresh interpreter is kept
// started whenever the pool has room, so a new user's first call does not wait for the imports.
// Each call has a wall-time limit (the interpreter is killed when it passes), a cancel kills it at
// once, and an interpreter that ends is replaced.
import { rename, truncate, unlink } from 'node:fs/promises';
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
}

export interface PoolCall {
  id: string;
  user: string;
  timeoutMs: number;
  /** A staged raw float32 file, renamed into the interpreter's folder; null for JSON calls. */
  input: string | null;
  spec: CallSpec;
}

export type PoolAnswer =
  | { ok: true; reply: RunnerReply; output: string | null }
  | { ok: false; error: ErrorData; logs: UdfLogEntry[] };

interface Interp {
  sb: Sandbox;
  user: string | null;
  ready: boolean;
  busy: Running | null;
  lastUsed: number;
  calls: number;
}

interface Running {
  call: PoolCall;
  done(a: PoolAnswer): void;
  /** Set when the answer file is being read: the interpreter is freed by release(). */
  holding: boolean;
  why?: string;
}

interface Waiting {
  call: PoolCall;
  done(a: PoolAnswer): void;
  since: number;
}

const failed = (e: ApiError, logs: UdfLogEntry[] = []): PoolAnswer => ({ ok: false, error: errorToData(e), logs });

export class SandboxPool {
  private readonly interps: Interp[] = [];
  private readonly waiting: Waiting[] = [];
  private readonly running = new Map<string, { interp: Interp; run: Running }>();
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
    this.probe.catch(() => {});
    this.sweeper = setInterval(() => this.sweep(), 5000);
    this.sweeper.unref();
  }

  /** Starts the first (fresh) interpreter: it answers the probe with the versions. */
  start(): void {
    if (this.opts.workers > 0) void this.spawn(null);
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

  /** Runs a call on an interpreter of its user; the answer file (if any) stays valid until release(). */
  run(call: PoolCall): Promise<PoolAnswer> {
    return new Promise<PoolAnswer>((done) => {
      if (this.closed) return done(failed(new ApiError('InfrastructureMaintenance')));
      if (this.waiting.length >= this.opts.queue) {
        const e = new ApiError('InfrastructureBusy', {}, 'All interpreters of user-defined functions are busy and too many calls wait for one. Please retry shortly.');
        e.headers = { 'Retry-After': '2' };
        void this.discard(call.input);
        return done(failed(e));
      }
      this.waiting.push({ call, done, since: Date.now() });
      this.pump();
    });
  }

  /** The caller has read the answer: the interpreter is free again. */
  release(id: string): void {
    const r = this.running.get(id);
    if (!r || !r.run.holding) return;
    this.running.delete(id);
    void this.free(r.interp);
  }

  /** The caller gave up: a waiting call is dropped, a running one ends with its interpreter. */
  cancel(id: string): void {
    const w = this.waiting.findIndex((x) => x.call.id === id);
    if (w >= 0) {
      const [x] = this.waiting.splice(w, 1);
      void this.discard(x.call.input);
      x.done(failed(new ApiError('ClientClosedRequest')));
      return;
    }
    const r = this.running.get(id);
    if (!r) return;
    if (r.run.holding) return this.release(id);
    r.run.why = 'the request was cancelled';
    r.interp.sb.kill('the request was cancelled');
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    for (const w of this.waiting.splice(0)) w.done(failed(new ApiError('InfrastructureMaintenance')));
    await Promise.all(this.interps.splice(0).map(async (i) => {
      i.sb.kill('the server is stopping');
      await i.sb.remove().catch(() => {});
    }));
  }

  // -------------------------------------------------------------------------------------------

  private count(user: string | null): number {
    return this.interps.filter((i) => i.user === user).length;
  }

  private async spawn(user: string | null): Promise<void> {
    if (this.closed || Date.now() < this.pausedUntil) return;
    const id = `sb-${process.pid}-${this.next++}`;
    let sb: Sandbox;
    const interp = { sb: null as unknown as Sandbox, user, ready: false, busy: null, lastUsed: Date.now(), calls: 0 } as Interp;
    this.interps.push(interp);
    try {
      sb = await Sandbox.start(id, this.settings);
    } catch (e) {
      this.drop(interp);
      this.failProbe(e as Error);
      return;
    }
    interp.sb = sb;
    sb.onExit((reason) => this.onExit(interp, reason));
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
    for (const w of this.waiting.splice(0)) w.done(failed(new ApiError('UdfFailed', { reason: `the Python runtime cannot start: ${e.message}` })));
  }

  private drop(interp: Interp): void {
    const k = this.interps.indexOf(interp);
    if (k >= 0) this.interps.splice(k, 1);
  }

  private onExit(interp: Interp, reason: string): void {
    this.drop(interp);
    void interp.sb.remove().catch(() => {});
    const run = interp.busy;
    if (run) {
      this.running.delete(run.call.id);
      const why = run.why ?? reason;
      run.done(failed(run.why === 'the request was cancelled' ? new ApiError('ClientClosedRequest') : new ApiError('UdfFailed', { reason: why }), interp.sb.takeRawLogs()));
    }
    // Keep the pool warm: a fresh interpreter takes the place of the one that ended.
    if (!this.closed && this.probed && this.interps.length < this.opts.workers) void this.spawn(null);
    this.pump();
  }

  /** Gives waiting calls interpreters, in order of arrival. */
  private pump(): void {
    if (this.closed) return;
    for (let k = 0; k < this.waiting.length; ) {
      const w = this.waiting[k];
      const interp = this.pick(w.call.user);
      if (interp === 'wait') {
        k++;
        continue;
      }
      this.waiting.splice(k, 1);
      void this.execute(interp, w);
    }
    // A spare: one fresh interpreter started whenever there is room for it.
    const fresh = this.interps.filter((i) => i.user === null).length;
    if (this.probed && fresh === 0 && this.interps.length < this.opts.workers) void this.spawn(null);
  }

  private pick(user: string): Interp | 'wait' {
    const own = this.interps.filter((i) => i.user === user);
    const idleOwn = own.find((i) => i.ready && !i.busy);
    if (idleOwn) return idleOwn;
    const mayGrow = own.length < this.opts.perUser || own.length === 0;
    if (!mayGrow) return 'wait';
    const fresh = this.interps.find((i) => i.user === null && i.ready && !i.busy);
    if (fresh) {
      fresh.user = user;
      return fresh;
    }
    // A fresh one still starting will do: wait for it rather than end someone's interpreter.
    if (this.interps.some((i) => i.user === null && !i.ready)) return 'wait';
    if (this.interps.length < this.opts.workers) {
      void this.spawn(null);
      return 'wait';
    }
    // Full: end the longest-idle interpreter of another user to make room for a fresh one.
    const victim = this.interps
      .filter((i) => i.user !== null && i.user !== user && i.ready && !i.busy)
      .sort((a, b) => a.lastUsed - b.lastUsed)[0];
    if (victim) {
      victim.sb.kill('its place in the pool went to another user');
      return 'wait';
    }
    return 'wait';
  }

  private async execute(interp: Interp, w: Waiting): Promise<void> {
    const { call } = w;
    const run: Running = { call, done: w.done, holding: false };
    interp.busy = run;
    interp.calls++;
    this.running.set(call.id, { interp, run });
    const timer = setTimeout(() => {
      run.why = `it ran longer than the ${Math.round(call.timeoutMs / 1000)} s one call may take and was stopped`;
      interp.sb.kill(run.why);
    }, call.timeoutMs);
    try {
      if (call.input) await rename(call.input, path.join(interp.sb.dir, 'in.bin'));
      const reply = await interp.sb.request({
        ...call.spec,
        type: 'call',
        id: interp.calls,
        ...(call.input ? { input: '/io/in.bin' } : {}),
        cpuSeconds: Math.ceil(call.timeoutMs / 1000),
      });
      clearTimeout(timer);
      reply.logs = [...interp.sb.takeRawLogs(), ...(Array.isArray(reply.logs) ? reply.logs : [])];
      if (reply.ok && call.spec.kind === 'cube') {
        // The caller reads out.bin, then releases the interpreter.
        run.holding = true;
        run.done({ ok: true, reply, output: path.join(interp.sb.dir, 'out.bin') });
        return;
      }
      this.running.delete(call.id);
      run.done({ ok: true, reply, output: null });
      await this.free(interp);
    } catch (e) {
      clearTimeout(timer);
      // The interpreter ended (onExit answers the call), or the input could not be moved.
      if (interp.busy === run && !interp.sb.ended_) {
        this.running.delete(call.id);
        interp.busy = null;
        run.done(failed(new ApiError('UdfFailed', { reason: (e as Error).message })));
        this.pump();
      }
      void this.discard(call.input);
    }
  }

  private async free(interp: Interp): Promise<void> {
    await unlink(path.join(interp.sb.dir, 'in.bin')).catch(() => {});
    await truncate(path.join(interp.sb.dir, 'out.bin'), 0).catch(() => {});
    interp.busy = null;
    interp.lastUsed = Date.now();
    if (interp.calls >= this.opts.maxCalls) interp.sb.kill('retired after its share of calls');
    this.pump();
  }

  private async discard(file: string | null): Promise<void> {
    if (file) await unlink(file).catch(() => {});
  }

  /** Ends interpreters idle for long (given to a user: their memory comes back, a fresh one follows). */
  private sweep(): void {
    const now = Date.now();
    for (const i of this.interps) {
      if (i.user !== null && i.ready && !i.busy && now - i.lastUsed > this.opts.idleMs) i.sb.kill('idle');
    }
    // Calls that waited for an interpreter longer than their own time limit give up.
    for (let k = 0; k < this.waiting.length; ) {
      const w = this.waiting[k];
      if (now - w.since > w.call.timeoutMs) {
        this.waiting.splice(k, 1);
        void this.discard(w.call.input);
        const e = new ApiError('InfrastructureBusy', {}, 'No interpreter for user-defined functions became free in time. Please retry shortly.');
        e.headers = { 'Retry-After': '5' };
        w.done(failed(e));
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
