// The unversioned entry point at the host root: /.well-known/{brand} lists every served version.
// GET / at the root sends browsers and clients on to the newest version.
import type { AppRoute } from './context.js';
import { VERSIONS, LATEST } from './versions.js';
import { json, empty } from './reply.js';
import { jwksRoute } from './credentials.js';

export const WELL_KNOWN_TITLE = 'Versions of this API';
export const wellKnownPath = (brand: string) => `/.well-known/${brand.toLowerCase()}`;

export function rootRoutes(brand: string): AppRoute[] {
  return [
    {
      method: 'GET',
      path: wellKnownPath(brand),
      summary: WELL_KNOWN_TITLE,
      auth: 'none',
      handler: (req) =>
        json({
          // Oldest first, as in the API's own example: tools that take the last entry connect to the newest.
          // Production as GET / says it (XEO_PRODUCTION): the same for every version.
          versions: [...VERSIONS].reverse().map((v) => ({ url: req.app.publicUrl() + v.prefix, api_version: v.apiVersion, production: req.app.config.production })),
        }),
    },
    jwksRoute,
    {
      method: 'GET',
      path: '/',
      summary: 'Redirect to the newest API version',
      auth: 'none',
      handler: (req) => empty(302, { Location: `${req.app.publicUrl()}${LATEST.prefix}/` }),
    },
  ];
}
