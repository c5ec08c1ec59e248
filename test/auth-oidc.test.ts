// OpenID Connect sign-in end to end, against a real OpenID provider (`oidc-provider`) running on
// loopback: the provider list at /credentials/oidc, JWT access tokens from the client-credentials
// grant accepted at /me, every kind of bad token refused, and an unreachable provider answered with
// 503 while the server stays up.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPair, exportJWK, SignJWT, decodeJwt, type JWK } from 'jose';
import Provider from 'oidc-provider';
import { startServer, http, expectError, removeDir, type TestServer } from './helpers.js';

const CLIENT_ID = 'xeo-test-client';
const CLIENT_SECRET = 'a-long-client-secret-for-the-xeo-tests';
const AUDIENCE = 'urn:xeo:api';
const OTHER_AUDIENCE = 'urn:other:api';
const KID = 'xeo-test-key';

interface RunningProvider {
  issuer: string;
  server: Server;
  /** Lifetime in seconds of the next client-credentials tokens. */
  ttl: { seconds: number };
  token(resource?: string): Promise<string>;
  stop(): Promise<void>;
}

/** Starts an oidc-provider on an ephemeral loopback port, signing JWT access tokens with `jwk`. */
async function startProvider(jwk: JWK): Promise<RunningProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  const server = createServer((req, res) => {
    if (handler) handler(req, res);
    else {
      res.statusCode = 503;
      res.end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const ttl = { seconds: 600 };
  const provider = new Provider(issuer, {
    jwks: { keys: [jwk] },
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => AUDIENCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resourceIndicator: string) => ({
          scope: 'openid',
          audience: resourceIndicator,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    ttl: { ClientCredentials: () => ttl.seconds },
    cookies: { keys: ['xeo-test-cookie-key'] },
  });
  handler = provider.callback();
  return {
    issuer,
    server,
    ttl,
    async token(resource = AUDIENCE) {
      const r = await http('POST', `${issuer}/token`, {
        headers: {
          authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource }).toString(),
      });
      if (r.status !== 200 || typeof r.json?.access_token !== 'string') throw new Error(`token request failed: ${r.status} ${r.text}`);
      return r.json.access_token as string;
    },
    async stop() {
      if (!server.listening) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

const oidcProviders = (issuer: string) =>
  JSON.stringify([
    {
      id: 'local',
      issuer,
      title: 'Local test provider',
      scopes: ['openid'],
      audience: AUDIENCE,
      default_clients: [{ id: CLIENT_ID, grant_types: ['client_credentials'] }],
      authorization_parameters: { prompt: 'consent', access_type: 'offline' },
    },
  ]);

const bearer = (provider: string, token: string) => `Bearer oidc/${provider}/${token}`;

describe('OpenID Connect with a live provider', () => {
  let providerKey: CryptoKey;
  let op: RunningProvider;
  let s: TestServer;

  beforeAll(async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    providerKey = privateKey;
    const jwk = await exportJWK(privateKey);
    op = await startProvider({ ...jwk, kid: KID, alg: 'RS256', use: 'sig' });
    s = await startServer({ XEO_OIDC_PROVIDERS: oidcProviders(op.issuer) });
  });

  afterAll(async () => {
    await s?.stop();
    if (s) removeDir(s.dataDir);
    await op?.stop();
  });

  it('the provider is a working OpenID provider', async () => {
    const d = await http('GET', `${op.issuer}/.well-known/openid-configuration`);
    expect(d.status).toBe(200);
    expect(d.json.issuer).toBe(op.issuer);
    const token = await op.token();
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ iss: op.issuer, aud: AUDIENCE, sub: CLIENT_ID });
  });

  it('lists the provider at /credentials/oidc and refuses an Authorization header there', async () => {
    const r = await http('GET', `${s.base}/credentials/oidc`);
    expect(r.status).toBe(200);
    expect(r.headers['access-control-allow-origin']).toBeTruthy();
    expect(r.json.providers).toHaveLength(1);
    expect(r.json.providers[0]).toMatchObject({
      id: 'local',
      issuer: op.issuer,
      title: 'Local test provider',
      scopes: ['openid'],
      default_clients: [{ id: CLIENT_ID, grant_types: ['client_credentials'] }],
      authorization_parameters: { prompt: 'consent', access_type: 'offline' },
    });
    // the audience is our own setting, not part of the openEO provider description
    expect(r.json.providers[0].audience).toBeUndefined();

    const token = await op.token();
    expectError(await http('GET', `${s.base}/credentials/oidc`, { token: bearer('local', token) }), 403, 'AuthenticationSchemeInvalid');
    expectError(await http('GET', `${s.base}/credentials/oidc`, { token: 'Basic Zm9vOmJhcg==' }), 403, 'AuthenticationSchemeInvalid');
    // the capabilities advertise the endpoint now that a provider is configured
    const caps = await http('GET', `${s.base}/`);
    expect(caps.json.endpoints).toContainEqual({ path: '/credentials/oidc', methods: ['GET'] });
  });

  it('accepts an access token of the provider at /me and keeps the same user', async () => {
    const token = await op.token();
    const r = await http('GET', `${s.base}/me`, { token: bearer('local', token) });
    expect(r.status, r.text).toBe(200);
    expect(r.json.user_id).toBe(`local~${CLIENT_ID}`);
    expect(typeof r.json.name).toBe('string');
    expect(r.json.storage.quota).toBeGreaterThan(0);

    const again = await http('GET', `${s.base}/me`, { token: bearer('local', token) });
    expect(again.status).toBe(200);
    expect(again.json.user_id).toBe(r.json.user_id);
    // a fresh token of the same client is the same user too
    const other = await http('GET', `${s.base}/me`, { token: bearer('local', await op.token()) });
    expect(other.status).toBe(200);
    expect(other.json.user_id).toBe(r.json.user_id);
  });

  it('accepts the raw access token (API 1.3.0) by its issuer on every version, as the same user', async () => {
    const token = await op.token();
    const users = new Set<string>();
    for (const v of ['1.3.0', '1.2.0', '1.0.1', '1.0.0-rc.2']) {
      const r = await http('GET', `${s.url}/${v}/me`, { token: `Bearer ${token}`, headers: { origin: 'http://x.test' } });
      expect(r.status, `${v}: ${r.text}`).toBe(200);
      users.add(r.json.user_id);
    }
    users.add((await http('GET', `${s.base}/me`, { token: bearer('local', token) })).json.user_id);
    expect([...users]).toEqual([`local~${CLIENT_ID}`]);
  });

  it('refuses a raw token of an issuer no provider has, and HMAC tokens keyed with the public key', async () => {
    const now = Math.floor(Date.now() / 1000);
    const stranger = await new SignJWT({ sub: CLIENT_ID })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: KID })
      .setIssuer('https://someone-else.example')
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(providerKey);
    const generic = (await http('GET', `${s.base}/me`, { token: 'Bearer x' })).json.message;
    const r = await http('GET', `${s.base}/me`, { token: `Bearer ${stranger}` });
    expectError(r, 403, 'TokenInvalid');
    expect(r.json.message).toBe(generic);
    // Algorithm confusion: HS256 "signed" with the provider's public key as the secret.
    const jwks = (await http('GET', (await http('GET', `${op.issuer}/.well-known/openid-configuration`)).json.jwks_uri)).json;
    const publicJwk = jwks.keys.find((k: any) => k.kid === KID);
    for (const secret of [Buffer.from(JSON.stringify(publicJwk)), Buffer.from(publicJwk.n, 'base64url')]) {
      const confused = await new SignJWT({ sub: CLIENT_ID })
        .setProtectedHeader({ alg: 'HS256', kid: KID })
        .setIssuer(op.issuer)
        .setAudience(AUDIENCE)
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(new Uint8Array(secret));
      expectError(await http('GET', `${s.base}/me`, { token: `Bearer ${confused}` }), 403, 'TokenInvalid');
      expectError(await http('GET', `${s.base}/me`, { token: bearer('local', confused) }), 403, 'TokenInvalid');
    }
  });

  it('refuses a token signed by another key', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: CLIENT_ID, client_id: CLIENT_ID };
    for (const kid of [KID, undefined]) {
      const forged = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', ...(kid ? { kid } : {}) })
        .setIssuer(op.issuer)
        .setAudience(AUDIENCE)
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(privateKey);
      expectError(await http('GET', `${s.base}/me`, { token: bearer('local', forged) }), 403, 'TokenInvalid');
    }
  });

  it('refuses a tampered token', async () => {
    const token = await op.token();
    const [header, payload, signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    claims.sub = 'someone-else';
    const tampered = [header, Buffer.from(JSON.stringify(claims)).toString('base64url'), signature].join('.');
    expectError(await http('GET', `${s.base}/me`, { token: bearer('local', tampered) }), 403, 'TokenInvalid');
    // a signature cut short
    expectError(await http('GET', `${s.base}/me`, { token: bearer('local', token.slice(0, -8)) }), 403, 'TokenInvalid');
    // not a JWT at all, and an empty token
    expectError(await http('GET', `${s.base}/me`, { token: bearer('local', 'not-a-jwt') }), 403, 'TokenInvalid');
    expectError(await http('GET', `${s.base}/me`, { token: 'Bearer oidc/local/' }), 403, 'TokenInvalid');
  });

  it('refuses an unknown provider id', async () => {
    const token = await op.token();
    expectError(await http('GET', `${s.base}/me`, { token: bearer('nope', token) }), 403, 'AuthenticationSchemeInvalid');
  });

  it('refuses a token for another audience', async () => {
    // issued by the same provider, properly signed, but for another resource server
    const token = await op.token(OTHER_AUDIENCE);
    expect(decodeJwt(token).aud).toBe(OTHER_AUDIENCE);
    expectError(await http('GET', `${s.base}/me`, { token: bearer('local', token) }), 403, 'TokenInvalid');
  });

  it('refuses a token from another issuer signed with the provider key', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ sub: CLIENT_ID })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: KID })
      .setIssuer('http://127.0.0.1:1')
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(providerKey);
    expectError(await http('GET', `${s.base}/me`, { token: bearer('local', token) }), 403, 'TokenInvalid');
  });

  it('refuses an expired token', async () => {
    // one made by the provider with a lifetime of one second ...
    op.ttl.seconds = 1;
    let shortLived: string;
    try {
      shortLived = await op.token();
    } finally {
      op.ttl.seconds = 600;
    }
    const exp = decodeJwt(shortLived).exp!;
    expect(exp - decodeJwt(shortLived).iat!).toBe(1);
    // jose treats a token as expired once `exp <= now` (whole seconds): wait until then, plus a margin
    const wait = exp * 1000 - Date.now() + 1200;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    expectError(await http('GET', `${s.base}/me`, { token: bearer('local', shortLived) }), 403, 'TokenInvalid');

    // ... and one signed with the provider key that expired an hour ago
    const now = Math.floor(Date.now() / 1000);
    const old = await new SignJWT({ sub: CLIENT_ID })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: KID })
      .setIssuer(op.issuer)
      .setAudience(AUDIENCE)
      .setIssuedAt(now - 7200)
      .setExpirationTime(now - 3600)
      .sign(providerKey);
    expectError(await http('GET', `${s.base}/me`, { token: bearer('local', old) }), 403, 'TokenInvalid');

    // the same token with a valid lifetime is accepted: the refusals above are about expiry only
    const fresh = await new SignJWT({ sub: CLIENT_ID })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: KID })
      .setIssuer(op.issuer)
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(providerKey);
    const ok = await http('GET', `${s.base}/me`, { token: bearer('local', fresh) });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.user_id).toBe(`local~${CLIENT_ID}`);
  }, 15000);
});

describe('OpenID Connect with the provider down', () => {
  let down: RunningProvider;
  let token: string;
  let s: TestServer;

  beforeAll(async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    down = await startProvider({ ...(await exportJWK(privateKey)), kid: KID, alg: 'RS256', use: 'sig' });
    // a genuine token, then the provider goes away: its issuer is now a closed loopback port
    token = await down.token();
    await down.stop();
    s = await startServer({ XEO_OIDC_PROVIDERS: oidcProviders(down.issuer) });
  });

  afterAll(async () => {
    await s?.stop();
    if (s) removeDir(s.dataDir);
    await down?.stop();
  });

  it('answers 503 IdentityProviderUnavailable and stays up', async () => {
    const r = await http('GET', `${s.base}/me`, { token: bearer('local', token) });
    expectError(r, 503, 'IdentityProviderUnavailable');
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(r.json.message).toContain('local');
    // a failed discovery is not cached: the next request tries again and fails the same way
    expectError(await http('GET', `${s.base}/me`, { token: bearer('local', token) }), 503, 'IdentityProviderUnavailable');
    // the provider list needs no provider to be reachable
    expect((await http('GET', `${s.base}/credentials/oidc`)).status).toBe(200);
    const caps = await http('GET', `${s.base}/`);
    expect(caps.status).toBe(200);
    expect(caps.json.api_version).toBe('1.2.0');
    expect(s.proc.exitCode).toBeNull();
  });
});

describe('OpenID Connect with the provider gone after discovery', () => {
  // Skipped: src/auth/oidc.ts maps only JWKSTimeout to IdentityProviderUnavailable, so a refused
  // JWKS connection (or a non-200 JWKS answer) after a successful discovery is reported as 403
  // TokenInvalid today. Enable this test once that is fixed.
  it('answers 503 when the key set cannot be fetched', async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const p = await startProvider({ ...(await exportJWK(privateKey)), kid: KID, alg: 'RS256', use: 'sig' });
    const s = await startServer({ XEO_OIDC_PROVIDERS: oidcProviders(p.issuer) });
    try {
      const token = await p.token();
      // not a JWT: discovery runs and is cached, the key set is never fetched
      expectError(await http('GET', `${s.base}/me`, { token: bearer('local', 'not-a-jwt') }), 403, 'TokenInvalid');
      await p.stop();
      expectError(await http('GET', `${s.base}/me`, { token: bearer('local', token) }), 503, 'IdentityProviderUnavailable');
      expect((await http('GET', `${s.base}/`)).status).toBe(200);
    } finally {
      await s.stop();
      removeDir(s.dataDir);
      await p.stop();
    }
  });
});
