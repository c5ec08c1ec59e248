// Users from the CLI, HTTP Basic sign-in, bearer tokens (hashed, expiring) and GET /me.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import Database from 'better-sqlite3';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { startServer, http, expectError, removeDir, addUser, login, basicHeader, xeo, tempDir, type TestServer } from './helpers.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer({ XEO_USER_QUOTA_BYTES: '1000000' });
  addUser(s.dataDir, 'alice', 'secret-a');
});
afterAll(async () => {
  await s.stop();
  removeDir(s.dataDir);
});

describe('CLI users', () => {
  it('adds a user with the password from stdin, refuses duplicates and bad names', async () => {
    const dir = tempDir();
    try {
      const add = xeo(['users', 'add', 'bob'], { dataDir: dir, input: 'pw-from-stdin\n' });
      expect(add.status, add.stderr).toBe(0);
      expect(xeo(['users', 'add', 'bob', '--password', 'x'], { dataDir: dir }).status).toBe(2);
      expect(xeo(['users', 'add', 'bad/name', '--password', 'x'], { dataDir: dir }).status).toBe(2);
      expect(xeo(['users', 'add', 'oidc~like', '--password', 'x'], { dataDir: dir }).status).toBe(2);
      expect(xeo(['users', 'list'], { dataDir: dir }).stdout).toMatch(/^bob\tbasic/m);
      const srv = await startServer({}, dir);
      try {
        await login(srv, 'bob', 'pw-from-stdin');
        expect(xeo(['users', 'passwd', 'bob', '--password', 'new-pw'], { dataDir: dir }).status).toBe(0);
        await login(srv, 'bob', 'new-pw');
        expectError(await http('GET', `${srv.base}/credentials/basic`, { headers: { authorization: basicHeader('bob', 'pw-from-stdin') } }), 403, 'CredentialsInvalid');
      } finally {
        await srv.stop();
      }
    } finally {
      removeDir(dir);
    }
  });

  it('stores scrypt hashes, never passwords or raw tokens', async () => {
    const token = await login(s, 'alice', 'secret-a');
    const db = new Database(path.join(s.dataDir, 'xeo.sqlite'), { readonly: true });
    try {
      const user = db.prepare('SELECT password_hash FROM users WHERE id = ?').get('alice') as { password_hash: string };
      expect(user.password_hash).toMatch(/^scrypt\$/);
      expect(user.password_hash).not.toContain('secret-a');
      const raw = token.slice('Bearer basic//'.length);
      const jti = JSON.parse(Buffer.from(raw.split('.')[1], 'base64url').toString()).jti;
      const rows = db.prepare('SELECT token_hash FROM tokens').all() as { token_hash: string }[];
      expect(rows.length).toBeGreaterThan(0);
      // One row per token: the SHA-256 of its jti, neither the token nor the jti itself.
      expect(rows.some((r) => r.token_hash === raw || r.token_hash === jti)).toBe(false);
      expect(rows.some((r) => r.token_hash === createHash('sha256').update(jti).digest('hex'))).toBe(true);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      db.close();
    }
  });
});

describe('basic sign-in', () => {
  it('hands out a token that opens protected endpoints', async () => {
    const r = await http('GET', `${s.base}/credentials/basic`, { headers: { authorization: basicHeader('alice', 'secret-a') } });
    expect(r.status).toBe(200);
    expect(Object.keys(r.json)).toEqual(['access_token']);
    // A JWT (three base64url parts), usable in the older basic// form too.
    expect(r.json.access_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const me = await http('GET', `${s.base}/me`, { token: `Bearer basic//${r.json.access_token}` });
    expect(me.status).toBe(200);
    expect(me.json).toMatchObject({ user_id: 'alice', name: 'alice', default_plan: 'free', storage: { free: 1000000, quota: 1000000 } });
    expect(me.json.links).toEqual(expect.any(Array));
  });

  it('adds user_id to the answer for API 1.0.0-rc.2', async () => {
    const r = await http('GET', `${s.url}/1.0.0-rc.2/credentials/basic`, { headers: { authorization: basicHeader('alice', 'secret-a') } });
    expect(r.json.user_id).toBe('alice');
  });

  it('refuses wrong and missing credentials with catalogue codes', async () => {
    const basic = (authorization?: string) => http('GET', `${s.base}/credentials/basic`, { headers: authorization ? { authorization } : {} });
    expectError(await basic(basicHeader('alice', 'wrong')), 403, 'CredentialsInvalid');
    expectError(await basic(basicHeader('nobody', 'secret-a')), 403, 'CredentialsInvalid');
    expectError(await basic(), 401, 'AuthenticationRequired');
    expectError(await basic('Bearer basic//abc'), 403, 'AuthenticationSchemeInvalid');
    expectError(await basic(`Basic ${Buffer.from('no-colon').toString('base64')}`), 403, 'CredentialsInvalid');
  });

  it('refuses missing, malformed and unknown bearer tokens', async () => {
    const me = (authorization?: string) => http('GET', `${s.base}/me`, { headers: authorization ? { authorization } : {} });
    expectError(await me(), 401, 'AuthenticationRequired');
    expectError(await me('Bearer basic//not-a-token'), 403, 'TokenInvalid');
    expectError(await me('Bearer nonsense'), 403, 'TokenInvalid');
    expectError(await me('Bearer basic/x/abc'), 403, 'TokenInvalid');
    expectError(await me('Bearer magic//abc'), 403, 'AuthenticationSchemeInvalid');
    expectError(await me(basicHeader('alice', 'secret-a')), 403, 'AuthenticationSchemeInvalid');
    // OIDC is not configured here, so every provider is unknown
    expectError(await me('Bearer oidc/egi/abc'), 403, 'AuthenticationSchemeInvalid');
  });

  it('lets tokens expire', async () => {
    const short = await startServer({ XEO_TOKEN_TTL: '1' }, s.dataDir);
    try {
      const token = await login(short, 'alice', 'secret-a');
      expect((await http('GET', `${short.base}/me`, { token })).status).toBe(200);
      await new Promise((r) => setTimeout(r, 1200));
      expectError(await http('GET', `${short.base}/me`, { token }), 403, 'TokenInvalid');
    } finally {
      await short.stop();
    }
  });

  it('does not list /credentials/oidc without providers', async () => {
    expectError(await http('GET', `${s.base}/credentials/oidc`), 404, 'NotFound');
    expectError(await http('GET', `${s.url}/1.0.1/credentials/oidc`), 501, 'FeatureUnsupported');
  });
});
