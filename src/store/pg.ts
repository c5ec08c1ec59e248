// PostgreSQL behind the SqlDb surface: a pool of connections on the event loop (`pg.Pool`), so a
// node runs as many statements at once as it has connections and the event loop never waits for
// an answer. Every statement has a deadline, counted on our side too: a server that stopped
// answering (hung, or cut off by the network) costs the requests that need records a 503 after
// that time, and nothing else. A connection that timed out or broke is thrown away, so a server
// that comes back is used again without restarting Xeo.
import type pg from 'pg';
import { ServerUnavailable } from '../core/errors.js';
import { countCall } from '../core/metrics.js';
import { UniqueViolation, type Param, type SqlDb, type SqlRunner } from './sql.js';
import { pgDriver } from './pg-driver.js';

/**
 * Whether an error means the server is away rather than refusing the statement: a network error
 * (ECONNREFUSED, ...; not a five-character SQLSTATE), class 08 (connection), 57P (shutdown),
 * 53 (resources), 57014 (a statement cancelled by its timeout), or no code at all (our own timeout).
 */
export function unreachable(code: string | undefined): boolean {
  return !code || !/^[0-9A-Z]{5}$/.test(code) || /^(08|57P|53|57014)/.test(code);
}

/**
 * The records cannot be reached: the request answers 503 with Retry-After (records stay as they
 * were: a statement that did not reach the server changed nothing, a transaction without its
 * COMMIT is rolled back). Why is logged here, not told to the client.
 */
export class StoreUnavailable extends ServerUnavailable {
  constructor(reason: string) {
    super('record store', reason);
  }
}

export interface PgOptions {
  /** Connections of this process. */
  poolSize: number;
  /** Longest wait for one statement (or for a connection to run it on), ms. */
  timeoutMs: number;
}

export const PG_DEFAULTS: PgOptions = { poolSize: 10, timeoutMs: 10_000 };

export class PgDb implements SqlDb {
  readonly dialect = 'postgres';
  /** Made once the driver has loaded (a statement waits for that the first time only). */
  private readonly pool: Promise<pg.Pool>;
  private closed = false;
  /** `?` placeholders become `$1, $2, ...` once per statement text. */
  private readonly translated = new Map<string, string>();

  constructor(
    readonly url: string,
    readonly options: PgOptions = PG_DEFAULTS,
  ) {
    this.pool = pgDriver().then((driver) => {
      const pool = new driver.Pool({
        connectionString: url,
        max: options.poolSize,
        connectionTimeoutMillis: options.timeoutMs,
        // The server gives up a statement at the deadline; our side gives up too when the server
        // does not answer at all (a hung server cannot cancel anything).
        statement_timeout: options.timeoutMs,
        query_timeout: options.timeoutMs + 500,
        idle_in_transaction_session_timeout: options.timeoutMs * 2,
        idleTimeoutMillis: 30_000,
        keepAlive: true,
        allowExitOnIdle: true,
      });
      // An idle connection the server closed: the pool drops it; the next statement takes another.
      pool.on('error', () => {});
      return pool;
    });
    // A driver that failed to load fails each statement (StoreUnavailable), not the process.
    this.pool.catch(() => {});
  }

  get<T>(sql: string, ...params: Param[]): Promise<T | undefined> {
    return this.query(null, sql, params).then((r) => r.rows[0] as T | undefined);
  }

  all<T>(sql: string, ...params: Param[]): Promise<T[]> {
    return this.query(null, sql, params).then((r) => r.rows as T[]);
  }

  run(sql: string, ...params: Param[]): Promise<number> {
    return this.query(null, sql, params).then((r) => r.changes);
  }

  async transaction<T>(fn: (tx: SqlRunner) => Promise<T>): Promise<T> {
    const client = await this.connect();
    const tx: SqlRunner = {
      dialect: 'postgres',
      get: (sql, ...params) => this.query(client, sql, params).then((r) => r.rows[0] as never),
      all: (sql, ...params) => this.query(client, sql, params).then((r) => r.rows as never),
      run: (sql, ...params) => this.query(client, sql, params).then((r) => r.changes),
    };
    let broken: Error | undefined;
    try {
      await this.query(client, 'BEGIN', []);
      const out = await fn(tx);
      await this.query(client, 'COMMIT', []);
      return out;
    } catch (e) {
      if (e instanceof StoreUnavailable) broken = e;
      else {
        // The server rolls back on its own when the connection is gone; then it is thrown away.
        await this.query(client, 'ROLLBACK', []).catch((r: Error) => (broken = r));
      }
      throw e;
    } finally {
      this.release(client, broken);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // closing: a pool that never connected has nothing to end
    await this.pool.then((pool) => pool.end()).catch(() => {});
  }

  private async connect(): Promise<pg.PoolClient> {
    if (this.closed) throw new StoreUnavailable('the record store is closed');
    try {
      return await (await this.pool).connect();
    } catch (e) {
      throw new StoreUnavailable((e as Error).message);
    }
  }

  /** On `client` (a transaction's), else on a connection of the pool for this statement alone. */
  private async query(client: pg.PoolClient | null, sql: string, params: Param[]): Promise<{ rows: unknown[]; changes: number }> {
    // Counted from the wait for a connection on: a pool that has none free is part of the latency.
    const t0 = performance.now();
    let own: pg.PoolClient;
    try {
      own = client ?? (await this.connect());
    } catch (e) {
      countCall('records', false, performance.now() - t0);
      throw e;
    }
    let broken: Error | undefined;
    let ok = false;
    try {
      const r = await own.query({ text: params.length ? this.placeholders(sql) : sql, values: params });
      ok = true;
      // A multi-statement text (migrations) answers one result per statement.
      const last = (Array.isArray(r) ? r[r.length - 1] : r) as pg.QueryResult | undefined;
      return { rows: last?.rows ?? [], changes: last?.rowCount ?? 0 };
    } catch (e) {
      const err = e as { message?: string; code?: string };
      if (err.code === '23505') {
        ok = true;
        throw new UniqueViolation(err.message ?? 'duplicate');
      }
      if (unreachable(err.code)) {
        broken = e as Error;
        throw new StoreUnavailable(err.message ?? String(e));
      }
      throw new Error(`PostgreSQL: ${err.message} (${err.code}) in: ${sql}`, { cause: e });
    } finally {
      countCall('records', ok, performance.now() - t0);
      if (!client) this.release(own, broken);
    }
  }

  /** Back to the pool; a connection that failed is closed at once (a hung server never answers its goodbye). */
  private release(client: pg.PoolClient, broken: Error | undefined): void {
    if (broken) (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    client.release(broken);
  }

  private placeholders(sql: string): string {
    let out = this.translated.get(sql);
    if (out === undefined) {
      let n = 0;
      // Statements here hold no '?' inside string literals, so every one is a placeholder.
      out = sql.replace(/\?/g, () => `$${++n}`);
      this.translated.set(sql, out);
    }
    return out;
  }
}
