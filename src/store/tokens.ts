import type { Database, Statement } from 'better-sqlite3';
import type { TokenRepo } from './types.js';

export class SqliteTokens implements TokenRepo {
  private readonly insert: Statement<[string, string, number]>;
  private readonly select: Statement<[string, number], { user_id: string }>;
  private readonly purge: Statement<[number]>;

  constructor(db: Database) {
    this.insert = db.prepare('INSERT INTO tokens (token_hash, user_id, expires_at) VALUES (?, ?, ?)');
    this.select = db.prepare('SELECT user_id FROM tokens WHERE token_hash = ? AND expires_at > ?');
    this.purge = db.prepare('DELETE FROM tokens WHERE expires_at <= ?');
  }

  add(tokenHash: string, userId: string, expiresAt: number): void {
    this.insert.run(tokenHash, userId, expiresAt);
  }

  userOf(tokenHash: string, now: number): string | null {
    return this.select.get(tokenHash, now)?.user_id ?? null;
  }

  deleteExpired(now: number): number {
    return this.purge.run(now).changes;
  }
}
