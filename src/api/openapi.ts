// Our OpenAPI 3 document (the `service-desc` link of GET /), generated from the version's route
// table so it always lists exactly what is served.
import type { AppRequest, AppRoute } from './context.js';
import { json } from './reply.js';

const SUCCESS_TEXT: Record<number, string> = {
  200: 'Success',
  201: 'Created; the Location header names the new resource',
  202: 'Accepted; the work is queued',
  204: 'Done; no content',
  302: 'Redirect',
};

function operation(route: AppRoute, brandWord: string) {
  const params = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  const status = route.status ?? 200;
  const security = route.auth === 'none' ? [] : route.auth === 'basic' ? [{ Basic: [] }] : route.auth === 'optional' ? [{}, { Bearer: [] }] : [{ Bearer: [] }];
  return {
    summary: route.summary,
    operationId: `${route.method.toLowerCase()}${route.path.replace(/[{}]/g, '').replace(/[^\w]+/g, '_')}`.replace(/_+$/, ''),
    ...(params.length ? { parameters: params } : {}),
    security,
    responses: {
      [status]: {
        description: SUCCESS_TEXT[status] ?? 'Success',
        ...(status === 201 ? { headers: { Location: { schema: { type: 'string' } }, [`${brandWord}-Identifier`]: { schema: { type: 'string' } } } } : {}),
      },
      '4XX': { $ref: '#/components/responses/error' },
      '5XX': { $ref: '#/components/responses/error' },
    },
  };
}

function document(req: AppRequest) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of req.app.routers.get(req.version)!.routes) {
    if (r.placeholder) continue;
    (paths[r.path] ??= {})[r.method.toLowerCase()] = operation(r, req.app.brandWord);
  }
  return {
    openapi: '3.0.3',
    info: {
      title: `${req.app.config.title} API`,
      version: req.version.apiVersion,
      description: `${req.app.config.description}\n\nBack-end version ${req.app.backendVersion}.`,
    },
    servers: [{ url: req.baseUrl }],
    paths,
    components: {
      securitySchemes: {
        Bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT or openEO',
          description: 'The access token of /credentials/basic or of an OpenID Connect provider, as it is (a JWT), or in the older form basic//TOKEN or oidc/PROVIDER/TOKEN',
        },
        Basic: { type: 'http', scheme: 'basic' },
      },
      responses: {
        error: {
          description: 'An error, described by a JSON error object',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['code', 'message'],
                properties: {
                  id: { type: 'string' },
                  code: { type: 'string' },
                  message: { type: 'string' },
                  url: { type: 'string', format: 'uri' },
                  links: { type: 'array', items: { type: 'object' } },
                },
              },
            },
          },
        },
      },
    },
  };
}

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/openapi.json',
    summary: 'OpenAPI description of this API',
    auth: 'none',
    listed: false,
    handler: (req) => ({ ...json(document(req)), contentType: 'application/vnd.oai.openapi+json;version=3.0' }),
  },
];
