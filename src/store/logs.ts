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
  stacktrace: string | null;
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
  constructor(private readonly db: SqlDb) {}

  append(owner: string, e: Omit<LogEntry, 'id' | 'time'> & { time?: string }): string {
    const r = this.db.get<{ seq: number }>(
      'INSERT INTO logs (owner, level, message, code, time, data, path, stacktrace) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq',
      owner,
      e.level,
      e.message,
      e.code ?? null,
      e.time ?? new Date().toISOString(),
      e.data === undefined ? null : JSON.stringify(e.data),
      e.path === undefined ? null : JSON.stringify(e.path),
      e.stacktrace ?? null,
    );
    return String(r!.seq);
  }

  page(owner: string, after: string | null, minLevel: LogLevel, limit: number): LogEntry[] {
    const seq = after !== null && /^\d{1,15}$/.test(after) ? Number(after) : 0;
    const levels = LOG_LEVELS.slice(0, levelRank(minLevel) + 1);
    while (levels.length < 4) levels.push(levels[0]);
    return this.db
      .all<Row>('SELECT * FROM logs WHERE owner = ? AND seq > ? AND level IN (?, ?, ?, ?) ORDER BY seq LIMIT ?', owner, seq, levels[0], levels[1], levels[2], levels[3], limit)
      .map(toEntry);
  }

  deleteOwner(owner: string): void {
    this.db.run('DELETE FROM logs WHERE owner = ?', owner);
  }
}
