// Moves an embedded installation (the SQLite file and the local disk of a data dir) to the stores
// of an installation on several machines: every record into the PostgreSQL of XEO_DATABASE_URL,
// and user files and job results into the bucket of XEO_S3_BUCKET when one is set. The source is
// only read (after its schema is brought to this version's, as starting this version would do).
// The target database must hold no records yet, so nothing is ever merged or lost. Jobs that were
// running when the embedded server died are queued again: the workers start them over.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, type Config } from '../core/config.js';
import { openDatabase } from '../store/db.js';
import { LocalBlobStore } from '../store/blobs.js';
import { openBlobStore } from '../store/open-blobs.js';

/** Every table of records, parents before the tables that refer to them. Sign-in failures are not carried over. */
const TABLES = ['users', 'tokens', 'signing_keys', 'process_graphs', 'collections', 'items', 'services', 'logs', 'jobs', 'job_results', 'secrets'] as const;

export interface MigrationSummary {
  rows: Record<string, number>;
  files: number;
  results: number;
  bytes: number;
}

export async function migrateInstallation(fromDataDir: string, config: Config, say: (line: string) => void): Promise<MigrationSummary> {
  if (!config.databaseUrl) throw new ConfigError('set XEO_DATABASE_URL to the PostgreSQL database to move the records to');
  const from = await openDatabase({ dataDir: fromDataDir });
  const to = await openDatabase({ dataDir: config.dataDir, databaseUrl: config.databaseUrl, database: config.database }).catch(async (e: unknown) => {
    await from.close();
    throw e;
  });
  const summary: MigrationSummary = { rows: {}, files: 0, results: 0, bytes: 0 };
  try {
    for (const t of TABLES) {
      const n = Number((await to.get<{ n: number }>(`SELECT count(*) AS n FROM ${t}`))!.n);
      if (n > 0) throw new ConfigError(`the database of XEO_DATABASE_URL already holds ${t}: move into an empty database`);
    }
    await to.transaction(async (tx) => {
      for (const t of TABLES) {
        const rows = await from.all<Record<string, string | number | null>>(`SELECT * FROM ${t}`);
        for (const row of rows) {
          const cols = Object.keys(row);
          await tx.run(`INSERT INTO ${t} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`, ...cols.map((c) => row[c]));
        }
        summary.rows[t] = rows.length;
      }
      // A run the embedded server left behind starts over on the workers.
      summary.rows.requeued = await tx.run(`UPDATE jobs SET status = 'queued', progress = 0, node = NULL WHERE status = 'running'`);
      // New log entries go on after the ones carried over.
      await tx.get(`SELECT setval(pg_get_serial_sequence('logs', 'seq'), COALESCE((SELECT MAX(seq) FROM logs), 0) + 1, false)`);
    });
    say(`records: ${TABLES.map((t) => `${summary.rows[t]} ${t}`).join(', ')}${summary.rows.requeued ? ` (${summary.rows.requeued} running jobs queued again)` : ''}`);
  } finally {
    await from.close();
    await to.close();
  }
  if (!config.s3Bucket) {
    say('files and results stay on this disk (no XEO_S3_BUCKET): copy the files/ and jobs/ folders of the data dir to every node that serves them');
    return summary;
  }
  for (const [use, folder, tmp] of [
    ['files', 'files', 'tmp'],
    ['results', 'jobs', 'jobs-tmp'],
  ] as const) {
    const source = new LocalBlobStore(path.join(fromDataDir, folder), path.join(fromDataDir, tmp));
    const target = await openBlobStore(config, use);
    let tops: string[];
    try {
      tops = readdirSync(path.join(fromDataDir, folder));
    } catch {
      continue; // nothing of this kind yet
    }
    for (const top of tops) {
      for (const blob of await source.list(top)) {
        await target.write(blob.key, await source.read(blob.key));
        summary.bytes += blob.size;
        if (use === 'files') summary.files++;
        else summary.results++;
      }
    }
  }
  say(`blobs: ${summary.files} user files and ${summary.results} result files (${summary.bytes} bytes) into the bucket ${config.s3Bucket}`);
  return summary;
}
