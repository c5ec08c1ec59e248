// The answer of the logs endpoints (services now, batch jobs too): `level` filters what is
// returned, `offset` is the id of the last entry the client has, `limit` pages with a next link.
import type { AppRequest } from './context.js';
import type { Reply } from './reply.js';
import type { LogLevel } from '../core/run-context.js';
import { ApiError } from '../core/errors.js';
import { json } from './reply.js';
import { levelRank } from '../store/logs.js';
import { logLevelMember, type Invalid } from './members.js';
import { parseLimit, type Link } from './paging.js';

/** Entries per page when the client sets no limit. */
const PAGE = 1000;

const badQuery: Invalid = (parameter, reason) => new ApiError('QueryParameterInvalid', { parameter, reason });

/** `stored`: the lowest level the owner keeps (its log_level). */
export async function logsReply(req: AppRequest, owner: string, stored: LogLevel): Promise<Reply> {
  const q = req.query;
  const requested = q.get('level') ? logLevelMember(q.get('level'), 'level', badQuery) : 'debug';
  const offset = q.get('offset') || null;
  if (offset !== null && !/^\d{1,15}$/.test(offset)) {
    throw new ApiError('QueryParameterInvalid', { parameter: 'offset', reason: 'it must be the id of a log entry' });
  }
  const limit = parseLimit(req) ?? PAGE;
  // The effective level is the more severe of what is kept and what is asked for.
  const level = levelRank(requested) < levelRank(stored) ? requested : stored;
  const entries = await req.app.store.logs.page(owner, offset, level, limit + 1);
  const logs = entries.slice(0, limit);
  const links: Link[] = [];
  if (entries.length > limit) {
    const next = new URLSearchParams({ offset: logs[logs.length - 1].id, level, limit: String(limit) });
    links.push({ rel: 'next', href: `${req.url(req.path)}?${next}`, type: 'application/json' });
  }
  return json({ level, logs, links });
}
