// What a batch job's last run delivered (assets and their STAC facts), one record per job. The
// files themselves are in the result blob store.
import type { SqlDb } from './sql.js';
import type { JobResultRepo, JobResults } from './types.js';

export class SqlJobResults implements JobResultRepo {
  constructor(private readonly db: SqlDb) {}

  async put(jobId: string, results: JobResults): Promise<void> {
    await this.db.run('INSERT INTO job_results (job_id, body) VALUES (?, ?) ON CONFLICT (job_id) DO UPDATE SET body = excluded.body', jobId, JSON.stringify(results));
  }

  async get(jobId: string): Promise<JobResults | null> {
    const r = await this.db.get<{ body: string }>('SELECT body FROM job_results WHERE job_id = ?', jobId);
    return r ? (JSON.parse(r.body) as JobResults) : null;
  }

  async delete(jobId: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM job_results WHERE job_id = ?', jobId)) > 0;
  }
}
