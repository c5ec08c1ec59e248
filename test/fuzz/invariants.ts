// What every answer of the server must look like, whatever was sent: no 5xx but a deliberate 503
// (and the 501 of API 1.0.x for endpoints not offered), a JSON error object with a known code for
// every 4xx/5xx, CORS headers, and no body where HTTP forbids one.
import { CATALOGUE, OWN_CODES } from '../../src/core/errors.js';
import schemas from '../../src/process-catalog/schemas.json' with { type: 'json' };
import type { RawResponse } from './raw-client.js';

/** Exception codes the process definitions declare (answered with status 400 unless they say otherwise). */
const PROCESS_CODES = new Set(Object.values(schemas as Record<string, { exceptions?: Record<string, unknown> }>).flatMap((s) => Object.keys(s.exceptions ?? {})));

export const KNOWN_CODES = new Set<string>([...Object.keys(CATALOGUE), ...Object.keys(OWN_CODES), ...PROCESS_CODES]);

/** 5xx answers that are deliberate: overload, and "not offered" in the versions that say 501. */
const DELIBERATE_5XX: Record<string, number> = { InfrastructureBusy: 503, FeatureUnsupported: 501 };

export interface AnswerContext {
  method: string;
  /** The request asked with an Origin header, or under a 1.x / unversioned path (CORS is owed). */
  corsExpected: boolean;
}

/** The problems of one answer; empty when it is fine. */
export function problemsOf(ctx: AnswerContext, r: RawResponse): string[] {
  const out: string[] = [];
  const ok = [200, 201, 202, 204, 206, 302, 304].includes(r.status) || (r.status >= 400 && r.status < 500) || r.status === 501 || r.status === 503;
  if (!ok) out.push(`status ${r.status} is not one this server may answer`);
  if (ctx.corsExpected && !r.headers['access-control-allow-origin']) out.push('no Access-Control-Allow-Origin header');
  if (r.trailing) out.push(`${r.trailing} bytes after the framed body`);
  if ((ctx.method === 'HEAD' || r.status === 204 || r.status === 304) && r.trailing) out.push(`a ${ctx.method} ${r.status} answer with a body`);
  if (ctx.method === 'OPTIONS' && r.status === 204 && !r.headers['access-control-allow-methods']) out.push('a preflight without Access-Control-Allow-Methods');
  if (r.status >= 400 && ctx.method !== 'HEAD') {
    let err: any;
    try {
      err = JSON.parse(r.body.toString('utf8'));
    } catch {
      out.push(`error body is not JSON: ${r.body.subarray(0, 200).toString('utf8')}`);
      return out;
    }
    if (!/^application\/json/.test(r.headers['content-type'] ?? '')) out.push(`error Content-Type ${r.headers['content-type']}`);
    if (err === null || typeof err !== 'object' || typeof err.code !== 'string' || typeof err.message !== 'string') out.push('error body lacks code or message');
    else {
      if (!KNOWN_CODES.has(err.code)) out.push(`unknown error code ${err.code}`);
      if (r.status >= 500 && DELIBERATE_5XX[err.code] !== r.status) out.push(`server error ${r.status} ${err.code}: ${err.message}`);
    }
  }
  return out;
}
