// Turns the Authorization header into a user: `Bearer basic//TOKEN` or `Bearer oidc/PROVIDER/JWT`.
import type { Store, User } from '../store/types.js';
import { ApiError } from '../core/errors.js';
import { userOfBasicToken } from './basic.js';
import type { OidcVerifier } from './oidc.js';

/** Who a request's Authorization header names. */
export type Auth = Pick<Authenticator, 'user'>;

export class Authenticator {
  constructor(
    private readonly store: Store,
    private readonly oidc: OidcVerifier,
  ) {}

  /** The user of a bearer header; throws for a missing, malformed, unknown or expired token. */
  async user(header: string | undefined): Promise<User> {
    if (!header) throw new ApiError('AuthenticationRequired');
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
      const user = userOfBasicToken(this.store, token);
      if (!user) throw new ApiError('TokenInvalid');
      return user;
    }
    if (method === 'oidc') return this.oidc.userOf(provider, token);
    throw new ApiError('AuthenticationSchemeInvalid');
  }
}
