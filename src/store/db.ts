// Opens the record store: the SQLite file under the data dir (the embedded default), or the
// PostgreSQL database of XEO_DATABASE_URL; both brought up to date by the same migrations and read
// and written by the same repositories.
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import type { CollectionRepo, Store } from './types.js';
import { SqliteDb, type SqlDb } from './sql.js';
import { PgDb, PG_DEFAULTS, type PgOptions } from './pg.js';
import { migratePostgres } from './schema.js';
import { migrateSqlite } from './sqlite-migrate.js';
import { SqlUsers } from './users.js';
import { SqlTokens } from './tokens.js';
import { SqlSigningKeys } from './signing-keys.js';
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
  /** Connections and statement deadline on PostgreSQL (PG_DEFAULTS when absent). */
  database?: PgOptions;
}

const locationOf = (where: StoreLocation | string): StoreLocation => (typeof where === 'string' ? { dataDir: where } : where);

/** Connects (nothing is read or written yet). */
function connect(where: StoreLocation): SqlDb {
  if (where.databaseUrl) return new PgDb(where.databaseUrl, where.database ?? PG_DEFAULTS);
  mkdirSync(where.dataDir, { recursive: true });
  return SqliteDb.open(path.join(where.dataDir, 'xeo.sqlite'));
}

/** The database, brought up to date by the migrations (SQLite's on a thread of their own). */
export async function openDatabase(where: StoreLocation): Promise<SqlDb> {
  if (!where.databaseUrl) {
    mkdirSync(where.dataDir, { recursive: true });
    await migrateSqlite(path.join(where.dataDir, 'xeo.sqlite'));
    return connect(where);
  }
  const db = connect(where);
  try {
    await migratePostgres(db);
  } catch (e) {
    await db.close();
    throw e;
  }
  return db;
}

export async function openStore(where: StoreLocation | string): Promise<Store> {
  const loc = locationOf(where);
  const db = await openDatabase(loc);
  const semaphores = loc.databaseUrl ? new PgSemaphores(loc.databaseUrl, loc.database ?? PG_DEFAULTS) : new LocalSemaphores();
  return {
    users: new SqlUsers(db),
    tokens: new SqlTokens(db),
    signingKeys: new SqlSigningKeys(db),
    processGraphs: new SqlProcessGraphs(db),
    collections: new SqlCollections(db),
    services: new SqlServices(db),
    logs: new SqlLogs(db),
    jobs: new SqlJobs(db),
    jobQueue: new SqlJobQueue(db),
    jobResults: new SqlJobResults(db),
    secrets: new SqlSecrets(db),
    semaphores,
    authFailures: db.dialect === 'postgres' ? new SqlFailureLedger(db) : null,
    uploads: db.dialect === 'postgres' ? new SqlUploadLedger(db) : new LocalUploadLedger(),
    engine: db.dialect === 'postgres' ? 'postgresql' : 'sqlite',
    async ping() {
      await db.get('SELECT 1 AS one');
    },
    async close() {
      await semaphores.close();
      await db.close();
    },
  };
}

/**
 * The collections of a store the main thread has opened (and migrated) already: what an engine
 * thread reads of the catalogue, on a connection of its own (a small pool on PostgreSQL).
 */
export function openCatalog(where: StoreLocation): { collections: CollectionRepo; close(): Promise<void> } {
  const db = connect({ ...where, database: { ...(where.database ?? PG_DEFAULTS), poolSize: 2 } });
  return { collections: new SqlCollections(db), close: () => db.close() };
}
