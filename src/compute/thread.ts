// What every engine thread needs before it can run graphs (the compute threads of /result and
// tiles, and the batch job threads): its own block cache, the tier-1 kernels installed, its own
// connection to the catalogue's records (asynchronous, like the main thread's), and failures turned into data that can cross to the main
// thread. Shared so both kinds of thread stay alike.
import path from 'node:path';
import { openCatalog } from '../store/db.js';
import { configureBlockCache } from '../data/cog-reader.js';
import { configureOutbound } from '../data/outbound.js';
import { errorToData, toApiError, type ErrorData } from '../core/errors.js';
import type { MessagePort } from 'node:worker_threads';
import type { CatalogSource } from '../core/catalog.js';
import { searchOverPort, searchPortForThread } from '../data/stac-search-bridge.js';
import { linkPorts, udfLinkForThread } from '../udf/host.js';
import { setTier1 } from '../compile/executor.js';
import { createTier1 } from '../compile/tier1.js';
import { configureArena } from '../compile/kernels.js';
import { configureKernelThreads } from '../compile/kernel-threads.js';
import { configureUdfLink } from '../udf/client.js';
import type { HostLink } from '../udf/protocol.js';
import { configureVectorLimits } from '../datacube/vector-limits.js';
import { configureModelSource } from '../data/model-source.js';
import { configureOnnx } from '../processes/ml/onnx-sessions.js';
import { configureMlLimits } from '../ml/limits.js';
import { filesOverPort, filesPortForThread } from '../files/file-bridge.js';
import { setUserFiles } from './execute.js';
import type { Config } from '../core/config.js';
import { configureLogging, loggingSettings, type LogFormat, type LogLevel } from '../core/log.js';
import { metricsPortForThread } from '../core/metrics.js';

export interface ThreadInit {
  dataDir: string;
  /** The records' PostgreSQL, or null for the SQLite file in dataDir. */
  databaseUrl: string | null;
  /** PostgreSQL's statement deadline (the catalogue is read on a small pool of the thread's own). */
  database?: { poolSize: number; timeoutMs: number };
  blockCacheBytes: number;
  /** XEO_OUTBOUND_ALLOW (validated by the main thread). */
  outboundAllow: string;
  /** Kernel memory kept when idle (configureArena); the default when absent. */
  arenaKeepBytes?: number;
  /** Kernel helper threads of this thread (configureKernelThreads); none when absent. */
  kernelThreads?: number;
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

/** Prepares this thread for running graphs; answers a getter of its catalog (the store opens on first use). */
export function setupEngineThread(init: ThreadInit): () => CatalogSource {
  if (init.log) configureLogging(init.log.format, init.log.level);
  configureBlockCache(init.blockCacheBytes);
  configureOutbound(init.outboundAllow);
  if (init.arenaKeepBytes !== undefined) configureArena({ keepBytes: init.arenaKeepBytes });
  configureKernelThreads(init.kernelThreads ?? 0);
  configureUdfLink(init.udf ?? null);
  if (init.vector) configureVectorLimits(init.vector);
  if (init.models) {
    configureModelSource(init.models);
    configureOnnx({ threads: init.models.onnxThreads });
  }
  if (init.ml) configureMlLimits(init.ml);
  setUserFiles(init.filesPort ? filesOverPort(init.filesPort) : null);
  // Compiled kernels are shared by all threads through the disk cache; each thread keeps its own
  // instances (a module instance belongs to the thread's kernel memory).
  setTier1(createTier1({ cacheDir: path.join(init.dataDir, 'kernels'), maxEntries: 256 }));
  const search = init.searchPort ? searchOverPort(init.searchPort) : undefined;
  let catalog: CatalogSource | null = null;
  return () => (catalog ??= { collections: openCatalog(init).collections, search });
}

/**
 * A thread's ports to spawn it with (for workerData and transferList): the STAC search bridge, the
 * UDF runtimes, the reader of users' files and the main thread's metrics; and how it logs.
 */
export function threadPorts(): {
  searchPort: MessagePort | null;
  udf: HostLink | null;
  filesPort: MessagePort | null;
  metricsPort: MessagePort;
  log: { format: LogFormat; level: LogLevel };
  transferList: MessagePort[];
} {
  const searchPort = searchPortForThread();
  const udf = udfLinkForThread();
  const filesPort = filesPortForThread();
  const metricsPort = metricsPortForThread();
  return { searchPort, udf, filesPort, metricsPort, log: loggingSettings(), transferList: [...(searchPort ? [searchPort] : []), ...(filesPort ? [filesPort] : []), metricsPort, ...linkPorts(udf)] };
}

/** A failure as data that can cross to the main thread. */
export function failureData(e: unknown): ErrorData {
  return errorToData(toApiError(e, 'computation'));
}
