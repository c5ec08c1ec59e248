// Liveness and readiness. /healthz says the event loop answers and touches nothing else. /readyz
// asks each component this node uses (records, queue, object store, compute threads, identity
// providers) through a probe with its own short deadline: one probe of a component at a time, its
// answer kept for a moment, so a hung database makes /readyz answer 503 within the deadline instead
// of hanging, and a flood of readiness checks never piles probes onto a component in trouble.
import { gauge } from '../core/metrics.js';
import { redact } from '../core/log.js';

/** A component's check: resolves (optionally with a detail for the answer) when it is usable. */
export interface Probe {
  /** e.g. `records`, `identity provider egi`. */
  name: string;
  /** What it is: records, queue, object store, compute, identity provider. */
  kind: string;
  /** e.g. `postgresql`, `sqlite`, `redis`, `s3`. */
  engine?: string;
  check(signal: AbortSignal): Promise<string | void> | string | void;
}

export interface ComponentState {
  name: string;
  kind: string;
  engine?: string;
  status: 'ready' | 'not ready';
  latency_ms: number;
  detail?: string;
}

interface Tracked {
  probe: Probe;
  /** The probe under way (its raw check, possibly past its deadline) and when it began. */
  running: Promise<ComponentState> | null;
  startedAt: number;
  last: ComponentState | null;
  lastAt: number;
}

/** How long one probe may take before its component counts as not ready. */
export const PROBE_DEADLINE_MS = 2000;
/** How long an answer is reused. */
export const PROBE_CACHE_MS = 1000;

export class Readiness {
  private readonly tracked: Tracked[];
  /** Set on SIGTERM: the node says it is not ready before it stops taking connections. */
  draining = false;

  constructor(
    probes: Probe[],
    private readonly deadlineMs = PROBE_DEADLINE_MS,
    private readonly cacheMs = PROBE_CACHE_MS,
  ) {
    this.tracked = probes.map((probe) => ({ probe, running: null, startedAt: 0, last: null, lastAt: 0 }));
    gauge('xeo_component_ready', 'Whether each component this node uses answered its last readiness probe (1) or not (0).', ['component'], () =>
      this.tracked.filter((t) => t.last).map((t) => ({ labels: { component: t.probe.name }, value: t.last!.status === 'ready' ? 1 : 0 })),
    );
  }

  /** Every component's state (probed now, or the answer of the last second). */
  async report(): Promise<{ ready: boolean; status: 'ready' | 'not ready' | 'draining'; components: ComponentState[]; not_ready: string[] }> {
    const components = await Promise.all(this.tracked.map((t) => this.state(t)));
    const notReady = components.filter((c) => c.status !== 'ready').map((c) => c.name);
    const ready = !this.draining && notReady.length === 0;
    return { ready, status: this.draining ? 'draining' : ready ? 'ready' : 'not ready', components, not_ready: this.draining ? ['node (draining: it is stopping)', ...notReady] : notReady };
  }

  private state(t: Tracked): Promise<ComponentState> {
    const now = performance.now();
    if (t.last && now - t.lastAt < this.cacheMs) return Promise.resolve(t.last);
    if (!t.running) {
      t.startedAt = now;
      t.running = this.run(t);
    }
    // Whether new or still under way, nobody waits past the deadline of the probe under way.
    const left = Math.max(0, this.deadlineMs - (now - t.startedAt));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<ComponentState>((resolve) => {
      timer = setTimeout(() => {
        const waited = performance.now() - t.startedAt;
        // A probe that outlived its deadline (its component ignores the cancel) is not joined by more.
        const detail = waited < this.deadlineMs * 1.5 ? `no answer within ${this.deadlineMs} ms` : `no answer for ${Math.round(waited)} ms (one probe at a time)`;
        const s: ComponentState = { ...this.base(t.probe), status: 'not ready', latency_ms: round(waited), detail };
        t.last = s;
        t.lastAt = performance.now();
        resolve(s);
      }, left);
    });
    return Promise.race([t.running, late]).finally(() => clearTimeout(timer));
  }

  private async run(t: Tracked): Promise<ComponentState> {
    const ac = new AbortController();
    const stop = setTimeout(() => ac.abort(new Error('deadline')), this.deadlineMs);
    const t0 = performance.now();
    let s: ComponentState;
    try {
      const detail = await t.probe.check(ac.signal);
      s = { ...this.base(t.probe), status: 'ready', latency_ms: round(performance.now() - t0), ...(detail ? { detail } : {}) };
    } catch (e) {
      const late = ac.signal.aborted;
      s = { ...this.base(t.probe), status: 'not ready', latency_ms: round(performance.now() - t0), detail: late ? `no answer within ${this.deadlineMs} ms` : redact((e as Error).message ?? String(e)) };
    } finally {
      clearTimeout(stop);
    }
    t.last = s;
    t.lastAt = performance.now();
    // Only now may another probe of this component start: a hung one is never joined by more.
    t.running = null;
    return s;
  }

  private base(p: Probe): Pick<ComponentState, 'name' | 'kind' | 'engine'> {
    return { name: p.name, kind: p.kind, ...(p.engine ? { engine: p.engine } : {}) };
  }
}

const round = (ms: number) => Math.round(ms * 10) / 10;
