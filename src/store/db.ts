// Opens the SQLite database under the data dir in WAL mode and brings its schema up to date with
// numbered migrations (recorded in PRAGMA user_version, applied in one transaction each).
import Database from 'better-sqlite3';
import type { Database as Db } from 'better-sqlite3';
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import type { Store } from './types.js';
import { SqliteUsers } from './users.js';
import { SqliteTokens } from './tokens.js';
import { SqliteProcessGraphs } from './process-graphs.js';
import { SqliteCollections } from './collections.js';
import { SqliteServices } from './services.js';
import { SqliteLogs } from './logs.js';
import { SqliteJobs, SqliteJobQueue } from './jobs.js';
import { SqliteJobResults } from './job-results.js';

/** Append only: a migration, once released, never changes. */
const MIGRATIONS: string[] = [
  `CREATE TABLE users (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     password_hash TEXT,
     oidc_issuer TEXT,
     oidc_subject TEXT,
     quota_bytes INTEGER,
     created TEXT NOT NULL
   );
   CREATE UNIQUE INDEX users_oidc ON users (oidc_issuer, oidc_subject) WHERE oidc_issuer IS NOT NULL;
   CREATE TABLE tokens (
     token_hash TEXT PRIMARY KEY,
     user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
     expires_at INTEGER NOT NULL
   );
   CREATE INDEX tokens_expiry ON tokens (expires_at);
   CREATE TABLE process_graphs (
     user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
     id TEXT NOT NULL,
     body TEXT NOT NULL,
     created TEXT NOT NULL,
     updated TEXT NOT NULL,
     PRIMARY KEY (user_id, id)
   ) WITHOUT ROWID;`,
  `CREATE TABLE collections (
     id TEXT PRIMARY KEY,
     body TEXT NOT NULL,
     position INTEGER NOT NULL,
     created TEXT NOT NULL,
     updated TEXT NOT NULL
   );
   CREATE TABLE items (
     collection_id TEXT NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
     id TEXT NOT NULL,
     datetime TEXT NOT NULL,
     body TEXT NOT NULL,
     PRIMARY KEY (collection_id, id)
   ) WITHOUT ROWID;
   CREATE INDEX items_by_time ON items (collection_id, datetime);`,
  // Secondary web services, and log entries of services (and later jobs) keyed by their owner.
  `CREATE TABLE services (
     id TEXT PRIMARY KEY,
     user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
     body TEXT NOT NULL,
     tiles INTEGER NOT NULL DEFAULT 0,
     cache_hits INTEGER NOT NULL DEFAULT 0,
     values_read INTEGER NOT NULL DEFAULT 0,
     cpu_ms REAL NOT NULL DEFAULT 0,
     created TEXT NOT NULL,
     updated TEXT NOT NULL
   );
   CREATE INDEX services_by_user ON services (user_id, id);
   CREATE TABLE logs (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     owner TEXT NOT NULL,
     level TEXT NOT NULL,
     message TEXT NOT NULL,
     code TEXT,
     time TEXT NOT NULL,
     data TEXT,
     path TEXT
   );
   CREATE INDEX logs_by_owner ON logs (owner, seq);`,
  // Batch jobs (their logs are in logs, owner job:ID). The queue is the order of queue_seq among
  // queued jobs; the results record goes with its job.
  `CREATE TABLE jobs (
     id TEXT PRIMARY KEY,
     user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
     title TEXT,
     description TEXT,
     process TEXT NOT NULL,
     plan TEXT NOT NULL,
     budget REAL,
     log_level TEXT NOT NULL,
     status TEXT NOT NULL,
     progress REAL NOT NULL DEFAULT 0,
     costs REAL NOT NULL DEFAULT 0,
     usage TEXT,
     run INTEGER NOT NULL DEFAULT 0,
     interruptions INTEGER NOT NULL DEFAULT 0,
     queue_seq INTEGER,
     created TEXT NOT NULL,
     updated TEXT NOT NULL
   );
   CREATE INDEX jobs_by_user ON jobs (user_id, id);
   CREATE INDEX jobs_by_status ON jobs (status, queue_seq);
   CREATE TABLE job_results (
     job_id TEXT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
     body TEXT NOT NULL
   );`,
];

export function openDatabase(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true });
  const db = new Database(path.join(dataDir, 'xeo.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

export function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`the database schema (version ${current}) is newer than this Xeo (${MIGRATIONS.length}); upgrade Xeo`);
  }
  for (let v = current; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}

export function openStore(dataDir: string): Store {
  const db = openDatabase(dataDir);
  return {
    users: new SqliteUsers(db),
    tokens: new SqliteTokens(db),
    processGraphs: new SqliteProcessGraphs(db),
    collections: new SqliteCollections(db),
    services: new SqliteServices(db),
    logs: new SqliteLogs(db),
    jobs: new SqliteJobs(db),
    jobQueue: new SqliteJobQueue(db),
    jobResults: new SqliteJobResults(db),
    close: () => db.close(),
  };
}
