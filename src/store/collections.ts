import type { SqlDb } from './sql.js';
import type { CollectionRepo } from './types.js';
import type { CollectionMeta, ItemMeta } from '../core/catalog.js';

export class SqlCollections implements CollectionRepo {
  constructor(private readonly db: SqlDb) {}

  list(): CollectionMeta[] {
    return this.db.all<{ body: string }>('SELECT body FROM collections ORDER BY position, id').map((r) => JSON.parse(r.body));
  }

  get(id: string): CollectionMeta | null {
    const r = this.db.get<{ body: string }>('SELECT body FROM collections WHERE id = ?', id);
    return r ? JSON.parse(r.body) : null;
  }

  put(meta: CollectionMeta): void {
    const now = new Date().toISOString();
    this.db.run(
      `INSERT INTO collections (id, body, position, created, updated)
       VALUES (?, ?, (SELECT COALESCE(MAX(position), 0) + 1 FROM collections), ?, ?)
       ON CONFLICT (id) DO UPDATE SET body = excluded.body, updated = excluded.updated`,
      meta.id,
      JSON.stringify(meta),
      now,
      now,
    );
  }

  putItems(collectionId: string, items: ItemMeta[]): void {
    this.db.transaction(() => {
      for (const it of items) {
        this.db.run(
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

  items(collectionId: string, start?: string | null, end?: string | null): ItemMeta[] {
    // ISO 8601 UTC strings sort as time does; '~' sorts after every date (byte order in both engines: C collation).
    return this.db
      .all<{ body: string }>('SELECT body FROM items WHERE collection_id = ? AND datetime >= ? AND datetime < ? ORDER BY datetime, id', collectionId, start ?? '', end ?? '~')
      .map((r) => JSON.parse(r.body));
  }

  stats(collectionId: string) {
    return this.db.get<{ count: number; start: string | null; end: string | null }>(
      'SELECT COUNT(*) AS count, MIN(datetime) AS start, MAX(datetime) AS "end" FROM items WHERE collection_id = ?',
      collectionId,
    )!;
  }

  delete(id: string): boolean {
    return this.db.run('DELETE FROM collections WHERE id = ?', id) > 0;
  }
}
