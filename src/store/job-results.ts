// What a batch job's last run delivered (assets and their STAC facts), one record per job. The
// files themselves are in the result blob store.
import type { SqlDb } from './sql.js';
import type { JobResultRepo, JobResults } from './types.js';

export class SqlJobResults implements JobResultRepo {
  constructor(private readonly db: SqlDb) {}

  put(jobId: string, results: JobResults): void {
    this.db.run('INSERT INTO job_results (job_id, body) VALUES (?, ?) ON CONFLICT (job_id) DO UPDATE SET body = excluded.body', jobId, JSON.stringify(results));
  }

  get(jobId: string): JobResults | null {
    const r = this.db.get<{ body: string }>('SELECT body FROM job_results WHERE job_id = ?', jobId);
    return r ? (JSON.parse(r.body) as JobResults) : null;
  }

  delete(jobId: string): boolean {
    return this.db.run('DELETE FROM job_results WHERE job_id = ?', jobId) > 0;
  }
}
