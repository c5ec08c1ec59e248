import type { SqlDb } from './sql.js';
import type { TokenRepo } from './types.js';

export class SqlTokens implements TokenRepo {
  constructor(private readonly db: SqlDb) {}

  add(tokenHash: string, userId: string, expiresAt: number): void {
    this.db.run('INSERT INTO tokens (token_hash, user_id, expires_at) VALUES (?, ?, ?)', tokenHash, userId, expiresAt);
  }

  userOf(tokenHash: string, now: number): string | null {
    return this.db.get<{ user_id: string }>('SELECT user_id FROM tokens WHERE token_hash = ? AND expires_at > ?', tokenHash, now)?.user_id ?? null;
  }

  deleteExpired(now: number): number {
    return this.db.run('DELETE FROM tokens WHERE expires_at <= ?', now);
  }
}
