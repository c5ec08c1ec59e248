// `limit` and `next` links for every list endpoint. Pages are keyset-based: the `after` query
// parameter carries the key of the last item of the previous page, so pages stay correct while
// items are added or removed.
import type { AppRequest } from './context.js';
import { ApiError } from '../core/errors.js';

export interface Link {
  rel: string;
  href: string;
  type?: string;
  title?: string;
}

/** `limit` as a positive integer; null when absent or empty (= everything). */
export function parseLimit(req: AppRequest): number | null {
  const raw = req.query.get('limit');
  if (raw === null || raw === '') return null;
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1) {
    throw new ApiError('QueryParameterInvalid', { parameter: 'limit', reason: 'it must be a whole number of at least 1' });
  }
  return Number(raw);
}

/**
 * One page of a list. `fetch(after, count)` returns up to `count` items ordered by key, with keys
 * greater than `after`.
 */
export async function paginate<T>(req: AppRequest, fetch: (after: string | null, count: number) => T[] | Promise<T[]>, keyOf: (item: T) => string): Promise<{ items: T[]; links: Link[] }> {
  const limit = parseLimit(req);
  const after = req.query.get('after') || null;
  const got = await fetch(after, limit === null ? Number.MAX_SAFE_INTEGER : limit + 1);
  const links: Link[] = [{ rel: 'self', href: req.url(req.path), type: 'application/json' }];
  if (limit !== null && got.length > limit) {
    const items = got.slice(0, limit);
    const next = `${req.url(req.path)}?limit=${limit}&after=${encodeURIComponent(keyOf(items[items.length - 1]))}`;
    links.push({ rel: 'next', href: next, type: 'application/json' });
    return { items, links };
  }
  return { items: got, links };
}

/** `fetch` for an in-memory array already sorted by key. */
export function fromSorted<T>(all: T[], keyOf: (item: T) => string): (after: string | null, count: number) => T[] {
  return (after, count) => {
    let start = 0;
    if (after !== null) {
      start = all.findIndex((x) => keyOf(x) > after);
      if (start < 0) return [];
    }
    return all.slice(start, start + count);
  };
}
