// A batch job thread: runs one task at a time (a whole job, the plan of one, or one chunk:
// runner.ts) and reports logs, progress and the end of the task to the main thread, which keeps
// the records.
import { parentPort, workerData } from 'node:worker_threads';
import { failureData, setupEngineThread } from '../compute/thread.js';
import { failurePath } from '../graph/evaluate.js';
import { computeChunk, JobStopped, planJob, runJob, threadCpuSeconds, type JobSink } from './runner.js';
import type { FromJobThread, JobTask, JobThreadInit, ToJobThread } from './protocol.js';
import type { LogLevel } from '../core/run-context.js';

const catalog = setupEngineThread(workerData as JobThreadInit);
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
    } else post({ type: 'failed', ...about, error: failureData(e), path: failurePath(e) });
  } finally {
    current = null;
  }
});

async function perform(task: JobTask, sink: JobSink, signal: AbortSignal, about: { jobId: string; run: number; ticket: string }): Promise<void> {
  switch (task.type) {
    case 'run':
      return post({ type: 'done', ...about, outcome: await runJob(task.spec, catalog(), sink, signal) });
    case 'plan':
      return post({ type: 'planned', ...about, plan: await planJob(task.spec, catalog(), sink, signal, task.started) });
    case 'chunk': {
      const cpu0 = threadCpuSeconds();
      let planes: Float32Array[] = [];
      let names: string[] = [];
      const forward = (logs: { level: LogLevel; message: string; data?: unknown }[], demote: boolean) => {
        for (const l of logs) sink.log({ level: demote ? 'debug' : l.level, message: l.message, ...(l.data === undefined ? {} : { data: l.data }) });
      };
      const values = await computeChunk(task.spec, task.plan, task.index, task.budgetValues, catalog(), signal, forward, async (p, n) => {
        // Out of kernel memory, which the next chunk reuses, and handed over without a copy.
        planes = p.map((x) => x.slice());
        names = n;
      });
      return post({ type: 'chunk-done', ...about, planes, names, values, cpu: threadCpuSeconds() - cpu0 }, planes.map((p) => p.buffer as ArrayBuffer));
    }
  }
}
