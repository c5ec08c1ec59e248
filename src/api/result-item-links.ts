// STAC documents among a job's results (the STAC Item of a saved model) name the job's other files
// by relative hrefs, so that the pair works wherever it is copied together. Served through a signed
// result link, a bare relative href would lose the signature (it sits in the query, which a
// relative href does not inherit) and lead to a 404. So such a document is served with every href
// that names another file of the same results given that file's own signature in its query
// (`ml_model.xrf?expires=…&signature=…`, expiring with the link the document was reached by): still
// relative, so a copy of the pair on a web server or in a user's files works as before, and
// resolved against the Item's signed URL it is the file's signed link, usable as it is by a
// client and by load_ml_model or predict_onnx given the Item's URL. The stored file is unchanged.
import { buffer } from 'node:stream/consumers';
import type { AppRequest } from './context.js';
import type { JobAsset, JobResults } from '../store/types.js';
import type { BlobStore } from '../store/blobs.js';
import { signedUrl } from './results-document.js';

/** Largest STAC document of the results whose links are signed (a model's Item is a few kB). */
const MAX_DOCUMENT_BYTES = 1024 * 1024;

/** Whether an asset of the results is a STAC document that may name the others (role `metadata`, JSON). */
export function namesOtherAssets(asset: JobAsset, size: number): boolean {
  return asset.roles.includes('metadata') && /^application\/(geo\+)?json$/.test(asset.type) && size <= MAX_DOCUMENT_BYTES;
}

/**
 * The document's bytes with the hrefs of its assets and links that name another file of the same
 * results (relative, without a query) signed, expiring at `expires`; the bytes as stored when it is
 * no JSON object or names no other file.
 */
export async function withSignedHrefs(req: AppRequest, jobId: string, results: JobResults, asset: JobAsset, store: BlobStore, expires: number): Promise<Buffer> {
  const bytes = await buffer(await store.read(asset.key));
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch {
    return bytes;
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return bytes;
  let changed = false;
  const sign = (entry: unknown) => {
    if (!entry || typeof entry !== 'object') return;
    const e = entry as { href?: unknown };
    const name = typeof e.href === 'string' ? siblingName(e.href) : null;
    if (name === null || !Object.hasOwn(results.assets, name)) return;
    // The signed link's last segment: the file's name and its signature, relative to the document's link.
    const url = signedUrl(req, jobId, name, expires);
    e.href = url.slice(url.lastIndexOf('/') + 1);
    changed = true;
  };
  const d = doc as { assets?: unknown; links?: unknown };
  if (d.assets && typeof d.assets === 'object') for (const a of Object.values(d.assets)) sign(a);
  if (Array.isArray(d.links)) for (const l of d.links) sign(l);
  return changed ? Buffer.from(JSON.stringify(doc)) : bytes;
}

/** The file name a relative href names beside its document (`m.xrf`, `./m.xrf`), else null. */
function siblingName(href: string): string | null {
  const rel = href.replace(/^\.\//, '');
  if (!rel || /^[a-z][a-z0-9+.-]*:/i.test(rel) || /[/?#\\]/.test(rel)) return null;
  try {
    return decodeURIComponent(rel);
  } catch {
    return null;
  }
}
