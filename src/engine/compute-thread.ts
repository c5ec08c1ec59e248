// A compute thread's entry: runs process graphs off the server's event loop, for /result and tiles.
import { parentPort, workerData } from 'node:worker_threads';
import { RequestAborted } from '../core/errors.js';
import { execute, type ExecuteRequest, type ExecuteResult } from './execute.js';
import { runLogsOf } from '../core/run-context.js';
import { createEngine, failureData, type EngineInit } from './engine.js';
import { warmUp } from './warm-up.js';
import { preloadJsts } from '../datacube/geometry.js';
import { resetMetrics, shipMetrics } from '../core/metrics.js';

export type WorkerInit = EngineInit;

export type ToWorker = { id: number; type: 'execute'; req: ExecuteRequest } | { id: number; type: 'cancel' };

const engine = createEngine(workerData as WorkerInit);
const running = new Map<number, AbortController>();
// Graphs wait for the warm-up (the pool waits for 'ready' before the server listens); a failed
// warm-up costs only speed.
const warmed = warmUp(engine)
  .catch((e) => engine.log.error('the warm-up of a compute thread failed', { err: e }))
  .then(() => {
    // Counted from here on: the warm-up's own reads are not the server's work.
    resetMetrics();
    shipMetrics((workerData as WorkerInit).metricsPort);
    parentPort!.postMessage({ type: 'ready' });
    preloadWhenIdle();
  });

/**
 * JSTS (the validity check of polygons and the vector processes' bridge) is loaded by the first
 * graph with geometries, which would then take about 0.15 s longer. It is loaded here instead, once
 * the thread has had nothing to do for a while after its warm-up: never in the way of a server's
 * first tiles, and never at all on a server that stops before.
 */
function preloadWhenIdle(): void {
  setTimeout(() => {
    if (running.size > 0) return preloadWhenIdle();
    preloadJsts().catch((e) => engine.log.warn('the vector libraries did not load ahead', { err: e }));
  }, 3000).unref();
}

parentPort!.on('message', async (msg: ToWorker) => {
  if (msg.type === 'cancel') {
    running.get(msg.id)?.abort(new RequestAborted());
    return;
  }
  const ac = new AbortController();
  running.set(msg.id, ac);
  await warmed;
  try {
    const out: ExecuteResult = await execute(msg.req, engine, ac.signal);
    // Hand the bytes over without copying them.
    const buffers = new Set<ArrayBuffer>();
    let result: ExecuteResult | (ExecuteResult & { body: Uint8Array }) = out;
    if (out.kind === 'encoded') {
      const bytes = new Uint8Array(out.body.buffer, out.body.byteOffset, out.body.byteLength);
      const transfer = out.body.byteOffset === 0 && out.body.byteLength === out.body.buffer.byteLength ? bytes : bytes.slice();
      buffers.add(transfer.buffer as ArrayBuffer);
      result = { ...out, body: transfer as Buffer };
    }
    if (out.kind === 'planes') for (const p of out.raw.planes) buffers.add(p.buffer as ArrayBuffer);
    parentPort!.postMessage({ id: msg.id, ok: true, result }, [...buffers]);
  } catch (e) {
    parentPort!.postMessage({ id: msg.id, ok: false, error: failureData(e), logs: runLogsOf(e) });
  } finally {
    running.delete(msg.id);
  }
});
