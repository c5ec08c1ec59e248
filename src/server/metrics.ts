// GET /metrics in the Prometheus text format (prom-client): the counters and histograms the layers
// below feed through core/metrics.ts become prom-client series at scrape time (collect callbacks),
// beside prom-client's own process metrics (memory, CPU, event-loop lag; not GC, see DEFAULT_METRICS). The server's own
// series, requests by route family, method and status class with their latency, are fed here from
// the request path as plain increments into a preallocated grid.
import { createRequire } from 'node:module';
import { Counter, Gauge, Registry } from 'prom-client';
import { allGauges, allMetrics, CounterGrid, HistogramGrid, KeyedCounters, type GaugeSource, type Metric } from '../core/metrics.js';

/** Route families: the first segment of a route's path, grouped. */
export const FAMILIES = [
  'capabilities',
  'discovery',
  'collections',
  'processes',
  'result',
  'process_graphs',
  'files',
  'services',
  'jobs',
  'download',
  'credentials',
  'me',
  'tiles',
  'previews',
  'viewer',
  'well_known',
  'other',
  'unmatched',
] as const;
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'other'] as const;
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

export const UNMATCHED = FAMILIES.indexOf('unmatched');

/** The family of a route (by its path in the route table, below the version prefix). */
export function familyIndex(routePath: string): number {
  const first = routePath.split('/')[1] ?? '';
  const name: (typeof FAMILIES)[number] = (() => {
    switch (first) {
      case '':
        return 'capabilities';
      case 'conformance':
      case 'openapi.json':
      case 'file_formats':
      case 'service_types':
      case 'udf_runtimes':
        return 'discovery';
      case 'validation':
        return 'processes';
      case 'xyz':
      case 'wmts':
        return 'tiles';
      case '.well-known':
        return 'well_known';
      default:
        return (FAMILIES as readonly string[]).includes(first) ? (first as (typeof FAMILIES)[number]) : 'other';
    }
  })();
  return FAMILIES.indexOf(name);
}

/** Requests answered, with their time: labels in this order make the slot arithmetic below. */
const requests = new HistogramGrid(
  'xeo_http_request_duration_seconds',
  'Time from a request arriving to its answer handed to the socket (streamed bodies: to their last byte), by route family, method and status class.',
  {
    family: FAMILIES,
    method: METHODS,
    status_class: CLASSES,
  },
);

function methodIndex(method: string): number {
  switch (method) {
    case 'GET':
      return 0;
    case 'HEAD':
      return 1;
    case 'POST':
      return 2;
    case 'PUT':
      return 3;
    case 'PATCH':
      return 4;
    case 'DELETE':
      return 5;
    case 'OPTIONS':
      return 6;
    default:
      return 7;
  }
}

/** Counts one answered request: numbers only (the request path of every tile runs this). */
export function observeRequest(family: number, method: string, status: number, ms: number): void {
  let cls = ((status / 100) | 0) - 1;
  if (cls < 0 || cls > 4) cls = 4;
  requests.observe((family * METHODS.length + methodIndex(method)) * CLASSES.length + cls, ms / 1000);
}

/** A histogram of core/metrics.ts in prom-client's registry (whose Histogram cannot be given bucket counts). */
class GridHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  constructor(private readonly grid: HistogramGrid) {}
  get name(): string {
    return this.grid.name;
  }
  get help(): string {
    return this.grid.help;
  }
  async get() {
    const g = this.grid;
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (let slot = 0; slot < g.size; slot++) {
      const { buckets, sum, count } = g.read(slot);
      // Combinations never seen stay out (the request grid alone has hundreds).
      if (count === 0 && g.size > 1) continue;
      const labels = g.labelsOf(slot);
      g.bounds.forEach((le, i) => values.push({ labels: { ...labels, le }, value: buckets[i], metricName: `${g.name}_bucket` }));
      values.push({ labels: { ...labels, le: '+Inf' }, value: buckets[buckets.length - 1], metricName: `${g.name}_bucket` });
      values.push({ labels, value: sum, metricName: `${g.name}_sum` });
      values.push({ labels, value: count, metricName: `${g.name}_count` });
    }
    return { name: g.name, help: g.help, type: 'histogram' as const, values, aggregator: 'sum' as const };
  }
  reset(): void {}
}

const require = createRequire(import.meta.url);
/**
 * prom-client's default metrics (process CPU and memory, heap, file descriptors, handles, event-loop
 * lag, the Node version) but its garbage-collection histogram: that one observes every collection
 * through a PerformanceObserver, whose entries Node hands to JavaScript one by one after each
 * collection, and under a load of cached tiles that cost about 7 µs of CPU per tile (12%; measured
 * with `npm run bench -- tiles --quick`, alternating). collectDefaultMetrics cannot leave one out, so
 * the others are registered one by one (prom-client is pinned: these are its modules of 15.1.3).
 */
const DEFAULT_METRICS = [
  'processCpuTotal',
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  ...(typeof process.getActiveResourcesInfo === 'function' ? ['processResources'] : []),
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
];

export class MetricsRegistry {
  readonly registry = new Registry();
  private readonly mirrored = new Set<string>();

  constructor() {
    for (const name of DEFAULT_METRICS) require(`prom-client/lib/metrics/${name}.js`)(this.registry, { eventLoopMonitoringPrecision: 10 });
  }

  /** Mirrors every series declared so far (parts started later declare theirs late). */
  private sync(): void {
    for (const m of allMetrics()) if (!this.mirrored.has(m.name)) this.mirror(m);
    for (const g of allGauges()) if (!this.mirrored.has(g.name)) this.mirrorGauge(g.name);
  }

  private mirror(m: Metric): void {
    this.mirrored.add(m.name);
    const registers = [this.registry];
    if (m instanceof HistogramGrid) {
      this.registry.registerMetric(new GridHistogram(m) as never);
    } else if (m instanceof CounterGrid) {
      new Counter({
        name: m.name,
        help: m.help,
        labelNames: m.labelNames,
        registers,
        collect() {
          this.reset();
          for (let slot = 0; slot < m.size; slot++) this.inc(m.labelsOf(slot), m.data[slot]);
        },
      });
    } else if (m instanceof KeyedCounters) {
      m.fields.forEach((f, i) => {
        new Counter({
          name: `${m.name}${f.suffix}`,
          help: f.help,
          labelNames: m.labelNames,
          registers,
          collect() {
            this.reset();
            for (const e of m.entries.values()) this.inc(e.labels, e.data[i]);
          },
        });
      });
    }
  }

  /** A gauge is read through its current source at each scrape (a part started again replaces it). */
  private mirrorGauge(name: string): void {
    this.mirrored.add(name);
    const first = allGauges().find((g) => g.name === name) as GaugeSource;
    new Gauge({
      name,
      help: first.help,
      labelNames: first.labelNames,
      registers: [this.registry],
      async collect() {
        const src = allGauges().find((g) => g.name === name);
        const rows = (await src?.read()) ?? [];
        this.reset();
        for (const { labels, value } of rows) this.set(labels, value);
      },
    });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  async text(): Promise<string> {
    this.sync();
    return this.registry.metrics();
  }
}
