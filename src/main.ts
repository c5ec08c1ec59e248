// Builds a running Xeo from a configuration: store, auth, workspaces, route table, HTTP server.
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { brandHeaderWord, ConfigError, type Config } from './core/config.js';
import type { AppContext } from './api/context.js';
import { openStore } from './store/db.js';
import { LocalChanges, PgChanges } from './store/changes.js';
import { openBlobStore } from './store/open-blobs.js';
import { Workspaces } from './files/workspace.js';
import { Authenticator } from './auth/authenticate.js';
import { FailureThrottle } from './auth/throttle.js';
import { OidcVerifier } from './auth/oidc.js';
import { KeyRing } from './auth/keys.js';
import { TokenSigner } from './auth/jwt.js';
import { buildRouters } from './api/routes.js';
import { VERSIONS } from './api/versions.js';
import { createHttpServer } from './server/app.js';
import { unsupportedRoutes } from './api/spec-endpoints.js';
import { loadUws } from './server/uws.js';
import { listenRedirect } from './server/redirect.js';
import { usersPolicy, type OutboundPolicy } from './data/outbound.js';
import { RemoteProcesses } from './graph/remote-processes.js';
import { warmUpHttp } from './data/http-client.js';
import { generateDemo, DEMO_ID } from './ingest/demo.js';
import { apiRoutes, rootRoutes } from './api/index.js';
import { ComputePool } from './compute/pool.js';
import { TileServer } from './tiles/tile-server.js';
import { UserSlots } from './compute/user-slots.js';
import { SyncLogs } from './compute/sync-logs.js';
import { processingParameters } from './core/processing-options.js';
import { JobService, nodeId } from './jobs/service.js';
import { LinkSigner } from './jobs/signing.js';
import { StacCollections } from './data/stac-collections.js';
import { UdfHost } from './udf/host.js';
import { runtimesDocument } from './udf/runtimes.js';
import { workspaceFilesHost, type FilesHost } from './files/file-bridge.js';
import { jobModelReader } from './jobs/saved-models.js';
import type { EngineHost } from './compute/ports.js';
import { configureLogging, log } from './core/log.js';
import { Readiness, type Probe } from './server/health.js';
import { MetricsRegistry } from './server/metrics.js';
import { listenOps } from './server/ops.js';
import type { BlobStore } from './store/blobs.js';
import type { Store } from './store/types.js';
import type { TaskQueue } from './jobs/task-queue.js';

export interface Xeo {
  port: number;
  /** Where the server is bound, e.g. http://127.0.0.1:8080 */
  localUrl: string;
  /** Base of the links we hand out (XEO_PUBLIC_URL, or localUrl). */
  url: string;
  /** The plain-HTTP port that redirects to HTTPS, if any. */
  redirectPort: number | null;
  /** The port of /metrics, /healthz and /readyz when XEO_METRICS_PORT gives them one. */
  metricsPort: number | null;
  /** Takes the certificate files again (HTTPS only). */
  reloadTls(): Promise<void>;
  /**
   * An orderly stop: readiness turns 503, no new connections are accepted, requests in flight get
   * up to XEO_DRAIN_SECONDS to finish, running jobs are queued again, the components close.
   */
  stop(): Promise<void>;
}

export function backendVersion(): string {
  const pkgPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../package.json');
  return (JSON.parse(readFileSync(pkgPath, 'utf8')) as { version: string }).version;
}

/** The probes of the components every process uses: records, and the object store when there is one. */
function storageProbes(store: Store, blobs: BlobStore): Probe[] {
  const probes: Probe[] = [{ name: 'records', kind: 'records', engine: store.engine, check: () => store.ping() }];
  const bucket = blobs as BlobStore & { probe?: (signal: AbortSignal) => Promise<void> };
  if (bucket.probe) probes.push({ name: 'object store', kind: 'object store', engine: 's3', check: (signal) => bucket.probe!(signal) });
  return probes;
}

/**
 * What the engine threads ask this thread for: item searches of STAC API collections, the UDF
 * sandboxes and compiler, and users' files (UDF code, uploaded vector files).
 */
function hostForThreads(stac: StacCollections, udf: UdfHost, files: Workspaces, jobModel: FilesHost['jobModel']): EngineHost {
  return { search: (req, asker) => stac.search(req, asker), udf, files: workspaceFilesHost(files, jobModel) };
}

/** The rules for users' URLs (XEO_OUTBOUND_ALLOW), checked before anything starts. */
function usersOutbound(config: Config): OutboundPolicy {
  try {
    return usersPolicy(config.outboundAllow);
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
}

/** The job queue on Redis; its client's modules are loaded only by the nodes that use one. */
async function queueOf(redisUrl: string, chunkAttempts: number): Promise<TaskQueue> {
  const { TaskQueue } = await import('./jobs/task-queue.js');
  return new TaskQueue(redisUrl, chunkAttempts);
}

export async function startXeo(config: Config): Promise<Xeo> {
  configureLogging(config.log.format, config.log.level);
  // First, before any data is touched: without the native server there is nothing to run.
  const uws = loadUws();
  const outbound = usersOutbound(config);
  const remoteProcesses = new RemoteProcesses(config.remoteProcesses, outbound);
  const store = await openStore(config);
  if (config.demo && (await store.collections.list()).length === 0) {
    await generateDemo(store, path.join(config.dataDir, 'collections', DEMO_ID), (line) => log.info(line));
  }
  const blobs = await openBlobStore(config, 'files');
  const results = await openBlobStore(config, 'results');
  const stac = new StacCollections(store.collections, config.stac, outbound);
  const workspaces = new Workspaces(blobs, config.maxUploadBytes, store.uploads);
  const udf = new UdfHost(config);
  const host = hostForThreads(stac, udf, workspaces, jobModelReader(store, results));
  const syncLogs = new SyncLogs(store.logs);
  const tasks = config.redisUrl ? await queueOf(config.redisUrl, config.chunkAttempts) : null;
  const jobs = new JobService(store, results, config, await LinkSigner.open(store.secrets, config.dataDir), host, remoteProcesses, tasks);
  let publicUrl = config.publicUrl ?? '';
  const compute = new ComputePool({
    host,
    threads: config.computeThreads,
    queue: config.computeQueue,
    tilesPerThread: config.tilesPerThread,
    dataDir: config.dataDir,
    databaseUrl: config.databaseUrl,
    database: config.database,
    blockCacheBytes: config.blockCacheBytes,
    outboundAllow: config.outboundAllow,
    arenaKeepBytes: config.kernelArenaKeepBytes,
    kernelThreads: config.kernelThreads,
    vector: config.vector,
    models: config.models,
    ml: config.ml,
  });
  const changes = config.databaseUrl ? new PgChanges(config.databaseUrl, config.database.timeoutMs) : new LocalChanges();
  const oidc = new OidcVerifier(config.oidcProviders, store);
  const keys = new KeyRing(store.signingKeys, config.jwtRotationSeconds * 1000, config.tokenTtlSeconds * 1000);
  await keys.start();
  // Our tokens name the basic-credentials URL of the version they were asked at, and are for this
  // installation: its public URL, or without one (XEO_PUBLIC_URL) the URL of the first node that
  // started on these records (kept with them, set below once this node knows its own), so that a
  // restart on another port, or another node sharing the database, keeps the tokens valid.
  let issuerBase: string | null = config.publicUrl;
  const issuer = (prefix: string) => `${issuerBase ?? publicUrl}${prefix}/credentials/basic`;
  const signer = new TokenSigner(keys, {
    issuer,
    issuers: () => VERSIONS.map((v) => issuer(v.prefix)),
    audience: () => issuerBase ?? publicUrl,
  });
  const ctx: AppContext = {
    config,
    brandWord: brandHeaderWord(config.brand),
    backendVersion: backendVersion(),
    store,
    remoteProcesses,
    changes,
    auth: new Authenticator(
      store,
      oidc,
      new FailureThrottle({ ...config.authFailures, windowMs: config.authFailures.windowS * 1000 }, store.authFailures ? { ledger: store.authFailures, feed: changes } : undefined),
      signer,
      changes,
    ),
    keys,
    workspaces,
    syncLogs,
    compute,
    userSlots: new UserSlots(store.semaphores, config.userConcurrency),
    tiles: new TileServer(
      store,
      compute,
      config,
      remoteProcesses,
      (req) => stac.search(req),
      (w, signal) => stac.warm(w, signal),
    ),
    jobs,
    stac,
    processing: processingParameters(config),
    udfRuntimes: async () => runtimesDocument(await udf.info()),
    routers: new Map(),
    publicUrl: () => publicUrl,
  };
  changes.subscribe('service', (id) => ctx.tiles.invalidate(id));
  ctx.routers = buildRouters(apiRoutes, ctx, VERSIONS, unsupportedRoutes);
  // Each component this node uses, for /readyz.
  const probes: Probe[] = [
    ...storageProbes(store, blobs),
    { name: 'compute threads', kind: 'compute', check: () => answerOf(compute.health()) },
    { name: 'job threads', kind: 'compute', check: () => answerOf(jobs.health()) },
    ...(tasks ? [{ name: 'queue', kind: 'queue', engine: 'redis', check: () => jobs.pingQueue()! } satisfies Probe] : []),
    ...oidc.providerIds.map((id): Probe => ({ name: `identity provider ${id}`, kind: 'identity provider', check: (signal) => oidc.probe(id, signal) })),
  ];
  const readiness = new Readiness(probes);
  const metrics = new MetricsRegistry();
  const ownMetricsPort = config.metricsPort !== null;
  const server = createHttpServer(uws, ctx, rootRoutes(config.brand), { readiness, metrics: ownMetricsPort ? null : metrics });
  // The first tile should not wait for threads still loading and warming up, nor for the JIT of
  // the HTTP client on this thread (item searches of STAC API collections run here).
  await Promise.all([compute.ready, warmUpHttp().catch(() => {})]);
  const port = await server.listen(config.host, config.port);
  const hostPart = config.host.includes(':') ? `[${config.host}]` : config.host;
  const localUrl = `${config.tls ? 'https' : 'http'}://${hostPart}:${port}`;
  if (!config.publicUrl) publicUrl = localUrl;
  if (!issuerBase) issuerBase = await store.secrets.getOrCreate('token-issuer', () => localUrl);
  const redirect = config.tls && config.httpRedirectPort !== null ? await listenRedirect(uws, config.host, config.httpRedirectPort, () => publicUrl) : null;
  const ops = ownMetricsPort ? await listenOps(uws, config.host, config.metricsPort!, { readiness, metrics }) : null;
  // Jobs left running by a previous server are settled, and the queue starts, once we serve.
  await jobs.init();
  let stopping: Promise<void> | null = null;
  return {
    port,
    localUrl,
    url: publicUrl,
    redirectPort: redirect?.port ?? null,
    metricsPort: ops?.port ?? null,
    reloadTls: () => server.reloadTls(),
    stop() {
      return (stopping ??= (async () => {
        // Not ready first, so load balancers look elsewhere; then no new connections.
        readiness.draining = true;
        log.info(`stopping: not ready, no new connections; requests in flight have up to ${config.drainSeconds} s to finish`);
        redirect?.close();
        const left = await server.drain(config.drainSeconds * 1000);
        if (left > 0) log.warn(`${left} request(s) still in flight after ${config.drainSeconds} s are cut short`);
        else log.info('every request in flight has finished');
        await ctx.tiles.close();
        await jobs.close();
        await ctx.compute.close();
        await udf.close();
        await syncLogs.close();
        await changes.close();
        keys.stop();
        await store.close();
        ops?.close();
        log.info('stopped');
      })());
    },
  };
}

/** A health() answer as a probe's: ready with its detail, or a failure saying why not. */
function answerOf(h: { ready: boolean; detail: string }): string {
  if (!h.ready) throw new Error(h.detail);
  return h.detail;
}

export interface XeoWorker {
  node: string;
  /** The port of /metrics, /healthz and /readyz (XEO_METRICS_PORT), or null. */
  metricsPort: number | null;
  /** An orderly stop: the tasks running here go back to the queue at once, then the connections close. */
  stop(): Promise<void>;
}

/** `xeo worker`: takes batch job tasks from the queue of XEO_REDIS_URL until stopped. */
export async function startWorker(config: Config): Promise<XeoWorker> {
  configureLogging(config.log.format, config.log.level);
  if (!config.redisUrl || !config.databaseUrl) throw new ConfigError('a worker needs XEO_REDIS_URL and XEO_DATABASE_URL: it shares the job queue and records with the API nodes');
  const outbound = usersOutbound(config);
  const remoteProcesses = new RemoteProcesses(config.remoteProcesses, outbound);
  const store = await openStore(config);
  if (!config.s3Bucket) log.warn("worker without XEO_S3_BUCKET: results go to this machine's disk, where only API nodes sharing its data dir find them");
  // With a bucket, the chunks and COGs a worker stores are seen by the other workers and every API node.
  const results = await openBlobStore(config, 'results');
  const stac = new StacCollections(store.collections, config.stac, outbound);
  const udf = new UdfHost(config);
  // run_udf code and load_uploaded_files in a job read the user's files from the shared file store.
  const files = new Workspaces(await openBlobStore(config, 'files'), config.maxUploadBytes, store.uploads);
  const host = hostForThreads(stac, udf, files, jobModelReader(store, results));
  const node = nodeId(config.dataDir);
  const { JobWorker } = await import('./jobs/worker-node.js');
  const worker = new JobWorker(store, results, config, host, remoteProcesses, await queueOf(config.redisUrl, config.chunkAttempts), node);
  await worker.start();
  const readiness = new Readiness([
    ...storageProbes(store, results),
    { name: 'queue', kind: 'queue', engine: 'redis', check: () => worker.pingQueue() },
    { name: 'job threads', kind: 'compute', check: () => answerOf(worker.health()) },
  ]);
  const ops = config.metricsPort !== null ? await listenOps(loadUws(), config.host, config.metricsPort, { readiness, metrics: new MetricsRegistry() }) : null;
  let stopping: Promise<void> | null = null;
  return {
    node,
    metricsPort: ops?.port ?? null,
    stop() {
      return (stopping ??= (async () => {
        readiness.draining = true;
        log.info('stopping: the tasks running here go back to the queue', { worker: node });
        const handed = await worker.close(config.drainSeconds * 1000);
        log.info(`${handed} task(s) handed back to the queue`, { worker: node });
        await udf.close();
        await store.close();
        ops?.close();
        log.info('stopped', { worker: node });
      })());
    },
  };
}
