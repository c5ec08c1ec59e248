// Every setting of Xeo as data: its environment variable, its default as the documentation shows
// it, what it means, and how its text is read. loadConfig (config.ts) reads the environment through
// this list only, and docs/configuration.md's table is generated from it (`xeo settings
// --markdown`), so the two cannot drift apart (test/config-docs.test.ts compares them).
import os from 'node:os';
import path from 'node:path';
import { existsSync } from 'node:fs';

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {}

export interface Setting<T = unknown> {
  /** The environment variable. */
  name: string;
  /** The default as the documentation shows it (markdown). */
  shown: string;
  /** What it means (markdown, one paragraph). */
  description: string;
  /** Reads the variable (undefined or '' when unset); other variables only for cross-checks and fallbacks. */
  parse(raw: string | undefined, env: Env): T;
}

interface Reader<T> {
  shown: string;
  parse(raw: string | undefined, env: Env, name: string): T;
}

const code = (v: unknown) => `\`${v}\``;

/** A whole number >= min. */
export function int(def: number, min = 0, shown = code(def)): Reader<number> {
  return {
    shown,
    parse(raw, _env, name) {
      if (raw === undefined || raw === '') return def;
      const n = Number(raw);
      if (!Number.isSafeInteger(n) || n < min) throw new ConfigError(`${name} must be an integer >= ${min}, got '${raw}'`);
      return n;
    },
  };
}

/** A whole number >= min, or null when unset. */
function optionalInt(min = 0): Reader<number | null> {
  const inner = int(0, min);
  return { shown: 'none', parse: (raw, env, name) => (raw === undefined || raw === '' ? null : inner.parse(raw, env, name)) };
}

function bool(def: boolean): Reader<boolean> {
  return {
    shown: code(def),
    parse(raw, _env, name) {
      if (raw === undefined || raw === '') return def;
      if (/^(1|true|yes|on)$/i.test(raw)) return true;
      if (/^(0|false|no|off)$/i.test(raw)) return false;
      throw new ConfigError(`${name} must be true or false, got '${raw}'`);
    },
  };
}

function text(def: string, shown = def ? code(def) : 'none'): Reader<string> {
  return { shown, parse: (raw) => raw || def };
}

/** An absolute http(s) URL without trailing slashes, or null. */
function httpUrl(shown = 'none'): Reader<string | null> {
  return {
    shown,
    parse(raw, _env, name) {
      if (!raw) return null;
      if (!/^https?:\/\/[^/]+/.test(raw)) throw new ConfigError(`${name} must be an absolute http(s) URL, got '${raw}'`);
      return raw.replace(/\/+$/, '');
    },
  };
}

/** A folder that exists, as an absolute path, or null when unset. */
function existingDir(): Reader<string | null> {
  return {
    shown: 'none',
    parse(raw, _env, name) {
      if (!raw) return null;
      if (!existsSync(raw)) throw new ConfigError(`${name}: ${raw} does not exist`);
      return path.resolve(raw);
    },
  };
}

function oneOf<T extends string>(values: readonly T[], def: T): Reader<T> {
  return {
    shown: code(def),
    parse(raw, _env, name) {
      if (!raw) return def;
      if (!(values as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${values.join(', ')}, got '${raw}'`);
      return raw as T;
    },
  };
}

/** A setting read from its own variable, else from the first of `fallbacks` that is set. */
function withFallback(fallbacks: string[], shown: string, inner: Reader<string | null> = { shown, parse: (raw) => raw || null }): Reader<string | null> {
  return { shown, parse: (raw, env, name) => inner.parse(raw || fallbacks.map((f) => env[f]).find((v) => v) || undefined, env, name) };
}

function setting<T>(name: string, reader: Reader<T>, description: string): Setting<T> {
  return { name, shown: reader.shown, description, parse: (raw, env) => reader.parse(raw, env, name) };
}

const MiB = 1024 * 1024;

/**
 * The settings, in the order of the documentation. Keys are how loadConfig refers to them.
 * Descriptions are markdown; links point into docs/.
 */
export const SETTINGS = {
  host: setting('XEO_HOST', text('127.0.0.1'), 'Address to bind.'),
  port: setting('XEO_PORT', int(8080), 'Port to bind; `0` picks a free one (printed at start).'),
  dataDir: setting(
    'XEO_DATA_DIR',
    { shown: '`./data`', parse: (raw: string | undefined) => path.resolve(raw || './data') },
    'The SQLite database, user files, job results, compiled kernels and temporary files (files and results go to `XEO_S3_BUCKET` instead when it is set).',
  ),
  databaseUrl: setting(
    'XEO_DATABASE_URL',
    {
      shown: 'none',
      parse(raw: string | undefined) {
        if (!raw) return null;
        if (!/^postgres(ql)?:\/\/./.test(raw)) throw new ConfigError('XEO_DATABASE_URL must be a postgres:// URL');
        return raw;
      },
    },
    '`postgres://user:password@host:port/db`: keep the records in PostgreSQL instead of the SQLite file (see [storage](storage.md)). Every node and thread given the same URL shares them.',
  ),
  databasePool: setting('XEO_DATABASE_POOL', int(10, 1), 'PostgreSQL: connections of each process (an API node, a worker) for the records; each engine thread opens two more of its own for the catalogue.'),
  databaseTimeout: setting(
    'XEO_DATABASE_TIMEOUT',
    int(10, 1),
    'PostgreSQL: the longest wait, in seconds, for a connection and for one statement; past it the request that needed the records answers `503` with `Retry-After`.',
  ),
  redisUrl: setting(
    'XEO_REDIS_URL',
    {
      shown: 'none',
      parse(raw: string | undefined, env: Env) {
        if (!raw) return null;
        if (!/^rediss?:\/\/./.test(raw)) throw new ConfigError('XEO_REDIS_URL must be a redis:// or rediss:// URL');
        if (!env.XEO_DATABASE_URL) throw new ConfigError('XEO_REDIS_URL needs XEO_DATABASE_URL: workers and API nodes share the job records');
        return raw;
      },
    },
    '`redis://host:port` (or `rediss://`): the job queue of an installation on [several machines](storage.md). API nodes then run no batch work themselves; `xeo worker` processes do. Needs `XEO_DATABASE_URL`.',
  ),
  queueLease: setting('XEO_QUEUE_LEASE', int(30, 1), 'Seconds a worker holds a queue task without renewing it before another worker takes it over (a worker that died).'),
  chunkAttempts: setting(
    'XEO_CHUNK_ATTEMPTS',
    int(3, 1),
    'Tries of a plan, chunk or assembly that fails for a reason other than the job itself (storage or records away, a thread that died), with exponential backoff from 1 s, before the job ends in `error`.',
  ),
  brand: setting(
    'XEO_BRAND',
    {
      shown: '`Xeo`',
      parse(raw: string | undefined) {
        const brand = raw || 'Xeo';
        if (!/^[A-Za-z][A-Za-z0-9]*$/.test(brand)) throw new ConfigError(`XEO_BRAND must be a single word of letters and digits, got '${brand}'`);
        return brand;
      },
    },
    'Brand word of headers and the well-known path. `openeo` gives `OpenEO-Costs`, `OpenEO-Identifier` and `/.well-known/openeo`, for the existing openEO clients.',
  ),
  publicUrl: setting('XEO_PUBLIC_URL', httpUrl('`http://HOST:PORT`'), 'Base of every link we hand out (set it behind a proxy, e.g. `https://eo.example.org/api`).'),
  production: setting('XEO_PRODUCTION', bool(false), 'The `production` flag of the well-known document and of `GET /` (stated explicitly in both, for every version).'),
  title: setting('XEO_TITLE', text('Xeo'), 'Title in `GET /`.'),
  description: setting(
    'XEO_DESCRIPTION',
    text('Xeo is an Earth-observation processing back-end: discover collections and processes, then run process graphs as XYZ map tiles, synchronous previews or batch jobs.', "Xeo's own"),
    'Description in `GET /`.',
  ),
  tokenTtl: setting('XEO_TOKEN_TTL', int(24 * 3600, 1), 'Lifetime of basic-auth access tokens, seconds.'),
  jwtRotation: setting(
    'XEO_JWT_ROTATION',
    int(7 * 24 * 3600, 60),
    'Seconds a key signs access tokens (JWTs) before the next one takes over; each key is published ahead and kept until the last token it signed expires (see [API versions](api-versions.md)).',
  ),
  webEditorUrl: setting('XEO_WEB_EDITOR_URL', httpUrl(), 'An openEO Web Editor for this back-end, announced by a `web-editor` link in `GET /`.'),
  maxBodyBytes: setting('XEO_MAX_BODY_BYTES', int(8 * MiB, 1024), 'Largest JSON request body; larger ones get `413 PayloadTooLarge`.'),
  maxUploadBytes: setting('XEO_MAX_UPLOAD_BYTES', int(2048 * MiB, 1), 'Largest single file upload; a larger one gets `413 PayloadTooLarge` (a declared `Content-Length` is refused before any byte is read).'),
  userQuotaBytes: setting('XEO_USER_QUOTA_BYTES', int(5120 * MiB, 0), 'Storage quota per user (`400 StorageQuotaExceeded`), reported by `GET /me`.'),
  oidcProviders: setting('XEO_OIDC_PROVIDERS', text(''), 'JSON array of OpenID Connect providers (see [security](security.md)).'),
  oidcProvidersFile: setting('XEO_OIDC_PROVIDERS_FILE', text(''), 'The same, read from a file (it takes the place of `XEO_OIDC_PROVIDERS`).'),
  accessLog: setting('XEO_ACCESS_LOG', bool(false), 'One log line per request: method, path (never the query), status, time and request id.'),
  logFormat: setting(
    'XEO_LOG_FORMAT',
    oneOf(['text', 'json'] as const, 'text'),
    '`text`: readable lines (`[xeo] job j-1: ...`); `json`: one JSON object per line on stdout (pino), with `time`, `level`, `msg`, and `req` (the request id) or `job` (the job id) where they apply (see [operations](operations.md)).',
  ),
  logLevel: setting('XEO_LOG_LEVEL', oneOf(['debug', 'info', 'warn', 'error'] as const, 'info'), 'The least severe level logged.'),
  metricsPort: setting(
    'XEO_METRICS_PORT',
    optionalInt(0),
    'Serve `GET /metrics` (Prometheus) on this port of `XEO_HOST` instead of the API port, so it need not be public; `/healthz` and `/readyz` answer there too. A worker (`xeo worker`) serves these only when it is set. `0` picks a free one.',
  ),
  drainSeconds: setting(
    'XEO_DRAIN_SECONDS',
    int(30, 0),
    'On `SIGTERM` or `SIGINT`: how long requests in flight may take to finish after the node stopped accepting connections, before it closes anyway (see [operations](operations.md)).',
  ),
  demo: setting('XEO_DEMO', bool(true), 'Generate the demo collection on a start with an empty catalog.'),
  blockCacheBytes: setting(
    'XEO_BLOCK_CACHE_BYTES',
    int(256 * MiB, MiB),
    'Memory for reading rasters, per compute thread: decoded blocks, blocks read ahead (compressed) and the parsed headers of opened files share this one LRU bound.',
  ),
  kernelArenaKeepBytes: setting(
    'XEO_KERNEL_ARENA_KEEP_BYTES',
    int(256 * MiB, 0),
    "Kernel memory (the arena holding cube planes) an engine thread keeps when idle; after a request that grew it past this, the thread's kernel instance is recycled and the memory given back.",
  ),
  kernelThreads: setting(
    'XEO_KERNEL_THREADS',
    int(0, 0),
    'Kernel helper threads per engine thread (compute and job threads) that share a large tier-1 run (2^20 pixels and more) by bands of rows; `0` runs every kernel on its engine thread alone. Off by default: on the shared 2-core machine it was measured on it gained nothing (both cores busy, kernels bound by memory bandwidth); try cores − 1 on a machine with idle cores.',
  ),
  computeThreads: setting(
    'XEO_COMPUTE_THREADS',
    int(Math.max(1, Math.min(8, os.availableParallelism())), 1, 'CPU count (max 8)'),
    'Worker threads that run process graphs for `/result` and tiles; the event loop never computes.',
  ),
  computeQueue: setting('XEO_COMPUTE_QUEUE', int(32, 0), 'Graphs that may wait for a compute thread; beyond that `503 InfrastructureBusy` with `Retry-After`.'),
  tilesPerThread: setting(
    'XEO_TILES_PER_THREAD',
    int(8, 1),
    "Map tiles one compute thread draws at once: while one waits for remote data (a search, a file's header, its blocks), the others go on, so a map's first view costs a few round trips rather than a few per tile. Together they load at most what one tile may (`XEO_SYNC_MAX_VALUES`; a tile alone always may), so a thread holds about what one tile may. Other graphs (`/result`) get a thread to themselves. `1` draws tiles one by one.",
  ),
  syncMaxValues: setting(
    'XEO_SYNC_MAX_VALUES',
    int(64 * MiB, 1),
    'Most raster values (pixels × dates × bands) one load of a `/result` request (or of one map tile) may read; more gets `400 ProcessGraphComplexity`, pointing to batch jobs.',
  ),
  maxGraphNodes: setting(
    'XEO_MAX_GRAPH_NODES',
    int(1000, 1),
    'Most nodes of a process graph, child processes included; more gets `400 ProcessGraphComplexity` wherever a graph is taken (`/result`, `/validation`, stored processes, services, jobs).',
  ),
  maxGraphDepth: setting('XEO_MAX_GRAPH_DEPTH', int(16, 1), 'Deepest nesting of child processes (the root graph is level 1); deeper gets `400 ProcessGraphComplexity`.'),
  maxJobsPerUser: setting('XEO_MAX_JOBS_PER_USER', int(200, 1), 'Batch jobs one user may keep; another `POST /jobs` gets `400 JobQuotaExceeded` until one is deleted.'),
  userConcurrency: setting(
    'XEO_USER_CONCURRENCY',
    int(2, 1),
    'Synchronous computations (`POST /result`) one user may run at once; another gets `429 TooManyRequests` with `Retry-After` (a quota, not a fault: other users are not affected).',
  ),
  tileCacheBytes: setting('XEO_TILE_CACHE_BYTES', int(256 * MiB, 0), 'Memory for rendered map tiles (LRU by bytes, shared by all services and previews); `0` caches nothing.'),
  tileMaxAge: setting('XEO_TILE_MAX_AGE', int(60, 0), '`Cache-Control: max-age` of tiles, seconds (browsers revalidate with the `ETag` after that).'),
  jobThreads: setting(
    'XEO_JOB_THREADS',
    int(1, 1),
    'Threads that run batch jobs, one job each, apart from the compute threads (so tiles and `/result` stay fast while jobs run); more queued jobs wait in the queue. On a worker (`xeo worker`): the threads that compute its chunks.',
  ),
  batchMaxValues: setting(
    'XEO_BATCH_MAX_VALUES',
    int(512 * MiB, 1),
    "Most raster values one load of a batch job may read: per output chunk for pixel-wise graphs, for the whole load otherwise (`ProcessGraphComplexity` in the job's log beyond).",
  ),
  jobChunkSize: setting('XEO_JOB_CHUNK_SIZE', int(1024, 16), "Side of a job's square output chunks, pixels; rounded up to a multiple of the COG writer's alignment (4 tiles, at least 1024 px)."),
  jobDeflateThreads: setting(
    'XEO_JOB_DEFLATE_THREADS',
    int(Math.max(1, Math.min(4, os.availableParallelism())), 0, 'CPU count (max 4)'),
    "Threads per job thread that deflate its COG's tiles, so a chunk's tiles are compressed while the next chunk is read and computed, and read and inflate the deflated blocks of local files it reads, blocks first (they start with a job's first task, run at the job thread's lower priority and end after 10 s without work); `0` does both on libuv's pool, where the blocks being read wait behind the tiles. See [batch jobs](batch-jobs.md).",
  ),
  jobBlockCacheBytes: setting('XEO_JOB_BLOCK_CACHE_BYTES', int(32 * MiB, MiB), 'Memory for decoded raster blocks per job thread (a job reads most blocks once, so little is needed).'),
  zonalBlockCacheBytes: setting(
    'XEO_ZONAL_BLOCK_CACHE_BYTES',
    int(512 * MiB, MiB),
    "Most memory for decoded raster blocks of a job thread while it runs a zonal job's chunks (`aggregate_spatial` over many fields: neighbouring chunks share blocks). The job keeps three rows of its cells across the grid, over every date and band, at 2 bytes a value, within this bound; see [batch jobs](batch-jobs.md#zonal-jobs-memory-per-chunk).",
  ),
  jobResultTtl: setting('XEO_JOB_RESULT_TTL', int(0, 0), "Seconds a finished job's results are kept (its `unpublished` time); `0` keeps them until the job is deleted."),
  vectorMaxBytes: setting('XEO_VECTOR_MAX_BYTES', int(256 * MiB, 1024), 'Largest vector file or URL read (`load_url`, `load_uploaded_files`; also uploaded GeoTIFFs).'),
  vectorMaxFeatures: setting('XEO_VECTOR_MAX_FEATURES', int(1_000_000, 1), 'Most features of one vector input.'),
  vectorMaxVertices: setting('XEO_VECTOR_MAX_VERTICES', int(20_000_000, 1), 'Most vertices of one vector input.'),
  vectorMaxGeometryVertices: setting('XEO_VECTOR_MAX_GEOMETRY_VERTICES', int(100_000, 4), 'Most vertices of one geometry.'),
  mlModelMaxBytes: setting(
    'XEO_ML_MODEL_MAX_BYTES',
    int(256 * MiB, 1024),
    'Largest machine-learning model read (`predict_onnx`, `load_ml_model`): a model file, or the STAC Item describing one, from a URL or your files (see [ONNX models](ml.md#onnx-models)).',
  ),
  mlOnnxThreads: setting(
    'XEO_ML_ONNX_THREADS',
    int(1, 1),
    'Threads one ONNX inference (`predict_onnx`) may use, per engine thread; the default keeps the other threads free for map tiles (see [ONNX models](ml.md#onnx-models)).',
  ),
  mlMaxWork: setting(
    'XEO_ML_MAX_WORK',
    int(200_000_000, 1),
    'Most samples × predictors × trees one random-forest training may take, counting at least 100 samples and 10 predictors (`fit_class_random_forest`, `fit_regr_random_forest`; 10,000 × 10 × 100 is 10,000,000, about a second here); more gets `400 ProcessGraphComplexity` naming the three figures. See [machine learning](ml.md).',
  ),
  mlMaxDepth: setting('XEO_ML_MAX_DEPTH', int(64, 1), 'Deepest a tree of a random forest grows (the root is depth 0); nodes at this depth become leaves. Loaded models with deeper trees are refused.'),
  remoteProcessHttp: setting(
    'XEO_REMOTE_PROCESS_HTTP',
    bool(false),
    'Allow plain-http URLs as process namespaces (remote process definitions; https always works, both under `XEO_OUTBOUND_ALLOW`; see [remote processes](remote-processes.md)).',
  ),
  remoteProcessTtl: setting('XEO_REMOTE_PROCESS_TTL', int(300, 0), 'Seconds a remote process definition is used before it is read again.'),
  remoteProcessMaxBytes: setting('XEO_REMOTE_PROCESS_MAX_BYTES', int(MiB, 1024), 'Largest remote process definition (or list) read.'),
  resultLinkTtl: setting('XEO_RESULT_LINK_TTL', int(7 * 24 * 3600, 1), 'Lifetime of the signed result links, seconds (7 days).'),
  authFailuresPerAccount: setting(
    'XEO_AUTH_FAILURES_PER_ACCOUNT',
    int(5, 1),
    'Failed sign-ins of one account from one client address within the window before that address must wait for that account (`429 TooManyRequests` with `Retry-After`, see [security](security.md)).',
  ),
  authFailuresPerAddress: setting(
    'XEO_AUTH_FAILURES_PER_ADDRESS',
    int(50, 1),
    'Failed sign-ins (any account), and separately invalid bearer tokens, from one client address within the window before it must wait.',
  ),
  authFailureWindow: setting('XEO_AUTH_FAILURE_WINDOW', int(900, 1), 'The sliding window of those counts, seconds.'),
  authMaxDelay: setting('XEO_AUTH_MAX_DELAY', int(900, 1), 'Longest wait, seconds (the wait starts at 1 s and doubles with each further failure).'),
  tlsCert: setting('XEO_TLS_CERT', text(''), 'PEM certificate (with its chain): serve HTTPS together with `XEO_TLS_KEY` (see [security](security.md)). Both or neither.'),
  tlsKey: setting('XEO_TLS_KEY', text(''), 'PEM key of that certificate.'),
  httpRedirectPort: setting('XEO_HTTP_REDIRECT_PORT', optionalInt(0), 'With HTTPS: a plain-HTTP port that only redirects (`308`) to HTTPS.'),
  trustProxy: setting(
    'XEO_TRUST_PROXY',
    int(0, 0),
    "Proxies in front of Xeo whose `X-Forwarded-For` is believed: the client address is the entry that many hops from the right. `0`: the connection's own address (a client cannot choose its address by sending the header). Above `0`, a request's `X-Request-Id` from the proxy is kept as its id.",
  ),
  outboundAllow: setting(
    'XEO_OUTBOUND_ALLOW',
    text(''),
    "Comma-separated hosts, addresses or CIDR ranges, each optionally with a port (`stac.internal`, `10.1.2.3:8080`, `10.0.0.0/8`, `[::1]:9000`, `[fd00::/8]:443`, `fd00::/8`), that users' URLs may reach although they are loopback, private, link-local, multicast or unspecified (see [collections and data](collections-and-data.md)). A malformed entry stops the start (exit code 2).",
  ),
  stacMetadataTtl: setting(
    'XEO_STAC_METADATA_TTL',
    int(3600, 0),
    "Seconds a STAC API collection's metadata (bands, extent, summaries, queryables) is used before `GET /collections/{id}`, its queryables or a load read it again from the API.",
  ),
  stacSearchTtl: setting(
    'XEO_STAC_SEARCH_TTL',
    int(300, 0),
    'Seconds an item search of a STAC API collection is reused (same collection, area, dates and filter): a map session costs one search per area, not one per tile.',
  ),
  stacMaxItems: setting(
    'XEO_STAC_MAX_ITEMS',
    int(100, 1),
    "Most items one load of `/result` or of a map tile may use from a STAC API (a collection's `--max-items` replaces it); more is `400 ProcessGraphComplexity`.",
  ),
  stacJobMaxItems: setting('XEO_STAC_JOB_MAX_ITEMS', int(2000, 1), "The same for one load of a batch job (or the collection's `--max-items` when higher)."),
  pcSasUrl: setting(
    'XEO_PC_SAS_URL',
    httpUrl('`https://planetarycomputer.microsoft.com/api/sas/v1/token`'),
    "Planetary Computer's SAS token endpoint (`GET {url}/{account}/{container}`), for collections added with `--signer planetary-computer`.",
  ),
  pcSubscriptionKey: setting('XEO_PC_SUBSCRIPTION_KEY', text(''), 'Sent as `Ocp-Apim-Subscription-Key` to the token endpoint.'),
  pcBlobEndpoint: setting(
    'XEO_PC_BLOB_ENDPOINT',
    httpUrl(),
    'A stand-in for Azure Blob Storage with path-style URLs (`{endpoint}/{account}/{container}/{blob}`, as Azurite serves them) whose hrefs are signed too; without it only `*.blob.core.windows.net` hrefs are.',
  ),
  s3AccessKeyId: setting(
    'XEO_S3_ACCESS_KEY_ID',
    withFallback(['AWS_ACCESS_KEY_ID'], '`AWS_ACCESS_KEY_ID`'),
    'Access key of the `s3` signer, of `s3://` hrefs in imported items, and of the file store in `XEO_S3_BUCKET`.',
  ),
  s3SecretAccessKey: setting('XEO_S3_SECRET_ACCESS_KEY', withFallback(['AWS_SECRET_ACCESS_KEY'], '`AWS_SECRET_ACCESS_KEY`'), 'Its secret.'),
  s3SessionToken: setting(
    'XEO_S3_SESSION_TOKEN',
    { shown: '`AWS_SESSION_TOKEN` (only without `XEO_S3_ACCESS_KEY_ID`)', parse: (raw: string | undefined, env: Env) => raw || (env.XEO_S3_ACCESS_KEY_ID ? null : env.AWS_SESSION_TOKEN) || null },
    'Session token of temporary credentials.',
  ),
  s3Region: setting(
    'XEO_S3_REGION',
    { shown: '`AWS_REGION`, `AWS_DEFAULT_REGION`, else `us-east-1`', parse: (raw: string | undefined, env: Env) => raw || env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1' },
    'Region of `s3://` hrefs (S3 https hrefs name their own) and of `XEO_S3_BUCKET`.',
  ),
  s3Endpoint: setting('XEO_S3_ENDPOINT', httpUrl(), 'An S3-compatible endpoint for `s3://` hrefs and for `XEO_S3_BUCKET`, path-style (`{endpoint}/{bucket}/{key}`); AWS when unset.'),
  s3Bucket: setting(
    'XEO_S3_BUCKET',
    {
      shown: 'none',
      parse(raw: string | undefined, env: Env) {
        if (!raw) return null;
        if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(raw)) throw new ConfigError(`XEO_S3_BUCKET must be an S3 bucket name (3-63 lower-case letters, digits, dots and hyphens), got '${raw}'`);
        if (!(env.XEO_S3_ACCESS_KEY_ID || env.AWS_ACCESS_KEY_ID) || !(env.XEO_S3_SECRET_ACCESS_KEY || env.AWS_SECRET_ACCESS_KEY)) {
          throw new ConfigError('XEO_S3_BUCKET needs credentials: set XEO_S3_ACCESS_KEY_ID and XEO_S3_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)');
        }
        return raw;
      },
    },
    'Keep user files (`files/<user>/<path>`) and batch job results (`jobs/<job>/<file>`) in this bucket of the S3-compatible store instead of `DATA_DIR/files` and `DATA_DIR/jobs`, so every node sees them (see [storage](storage.md)). Needs the credentials above; a bucket that does not exist or refuses them stops the start (exit code 2).',
  ),
  s3RequesterPays: setting('XEO_S3_REQUESTER_PAYS', bool(false), 'Sign `x-amz-request-payer=requester` into every S3 URL (for requester-pays buckets).'),
  s3Timeout: setting(
    'XEO_S3_TIMEOUT',
    int(10, 1),
    'Seconds the store of `XEO_S3_BUCKET` may take to begin its answer (or to take a connection) before the request is tried once more, then answered `503` with `Retry-After`; a download already streaming to a slow client is not cut.',
  ),
  udfWorkers: setting(
    'XEO_UDF_WORKERS',
    int(Math.max(1, Math.min(4, os.availableParallelism())), 0, 'CPU count (max 4)'),
    'Sandboxed Python interpreters in all (the warm pool of `run_udf`); `0` turns the Python runtime off. A user holds at most half of them while others wait (see [UDFs](udf.md)).',
  ),
  udfMemoryBytes: setting('XEO_UDF_MEMORY_BYTES', int(2048 * MiB, 256 * MiB), 'Address space of one interpreter (its ~200 MB of libraries, the data and what the UDF allocates).'),
  udfTimeout: setting('XEO_UDF_TIMEOUT', int(30, 1), 'Seconds one call of a UDF may run (wall and CPU time) for `/result` and tiles.'),
  udfJobTimeout: setting('XEO_UDF_JOB_TIMEOUT', int(600, 1), 'The same for batch jobs, unless the job sets the processing parameter `udf_timeout`.'),
  udfJobTimeoutMax: setting('XEO_UDF_JOB_TIMEOUT_MAX', int(3600, 1), 'The highest `udf_timeout` a job may set (at least `XEO_UDF_JOB_TIMEOUT`).'),
  udfOutputBytes: setting('XEO_UDF_OUTPUT_BYTES', int(1024 * MiB, MiB), 'Most bytes one call may answer (and write to any one file).'),
  udfCallValues: setting('XEO_UDF_CALL_VALUES', int(64 * MiB, 1024), 'Most values one call gets from a pixel-wise parent; larger cubes go in bands of rows.'),
  udfLogBytes: setting('XEO_UDF_LOG_BYTES', int(64 * 1024, 1024), 'Bytes of log entries kept per call.'),
  udfPrintBytes: setting('XEO_UDF_PRINT_BYTES', int(16 * MiB, 1024), 'Bytes a call may write to its standard output and error before it is stopped.'),
  udfProcesses: setting('XEO_UDF_PROCESSES', int(64, 4), 'Processes and threads one interpreter may run.'),
  udfTmpBytes: setting('XEO_UDF_TMP_BYTES', int(64 * MiB, MiB), "Size of an interpreter's private `/tmp`."),
  udfPython: setting('XEO_UDF_PYTHON', text('/usr/bin/python3'), "The interpreter (Debian's, with numpy, pandas, xarray and scipy; not a pyenv or virtualenv one)."),
  udfBwrap: setting('XEO_UDF_BWRAP', text('/usr/bin/bwrap'), 'bubblewrap, the sandbox of every interpreter.'),
  udfIoDir: setting(
    'XEO_UDF_IO_DIR',
    existingDir(),
    "Where the interpreters' exchange files (`in.bin`, `out.bin`) are made: a tmpfs, `/dev/shm` when unset. One mounted with `huge=within_size` halves the cost of moving large cubes.",
  ),
  udfUid: setting('XEO_UDF_UID', int(65534, 1), 'The user the sandboxes run as when Xeo runs as root.'),
} satisfies Record<string, Setting>;

export type SettingKey = keyof typeof SETTINGS;
export type SettingValues = { [K in SettingKey]: ReturnType<(typeof SETTINGS)[K]['parse']> };

/** Reads every setting from `env` (ConfigError names the first that is wrong). */
export function readSettings(env: Env): SettingValues {
  const out: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(SETTINGS) as [SettingKey, Setting][]) out[key] = s.parse(env[s.name], env);
  return out as SettingValues;
}

/** The settings as the markdown table of docs/configuration.md. */
export function settingsTable(): string {
  const cell = (t: string) => t.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const rows = Object.values(SETTINGS).map((s: Setting) => `| \`${s.name}\` | ${cell(s.shown)} | ${cell(s.description)} |`);
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n') + '\n';
}

/** Checks the files a setting names exist (TLS). */
export function checkFiles(files: string[]): void {
  for (const f of files) if (!existsSync(f)) throw new ConfigError(`cannot read ${f}`);
}
