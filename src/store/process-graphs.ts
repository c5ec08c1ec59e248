import type { SqlDb } from './sql.js';
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

export class SqlProcessGraphs implements ProcessGraphRepo {
  constructor(private readonly db: SqlDb) {}

  get(userId: string, id: string): StoredProcess | null {
    const r = this.db.get<Row>('SELECT * FROM process_graphs WHERE user_id = ? AND id = ?', userId, id);
    return r ? toStored(r) : null;
  }

  list(userId: string, after: string | null, limit: number): StoredProcess[] {
    return this.db.all<Row>('SELECT * FROM process_graphs WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?', userId, after ?? '', limit).map(toStored);
  }

  put(userId: string, id: string, process: Record<string, unknown>): boolean {
    const now = new Date().toISOString();
    const upsert = `INSERT INTO process_graphs (user_id, id, body, created, updated) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (user_id, id) DO UPDATE SET body = excluded.body, updated = excluded.updated`;
    const args = [userId, id, JSON.stringify(process), now, now];
    // Whether the row is new, told by the same statement on PostgreSQL (an inserted row has no
    // xmax), and inside one transaction on SQLite (whose writers never interleave).
    if (this.db.dialect === 'postgres') return this.db.get<{ inserted: boolean }>(`${upsert} RETURNING (xmax = 0) AS inserted`, ...args)!.inserted;
    return this.db.transaction(() => {
      const existed = this.db.get('SELECT 1 FROM process_graphs WHERE user_id = ? AND id = ?', userId, id) !== undefined;
      this.db.run(upsert, ...args);
      return !existed;
    });
  }

  delete(userId: string, id: string): boolean {
    return this.db.run('DELETE FROM process_graphs WHERE user_id = ? AND id = ?', userId, id) > 0;
  }
}
