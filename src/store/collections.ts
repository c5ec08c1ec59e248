import type { SqlDb } from './sql.js';
import type { CollectionRepo } from './types.js';
import type { CollectionMeta, ItemMeta } from '../core/catalog.js';

export class SqlCollections implements CollectionRepo {
  constructor(private readonly db: SqlDb) {}

  async list(): Promise<CollectionMeta[]> {
    return (await this.db.all<{ body: string }>('SELECT body FROM collections ORDER BY position, id')).map((r) => JSON.parse(r.body));
  }

  async get(id: string): Promise<CollectionMeta | null> {
    const r = await this.db.get<{ body: string }>('SELECT body FROM collections WHERE id = ?', id);
    return r ? JSON.parse(r.body) : null;
  }

  async put(meta: CollectionMeta): Promise<void> {
    const now = new Date().toISOString();
    await this.db.run(
      `INSERT INTO collections (id, body, position, created, updated)
       VALUES (?, ?, (SELECT COALESCE(MAX(position), 0) + 1 FROM collections), ?, ?)
       ON CONFLICT (id) DO UPDATE SET body = excluded.body, updated = excluded.updated`,
      meta.id,
      JSON.stringify(meta),
      now,
      now,
    );
  }

  async putItems(collectionId: string, items: ItemMeta[]): Promise<void> {
    await this.db.transaction(async (tx) => {
      for (const it of items) {
        await tx.run(
          `INSERT INTO items (collection_id, id, datetime, body) VALUES (?, ?, ?, ?)
           ON CONFLICT (collection_id, id) DO UPDATE SET datetime = excluded.datetime, body = excluded.body`,
          collectionId,
          it.id,
          it.datetime,
          JSON.stringify(it),
        );
      }
    });
  }

  async items(collectionId: string, start?: string | null, end?: string | null): Promise<ItemMeta[]> {
    // ISO 8601 UTC strings sort as time does; '~' sorts after every date (byte order in both engines: C collation).
    const rows = await this.db.all<{ body: string }>('SELECT body FROM items WHERE collection_id = ? AND datetime >= ? AND datetime < ? ORDER BY datetime, id', collectionId, start ?? '', end ?? '~');
    return rows.map((r) => JSON.parse(r.body));
  }

  async stats(collectionId: string) {
    return (await this.db.get<{ count: number; start: string | null; end: string | null }>(
      'SELECT COUNT(*) AS count, MIN(datetime) AS start, MAX(datetime) AS "end" FROM items WHERE collection_id = ?',
      collectionId,
    ))!;
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM collections WHERE id = ?', id)) > 0;
  }
}
