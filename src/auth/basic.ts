// HTTP Basic sign-in, and the rows of the access tokens it hands out: only the SHA-256 of a token
// (of an opaque token of an earlier Xeo, or of a JWT's `jti`) is stored, so a copy of the database
// does not let anyone sign in.
import { createHash } from 'node:crypto';
import type { Store, User } from '../store/types.js';
import { ApiError } from '../core/errors.js';
import { verifyPassword } from './password.js';

export const tokenHash = (token: string): string => createHash('sha256').update(token).digest('hex');

/** Parses `Basic base64(user:password)`. */
export function parseBasicHeader(header: string | undefined): { name: string; password: string } {
  const m = header ? /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header) : null;
  if (!header) throw new ApiError('AuthenticationRequired');
  if (!m) throw new ApiError('AuthenticationSchemeInvalid');
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new ApiError('CredentialsInvalid');
  return { name: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** The user whose name and password the header carries; throws CredentialsInvalid otherwise. */
export async function verifyBasic(store: Store, header: string | undefined): Promise<User> {
  const { name, password } = parseBasicHeader(header);
  const user = await store.users.byId(name);
  // Verify against a dummy hash for unknown users too, so timing does not reveal who exists.
  const ok = await verifyPassword(password, user?.passwordHash ?? DUMMY_HASH);
  if (!user || !user.passwordHash || !ok) throw new ApiError('CredentialsInvalid');
  return user;
}

/** The user of a live token row (by its hash) and when the token expires (ms since epoch), or null. */
export async function userOfToken(store: Store, hash: string): Promise<{ user: User; expiresAt: number } | null> {
  const live = await store.tokens.userOf(hash, Date.now());
  const user = live ? await store.users.byId(live.userId) : null;
  return user ? { user, expiresAt: live!.expiresAt } : null;
}

// A valid scrypt hash of a random password nobody knows.
const DUMMY_HASH = 'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA$' + Buffer.alloc(32).toString('base64url');
