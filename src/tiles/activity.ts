// What each service did, for its logs and usage: tiles rendered, served from the cache or empty,
// failures. Counters live in memory and are written to the store every few seconds (and before
// the logs are read), as one summary entry, so a busy map does not write a row per tile. Failures
// are logged at once, but the same failure of a service at most once a minute (the rest counted).
import { log } from '../core/log.js';
import type { Store } from '../store/types.js';
import type { LogLevel } from '../core/run-context.js';
import { ApiError } from '../core/errors.js';
import { LOG_LEVELS } from '../store/logs.js';
import { messageOf } from '../core/messages.js';
import type { TileCoord } from './tile-grid.js';

const FLUSH_MS = 10_000;
const REPEAT_MS = 60_000;

interface Counters {
  rendered: number;
  /** Requests answered by a render another request had started. */
  joined: number;
  hits: number;
  empty: number;
  failed: number;
  suppressed: number;
  values: number;
  cpuMs: number;
  renderMs: number[];
}

const zero = (): Counters => ({ rendered: 0, joined: 0, hits: 0, empty: 0, failed: 0, suppressed: 0, values: 0, cpuMs: 0, renderMs: [] });

export const serviceLogOwner = (id: string) => `service:${id}`;

export class ServiceActivity {
  private readonly counters = new Map<string, Counters>();
  private readonly lastError = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly store: Store) {
    this.timer = setInterval(() => void this.flushAll(), FLUSH_MS);
    this.timer.unref();
  }

  private of(id: string): Counters {
    let c = this.counters.get(id);
    if (!c) this.counters.set(id, (c = zero()));
    return c;
  }

  hit(id: string): void {
    this.of(id).hits++;
  }

  empty(id: string): void {
    this.of(id).empty++;
  }

  joined(id: string): void {
    this.of(id).joined++;
  }

  rendered(id: string, values: number, cpuMs: number, wallMs: number): void {
    const c = this.of(id);
    c.rendered++;
    c.values += values;
    c.cpuMs += cpuMs;
    if (c.renderMs.length < 10_000) c.renderMs.push(wallMs);
  }

  failed(id: string, e: unknown, coord: TileCoord): void {
    const c = this.of(id);
    c.failed++;
    const err = e instanceof ApiError ? e : null;
    const code = err?.code ?? 'Internal';
    // Busy answers are the client's to retry, not the service's fault.
    if (code === 'InfrastructureBusy') return;
    const message = err ? messageOf(err, 'en').text : 'the tile could not be drawn because of a server fault';
    const key = `${id}\n${code}\n${message}`;
    const now = Date.now();
    if (now - (this.lastError.get(key) ?? 0) < REPEAT_MS) {
      c.suppressed++;
      return;
    }
    this.lastError.set(key, now);
    this.log(id, 'error', `tile ${coord.z}/${coord.x}/${coord.y} failed: ${message}`, code, { z: coord.z, x: coord.x, y: coord.y }, err?.stacktrace);
  }

  /** Adds an entry to a service's log at its log level (in the background: a tile never waits for it). */
  log(id: string, level: LogLevel, message: string, code?: string, data?: unknown, stacktrace?: string): void {
    this.write(id, level, message, code, data, stacktrace).catch((e: unknown) => log.warn(`a log entry of service ${id} was not stored: ${(e as Error).message}`));
  }

  private async write(id: string, level: LogLevel, message: string, code?: string, data?: unknown, stacktrace?: string): Promise<void> {
    const service = await this.store.services.get(id);
    if (!service || LOG_LEVELS.indexOf(level) > LOG_LEVELS.indexOf(service.logLevel)) return;
    await this.store.logs.append(serviceLogOwner(id), { level, message, code, data, ...(stacktrace ? { stacktrace } : {}) });
  }

  /** Writes a service's counters to its usage and log; counters that could not be written wait for the next flush. */
  async flush(id: string): Promise<void> {
    const c = this.counters.get(id);
    if (!c) return;
    this.counters.delete(id);
    try {
      await this.record(id, c);
    } catch (e) {
      const now = this.of(id);
      for (const k of ['rendered', 'joined', 'hits', 'empty', 'failed', 'suppressed', 'values', 'cpuMs'] as const) now[k] += c[k];
      now.renderMs.push(...c.renderMs.slice(0, Math.max(0, 10_000 - now.renderMs.length)));
      throw e;
    }
  }

  private async record(id: string, c: Counters): Promise<void> {
    if (!(await this.store.services.get(id))) return;
    const served = c.rendered + c.joined + c.hits + c.empty;
    await this.store.services.addUsage(id, { tiles: served, cacheHits: c.hits, valuesRead: c.values, cpuMs: c.cpuMs });
    if (served + c.failed === 0) return;
    const sorted = c.renderMs.sort((a, b) => a - b);
    const p50 = sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)] : null;
    const parts = [
      `${served} tiles served: ${c.rendered} drawn${p50 !== null ? ` (median ${p50.toFixed(1)} ms)` : ''}${c.joined ? `, ${c.joined} waited for the same drawing` : ''}, ${c.hits} from the cache, ${c.empty} empty (outside the data)`,
    ];
    if (c.failed) parts.push(`${c.failed} failed${c.suppressed ? ` (${c.suppressed} repeats not logged one by one)` : ''}`);
    await this.write(id, 'info', parts.join('; '), undefined, { tiles_drawn: c.rendered, tiles_joined: c.joined, tiles_cached: c.hits, tiles_empty: c.empty, tiles_failed: c.failed, median_ms: p50 });
  }

  async flushAll(): Promise<void> {
    for (const id of [...this.counters.keys()]) {
      try {
        await this.flush(id);
      } catch (e) {
        log.warn(`could not record the activity of service ${id}: ${(e as Error).message}`);
      }
    }
    // Failures older than the repeat window need no memory: the next one is logged anyway.
    const now = Date.now();
    for (const [key, at] of this.lastError) if (now - at >= REPEAT_MS) this.lastError.delete(key);
  }

  forget(id: string): void {
    this.counters.delete(id);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushAll();
  }
}
