// Record kinds and the repository interfaces the rest of the code depends on. Every method answers a
// promise: the records may live on a server (PostgreSQL) whose answers the event loop must never
// wait for. SQLite and PostgreSQL implement them with the same repositories (sql.ts).
import type { CollectionMeta, ItemMeta } from '../core/catalog.js';
import type { LogLevel, RunLog } from '../core/run-context.js';
import type { Semaphores } from './semaphores.js';
import type { FailureLedger } from './auth-failures.js';
import type { UploadLedger } from './upload-ledger.js';

export interface User {
  id: string;
  name: string;
  /** scrypt hash for basic auth users; null for users known only through OpenID Connect. */
  passwordHash: string | null;
  oidcIssuer: string | null;
  oidcSubject: string | null;
  /** Storage quota in bytes; null = the configured default. */
  quotaBytes: number | null;
  created: string;
}

export interface UserRepo {
  create(user: Omit<User, 'created'>): Promise<User>;
  byId(id: string): Promise<User | null>;
  byOidc(issuer: string, subject: string): Promise<User | null>;
  setPassword(id: string, passwordHash: string): Promise<void>;
  list(): Promise<User[]>;
  delete(id: string): Promise<boolean>;
}

/**
 * Access tokens, one row each: the SHA-256 of an opaque token (handed out before API 1.3.0), or of
 * a JWT's `jti`. A token is valid while its row lives: deleting the row revokes it.
 */
export interface TokenRepo {
  /** Stores the hash of a token for a user until `expiresAt` (ms since epoch). */
  add(tokenHash: string, userId: string, expiresAt: number): Promise<void>;
  /** The user id and expiry (ms since epoch) of a live token, or null. */
  userOf(tokenHash: string, now: number): Promise<{ userId: string; expiresAt: number } | null>;
  /** Revokes one token; answers whether it was live. */
  revoke(tokenHash: string): Promise<boolean>;
  /** Revokes every token of a user; answers how many there were. */
  revokeUser(userId: string): Promise<number>;
  deleteExpired(now: number): Promise<number>;
}

/** A key pair that signs access tokens (JWKs as jose exports them). */
export interface SigningKey {
  kid: string;
  /** JWS algorithm, e.g. EdDSA. */
  alg: string;
  publicJwk: Record<string, unknown>;
  privateJwk: Record<string, unknown>;
  /** ms since epoch: it signs from then ... */
  notBefore: number;
  /** ... until then (the next key takes over) ... */
  signsUntil: number;
  /** ... and verifies the tokens it signed until then (the last one expired); then it is removed. */
  verifiesUntil: number;
}

export interface SigningKeyRepo {
  /** Keys that still verify at `now`, the oldest first. */
  live(now: number): Promise<SigningKey[]>;
  /** Stores the key unless one of its kid exists; answers the key stored under that kid (the first one). */
  addOnce(key: SigningKey): Promise<SigningKey>;
  deleteExpired(now: number): Promise<number>;
}

/** A stored user-defined process: the whole `process_graph_with_metadata` object. */
export interface StoredProcess {
  id: string;
  userId: string;
  process: Record<string, unknown>;
  created: string;
  updated: string;
}

export interface ProcessGraphRepo {
  get(userId: string, id: string): Promise<StoredProcess | null>;
  /** Those of `ids` the user has stored (one read for all). */
  getMany(userId: string, ids: string[]): Promise<StoredProcess[]>;
  /** Page of a user's processes ordered by id, starting after `after`. */
  list(userId: string, after: string | null, limit: number): Promise<StoredProcess[]>;
  /** Inserts or replaces; returns true when it was created. */
  put(userId: string, id: string, process: Record<string, unknown>): Promise<boolean>;
  delete(userId: string, id: string): Promise<boolean>;
}

export interface CollectionRepo {
  list(): Promise<CollectionMeta[]>;
  get(id: string): Promise<CollectionMeta | null>;
  /** Creates or replaces; new collections go to the end of the list. */
  put(meta: CollectionMeta): Promise<void>;
  putItems(collectionId: string, items: ItemMeta[]): Promise<void>;
  /** Items of a collection ordered by datetime, optionally within [start, end) (ISO strings). */
  items(collectionId: string, start?: string | null, end?: string | null): Promise<ItemMeta[]>;
  /** Temporal extent and item count. */
  stats(collectionId: string): Promise<{ count: number; start: string | null; end: string | null }>;
  delete(id: string): Promise<boolean>;
}

/** A secondary web service: what its owner set, plus usage counters kept by the server. */
export interface ServiceRecord {
  id: string;
  userId: string;
  /** Service type as listed by GET /service_types (canonical spelling, e.g. XYZ). */
  type: string;
  enabled: boolean;
  title: string | null;
  description: string | null;
  /** The `process_graph_with_metadata` object. */
  process: Record<string, unknown>;
  configuration: Record<string, unknown>;
  /** Values the server derived (e.g. the value range used for colours). */
  attributes: Record<string, unknown>;
  /** The processing parameters its requests gave (POST, PATCH), by name; absent in records of earlier versions. */
  options?: Record<string, unknown>;
  plan: string;
  budget: number | null;
  logLevel: LogLevel;
  created: string;
  updated: string;
}

export interface ServiceUsage {
  tiles: number;
  cacheHits: number;
  valuesRead: number;
  cpuMs: number;
}

export interface ServiceRepo {
  get(id: string): Promise<(ServiceRecord & { usage: ServiceUsage }) | null>;
  /** Page of a user's services ordered by id, starting after `after`. */
  list(userId: string, after: string | null, limit: number): Promise<(ServiceRecord & { usage: ServiceUsage })[]>;
  create(s: ServiceRecord): Promise<void>;
  update(s: ServiceRecord): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** Adds to the usage counters. */
  addUsage(id: string, add: ServiceUsage): Promise<void>;
}

/** A log entry as the API shows it (its `id` is the store's sequence number). */
export interface LogEntry extends RunLog {
  id: string;
  code?: string;
  path?: { node_id: string; process_id?: string; namespace?: string | null; parameter?: string }[];
}

export interface LogRepo {
  /** Appends an entry to the log of `owner` (e.g. `service:ID`, `job:ID`); returns its id. */
  append(owner: string, entry: Omit<LogEntry, 'id' | 'time'> & { time?: string }): Promise<string>;
  /** Entries after the entry `after` (an id, or null for the start), at `minLevel` or above. */
  page(owner: string, after: string | null, minLevel: LogLevel, limit: number): Promise<LogEntry[]>;
  deleteOwner(owner: string): Promise<void>;
}

export type JobStatus = 'created' | 'queued' | 'running' | 'canceled' | 'finished' | 'error';
export type Usage = Record<string, { value: number; unit: string }>;

/** A batch job as stored. */
export interface JobRecord {
  id: string;
  userId: string;
  title: string | null;
  description: string | null;
  /** The `process_graph_with_metadata` object. */
  process: Record<string, unknown>;
  /** The resolved billing plan. */
  plan: string;
  /** Credits the job may cost; null = no limit. */
  budget: number | null;
  /** The lowest log level stored. */
  logLevel: LogLevel;
  status: JobStatus;
  /** 0..100 */
  progress: number;
  /** Credits used by the current run so far. */
  costs: number;
  usage: Usage | null;
  /** How often the job was started; tells the messages and files of one run from an earlier one's. */
  run: number;
  /** Server stops that interrupted the current run (it is queued again each time, up to a limit). */
  interruptions: number;
  /** The node (a data dir) that claimed the current run; null before any, or for runs of an older Xeo. */
  node: string | null;
  created: string;
  /** Time of the last status change. */
  updated: string;
  /** API 1.3.0's timeline of the current run: when it was queued and started (null before, and once back to created). */
  queued: string | null;
  started: string | null;
  /** Until when the results of the current run are kept (XEO_JOB_RESULT_TTL); null = until the job is deleted. */
  unpublished: string | null;
  /** The processing parameters its requests gave (POST, PATCH), by name; the rest come from its processes or the defaults when it runs. */
  options: Record<string, unknown>;
}

export type JobEdit = Partial<Pick<JobRecord, 'title' | 'description' | 'process' | 'plan' | 'budget' | 'logLevel' | 'options'>>;
export type JobFacts = Partial<Pick<JobRecord, 'progress' | 'costs' | 'usage' | 'run' | 'interruptions' | 'unpublished'>>;

export interface JobRepo {
  create(job: Pick<JobRecord, 'id' | 'userId' | 'title' | 'description' | 'process' | 'plan' | 'budget' | 'logLevel'> & Partial<Pick<JobRecord, 'options'>>): Promise<JobRecord>;
  /** A job of this user (null for another user's job). */
  get(userId: string, id: string): Promise<JobRecord | null>;
  byId(id: string): Promise<JobRecord | null>;
  /** Page of a user's jobs ordered by id, starting after `after`. */
  list(userId: string, after: string | null, limit: number): Promise<JobRecord[]>;
  /** How many jobs a user has. */
  count(userId: string): Promise<number>;
  /**
   * Changes what the user may edit, unless the job is queued or running (it is locked then);
   * the status and `updated` stay. Answers whether it changed (false: locked, or gone).
   */
  edit(id: string, change: JobEdit): Promise<boolean>;
  /**
   * Moves the job to `to` only if its status is one of `from` (atomically), setting the facts
   * given; `updated` becomes now, and the timeline follows (`queued` is set when it is queued
   * again; back to created, the timeline is cleared). Answers whether it moved.
   */
  transition(id: string, from: readonly JobStatus[], to: JobStatus, facts?: JobFacts): Promise<boolean>;
  /** Facts of a run (progress, costs, usage) while the job has `status` (default running); status and `updated` stay. Answers whether it applied. */
  report(id: string, run: number, facts: JobFacts, status?: JobStatus): Promise<boolean>;
  withStatus(status: JobStatus): Promise<JobRecord[]>;
  delete(id: string): Promise<boolean>;
  /** Raster values read and seconds spent by recently finished jobs: the measured throughput. */
  throughput(): Promise<{ values: number; seconds: number; jobs: number }>;
  /** Jobs whose results were to be kept until before `time` (an ISO date) and may still hold them. */
  unpublishedBefore(time: string): Promise<JobRecord[]>;
}

/**
 * The batch job queue: which queued job runs next. The embedded one keeps the order in the jobs
 * table; a distributed queue (BullMQ on Redis, say) can take its place.
 */
export interface JobQueue {
  /** created/canceled/finished/error -> queued, at the end of the queue. Answers whether it moved. */
  enqueue(id: string, facts?: JobFacts): Promise<boolean>;
  /** queued -> created. Answers whether it moved. */
  withdraw(id: string): Promise<boolean>;
  /** The next queued job, now running on `node`; null when none waits. */
  claim(node: string): Promise<JobRecord | null>;
  /** That job's run `run`, if still queued, now running on `node` (a worker taking the task of the queue). */
  claimRun(id: string, run: number, node: string): Promise<JobRecord | null>;
  /** Jobs that wait. */
  size(): Promise<number>;
}

/** A file a job produced, kept in the result blob store under `key`. */
export interface JobAsset {
  key: string;
  type: string;
  bytes: number;
  title: string;
  roles: string[];
  /** STAC asset fields (proj:*, raster:bands, ...). */
  fields: Record<string, unknown>;
}

/** What a run delivered: the assets and what the STAC Item says about them. */
export interface JobResults {
  run: number;
  /** The work stopped before the end (a canceled job's results). */
  partial: boolean;
  assets: Record<string, JobAsset>;
  /** WGS84 [west, south, east, north] of the data, or null when unlocated. */
  bbox: [number, number, number, number] | null;
  geometry: unknown;
  /** The dates the data stems from, sorted (possibly empty). */
  times: string[];
  created: string;
}

export interface JobResultRepo {
  put(jobId: string, results: JobResults): Promise<void>;
  get(jobId: string): Promise<JobResults | null>;
  delete(jobId: string): Promise<boolean>;
}

export interface SecretRepo {
  /** The secret of this name; the first caller's `make()` decides it, every later caller gets that one. */
  getOrCreate(name: string, make: () => string): Promise<string>;
}

export interface Store {
  users: UserRepo;
  tokens: TokenRepo;
  signingKeys: SigningKeyRepo;
  processGraphs: ProcessGraphRepo;
  collections: CollectionRepo;
  services: ServiceRepo;
  logs: LogRepo;
  jobs: JobRepo;
  jobQueue: JobQueue;
  jobResults: JobResultRepo;
  secrets: SecretRepo;
  /** Counted slots that hold across every node sharing this store. */
  semaphores: Semaphores;
  /** Failed sign-ins counted by every node together; null when one process counts alone (SQLite). */
  authFailures: FailureLedger | null;
  /** Bytes of uploads in progress, per user (shared by every node on a database server). */
  uploads: UploadLedger;
  /** Which engine keeps the records. */
  engine: 'sqlite' | 'postgresql';
  /** One trivial statement (readiness): resolves when the records answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
