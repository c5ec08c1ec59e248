// The unversioned entry point at the host root: /.well-known/{brand} lists every served version.
// GET / at the root sends browsers and clients on to the newest version.
import type { AppRoute } from './context.js';
import { VERSIONS, LATEST } from './versions.js';
import { json, empty } from './reply.js';
import { productionOf } from './production.js';
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
      handler: async (req) =>
        json({
          // Oldest first, as in the API's own example: tools that take the last entry connect to the newest.
          versions: await Promise.all(
            [...VERSIONS].reverse().map(async (v) => ({
              url: req.app.publicUrl() + v.prefix,
              api_version: v.apiVersion,
              production: await productionOf(req.app, v),
            })),
          ),
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
