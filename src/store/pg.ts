// PostgreSQL behind the synchronous SqlDb surface: a connection thread (pg-connection.ts) runs each
// statement with the `pg` driver while the calling thread waits on a shared flag, and the answer is
// taken off the port synchronously. So every repository, and every caller, stays as it is on
// SQLite. The cost is one round trip per statement during which the calling thread waits, as it
// waits for SQLite's disk today; the tile path reads no records per tile.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { ServerUnavailable } from '../core/errors.js';
import { UniqueViolation, type Param, type SqlDb } from './sql.js';

/** What the connection thread is asked. */
export type PgRequest = ({ sql: string; params: Param[] } | { close: true }) & { seq: number };
/** What it answers (for request `seq`): rows and the count of changed rows, or the driver's error. */
export type PgReply = ({ rows: unknown[]; changes: number } | { error: string; code?: string }) & { seq: number };

/** The built connection thread: beside this file (dist), or in dist/src/store when running from src (tests). */
function connectionFile(): URL {
  const candidates = [new URL('./pg-connection.js', import.meta.url), new URL('../../dist/src/store/pg-connection.js', import.meta.url)];
  return candidates.find((u) => existsSync(fileURLToPath(u))) ?? candidates[0];
}

/**
 * Whether an error means the server is away rather than refusing the statement: a network error
 * (ECONNREFUSED, ...; not a five-character SQLSTATE), class 08 (connection), 57P (shutdown),
 * 53 (resources), or no code at all (our own timeout).
 */
export function unreachable(code: string | undefined): boolean {
  return !code || !/^[0-9A-Z]{5}$/.test(code) || /^(08|57P|53)/.test(code);
}

/** Slowest statement a caller waits for before the store is taken as unreachable. */
const STATEMENT_TIMEOUT_MS = 30_000;

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

export class PgDb implements SqlDb {
  readonly dialect = 'postgres';
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private readonly port: MessagePort;
  private readonly worker: Worker;
  private depth = 0;
  private closed = false;
  /** Numbers requests, so the late answer of one given up on is never taken for the next one's. */
  private seq = 0;
  /** `?` placeholders become `$1, $2, ...` once per statement text. */
  private readonly translated = new Map<string, string>();

  constructor(url: string) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(connectionFile(), {
      workerData: { url, port: port2, flag: this.flag, timeoutMs: STATEMENT_TIMEOUT_MS },
      transferList: [port2],
    });
    // The connection thread must not keep a finished process alive.
    this.worker.unref();
  }

  get<T>(sql: string, ...params: Param[]): T | undefined {
    return this.query(sql, params).rows[0] as T | undefined;
  }

  all<T>(sql: string, ...params: Param[]): T[] {
    return this.query(sql, params).rows as T[];
  }

  run(sql: string, ...params: Param[]): number {
    return this.query(sql, params).changes;
  }

  transaction<T>(fn: () => T): T {
    // Nested calls join the transaction already open (as one unit, like SQLite's outermost one).
    if (this.depth > 0) return fn();
    this.query('BEGIN', []);
    this.depth++;
    try {
      const out = fn();
      this.query('COMMIT', []);
      return out;
    } catch (e) {
      try {
        this.query('ROLLBACK', []);
      } catch {
        /* the connection is gone; the server rolls back on its own */
      }
      throw e;
    } finally {
      this.depth--;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.exchange({ close: true });
    } catch {
      /* closing a connection that is already gone */
    }
    void this.worker.terminate();
  }

  private query(sql: string, params: Param[]): { rows: unknown[]; changes: number } {
    if (this.closed) throw new StoreUnavailable('the record store is closed');
    const reply = this.exchange({ sql: params.length ? this.placeholders(sql) : sql, params });
    if ('error' in reply) {
      if (reply.code === '23505') throw new UniqueViolation(reply.error);
      if (unreachable(reply.code)) throw new StoreUnavailable(reply.error);
      throw new Error(`PostgreSQL: ${reply.error} (${reply.code}) in: ${sql}`);
    }
    return reply;
  }

  private exchange(req: Omit<PgRequest, 'seq'>): PgReply {
    const seq = ++this.seq;
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage({ ...req, seq });
    // The connection thread has its own timeout per statement; this one only guards against a thread that died.
    const deadline = Date.now() + STATEMENT_TIMEOUT_MS + 5000;
    for (;;) {
      const woke = Atomics.wait(this.flag, 0, 0, Math.max(0, deadline - Date.now()));
      Atomics.store(this.flag, 0, 0);
      // Answers of requests given up on before are dropped; ours is the one with our number.
      for (let got = receiveMessageOnPort(this.port); got; got = receiveMessageOnPort(this.port)) {
        if ((got.message as PgReply).seq === seq) return got.message as PgReply;
      }
      if (woke === 'timed-out' || Date.now() >= deadline) throw new StoreUnavailable('the record store did not answer in time');
    }
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
