// Word that a record changed, to every node that keeps something derived from it (a service's tiles
// and state in the tile cache): at once, not after the cache's own TTL. One process needs nothing
// more than its own listeners; nodes sharing PostgreSQL hear each other through LISTEN/NOTIFY.
import { log } from '../core/log.js';
import type pg from 'pg';
import { pgClient } from './pg-driver.js';

/**
 * What changes are told about: the topic and the record's id (a service; a sign-in key's wait;
 * a revoked token, `token:HASH`, or all of a user's, `user:ID`).
 */
export type ChangeTopic = 'service' | 'throttle' | 'revoked';
const TOPICS: readonly string[] = ['service', 'throttle', 'revoked'] satisfies ChangeTopic[];

export interface ChangeFeed {
  /** Tells this node's listeners at once, and the other nodes' as soon as the database relays it. */
  publish(topic: ChangeTopic, id: string): Promise<void>;
  subscribe(topic: ChangeTopic, fn: (id: string) => void): void;
  close(): Promise<void>;
}

/** The embedded feed: one process, its own listeners. */
export class LocalChanges implements ChangeFeed {
  private readonly listeners = new Map<ChangeTopic, ((id: string) => void)[]>();

  async publish(topic: ChangeTopic, id: string): Promise<void> {
    this.tell(topic, id);
  }

  subscribe(topic: ChangeTopic, fn: (id: string) => void): void {
    this.listeners.set(topic, [...(this.listeners.get(topic) ?? []), fn]);
  }

  async close(): Promise<void> {}

  protected tell(topic: ChangeTopic, id: string): void {
    for (const fn of this.listeners.get(topic) ?? []) fn(id);
  }
}

const CHANNEL = 'xeo_changes';
const RECONNECT_MS = 1000;

/**
 * The feed of nodes sharing PostgreSQL: one listening connection per node (reconnecting when the
 * database comes back; what changed meanwhile is bounded by the cache's own TTL). A node hears its
 * own notices too, which only repeats what it already did.
 */
export class PgChanges extends LocalChanges {
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client | null> | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly url: string,
    /** Longest wait for the database to take a notice (a hung server costs the change this, no more). */
    private readonly timeoutMs = 10_000,
  ) {
    super();
    void this.connection();
  }

  override async publish(topic: ChangeTopic, id: string): Promise<void> {
    this.tell(topic, id);
    const c = await this.connection();
    try {
      await c?.query('SELECT pg_notify($1, $2)', [CHANNEL, `${topic}:${id}`]);
    } catch (e) {
      log.warn(`could not tell other nodes that ${topic} ${id} changed: ${(e as Error).message}`);
      // A connection that timed out is not trusted again: the next notice connects anew.
      if (this.client === c) {
        this.client = null;
        (c as unknown as { connection?: { stream?: { destroy(): void } } } | null)?.connection?.stream?.destroy();
        this.later();
      }
    }
  }

  override async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    // closing: a connection that is already broken has nothing left to end
    await this.client?.end().catch(() => {});
    this.client = null;
  }

  private connection(): Promise<pg.Client | null> {
    if (this.client) return Promise.resolve(this.client);
    return (this.connecting ??= this.connect().finally(() => (this.connecting = null)));
  }

  private async connect(): Promise<pg.Client | null> {
    if (this.closed) return null;
    const c = await pgClient(this.url, this.timeoutMs);
    const lost = () => {
      if (this.client !== c) return;
      this.client = null;
      this.later();
    };
    c.on('error', lost);
    c.on('end', lost);
    c.on('notification', (n) => {
      const [topic, ...rest] = (n.payload ?? '').split(':');
      if (TOPICS.includes(topic) && rest.length) this.tell(topic as ChangeTopic, rest.join(':'));
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANNEL}`);
    } catch {
      // the connection never worked; the retry below starts a new one
      await c.end().catch(() => {});
      this.later();
      return null;
    }
    if (this.closed) {
      // closed meanwhile: this connection is not used, whatever its end says
      await c.end().catch(() => {});
      return null;
    }
    this.client = c;
    return c;
  }

  private later(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      void this.connection();
    }, RECONNECT_MS);
    this.retry.unref();
  }
}
