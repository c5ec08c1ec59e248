// Record kinds and the repository interfaces the rest of the code depends on. SQLite implements
// them here; a PostgreSQL implementation can take their place without touching callers.

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

export interface Store {
  users: UserRepo;
  tokens: TokenRepo;
  processGraphs: ProcessGraphRepo;
  close(): void;
}
