// Configuration comes from the environment only, so `npm start`, `xeo serve` and the tests all
// share one mechanism. Every variable is documented in README ("Configuration").
import os from 'node:os';
import path from 'node:path';
import { existsSync, readFileSync } from 'node:fs';

export interface OidcProviderConfig {
  id: string;
  issuer: string;
  title: string;
  description?: string;
  scopes?: string[];
  default_clients?: { id: string; grant_types: string[]; redirect_urls?: string[] }[];
  /** Expected `aud` of access tokens; unchecked when absent. */
  audience?: string;
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
  maxJsonBodyBytes: number;
  maxUploadBytes: number;
  userQuotaBytes: number;
  oidcProviders: OidcProviderConfig[];
  /** Log one line per request to stderr. */
  accessLog: boolean;
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
  /** Lifetime of signed result links, seconds. */
  resultLinkTtlSeconds: number;
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

type Env = Record<string, string | undefined>;

export class ConfigError extends Error {}

function int(env: Env, name: string, def: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) throw new ConfigError(`${name} must be an integer >= ${min}, got '${raw}'`);
  return n;
}

function bool(env: Env, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got '${raw}'`);
}

function url(env: Env, name: string): string | null {
  const raw = env[name];
  if (!raw) return null;
  if (!/^https?:\/\/[^/]+/.test(raw)) throw new ConfigError(`${name} must be an absolute http(s) URL, got '${raw}'`);
  return raw.replace(/\/+$/, '');
}

function oidcProviders(env: Env): OidcProviderConfig[] {
  let raw = env.XEO_OIDC_PROVIDERS;
  if (env.XEO_OIDC_PROVIDERS_FILE) raw = readFileSync(env.XEO_OIDC_PROVIDERS_FILE, 'utf8');
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
    return { ...p, issuer: p.issuer.replace(/\/+$/, '') } as OidcProviderConfig;
  });
}

function databaseUrl(env: Env): string | null {
  const url = env.XEO_DATABASE_URL;
  if (!url) return null;
  if (!/^postgres(ql)?:\/\/./.test(url)) throw new ConfigError('XEO_DATABASE_URL must be a postgres:// URL');
  return url;
}

function redisUrl(env: Env): string | null {
  const url = env.XEO_REDIS_URL;
  if (!url) return null;
  if (!/^rediss?:\/\/./.test(url)) throw new ConfigError('XEO_REDIS_URL must be a redis:// or rediss:// URL');
  if (!env.XEO_DATABASE_URL) throw new ConfigError('XEO_REDIS_URL needs XEO_DATABASE_URL: workers and API nodes share the job records');
  return url;
}

function tlsFiles(env: Env): { cert: string; key: string } | null {
  const cert = env.XEO_TLS_CERT;
  const key = env.XEO_TLS_KEY;
  if (!cert && !key) return null;
  if (!cert || !key) throw new ConfigError('HTTPS needs both XEO_TLS_CERT and XEO_TLS_KEY');
  for (const f of [cert, key]) if (!existsSync(f)) throw new ConfigError(`cannot read ${f}`);
  return { cert: path.resolve(cert), key: path.resolve(key) };
}

export function loadConfig(env: Env = process.env): Config {
  const brand = env.XEO_BRAND || 'Xeo';
  if (!/^[A-Za-z][A-Za-z0-9]*$/.test(brand)) throw new ConfigError(`XEO_BRAND must be a single word of letters and digits, got '${brand}'`);
  const publicUrl = env.XEO_PUBLIC_URL ? env.XEO_PUBLIC_URL.replace(/\/+$/, '') : null;
  if (publicUrl && !/^https?:\/\/[^/]+/.test(publicUrl)) throw new ConfigError('XEO_PUBLIC_URL must be an absolute http(s) URL');
  if (env.XEO_HTTP_REDIRECT_PORT && !(env.XEO_TLS_CERT && env.XEO_TLS_KEY)) throw new ConfigError('XEO_HTTP_REDIRECT_PORT redirects to HTTPS: set XEO_TLS_CERT and XEO_TLS_KEY too');
  return {
    host: env.XEO_HOST || '127.0.0.1',
    port: int(env, 'XEO_PORT', 8080),
    dataDir: path.resolve(env.XEO_DATA_DIR || './data'),
    databaseUrl: databaseUrl(env),
    database: { poolSize: int(env, 'XEO_DATABASE_POOL', 10, 1), timeoutMs: int(env, 'XEO_DATABASE_TIMEOUT', 10, 1) * 1000 },
    redisUrl: redisUrl(env),
    queueLeaseSeconds: int(env, 'XEO_QUEUE_LEASE', 30, 1),
    chunkAttempts: int(env, 'XEO_CHUNK_ATTEMPTS', 3, 1),
    brand,
    publicUrl,
    production: bool(env, 'XEO_PRODUCTION', false),
    title: env.XEO_TITLE || 'Xeo',
    description:
      env.XEO_DESCRIPTION ||
      'Xeo is an Earth-observation processing back-end: discover collections and processes, then run process graphs as XYZ map tiles, synchronous previews or batch jobs.',
    tokenTtlSeconds: int(env, 'XEO_TOKEN_TTL', 24 * 3600, 1),
    maxJsonBodyBytes: int(env, 'XEO_MAX_BODY_BYTES', 8 * 1024 * 1024, 1024),
    maxUploadBytes: int(env, 'XEO_MAX_UPLOAD_BYTES', 2 * 1024 * 1024 * 1024, 1),
    userQuotaBytes: int(env, 'XEO_USER_QUOTA_BYTES', 5 * 1024 * 1024 * 1024, 0),
    oidcProviders: oidcProviders(env),
    accessLog: bool(env, 'XEO_ACCESS_LOG', false),
    demo: bool(env, 'XEO_DEMO', true),
    blockCacheBytes: int(env, 'XEO_BLOCK_CACHE_BYTES', 256 * 1024 * 1024, 1024 * 1024),
    // Off by default: on the shared 2-core machine it was measured on, splitting gained nothing (see README).
    kernelThreads: int(env, 'XEO_KERNEL_THREADS', 0, 0),
    kernelArenaKeepBytes: int(env, 'XEO_KERNEL_ARENA_KEEP_BYTES', 256 * 1024 * 1024, 0),
    computeThreads: int(env, 'XEO_COMPUTE_THREADS', Math.max(1, Math.min(8, os.availableParallelism())), 1),
    computeQueue: int(env, 'XEO_COMPUTE_QUEUE', 32, 0),
    syncMaxValues: int(env, 'XEO_SYNC_MAX_VALUES', 64 * 1024 * 1024, 1),
    tileCacheBytes: int(env, 'XEO_TILE_CACHE_BYTES', 256 * 1024 * 1024, 0),
    tileMaxAge: int(env, 'XEO_TILE_MAX_AGE', 60, 0),
    maxGraphNodes: int(env, 'XEO_MAX_GRAPH_NODES', 1000, 1),
    maxGraphDepth: int(env, 'XEO_MAX_GRAPH_DEPTH', 16, 1),
    userConcurrency: int(env, 'XEO_USER_CONCURRENCY', 2, 1),
    maxJobsPerUser: int(env, 'XEO_MAX_JOBS_PER_USER', 200, 1),
    jobThreads: int(env, 'XEO_JOB_THREADS', 1, 1),
    batchMaxValues: int(env, 'XEO_BATCH_MAX_VALUES', 512 * 1024 * 1024, 1),
    jobChunkSize: int(env, 'XEO_JOB_CHUNK_SIZE', 1024, 16),
    jobBlockCacheBytes: int(env, 'XEO_JOB_BLOCK_CACHE_BYTES', 32 * 1024 * 1024, 1024 * 1024),
    resultLinkTtlSeconds: int(env, 'XEO_RESULT_LINK_TTL', 7 * 24 * 3600, 1),
    s3Bucket: s3Bucket(env),
    s3TimeoutMs: int(env, 'XEO_S3_TIMEOUT', 10, 1) * 1000,
    authFailures: {
      perAccount: int(env, 'XEO_AUTH_FAILURES_PER_ACCOUNT', 5, 1),
      perAddress: int(env, 'XEO_AUTH_FAILURES_PER_ADDRESS', 50, 1),
      windowS: int(env, 'XEO_AUTH_FAILURE_WINDOW', 900, 1),
      maxDelayS: int(env, 'XEO_AUTH_MAX_DELAY', 900, 1),
    },
    trustProxy: int(env, 'XEO_TRUST_PROXY', 0, 0),
    tls: tlsFiles(env),
    httpRedirectPort: env.XEO_HTTP_REDIRECT_PORT ? int(env, 'XEO_HTTP_REDIRECT_PORT', 0, 0) : null,
    outboundAllow: env.XEO_OUTBOUND_ALLOW ?? '',
    stac: {
      metadataTtlSeconds: int(env, 'XEO_STAC_METADATA_TTL', 3600, 0),
      searchTtlSeconds: int(env, 'XEO_STAC_SEARCH_TTL', 300, 0),
      maxItems: int(env, 'XEO_STAC_MAX_ITEMS', 100, 1),
      jobMaxItems: int(env, 'XEO_STAC_JOB_MAX_ITEMS', 2000, 1),
      signers: {
        pcSasUrl: url(env, 'XEO_PC_SAS_URL') ?? 'https://planetarycomputer.microsoft.com/api/sas/v1/token',
        pcSubscriptionKey: env.XEO_PC_SUBSCRIPTION_KEY || null,
        pcBlobEndpoint: url(env, 'XEO_PC_BLOB_ENDPOINT'),
        s3: s3Settings(env),
      },
    },
    udf: udfSettings(env),
  };
}

function udfSettings(env: Env): UdfConfig {
  const timeoutSeconds = int(env, 'XEO_UDF_TIMEOUT', 30, 1);
  const jobTimeoutSeconds = int(env, 'XEO_UDF_JOB_TIMEOUT', 600, 1);
  return {
    workers: int(env, 'XEO_UDF_WORKERS', Math.max(1, Math.min(4, os.availableParallelism())), 0),
    memoryBytes: int(env, 'XEO_UDF_MEMORY_BYTES', 2 * 1024 * 1024 * 1024, 256 * 1024 * 1024),
    timeoutSeconds,
    jobTimeoutSeconds,
    jobTimeoutMaxSeconds: Math.max(jobTimeoutSeconds, int(env, 'XEO_UDF_JOB_TIMEOUT_MAX', 3600, 1)),
    python: env.XEO_UDF_PYTHON || '/usr/bin/python3',
    bwrap: env.XEO_UDF_BWRAP || '/usr/bin/bwrap',
    tmpBytes: int(env, 'XEO_UDF_TMP_BYTES', 64 * 1024 * 1024, 1024 * 1024),
    outputBytes: int(env, 'XEO_UDF_OUTPUT_BYTES', 1024 * 1024 * 1024, 1024 * 1024),
    logBytes: int(env, 'XEO_UDF_LOG_BYTES', 64 * 1024, 1024),
    printBytes: int(env, 'XEO_UDF_PRINT_BYTES', 16 * 1024 * 1024, 1024),
    processes: int(env, 'XEO_UDF_PROCESSES', 64, 4),
    uid: int(env, 'XEO_UDF_UID', 65534, 1),
    callValues: int(env, 'XEO_UDF_CALL_VALUES', 64 * 1024 * 1024, 1024),
    ioDir: udfIoDir(env),
  };
}

function udfIoDir(env: Env): string | null {
  const dir = env.XEO_UDF_IO_DIR;
  if (!dir) return null;
  if (!existsSync(dir)) throw new ConfigError(`XEO_UDF_IO_DIR: ${dir} does not exist`);
  return path.resolve(dir);
}

/** The S3 endpoint, region and credentials: of the s3 signer, of s3:// hrefs of imports, and of the blob store. */
export function s3Settings(env: Env = process.env): SignerConfig['s3'] {
  return {
    accessKeyId: env.XEO_S3_ACCESS_KEY_ID || env.AWS_ACCESS_KEY_ID || null,
    secretAccessKey: env.XEO_S3_SECRET_ACCESS_KEY || env.AWS_SECRET_ACCESS_KEY || null,
    sessionToken: env.XEO_S3_SESSION_TOKEN || (env.XEO_S3_ACCESS_KEY_ID ? null : env.AWS_SESSION_TOKEN) || null,
    region: env.XEO_S3_REGION || env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    endpoint: url(env, 'XEO_S3_ENDPOINT'),
    requesterPays: bool(env, 'XEO_S3_REQUESTER_PAYS', false),
  };
}

/** XEO_S3_BUCKET, checked: a bucket name and, for it, credentials (the store needs them from the start). */
function s3Bucket(env: Env): string | null {
  const bucket = env.XEO_S3_BUCKET;
  if (!bucket) return null;
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new ConfigError(`XEO_S3_BUCKET must be an S3 bucket name (3-63 lower-case letters, digits, dots and hyphens), got '${bucket}'`);
  if (!(env.XEO_S3_ACCESS_KEY_ID || env.AWS_ACCESS_KEY_ID) || !(env.XEO_S3_SECRET_ACCESS_KEY || env.AWS_SECRET_ACCESS_KEY)) {
    throw new ConfigError('XEO_S3_BUCKET needs credentials: set XEO_S3_ACCESS_KEY_ID and XEO_S3_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)');
  }
  return bucket;
}

/** The brand word in header form: `Xeo` -> `Xeo`, `openeo` -> `OpenEO`, as openEO clients expect. */
export function brandHeaderWord(brand: string): string {
  if (brand.toLowerCase() === 'openeo') return 'OpenEO';
  return brand[0].toUpperCase() + brand.slice(1);
}
