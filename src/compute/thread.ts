// What every engine thread needs before it can run graphs (the compute threads of /result and
// tiles, and the batch job threads): its own block cache, the tier-1 kernels installed, its own
// SQLite connection (one per thread), and failures turned into data that can cross to the main
// thread. Shared so both kinds of thread stay alike.
import path from 'node:path';
import { openStore } from '../store/db.js';
import { configureBlockCache } from '../data/cog-reader.js';
import { configureOutbound } from '../data/outbound.js';
import { errorToData, toApiError, type ErrorData } from '../core/errors.js';
import type { Store } from '../store/types.js';
import { setTier1 } from '../compile/executor.js';
import { createTier1 } from '../compile/tier1.js';

export interface ThreadInit {
  dataDir: string;
  blockCacheBytes: number;
  /** XEO_OUTBOUND_ALLOW (validated by the main thread). */
  outboundAllow: string;
}

/** Prepares this thread for running graphs; answers a getter that opens the store on first use. */
export function setupEngineThread(init: ThreadInit): () => Store {
  configureBlockCache(init.blockCacheBytes);
  configureOutbound(init.outboundAllow);
  // Compiled kernels are shared by all threads through the disk cache; each thread keeps its own
  // instances (a module instance belongs to the thread's kernel memory).
  setTier1(createTier1({ cacheDir: path.join(init.dataDir, 'kernels'), maxEntries: 256 }));
  let store: Store | null = null;
  return () => (store ??= openStore(init.dataDir));
}

/** A failure as data that can cross to the main thread. */
export function failureData(e: unknown): ErrorData {
  return errorToData(toApiError(e, 'computation'));
}
