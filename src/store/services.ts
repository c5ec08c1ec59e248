import type { SqlDb } from './sql.js';
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

export class SqlServices implements ServiceRepo {
  constructor(private readonly db: SqlDb) {}

  async get(id: string) {
    const r = await this.db.get<Row>('SELECT * FROM services WHERE id = ?', id);
    return r ? toRecord(r) : null;
  }

  async list(userId: string, after: string | null, limit: number) {
    return (await this.db.all<Row>('SELECT * FROM services WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?', userId, after ?? '', limit)).map(toRecord);
  }

  async create(s: ServiceRecord): Promise<void> {
    await this.db.run('INSERT INTO services (id, user_id, body, created, updated) VALUES (?, ?, ?, ?, ?)', s.id, s.userId, bodyOf(s), s.created, s.updated);
  }

  async update(s: ServiceRecord): Promise<void> {
    await this.db.run('UPDATE services SET body = ?, updated = ? WHERE id = ?', bodyOf(s), s.updated, s.id);
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM services WHERE id = ?', id)) > 0;
  }

  async addUsage(id: string, add: ServiceUsage): Promise<void> {
    await this.db.run(
      'UPDATE services SET tiles = tiles + ?, cache_hits = cache_hits + ?, values_read = values_read + ?, cpu_ms = cpu_ms + ? WHERE id = ?',
      add.tiles,
      add.cacheHits,
      add.valuesRead,
      add.cpuMs,
      id,
    );
  }
}
