// Turns the Authorization header into a user, and signs in with HTTP Basic. Bearer forms:
//  - `Bearer JWT`: a JWT (API 1.3.0's form): ours when its `iss` is one of our basic-credentials
//    URLs, else the access token of the OpenID Connect provider whose issuer is its `iss`;
//  - `Bearer basic//TOKEN`: our JWT, or an opaque token handed out before JWTs (valid until it expires);
//  - `Bearer oidc/PROVIDER/TOKEN`: an access token of that provider.
// A token found valid is kept in memory (never past its expiry) and its record read again only
// every RECHECK_MS, so a busy client costs no record read per request; a revocation reaches every
// node at once through the change feed (`revoked`), and the re-reading bounds how long a notice
// that got lost (or a revocation by the command line of an embedded installation) goes unnoticed.
// Whoever keeps failing is slowed down (throttle.ts).
import { LRUCache } from 'lru-cache';
import type { Store, User } from '../store/types.js';
import type { ChangeFeed } from '../store/changes.js';
import { ApiError } from '../core/errors.js';
import { verifyBasic, parseBasicHeader, tokenHash, userOfToken } from './basic.js';
import type { OidcVerifier } from './oidc.js';
import type { FailureThrottle } from './throttle.js';
import { looksLikeJwt, peekClaims, type TokenSigner } from './jwt.js';

/** Who a request's Authorization header names, and sign-in. */
export type Auth = Pick<Authenticator, 'user' | 'signIn'>;

/** How long a token found in the records is trusted from memory before its record is read again. */
export const RECHECK_MS = 60_000;
const TOKENS_KEPT = 10_000;

interface Known {
  user: User;
  /** The token's row in the records. */
  hash: string;
  /** ms since epoch: when it expires, and until when memory is trusted. */
  expiresAt: number;
  until: number;
}

export interface SignInOptions {
  ttlSeconds: number;
  /** The prefix of the version it was asked at (the token's `iss` is that version's basic-credentials URL). */
  prefix: string;
}

export class Authenticator {
  /** Valid tokens, by the token itself. */
  private readonly known = new LRUCache<string, Known>({ max: TOKENS_KEPT });
  /** Counts revocations heard: a token read from the records while one arrived is not kept. */
  private revocations = 0;

  constructor(
    private readonly store: Store,
    private readonly oidc: OidcVerifier,
    private readonly throttle: FailureThrottle,
    private readonly signer: TokenSigner,
    feed?: ChangeFeed,
  ) {
    feed?.subscribe('revoked', (notice) => this.forget(notice));
  }

  /** The user of a bearer header; throws for a missing, malformed, unknown, revoked or expired token. */
  async user(header: string | undefined, address: string): Promise<User> {
    if (!header) throw new ApiError('AuthenticationRequired');
    const key = `tokens:${address}`;
    const arrivedAt = Date.now();
    this.throttle.check([key], arrivedAt);
    try {
      return await this.bearer(header);
    } catch (e) {
      if (e instanceof ApiError && (e.code === 'TokenInvalid' || e.code === 'AuthenticationSchemeInvalid')) await this.throttle.fail([[key, this.throttle.perAddress]], arrivedAt);
      throw e;
    }
  }

  /** Signs in with HTTP Basic; the wait of a guessing client is decided before any hash is computed. */
  async signIn(header: string | undefined, address: string, options: SignInOptions): Promise<{ token: string; user: User }> {
    const { name } = parseBasicHeader(header);
    const keys = this.throttle.signInKeys(name, address);
    const arrivedAt = Date.now();
    this.throttle.check([keys.account, keys.address], arrivedAt);
    let user: User;
    try {
      user = await verifyBasic(this.store, header);
    } catch (e) {
      if (e instanceof ApiError && e.code === 'CredentialsInvalid') {
        await this.throttle.fail(
          [
            [keys.account, this.throttle.perAccount],
            [keys.address, this.throttle.perAddress],
          ],
          arrivedAt,
        );
      }
      throw e;
    }
    await this.throttle.passed(keys, arrivedAt);
    const { token, jti, expiresAt } = await this.signer.issue(user.id, options.prefix, options.ttlSeconds);
    // The token's row: it is valid while the row lives.
    await this.store.tokens.add(tokenHash(jti), user.id, expiresAt);
    // Expired rows go in the background: the answer does not wait for the sweep.
    this.store.tokens.deleteExpired(Date.now()).catch(() => {});
    return { token, user };
  }

  private async bearer(header: string): Promise<User> {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header.trim());
    if (!m) throw new ApiError('AuthenticationSchemeInvalid');
    const value = m[1];
    const kept = this.fromMemory(value);
    if (kept) return kept;
    // A slash never occurs in a JWT: without one the whole value is the token.
    if (!value.includes('/')) return this.rawJwt(value);
    const first = value.indexOf('/');
    const second = value.indexOf('/', first + 1);
    if (second < 0) throw new ApiError('TokenInvalid');
    const method = value.slice(0, first);
    const provider = value.slice(first + 1, second);
    const token = value.slice(second + 1);
    if (!token) throw new ApiError('TokenInvalid');
    if (method === 'basic') {
      if (provider !== '') throw new ApiError('TokenInvalid');
      if (looksLikeJwt(token)) return this.ourJwt(value, token);
      // An opaque token of an earlier Xeo: valid while its row lives.
      return this.fromRecord(value, tokenHash(token), null);
    }
    if (method === 'oidc') return this.oidc.userOf(provider, token);
    throw new ApiError('AuthenticationSchemeInvalid');
  }

  /** A raw JWT: ours, or an OpenID Connect provider's (the one whose issuer its `iss` names). */
  private rawJwt(token: string): Promise<User> {
    if (!looksLikeJwt(token)) throw new ApiError('TokenInvalid');
    const claims = peekClaims(token);
    if (!claims) throw new ApiError('TokenInvalid');
    if (this.signer.ours(claims.iss)) return this.ourJwt(token, token);
    const provider = typeof claims.iss === 'string' ? this.oidc.providerOfIssuer(claims.iss) : null;
    if (!provider) throw new ApiError('TokenInvalid');
    return this.oidc.userOf(provider, token);
  }

  private async ourJwt(value: string, token: string): Promise<User> {
    const v = await this.signer.verify(token);
    return this.fromRecord(value, tokenHash(v.jti), v.sub);
  }

  /** The user of a token known valid in memory (memory trusted for now), else null. */
  private fromMemory(value: string): User | null {
    const kept = this.known.get(value);
    if (!kept) return null;
    const now = Date.now();
    if (kept.until > now) return kept.user;
    if (kept.expiresAt <= now) this.known.delete(value);
    return null;
  }

  /** The token's row and user, read from the records, then kept in memory. `sub`: the user the token names (a JWT). */
  private async fromRecord(value: string, hash: string, sub: string | null): Promise<User> {
    const seen = this.revocations;
    const found = await userOfToken(this.store, hash);
    if (!found || (sub !== null && found.user.id !== sub)) {
      this.known.delete(value);
      throw new ApiError('TokenInvalid');
    }
    const now = Date.now();
    // A revocation heard while the row was read may be of this token: it is read again next time.
    if (seen === this.revocations) this.known.set(value, { user: found.user, hash, expiresAt: found.expiresAt, until: Math.min(found.expiresAt, now + RECHECK_MS) });
    return found.user;
  }

  /** A revocation notice: `token:HASH` or `user:ID`. */
  private forget(notice: string): void {
    this.revocations++;
    const [kind, ...rest] = notice.split(':');
    const id = rest.join(':');
    for (const [value, k] of this.known.entries()) {
      if ((kind === 'token' && k.hash === id) || (kind === 'user' && k.user.id === id)) this.known.delete(value);
    }
  }
}
