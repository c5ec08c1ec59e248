import type { SqlDb } from './sql.js';
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

export class SqlUsers implements UserRepo {
  constructor(private readonly db: SqlDb) {}

  async create(user: Omit<User, 'created'>): Promise<User> {
    const full = { ...user, created: new Date().toISOString() };
    await this.db.run(
      'INSERT INTO users (id, name, password_hash, oidc_issuer, oidc_subject, quota_bytes, created) VALUES (?, ?, ?, ?, ?, ?, ?)',
      full.id,
      full.name,
      full.passwordHash,
      full.oidcIssuer,
      full.oidcSubject,
      full.quotaBytes,
      full.created,
    );
    return full;
  }

  async byId(id: string): Promise<User | null> {
    const r = await this.db.get<Row>('SELECT * FROM users WHERE id = ?', id);
    return r ? toUser(r) : null;
  }

  async byOidc(issuer: string, subject: string): Promise<User | null> {
    const r = await this.db.get<Row>('SELECT * FROM users WHERE oidc_issuer = ? AND oidc_subject = ?', issuer, subject);
    return r ? toUser(r) : null;
  }

  async setPassword(id: string, passwordHash: string): Promise<void> {
    await this.db.run('UPDATE users SET password_hash = ? WHERE id = ?', passwordHash, id);
  }

  async list(): Promise<User[]> {
    return (await this.db.all<Row>('SELECT * FROM users ORDER BY id')).map(toUser);
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM users WHERE id = ?', id)) > 0;
  }
}
