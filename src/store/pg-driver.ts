// The PostgreSQL driver, loaded the first time a store, lock or change feed of PostgreSQL needs
// it: a node on the embedded SQLite store (every node and thread of a default installation) never
// loads its modules, which shortens every start.
import type pgModule from 'pg';

export type Pg = typeof pgModule;

let driver: Promise<Pg> | null = null;

/**
 * A connection of its own (the change feed's LISTEN, a node's lock session), outside any pool:
 * the same deadline to connect and per statement, kept alive across idle minutes.
 */
export async function pgClient(url: string, timeoutMs: number): Promise<pgModule.Client> {
  const pg = await pgDriver();
  return new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs, keepAlive: true });
}

/** The `pg` module, set up once: counts and sums come back as numbers (our values stay far below 2^53). */
export function pgDriver(): Promise<Pg> {
  return (driver ??= import('pg').then(({ default: pg }) => {
    pg.types.setTypeParser(20, (v) => Number(v)); // int8
    pg.types.setTypeParser(1700, (v) => Number(v)); // numeric
    return pg;
  }));
}
