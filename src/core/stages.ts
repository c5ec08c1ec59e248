// Where a computation spends its time, per stage, for the Server-Timing header of tiles and for
// benchmarks. A compute thread runs one graph at a time, so per-thread counters suffice; reads
// run concurrently, so `load` is wall time and `warp` (synchronous) is subtracted to give `read`.

export interface StageTimes {
  /** Reading and decoding source blocks (load wall time minus warp). */
  read: number;
  warp: number;
  kernel: number;
  encode: number;
  /**
   * Calls of user-defined functions as the engine sees them (data there and back included), the
   * UDFs' own code within, and the engine's share of moving the data (a Python UDF's cube written
   * to its interpreter, its answer read back).
   */
  udf: number;
  udfCode: number;
  udfData: number;
  total: number;
  /** HTTP requests made for remote data, and the bytes they brought. */
  requests: number;
  bytes: number;
}

const acc = { load: 0, warp: 0, kernel: 0, encode: 0, udf: 0, udfCode: 0, udfData: 0 };
const traffic = { requests: 0, bytes: 0 };

export function resetStages(): void {
  acc.load = acc.warp = acc.kernel = acc.encode = acc.udf = acc.udfCode = acc.udfData = 0;
  traffic.requests = traffic.bytes = 0;
}

/** Counts one HTTP request for remote data and the body bytes it brought. */
export function addTraffic(bytes: number): void {
  traffic.requests++;
  traffic.bytes += bytes;
}

/** Adds elapsed milliseconds to a stage. */
export function addStage(stage: keyof typeof acc, ms: number): void {
  acc[stage] += ms;
}

export function stageTimes(total: number): StageTimes {
  return { read: Math.max(0, acc.load - acc.warp), warp: acc.warp, kernel: acc.kernel, encode: acc.encode, udf: acc.udf, udfCode: acc.udfCode, udfData: acc.udfData, total, requests: traffic.requests, bytes: traffic.bytes };
}

/** The Server-Timing header value of a computation. */
export function serverTiming(t: StageTimes): string {
  const udf = t.udf > 0 ? `, udf;dur=${t.udf.toFixed(2)}, udfcode;dur=${t.udfCode.toFixed(2)}, udfdata;dur=${t.udfData.toFixed(2)}` : '';
  const stages = `read;dur=${t.read.toFixed(2)}, warp;dur=${t.warp.toFixed(2)}, kernel;dur=${t.kernel.toFixed(2)}${udf}, encode;dur=${t.encode.toFixed(2)}, total;dur=${t.total.toFixed(2)}`;
  // Remote reads: how many requests the answer cost and what they brought (no duration of their own).
  return t.requests ? `${stages}, remote;desc="requests=${t.requests} bytes=${t.bytes}"` : stages;
}
