// One engine per thread: the front door of everything a run reaches beyond its arguments (the
// compute threads of /result and tiles, and the batch job threads). createEngine builds the
// thread's parts once from what its spawner sent (EngineInit): the catalog of collections (its
// own connection to the records, asynchronous like the main thread's), the block cache, the
// kernels' arena settings, the tier-1 runtime and the kernel helper threads, a job thread's
// deflate threads, the UDF link, the bridges to the main thread's searches and files, the
// outbound rules, the vector limits, the machine-learning models (forests and ONNX sessions by
// content hash, with their limits), the logger, and the process implementations. Each run
// carries it (RunContext.engine); nothing of it is held in a module of its own. The main
// thread's side is src/compute/ports.ts.
import path from 'node:path';
import type { MessagePort } from 'node:worker_threads';
import { openCatalog } from '../store/db.js';
import { errorToData, toApiError, type ErrorData } from '../core/errors.js';
import type { CatalogSource } from '../core/catalog.js';
import type { EngineParts, UserFiles } from '../core/run-context.js';
import { searchOverPort } from '../data/stac-search-bridge.js';
import { createTier1 } from '../compile/tier1.js';
import type { HostLink } from '../udf/protocol.js';
import { filesOverPort } from '../files/file-bridge.js';
import type { Config } from '../core/config.js';
import { createLogger, type LogFormat, type LogLevel } from '../core/log.js';
import { BlockCache } from '../data/cog-reader.js';
import { usersPolicy } from '../data/outbound.js';
import { DEFAULT_ARENA } from '../wasm/kernels.js';
import { KernelHelpers } from '../compile/kernel-threads.js';
import { DeflateThreads } from '../output/deflate-threads.js';
import { UdfLink } from '../udf/client.js';
import { vectorLimitsOf } from '../datacube/vector-limits.js';
import { DEFAULT_MODEL_LIMITS } from '../data/model-source.js';
import { ModelCache } from '../ml/model-cache.js';
import { DEFAULT_ML_LIMITS } from '../ml/limits.js';
import { OnnxSessions } from '../processes/ml/onnx-sessions.js';

export interface EngineInit {
  dataDir: string;
  /** The records' PostgreSQL, or null for the SQLite file in dataDir. */
  databaseUrl: string | null;
  /** PostgreSQL's statement deadline (the catalogue is read on a small pool of the thread's own). */
  database?: { poolSize: number; timeoutMs: number };
  blockCacheBytes: number;
  /** XEO_OUTBOUND_ALLOW (validated by the main thread). */
  outboundAllow: string;
  /** Kernel memory kept when idle; the default when absent. */
  arenaKeepBytes?: number;
  /** Kernel helper threads of this thread; none when absent. */
  kernelThreads?: number;
  /** Deflate threads for the COGs this thread writes and the local blocks it reads (a job thread's); libuv's pool when absent or 0. */
  deflateThreads?: number;
  /** To the main thread's item searches of STAC API collections (stac-search-bridge.ts). */
  searchPort?: MessagePort | null;
  /** To the UDF runtimes of the process (udf/host.ts), or null when none run. */
  udf?: HostLink | null;
  /** To the main thread's reader of users' files (files/file-bridge.ts). */
  filesPort?: MessagePort | null;
  /** Limits on vector inputs (XEO_VECTOR_*); the defaults when absent. */
  vector?: Config['vector'];
  /** Machine-learning models: most bytes read by reference, threads of one ONNX inference (XEO_ML_*); the defaults when absent. */
  models?: Config['models'];
  /** Limits of random-forest training (XEO_ML_*); the defaults when absent. */
  ml?: Config['ml'];
  /** To the main thread's metrics: what this thread counts is added there (core/metrics.ts shipMetrics, called by the thread once it serves). */
  metricsPort?: MessagePort | null;
  /** How this thread logs: as the main thread does. */
  log?: { format: LogFormat; level: LogLevel };
}

/** An engine thread's services; what each part is, its owner module says (EngineParts). */
export interface Engine extends EngineParts {
  /** The catalog loads read (the store opens on first use), with the main thread's searches. */
  catalog(): CatalogSource;
  /** The reader of the users' files of a run, bound to its user; null without a file store. */
  files: ((userId: string) => UserFiles) | null;
}

/**
 * How long a new program's tier-1 compile waits before it starts: about the time a map's first view
 * of a new service takes to draw, so its tiles do not share the two cores of a small machine with
 * the compiler (the `remote` bench's first tile: 127–162 ms against 140–162 ms in six alternating
 * pairs, its first view 1.69–2.21 against 1.61–1.88 times GDAL's speed; docs/benchmarks.md).
 */
const TIER1_START_DELAY_MS = 400;

/** Builds this thread's engine. */
export function createEngine(init: EngineInit): Engine {
  const log = createLogger(init.log?.format ?? 'text', init.log?.level ?? 'info');
  const search = init.searchPort ? searchOverPort(init.searchPort) : undefined;
  let catalog: CatalogSource | null = null;
  // A job thread's deflate threads also read and inflate the blocks of local files it reads.
  const deflate = init.deflateThreads ? new DeflateThreads(init.deflateThreads) : null;
  return {
    catalog: () => (catalog ??= { collections: openCatalog(init).collections, search }),
    files: init.filesPort ? filesOverPort(init.filesPort) : null,
    blocks: new BlockCache(init.blockCacheBytes, deflate),
    outbound: usersPolicy(init.outboundAllow),
    arena: init.arenaKeepBytes === undefined ? DEFAULT_ARENA : { keepBytes: init.arenaKeepBytes },
    // Compiled kernels are shared by all threads through the disk cache; each thread keeps its own
    // instances (a module instance belongs to the thread's kernel memory).
    tier1: createTier1({ cacheDir: path.join(init.dataDir, 'kernels'), maxEntries: 256, log: (level, message) => level !== 'info' && log[level](message), startDelayMs: TIER1_START_DELAY_MS }),
    kernelHelpers: new KernelHelpers(init.kernelThreads ?? 0),
    deflate,
    udf: init.udf ? new UdfLink(init.udf) : null,
    vector: vectorLimitsOf(init.vector),
    modelLimits: init.models ? { maxBytes: init.models.maxBytes } : DEFAULT_MODEL_LIMITS,
    forests: new ModelCache(),
    onnx: new OnnxSessions(init.models?.onnxThreads ?? 1),
    mlLimits: init.ml ?? DEFAULT_ML_LIMITS,
    log,
  };
}

/** A failure as data that can cross to the main thread. */
export function failureData(e: unknown): ErrorData {
  return errorToData(toApiError(e, 'computation'));
}
