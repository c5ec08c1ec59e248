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

  async get(userId: string, id: string): Promise<StoredProcess | null> {
    const r = await this.db.get<Row>('SELECT * FROM process_graphs WHERE user_id = ? AND id = ?', userId, id);
    return r ? toStored(r) : null;
  }

  async getMany(userId: string, ids: string[]): Promise<StoredProcess[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.all<Row>(`SELECT * FROM process_graphs WHERE user_id = ? AND id IN (${ids.map(() => '?').join(', ')})`, userId, ...ids);
    return rows.map(toStored);
  }

  async list(userId: string, after: string | null, limit: number): Promise<StoredProcess[]> {
    return (await this.db.all<Row>('SELECT * FROM process_graphs WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?', userId, after ?? '', limit)).map(toStored);
  }

  async put(userId: string, id: string, process: Record<string, unknown>): Promise<boolean> {
    const now = new Date().toISOString();
    const upsert = `INSERT INTO process_graphs (user_id, id, body, created, updated) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (user_id, id) DO UPDATE SET body = excluded.body, updated = excluded.updated`;
    const args = [userId, id, JSON.stringify(process), now, now];
    // Whether the row is new, told by the same statement on PostgreSQL (an inserted row has no
    // xmax), and inside one transaction on SQLite (whose writers never interleave).
    if (this.db.dialect === 'postgres') return (await this.db.get<{ inserted: boolean }>(`${upsert} RETURNING (xmax = 0) AS inserted`, ...args))!.inserted;
    return this.db.transaction(async (tx) => {
      const existed = (await tx.get('SELECT 1 FROM process_graphs WHERE user_id = ? AND id = ?', userId, id)) !== undefined;
      await tx.run(upsert, ...args);
      return !existed;
    });
  }

  async delete(userId: string, id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM process_graphs WHERE user_id = ? AND id = ?', userId, id)) > 0;
  }
}
