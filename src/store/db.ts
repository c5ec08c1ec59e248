// Opens the record store: the SQLite file under the data dir (the embedded default), or the
// PostgreSQL database of XEO_DATABASE_URL; both brought up to date by the same migrations and read
// and written by the same repositories.
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import type { Store } from './types.js';
import { SqliteDb, type SqlDb } from './sql.js';
import { PgDb } from './pg.js';
import { migrate } from './schema.js';
import { SqlUsers } from './users.js';
import { SqlTokens } from './tokens.js';
import { SqlProcessGraphs } from './process-graphs.js';
import { SqlCollections } from './collections.js';
import { SqlServices } from './services.js';
import { SqlLogs } from './logs.js';
import { SqlJobs, SqlJobQueue } from './jobs.js';
import { SqlJobResults } from './job-results.js';
import { SqlSecrets } from './secrets.js';
import { LocalSemaphores, PgSemaphores } from './semaphores.js';
import { SqlFailureLedger } from './auth-failures.js';
import { LocalUploadLedger, SqlUploadLedger } from './upload-ledger.js';

/** Where records live: a data dir (SQLite), unless a PostgreSQL URL is given. */
export interface StoreLocation {
  dataDir: string;
  databaseUrl?: string | null;
}

export function openDatabase(where: StoreLocation): SqlDb {
  let db: SqlDb;
  if (where.databaseUrl) db = new PgDb(where.databaseUrl);
  else {
    mkdirSync(where.dataDir, { recursive: true });
    db = SqliteDb.open(path.join(where.dataDir, 'xeo.sqlite'));
  }
  try {
    migrate(db);
  } catch (e) {
    db.close();
    throw e;
  }
  return db;
}

export function openStore(where: StoreLocation | string): Store {
  const db = openDatabase(typeof where === 'string' ? { dataDir: where } : where);
  return {
    users: new SqlUsers(db),
    tokens: new SqlTokens(db),
    processGraphs: new SqlProcessGraphs(db),
    collections: new SqlCollections(db),
    services: new SqlServices(db),
    logs: new SqlLogs(db),
    jobs: new SqlJobs(db),
    jobQueue: new SqlJobQueue(db),
    jobResults: new SqlJobResults(db),
    secrets: new SqlSecrets(db),
    semaphores: db.dialect === 'postgres' ? new PgSemaphores(db) : new LocalSemaphores(),
    authFailures: db.dialect === 'postgres' ? new SqlFailureLedger(db) : null,
    uploads: db.dialect === 'postgres' ? new SqlUploadLedger(db) : new LocalUploadLedger(),
    close: () => db.close(),
  };
}
