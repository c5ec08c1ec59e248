// Counters and histograms that every layer feeds and server/metrics.ts publishes in the Prometheus
// format when scraped. Dependency-free and cheap where it matters: a series is a slot of a
// preallocated Float64Array, chosen once (at module load or construction), and feeding it is a
// plain number increment; label objects, string keys and the exposition exist only at scrape time.
// Engine threads (compute and job threads) keep their own copies of these counters and send what
// changed to the main thread once a second (shipMetrics / metricsPortForThread).
import { MessageChannel, type MessagePort } from 'node:worker_threads';

export type LabelValues = Record<string, string>;

/** Upper bounds (seconds) of latency histograms: 0.5 ms to 30 s. */
export const LATENCY_BOUNDS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** A family of series over fixed label values: every combination has its slot(s) in `data`. */
abstract class Grid {
  /** How many combinations of label values. */
  readonly size: number;
  readonly labelNames: readonly string[];
  private readonly strides: number[];
  abstract readonly data: Float64Array;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labels: Readonly<Record<string, readonly string[]>>,
  ) {
    this.labelNames = Object.keys(labels);
    this.strides = [];
    let size = 1;
    for (let i = this.labelNames.length - 1; i >= 0; i--) {
      this.strides[i] = size;
      size *= labels[this.labelNames[i]].length;
    }
    this.size = size;
  }

  /** The slot of one combination of label values: look it up once, outside hot paths. */
  slot(values: LabelValues): number {
    let s = 0;
    this.labelNames.forEach((n, i) => {
      const idx = this.labels[n].indexOf(values[n]);
      if (idx < 0) throw new Error(`metric ${this.name}: '${values[n]}' is not a value of label ${n}`);
      s += idx * this.strides[i];
    });
    return s;
  }

  /** The label values of a slot (for the exposition). */
  labelsOf(slot: number): LabelValues {
    const out: LabelValues = {};
    this.labelNames.forEach((n, i) => (out[n] = this.labels[n][Math.floor(slot / this.strides[i]) % this.labels[n].length]));
    return out;
  }
}

/** Counters over fixed label values. */
export class CounterGrid extends Grid {
  readonly data: Float64Array;
  constructor(name: string, help: string, labels: Readonly<Record<string, readonly string[]>> = {}) {
    super(name, help, labels);
    this.data = new Float64Array(this.size);
    register(this);
  }

  inc(slot: number, n = 1): void {
    this.data[slot] += n;
  }
}

/**
 * Histograms over fixed label values, all with the same bucket bounds. `data` holds, per slot,
 * its bucket counts (not cumulative; the last bucket is +Inf), then every slot's sum, then every
 * slot's count.
 */
export class HistogramGrid extends Grid {
  readonly data: Float64Array;
  private readonly width: number;
  private readonly sumsAt: number;
  private readonly countsAt: number;

  constructor(
    name: string,
    help: string,
    labels: Readonly<Record<string, readonly string[]>>,
    readonly bounds: readonly number[] = LATENCY_BOUNDS,
  ) {
    super(name, help, labels);
    this.width = bounds.length + 1;
    this.sumsAt = this.size * this.width;
    this.countsAt = this.sumsAt + this.size;
    this.data = new Float64Array(this.countsAt + this.size);
    register(this);
  }

  observe(slot: number, value: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > b[i]) i++;
    const d = this.data;
    d[slot * this.width + i]++;
    d[this.sumsAt + slot] += value;
    d[this.countsAt + slot]++;
  }

  /** Cumulative bucket counts of a slot, then its sum and count (for the exposition). */
  read(slot: number): { buckets: number[]; sum: number; count: number } {
    const buckets: number[] = [];
    let acc = 0;
    for (let i = 0; i < this.width; i++) buckets.push((acc += this.data[slot * this.width + i]));
    return { buckets, sum: this.data[this.sumsAt + slot], count: this.data[this.countsAt + slot] };
  }
}

/**
 * Counters whose label values are known only as they come (the host of an outbound request, a UDF
 * runtime): one small array per combination, at most `maxKeys` of them (later ones count under
 * the value `other`). For paths where a string key per event is affordable, never for tiles.
 */
export class KeyedCounters {
  readonly entries = new Map<string, { labels: LabelValues; data: Float64Array }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    /** Several counters per combination share one entry: e.g. requests and bytes. */
    readonly fields: readonly { suffix: string; help: string }[],
    private readonly maxKeys = 500,
  ) {
    register(this);
  }

  /** Adds `n` to field `field` of the combination `values` (in labelNames order). */
  add(values: readonly string[], field: number, n = 1): void {
    let key = values.join('\n');
    let e = this.entries.get(key);
    if (!e) {
      if (this.entries.size >= this.maxKeys) {
        values = values.map(() => 'other');
        key = values.join('\n');
        e = this.entries.get(key);
      }
      if (!e) {
        const labels: LabelValues = {};
        this.labelNames.forEach((n2, i) => (labels[n2] = values[i]));
        this.entries.set(key, (e = { labels, data: new Float64Array(this.fields.length) }));
      }
    }
    e.data[field] += n;
  }
}

/** A value read when scraped (threads busy, cache bytes): set by the part that knows it. */
export interface GaugeSource {
  name: string;
  help: string;
  labelNames: readonly string[];
  /** The values now; a promise for a value that must be asked for (bounded in time by its source). */
  read(): GaugeRows | Promise<GaugeRows>;
}

export type GaugeRows = { labels: LabelValues; value: number }[];

export type Metric = CounterGrid | HistogramGrid | KeyedCounters;

const metrics = new Map<string, Metric>();
const gauges = new Map<string, GaugeSource>();

function register(m: Metric): void {
  if (metrics.has(m.name)) throw new Error(`metric ${m.name} is declared twice`);
  metrics.set(m.name, m);
}

/** Every counter and histogram, in the order declared. */
export function allMetrics(): Metric[] {
  return [...metrics.values()];
}

/** Declares (or, from a newer instance of the same part, replaces) a gauge read at scrape time. */
export function gauge(name: string, help: string, labelNames: readonly string[], read: GaugeSource['read']): void {
  gauges.set(name, { name, help, labelNames, read });
}

export function allGauges(): GaugeSource[] {
  return [...gauges.values()];
}

// ---------------------------------------------------------------------------------------------
// Shipping between threads: an engine thread sends what changed since its last message.

type Delta = { name: string; data: Float64Array } | { name: string; keyed: [string[], Float64Array][] };

const shipped = new Map<string, Float64Array>();

function deltas(): Delta[] {
  const out: Delta[] = [];
  for (const m of metrics.values()) {
    if (m instanceof KeyedCounters) {
      const keyed: [string[], Float64Array][] = [];
      for (const [key, e] of m.entries) {
        const prevKey = `${m.name}\n${key}`;
        const d = diff(e.data, shipped.get(prevKey));
        if (d) {
          keyed.push([m.labelNames.map((n) => e.labels[n]), d]);
          shipped.set(prevKey, e.data.slice());
        }
      }
      if (keyed.length) out.push({ name: m.name, keyed });
      continue;
    }
    const d = diff(m.data, shipped.get(m.name));
    if (d) {
      out.push({ name: m.name, data: d });
      shipped.set(m.name, m.data.slice());
    }
  }
  return out;
}

function diff(now: Float64Array, before: Float64Array | undefined): Float64Array | null {
  let changed = false;
  const d = new Float64Array(now.length);
  for (let i = 0; i < now.length; i++) {
    d[i] = now[i] - (before ? before[i] : 0);
    if (d[i] !== 0) changed = true;
  }
  return changed ? d : null;
}

/** Adds what another thread counted to this thread's counters. */
export function mergeMetrics(list: Delta[]): void {
  for (const d of list) {
    const m = metrics.get(d.name);
    if (!m) continue;
    if ('keyed' in d) {
      if (!(m instanceof KeyedCounters)) continue;
      for (const [values, data] of d.keyed) data.forEach((n, field) => n && m.add(values, field, n));
      continue;
    }
    if (m instanceof KeyedCounters || m.data.length !== d.data.length) continue;
    for (let i = 0; i < d.data.length; i++) m.data[i] += d.data[i];
  }
}

/** Main thread: a port for a new engine thread, whose counters are added to ours as they come. */
export function metricsPortForThread(): MessagePort {
  const { port1, port2 } = new MessageChannel();
  port1.on('message', (list: Delta[]) => mergeMetrics(list));
  port1.unref();
  return port2;
}

/** Forgets what this thread counted so far (a thread's warm-up is not work to count). */
export function resetMetrics(): void {
  for (const m of metrics.values()) {
    if (m instanceof KeyedCounters) m.entries.clear();
    else m.data.fill(0);
  }
  shipped.clear();
}

/** Engine thread: sends what its counters gained to the main thread, once a second. */
export function shipMetrics(port: MessagePort | null | undefined, everyMs = 1000): void {
  if (!port) return;
  const send = () => {
    const list = deltas();
    if (list.length) port.postMessage(list);
  };
  setInterval(send, everyMs).unref();
}

// ---------------------------------------------------------------------------------------------
// The series the layers below the server feed (the server's own are in server/metrics.ts).

const TILE_RESULTS = ['hit', 'miss', 'shared', 'empty', 'shed', 'failed'] as const;
export type TileResult = (typeof TILE_RESULTS)[number];

/** Tiles answered, by layer kind and cache result. */
export const tileAnswers = new CounterGrid(
  'xeo_tiles_total',
  'Map tiles asked for, by layer (a service or a collection preview) and result: hit (from the cache), miss (rendered), shared (joined a render in flight), empty (outside the data, not rendered), shed (refused: compute full), failed.',
  {
    layer: ['service', 'preview'],
    result: TILE_RESULTS,
  },
);
/** Slots of tileAnswers, by layer then result, for the tile path. */
export const TILE_SLOTS = {
  service: Object.fromEntries(TILE_RESULTS.map((r) => [r, tileAnswers.slot({ layer: 'service', result: r })])) as Record<TileResult, number>,
  preview: Object.fromEntries(TILE_RESULTS.map((r) => [r, tileAnswers.slot({ layer: 'preview', result: r })])) as Record<TileResult, number>,
};

export const RENDER_STAGES = ['read', 'warp', 'kernel', 'encode', 'total'] as const;
export const tileStages = new HistogramGrid('xeo_tile_render_stage_seconds', 'Time of each stage of rendering a map tile on a compute thread.', { stage: RENDER_STAGES });
export const TILE_STAGE_SLOTS = RENDER_STAGES.map((stage) => tileStages.slot({ stage }));

const POOLS = ['compute', 'jobs'] as const;
const TASK_OUTCOMES = ['ok', 'failed', 'canceled', 'shed'] as const;
/** Tasks of the thread pools: graphs of /result and tiles on the compute threads, jobs and chunks on the job threads. */
export const poolTasks = new CounterGrid('xeo_thread_tasks_total', 'Tasks of the thread pools by outcome; shed: refused at once because every thread and the queue were full.', {
  pool: POOLS,
  outcome: TASK_OUTCOMES,
});
export const poolTaskSlot = (pool: (typeof POOLS)[number], outcome: (typeof TASK_OUTCOMES)[number]) => poolTasks.slot({ pool, outcome });

export const JOB_STATUSES = ['queued', 'running', 'finished', 'error', 'canceled', 'created'] as const;
export const jobTransitions = new CounterGrid('xeo_job_transitions_total', 'Batch jobs reaching a status, as recorded by this process (created: back to created after a cancel or a stop).', {
  status: JOB_STATUSES,
});
export const jobChunksDone = new CounterGrid('xeo_job_chunks_done_total', 'Chunks of batch jobs computed by this process (its job threads).');

/** Outbound requests for remote data: requests and bytes by host, kind and outcome. */
export const outbound = new KeyedCounters(
  'xeo_outbound',
  'Outbound HTTP requests for remote data',
  ['host', 'kind', 'outcome'],
  [
    {
      suffix: '_requests_total',
      help: 'Outbound HTTP requests for remote data (kind: read = ranges of remote files, search = STAC API item searches, document = STAC documents, token = asset signing), by host and outcome (ok, http_error, failed, refused).',
    },
    { suffix: '_bytes_total', help: 'Body bytes brought by outbound HTTP requests, by host, kind and outcome.' },
  ],
);
export const OUTBOUND_KINDS = ['read', 'search', 'document', 'token'] as const;
export type OutboundKind = (typeof OUTBOUND_KINDS)[number];
export const outboundSeconds = new HistogramGrid('xeo_outbound_request_seconds', 'Time of outbound HTTP requests for remote data (retries included), by kind.', { kind: OUTBOUND_KINDS });
export const OUTBOUND_SLOTS = Object.fromEntries(OUTBOUND_KINDS.map((k) => [k, outboundSeconds.slot({ kind: k })])) as Record<OutboundKind, number>;

export const COMPONENTS = ['records', 'queue', 'object_store'] as const;
export type ComponentName = (typeof COMPONENTS)[number];
/** Calls to the servers a node depends on: PostgreSQL or SQLite, Redis, the S3-compatible store. */
export const componentCalls = new CounterGrid('xeo_component_calls_total', 'Calls to the record store (statements), the job queue (Redis commands of Xeo) and the object store (S3 requests), by outcome.', {
  component: COMPONENTS,
  outcome: ['ok', 'error'],
});
export const componentSeconds = new HistogramGrid('xeo_component_call_seconds', 'Time of calls to the record store, the job queue and the object store.', { component: COMPONENTS });
const COMPONENT_SLOTS = Object.fromEntries(
  COMPONENTS.map((c) => [c, { ok: componentCalls.slot({ component: c, outcome: 'ok' }), error: componentCalls.slot({ component: c, outcome: 'error' }), seconds: componentSeconds.slot({ component: c }) }]),
) as Record<ComponentName, { ok: number; error: number; seconds: number }>;

/** Counts one call to a component, with its time in milliseconds. */
export function countCall(component: ComponentName, ok: boolean, ms: number): void {
  const s = COMPONENT_SLOTS[component];
  componentCalls.inc(ok ? s.ok : s.error);
  componentSeconds.observe(s.seconds, ms / 1000);
}

/** Times a promise as a call to `component`. */
export function timedCall<T>(component: ComponentName, work: Promise<T>): Promise<T> {
  const t0 = performance.now();
  return work.then(
    (v) => {
      countCall(component, true, performance.now() - t0);
      return v;
    },
    (e: unknown) => {
      countCall(component, false, performance.now() - t0);
      throw e;
    },
  );
}

/** UDF calls, by runtime and outcome (fed by the UDF runtimes). */
export const udfCalls = new KeyedCounters(
  'xeo_udf',
  'User-defined function calls',
  ['runtime', 'outcome'],
  [
    { suffix: '_calls_total', help: 'Calls of user-defined functions, by runtime and outcome (ok, error, timeout, canceled).' },
    { suffix: '_seconds_total', help: 'Seconds spent in user-defined functions, by runtime and outcome.' },
  ],
);
export const udfSeconds = new HistogramGrid('xeo_udf_call_seconds', 'Time of one call of a user-defined function (all runtimes).', {});

/** Counts one UDF call: its runtime (e.g. Python), how it ended and how long it took (seconds). */
export function countUdfCall(runtime: string, outcome: 'ok' | 'error' | 'timeout' | 'canceled', seconds: number): void {
  udfCalls.add([runtime, outcome], 0, 1);
  udfCalls.add([runtime, outcome], 1, seconds);
  udfSeconds.observe(0, seconds);
}

/**
 * A gauge's value that must be asked for (a count of records, say): at most `ms` of waiting at a
 * scrape; a source that fails or is late gives no value this time rather than holding /metrics.
 */
export function askedGauge(name: string, help: string, ask: () => Promise<number>, ms = 1000): void {
  gauge(name, help, [], async () => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)));
    try {
      // a source that fails has no value this scrape, as one that is late
      const v = await Promise.race([ask().catch(() => null), late]);
      return v === null ? [] : [{ labels: {}, value: v }];
    } finally {
      clearTimeout(timer);
    }
  });
}
