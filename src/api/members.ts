// Members of request bodies that several record kinds share (jobs, services): checked the same
// way everywhere, each kind naming its own error (PropertyInvalid, ServiceConfigInvalid, ...).
import type { ApiError } from '../core/errors.js';
import type { LogLevel } from '../core/run-context.js';
import { LOG_LEVELS } from '../store/logs.js';

/** Makes the error for a member that has the wrong kind of value. */
export type Invalid = (member: string, reason: string) => ApiError;

/** A text member: absent or null is null, anything but a string is refused. */
export function textMember(body: Record<string, unknown>, k: string, invalid: Invalid): string | null {
  const v = body[k];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw invalid(k, 'a text or null is expected');
  return v;
}

/** A log level (`log_level` of bodies, `level` of queries). */
export function logLevelMember(v: unknown, member: string, invalid: Invalid): LogLevel {
  if (typeof v === 'string' && (LOG_LEVELS as readonly string[]).includes(v)) return v as LogLevel;
  throw invalid(member, `one of ${LOG_LEVELS.join(', ')} is expected`);
}
