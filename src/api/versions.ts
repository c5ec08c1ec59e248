// One profile per served API version. Every difference between the versions lives here, as data;
// handlers read the profile of the request instead of branching on version strings.

export type ApiVersion = '1.3.0' | '1.2.0' | '1.0.1' | '1.0.0-rc.2';

export interface VersionProfile {
  apiVersion: ApiVersion;
  /** URL path prefix under which this version is served. */
  prefix: string;
  /** stac_version announced in GET / and in STAC documents. */
  stacVersion: string;
  /** GET / carries `type: "Catalog"` (required from STAC 1.0.0-rc.1 on). */
  catalogType: boolean;
  /** GET / carries `conformsTo` (1.2.0 on; required from 1.3.0). */
  conformsToInCapabilities: boolean;
  /** Process nodes may carry `namespace` (absent in 1.0.0-rc.2). */
  nodeNamespace: boolean;
  /** Answer for an endpoint of the spec that we do not implement. */
  unsupported: 'NotFound' | 'FeatureUnsupported';
  /** CORS style: `*` (1.x) or echo the Origin with credentials (1.0.0-rc.2). */
  cors: 'star' | 'echo-origin';
  /** `canonical` links and the `dimensions`/`returns` schema keywords exist. */
  canonicalLinks: boolean;
  /** Default of `production` when a document does not state it (we always state it). */
  productionDefault: boolean;
  /** Lists the conformance class of JWT bearer tokens (1.3.0); JWTs are accepted on every version. */
  jwtConformance: boolean;
  /** GET /processes carries `version`, the processes release implemented (1.3.0). */
  processesVersion: boolean;
  /** The results document of a time series is a STAC Collection (1.3.0; allowed since 1.1.0, an Item on 1.2.0 for the clients that expect one). */
  resultsCollection: boolean;
  /** GET /collections/{id}/queryables exists (1.2.0 on). */
  queryables: boolean;
}

export const VERSIONS: readonly VersionProfile[] = [
  {
    apiVersion: '1.3.0',
    prefix: '/1.3.0',
    stacVersion: '1.0.0',
    catalogType: true,
    conformsToInCapabilities: true,
    nodeNamespace: true,
    unsupported: 'NotFound',
    cors: 'star',
    canonicalLinks: true,
    productionDefault: false,
    jwtConformance: true,
    processesVersion: true,
    resultsCollection: true,
    queryables: true,
  },
  {
    apiVersion: '1.2.0',
    prefix: '/1.2.0',
    stacVersion: '1.0.0',
    catalogType: true,
    conformsToInCapabilities: true,
    nodeNamespace: true,
    unsupported: 'NotFound',
    cors: 'star',
    canonicalLinks: true,
    productionDefault: false,
    jwtConformance: false,
    processesVersion: false,
    resultsCollection: false,
    queryables: true,
  },
  {
    apiVersion: '1.0.1',
    prefix: '/1.0.1',
    stacVersion: '1.0.0',
    catalogType: false,
    conformsToInCapabilities: false,
    nodeNamespace: true,
    unsupported: 'FeatureUnsupported',
    cors: 'star',
    canonicalLinks: false,
    productionDefault: false,
    jwtConformance: false,
    processesVersion: false,
    resultsCollection: false,
    queryables: false,
  },
  {
    apiVersion: '1.0.0-rc.2',
    prefix: '/1.0.0-rc.2',
    stacVersion: '0.9.0',
    catalogType: false,
    conformsToInCapabilities: false,
    nodeNamespace: false,
    unsupported: 'FeatureUnsupported',
    cors: 'echo-origin',
    canonicalLinks: false,
    productionDefault: true,
    jwtConformance: false,
    processesVersion: false,
    resultsCollection: false,
    queryables: false,
  },
];

export const LATEST = VERSIONS[0];

/** Finds the version whose prefix starts `path`; returns the rest of the path ('/' at least). */
export function splitVersion(path: string): { version: VersionProfile; rest: string } | null {
  for (const v of VERSIONS) {
    if (path === v.prefix) return { version: v, rest: '/' };
    if (path.startsWith(v.prefix) && path[v.prefix.length] === '/') return { version: v, rest: path.slice(v.prefix.length) };
  }
  return null;
}

/** A first path segment that looks like an API version we do not serve (e.g. /0.4.2/, /v1.1/). */
export function looksLikeVersion(segment: string): boolean {
  return /^v?\d+(\.\d+){0,2}(-[\w.]+)?$/.test(segment);
}
