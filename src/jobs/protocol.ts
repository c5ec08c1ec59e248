// The messages between the main thread and a batch job thread.
import type { ErrorData } from '../core/errors.js';
import type { PathEntry } from '../graph/evaluate.js';
import type { ThreadInit } from '../compute/thread.js';
import type { JobOutcome, JobSpec, RunLog } from './runner.js';

export type JobThreadInit = ThreadInit;

export type ToJobThread = { type: 'run'; spec: JobSpec } | { type: 'stop'; jobId: string; run: number; keepPartial: boolean };

interface About {
  jobId: string;
  run: number;
}

export type FromJobThread = About &
  (
    | { type: 'log'; entry: RunLog }
    | { type: 'progress'; done: number; total: number; values: number }
    /** The computation stopped on request after `done` chunks (a partial result may follow). */
    | { type: 'halted'; done: number }
    | { type: 'done'; outcome: JobOutcome }
    | { type: 'stopped' }
    | { type: 'failed'; error: ErrorData; path: PathEntry[] }
  );
