import type { Database, Statement } from 'better-sqlite3';
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
});

export class SqliteLogs implements LogRepo {
  private readonly insert: Statement<[string, string, string, string | null, string, string | null, string | null]>;
  private readonly select: Statement<[string, number, string, string, string, string, number], Row>;
  private readonly remove: Statement<[string]>;

  constructor(db: Database) {
    this.insert = db.prepare('INSERT INTO logs (owner, level, message, code, time, data, path) VALUES (?, ?, ?, ?, ?, ?, ?)');
    this.select = db.prepare('SELECT * FROM logs WHERE owner = ? AND seq > ? AND level IN (?, ?, ?, ?) ORDER BY seq LIMIT ?');
    this.remove = db.prepare('DELETE FROM logs WHERE owner = ?');
  }

  append(owner: string, e: Omit<LogEntry, 'id' | 'time'> & { time?: string }): string {
    const r = this.insert.run(
      owner,
      e.level,
      e.message,
      e.code ?? null,
      e.time ?? new Date().toISOString(),
      e.data === undefined ? null : JSON.stringify(e.data),
      e.path === undefined ? null : JSON.stringify(e.path),
    );
    return String(r.lastInsertRowid);
  }

  page(owner: string, after: string | null, minLevel: LogLevel, limit: number): LogEntry[] {
    const seq = after !== null && /^\d{1,15}$/.test(after) ? Number(after) : 0;
    const levels = LOG_LEVELS.slice(0, levelRank(minLevel) + 1);
    while (levels.length < 4) levels.push(levels[0]);
    return this.select.all(owner, seq, levels[0], levels[1], levels[2], levels[3], limit).map(toEntry);
  }

  deleteOwner(owner: string): void {
    this.remove.run(owner);
  }
}
