// Configuration comes from the environment only, so `npm start`, `xeo serve` and the tests all
// share one mechanism. The variables, their defaults and meanings are the list in settings.ts
// (documented from it in docs/configuration.md); this file shapes what they say into a Config.
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { checkFiles, ConfigError, readSettings, SETTINGS, type Env, type SettingValues } from './settings.js';
import type { LogFormat, LogLevel } from './log.js';

export { ConfigError };

export interface OidcProviderConfig {
  id: string;
  issuer: string;
  title: string;
  description?: string;
  scopes?: string[];
  default_clients?: { id: string; grant_types: string[]; redirect_urls?: string[] }[];
  /** Expected `aud` of access tokens; unchecked when absent. */
  audience?: string;
  /** Parameters clients must add to the authorization request (API 1.3.0), e.g. `{"prompt": "consent"}`. */
  authorization_parameters?: Record<string, string>;
}

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** PostgreSQL for the records instead of the SQLite file in dataDir (postgres://...); null = SQLite. */
  databaseUrl: string | null;
  /** PostgreSQL: connections of each process (an API node, a worker), and the longest wait for one statement (ms) before the request answers 503. */
  database: { poolSize: number; timeoutMs: number };
  /** Redis of the job queue (redis://...): batch jobs run on `xeo worker` processes; null = on this node's threads. */
  redisUrl: string | null;
  /** Seconds a worker holds a queue task without renewing it before another takes it over (its process died). */
  queueLeaseSeconds: number;
  /** Tries of one chunk that fails for a reason other than the job itself, before the job ends in error. */
  chunkAttempts: number;
  brand: string;
  /** Base of every link we hand out, without trailing slash; null = derived from host and bound port. */
  publicUrl: string | null;
  production: boolean;
  title: string;
  description: string;
  tokenTtlSeconds: number;
  /** Seconds a key signs access tokens before the next one takes over (each verifies its tokens until they expire). */
  jwtRotationSeconds: number;
  /** An openEO Web Editor announced by a `web-editor` link in GET /; null = none. */
  webEditorUrl: string | null;
  maxJsonBodyBytes: number;
  maxUploadBytes: number;
  userQuotaBytes: number;
  oidcProviders: OidcProviderConfig[];
  /** Log one line per request. */
  accessLog: boolean;
  /** How log lines are written (core/log.ts). */
  log: { format: LogFormat; level: LogLevel };
  /** A port of its own for /metrics (and /healthz, /readyz); null: /metrics on the API port (a worker serves none). */
  metricsPort: number | null;
  /** Seconds requests in flight may take to finish after SIGTERM before the node closes anyway. */
  drainSeconds: number;
  /** Generate the demo collection on a first start with an empty catalog. */
  demo: boolean;
  /** Memory for decoded raster blocks, shared by all files (per compute thread). */
  blockCacheBytes: number;
  /** Kernel memory (the arena of cube planes) each engine thread keeps when idle; beyond it the memory is given back. */
  kernelArenaKeepBytes: number;
  /** Helper threads per engine thread that share a large kernel run with it (bands of rows); 0 = none. */
  kernelThreads: number;
  /** Compute threads for process graphs. */
  computeThreads: number;
  /** Graphs that may wait for a thread before new ones get 503. */
  computeQueue: number;
  /** Map tiles one compute thread draws at once. */
  tilesPerThread: number;
  /** Most raster values (pixels × dates × bands) one load of a synchronous request may read. */
  syncMaxValues: number;
  /** Memory for rendered map tiles (LRU). */
  tileCacheBytes: number;
  /** max-age of tile answers, seconds. */
  tileMaxAge: number;
  /** Most nodes of a process graph, child graphs included. */
  maxGraphNodes: number;
  /** Deepest nesting of child process graphs. */
  maxGraphDepth: number;
  /** Synchronous computations (POST /result) one user may run at a time. */
  userConcurrency: number;
  /** Batch jobs one user may keep. */
  maxJobsPerUser: number;
  /** Threads that run batch jobs (one job each), apart from the compute threads. */
  jobThreads: number;
  /** Most raster values one load of a batch job may read: per chunk, or for a job that runs as one piece. */
  batchMaxValues: number;
  /** Side of the square output chunks of a batch job, in pixels (rounded up to the COG writer's alignment). */
  jobChunkSize: number;
  /** Memory for decoded raster blocks per job thread (jobs read each block about once). */
  jobBlockCacheBytes: number;
  /** Threads per job thread that deflate its COGs' tiles; 0: libuv's pool deflates them. */
  jobDeflateThreads: number;
  /**
   * Memory for decoded raster blocks while a job thread runs a zonal job's chunks (the windows of
   * neighbouring groups of fields share the blocks along their edges): at most this much.
   */
  zonalBlockCacheBytes: number;
  /** Lifetime of signed result links, seconds. */
  resultLinkTtlSeconds: number;
  /** Seconds the results of a finished job are kept (its `unpublished` time); 0 = until the job is deleted. */
  jobResultTtlSeconds: number;
  /** Processes named by URL in a node's `namespace` (the Remote Process Definition extension). */
  remoteProcesses: RemoteProcessConfig;
  /** Vector inputs (load_url, load_uploaded_files, GeoJSON): most bytes, features and vertices (all, and of one geometry). */
  vector: { maxBytes: number; maxGeometries: number; maxVertices: number; maxVerticesPerGeometry: number };
  /** Machine-learning models read by reference (predict_onnx, load_ml_model): most bytes of one; threads of one ONNX inference. */
  models: { maxBytes: number; onnxThreads: number };
  /** Random forests: most samples × predictors × trees of a training, deepest tree. */
  ml: { maxWork: number; maxDepth: number };
  /**
   * A bucket of an S3-compatible store for user files (files/...) and job results (jobs/...), with
   * the endpoint, region and credentials of stac.signers.s3; null = both on the local disk.
   */
  s3Bucket: string | null;
  /** Longest silence of the S3 store on one request (ms) before it is tried once more, then answered 503. */
  s3TimeoutMs: number;
  /** Failed sign-ins of one account from one address, and from one address in all, before it waits; the window, seconds; the longest wait, seconds. */
  authFailures: { perAccount: number; perAddress: number; windowS: number; maxDelayS: number };
  /** Proxies in front whose X-Forwarded-For and X-Forwarded-Proto are believed (0: none; the client is the connection's address). */
  trustProxy: number;
  /** PEM files of the certificate (with its chain) and key: HTTPS when both are set. */
  tls: { cert: string; key: string } | null;
  /** A plain-HTTP port that only redirects to HTTPS (with tls); null: none. */
  httpRedirectPort: number | null;
  /** Hosts, addresses and CIDR ranges users' URLs may reach although private (data/outbound.ts parses it). */
  outboundAllow: string;
  /** STAC API collections (collections add-stac): caching, item caps and asset signers. */
  stac: StacConfig;
  /** User-defined functions (run_udf): the Python sandbox and its limits. */
  udf: UdfConfig;
}

/** The sandboxed Python runtime of run_udf (src/udf/) and its limits. */
export interface UdfConfig {
  /** Sandboxed interpreters in all (the warm pool); 0 turns the Python runtime off. */
  workers: number;
  /** Address space of one interpreter (RLIMIT_AS), bytes: the interpreter, the data and what the UDF allocates. */
  memoryBytes: number;
  /** Seconds one call may run (wall time, and CPU time) for /result and tiles. */
  timeoutSeconds: number;
  /** The same for batch jobs, unless the job's `udf_timeout` option says otherwise (up to jobTimeoutMaxSeconds). */
  jobTimeoutSeconds: number;
  jobTimeoutMaxSeconds: number;
  /** The interpreter (Debian's, with numpy, pandas, xarray and scipy) and bubblewrap. */
  python: string;
  bwrap: string;
  /** Size of the private /tmp of an interpreter, bytes. */
  tmpBytes: number;
  /** Most bytes one call may answer (and write to any one file). */
  outputBytes: number;
  /** Bytes of log entries (print, warnings, inspect) kept per call. */
  logBytes: number;
  /** Most bytes a call may write to its standard output and error before it is stopped. */
  printBytes: number;
  /** Processes and threads one interpreter may run. */
  processes: number;
  /** The user id the sandboxes run as when Xeo runs as root. */
  uid: number;
  /** Values one call gets at most in a pixel-wise parent (larger cubes go in bands of rows). */
  callValues: number;
  /**
   * Where the interpreters' I/O folders (in.bin, out.bin) are made: a tmpfs, /dev/shm by default
   * (null). A tmpfs mounted with huge=within_size halves the cost of moving large cubes.
   */
  ioDir: string | null;
}

export interface RemoteProcessConfig {
  /** Plain http:// namespaces are read too (https:// always is). */
  http: boolean;
  /** Seconds a fetched process definition is used before it is read again. */
  ttlSeconds: number;
  /** Largest process document read, bytes. */
  maxBytes: number;
}

/** How assets of STAC API collections are signed (see data/stac-signers.ts). */
export interface SignerConfig {
  /** Planetary Computer's SAS token endpoint; the token of a container is GET {url}/{account}/{container}. */
  pcSasUrl: string;
  /** Sent as Ocp-Apim-Subscription-Key when set (higher rate limits). */
  pcSubscriptionKey: string | null;
  /**
   * A stand-in for Azure Blob Storage with path-style URLs, {endpoint}/{account}/{container}/{blob}
   * (as Azurite serves them); null = only *.blob.core.windows.net hrefs are signed.
   */
  pcBlobEndpoint: string | null;
  s3: {
    accessKeyId: string | null;
    secretAccessKey: string | null;
    sessionToken: string | null;
    region: string;
    /** An S3-compatible endpoint for s3:// hrefs, path-style (e.g. http://127.0.0.1:9000); null = AWS. */
    endpoint: string | null;
    requesterPays: boolean;
  };
}

export interface StacConfig {
  /** Seconds a remote collection's metadata (bands, extent, queryables) is used before it is fetched again. */
  metadataTtlSeconds: number;
  /** Seconds an item search is reused (for the same collection, area, dates and filter). */
  searchTtlSeconds: number;
  /** Most items one load of /result or a map tile may use (a collection's --max-items replaces it). */
  maxItems: number;
  /** Most items one load of a batch job may use (or the collection's --max-items when higher). */
  jobMaxItems: number;
  signers: SignerConfig;
}

/** Reads the configuration from the environment, through the list of settings (settings.ts). */
export function loadConfig(env: Env = process.env): Config {
  const v = readSettings(env);
  if (v.httpRedirectPort !== null && !(v.tlsCert && v.tlsKey)) throw new ConfigError('XEO_HTTP_REDIRECT_PORT redirects to HTTPS: set XEO_TLS_CERT and XEO_TLS_KEY too');
  return {
    host: v.host,
    port: v.port,
    dataDir: v.dataDir,
    databaseUrl: v.databaseUrl,
    database: { poolSize: v.databasePool, timeoutMs: v.databaseTimeout * 1000 },
    redisUrl: v.redisUrl,
    queueLeaseSeconds: v.queueLease,
    chunkAttempts: v.chunkAttempts,
    brand: v.brand,
    publicUrl: v.publicUrl,
    production: v.production,
    title: v.title,
    description: v.description,
    tokenTtlSeconds: v.tokenTtl,
    jwtRotationSeconds: v.jwtRotation,
    webEditorUrl: v.webEditorUrl,
    maxJsonBodyBytes: v.maxBodyBytes,
    maxUploadBytes: v.maxUploadBytes,
    userQuotaBytes: v.userQuotaBytes,
    oidcProviders: oidcProviders(v.oidcProvidersFile ? readFileSync(v.oidcProvidersFile, 'utf8') : v.oidcProviders),
    accessLog: v.accessLog,
    log: { format: v.logFormat, level: v.logLevel },
    metricsPort: v.metricsPort,
    drainSeconds: v.drainSeconds,
    demo: v.demo,
    blockCacheBytes: v.blockCacheBytes,
    kernelThreads: v.kernelThreads,
    kernelArenaKeepBytes: v.kernelArenaKeepBytes,
    computeThreads: v.computeThreads,
    computeQueue: v.computeQueue,
    tilesPerThread: v.tilesPerThread,
    syncMaxValues: v.syncMaxValues,
    tileCacheBytes: v.tileCacheBytes,
    tileMaxAge: v.tileMaxAge,
    maxGraphNodes: v.maxGraphNodes,
    maxGraphDepth: v.maxGraphDepth,
    userConcurrency: v.userConcurrency,
    maxJobsPerUser: v.maxJobsPerUser,
    jobThreads: v.jobThreads,
    batchMaxValues: v.batchMaxValues,
    jobChunkSize: v.jobChunkSize,
    jobBlockCacheBytes: v.jobBlockCacheBytes,
    jobDeflateThreads: v.jobDeflateThreads,
    zonalBlockCacheBytes: v.zonalBlockCacheBytes,
    jobResultTtlSeconds: v.jobResultTtl,
    remoteProcesses: { http: v.remoteProcessHttp, ttlSeconds: v.remoteProcessTtl, maxBytes: v.remoteProcessMaxBytes },
    vector: { maxBytes: v.vectorMaxBytes, maxGeometries: v.vectorMaxFeatures, maxVertices: v.vectorMaxVertices, maxVerticesPerGeometry: v.vectorMaxGeometryVertices },
    models: { maxBytes: v.mlModelMaxBytes, onnxThreads: v.mlOnnxThreads },
    ml: { maxWork: v.mlMaxWork, maxDepth: v.mlMaxDepth },
    resultLinkTtlSeconds: v.resultLinkTtl,
    s3Bucket: v.s3Bucket,
    s3TimeoutMs: v.s3Timeout * 1000,
    authFailures: { perAccount: v.authFailuresPerAccount, perAddress: v.authFailuresPerAddress, windowS: v.authFailureWindow, maxDelayS: v.authMaxDelay },
    trustProxy: v.trustProxy,
    tls: tlsFiles(v.tlsCert, v.tlsKey),
    httpRedirectPort: v.httpRedirectPort,
    outboundAllow: v.outboundAllow,
    stac: {
      metadataTtlSeconds: v.stacMetadataTtl,
      searchTtlSeconds: v.stacSearchTtl,
      maxItems: v.stacMaxItems,
      jobMaxItems: v.stacJobMaxItems,
      signers: { pcSasUrl: v.pcSasUrl ?? 'https://planetarycomputer.microsoft.com/api/sas/v1/token', pcSubscriptionKey: v.pcSubscriptionKey || null, pcBlobEndpoint: v.pcBlobEndpoint, s3: s3Of(v) },
    },
    udf: {
      workers: v.udfWorkers,
      memoryBytes: v.udfMemoryBytes,
      timeoutSeconds: v.udfTimeout,
      jobTimeoutSeconds: v.udfJobTimeout,
      jobTimeoutMaxSeconds: Math.max(v.udfJobTimeout, v.udfJobTimeoutMax),
      python: v.udfPython,
      bwrap: v.udfBwrap,
      tmpBytes: v.udfTmpBytes,
      outputBytes: v.udfOutputBytes,
      logBytes: v.udfLogBytes,
      printBytes: v.udfPrintBytes,
      processes: v.udfProcesses,
      uid: v.udfUid,
      callValues: v.udfCallValues,
      ioDir: v.udfIoDir,
    },
  };
}

function oidcProviders(raw: string): OidcProviderConfig[] {
  if (!raw) return [];
  let list: unknown;
  try {
    list = JSON.parse(raw);
  } catch {
    throw new ConfigError('XEO_OIDC_PROVIDERS must be a JSON array of providers');
  }
  if (!Array.isArray(list)) throw new ConfigError('XEO_OIDC_PROVIDERS must be a JSON array of providers');
  const seen = new Set<string>();
  return list.map((p: any, i: number) => {
    if (!p || typeof p.id !== 'string' || !/^[\d\w]{1,20}$/.test(p.id)) throw new ConfigError(`OIDC provider #${i}: id must match [A-Za-z0-9_]{1,20}`);
    if (seen.has(p.id)) throw new ConfigError(`OIDC provider id '${p.id}' is used twice`);
    seen.add(p.id);
    if (typeof p.issuer !== 'string' || !/^https?:\/\//.test(p.issuer)) throw new ConfigError(`OIDC provider '${p.id}': issuer must be an http(s) URL`);
    if (typeof p.title !== 'string') throw new ConfigError(`OIDC provider '${p.id}': title is required`);
    const ap = p.authorization_parameters;
    if (ap !== undefined && (ap === null || typeof ap !== 'object' || Array.isArray(ap) || !Object.values(ap).every((v) => typeof v === 'string'))) {
      throw new ConfigError(`OIDC provider '${p.id}': authorization_parameters must be an object of strings`);
    }
    return { ...p, issuer: p.issuer.replace(/\/+$/, '') } as OidcProviderConfig;
  });
}

function tlsFiles(cert: string, key: string): { cert: string; key: string } | null {
  if (!cert && !key) return null;
  if (!cert || !key) throw new ConfigError('HTTPS needs both XEO_TLS_CERT and XEO_TLS_KEY');
  checkFiles([cert, key]);
  return { cert: path.resolve(cert), key: path.resolve(key) };
}

function s3Of(v: Pick<SettingValues, 's3AccessKeyId' | 's3SecretAccessKey' | 's3SessionToken' | 's3Region' | 's3Endpoint' | 's3RequesterPays'>): SignerConfig['s3'] {
  return { accessKeyId: v.s3AccessKeyId, secretAccessKey: v.s3SecretAccessKey, sessionToken: v.s3SessionToken, region: v.s3Region, endpoint: v.s3Endpoint, requesterPays: v.s3RequesterPays };
}

/** The S3 endpoint, region and credentials: of the s3 signer, of s3:// hrefs of imports, and of the blob store. */
export function s3Settings(env: Env = process.env): SignerConfig['s3'] {
  const read = <K extends 's3AccessKeyId' | 's3SecretAccessKey' | 's3SessionToken' | 's3Region' | 's3Endpoint' | 's3RequesterPays'>(k: K) => SETTINGS[k].parse(env[SETTINGS[k].name], env) as SettingValues[K];
  return s3Of({
    s3AccessKeyId: read('s3AccessKeyId'),
    s3SecretAccessKey: read('s3SecretAccessKey'),
    s3SessionToken: read('s3SessionToken'),
    s3Region: read('s3Region'),
    s3Endpoint: read('s3Endpoint'),
    s3RequesterPays: read('s3RequesterPays'),
  });
}

/** The brand word in header form: `Xeo` -> `Xeo`, `openeo` -> `OpenEO`, as openEO clients expect. */
export function brandHeaderWord(brand: string): string {
  if (brand.toLowerCase() === 'openeo') return 'OpenEO';
  return brand[0].toUpperCase() + brand.slice(1);
}
