// The main thread's side of its engine threads (compute threads and job threads): what they may
// ask of it, and the ports they are spawned with. The engine side is src/engine/engine.ts.
import type { MessagePort, ResourceLimits } from 'node:worker_threads';
import { searchPortFor, type SearchFn } from '../data/stac-search-bridge.js';
import { filesPortFor, type FilesHost } from '../files/file-bridge.js';
import type { UdfHost } from '../udf/host.js';
import type { HostLink } from '../udf/protocol.js';
import { metricsPortForThread } from '../core/metrics.js';
import { loggingSettings, type LogFormat, type LogLevel } from '../core/log.js';

/**
 * What the main thread does for its engine threads: item searches of STAC API collections (one
 * cache for all threads), the UDF runtimes, and reading users' files. Handed to the compute pool
 * and the job threads; a part left out is one the threads do without.
 */
export interface EngineHost {
  search?: SearchFn;
  files?: FilesHost;
  udf?: UdfHost;
}

/**
 * The V8 heap of an engine thread: a 4 MB young generation. Pixels live in kernel memory and array
 * buffers, not in the JS heap, so a small young generation costs a thread no time, while V8's
 * default lets each thread's grow by tens of MB between scavenges. The quick large job of
 * bench/batch peaked at 350-357 MB with the default for its job thread and 322-325 MB with 4 MB,
 * same CPU; with the compute threads at 4 MB as well, an idle server holds 192-194 MB instead of
 * 206-210 MB, and bench tiles' cold tiles took no longer (p50 6.1-6.4 ms against 6.8-7.2 ms).
 */
export const ENGINE_THREAD_LIMITS: ResourceLimits = { maxYoungGenerationSizeMb: 4 };

/** The ports of a new engine thread (for workerData and transferList), and how it logs. */
export interface ThreadPorts {
  searchPort: MessagePort | null;
  udf: HostLink | null;
  filesPort: MessagePort | null;
  metricsPort: MessagePort;
  log: { format: LogFormat; level: LogLevel };
  transferList: MessagePort[];
}

export function threadPorts(host: EngineHost): ThreadPorts {
  const searchPort = host.search ? searchPortFor(host.search) : null;
  const udf = host.udf ? host.udf.linkForThread() : null;
  const filesPort = host.files ? filesPortFor(host.files) : null;
  const metricsPort = metricsPortForThread();
  const transferList = [...(searchPort ? [searchPort] : []), ...(filesPort ? [filesPort] : []), metricsPort, ...(udf ? [udf.port] : [])];
  return { searchPort, udf, filesPort, metricsPort, log: loggingSettings(), transferList };
}
