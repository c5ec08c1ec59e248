// Record kinds and the repository interfaces the rest of the code depends on. SQLite implements
// them here; a PostgreSQL implementation can take their place without touching callers.
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
  create(user: Omit<User, 'created'>): User;
  byId(id: string): User | null;
  byOidc(issuer: string, subject: string): User | null;
  setPassword(id: string, passwordHash: string): void;
  list(): User[];
  delete(id: string): boolean;
}

export interface TokenRepo {
  /** Stores the hash of a token for a user until `expiresAt` (ms since epoch). */
  add(tokenHash: string, userId: string, expiresAt: number): void;
  /** The user id of a live token, or null. */
  userOf(tokenHash: string, now: number): string | null;
  deleteExpired(now: number): number;
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
  get(userId: string, id: string): StoredProcess | null;
  /** Page of a user's processes ordered by id, starting after `after`. */
  list(userId: string, after: string | null, limit: number): StoredProcess[];
  /** Inserts or replaces; returns true when it was created. */
  put(userId: string, id: string, process: Record<string, unknown>): boolean;
  delete(userId: string, id: string): boolean;
}

export interface CollectionRepo {
  list(): CollectionMeta[];
  get(id: string): CollectionMeta | null;
  /** Creates or replaces; new collections go to the end of the list. */
  put(meta: CollectionMeta): void;
  putItems(collectionId: string, items: ItemMeta[]): void;
  /** Items of a collection ordered by datetime, optionally within [start, end) (ISO strings). */
  items(collectionId: string, start?: string | null, end?: string | null): ItemMeta[];
  /** Temporal extent and item count. */
  stats(collectionId: string): { count: number; start: string | null; end: string | null };
  delete(id: string): boolean;
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
  get(id: string): (ServiceRecord & { usage: ServiceUsage }) | null;
  /** Page of a user's services ordered by id, starting after `after`. */
  list(userId: string, after: string | null, limit: number): (ServiceRecord & { usage: ServiceUsage })[];
  create(s: ServiceRecord): void;
  update(s: ServiceRecord): void;
  delete(id: string): boolean;
  /** Adds to the usage counters. */
  addUsage(id: string, add: ServiceUsage): void;
}

/** A log entry as the API shows it (its `id` is the store's sequence number). */
export interface LogEntry extends RunLog {
  id: string;
  code?: string;
  path?: { node_id: string; process_id?: string; namespace?: string | null; parameter?: string }[];
}

export interface LogRepo {
  /** Appends an entry to the log of `owner` (e.g. `service:ID`, `job:ID`); returns its id. */
  append(owner: string, entry: Omit<LogEntry, 'id' | 'time'> & { time?: string }): string;
  /** Entries after the entry `after` (an id, or null for the start), at `minLevel` or above. */
  page(owner: string, after: string | null, minLevel: LogLevel, limit: number): LogEntry[];
  deleteOwner(owner: string): void;
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
}

export type JobEdit = Partial<Pick<JobRecord, 'title' | 'description' | 'process' | 'plan' | 'budget' | 'logLevel'>>;
export type JobFacts = Partial<Pick<JobRecord, 'progress' | 'costs' | 'usage' | 'run' | 'interruptions'>>;

export interface JobRepo {
  create(job: Pick<JobRecord, 'id' | 'userId' | 'title' | 'description' | 'process' | 'plan' | 'budget' | 'logLevel'>): JobRecord;
  /** A job of this user (null for another user's job). */
  get(userId: string, id: string): JobRecord | null;
  byId(id: string): JobRecord | null;
  /** Page of a user's jobs ordered by id, starting after `after`. */
  list(userId: string, after: string | null, limit: number): JobRecord[];
  /** How many jobs a user has. */
  count(userId: string): number;
  /** Changes what the user may edit; the status and `updated` stay. */
  edit(id: string, change: JobEdit): void;
  /**
   * Moves the job to `to` only if its status is one of `from` (atomically), setting the facts
   * given; `updated` becomes now. Answers whether it moved.
   */
  transition(id: string, from: readonly JobStatus[], to: JobStatus, facts?: JobFacts): boolean;
  /** Facts of a run (progress, costs, usage) while the job has `status` (default running); status and `updated` stay. Answers whether it applied. */
  report(id: string, run: number, facts: JobFacts, status?: JobStatus): boolean;
  withStatus(status: JobStatus): JobRecord[];
  delete(id: string): boolean;
  /** Raster values read and seconds spent by recently finished jobs: the measured throughput. */
  throughput(): { values: number; seconds: number; jobs: number };
}

/**
 * The batch job queue: which queued job runs next. The embedded one keeps the order in the jobs
 * table; a distributed queue (BullMQ on Redis, say) can take its place.
 */
export interface JobQueue {
  /** created/canceled/finished/error -> queued, at the end of the queue. Answers whether it moved. */
  enqueue(id: string, facts?: JobFacts): boolean;
  /** queued -> created. Answers whether it moved. */
  withdraw(id: string): boolean;
  /** The next queued job, now running on `node`; null when none waits. */
  claim(node: string): JobRecord | null;
  /** That job's run `run`, if still queued, now running on `node` (a worker taking the task of the queue). */
  claimRun(id: string, run: number, node: string): JobRecord | null;
  /** Jobs that wait. */
  size(): number;
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
  put(jobId: string, results: JobResults): void;
  get(jobId: string): JobResults | null;
  delete(jobId: string): boolean;
}

export interface SecretRepo {
  /** The secret of this name; the first caller's `make()` decides it, every later caller gets that one. */
  getOrCreate(name: string, make: () => string): string;
}

export interface Store {
  users: UserRepo;
  tokens: TokenRepo;
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
  close(): void;
}
