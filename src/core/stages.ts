// Where a computation spends its time, per stage, for the Server-Timing header of tiles and for
// benchmarks. A compute thread may draw several tiles at once (one computes while another waits
// for its data), so the counters belong to the run: withStages() gives each its own, carried
// across awaits by AsyncLocalStorage (the kernels' arena scopes already switch it on in engine
// threads). Reads run concurrently, so `load` is wall time and `warp` (synchronous) is subtracted
// to give `read`.
import { AsyncLocalStorage } from 'node:async_hooks';

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
  /** Machine-learning models applied (predict_onnx): feeding them, running them, reading their answers. */
  model: number;
  total: number;
  /** HTTP requests made for remote data, and the bytes they brought. */
  requests: number;
  bytes: number;
}

/** A run's counters: the stages, with the load's wall time in place of `read`, and no total yet. */
type Counters = Omit<StageTimes, 'read' | 'total'> & { load: number };
type Stage = Exclude<keyof Counters, 'requests' | 'bytes'>;

const runs = new AsyncLocalStorage<Counters>();

/** Runs fn with counters of its own (a run's stages; work outside any run is not counted). */
export function withStages<T>(fn: () => Promise<T>): Promise<T> {
  return runs.run({ load: 0, warp: 0, kernel: 0, encode: 0, udf: 0, udfCode: 0, udfData: 0, model: 0, requests: 0, bytes: 0 }, fn);
}

/** Counts one HTTP request for remote data and the body bytes it brought. */
export function addTraffic(bytes: number): void {
  const c = runs.getStore();
  if (!c) return;
  c.requests++;
  c.bytes += bytes;
}

/** Adds elapsed milliseconds to a stage. */
export function addStage(stage: Stage, ms: number): void {
  const c = runs.getStore();
  if (c) c[stage] += ms;
}

/** The current run's stages so far, `total` milliseconds after it began. */
export function stageTimes(total: number): StageTimes {
  const c = runs.getStore();
  if (!c) return { read: 0, warp: 0, kernel: 0, encode: 0, udf: 0, udfCode: 0, udfData: 0, model: 0, total, requests: 0, bytes: 0 };
  return {
    read: Math.max(0, c.load - c.warp),
    warp: c.warp,
    kernel: c.kernel,
    encode: c.encode,
    udf: c.udf,
    udfCode: c.udfCode,
    udfData: c.udfData,
    model: c.model,
    total,
    requests: c.requests,
    bytes: c.bytes,
  };
}

/** The Server-Timing header value of a computation. */
export function serverTiming(t: StageTimes): string {
  const udf = t.udf > 0 ? `, udf;dur=${t.udf.toFixed(2)}, udfcode;dur=${t.udfCode.toFixed(2)}, udfdata;dur=${t.udfData.toFixed(2)}` : '';
  const model = t.model > 0 ? `, model;dur=${t.model.toFixed(2)}` : '';
  const stages = `read;dur=${t.read.toFixed(2)}, warp;dur=${t.warp.toFixed(2)}, kernel;dur=${t.kernel.toFixed(2)}${udf}${model}, encode;dur=${t.encode.toFixed(2)}, total;dur=${t.total.toFixed(2)}`;
  // Remote reads: how many requests the answer cost and what they brought (no duration of their own).
  return t.requests ? `${stages}, remote;desc="requests=${t.requests} bytes=${t.bytes}"` : stages;
}
