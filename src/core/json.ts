// JSON bodies: parsed with a clear JsonInvalid error, and refused before parsing when they nest deeper
// than any walk over them could follow.
import { ApiError } from './errors.js';

/**
 * Deepest nesting of arrays and objects a JSON body may have. Real bodies stay far below (a process
 * graph nests a few levels per child process); JSON.parse itself takes millions of levels, but every
 * recursive walk afterwards (JSON.stringify when storing, schema checks) would overflow the stack.
 */
export const MAX_JSON_DEPTH = 1000;

/** The nesting depth of JSON text, or MAX + 1 as soon as it exceeds `max` (strings are skipped). */
export function jsonDepth(buf: Buffer, max = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (c === 0x22) {
      // a string: skip to its closing quote, past escapes
      for (i++; i < buf.length && buf[i] !== 0x22; i++) if (buf[i] === 0x5c) i++;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > deepest && (deepest = depth) > max) return max + 1;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

/** Parses a JSON body; a clear JsonInvalid error names what is wrong. */
export function parseJson(buf: Buffer): unknown {
  if (buf.length === 0) throw new ApiError('BodyMissing');
  if (jsonDepth(buf) > MAX_JSON_DEPTH) throw new ApiError('JsonInvalid', { reason: `it nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep` });
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    throw new ApiError('JsonInvalid', { reason: 'the body is not valid UTF-8' });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ApiError('JsonInvalid', { reason: (e as Error).message });
  }
}
