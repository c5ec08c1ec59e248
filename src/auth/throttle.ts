// Guessing is slowed down, not rewarded: failed sign-ins (and invalid bearer tokens) are counted per
// key in a sliding window: per client address, and per account from that address. Past a key's
// limit the answer is 429 with Retry-After, decided before any password hash is computed, and the
// wait doubles with every further failure (up to a cap). An attacker's failures never lock the
// real user out: the account is counted per address, so a right password from elsewhere works.
// Memory is bounded (LRU of keys). Nodes sharing a database server count in its ledger and tell
// each other of every wait through the change feed, so a valid request never leaves memory; a
// failure or a right password also reads the ledger, so a notice on its way lets no guess through.
import { log } from '../core/log.js';
import { LRUCache } from 'lru-cache';
import { ApiError } from '../core/errors.js';
import type { FailureLedger } from '../store/auth-failures.js';
import type { ChangeFeed } from '../store/changes.js';

export interface ThrottleLimits {
  /** Failures of one account from one address in the window before it waits. */
  perAccount: number;
  /** Failures from one address (all accounts, and invalid tokens) in the window before it waits. */
  perAddress: number;
  windowMs: number;
  /** Longest wait, seconds. */
  maxDelayS: number;
}

interface Count {
  failures: number[];
  blockedUntil: number;
}

/** Most keys remembered: beyond it the least recently failing ones are forgotten. */
const MAX_KEYS = 100_000;

export class FailureThrottle {
  private readonly counts = new LRUCache<string, Count>({ max: MAX_KEYS });

  constructor(
    private readonly limits: ThrottleLimits,
    private readonly shared?: { ledger: FailureLedger; feed: ChangeFeed },
  ) {
    if (!shared) return;
    shared.feed.subscribe('throttle', (notice) => {
      const cut = notice.indexOf(' ');
      this.waitUntil(notice.slice(cut + 1), Number(notice.slice(0, cut)));
    });
    shared.ledger.blocked(Date.now(), MAX_KEYS).then(
      (waits) => waits.forEach((b) => this.waitUntil(b.key, b.until)),
      (e: unknown) => log.warn(`could not read the sign-in waits of other nodes: ${(e as Error).message}`),
    );
  }

  /** Throws 429 TooManyRequests when any of the keys must wait (memory only: valid requests pay nothing). */
  check(keys: string[], now = Date.now()): void {
    let until = 0;
    for (const k of keys) until = Math.max(until, this.counts.get(k)?.blockedUntil ?? 0);
    if (until > now) throw tooMany(until, now);
  }

  /**
   * Records a failure under each key; a key past its limit waits 1 s, then 2, 4, ... up to the cap.
   * With a shared ledger, throws 429 when a key already waited when the request arrived: another
   * node decided that wait and its notice had not reached this node yet.
   */
  async fail(keys: [key: string, limit: number][], arrivedAt = Date.now()): Promise<void> {
    const now = Date.now();
    let waited = 0;
    let until = 0;
    // Every key's count first (memory, at once), then the shared ledger's for all keys together.
    const counted = keys.map(([key]) => {
      let c = this.counts.get(key);
      if (!c) this.counts.set(key, (c = { failures: [], blockedUntil: 0 }));
      c.failures = c.failures.filter((t) => t > now - this.limits.windowMs);
      c.failures.push(now);
      return c;
    });
    const shareds = await Promise.all(keys.map(([key]) => this.sharedCount(key, now)));
    for (let i = 0; i < keys.length; i++) {
      const [key, limit] = keys[i];
      const c = counted[i];
      const shared = shareds[i];
      if (shared) c.blockedUntil = Math.max(c.blockedUntil, shared.until);
      waited = Math.max(waited, shared?.until ?? 0);
      const over = (shared?.failures ?? c.failures.length) - limit;
      if (over >= 0) {
        c.blockedUntil = Math.max(c.blockedUntil, now + Math.min(this.limits.maxDelayS, 2 ** Math.min(over, 30)) * 1000);
        this.tellOthers(key, c.blockedUntil);
      }
      // Set again: forgotten meanwhile (a right password), the failure still counts.
      this.counts.set(key, c);
      until = Math.max(until, c.blockedUntil);
    }
    if (waited > arrivedAt) throw tooMany(until, now);
  }

  /**
   * A right password. With a shared ledger, throws 429 when a key waited when the request arrived
   * (a wait of another node not heard of yet); otherwise that account's count from that address
   * starts again (the address's does not).
   */
  async passed(keys: { account: string; address: string }, arrivedAt = Date.now()): Promise<void> {
    if (this.shared) {
      let until = 0;
      try {
        until = await this.shared.ledger.waiting([keys.account, keys.address]);
      } catch (e) {
        log.warn(`a sign-in not checked against the waits of other nodes: ${(e as Error).message}`);
      }
      if (until > arrivedAt) throw tooMany(until, Date.now());
    }
    this.forget(keys.account);
  }

  private forget(key: string): void {
    this.counts.delete(key);
    // The ledger's rows age out of the window on their own if this does not reach it.
    this.shared?.ledger.forget(key).catch(() => {});
  }

  /** The failures of `key` in the window on every node and its recorded wait, or null when counting alone (or the ledger is away). */
  private async sharedCount(key: string, now: number): Promise<{ failures: number; until: number } | null> {
    if (!this.shared) return null;
    try {
      return await this.shared.ledger.record(key, now, now - this.limits.windowMs);
    } catch (e) {
      log.warn(`counting a failed sign-in on this node only: ${(e as Error).message}`);
      return null;
    }
  }

  private tellOthers(key: string, until: number): void {
    if (!this.shared) return;
    // If the ledger cannot be reached, the notice still reaches the nodes that are up.
    this.shared.ledger.block(key, until).catch(() => {});
    void this.shared.feed.publish('throttle', `${until} ${key}`);
  }

  private waitUntil(key: string, until: number): void {
    if (!key || !Number.isFinite(until) || until <= Date.now()) return;
    const c = this.counts.get(key) ?? { failures: [], blockedUntil: 0 };
    if (until <= c.blockedUntil) return;
    c.blockedUntil = until;
    this.counts.set(key, c);
  }

  signInKeys(account: string, address: string): { account: string; address: string } {
    return { account: `account:${account}\n${address}`, address: `address:${address}` };
  }

  get perAccount(): number {
    return this.limits.perAccount;
  }

  get perAddress(): number {
    return this.limits.perAddress;
  }
}

function tooMany(until: number, now: number): ApiError {
  const e = new ApiError('TooManyRequests', {}, 'Too many failed sign-ins from here. Wait before trying again.');
  e.headers = { 'Retry-After': String(Math.max(1, Math.ceil((until - now) / 1000))) };
  return e;
}
