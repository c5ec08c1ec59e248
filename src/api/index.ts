// The route table: every API module contributes its routes here, in the order they are listed.
import type { AppRoute } from './context.js';
import { routes as capabilities } from './capabilities.js';
import { routes as openapi } from './openapi.js';
import { routes as discovery } from './discovery.js';
import { routes as credentials } from './credentials.js';
import { routes as me } from './me.js';
import { routes as processGraphs } from './process-graphs.js';
import { routes as files } from './files.js';
import { routes as collections } from './collections.js';
import { routes as processes } from './processes.js';
import { routes as result } from './result.js';
import { routes as services } from './services.js';
import { routes as jobs } from './jobs.js';
import { routes as jobResults } from './job-results.js';
import { routes as processingParameters } from './processing-parameters.js';
import { tileRoutes } from './tiles.js';
import { rootRoutes as wellKnownRoutes } from './well-known.js';

export const apiRoutes: AppRoute[] = [
  ...capabilities,
  ...openapi,
  ...discovery,
  ...collections,
  ...processes,
  ...processingParameters,
  ...result,
  ...services,
  ...credentials,
  ...me,
  ...processGraphs,
  ...files,
  ...jobs,
  ...jobResults,
];

/** Unversioned routes at the host root: the well-known document, and what map clients fetch. */
export const rootRoutes = (brand: string): AppRoute[] => [...wellKnownRoutes(brand), ...tileRoutes];
