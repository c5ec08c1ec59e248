// CORS headers for every answer, per version profile: `*` for 1.x; for 1.0.0-rc.2 the request's
// Origin is echoed with credentials allowed, and nothing is sent when there is no Origin.
import type { VersionProfile } from '../api/versions.js';
import { fixedHeaders, type HeaderList } from './header-bytes.js';

export interface Cors {
  /** Headers for a normal answer. */
  headers(version: VersionProfile | null, origin: string | undefined): HeaderList;
  /** Extra headers for a preflight (OPTIONS) answer. */
  preflight(methods: string[], requestedHeaders: string | undefined): HeaderList;
}

export function createCors(brandWord: string): Cors {
  const expose1x = `Link, Location, ${brandWord}-Costs, ${brandWord}-Identifier, X-Request-Id`;
  const exposeRc = `Location, ${brandWord}-Identifier, ${brandWord}-Costs, Link, X-Request-Id`;
  const star: HeaderList = fixedHeaders([
    ['Access-Control-Allow-Origin', '*'],
    ['Access-Control-Expose-Headers', expose1x],
  ]);
  const allowHeaders = 'Authorization, Content-Type, Accept, Accept-Language, Range, If-None-Match, If-Modified-Since';
  return {
    headers(version, origin) {
      if (version?.cors !== 'echo-origin') return star;
      if (!origin) return [];
      return [
        ['Access-Control-Allow-Origin', origin],
        ['Access-Control-Allow-Credentials', 'true'],
        ['Access-Control-Expose-Headers', exposeRc],
        ['Vary', 'Origin'],
      ];
    },
    preflight(methods, requestedHeaders) {
      // Allow what the browser asks for on top of our fixed list: harmless, and clients that add
      // their own headers (tracing, caching) keep working.
      const extra = requestedHeaders
        ? requestedHeaders
            .split(',')
            .map((h) => h.trim())
            .filter((h) => /^[\w-]+$/.test(h))
        : [];
      const known = new Set(allowHeaders.toLowerCase().split(', '));
      const all = [allowHeaders, ...extra.filter((h) => !known.has(h.toLowerCase()))].join(', ');
      return [
        ['Access-Control-Allow-Methods', ['OPTIONS', ...methods].join(', ')],
        ['Access-Control-Allow-Headers', all],
        ['Access-Control-Max-Age', '86400'],
      ];
    },
  };
}
