// The demo collection for tests, generated once per build and shared: generating takes seconds and
// ~180 MB, so each test gets its own copy of the database only, whose items point at the shared
// COGs (read-only for tests). A lock folder keeps parallel test files from generating twice.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { addUser, login, removeDir, ROOT, startServer, tempDir, type TestServer } from './helpers.js';
import { openStore } from '../src/store/db.js';
import type { ItemMeta } from '../src/core/catalog.js';

export const DEMO_COLLECTION = 'DEMO_S2_L2A';

function buildKey(): string {
  const h = createHash('sha256');
  for (const f of ['dist/src/ingest/demo.js', 'dist/src/output/cog-writer.js', 'dist/src/store/db.js']) {
    h.update(readFileSync(path.join(ROOT, f)));
  }
  return h.digest('hex').slice(0, 16);
}

async function sharedDemoDir(): Promise<string> {
  const dir = path.join(tmpdir(), `xeo-test-demo-${buildKey()}`);
  const ready = path.join(dir, 'READY');
  const lock = `${dir}.lock`;
  for (let waited = 0; !existsSync(ready); waited += 250) {
    try {
      mkdirSync(lock);
    } catch {
      // Someone else generates it; a lock older than five minutes is a crashed run's.
      if (waited > 300_000 || Date.now() - statSync(lock).mtimeMs > 300_000) throw new Error(`demo data lock ${lock} is stale; remove it`);
      await new Promise((r) => setTimeout(r, 250));
      continue;
    }
    // Demo data of earlier builds is stale: make room before writing another ~180 MB. Only data
    // unused for a day goes, since other checkouts (other builds) may be testing with theirs now.
    for (const old of readdirSync(tmpdir())) {
      if (!old.startsWith('xeo-test-demo-') || old.startsWith(path.basename(dir))) continue;
      const full = path.join(tmpdir(), old);
      try {
        if (Date.now() - statSync(full).mtimeMs > 24 * 3600_000) rmSync(full, { recursive: true, force: true });
      } catch {
        // gone meanwhile
      }
    }
    const s = await startServer({ XEO_DEMO: 'true' }, dir);
    await s.stop();
    writeFileSync(ready, new Date().toISOString());
    rmdirSync(lock);
  }
  return dir;
}

/** A fresh data dir whose catalog holds the demo collection. */
export async function demoDataDir(): Promise<string> {
  const shared = await sharedDemoDir();
  // Marks the shared data as in use (its age decides when other builds may remove it).
  utimesSync(shared, new Date(), new Date());
  const dir = tempDir();
  for (const f of ['xeo.sqlite', 'xeo.sqlite-wal', 'xeo.sqlite-shm']) {
    if (existsSync(path.join(shared, f))) cpSync(path.join(shared, f), path.join(dir, f));
  }
  return dir;
}

export interface DemoWorld {
  server: TestServer;
  /** Authorization header values by user name. */
  tokens: Record<string, string>;
  /** The demo collection's items, in time order. */
  items: ItemMeta[];
  /** A scratch folder of the test file's own. */
  work: string;
}

/**
 * The set-up test files of the demo collection share: a server on a copy of the demo data (with
 * `env`), the users signed in, the items and a scratch folder; all stopped and removed after the
 * file. `ready` receives it once it is up.
 */
export function useDemoServer(opts: { env?: Record<string, string>; users: Record<string, string> }, ready: (w: DemoWorld) => void | Promise<void>): void {
  let world: DemoWorld | null = null;
  beforeAll(async () => {
    const server = await startServer(opts.env ?? {}, await demoDataDir());
    const tokens: Record<string, string> = {};
    for (const [name, password] of Object.entries(opts.users)) {
      addUser(server.dataDir, name, password);
      tokens[name] = await login(server, name, password);
    }
    const records = await openStore(server.dataDir);
    const items = await records.collections.items(DEMO_COLLECTION);
    await records.close();
    world = { server, tokens, items, work: tempDir() };
    await ready(world);
  }, 180_000);
  afterAll(async () => {
    if (!world) return;
    await world.server.stop();
    removeDir(world.server.dataDir);
    removeDir(world.work);
  });
}
