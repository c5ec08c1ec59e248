// The job queue of an installation on several machines: BullMQ on Redis. A started job becomes a
// `plan` task; a chunked job's chunks become `chunk` tasks taken by every worker, and an `assemble`
// task (on a queue of its own) writes each chunk into the COG as soon as it is done. A task whose worker dies (its lease not renewed)
// is taken over by another. Beside the queue, Redis keeps each run's state: its chunk plan, the
// chunks done (a set, so a chunk done twice counts once), values read and CPU spent, and a stop
// word (cancel, delete) that workers hear at once on a channel and check before every task.
import { Queue, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { ApiError, ServerUnavailable } from '../core/errors.js';
import { timedCall } from '../core/metrics.js';
import type { ChunkPlan } from './runner.js';

export const QUEUE_NAME = 'xeo-jobs';
/** Assemblies wait on chunks, so they have their own queue: they can never hold every slot that chunks need. */
export const ASSEMBLE_QUEUE_NAME = 'xeo-assemble';
const STOP_CHANNEL = 'xeo:job-stops';
/** Run state outlives no run by much: a week, renewed as the run goes. */
const STATE_TTL_S = 7 * 24 * 3600;
/** How long an API request waits for Redis before answering 503. */
const REQUEST_TIMEOUT_MS = 3000;

export type TaskKind = 'plan' | 'chunk' | 'assemble';

export interface TaskData {
  jobId: string;
  run: number;
  /** Chunk tasks: which chunk. */
  index?: number;
  /** Assemble tasks: a canceled run's partial result (the chunks done, no-data elsewhere). */
  partial?: boolean;
}

export type StopWord = 'cancel' | 'delete' | 'error';

/** A chunk plan and when its run began (for the duration in the run's usage). */
export interface RunPlan {
  chunks: ChunkPlan;
  started: number;
}

export interface RunTally {
  done: number;
  values: number;
  cpu: number;
}

/** The queue is unreachable: the request answers 503 with Retry-After; nothing was changed. */
export class QueueUnavailable extends ServerUnavailable {
  constructor(reason: string) {
    super('job queue', reason);
  }
}

export const redisOptions = (url: string) => ({ url, maxRetriesPerRequest: null, enableReadyCheck: true });

export class TaskQueue {
  readonly queue: Queue<TaskData, unknown, TaskKind>;
  readonly assembleQueue: Queue<TaskData, unknown, TaskKind>;
  private readonly redis: Redis;
  private subscriber: Redis | null = null;

  constructor(
    readonly url: string,
    private readonly attempts: number,
  ) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
    // Errors surface on the commands that fail; the connection itself reconnects on its own.
    this.redis.on('error', () => {});
    this.queue = new Queue<TaskData, unknown, TaskKind>(QUEUE_NAME, { connection: redisOptions(url) });
    this.queue.on('error', () => {});
    this.assembleQueue = new Queue<TaskData, unknown, TaskKind>(ASSEMBLE_QUEUE_NAME, { connection: redisOptions(url) });
    this.assembleQueue.on('error', () => {});
  }

  private key(jobId: string, run: number, what: string): string {
    return `xeo:run:${jobId}:${run}:${what}`;
  }

  /** A request's work on Redis, bounded in time: past it (or on an error) 503, with nothing promised. */
  async guard<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new QueueUnavailable(`no answer within ${REQUEST_TIMEOUT_MS} ms`)), REQUEST_TIMEOUT_MS)))]);
    } catch (e) {
      if (e instanceof ApiError) throw e;
      throw new QueueUnavailable((e as Error).message);
    } finally {
      clearTimeout(timer);
    }
  }

  private opts(id: string) {
    // Task ids are stable: the same task added twice (a plan taken over after a crash) is one task.
    return { jobId: id, attempts: this.attempts, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: { age: 3600 }, removeOnFail: { age: 24 * 3600 } };
  }

  async submitPlan(jobId: string, run: number): Promise<void> {
    await timedCall('queue', this.queue.add('plan', { jobId, run }, this.opts(`${jobId}.${run}.plan`)));
  }

  async submitChunks(jobId: string, run: number, indexes: number[]): Promise<void> {
    await timedCall('queue', this.queue.addBulk(indexes.map((index) => ({ name: 'chunk' as const, data: { jobId, run, index }, opts: this.opts(`${jobId}.${run}.c${index}`) }))));
  }

  async submitAssemble(jobId: string, run: number, partial: boolean): Promise<void> {
    await timedCall('queue', this.assembleQueue.add('assemble', { jobId, run, partial }, this.opts(`${jobId}.${run}.${partial ? 'partial' : 'assemble'}`)));
  }

  /** Keeps the first plan of a run (another worker may have planned it first); answers the one kept. */
  async putPlan(jobId: string, run: number, plan: RunPlan): Promise<RunPlan> {
    const k = this.key(jobId, run, 'plan');
    await timedCall('queue', this.redis.set(k, JSON.stringify(plan), 'EX', STATE_TTL_S, 'NX'));
    return (await this.getPlan(jobId, run))!;
  }

  async getPlan(jobId: string, run: number): Promise<RunPlan | null> {
    const text = await timedCall('queue', this.redis.get(this.key(jobId, run, 'plan')));
    return text ? (JSON.parse(text) as RunPlan) : null;
  }

  /** Records chunk `index` as done (once, however often it ran); answers the run's tally. */
  async markDone(jobId: string, run: number, index: number, values: number, cpu: number): Promise<RunTally> {
    const done = this.key(jobId, run, 'done');
    const tally = this.key(jobId, run, 'tally');
    const fresh = await timedCall('queue', this.redis.sadd(done, String(index)));
    if (fresh) await timedCall('queue', this.redis.multi().hincrby(tally, 'values', values).hincrbyfloat(tally, 'cpu', cpu).expire(tally, STATE_TTL_S).expire(done, STATE_TTL_S).exec());
    return this.tally(jobId, run);
  }

  async tally(jobId: string, run: number): Promise<RunTally> {
    const [[, done], [, t]] = (await timedCall(
      'queue',
      this.redis
        .multi()
        .scard(this.key(jobId, run, 'done'))
        .hgetall(this.key(jobId, run, 'tally'))
        .exec(),
    )) as [[null, number], [null, Record<string, string>]];
    return { done, values: Number(t.values ?? 0), cpu: Number(t.cpu ?? 0) };
  }

  async isDone(jobId: string, run: number, index: number): Promise<boolean> {
    return (await timedCall('queue', this.redis.sismember(this.key(jobId, run, 'done'), String(index)))) === 1;
  }

  async doneChunks(jobId: string, run: number): Promise<Set<number>> {
    return new Set((await timedCall('queue', this.redis.smembers(this.key(jobId, run, 'done')))).map(Number));
  }

  /** Tells every worker to stop the run: at once on the channel, and to any task that starts later. */
  async stop(jobId: string, run: number, word: StopWord): Promise<void> {
    await timedCall('queue', this.redis.set(this.key(jobId, run, 'stop'), word, 'EX', STATE_TTL_S));
    await timedCall('queue', this.redis.publish(STOP_CHANNEL, JSON.stringify({ jobId, run, word })));
  }

  async stopped(jobId: string, run: number): Promise<StopWord | null> {
    return (await timedCall('queue', this.redis.get(this.key(jobId, run, 'stop')))) as StopWord | null;
  }

  /** Hears stop words as they are said. */
  async onStop(fn: (jobId: string, run: number, word: StopWord) => void): Promise<void> {
    const sub = (this.subscriber ??= new Redis(this.url, { maxRetriesPerRequest: null }));
    sub.on('error', () => {});
    sub.on('message', (channel, text) => {
      if (channel !== STOP_CHANNEL) return;
      try {
        const m = JSON.parse(text) as { jobId: string; run: number; word: StopWord };
        fn(m.jobId, m.run, m.word);
      } catch {
        // Not ours.
      }
    });
    await sub.subscribe(STOP_CHANNEL);
  }

  /** The run state, once its result is written (the stop word stays until it expires). */
  async forget(jobId: string, run: number): Promise<void> {
    await timedCall('queue', this.redis.del(this.key(jobId, run, 'plan'), this.key(jobId, run, 'done'), this.key(jobId, run, 'tally')));
  }

  /** One round trip to Redis (readiness). */
  async ping(): Promise<void> {
    await timedCall('queue', this.redis.ping());
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.queue.close(), this.assembleQueue.close(), this.subscriber?.quit(), this.redis.quit()]);
  }
}

export type Task = Job<TaskData, unknown, TaskKind>;
