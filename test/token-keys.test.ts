// The key ring of our access tokens on a real record store (SQLite), with rotation periods short
// enough to watch: two nodes agree on each period's key, the next key is published before it
// signs, a token stays valid through its grace period after its key stopped signing and not beyond,
// and expired keys leave the records.
import { describe, it, expect, afterAll } from 'vitest';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { openStore } from '../src/store/db.js';
import type { Store } from '../src/store/types.js';
import { KeyRing } from '../src/auth/keys.js';
import { TokenSigner } from '../src/auth/jwt.js';
import { removeDir, tempDir } from './helpers.js';

const ROTATION_MS = 1500;
const TTL_MS = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const parties = { issuer: (prefix: string) => `https://xeo.test${prefix}/credentials/basic`, issuers: () => ['https://xeo.test/1.3.0/credentials/basic'], audience: () => 'https://xeo.test' };

const dir = tempDir();
let store: Store;
const rings: KeyRing[] = [];
afterAll(async () => {
  for (const r of rings) r.stop();
  await store?.close();
  removeDir(dir);
});

/** Waits until just after a period boundary, so a test has (almost) a whole period before the next. */
async function periodStart(): Promise<void> {
  await sleep(ROTATION_MS - (Date.now() % ROTATION_MS) + 30);
}

describe('the key ring of access tokens', () => {
  it('makes one key per period, the same on two nodes, and publishes the next one ahead', async () => {
    store = await openStore(dir);
    await periodStart();
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
    await periodStart();
    const { token } = await signer.issue('alice', '/1.3.0', TTL_MS / 1000);
    const kid = decodeProtectedHeader(token).kid;
    // The other node verifies it (the keys are shared), and so does anyone with the published key set.
    expect((await other.verify(token)).sub).toBe('alice');
    const { payload } = await jwtVerify(token, createLocalJWKSet(ring.jwks()), { issuer: parties.issuers()[0], audience: parties.audience() });
    expect(payload.sub).toBe('alice');
    // Next period: a new key signs, the one published ahead.
    const published = ring.jwks().keys.map((k) => k.kid);
    await periodStart();
    const next = await signer.issue('alice', '/1.3.0', TTL_MS / 1000);
    const nextKid = decodeProtectedHeader(next.token).kid;
    expect(nextKid).not.toBe(kid);
    expect(published).toContain(nextKid);
    // The old key is kept for its tokens' lifetime after its period (nothing more: no clock skew here).
    expect(ring.jwks().keys.map((k) => k.kid)).toContain(kid);
    // Past the grace period (the token lifetime after the key's period) the key verifies nothing.
    await sleep(TTL_MS + 100);
    await expect(other.verify(token)).rejects.toMatchObject({ code: 'TokenInvalid' });
    expect(ring.jwks().keys.map((k) => k.kid)).not.toContain(kid);
    expect(await rings[1].verifying(kid as string)).toBeNull();
  });

  it('removes expired keys from the records', async () => {
    const now = Date.now();
    await store.signingKeys.deleteExpired(now);
    const live = await store.signingKeys.live(now);
    expect(live.length).toBeGreaterThan(0);
    expect(live.every((k) => k.verifiesUntil > now)).toBe(true);
    // Never more than this period's, the next one's and the one before (still verifying its tokens).
    expect(live.length).toBeLessThanOrEqual(3);
  });
});
