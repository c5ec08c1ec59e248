// Revoking access tokens: their rows go, and every node hears of it through the change feed (nodes
// that miss the notice, or an embedded server told by the command line, notice within RECHECK_MS
// when they read the row again).
import type { Store } from '../store/types.js';
import type { ChangeFeed } from '../store/changes.js';
import { tokenHash } from './basic.js';
import { looksLikeJwt, peekClaims } from './jwt.js';

/** Revokes every token of a user (a password changed, a user deleted); answers how many were live. */
export async function revokeUserTokens(store: Store, feed: ChangeFeed | null, userId: string): Promise<number> {
  const n = await store.tokens.revokeUser(userId);
  await feed?.publish('revoked', `user:${userId}`);
  return n;
}

/** Tells the nodes that a user's tokens are gone (their rows went with the user). */
export async function announceUserGone(feed: ChangeFeed | null, userId: string): Promise<void> {
  await feed?.publish('revoked', `user:${userId}`);
}

/**
 * Revokes one token, given as the token itself (a JWT, or an opaque token of an earlier Xeo) or as
 * a JWT's `jti`; answers whether it was live.
 */
export async function revokeToken(store: Store, feed: ChangeFeed | null, given: string): Promise<boolean> {
  const value = given.replace(/^Bearer\s+/i, '').replace(/^basic\/\//, '');
  const jti = looksLikeJwt(value) ? peekClaims(value)?.jti : undefined;
  const hash = tokenHash(typeof jti === 'string' ? jti : value);
  const was = await store.tokens.revoke(hash);
  await feed?.publish('revoked', `token:${hash}`);
  return was;
}
