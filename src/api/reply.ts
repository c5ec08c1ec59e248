// What a handler answers: a small value the server turns into bytes on the wire in one place.
import type { Readable } from 'node:stream';

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** A JSON value, serialised by the server. */
  json?: unknown;
  /** Ready bytes (or text) with their content type. */
  body?: Buffer | string;
  /** A stream of bytes, sent with backpressure; `size` enables Content-Length. */
  stream?: Readable;
  size?: number;
  contentType?: string;
}

export const json = (value: unknown, status = 200, headers?: Record<string, string>): Reply => ({ status, json: value, headers });
export const empty = (status = 204, headers?: Record<string, string>): Reply => ({ status, headers });
