// The key ring of our access tokens on a real record store (SQLite): two nodes agree on each
// period's key, the next key is published before it signs, a token stays valid through its grace
// period after its key stopped signing and not beyond, and expired keys leave the records. The ring
// takes the instant it is asked about, so the periods are walked through at chosen instants (the
// start of a period, the last moment of a grace period) instead of waited for on the clock.
import { describe, it, expect, afterAll } from 'vitest';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { openStore } from '../src/store/db.js';
import type { Store } from '../src/store/types.js';
import { KeyRing } from '../src/auth/keys.js';
import { TokenSigner } from '../src/auth/jwt.js';
import { removeDir, tempDir } from './helpers.js';

/** A day: the tokens signed with the real clock below stay in one period however slow the machine. */
const ROTATION_MS = 24 * 3600_000;
const TTL_MS = 3600_000;
const parties = { issuer: (prefix: string) => `https://xeo.test${prefix}/credentials/basic`, issuers: () => ['https://xeo.test/1.3.0/credentials/basic'], audience: () => 'https://xeo.test' };

const dir = tempDir();
let store: Store;
const rings: KeyRing[] = [];
afterAll(async () => {
  for (const r of rings) r.stop();
  await store?.close();
  removeDir(dir);
});

/** The start of the period `now` falls in. */
const periodStart = (now: number) => now - (now % ROTATION_MS);
const kids = (ring: KeyRing, now?: number) => ring.jwks(now).keys.map((k) => k.kid);

describe('the key ring of access tokens', () => {
  it('makes one key per period, the same on two nodes, and publishes the next one ahead', async () => {
    store = await openStore(dir);
    const a = new KeyRing(store.signingKeys, ROTATION_MS, TTL_MS, 0);
    const b = new KeyRing(store.signingKeys, ROTATION_MS, TTL_MS, 0);
    rings.push(a, b);
    // Both start at once: each makes this period's and the next period's key; one of each is stored.
    await Promise.all([a.start(), b.start()]);
    const ka = a.jwks().keys;
    const kb = b.jwks().keys;
    expect(ka.length).toBe(2);
    expect(kb).toEqual(ka);
    expect(ka.every((k) => k.alg === 'EdDSA' && k.kty === 'OKP' && k.crv === 'Ed25519' && k.use === 'sig' && !('d' in k))).toBe(true);
    expect((await a.signing()).kid).toBe(ka[0].kid);
    expect((await b.signing()).kid).toBe(ka[0].kid);
  });

  it('rotates: a token verifies through its grace period after its key stopped signing, then no longer', async () => {
    const ring = rings[0];
    const signer = new TokenSigner(ring, parties);
    const other = new TokenSigner(rings[1], parties);
    const { token } = await signer.issue('alice', '/1.3.0', TTL_MS / 1000);
    const kid = decodeProtectedHeader(token).kid as string;
    // The other node verifies it (the keys are shared), and so does anyone with the published key set.
    expect((await other.verify(token)).sub).toBe('alice');
    const { payload } = await jwtVerify(token, createLocalJWKSet(ring.jwks()), { issuer: parties.issuers()[0], audience: parties.audience() });
    expect(payload.sub).toBe('alice');
    // The period of the token's key ends at `end`; its grace period (the token lifetime) at `end + TTL_MS`.
    const end = periodStart(Date.now()) + ROTATION_MS;
    const published = kids(ring);
    // Next period: a new key signs, the one published ahead.
    const nextKid = (await ring.signing(end)).kid;
    expect(nextKid).not.toBe(kid);
    expect(published).toContain(nextKid);
    expect((await ring.signing(end - 1)).kid).toBe(kid);
    // The old key is kept for its tokens' lifetime after its period (nothing more: no clock skew here).
    for (const node of rings) {
      expect(kids(node, end + TTL_MS - 1)).toContain(kid);
      expect(await node.verifying(kid, end + TTL_MS - 1)).not.toBeNull();
      // Past the grace period the key verifies nothing and is no longer published.
      expect(await node.verifying(kid, end + TTL_MS)).toBeNull();
      expect(kids(node, end + TTL_MS)).not.toContain(kid);
    }
  });

  it('removes expired keys from the records', async () => {
    const kid = (await rings[0].signing()).kid;
    const graceOver = periodStart(Date.now()) + ROTATION_MS + TTL_MS;
    expect((await store.signingKeys.live(graceOver - 1)).map((k) => k.kid)).toContain(kid);
    expect(await store.signingKeys.deleteExpired(graceOver)).toBeGreaterThanOrEqual(1);
    const live = await store.signingKeys.live(graceOver);
    expect(live.map((k) => k.kid)).not.toContain(kid);
    expect(live.length).toBeGreaterThan(0);
    expect(live.every((k) => k.verifiesUntil > graceOver)).toBe(true);
    // Never more than this period's, the next one's and the one before (still verifying its tokens).
    expect(live.length).toBeLessThanOrEqual(3);
  });
});
