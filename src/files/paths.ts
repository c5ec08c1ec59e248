// User file paths from the URL. The spec lets names be URL-encoded but keeps `/` as the separator;
// every way of stepping outside the user's folder is refused here, before any disk access.
import { ApiError } from '../core/errors.js';

const MAX_SEGMENT_BYTES = 255;
const MAX_PATH_CHARS = 1024;
// What the spec's file path pattern forbids, plus control characters (NUL included).
const FORBIDDEN = /[\u0000-\u001f\u007f\\:'"]/;

/** Decodes and checks a path from `/files/{path}`; returns it `/`-joined, without leading slash. */
export function parseUserPath(raw: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    throw new ApiError('FilePathInvalid', { reason: 'it is not valid URL encoding' });
  }
  if (decoded.length > MAX_PATH_CHARS) throw new ApiError('FilePathInvalid', { reason: `it is longer than ${MAX_PATH_CHARS} characters` });
  if (decoded.startsWith('/')) throw new ApiError('FilePathInvalid', { reason: 'it must be relative to your folder' });
  const segments = decoded.split('/');
  for (const s of segments) {
    if (s === '') throw new ApiError('FilePathInvalid', { reason: 'it has an empty folder or file name' });
    if (s === '.' || s === '..') throw new ApiError('FilePathInvalid', { reason: "'.' and '..' are not allowed" });
    if (FORBIDDEN.test(s)) throw new ApiError('FilePathInvalid', { reason: 'it contains a control character or one of \\ : \' "' });
    if (Buffer.byteLength(s) > MAX_SEGMENT_BYTES) throw new ApiError('FilePathInvalid', { reason: `a name is longer than ${MAX_SEGMENT_BYTES} bytes` });
  }
  return segments.join('/');
}
