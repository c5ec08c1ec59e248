// The keys that sign our access tokens (JWTs, EdDSA on Ed25519), kept in the record store so every
// node signs and verifies alike. Time is cut into rotation periods; the key of a period signs
// during it and verifies the tokens it signed until the last of them expires (the grace period:
// the token lifetime after the period's end). The key of the next period is made one period ahead,
// so it is in every node's memory and in the published key set (JWKS) before it signs anything.
// Verifying never reads records: a key id this node does not know makes it read the key set again,
// at most once per REFRESH_GAP_MS, so unknown ids cannot make it read on every request.
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { SigningKey, SigningKeyRepo } from '../store/types.js';

export const TOKEN_ALG = 'EdDSA';
/** Clock differences between nodes allowed for: a key verifies this much longer than its last token lives. */
export const CLOCK_SKEW_MS = 60_000;
/** Shortest gap between two readings of the key set for an unknown key id. */
const REFRESH_GAP_MS = 2_000;
/** How often a node reads the key set anyway (keys made by other nodes, the next period's key, the sweep). */
const REFRESH_EVERY_MS = 60_000;

interface Loaded {
  key: SigningKey;
  verify: CryptoKey;
  sign: CryptoKey;
}

export class KeyRing {
  private readonly keys = new Map<string, Loaded>();
  /** Keys being made or loaded, by kid (a node makes each once). */
  private readonly making = new Map<string, Promise<Loaded>>();
  private lastRefresh = 0;
  private refreshing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly repo: SigningKeyRepo,
    private readonly rotationMs: number,
    /** Lifetime of the tokens signed (a key verifies this long after its period, plus `skewMs`). */
    private readonly tokenTtlMs: number,
    /** Clock differences between nodes allowed for. */
    private readonly skewMs = CLOCK_SKEW_MS,
  ) {}

  /** Reads the key set, makes the keys of this period and the next where missing, and keeps them up to date. */
  async start(): Promise<void> {
    await this.refresh();
    await this.ensurePeriods(Date.now());
    this.timer = setInterval(() => void this.tick(), REFRESH_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async tick(): Promise<void> {
    try {
      const now = Date.now();
      await this.refresh();
      await this.ensurePeriods(now);
      await this.repo.deleteExpired(now);
    } catch (e) {
      console.error(`[xeo] the token signing keys could not be read: ${(e as Error).message}`);
    }
  }

  private period(now: number): number {
    return Math.floor(now / this.rotationMs);
  }

  /** The key id of a period: derived alike on every node, with the period length (a changed rotation makes new ids). */
  private kidOf(period: number): string {
    return `${Math.round(this.rotationMs / 1000)}s-${period}`;
  }

  private async ensurePeriods(now: number): Promise<void> {
    const p = this.period(now);
    await Promise.all([this.ensure(p), this.ensure(p + 1)]);
  }

  /** The key of a period: in memory, or stored by this node or another (the first one stored wins). */
  private ensure(period: number): Promise<Loaded> {
    const kid = this.kidOf(period);
    const known = this.keys.get(kid);
    if (known) return Promise.resolve(known);
    let p = this.making.get(kid);
    if (!p) {
      p = this.make(kid, period).finally(() => this.making.delete(kid));
      this.making.set(kid, p);
    }
    return p;
  }

  private async make(kid: string, period: number): Promise<Loaded> {
    const { publicKey, privateKey } = await generateKeyPair(TOKEN_ALG, { crv: 'Ed25519', extractable: true });
    const start = period * this.rotationMs;
    const end = start + this.rotationMs;
    const stored = await this.repo.addOnce({
      kid,
      alg: TOKEN_ALG,
      publicJwk: await exportJWK(publicKey),
      privateJwk: await exportJWK(privateKey),
      notBefore: start,
      signsUntil: end,
      verifiesUntil: end + this.tokenTtlMs + this.skewMs,
    });
    return this.load(stored);
  }

  private async load(key: SigningKey): Promise<Loaded> {
    const known = this.keys.get(key.kid);
    if (known) return known;
    const loaded = { key, verify: (await importJWK(key.publicJwk as JWK, key.alg)) as CryptoKey, sign: (await importJWK(key.privateJwk as JWK, key.alg)) as CryptoKey };
    this.keys.set(key.kid, loaded);
    return loaded;
  }

  /** Reads the stored keys: new ones are loaded, expired ones forgotten. */
  private refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      try {
        const now = Date.now();
        this.lastRefresh = now;
        const live = await this.repo.live(now);
        const ids = new Set(live.map((k) => k.kid));
        for (const kid of [...this.keys.keys()]) if (!ids.has(kid) && this.keys.get(kid)!.key.verifiesUntil <= now) this.keys.delete(kid);
        for (const k of live) await this.load(k);
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }

  /** The key that signs now. */
  async signing(now = Date.now()): Promise<{ kid: string; key: CryptoKey }> {
    // The next period's key too, when it is missing: published before it signs (at once when it exists).
    const p = this.period(now);
    const [loaded] = await Promise.all([this.ensure(p), this.ensure(p + 1)]);
    return { kid: loaded.key.kid, key: loaded.sign };
  }

  /**
   * The public key of `kid` when it still verifies; null for a key that is not ours (or expired).
   * Synchronous for a known key; an unknown one makes this node read the key set again, rarely.
   */
  verifying(kid: string, now = Date.now()): CryptoKey | null | Promise<CryptoKey | null> {
    const known = this.keys.get(kid);
    if (known) return known.key.verifiesUntil > now && known.key.notBefore - this.skewMs <= now ? known.verify : null;
    if (now - this.lastRefresh < REFRESH_GAP_MS) return null;
    return this.refresh().then(
      () => {
        const k = this.keys.get(kid);
        return k && k.key.verifiesUntil > now && k.key.notBefore - this.skewMs <= now ? k.verify : null;
      },
      () => null,
    );
  }

  /** The public keys that verify tokens now or will sign next (a JWK Set, RFC 7517). */
  jwks(now = Date.now()): { keys: Record<string, unknown>[] } {
    const keys = [...this.keys.values()]
      .filter((k) => k.key.verifiesUntil > now)
      .sort((a, b) => a.key.notBefore - b.key.notBefore)
      .map((k) => ({ ...k.key.publicJwk, kid: k.key.kid, alg: k.key.alg, use: 'sig' }));
    return { keys };
  }
}
