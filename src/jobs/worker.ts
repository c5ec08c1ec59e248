// A batch job thread: runs one task at a time (a whole job, the plan of one, or one chunk:
// runner.ts) and reports logs, progress and the end of the task to the main thread, which keeps
// the records.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { createEngine, failureData, type EngineInit } from '../engine/engine.js';
import { failurePath } from '../graph/evaluate.js';
import { computeChunk, forwarder, JobStopped, planJob, planWindows, runJob, threadCpuSeconds, type JobSink } from './runner.js';
import { encodeChunk } from './outputs.js';
import { runLogsOf } from '../core/run-context.js';
import { chunkBlob } from './chunk-blobs.js';
import { encodeVectorCube } from '../datacube/vector-blob.js';
import { jobChunksDone, shipMetrics } from '../core/metrics.js';
import type { FromJobThread, JobTask, ToJobThread } from './protocol.js';

/**
 * The niceness of a job thread: when the cores are short, the event loop (cached tiles) and the
 * compute threads (tiles, /result) go first, and a job takes what they leave.
 */
const JOB_THREAD_NICE = 10;
try {
  // On Linux a thread has an id of its own, and setpriority on it concerns that thread only.
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), JOB_THREAD_NICE);
} catch {
  // Elsewhere the job thread keeps the process's priority.
}

const engine = createEngine(workerData as EngineInit);
shipMetrics((workerData as EngineInit).metricsPort);
let current: { ticket: string; ac: AbortController } | null = null;
const post = (m: FromJobThread, transfer: ArrayBuffer[] = []) => parentPort!.postMessage(m, transfer);

parentPort!.on('message', async (msg: ToJobThread) => {
  if (msg.type === 'stop') {
    if (current && current.ticket === msg.ticket && !current.ac.signal.aborted) current.ac.abort(new JobStopped(msg.keepPartial));
    return;
  }
  const { jobId, run } = msg.spec;
  const about = { jobId, run, ticket: msg.ticket };
  const ac = new AbortController();
  current = { ticket: msg.ticket, ac };
  let halted = false;
  const sink: JobSink = {
    log: (entry) => post({ type: 'log', ...about, entry }),
    progress: (done, total, values) => post({ type: 'progress', ...about, done, total, values }),
    halted: (done) => {
      if (!halted) post({ type: 'halted', ...about, done });
      halted = true;
    },
  };
  try {
    await perform(msg, sink, ac.signal, about);
  } catch (e) {
    if (e instanceof JobStopped) {
      sink.halted(0);
      post({ type: 'stopped', ...about });
    } else {
      // What the run logged before it failed (a UDF's prints) comes before the failure.
      forwarder(sink)(runLogsOf(e), false);
      post({ type: 'failed', ...about, error: failureData(e), path: failurePath(e) });
    }
  } finally {
    current = null;
  }
});

async function perform(task: JobTask, sink: JobSink, signal: AbortSignal, about: { jobId: string; run: number; ticket: string }): Promise<void> {
  switch (task.type) {
    case 'run':
      return post({ type: 'done', ...about, outcome: await runJob(task.spec, engine, sink, signal) });
    case 'plan':
      return post({ type: 'planned', ...about, plan: await planJob(task.spec, engine, sink, signal, task.started) });
    case 'chunk': {
      const cpu0 = threadCpuSeconds();
      let blob: Uint8Array | null = null;
      const { grid, options } = task.plan;
      const w = planWindows(task.plan)[task.index];
      const values = await computeChunk(task.spec, task.plan, task.index, task.budgetValues, engine, signal, forwarder(sink), async (o) => {
        // A zonal part travels as it is; raster chunks are encoded for the COG here, from kernel
        // memory: the compressing is spread over the workers.
        blob = o.kind === 'vector' ? encodeVectorCube(o.cube) : chunkBlob(o.names, await encodeChunk(grid, o.names, options, w, o.planes, engine.deflate));
      });
      const out = blob as Uint8Array | null;
      if (!out) throw new Error(`chunk ${task.index} gave no planes`);
      jobChunksDone.inc(0);
      return post({ type: 'chunk-done', ...about, blob: out, values, cpu: threadCpuSeconds() - cpu0 }, [out.buffer as ArrayBuffer]);
    }
  }
}
