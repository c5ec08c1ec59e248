// What a batch job's last run delivered (assets and their STAC facts), one record per job. The
// files themselves are in the result blob store.
import type { Database, Statement } from 'better-sqlite3';
import type { JobResultRepo, JobResults } from './types.js';

export class SqliteJobResults implements JobResultRepo {
  private readonly upsert: Statement<[string, string]>;
  private readonly select: Statement<[string], { body: string }>;
  private readonly remove: Statement<[string]>;

  constructor(db: Database) {
    this.upsert = db.prepare('INSERT INTO job_results (job_id, body) VALUES (?, ?) ON CONFLICT (job_id) DO UPDATE SET body = excluded.body');
    this.select = db.prepare('SELECT body FROM job_results WHERE job_id = ?');
    this.remove = db.prepare('DELETE FROM job_results WHERE job_id = ?');
  }

  put(jobId: string, results: JobResults): void {
    this.upsert.run(jobId, JSON.stringify(results));
  }

  get(jobId: string): JobResults | null {
    const r = this.select.get(jobId);
    return r ? (JSON.parse(r.body) as JobResults) : null;
  }

  delete(jobId: string): boolean {
    return this.remove.run(jobId).changes > 0;
  }
}
