import type { Database, Statement } from 'better-sqlite3';
import type { CollectionRepo } from './types.js';
import type { CollectionMeta, ItemMeta } from '../core/catalog.js';

export class SqliteCollections implements CollectionRepo {
  private readonly selectAll: Statement<[], { body: string }>;
  private readonly selectOne: Statement<[string], { body: string }>;
  private readonly upsert: Statement<[string, string, string, string]>;
  private readonly upsertItem: Statement<[string, string, string, string]>;
  private readonly selectItems: Statement<[string, string, string], { body: string }>;
  private readonly selectStats: Statement<[string], { count: number; start: string | null; end: string | null }>;

  constructor(private readonly db: Database) {
    this.selectAll = db.prepare('SELECT body FROM collections ORDER BY position, id');
    this.selectOne = db.prepare('SELECT body FROM collections WHERE id = ?');
    this.upsert = db.prepare(
      `INSERT INTO collections (id, body, position, created, updated)
       VALUES (?, ?, (SELECT COALESCE(MAX(position), 0) + 1 FROM collections), ?, ?)
       ON CONFLICT (id) DO UPDATE SET body = excluded.body, updated = excluded.updated`,
    );
    this.upsertItem = db.prepare(
      `INSERT INTO items (collection_id, id, datetime, body) VALUES (?, ?, ?, ?)
       ON CONFLICT (collection_id, id) DO UPDATE SET datetime = excluded.datetime, body = excluded.body`,
    );
    this.selectItems = db.prepare('SELECT body FROM items WHERE collection_id = ? AND datetime >= ? AND datetime < ? ORDER BY datetime, id');
    this.selectStats = db.prepare('SELECT COUNT(*) AS count, MIN(datetime) AS start, MAX(datetime) AS end FROM items WHERE collection_id = ?');
  }

  list(): CollectionMeta[] {
    return this.selectAll.all().map((r) => JSON.parse(r.body));
  }

  get(id: string): CollectionMeta | null {
    const r = this.selectOne.get(id);
    return r ? JSON.parse(r.body) : null;
  }

  put(meta: CollectionMeta): void {
    const now = new Date().toISOString();
    this.upsert.run(meta.id, JSON.stringify(meta), now, now);
  }

  putItems(collectionId: string, items: ItemMeta[]): void {
    this.db.transaction(() => {
      for (const it of items) this.upsertItem.run(collectionId, it.id, it.datetime, JSON.stringify(it));
    })();
  }

  items(collectionId: string, start?: string | null, end?: string | null): ItemMeta[] {
    // ISO 8601 UTC strings sort as time does; '~' sorts after every date.
    return this.selectItems.all(collectionId, start ?? '', end ?? '~').map((r) => JSON.parse(r.body));
  }

  stats(collectionId: string) {
    return this.selectStats.get(collectionId)!;
  }

  delete(id: string): boolean {
    return this.db.prepare('DELETE FROM collections WHERE id = ?').run(id).changes > 0;
  }
}
