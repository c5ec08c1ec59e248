// The one SQL surface every repository is written against, so the same repositories run on the
// embedded SQLite file and on a PostgreSQL server. Every call answers a promise: PostgreSQL's come
// from a connection pool on the event loop (store/pg.ts), SQLite's from better-sqlite3, whose
// calls take microseconds and may run at once. Statements use `?` placeholders and the SQL both
// engines share (ON CONFLICT, RETURNING, subqueries); the few places where the dialects differ
// ask `dialect`.
import Database from 'better-sqlite3';
import type { Database as Db, Statement } from 'better-sqlite3';
import { countCall } from '../core/metrics.js';

export type Dialect = 'sqlite' | 'postgres';
export type Param = string | number | null;

/** Statements, on the database or inside one transaction. */
export interface SqlRunner {
  readonly dialect: Dialect;
  /** The first row, or undefined. */
  get<T>(sql: string, ...params: Param[]): Promise<T | undefined>;
  all<T>(sql: string, ...params: Param[]): Promise<T[]>;
  /** Runs a statement; answers how many rows it changed. */
  run(sql: string, ...params: Param[]): Promise<number>;
}

export interface SqlDb extends SqlRunner {
  /**
   * Runs `fn` in one transaction: all of the statements it runs through `tx` take effect, or none
   * (it throws, or the database goes away before the end). Statements of others wait or run
   * beside it as the engine isolates them; they never join it.
   */
  transaction<T>(fn: (tx: SqlRunner) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** A uniqueness rule refused a row (a duplicate id, say), whichever engine said so. */
export class UniqueViolation extends Error {}

/** Opens a SQLite file as the record store wants it (WAL, foreign keys, a busy wait). */
export function openSqliteFile(file: string, options: { readonly?: boolean } = {}): Db {
  const db = new Database(file, { readonly: options.readonly ?? false });
  if (!options.readonly) {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
  }
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  return db;
}

/**
 * SQLite behind the asynchronous surface. Each statement runs at once (better-sqlite3 is
 * synchronous, and a statement of the record store takes microseconds). A transaction holds the one
 * connection across its awaits, so statements of others that arrive meanwhile wait until it ends
 * instead of slipping into it.
 */
export class SqliteDb implements SqlDb {
  readonly dialect = 'sqlite';
  private readonly statements = new Map<string, Statement>();
  /** Resolves when the transaction under way ends; null when none is. */
  private busy: Promise<void> | null = null;
  /** Statements of the transaction under way: they run at once, past the wait. */
  private readonly inside: SqlRunner;

  constructor(readonly db: Db) {
    this.inside = {
      dialect: 'sqlite',
      get: (sql, ...params) => this.now(() => this.prepared(sql).get(...params)),
      all: (sql, ...params) => this.now(() => this.prepared(sql).all(...params)),
      run: (sql, ...params) => this.now(() => this.prepared(sql).run(...params).changes),
    };
  }

  static open(file: string): SqliteDb {
    return new SqliteDb(openSqliteFile(file));
  }

  get<T>(sql: string, ...params: Param[]): Promise<T | undefined> {
    if (this.busy) return this.busy.then(() => this.get<T>(sql, ...params));
    return this.inside.get<T>(sql, ...params);
  }

  all<T>(sql: string, ...params: Param[]): Promise<T[]> {
    if (this.busy) return this.busy.then(() => this.all<T>(sql, ...params));
    return this.inside.all<T>(sql, ...params);
  }

  run(sql: string, ...params: Param[]): Promise<number> {
    if (this.busy) return this.busy.then(() => this.run(sql, ...params));
    return this.inside.run(sql, ...params);
  }

  async transaction<T>(fn: (tx: SqlRunner) => Promise<T>): Promise<T> {
    while (this.busy) await this.busy;
    let done!: () => void;
    this.busy = new Promise((r) => (done = r));
    try {
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const out = await fn(this.inside);
        this.db.exec('COMMIT');
        return out;
      } catch (e) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw e;
      }
    } finally {
      this.busy = null;
      done();
    }
  }

  async close(): Promise<void> {
    while (this.busy) await this.busy;
    if (this.db.open) this.db.close();
  }

  private prepared(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = this.db.prepare(sql)));
    return s;
  }

  /** Runs a statement now; its answer, or its failure (a uniqueness rule as UniqueViolation), as a promise. */
  private now<T>(fn: () => unknown): Promise<T> {
    const t0 = performance.now();
    try {
      const out = Promise.resolve(fn() as T);
      countCall('records', true, performance.now() - t0);
      return out;
    } catch (e) {
      const code = (e as { code?: string }).code;
      const unique = code?.startsWith('SQLITE_CONSTRAINT_UNIQUE') || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
      // A uniqueness rule that refused a row is an answer, not a failure of the store.
      countCall('records', unique === true, performance.now() - t0);
      if (unique) return Promise.reject(new UniqueViolation((e as Error).message));
      return Promise.reject(e);
    }
  }
}
