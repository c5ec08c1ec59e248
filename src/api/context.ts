// What handlers may use: configuration and the services behind the API, each typed by what the API
// asks of it (not by its class), so other implementations can take its place. Built once at start.
import type { Config } from '../core/config.js';
import type { Store } from '../store/types.js';
import type { ChangeFeed } from '../store/changes.js';
import type { Auth } from '../auth/authenticate.js';
import type { KeyRing } from '../auth/keys.js';
import type { Files } from '../files/workspace.js';
import type { Route, Router } from './routes.js';
import type { ApiRequest } from './request.js';
import type { VersionProfile } from './versions.js';
import type { Compute } from '../compute/pool.js';
import type { Tiles } from '../tiles/tile-server.js';
import type { Slots } from '../compute/user-slots.js';
import type { Jobs } from '../jobs/service.js';
import type { StacMetadata } from '../data/stac-collections.js';
import type { SyncLogs } from '../compute/sync-logs.js';
import type { RemoteProcesses } from '../graph/remote-processes.js';
import type { ProcessingMode, ProcessingParameter } from '../core/processing-options.js';

export interface AppContext {
  config: Config;
  /** The brand word as it appears in headers: `Xeo`, or `OpenEO` for brand `openeo`. */
  brandWord: string;
  backendVersion: string;
  store: Store;
  /** Processes named by URL (XEO_REMOTE_PROCESS_*), one reader for the node. */
  remoteProcesses: RemoteProcesses;
  /** Word of changed records to every node (a patched service's tiles are dropped everywhere at once). */
  changes: ChangeFeed;
  auth: Auth;
  /** The keys that sign our access tokens (their public half is the JWKS). */
  keys: Pick<KeyRing, 'jwks'>;
  workspaces: Files;
  /** Compute threads for graphs (/result and tiles). */
  compute: Compute;
  /** Synchronous computations each user runs at the moment (XEO_USER_CONCURRENCY). */
  userSlots: Slots;
  /** Tiles of secondary web services: cache, rendering, activity. */
  tiles: Tiles;
  /** Batch jobs: their queue, threads, logs and results. */
  jobs: Jobs;
  /** Collections backed by STAC APIs: their metadata, read again after a TTL. */
  stac: StacMetadata;
  /** The processing parameters users may set, per mode (GET /processing_parameters). */
  processing: Record<ProcessingMode, ProcessingParameter[]>;
  /** The logs of synchronous requests (linked from their answers). */
  syncLogs: Pick<SyncLogs, 'save'>;
  /**
   * The runtimes of user-defined functions, as GET /udf_runtimes lists them: AssemblyScript always
   * (its compiler is ours), Python when its interpreter is there. So the list is never empty, as
   * API 1.3.0 asks of a back-end that offers the endpoint.
   */
  udfRuntimes(): Promise<Record<string, unknown>>;
  /** The route table of each served version. */
  routers: Map<VersionProfile, Router<AppContext>>;
  /** Base URL of every link we hand out (known once the port is bound). */
  publicUrl(): string;
}

/** A route of our table, and the request its handler receives, with this context. */
export type AppRoute = Route<AppContext>;
export type AppRequest = ApiRequest<AppContext>;
