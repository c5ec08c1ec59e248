// Batch jobs, and the job queue on the same table: a queued job's place is its queue_seq, and
// every status change is one conditional UPDATE, so two callers (a cancel and the job's own end,
// say, or two nodes claiming the next job) can never both win.
import { jobTransitions, JOB_STATUSES } from '../core/metrics.js';
import type { Param, SqlDb } from './sql.js';
import type { JobEdit, JobFacts, JobQueue, JobRecord, JobRepo, JobStatus } from './types.js';
import type { LogLevel } from '../core/run-context.js';

interface Row {
  id: string;
  user_id: string;
  title: string | null;
  description: string | null;
  process: string;
  plan: string;
  budget: number | null;
  log_level: string;
  status: string;
  progress: number;
  costs: number;
  usage: string | null;
  run: number;
  interruptions: number;
  queue_seq: number | null;
  node: string | null;
  created: string;
  updated: string;
  queued: string | null;
  started: string | null;
  unpublished: string | null;
  options: string | null;
}

const toRecord = (r: Row): JobRecord => ({
  id: r.id,
  userId: r.user_id,
  title: r.title,
  description: r.description,
  process: JSON.parse(r.process),
  plan: r.plan,
  budget: r.budget,
  logLevel: r.log_level as LogLevel,
  status: r.status as JobStatus,
  progress: r.progress,
  costs: r.costs,
  usage: r.usage === null ? null : JSON.parse(r.usage),
  run: r.run,
  interruptions: r.interruptions,
  node: r.node,
  created: r.created,
  updated: r.updated,
  queued: r.queued ?? null,
  started: r.started ?? null,
  unpublished: r.unpublished ?? null,
  options: r.options ? JSON.parse(r.options) : {},
});

const EDIT_COLUMNS: Record<keyof JobEdit, [string, (v: unknown) => unknown]> = {
  title: ['title', (v) => v],
  description: ['description', (v) => v],
  process: ['process', (v) => JSON.stringify(v)],
  plan: ['plan', (v) => v],
  budget: ['budget', (v) => v],
  logLevel: ['log_level', (v) => v],
  options: ['options', (v) => JSON.stringify(v)],
};

const FACT_COLUMNS: Record<keyof JobFacts, [string, (v: unknown) => unknown]> = {
  progress: ['progress', (v) => v],
  costs: ['costs', (v) => v],
  usage: ['usage', (v) => (v === null ? null : JSON.stringify(v))],
  run: ['run', (v) => v],
  interruptions: ['interruptions', (v) => v],
  unpublished: ['unpublished', (v) => v],
};

/** `col = ?` assignments and their values for the members given. */
function assignments<T extends object>(change: T, columns: Record<keyof T, [string, (v: unknown) => unknown]>): [string[], Param[]] {
  const sets: string[] = [];
  const values: Param[] = [];
  for (const [k, v] of Object.entries(change)) {
    if (v === undefined) continue;
    const [col, conv] = columns[k as keyof T];
    sets.push(`${col} = ?`);
    values.push(conv(v) as Param);
  }
  return [sets, values];
}

const now = () => new Date().toISOString();

/** What a status change does to the timeline (`?` is the time of the change). */
const TIMELINE: Record<JobStatus, string> = {
  created: ', queued = NULL, started = NULL, unpublished = NULL',
  queued: ', queued = ?, started = NULL, unpublished = NULL',
  running: ', started = ?',
  canceled: '',
  finished: '',
  error: '',
};

/** The last 20 finished jobs that read anything: enough to follow the machine, few enough to adapt. */
function recentSql(db: SqlDb): string {
  const field = (path: string) => (db.dialect === 'postgres' ? `(usage::jsonb #>> '{${path.replace('.', ',')}}')::double precision` : `json_extract(usage, '$.${path}')`);
  return `SELECT SUM(v) AS "values", SUM(s) AS seconds, COUNT(*) AS jobs FROM (
    SELECT ${field('values_read.value')} AS v, ${field('duration.value')} AS s
    FROM jobs WHERE status = 'finished' AND ${field('values_read.value')} > 0
    ORDER BY updated DESC LIMIT 20) recent`;
}

export class SqlJobs implements JobRepo {
  private readonly recent: string;

  constructor(private readonly db: SqlDb) {
    this.recent = recentSql(db);
  }

  async create(job: Parameters<JobRepo['create']>[0]): Promise<JobRecord> {
    const t = now();
    await this.db.run(
      `INSERT INTO jobs (id, user_id, title, description, process, plan, budget, log_level, options, status, created, updated)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'created', ?, ?)`,
      job.id,
      job.userId,
      job.title,
      job.description,
      JSON.stringify(job.process),
      job.plan,
      job.budget,
      job.logLevel,
      JSON.stringify(job.options ?? {}),
      t,
      t,
    );
    return (await this.byId(job.id))!;
  }

  async get(userId: string, id: string): Promise<JobRecord | null> {
    const r = await this.db.get<Row>('SELECT * FROM jobs WHERE user_id = ? AND id = ?', userId, id);
    return r ? toRecord(r) : null;
  }

  async byId(id: string): Promise<JobRecord | null> {
    const r = await this.db.get<Row>('SELECT * FROM jobs WHERE id = ?', id);
    return r ? toRecord(r) : null;
  }

  async count(userId: string): Promise<number> {
    return (await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM jobs WHERE user_id = ?', userId))!.n;
  }

  async list(userId: string, after: string | null, limit: number): Promise<JobRecord[]> {
    return (await this.db.all<Row>('SELECT * FROM jobs WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?', userId, after ?? '', limit)).map(toRecord);
  }

  async edit(id: string, change: JobEdit): Promise<boolean> {
    const [sets, values] = assignments(change, EDIT_COLUMNS);
    const what = sets.length ? sets.join(', ') : 'id = id';
    // One conditional statement: a start that comes at the same moment either sees the change or locks it out.
    return (await this.db.run(`UPDATE jobs SET ${what} WHERE id = ? AND status NOT IN ('queued', 'running')`, ...values, id)) > 0;
  }

  async transition(id: string, from: readonly JobStatus[], to: JobStatus, facts: JobFacts = {}): Promise<boolean> {
    const [sets, values] = assignments(facts, FACT_COLUMNS);
    const t = now();
    const timeline = TIMELINE[to];
    const sql = `UPDATE jobs SET status = ?, updated = ?${timeline}${sets.map((s) => `, ${s}`).join('')} WHERE id = ? AND status IN (${from.map(() => '?').join(', ')})`;
    const moved = (await this.db.run(sql, to, t, ...(timeline.includes('?') ? [t] : []), ...values, id, ...from)) > 0;
    if (moved) countJob(to);
    return moved;
  }

  async report(id: string, run: number, facts: JobFacts, status: JobStatus = 'running'): Promise<boolean> {
    const [sets, values] = assignments(facts, FACT_COLUMNS);
    if (!sets.length) return false;
    return (await this.db.run(`UPDATE jobs SET ${sets.join(', ')} WHERE id = ? AND run = ? AND status = ?`, ...values, id, run, status)) > 0;
  }

  async withStatus(status: JobStatus): Promise<JobRecord[]> {
    return (await this.db.all<Row>('SELECT * FROM jobs WHERE status = ? ORDER BY queue_seq, id', status)).map(toRecord);
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM jobs WHERE id = ?', id)) > 0;
  }

  async unpublishedBefore(time: string): Promise<JobRecord[]> {
    return (await this.db.all<Row>('SELECT * FROM jobs WHERE unpublished IS NOT NULL AND unpublished < ? AND EXISTS (SELECT 1 FROM job_results r WHERE r.job_id = jobs.id) ORDER BY unpublished', time)).map(
      toRecord,
    );
  }

  async throughput(): Promise<{ values: number; seconds: number; jobs: number }> {
    const r = (await this.db.get<{ values: number | null; seconds: number | null; jobs: number }>(this.recent))!;
    return { values: r.values ?? 0, seconds: r.seconds ?? 0, jobs: r.jobs };
  }
}

const JOB_SLOTS = Object.fromEntries(JOB_STATUSES.map((s) => [s, jobTransitions.slot({ status: s })])) as Record<string, number>;
/** Counts a status reached (core/metrics.ts: xeo_job_transitions_total). */
function countJob(status: string): void {
  const slot = JOB_SLOTS[status];
  if (slot !== undefined) jobTransitions.inc(slot);
}

export class SqlJobQueue implements JobQueue {
  private readonly pull: string;

  constructor(private readonly db: SqlDb) {
    // On PostgreSQL, nodes claiming at the same moment skip each other's row instead of both
    // waiting for it and one coming back empty.
    const lock = db.dialect === 'postgres' ? ' FOR UPDATE SKIP LOCKED' : '';
    this.pull = `UPDATE jobs SET status = 'running', updated = ?, started = ?, node = ?
       WHERE id = (SELECT id FROM jobs WHERE status = 'queued' ORDER BY queue_seq, id LIMIT 1${lock}) AND status = 'queued'
       RETURNING *`;
  }

  enqueue(id: string, facts: JobFacts = {}): Promise<boolean> {
    const t = now();
    return this.db
      .transaction(async (tx) => {
        const moved = await tx.run(
          `UPDATE jobs SET status = 'queued', updated = ?, queued = ?, started = NULL, unpublished = NULL, queue_seq = (SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM jobs)
         WHERE id = ? AND status IN ('created', 'canceled', 'finished', 'error')`,
          t,
          t,
          id,
        );
        if (moved === 0) return false;
        const [sets, values] = assignments(facts, FACT_COLUMNS);
        if (sets.length) await tx.run(`UPDATE jobs SET ${sets.join(', ')} WHERE id = ?`, ...values, id);
        return true;
      })
      .then((queued) => {
        if (queued) countJob('queued');
        return queued;
      });
  }

  async withdraw(id: string): Promise<boolean> {
    const moved = (await this.db.run(`UPDATE jobs SET status = 'created', updated = ?, queued = NULL, started = NULL WHERE id = ? AND status = 'queued'`, now(), id)) > 0;
    if (moved) countJob('created');
    return moved;
  }

  async claim(node: string): Promise<JobRecord | null> {
    const t = now();
    const r = await this.db.get<Row>(this.pull, t, t, node);
    if (r) countJob('running');
    return r ? toRecord(r) : null;
  }

  async claimRun(id: string, run: number, node: string): Promise<JobRecord | null> {
    const t = now();
    const r = await this.db.get<Row>(`UPDATE jobs SET status = 'running', updated = ?, started = ?, node = ? WHERE id = ? AND run = ? AND status = 'queued' RETURNING *`, t, t, node, id, run);
    if (r) countJob('running');
    return r ? toRecord(r) : null;
  }

  async size(): Promise<number> {
    return (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM jobs WHERE status = 'queued'`))!.n;
  }
}
