// A batch job thread: runs one job at a time (runner.ts) and reports logs, progress and the end
// of the run to the main thread, which keeps the records.
import { parentPort, workerData } from 'node:worker_threads';
import { failureData, setupEngineThread } from '../compute/thread.js';
import { failurePath } from '../graph/evaluate.js';
import { JobStopped, runJob } from './runner.js';
import type { FromJobThread, JobThreadInit, ToJobThread } from './protocol.js';

const catalog = setupEngineThread(workerData as JobThreadInit);
let current: { jobId: string; run: number; ac: AbortController } | null = null;
const post = (m: FromJobThread) => parentPort!.postMessage(m);

parentPort!.on('message', async (msg: ToJobThread) => {
  if (msg.type === 'stop') {
    if (current && current.jobId === msg.jobId && current.run === msg.run && !current.ac.signal.aborted) current.ac.abort(new JobStopped(msg.keepPartial));
    return;
  }
  const { jobId, run } = msg.spec;
  const ac = new AbortController();
  current = { jobId, run, ac };
  let halted = false;
  const sink = {
    log: (entry: Parameters<Parameters<typeof runJob>[2]['log']>[0]) => post({ type: 'log', jobId, run, entry }),
    progress: (done: number, total: number, values: number) => post({ type: 'progress', jobId, run, done, total, values }),
    halted: (done: number) => {
      if (!halted) post({ type: 'halted', jobId, run, done });
      halted = true;
    },
  };
  try {
    const outcome = await runJob(msg.spec, catalog(), sink, ac.signal);
    post({ type: 'done', jobId, run, outcome });
  } catch (e) {
    if (e instanceof JobStopped) {
      sink.halted(0);
      post({ type: 'stopped', jobId, run });
    } else post({ type: 'failed', jobId, run, error: failureData(e), path: failurePath(e) });
  } finally {
    current = null;
  }
});
