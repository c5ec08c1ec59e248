// The connection thread of PgDb (pg.ts): one `pg` client, one statement at a time, each answer
// posted on the port and announced through the shared flag the caller waits on. It reconnects
// when the server went away, so a restarted PostgreSQL is used again without restarting Xeo.
import { workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import { unreachable, type PgReply, type PgRequest } from './pg.js';

const { url, port, flag, timeoutMs } = workerData as { url: string; port: MessagePort; flag: Int32Array; timeoutMs: number };

// Counts and sums come back as numbers, not strings: our values stay far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v)); // int8
pg.types.setTypeParser(1700, (v) => Number(v)); // numeric

let client: pg.Client | null = null;

async function connected(): Promise<pg.Client> {
  if (client) return client;
  const c = new pg.Client({ connectionString: url, statement_timeout: timeoutMs, connectionTimeoutMillis: 5000 });
  c.on('error', () => {
    // The server closed the connection: the next statement connects again.
    if (client === c) client = null;
  });
  await c.connect();
  client = c;
  return c;
}

function answer(reply: PgReply): void {
  // Posted before the flag is raised: the caller, once woken, finds it on the port.
  port.postMessage(reply);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
}

port.on('message', async (req: PgRequest) => {
  const seq = req.seq;
  if ('close' in req) {
    await client?.end().catch(() => {});
    client = null;
    answer({ rows: [], changes: 0, seq });
    port.close();
    return;
  }
  try {
    const c = await connected();
    const r = await c.query({ text: req.sql, values: req.params });
    // A multi-statement text (migrations) answers one result per statement.
    const last = Array.isArray(r) ? r[r.length - 1] : r;
    answer({ rows: last?.rows ?? [], changes: last?.rowCount ?? 0, seq });
  } catch (e) {
    const err = e as { message?: string; code?: string };
    if (unreachable(err.code)) {
      await client?.end().catch(() => {});
      client = null;
    }
    answer({ error: err.message ?? String(e), code: err.code, seq });
  }
});
