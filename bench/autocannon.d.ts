// The part of autocannon 8's programmatic API the benches use (the package ships no types).
declare module 'autocannon' {
  namespace autocannon {
    interface Options {
      url: string;
      connections?: number;
      pipelining?: number;
      /** Seconds. */
      duration?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      /** Seconds before a request counts as a timeout. */
      timeout?: number;
      workers?: number;
      /** Requests per second over all connections (a steady rate instead of as many as answered). */
      overallRate?: number;
      /** Request sequence each connection cycles through; setupRequest may change a request before it is sent. */
      requests?: { method?: string; path?: string; headers?: Record<string, string>; body?: string; setupRequest?: (req: Record<string, unknown>) => Record<string, unknown> }[];
    }
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p90: number;
      p99: number;
      p99_9: number;
    }
    interface Result {
      /** Seconds actually run. */
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      mismatches: number;
      resets: number;
      '2xx': number;
      statusCodeStats: Record<string, { count: number }>;
      /** Milliseconds. */
      latency: Histogram;
      /** Requests per one-second sample; `total` is all completed requests. */
      requests: Histogram & { sent: number };
      throughput: Histogram;
    }
    /** A run under way: it settles with the result, and emits each answer as it comes. */
    interface Run extends Promise<Result> {
      /** Each answer: its status, bytes and latency in milliseconds (from process.hrtime). */
      on(event: 'response', listener: (client: unknown, statusCode: number, bytes: number, ms: number) => void): void;
    }
  }
  function autocannon(opts: autocannon.Options): autocannon.Run;
  export = autocannon;
}
