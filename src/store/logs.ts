import type { SqlDb } from './sql.js';
import type { LogEntry, LogRepo } from './types.js';
import type { LogLevel } from '../core/run-context.js';

interface Row {
  seq: number;
  level: LogLevel;
  message: string;
  code: string | null;
  time: string;
  data: string | null;
  path: string | null;
  stacktrace?: string | null;
}

/** Levels from the most to the least severe; an entry passes a filter when its rank is at most the filter's. */
export const LOG_LEVELS: readonly LogLevel[] = ['error', 'warning', 'info', 'debug'];
export const levelRank = (l: LogLevel) => LOG_LEVELS.indexOf(l);

const toEntry = (r: Row): LogEntry => ({
  id: String(r.seq),
  level: r.level,
  message: r.message,
  ...(r.code ? { code: r.code } : {}),
  time: r.time,
  ...(r.data !== null ? { data: JSON.parse(r.data) } : {}),
  ...(r.path !== null ? { path: JSON.parse(r.path) } : {}),
  ...(r.stacktrace ? { stacktrace: r.stacktrace } : {}),
});

export class SqlLogs implements LogRepo {
  /**
   * The append under way of each owner: the next one waits for it, so an owner's entries are
   * numbered in the order they were logged even when several connections write at once.
   */
  private readonly tails = new Map<string, Promise<unknown>>();

  constructor(private readonly db: SqlDb) {}

  append(owner: string, e: Omit<LogEntry, 'id' | 'time'> & { time?: string }): Promise<string> {
    const time = e.time ?? new Date().toISOString();
    const write = async () => {
      const r = await this.db.get<{ seq: number }>(
        'INSERT INTO logs (owner, level, message, code, time, data, path, stacktrace) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq',
        owner,
        e.level,
        e.message,
        e.code ?? null,
        time,
        e.data === undefined ? null : JSON.stringify(e.data),
        e.path === undefined ? null : JSON.stringify(e.path),
        e.stacktrace ?? null,
      );
      return String(r!.seq);
    };
    const before = this.tails.get(owner);
    const mine = before ? before.then(write, write) : write();
    // the next write waits for this one, not for its success; the writer of this one gets its error
    const tail = mine.catch(() => {});
    this.tails.set(owner, tail);
    void tail.then(() => this.tails.get(owner) === tail && this.tails.delete(owner));
    return mine;
  }

  async page(owner: string, after: string | null, minLevel: LogLevel, limit: number): Promise<LogEntry[]> {
    const seq = after !== null && /^\d{1,15}$/.test(after) ? Number(after) : 0;
    const levels = LOG_LEVELS.slice(0, levelRank(minLevel) + 1);
    while (levels.length < 4) levels.push(levels[0]);
    // Entries still being written are waited for: a reader sees what was logged before it asked.
    await this.tails.get(owner);
    const rows = await this.db.all<Row>('SELECT * FROM logs WHERE owner = ? AND seq > ? AND level IN (?, ?, ?, ?) ORDER BY seq LIMIT ?', owner, seq, levels[0], levels[1], levels[2], levels[3], limit);
    return rows.map(toEntry);
  }

  async deleteOwner(owner: string): Promise<void> {
    await this.tails.get(owner);
    await this.db.run('DELETE FROM logs WHERE owner = ?', owner);
  }
}
