// Our access tokens over HTTP: JWTs from /credentials/basic, verifiable with the published key set,
// accepted raw and as basic// on every version; every forged form refused with 403 TokenInvalid
// and the same words (tokens forged with our own signing key, read from the records, show that it
// is the claims that are checked); revocation by the command line; opaque tokens of an earlier
// installation accepted until they expire; guessing slowed down per client address.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import Database from 'better-sqlite3';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { SignJWT, createLocalJWKSet, decodeJwt, decodeProtectedHeader, generateKeyPair, importJWK, jwtVerify, type JWK, type JWTPayload } from 'jose';
import { startServer, http, expectError, removeDir, addUser, basicHeader, xeo, type TestServer } from './helpers.js';

const VERSIONS = ['1.3.0', '1.2.0', '1.0.1', '1.0.0-rc.2'];
let s: TestServer;
let ourKey: { kid: string; key: CryptoKey };
// Each test speaks from its own address (trusted X-Forwarded-For), so refusals of one do not slow another.
const from = (address: string) => ({ 'x-forwarded-for': address, origin: 'http://x.test' });

beforeAll(async () => {
  s = await startServer({ XEO_TRUST_PROXY: '1', XEO_AUTH_FAILURES_PER_ADDRESS: '30' });
  addUser(s.dataDir, 'alice', 'secret-a');
  addUser(s.dataDir, 'bob', 'secret-b');
  // The key that signs now, as the records hold it (what an attacker with a copy of the database would have).
  const db = new Database(path.join(s.dataDir, 'xeo.sqlite'), { readonly: true });
  try {
    const now = Date.now();
    const row = db.prepare('SELECT kid, private_jwk FROM signing_keys WHERE not_before <= ? AND signs_until > ?').get(now, now) as { kid: string; private_jwk: string };
    ourKey = { kid: row.kid, key: (await importJWK(JSON.parse(row.private_jwk) as JWK, 'EdDSA')) as CryptoKey };
  } finally {
    db.close();
  }
});
afterAll(async () => {
  await s.stop();
  removeDir(s.dataDir);
});

async function signIn(user = 'alice', password = 'secret-a', version = '1.3.0'): Promise<string> {
  const r = await http('GET', `${s.url}/${version}/credentials/basic`, { headers: { authorization: basicHeader(user, password), ...from('10.0.0.1') } });
  expect(r.status, r.text).toBe(200);
  return r.json.access_token;
}

const me = (authorization: string, address: string, version = '1.3.0') => http('GET', `${s.url}/${version}/me`, { headers: { authorization, ...from(address) } });

/** A token row as sign-in writes it (the SHA-256 of the jti), so a forged token is refused for its claims only. */
function addRow(jti: string, user: string, expiresAt: number): void {
  const db = new Database(path.join(s.dataDir, 'xeo.sqlite'));
  try {
    db.prepare('INSERT INTO tokens (token_hash, user_id, expires_at) VALUES (?, ?, ?)').run(createHash('sha256').update(jti).digest('hex'), user, expiresAt);
  } finally {
    db.close();
  }
}

/** A token signed with our real key; `claims` replace the right ones (undefined drops a claim). */
async function forge(claims: Partial<Record<keyof JWTPayload, unknown>> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jti = randomBytes(16).toString('base64url');
  const base: Record<string, unknown> = { iss: `${s.url}/1.3.0/credentials/basic`, aud: s.url, sub: 'alice', iat: now, nbf: now, exp: now + 600, jti };
  for (const [k, v] of Object.entries(claims)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  if (typeof base.jti === 'string' && typeof base.sub === 'string') addRow(base.jti, base.sub === 'nobody' ? 'alice' : base.sub, Date.now() + 600_000);
  return new SignJWT(base).setProtectedHeader({ alg: 'EdDSA', kid: ourKey.kid, typ: 'JWT', ...header }).sign(ourKey.key);
}

describe('JWT access tokens', () => {
  it('are signed JWTs with our claims, verifiable with the published key set', async () => {
    const token = await signIn();
    const header = decodeProtectedHeader(token);
    expect(header).toMatchObject({ alg: 'EdDSA', typ: 'JWT', kid: expect.any(String) });
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ iss: `${s.url}/1.3.0/credentials/basic`, aud: s.url, sub: 'alice', jti: expect.stringMatching(/^[\w-]{22}$/) });
    expect(claims.exp! - claims.iat!).toBeGreaterThanOrEqual(24 * 3600);
    const jwks = await http('GET', `${s.url}/.well-known/jwks.json`);
    expect(jwks.headers['content-type']).toBe('application/jwk-set+json');
    expect(jwks.json.keys.every((k: Record<string, unknown>) => !('d' in k))).toBe(true);
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks.json), { issuer: claims.iss, audience: s.url, algorithms: ['EdDSA'] });
    expect(payload.sub).toBe('alice');
    // Signing in through another version names that version's address as issuer.
    expect(decodeJwt(await signIn('alice', 'secret-a', '1.0.1')).iss).toBe(`${s.url}/1.0.1/credentials/basic`);
  });

  it('open every version, raw and as basic//, whichever version handed them out', async () => {
    const tokens = [await signIn('alice', 'secret-a', '1.3.0'), await signIn('alice', 'secret-a', '1.0.0-rc.2')];
    for (const token of tokens) {
      for (const v of VERSIONS) {
        for (const form of [`Bearer ${token}`, `Bearer basic//${token}`, `bearer  ${token}`]) {
          const r = await me(form, '10.0.1.1', v);
          expect(r.status, `${v} ${form.slice(0, 20)}: ${r.text}`).toBe(200);
          expect(r.json.user_id).toBe('alice');
        }
      }
    }
    // the legacy forms with a provider, or of OIDC, are no way around the checks
    expectError(await me(`Bearer basic/x/${tokens[0]}`, '10.0.1.1'), 403, 'TokenInvalid');
    expectError(await me(`Bearer oidc/x/${tokens[0]}`, '10.0.1.1'), 403, 'AuthenticationSchemeInvalid');
  });

  it('refuse every forged, altered or out-of-date token alike: 403 TokenInvalid, the same words', async () => {
    const generic = (await me('Bearer nonsense', '10.0.2.1')).json.message;
    // The control: our key and the right claims (and a row) make a valid token, so each refusal below is about one change.
    expect((await me(`Bearer ${await forge()}`, '10.0.2.1')).status).toBe(200);
    const now = Math.floor(Date.now() / 1000);
    const good = await signIn();
    const [h, p, sig] = good.split('.');
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const { privateKey: strangerKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const jwks = (await http('GET', `${s.url}/.well-known/jwks.json`)).json;
    const publicJwk = jwks.keys.find((k: { kid: string }) => k.kid === ourKey.kid);
    const cases: Record<string, string> = {
      'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${p}.`,
      'alg none, our kid': `${b64({ alg: 'none', kid: ourKey.kid })}.${p}.`,
      'HS256 keyed with our public key (JWK)': await new SignJWT(payload).setProtectedHeader({ alg: 'HS256', kid: ourKey.kid }).sign(new Uint8Array(Buffer.from(JSON.stringify(publicJwk)))),
      'HS256 keyed with our public key (bytes)': await new SignJWT(payload).setProtectedHeader({ alg: 'HS256', kid: ourKey.kid }).sign(new Uint8Array(Buffer.from(publicJwk.x, 'base64url'))),
      'another key under our kid': await new SignJWT(payload).setProtectedHeader({ alg: 'EdDSA', kid: ourKey.kid }).sign(strangerKey),
      'another key, its own kid': await new SignJWT(payload).setProtectedHeader({ alg: 'EdDSA', kid: 'mine' }).sign(strangerKey),
      'no kid': await new SignJWT(payload).setProtectedHeader({ alg: 'EdDSA' }).sign(ourKey.key),
      'altered subject': `${h}.${b64({ ...payload, sub: 'bob' })}.${sig}`,
      'altered expiry': `${h}.${b64({ ...payload, exp: payload.exp + 3600 })}.${sig}`,
      'signature cut short': good.slice(0, -6),
      'signature of another token': `${h}.${p}.${(await signIn()).split('.')[2]}`,
      'wrong issuer': await forge({ iss: 'https://xeo.example/1.3.0/credentials/basic' }),
      'issuer of the OIDC form': await forge({ iss: `${s.url}/1.3.0/credentials/oidc` }),
      'wrong audience': await forge({ aud: 'https://elsewhere.example' }),
      'no audience': await forge({ aud: undefined }),
      expired: await forge({ iat: now - 7200, nbf: now - 7200, exp: now - 3600 }),
      'not yet valid': await forge({ nbf: now + 3600, exp: now + 7200 }),
      'issued in the future': await forge({ iat: now + 3600, nbf: undefined }),
      'no jti': await forge({ jti: undefined }),
      'no subject': await forge({ sub: undefined }),
      'a jti without a row (revoked or never handed out)': await new SignJWT({ ...payload, jti: 'never-issued' }).setProtectedHeader({ alg: 'EdDSA', kid: ourKey.kid }).sign(ourKey.key),
      "a row of another user's token": await forge({ sub: 'nobody' }),
      'not a JWT': 'a.b',
      'four parts': `${good}.x`,
    };
    let n = 0;
    for (const [what, token] of Object.entries(cases)) {
      for (const form of [`Bearer ${token}`, `Bearer basic//${token}`]) {
        const r = await me(form, `10.0.2.${++n}`);
        expect(r.status, `${what} (${form.slice(0, 14)}): ${r.text}`).toBe(403);
        expect(r.json.code, what).toBe('TokenInvalid');
        expect(r.json.message, what).toBe(generic);
      }
    }
  });

  it('are revoked by the command line: one token, and all of a user at a new password', async () => {
    const one = await signIn();
    const other = await signIn();
    const r = xeo(['tokens', 'revoke', one], { dataDir: s.dataDir });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('revoked the token');
    expectError(await me(`Bearer ${one}`, '10.0.3.1'), 403, 'TokenInvalid');
    expect((await me(`Bearer ${other}`, '10.0.3.1')).status).toBe(200);
    // by its jti, as an operator reads it from a log
    const third = await signIn();
    const byJti = xeo(['tokens', 'revoke', decodeJwt(third).jti!], { dataDir: s.dataDir });
    expect(byJti.stdout, byJti.stderr).toContain('revoked the token');
    // a jti is base64url: one in 64 begins with '-', and is still a token, not an option
    const dash = xeo(['tokens', 'revoke', '-Zx0'], { dataDir: s.dataDir });
    expect(dash.status, dash.stderr).toBe(0);
    expect(dash.stdout).toContain('no live token matches');
    expectError(await me(`Bearer basic//${third}`, '10.0.3.1'), 403, 'TokenInvalid');
    // every token of bob at a new password, none of alice's
    const bobs = [await signIn('bob', 'secret-b'), await signIn('bob', 'secret-b')];
    const pw = xeo(['users', 'passwd', 'bob', '--password', 'secret-b2'], { dataDir: s.dataDir });
    expect(pw.stdout).toContain('2 access token(s) revoked');
    for (const t of bobs) expectError(await me(`Bearer ${t}`, '10.0.3.1'), 403, 'TokenInvalid');
    expect((await me(`Bearer ${await signIn('bob', 'secret-b2')}`, '10.0.3.1')).status).toBe(200);
    expect(xeo(['tokens', 'revoke', '--user', 'bob'], { dataDir: s.dataDir }).stdout).toContain('revoked 1 access token(s) of bob');
  });

  it('keep opaque tokens of an earlier installation working until they expire', async () => {
    const opaque = randomBytes(32).toString('base64url');
    const expired = randomBytes(32).toString('base64url');
    const db = new Database(path.join(s.dataDir, 'xeo.sqlite'));
    try {
      const add = db.prepare('INSERT INTO tokens (token_hash, user_id, expires_at) VALUES (?, ?, ?)');
      add.run(createHash('sha256').update(opaque).digest('hex'), 'alice', Date.now() + 3600_000);
      add.run(createHash('sha256').update(expired).digest('hex'), 'alice', Date.now() - 1000);
    } finally {
      db.close();
    }
    const ok = await me(`Bearer basic//${opaque}`, '10.0.4.1', '1.2.0');
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.user_id).toBe('alice');
    // the raw form is for JWTs only; an expired row is no token
    expectError(await me(`Bearer ${opaque}`, '10.0.4.1'), 403, 'TokenInvalid');
    expectError(await me(`Bearer basic//${expired}`, '10.0.4.1'), 403, 'TokenInvalid');
  });

  it('slow down whoever keeps sending forged tokens, and only them', async () => {
    const valid = await signIn();
    const forged = `${valid.slice(0, -10)}AAAAAAAAAA`;
    let limited = 0;
    for (let i = 0; i < 32 && !limited; i++) {
      const r = await me(`Bearer ${forged}`, '10.0.5.1');
      if (r.status === 429) limited = i;
      else expectError(r, 403, 'TokenInvalid');
    }
    expect(limited).toBeGreaterThanOrEqual(30);
    const blocked = await me(`Bearer ${valid}`, '10.0.5.1');
    expectError(blocked, 429, 'TooManyRequests');
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect((await me(`Bearer ${valid}`, '10.0.5.2')).status).toBe(200);
  });
});
