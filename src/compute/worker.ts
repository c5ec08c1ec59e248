// A compute thread: runs process graphs off the server's event loop. It opens its own
// connection to the catalog (SQLite allows one per thread) and its own block cache.
import { parentPort, workerData } from 'node:worker_threads';
import { openStore } from '../store/db.js';
import { configureBlockCache } from '../data/cog-reader.js';
import { ApiError, errorToData, processError } from '../server/errors.js';
import { ProcessException } from '../processes/types.js';
import { execute, type ExecuteRequest } from './execute.js';
import type { Store } from '../store/types.js';
import { setTier1 } from '../compile/executor.js';
import { createTier1 } from '../compile/tier1.js';
import path from 'node:path';

export interface WorkerInit {
  dataDir: string;
  blockCacheBytes: number;
}

export type ToWorker = { id: number; type: 'execute'; req: ExecuteRequest } | { id: number; type: 'cancel' };

const init = workerData as WorkerInit;
configureBlockCache(init.blockCacheBytes);
// Compiled kernels are shared by all threads through the disk cache; each thread keeps its own
// instances (a module instance belongs to the thread's kernel memory).
setTier1(createTier1({ cacheDir: path.join(init.dataDir, 'kernels'), maxEntries: 256 }));
let store: Store | null = null;
const running = new Map<number, AbortController>();

parentPort!.on('message', async (msg: ToWorker) => {
  if (msg.type === 'cancel') {
    running.get(msg.id)?.abort(new ApiError('RequestTimeout'));
    return;
  }
  const ac = new AbortController();
  running.set(msg.id, ac);
  try {
    store ??= openStore(init.dataDir);
    const out = await execute(msg.req, store, ac.signal);
    // Hand the bytes over without copying them.
    const bytes = new Uint8Array(out.body.buffer, out.body.byteOffset, out.body.byteLength);
    const transfer = out.body.byteOffset === 0 && out.body.byteLength === out.body.buffer.byteLength ? bytes : bytes.slice();
    const buffers = new Set<ArrayBuffer>([transfer.buffer as ArrayBuffer]);
    for (const p of out.raw?.planes ?? []) buffers.add(p.buffer as ArrayBuffer);
    parentPort!.postMessage({ id: msg.id, ok: true, result: { ...out, body: transfer } }, [...buffers]);
  } catch (e) {
    const err = e instanceof ApiError ? e : e instanceof ProcessException ? processError(e.code, e.message, e.http) : null;
    if (!err) console.error('[xeo] compute failed:', e);
    parentPort!.postMessage({ id: msg.id, ok: false, error: errorToData(err ?? new ApiError('Internal')) });
  } finally {
    running.delete(msg.id);
  }
});
