import type { Database, Statement } from 'better-sqlite3';
import type { User, UserRepo } from './types.js';

interface Row {
  id: string;
  name: string;
  password_hash: string | null;
  oidc_issuer: string | null;
  oidc_subject: string | null;
  quota_bytes: number | null;
  created: string;
}

const toUser = (r: Row): User => ({
  id: r.id,
  name: r.name,
  passwordHash: r.password_hash,
  oidcIssuer: r.oidc_issuer,
  oidcSubject: r.oidc_subject,
  quotaBytes: r.quota_bytes,
  created: r.created,
});

export class SqliteUsers implements UserRepo {
  private readonly insert: Statement;
  private readonly selectById: Statement<[string], Row>;
  private readonly selectByOidc: Statement<[string, string], Row>;

  constructor(private readonly db: Database) {
    this.insert = db.prepare(
      `INSERT INTO users (id, name, password_hash, oidc_issuer, oidc_subject, quota_bytes, created)
       VALUES (@id, @name, @passwordHash, @oidcIssuer, @oidcSubject, @quotaBytes, @created)`,
    );
    this.selectById = db.prepare('SELECT * FROM users WHERE id = ?');
    this.selectByOidc = db.prepare('SELECT * FROM users WHERE oidc_issuer = ? AND oidc_subject = ?');
  }

  create(user: Omit<User, 'created'>): User {
    const full = { ...user, created: new Date().toISOString() };
    this.insert.run(full);
    return full;
  }

  byId(id: string): User | null {
    const r = this.selectById.get(id);
    return r ? toUser(r) : null;
  }

  byOidc(issuer: string, subject: string): User | null {
    const r = this.selectByOidc.get(issuer, subject);
    return r ? toUser(r) : null;
  }

  setPassword(id: string, passwordHash: string): void {
    this.db.prepare('UPDATE users SET password_hash = ? WHERE id = ?').run(passwordHash, id);
  }

  list(): User[] {
    return (this.db.prepare('SELECT * FROM users ORDER BY id').all() as Row[]).map(toUser);
  }

  delete(id: string): boolean {
    return this.db.prepare('DELETE FROM users WHERE id = ?').run(id).changes > 0;
  }
}
