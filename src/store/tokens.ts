import type { SqlDb } from './sql.js';
import type { TokenRepo } from './types.js';

export class SqlTokens implements TokenRepo {
  constructor(private readonly db: SqlDb) {}

  async add(tokenHash: string, userId: string, expiresAt: number): Promise<void> {
    await this.db.run('INSERT INTO tokens (token_hash, user_id, expires_at) VALUES (?, ?, ?)', tokenHash, userId, expiresAt);
  }

  async userOf(tokenHash: string, now: number): Promise<{ userId: string; expiresAt: number } | null> {
    const r = await this.db.get<{ user_id: string; expires_at: number }>('SELECT user_id, expires_at FROM tokens WHERE token_hash = ? AND expires_at > ?', tokenHash, now);
    return r ? { userId: r.user_id, expiresAt: Number(r.expires_at) } : null;
  }

  async revoke(tokenHash: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM tokens WHERE token_hash = ?', tokenHash)) > 0;
  }

  revokeUser(userId: string): Promise<number> {
    return this.db.run('DELETE FROM tokens WHERE user_id = ?', userId);
  }

  deleteExpired(now: number): Promise<number> {
    return this.db.run('DELETE FROM tokens WHERE expires_at <= ?', now);
  }
}
