// Failed sign-ins counted across every node of an installation on a database server. One row per
// failure (so nodes counting at the same moment never lose a count) and one row per key that must
// wait. Rows older than the window are swept as failures arrive. The embedded store has no ledger:
// one process counts in its own memory, and nothing needs to outlive it.
import type { SqlDb } from './sql.js';

export interface FailureLedger {
  /** Records a failure of `key`; answers how many it has had since `since` (this one included),
   *  and until when it already waits (0: it does not). */
  record(key: string, now: number, since: number): Promise<{ failures: number; until: number }>;
  /** The latest wait recorded for any of `keys` (0: none). */
  waiting(keys: string[]): Promise<number>;
  /** `key` waits until `until` (a later wait already recorded stays). */
  block(key: string, until: number): Promise<void>;
  /** Forgets `key`'s failures and wait (a right password). */
  forget(key: string): Promise<void>;
  /** Every wait not yet over, for a node that starts. */
  blocked(now: number, limit: number): Promise<{ key: string; until: number }[]>;
}

/** How often, at most, the whole table is swept of old failures. */
const SWEEP_MS = 60_000;

export class SqlFailureLedger implements FailureLedger {
  private lastSweep = 0;

  constructor(private readonly db: SqlDb) {}

  async record(key: string, now: number, since: number): Promise<{ failures: number; until: number }> {
    if (now - this.lastSweep > SWEEP_MS) {
      this.lastSweep = now;
      // In the background: a sweep never delays the answer.
      void Promise.all([this.db.run('DELETE FROM auth_failures WHERE at <= ?', since), this.db.run('DELETE FROM auth_blocks WHERE until <= ?', now)]).catch(() => {});
    }
    await this.db.run('INSERT INTO auth_failures (key, at) VALUES (?, ?)', key, now);
    const row = await this.db.get<{ n: number | string; until: number | string | null }>(
      'SELECT (SELECT count(*) FROM auth_failures WHERE key = ? AND at > ?) AS n, (SELECT until FROM auth_blocks WHERE key = ?) AS until',
      key,
      since,
      key,
    );
    return { failures: Number(row?.n ?? 0), until: Number(row?.until ?? 0) };
  }

  async waiting(keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    const row = await this.db.get<{ until: number | string | null }>(`SELECT max(until) AS until FROM auth_blocks WHERE key IN (${keys.map(() => '?').join(', ')})`, ...keys);
    return Number(row?.until ?? 0);
  }

  async block(key: string, until: number): Promise<void> {
    const later = this.db.dialect === 'postgres' ? 'GREATEST(auth_blocks.until, excluded.until)' : 'max(auth_blocks.until, excluded.until)';
    await this.db.run(`INSERT INTO auth_blocks (key, until) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET until = ${later}`, key, until);
  }

  async forget(key: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.run('DELETE FROM auth_failures WHERE key = ?', key);
      await tx.run('DELETE FROM auth_blocks WHERE key = ?', key);
    });
  }

  async blocked(now: number, limit: number): Promise<{ key: string; until: number }[]> {
    return (await this.db.all<{ key: string; until: number | string }>('SELECT key, until FROM auth_blocks WHERE until > ? ORDER BY until DESC LIMIT ?', now, limit)).map((r) => ({
      key: r.key,
      until: Number(r.until),
    }));
  }
}
