// The schema of the record store: numbered migrations, written once in SQLite's words and
// translated for PostgreSQL, each applied in one transaction. SQLite records the version in
// PRAGMA user_version (and is migrated on a thread of its own: sqlite-migrate.ts); PostgreSQL in a
// table, under an advisory lock so that nodes starting at the same moment apply each migration once.
import { openSqliteFile, type SqlDb } from './sql.js';

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
  // Secrets every node must share (the key of signed result links), made once by whichever node comes first.
  `CREATE TABLE secrets (
     name TEXT PRIMARY KEY,
     value TEXT NOT NULL
   );`,
  // Which node runs a job: a node settles only its own interrupted runs, never another's running ones.
  `ALTER TABLE jobs ADD COLUMN node TEXT;`,
  // Failed sign-ins counted by every node together (used on a database server only; see auth-failures.ts).
  `CREATE TABLE auth_failures (
     key TEXT NOT NULL,
     at INTEGER NOT NULL
   );
   CREATE INDEX auth_failures_by_key ON auth_failures (key, at);
   CREATE INDEX auth_failures_by_age ON auth_failures (at);
   CREATE TABLE auth_blocks (
     key TEXT PRIMARY KEY,
     until INTEGER NOT NULL
   );`,
  // Bytes that uploads in progress hold against their user's quota, on every node (used on a database server only; see upload-ledger.ts).
  `CREATE TABLE upload_reservations (
     id TEXT PRIMARY KEY,
     user_id TEXT NOT NULL,
     bytes INTEGER NOT NULL,
     updated INTEGER NOT NULL
   );
   CREATE INDEX upload_reservations_by_user ON upload_reservations (user_id, updated);`,
  // API 1.3.0's `stacktrace` of a log entry (a UDF's traceback).
  `ALTER TABLE logs ADD COLUMN stacktrace TEXT;`,
  // Keys that sign the access tokens (JWTs) of basic sign-in, shared by every node: one per
  // rotation period, made ahead of its period, kept until the last token it signed expires.
  // Tokens stay one row each in tokens (the SHA-256 of an opaque token, or of a JWT's jti), so
  // deleting the row revokes it.
  `CREATE TABLE signing_keys (
     kid TEXT PRIMARY KEY,
     alg TEXT NOT NULL,
     public_jwk TEXT NOT NULL,
     private_jwk TEXT NOT NULL,
     not_before INTEGER NOT NULL,
     signs_until INTEGER NOT NULL,
     verifies_until INTEGER NOT NULL
   );
   CREATE INDEX tokens_by_user ON tokens (user_id);`,
  // API 1.3.0's timeline of a batch job: when it was last queued and started, and until when its results are kept.
  `ALTER TABLE jobs ADD COLUMN queued TEXT;
   ALTER TABLE jobs ADD COLUMN started TEXT;
   ALTER TABLE jobs ADD COLUMN unpublished TEXT;`,
  // The processing parameters a job's requests gave (the Processing Parameters extension), as JSON.
  `ALTER TABLE jobs ADD COLUMN options TEXT;`,
];

/** The same statements in PostgreSQL's words. */
export function forPostgres(ddl: string): string {
  return ddl
    .replace(/INTEGER PRIMARY KEY AUTOINCREMENT/g, 'BIGSERIAL PRIMARY KEY')
    .replace(/\)\s*WITHOUT ROWID/g, ')')
    .replace(/\bINTEGER\b/g, 'BIGINT')
    .replace(/\bREAL\b/g, 'DOUBLE PRECISION');
}

/** Any number, unique to Xeo's schema migrations, for pg_advisory_xact_lock. */
const MIGRATION_LOCK = 0x58656f;

/** Brings a PostgreSQL database up to date, one migration per transaction. */
export async function migratePostgres(db: SqlDb): Promise<void> {
  // Under the lock too: two nodes creating the table at once can both pass IF NOT EXISTS and one
  // then fails on PostgreSQL's catalogue (a unique violation of pg_type).
  await db.transaction(async (tx) => {
    await tx.get('SELECT pg_advisory_xact_lock(?)', MIGRATION_LOCK);
    await tx.run('CREATE TABLE IF NOT EXISTS xeo_schema (version INTEGER NOT NULL)');
  });
  for (;;) {
    const applied = await db.transaction(async (tx) => {
      await tx.get('SELECT pg_advisory_xact_lock(?)', MIGRATION_LOCK);
      const row = await tx.get<{ version: number }>('SELECT version FROM xeo_schema');
      const current = row?.version ?? 0;
      tooNew(current);
      if (current >= MIGRATIONS.length) return false;
      await tx.run(forPostgres(MIGRATIONS[current]));
      if (row) await tx.run('UPDATE xeo_schema SET version = ?', current + 1);
      else await tx.run('INSERT INTO xeo_schema (version) VALUES (?)', current + 1);
      return true;
    });
    if (!applied) return;
  }
}

/** Brings a SQLite file up to date (synchronous: run it off the event loop, see sqlite-migrate.ts). */
export function migrateSqliteFile(file: string): void {
  const db = openSqliteFile(file);
  try {
    const current = db.pragma('user_version', { simple: true }) as number;
    tooNew(current);
    for (let v = current; v < MIGRATIONS.length; v++) {
      db.transaction(() => {
        db.exec(MIGRATIONS[v]);
        db.pragma(`user_version = ${v + 1}`);
      })();
    }
  } finally {
    db.close();
  }
}

function tooNew(version: number): void {
  if (version > MIGRATIONS.length) throw new Error(`the database schema (version ${version}) is newer than this Xeo (${MIGRATIONS.length}); upgrade Xeo`);
}
