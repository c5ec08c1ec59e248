// What handlers may use: configuration and the services behind the API. Built once at start.
import type { Config } from './config.js';
import type { Store } from './store/types.js';
import type { Authenticator } from './auth/authenticate.js';
import type { Workspaces } from './files/workspace.js';
import type { Router } from './server/routes.js';
import type { VersionProfile } from './server/versions.js';
import type { ComputePool } from './compute/pool.js';
import type { TileServer } from './tiles/tile-server.js';
import type { UserSlots } from './compute/user-slots.js';
import type { JobService } from './jobs/service.js';
import type { StacCollections } from './data/stac-collections.js';

export interface AppContext {
  config: Config;
  /** The brand word as it appears in headers: `Xeo`, or `OpenEO` for brand `openeo`. */
  brandWord: string;
  backendVersion: string;
  store: Store;
  auth: Authenticator;
  workspaces: Workspaces;
  /** Compute threads for graphs (/result and tiles). */
  compute: ComputePool;
  /** Synchronous computations each user runs at the moment (XEO_USER_CONCURRENCY). */
  userSlots: UserSlots;
  /** Tiles of secondary web services: cache, rendering, activity. */
  tiles: TileServer;
  /** Batch jobs: their queue, threads, logs and results. */
  jobs: JobService;
  /** Collections backed by STAC APIs: their metadata refresh and item searches. */
  stac: StacCollections;
  /** The route table of each served version. */
  routers: Map<VersionProfile, Router>;
  /** Base URL of every link we hand out (known once the port is bound). */
  publicUrl(): string;
}
