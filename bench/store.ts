// What a record costs on each engine: the statements of an authenticated request (a token lookup)
// and of a job's life (create, claim, progress, finish), per statement, awaited one after another,
// on the embedded SQLite file and on PostgreSQL on loopback through the store's pool; the baseline
// is the token lookup through the `pg` driver awaited directly, so `store_over_driver` is what our
// layer (placeholders, pool, deadlines) costs on top of the driver.
import pg from 'pg';
import { openStore } from '../src/store/db.js';
import type { Store } from '../src/store/types.js';
import { hasPostgres, startPostgres } from './postgres.js';
import { Cleanup, median, removeDir, round, table, tempDir } from './lib.js';
import type { BenchOptions, BenchResult } from './run.js';

const job = (id: string) => ({ id, userId: 'u', title: null, description: null, process: { process_graph: {} }, plan: 'free', budget: null, logLevel: 'info' as const });

/** Microseconds per statement of `fn`, which runs `statements` statements per call. */
async function perStatement(fn: (i: number) => Promise<unknown>, calls: number, statements: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) await fn(i);
  return ((performance.now() - t0) * 1000) / (calls * statements);
}

async function workload(s: Store, calls: number, tag: string): Promise<{ token: number; job: number }> {
  await s.users.create({ id: 'u', name: 'u', passwordHash: null, oidcIssuer: null, oidcSubject: null, quotaBytes: null });
  await s.tokens.add('hash', 'u', Date.now() + 3_600_000);
  const token = await perStatement(() => s.tokens.userOf('hash', Date.now()), calls, 1);
  const jobs = await perStatement(
    async (i) => {
      const id = `${tag}${i}`;
      await s.jobs.create(job(id)); // insert + read back: 2
      await s.jobQueue.enqueue(id); // transaction of 1 + begin/commit: 3
      await s.jobQueue.claim('n1'); // 1
      await s.jobs.report(id, 0, { progress: 50 }); // 1
      await s.jobs.transition(id, ['running'], 'finished', { progress: 100 }); // 1
    },
    Math.max(1, calls / 10),
    8,
  );
  return { token, job: jobs };
}

export async function run(opts: BenchOptions): Promise<BenchResult> {
  if (!hasPostgres) throw new Error('this bench needs PostgreSQL 15 (Debian package postgresql)');
  const cleanup = new Cleanup();
  const calls = opts.quick ? 2000 : 10000;
  const rounds = opts.quick ? 3 : 5;
  const server = await startPostgres();
  cleanup.add(() => server.remove());
  try {
    const sqlite: number[][] = [];
    const store: number[][] = [];
    const direct: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const dir = tempDir();
      const a = await openStore(dir);
      sqlite.push(Object.values(await workload(a, calls, `s${r}_`)));
      await a.close();
      removeDir(dir);
      const url = server.database();
      const b = await openStore({ dataDir: dir, databaseUrl: url });
      store.push(Object.values(await workload(b, calls, `p${r}_`)));
      await b.close();
      // The baseline: the token lookup through the driver itself, awaited one after another.
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      const t0 = performance.now();
      for (let i = 0; i < calls; i++) await c.query({ text: 'SELECT user_id, expires_at FROM tokens WHERE token_hash = $1 AND expires_at > $2', values: ['hash', Date.now()] });
      direct.push(((performance.now() - t0) * 1000) / calls);
      await c.end();
    }
    const m = (xs: number[][], k: number) => median(xs.map((x) => x[k]));
    const f = {
      sqlite_token_us: round(m(sqlite, 0), 1),
      sqlite_job_statement_us: round(m(sqlite, 1), 1),
      pg_token_us: round(m(store, 0), 1),
      pg_job_statement_us: round(m(store, 1), 1),
      pg_driver_token_us: round(median(direct), 1),
    };
    console.log(
      table([
        ['engine', 'token lookup µs', 'job statement µs'],
        ['SQLite (embedded)', f.sqlite_token_us, f.sqlite_job_statement_us],
        ['PostgreSQL, the store', f.pg_token_us, f.pg_job_statement_us],
        ['PostgreSQL, pg driver', f.pg_driver_token_us, '-'],
      ]),
    );
    return { figures: f, ratios: { store_over_driver: round(f.pg_token_us / f.pg_driver_token_us, 2), pg_over_sqlite: round(f.pg_token_us / f.sqlite_token_us, 1) } };
  } finally {
    await cleanup.run();
  }
}
