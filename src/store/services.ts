import type { Database, Statement } from 'better-sqlite3';
import type { ServiceRecord, ServiceRepo, ServiceUsage } from './types.js';

interface Row {
  id: string;
  user_id: string;
  body: string;
  tiles: number;
  cache_hits: number;
  values_read: number;
  cpu_ms: number;
  created: string;
  updated: string;
}

type Body = Omit<ServiceRecord, 'id' | 'userId' | 'created' | 'updated'>;

const toRecord = (r: Row): ServiceRecord & { usage: ServiceUsage } => ({
  ...(JSON.parse(r.body) as Body),
  id: r.id,
  userId: r.user_id,
  created: r.created,
  updated: r.updated,
  usage: { tiles: r.tiles, cacheHits: r.cache_hits, valuesRead: r.values_read, cpuMs: r.cpu_ms },
});

function bodyOf(s: ServiceRecord): string {
  const { id: _id, userId: _u, created: _c, updated: _up, ...body } = s as ServiceRecord & { usage?: unknown };
  delete (body as { usage?: unknown }).usage;
  return JSON.stringify(body);
}

export class SqliteServices implements ServiceRepo {
  private readonly selectOne: Statement<[string], Row>;
  private readonly selectPage: Statement<[string, string, number], Row>;
  private readonly insert: Statement<[string, string, string, string, string]>;
  private readonly change: Statement<[string, string, string]>;
  private readonly remove: Statement<[string]>;
  private readonly usage: Statement<[number, number, number, number, string]>;

  constructor(db: Database) {
    this.selectOne = db.prepare('SELECT * FROM services WHERE id = ?');
    this.selectPage = db.prepare('SELECT * FROM services WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?');
    this.insert = db.prepare('INSERT INTO services (id, user_id, body, created, updated) VALUES (?, ?, ?, ?, ?)');
    this.change = db.prepare('UPDATE services SET body = ?, updated = ? WHERE id = ?');
    this.remove = db.prepare('DELETE FROM services WHERE id = ?');
    this.usage = db.prepare(
      'UPDATE services SET tiles = tiles + ?, cache_hits = cache_hits + ?, values_read = values_read + ?, cpu_ms = cpu_ms + ? WHERE id = ?',
    );
  }

  get(id: string) {
    const r = this.selectOne.get(id);
    return r ? toRecord(r) : null;
  }

  list(userId: string, after: string | null, limit: number) {
    return this.selectPage.all(userId, after ?? '', limit).map(toRecord);
  }

  create(s: ServiceRecord): void {
    this.insert.run(s.id, s.userId, bodyOf(s), s.created, s.updated);
  }

  update(s: ServiceRecord): void {
    this.change.run(bodyOf(s), s.updated, s.id);
  }

  delete(id: string): boolean {
    return this.remove.run(id).changes > 0;
  }

  addUsage(id: string, add: ServiceUsage): void {
    this.usage.run(add.tiles, add.cacheHits, add.valuesRead, add.cpuMs, id);
  }
}
