// OpenID Connect bearer tokens: `Bearer oidc/PROVIDER/JWT`, or the raw JWT whose `iss` is the
// provider's issuer (API 1.3.0). The access token must be a JWT signed by the provider with an
// asymmetric algorithm; its keys come from the provider's JWKS (found through its discovery document) and
// are cached by jose. A user is identified by (issuer, subject) and created on first sight; its
// record is kept in memory for a short while, so a busy client does not cost a read per request.
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify, errors as joseErrors, type JWTVerifyGetKey } from 'jose';
import { request } from 'undici';
import { LRUCache } from 'lru-cache';
import type { OidcProviderConfig } from '../core/config.js';
import type { Store, User } from '../store/types.js';
import { ApiError } from '../core/errors.js';
import { log } from '../core/log.js';

interface Keys {
  issuer: string;
  jwks: JWTVerifyGetKey;
}

/** How long a user record found by (issuer, subject) is used from memory. */
const USER_MEMORY_MS = 30_000;

/** Signature algorithms accepted from providers: asymmetric ones only (an HMAC "signed" with a public key is a forgery). */
const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

export class OidcVerifier {
  private readonly keys = new Map<string, Promise<Keys>>();
  private readonly users = new LRUCache<string, User>({ max: 10_000, ttl: USER_MEMORY_MS });

  constructor(
    private readonly providers: OidcProviderConfig[],
    private readonly store: Store,
  ) {}

  private provider(id: string): OidcProviderConfig {
    const p = this.providers.find((x) => x.id === id);
    if (!p) throw new ApiError('AuthenticationSchemeInvalid', {}, `Unknown OpenID Connect provider '${id}'.`);
    return p;
  }

  private keysOf(p: OidcProviderConfig): Promise<Keys> {
    let k = this.keys.get(p.id);
    if (!k) {
      k = discover(p);
      this.keys.set(p.id, k);
      // A failed discovery is retried on the next request instead of being cached.
      k.catch(() => this.keys.delete(p.id));
    }
    return k;
  }

  /** The id of the provider whose issuer is `iss` (a trailing slash aside), or null. */
  providerOfIssuer(iss: string): string | null {
    const want = iss.replace(/\/+$/, '');
    return this.providers.find((p) => p.issuer === want)?.id ?? null;
  }

  /** The providers' ids (for readiness). */
  get providerIds(): string[] {
    return this.providers.map((p) => p.id);
  }

  /** Fetches a provider's discovery document afresh (readiness): resolves when it answers as it should. */
  async probe(providerId: string, signal?: AbortSignal): Promise<void> {
    const p = this.provider(providerId);
    const res = await request(`${p.issuer}/.well-known/openid-configuration`, { signal, headersTimeout: 5000, bodyTimeout: 5000 });
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`its discovery document answered HTTP ${res.statusCode}`);
    }
    const doc = (await res.body.json()) as { issuer?: string };
    if (typeof doc.issuer !== 'string' || doc.issuer.replace(/\/+$/, '') !== p.issuer) throw new Error('its discovery document names another issuer');
  }

  async userOf(providerId: string, token: string): Promise<User> {
    const p = this.provider(providerId);
    const { issuer, jwks } = await this.keysOf(p);
    let payload;
    try {
      ({ payload } = await jwtVerify(token, jwks, { issuer, audience: p.audience, algorithms: ASYMMETRIC }));
    } catch (e) {
      if (e instanceof ApiError) throw e;
      throw new ApiError('TokenInvalid');
    }
    if (typeof payload.sub !== 'string' || !payload.sub) throw new ApiError('TokenInvalid');
    return this.userFor(issuer, payload.sub, p.id, payload);
  }

  private async userFor(issuer: string, subject: string, providerId: string, claims: Record<string, unknown>): Promise<User> {
    const key = `${issuer}\n${subject}`;
    const kept = this.users.get(key);
    if (kept) return kept;
    const existing = await this.store.users.byOidc(issuer, subject);
    if (existing) {
      this.users.set(key, existing);
      return existing;
    }
    // `~` never occurs in basic user names, so these ids cannot collide with them.
    const id = /^[\w\-.]{1,64}$/.test(subject) ? `${providerId}~${subject}` : `${providerId}~${createHash('sha256').update(subject).digest('hex').slice(0, 24)}`;
    const name = [claims.preferred_username, claims.name, claims.email].find((v): v is string => typeof v === 'string');
    try {
      return await this.store.users.create({
        id,
        name: name ?? subject,
        passwordHash: null,
        oidcIssuer: issuer,
        oidcSubject: subject,
        quotaBytes: null,
      });
    } catch {
      // Two first requests of a new user raced; the other one created the record.
      const again = await this.store.users.byOidc(issuer, subject);
      if (again) return again;
      throw new ApiError('Internal', {}, 'could not create the user record');
    }
  }
}

async function discover(p: OidcProviderConfig): Promise<Keys> {
  try {
    const res = await request(`${p.issuer}/.well-known/openid-configuration`, { headersTimeout: 5000, bodyTimeout: 5000 });
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`status ${res.statusCode}`);
    }
    const doc = (await res.body.json()) as { issuer?: string; jwks_uri?: string };
    // OpenID Connect Discovery 1.0 §4.3: the document must name the issuer it was fetched for.
    if (typeof doc.issuer !== 'string' || doc.issuer.replace(/\/+$/, '') !== p.issuer) throw new Error(`issuer mismatch (${doc.issuer})`);
    if (!doc.jwks_uri) throw new Error('no jwks_uri');
    const remote = createRemoteJWKSet(new URL(doc.jwks_uri), { timeoutDuration: 5000 });
    // A key set that cannot be fetched is the provider's fault, not the token's: answer 503.
    const jwks: JWTVerifyGetKey = async (header, token) => {
      try {
        return await remote(header, token);
      } catch (e) {
        if (e instanceof joseErrors.JWKSNoMatchingKey || e instanceof joseErrors.JWKSMultipleMatchingKeys) throw e;
        throw new ApiError('IdentityProviderUnavailable', { provider: p.id });
      }
    };
    return { issuer: doc.issuer, jwks };
  } catch (e) {
    log.error(`OpenID Connect discovery of '${p.id}' at ${p.issuer} failed: ${(e as Error).message}`);
    throw new ApiError('IdentityProviderUnavailable', { provider: p.id });
  }
}
