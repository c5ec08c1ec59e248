// The endpoints the openEO API defines (paths and methods are facts of the spec). A request to one
// of these that we do not (yet) implement gets the version's "unsupported" answer (404 or 501)
// instead of a plain "nothing here", and its preflight still succeeds.
import type { VersionProfile } from './versions.js';
import type { AppRoute } from './context.js';
import { ApiError } from '../core/errors.js';

const COMMON: [string, string[]][] = [
  ['/', ['GET']],
  ['/file_formats', ['GET']],
  ['/conformance', ['GET']],
  ['/collections', ['GET']],
  ['/collections/{collection_id}', ['GET']],
  ['/processes', ['GET']],
  ['/udf_runtimes', ['GET']],
  ['/credentials/oidc', ['GET']],
  ['/credentials/basic', ['GET']],
  ['/validation', ['POST']],
  ['/result', ['POST']],
  ['/process_graphs', ['GET']],
  ['/process_graphs/{process_graph_id}', ['GET', 'PUT', 'DELETE']],
  ['/service_types', ['GET']],
  ['/services', ['GET', 'POST']],
  ['/services/{service_id}', ['GET', 'PATCH', 'DELETE']],
  ['/services/{service_id}/logs', ['GET']],
  ['/jobs', ['GET', 'POST']],
  ['/jobs/{job_id}', ['GET', 'PATCH', 'DELETE']],
  ['/jobs/{job_id}/estimate', ['GET']],
  ['/jobs/{job_id}/logs', ['GET']],
  ['/jobs/{job_id}/results', ['GET', 'POST', 'DELETE']],
  ['/files', ['GET']],
  ['/files/{path}', ['GET', 'PUT', 'DELETE']],
  ['/me', ['GET']],
];

const SINCE_1_2: [string, string[]][] = [['/collections/{collection_id}/queryables', ['GET']]];

export function specEndpoints(version: VersionProfile): [string, string[]][] {
  return version.queryables ? [...COMMON, ...SINCE_1_2] : COMMON;
}

/** Routes of the spec that we do not implement answer the version's "unsupported" error. */
export function unsupportedRoutes(version: VersionProfile, implemented: AppRoute[]): AppRoute[] {
  const have = new Set(implemented.map((r) => `${r.method} ${r.path}`));
  const out: AppRoute[] = [];
  for (const [path, methods] of specEndpoints(version)) {
    for (const method of methods) {
      if (have.has(`${method} ${path}`)) continue;
      out.push({
        method: method as AppRoute['method'],
        path,
        summary: 'Not offered by this back-end',
        auth: 'none',
        listed: false,
        placeholder: true,
        handler: () => {
          throw version.unsupported === 'NotFound' ? new ApiError('NotFound', {}, 'This back-end does not offer this endpoint of the API.') : new ApiError('FeatureUnsupported');
        },
      });
    }
  }
  return out;
}
