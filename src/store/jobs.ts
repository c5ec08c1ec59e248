// Batch jobs in SQLite, and the embedded job queue on the same table: a queued job's place is its
// queue_seq, and every status change is one conditional UPDATE, so two callers (a cancel and the
// job's own end, say) can never both win.
import type { Database, Statement } from 'better-sqlite3';
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
  created: string;
  updated: string;
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
  created: r.created,
  updated: r.updated,
});

const EDIT_COLUMNS: Record<keyof JobEdit, [string, (v: unknown) => unknown]> = {
  title: ['title', (v) => v],
  description: ['description', (v) => v],
  process: ['process', (v) => JSON.stringify(v)],
  plan: ['plan', (v) => v],
  budget: ['budget', (v) => v],
  logLevel: ['log_level', (v) => v],
};

const FACT_COLUMNS: Record<keyof JobFacts, [string, (v: unknown) => unknown]> = {
  progress: ['progress', (v) => v],
  costs: ['costs', (v) => v],
  usage: ['usage', (v) => (v === null ? null : JSON.stringify(v))],
  run: ['run', (v) => v],
  interruptions: ['interruptions', (v) => v],
};

/** `col = ?` assignments and their values for the members given. */
function assignments<T extends object>(change: T, columns: Record<keyof T, [string, (v: unknown) => unknown]>): [string[], unknown[]] {
  const sets: string[] = [];
  const values: unknown[] = [];
  for (const [k, v] of Object.entries(change)) {
    if (v === undefined) continue;
    const [col, conv] = columns[k as keyof T];
    sets.push(`${col} = ?`);
    values.push(conv(v));
  }
  return [sets, values];
}

const now = () => new Date().toISOString();

export class SqliteJobs implements JobRepo {
  private readonly insert: Statement;
  private readonly selectOne: Statement<[string, string], Row>;
  private readonly selectById: Statement<[string], Row>;
  private readonly selectPage: Statement<[string, string, number], Row>;
  private readonly selectCount: Statement<[string], { n: number }>;
  private readonly selectStatus: Statement<[string], Row>;
  private readonly remove: Statement<[string]>;
  private readonly recent: Statement<[], { values: number | null; seconds: number | null; jobs: number }>;

  constructor(private readonly db: Database) {
    this.insert = db.prepare(
      `INSERT INTO jobs (id, user_id, title, description, process, plan, budget, log_level, status, created, updated)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'created', ?, ?)`,
    );
    this.selectOne = db.prepare('SELECT * FROM jobs WHERE user_id = ? AND id = ?');
    this.selectById = db.prepare('SELECT * FROM jobs WHERE id = ?');
    this.selectPage = db.prepare('SELECT * FROM jobs WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?');
    this.selectCount = db.prepare('SELECT COUNT(*) AS n FROM jobs WHERE user_id = ?');
    this.selectStatus = db.prepare('SELECT * FROM jobs WHERE status = ? ORDER BY queue_seq, id');
    this.remove = db.prepare('DELETE FROM jobs WHERE id = ?');
    // The last 20 finished jobs that read anything: enough to follow the machine, few enough to adapt.
    this.recent = db.prepare(
      `SELECT SUM(v) AS "values", SUM(s) AS seconds, COUNT(*) AS jobs FROM (
         SELECT json_extract(usage, '$.values_read.value') AS v, json_extract(usage, '$.duration.value') AS s
         FROM jobs WHERE status = 'finished' AND json_extract(usage, '$.values_read.value') > 0
         ORDER BY updated DESC LIMIT 20)`,
    );
  }

  create(job: Parameters<JobRepo['create']>[0]): JobRecord {
    const t = now();
    this.insert.run(job.id, job.userId, job.title, job.description, JSON.stringify(job.process), job.plan, job.budget, job.logLevel, t, t);
    return this.byId(job.id)!;
  }

  get(userId: string, id: string): JobRecord | null {
    const r = this.selectOne.get(userId, id);
    return r ? toRecord(r) : null;
  }

  byId(id: string): JobRecord | null {
    const r = this.selectById.get(id);
    return r ? toRecord(r) : null;
  }

  count(userId: string): number {
    return this.selectCount.get(userId)!.n;
  }

  list(userId: string, after: string | null, limit: number): JobRecord[] {
    return this.selectPage.all(userId, after ?? '', limit).map(toRecord);
  }

  edit(id: string, change: JobEdit): void {
    const [sets, values] = assignments(change, EDIT_COLUMNS);
    if (sets.length) this.db.prepare(`UPDATE jobs SET ${sets.join(', ')} WHERE id = ?`).run(...values, id);
  }

  transition(id: string, from: readonly JobStatus[], to: JobStatus, facts: JobFacts = {}): boolean {
    const [sets, values] = assignments(facts, FACT_COLUMNS);
    const sql = `UPDATE jobs SET status = ?, updated = ?${sets.map((s) => `, ${s}`).join('')} WHERE id = ? AND status IN (${from.map(() => '?').join(', ')})`;
    return this.db.prepare(sql).run(to, now(), ...values, id, ...from).changes > 0;
  }

  report(id: string, run: number, facts: JobFacts, status: JobStatus = 'running'): boolean {
    const [sets, values] = assignments(facts, FACT_COLUMNS);
    if (!sets.length) return false;
    return this.db.prepare(`UPDATE jobs SET ${sets.join(', ')} WHERE id = ? AND run = ? AND status = ?`).run(...values, id, run, status).changes > 0;
  }

  withStatus(status: JobStatus): JobRecord[] {
    return this.selectStatus.all(status).map(toRecord);
  }

  delete(id: string): boolean {
    return this.remove.run(id).changes > 0;
  }

  throughput(): { values: number; seconds: number; jobs: number } {
    const r = this.recent.get()!;
    return { values: r.values ?? 0, seconds: r.seconds ?? 0, jobs: r.jobs };
  }
}

export class SqliteJobQueue implements JobQueue {
  private readonly push: Statement;
  private readonly pull: Statement<[string], Row>;
  private readonly back: Statement<[string, string]>;
  private readonly count: Statement<[], { n: number }>;

  constructor(private readonly db: Database) {
    this.push = db.prepare(
      `UPDATE jobs SET status = 'queued', updated = ?, queue_seq = (SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM jobs)
       WHERE id = ? AND status IN ('created', 'canceled', 'finished', 'error')`,
    );
    this.pull = db.prepare(
      `UPDATE jobs SET status = 'running', updated = ?
       WHERE id = (SELECT id FROM jobs WHERE status = 'queued' ORDER BY queue_seq LIMIT 1) AND status = 'queued'
       RETURNING *`,
    );
    this.back = db.prepare(`UPDATE jobs SET status = 'created', updated = ? WHERE id = ? AND status = 'queued'`);
    this.count = db.prepare(`SELECT COUNT(*) AS n FROM jobs WHERE status = 'queued'`);
  }

  enqueue(id: string, facts: JobFacts = {}): boolean {
    return this.db.transaction(() => {
      if (this.push.run(now(), id).changes === 0) return false;
      const [sets, values] = assignments(facts, FACT_COLUMNS);
      if (sets.length) this.db.prepare(`UPDATE jobs SET ${sets.join(', ')} WHERE id = ?`).run(...values, id);
      return true;
    })();
  }

  withdraw(id: string): boolean {
    return this.back.run(now(), id).changes > 0;
  }

  claim(): JobRecord | null {
    const r = this.pull.get(now());
    return r ? toRecord(r) : null;
  }

  size(): number {
    return this.count.get()!.n;
  }
}
