// The log of each batch job: entries numbered per job (the number is the entry's id, and what a
// client's `offset` names), filtered by level when read.
import type { Database, Statement } from 'better-sqlite3';
import type { JobLogEntry, JobLogRepo, LogLevel } from './types.js';

interface Row {
  seq: number;
  body: string;
}

const toEntry = (r: Row): JobLogEntry => ({ id: String(r.seq), ...JSON.parse(r.body) });

export class SqliteJobLogs implements JobLogRepo {
  private readonly insert: Statement<[string, string, string, string], { seq: number }>;
  private readonly last: Statement<[string], Row>;

  constructor(private readonly db: Database) {
    this.insert = db.prepare(
      `INSERT INTO job_logs (job_id, seq, level, body)
       SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ? FROM job_logs WHERE job_id = ?
       RETURNING seq`,
    );
    this.last = db.prepare(`SELECT seq, body FROM job_logs WHERE job_id = ? AND level = 'error' ORDER BY seq DESC LIMIT 1`);
  }

  add(jobId: string, entry: Omit<JobLogEntry, 'id' | 'time'> & { time?: string }): JobLogEntry {
    const stored = { ...entry, time: entry.time ?? new Date().toISOString() };
    const { seq } = this.insert.get(jobId, entry.level, JSON.stringify(stored), jobId)!;
    return { id: String(seq), ...stored };
  }

  list(jobId: string, after: number | null, levels: readonly LogLevel[], limit: number): JobLogEntry[] {
    const sql = `SELECT seq, body FROM job_logs WHERE job_id = ? AND seq > ? AND level IN (${levels.map(() => '?').join(', ')}) ORDER BY seq LIMIT ?`;
    return (this.db.prepare(sql).all(jobId, after ?? 0, ...levels, limit) as Row[]).map(toEntry);
  }

  lastError(jobId: string): JobLogEntry | null {
    const r = this.last.get(jobId);
    return r ? toEntry(r) : null;
  }
}
