import type { Database, Statement } from 'better-sqlite3';
import type { ProcessGraphRepo, StoredProcess } from './types.js';

interface Row {
  user_id: string;
  id: string;
  body: string;
  created: string;
  updated: string;
}

const toStored = (r: Row): StoredProcess => ({
  id: r.id,
  userId: r.user_id,
  process: JSON.parse(r.body),
  created: r.created,
  updated: r.updated,
});

export class SqliteProcessGraphs implements ProcessGraphRepo {
  private readonly selectOne: Statement<[string, string], Row>;
  private readonly selectPage: Statement<[string, string, number], Row>;
  private readonly upsert: Statement<[string, string, string, string, string]>;
  private readonly remove: Statement<[string, string]>;

  constructor(db: Database) {
    this.selectOne = db.prepare('SELECT * FROM process_graphs WHERE user_id = ? AND id = ?');
    this.selectPage = db.prepare('SELECT * FROM process_graphs WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?');
    this.upsert = db.prepare(
      `INSERT INTO process_graphs (user_id, id, body, created, updated) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (user_id, id) DO UPDATE SET body = excluded.body, updated = excluded.updated`,
    );
    this.remove = db.prepare('DELETE FROM process_graphs WHERE user_id = ? AND id = ?');
  }

  get(userId: string, id: string): StoredProcess | null {
    const r = this.selectOne.get(userId, id);
    return r ? toStored(r) : null;
  }

  list(userId: string, after: string | null, limit: number): StoredProcess[] {
    return this.selectPage.all(userId, after ?? '', limit).map(toStored);
  }

  put(userId: string, id: string, process: Record<string, unknown>): boolean {
    const now = new Date().toISOString();
    const existed = this.selectOne.get(userId, id) !== undefined;
    this.upsert.run(userId, id, JSON.stringify(process), now, now);
    return !existed;
  }

  delete(userId: string, id: string): boolean {
    return this.remove.run(userId, id).changes > 0;
  }
}
