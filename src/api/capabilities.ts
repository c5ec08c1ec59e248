// GET / (capabilities) and GET /conformance. The endpoint list comes from the version's route table.
import type { AppRequest, AppRoute } from './context.js';
import type { VersionProfile } from './versions.js';
import type { Reply } from './reply.js';
import { WELL_KNOWN_TITLE, wellKnownPath } from './well-known.js';

export const DEFAULT_PLAN = 'free';

export function conformanceClasses(v: VersionProfile): string[] {
  return [
    `https://api.openeo.org/${v.apiVersion}`,
    'https://api.stacspec.org/v1.0.0/core',
    'https://api.stacspec.org/v1.0.0/collections',
    'http://www.opengis.net/spec/ogcapi-common-2/1.0/conf/collections',
  ];
}

export function billing() {
  return {
    // Costs are counted (the {Brand}-Costs header, job estimates) in credits, but never charged.
    currency: 'credits',
    default_plan: DEFAULT_PLAN,
    plans: [{ name: DEFAULT_PLAN, description: 'Everything this back-end offers; costs are counted in credits and never charged.', paid: false }],
  };
}

/** A handler for a document that depends only on version and configuration: serialised once per version. */
function perVersion(build: (req: AppRequest) => unknown): (req: AppRequest) => Reply {
  const cache = new WeakMap<VersionProfile, Buffer>();
  return (req) => {
    let body = cache.get(req.version);
    if (!body) cache.set(req.version, (body = Buffer.from(JSON.stringify(build(req)))));
    return { status: 200, body, contentType: 'application/json' };
  };
}

function capabilities(req: AppRequest) {
  const { config } = req.app;
  const v = req.version;
  return {
    api_version: v.apiVersion,
    backend_version: req.app.backendVersion,
    stac_version: v.stacVersion,
    ...(v.catalogType ? { type: 'Catalog' } : {}),
    id: config.brand.toLowerCase(),
    title: config.title,
    description: config.description,
    ...(v.conformsToInCapabilities ? { conformsTo: conformanceClasses(v) } : {}),
    production: config.production,
    endpoints: req.app.routers.get(v)!.endpoints(),
    billing: billing(),
    links: [
      { rel: 'self', href: req.url('/'), type: 'application/json', title: 'These capabilities' },
      { rel: 'version-history', href: req.app.publicUrl() + wellKnownPath(config.brand), type: 'application/json', title: WELL_KNOWN_TITLE },
      { rel: 'service-desc', href: req.url('/openapi.json'), type: 'application/vnd.oai.openapi+json;version=3.0', title: 'OpenAPI description of this API' },
      { rel: 'conformance', href: req.url('/conformance'), type: 'application/json', title: 'Conformance classes' },
      { rel: 'data', href: req.url('/collections'), type: 'application/json', title: 'Collections' },
    ],
  };
}

export const routes: AppRoute[] = [
  { method: 'GET', path: '/', summary: 'Capabilities of this back-end', auth: 'none', handler: perVersion(capabilities) },
  {
    method: 'GET',
    path: '/conformance',
    summary: 'Conformance classes this API meets',
    auth: 'none',
    handler: perVersion((req) => ({ conformsTo: conformanceClasses(req.version) })),
  },
];
