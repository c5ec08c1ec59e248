// The one SQL surface every repository is written against, so the same repositories run on the
// embedded SQLite file and on a PostgreSQL server. Calls are synchronous, as better-sqlite3's are:
// the PostgreSQL side answers through a connection thread (store/pg.ts). Statements use `?`
// placeholders and the SQL both engines share (ON CONFLICT, RETURNING, subqueries); the few
// places where the dialects differ ask `dialect`.
import Database from 'better-sqlite3';
import type { Database as Db, Statement } from 'better-sqlite3';

export type Dialect = 'sqlite' | 'postgres';
export type Param = string | number | null;

export interface SqlDb {
  readonly dialect: Dialect;
  /** The first row, or undefined. */
  get<T>(sql: string, ...params: Param[]): T | undefined;
  all<T>(sql: string, ...params: Param[]): T[];
  /** Runs a statement; answers how many rows it changed. */
  run(sql: string, ...params: Param[]): number;
  /** Runs `fn` in one transaction: all of its statements take effect, or none. */
  transaction<T>(fn: () => T): T;
  close(): void;
}

/** A uniqueness rule refused a row (a duplicate id, say), whichever engine said so. */
export class UniqueViolation extends Error {}

export class SqliteDb implements SqlDb {
  readonly dialect = 'sqlite';
  private readonly statements = new Map<string, Statement>();

  constructor(readonly db: Db) {}

  static open(file: string): SqliteDb {
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    return new SqliteDb(db);
  }

  private prepared(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = this.db.prepare(sql)));
    return s;
  }

  get<T>(sql: string, ...params: Param[]): T | undefined {
    return this.guard(() => this.prepared(sql).get(...params) as T | undefined);
  }

  all<T>(sql: string, ...params: Param[]): T[] {
    return this.guard(() => this.prepared(sql).all(...params) as T[]);
  }

  run(sql: string, ...params: Param[]): number {
    return this.guard(() => this.prepared(sql).run(...params).changes);
  }

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  close(): void {
    this.db.close();
  }

  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      if ((e as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT_UNIQUE') || (e as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
        throw new UniqueViolation((e as Error).message);
      }
      throw e;
    }
  }
}
