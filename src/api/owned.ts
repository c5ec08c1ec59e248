// The record a path names, looked up the same way for jobs and services: its id must have the shape
// of our ids, and a record of another user does not exist for the caller (the same 404 as an
// unknown id, so ids of others cannot be probed).
import { ApiError, type ErrorCode } from '../core/errors.js';
import type { AppRequest } from './context.js';

const ID = /^[\w\-.~]+$/;

export async function ownedRecord<T extends { userId: string }>(req: AppRequest, param: string, notFound: ErrorCode, get: (id: string) => Promise<T | null>): Promise<T> {
  const id = req.params[param];
  const record = ID.test(id) ? await get(id) : null;
  if (!record || record.userId !== req.me.id) throw new ApiError(notFound, { identifier: id });
  return record;
}
