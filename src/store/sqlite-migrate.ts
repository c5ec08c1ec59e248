// Migrations of the SQLite file run on a thread of their own, so that a long one (a table rebuilt,
// an index made over many rows) never holds the event loop. This module is both: the function the
// store calls, and, started as a thread, the migration itself.
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { builtFile } from '../core/built-file.js';
import { migrateSqliteFile } from './schema.js';
import { THREAD_NAMES } from '../core/thread-names.js';

const MARKER = 'xeo-sqlite-migrate';

/** Brings the SQLite file up to date on a thread; the file is closed again when it answers. */
export function migrateSqlite(file: string): Promise<void> {
  const entry = builtFile(import.meta.url, './sqlite-migrate.js');
  // Without a build (a script run on sources alone), the migration runs here.
  if (!entry) return Promise.resolve().then(() => migrateSqliteFile(file));
  return new Promise((resolve, reject) => {
    const w = new Worker(entry, { name: THREAD_NAMES.migrate, workerData: { marker: MARKER, file } });
    w.once('message', (m: { ok: boolean; error?: string }) => (m.ok ? resolve() : reject(new Error(m.error))));
    w.once('error', reject);
    w.once('exit', (code) => reject(new Error(`the migration thread ended with code ${code}`)));
  });
}

if (!isMainThread && (workerData as { marker?: string } | null)?.marker === MARKER) {
  try {
    migrateSqliteFile((workerData as { file: string }).file);
    parentPort!.postMessage({ ok: true });
  } catch (e) {
    parentPort!.postMessage({ ok: false, error: (e as Error).message });
  }
}
