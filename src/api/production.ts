// Whether a version is production-ready here (the well-known document and GET / say it alike).
import type { AppContext } from './context.js';
import type { VersionProfile } from './versions.js';

/**
 * XEO_PRODUCTION, and for a version that needs them (1.3.0) a UDF runtime listed by
 * GET /udf_runtimes. Synchronous when no runtime needs asking.
 */
export function productionOf(app: AppContext, v: VersionProfile): boolean | Promise<boolean> {
  if (!app.config.production) return false;
  if (!v.productionNeedsUdf) return true;
  return app.udfRuntimes().then((r) => Object.keys(r).length > 0);
}
