// The main thread's side of its engine threads (compute threads and job threads): what they may
// ask of it, and the ports they are spawned with. The engine side is src/engine/engine.ts.
import type { MessagePort } from 'node:worker_threads';
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
