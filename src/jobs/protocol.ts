// The messages between the main thread and a batch job thread. A whole job runs on one thread
// (`run`); on workers of several machines a job is planned on one (`plan`) and its chunks are
// computed on any (`chunk`). Every message carries the ticket of the task it is about.
import type { ErrorData } from '../core/errors.js';
import type { PathEntry } from '../graph/evaluate.js';
import type { EngineInit } from '../engine/engine.js';
import type { ChunkPlan, JobOutcome, JobPlan, JobSpec, RunLog } from './runner.js';

/** What a job thread is spawned with: its engine's init, less the ports (added per spawn, compute/ports.ts). */
export type JobThreadInit = Omit<EngineInit, 'searchPort' | 'udf' | 'filesPort' | 'metricsPort' | 'log'>;

export type JobTask =
  | { type: 'run'; ticket: string; spec: JobSpec }
  | { type: 'plan'; ticket: string; spec: JobSpec; started: number }
  | { type: 'chunk'; ticket: string; spec: JobSpec; plan: ChunkPlan; index: number; budgetValues: number | null };

export type ToJobThread = JobTask | { type: 'stop'; ticket: string; keepPartial: boolean };

interface About {
  jobId: string;
  run: number;
  ticket: string;
}

export type FromJobThread = About &
  (
    | { type: 'log'; entry: RunLog }
    | { type: 'progress'; done: number; total: number; values: number }
    /** The computation stopped on request after `done` chunks (a partial result may follow). */
    | { type: 'halted'; done: number }
    | { type: 'done'; outcome: JobOutcome }
    /** A plan task's answer: done as one piece, or the chunks to compute. */
    | { type: 'planned'; plan: JobPlan }
    /** A chunk task's answer: the chunk encoded for the COG (chunk-blobs.ts), values read and CPU seconds. */
    | { type: 'chunk-done'; blob: Uint8Array; values: number; cpu: number }
    | { type: 'stopped' }
    | { type: 'failed'; error: ErrorData; path: PathEntry[] }
  );

/** The messages that end a task. */
export const isFinal = (m: FromJobThread): boolean => ['done', 'planned', 'chunk-done', 'stopped', 'failed'].includes(m.type);
