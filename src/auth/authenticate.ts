// Turns the Authorization header into a user: `Bearer basic//TOKEN` or `Bearer oidc/PROVIDER/JWT`;
// and HTTP Basic sign-in. Both slow down whoever keeps failing (throttle.ts). A basic token once
// found is kept in memory for a short while (never past its expiry), so a busy client does not
// cost a record read per request, and its requests that need no records work while they are away.
import { LRUCache } from 'lru-cache';
import type { Store, User } from '../store/types.js';
import { ApiError } from '../core/errors.js';
import { verifyBasic, issueBasicToken, parseBasicHeader, tokenHash, userOfBasicToken } from './basic.js';
import type { OidcVerifier } from './oidc.js';
import type { FailureThrottle } from './throttle.js';

/** Who a request's Authorization header names, and sign-in. */
export type Auth = Pick<Authenticator, 'user' | 'signIn'>;

/** How long a token found in the records is trusted from memory, and how many are kept. */
const TOKEN_MEMORY_MS = 30_000;
const TOKENS_KEPT = 10_000;

export class Authenticator {
  /** Users of basic tokens by the token's hash, until `until` (ms since epoch). */
  private readonly known = new LRUCache<string, { user: User; until: number }>({ max: TOKENS_KEPT });

  constructor(
    private readonly store: Store,
    private readonly oidc: OidcVerifier,
    private readonly throttle: FailureThrottle,
  ) {}

  /** The user of a bearer header; throws for a missing, malformed, unknown or expired token. */
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
  async signIn(header: string | undefined, address: string, ttlSeconds: number): Promise<{ token: string; user: User }> {
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
    return issueBasicToken(this.store, user, ttlSeconds);
  }

  private async bearer(header: string): Promise<User> {
    const m = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (!m) throw new ApiError('AuthenticationSchemeInvalid');
    const value = m[1];
    const first = value.indexOf('/');
    const second = first < 0 ? -1 : value.indexOf('/', first + 1);
    if (second < 0) throw new ApiError('TokenInvalid');
    const method = value.slice(0, first);
    const provider = value.slice(first + 1, second);
    const token = value.slice(second + 1);
    if (!token) throw new ApiError('TokenInvalid');
    if (method === 'basic') {
      if (provider !== '') throw new ApiError('TokenInvalid');
      const hash = tokenHash(token);
      const now = Date.now();
      const kept = this.known.get(hash);
      if (kept && kept.until > now) return kept.user;
      const found = await userOfBasicToken(this.store, token);
      if (!found) throw new ApiError('TokenInvalid');
      this.known.set(hash, { user: found.user, until: Math.min(found.expiresAt, now + TOKEN_MEMORY_MS) });
      return found.user;
    }
    if (method === 'oidc') return this.oidc.userOf(provider, token);
    throw new ApiError('AuthenticationSchemeInvalid');
  }
}
