// Batch job results: start (POST), cancel (DELETE) and the results document (GET), a STAC Item
// whose asset links are signed and expire, so they work without a token; and the routes those
// links lead to, which serve the document and the files (HEAD and Range requests too).
import type { AppRequest, AppRoute } from './context.js';
import { ApiError } from '../core/errors.js';
import { json, empty } from './reply.js';
import type { JobRecord } from '../store/types.js';
import { jobOf } from './jobs.js';
import { estimateJob } from '../jobs/estimate.js';
import { createHash } from 'node:crypto';
import { namesOtherAssets, withSignedHrefs } from './result-item-links.js';
import { documentReply, formFor, resultsDocument, variantKey, type DocumentVariant } from './results-document.js';

const enc = encodeURIComponent;

/** The variant a link to the document names (what its signature covers). */
function linkVariant(req: AppRequest): DocumentVariant {
  return { form: req.query.get('form') === 'collection' ? 'collection' : 'item', partial: req.query.get('partial') === 'true' };
}

/** A signed link's job, after checking signature and expiry: a bad signature is 404 (it reveals nothing), an old one 410. */
async function signedJob(req: AppRequest, asset: string | null, variant = ''): Promise<{ job: JobRecord; expires: number }> {
  const jobId = req.params.job_id;
  const expires = Number(req.query.get('expires'));
  const signature = req.query.get('signature') ?? '';
  if (!Number.isSafeInteger(expires) || !req.app.jobs.links.verify(jobId, asset, expires, signature, variant)) {
    throw new ApiError('NotFound', {}, 'This link is not valid. Request the job results again for working links.');
  }
  if (expires * 1000 < Date.now()) throw new ApiError('ResultLinkExpired');
  const job = await req.app.store.jobs.byId(jobId);
  if (!job) throw new ApiError('NotFound', {}, 'The job of this link no longer exists.');
  return { job, expires };
}

/** A byte range of a file of `size` bytes from a Range header; null for the whole file (no, several or malformed ranges). */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | null {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    // the last N bytes
    const n = Number(m[2]);
    if (n === 0) throw rangeError(size);
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== '' && Number(m[2]) < start) return null;
  }
  if (start >= size) throw rangeError(size);
  return { start, end };
}

function rangeError(size: number): ApiError {
  const e = new ApiError('RangeNotSatisfiable', { size });
  e.headers = { 'Content-Range': `bytes */${size}` };
  return e;
}

const expiry = (req: AppRequest) => Math.floor(Date.now() / 1000) + req.app.config.resultLinkTtlSeconds;

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/jobs/{job_id}/results',
    summary: 'Results of a batch job: a STAC Item with signed links',
    auth: 'required',
    handler: async (req) => {
      const job = await jobOf(req);
      // `?partial` alone counts as true (the parameter allows an empty value).
      const partial = req.query.has('partial') && /^(true|1|)$/i.test(req.query.get('partial')!);
      if (job.status === 'error' && !partial) {
        const entry = (await req.app.jobs.lastError(job.id)) ?? { id: '0', level: 'error', message: 'The job failed.' };
        return json(entry, 424);
      }
      const ready = job.status === 'finished' || (partial && job.status !== 'created' && job.status !== 'queued');
      if (!ready) throw new ApiError('JobNotFinished');
      const expires = expiry(req);
      const results = await req.app.store.jobResults.get(job.id);
      const variant: DocumentVariant = { form: formFor(req, results), partial };
      const doc = resultsDocument(req, job, results, expires, req.url(req.path) + (req.rawQuery ? `?${req.rawQuery}` : ''), variant);
      return documentReply(req, doc, expires);
    },
  },
  {
    method: 'POST',
    path: '/jobs/{job_id}/results',
    summary: 'Start a batch job (queue it)',
    auth: 'required',
    status: 202,
    handler: async (req) => {
      const job = await jobOf(req);
      if (job.status !== 'queued' && job.status !== 'running' && job.budget !== null) {
        // A graph that fails its dry run is queued all the same: it fails as a job, with its log.
        const est = await estimateJob(job, req.app.store, req.app.compute, req.app.config, req.app.remoteProcesses).catch(() => null);
        if (est && est.costs > job.budget) {
          throw new ApiError('PaymentRequired', {}, `The job is expected to cost ${est.costs} credits (it reads ${est.values} raster values); its budget is ${job.budget}.`);
        }
      }
      await req.app.jobs.start(job);
      return empty(202);
    },
  },
  {
    method: 'DELETE',
    path: '/jobs/{job_id}/results',
    summary: 'Cancel a batch job',
    auth: 'required',
    status: 204,
    handler: async (req) => {
      await req.app.jobs.cancel(await jobOf(req));
      return empty(204);
    },
  },
  {
    method: 'GET',
    path: '/download/{job_id}',
    summary: 'Results document of a batch job, by signed link',
    auth: 'none',
    listed: false,
    handler: async (req) => {
      const variant = linkVariant(req);
      const { job, expires } = await signedJob(req, null, variantKey(variant));
      const results = await req.app.store.jobResults.get(job.id);
      // A link to partial results shows what there is while the job runs (and when it failed).
      if (!results && !(variant.partial && job.status !== 'created' && job.status !== 'queued')) throw new ApiError('NotFound', {}, 'The job has no results (any more).');
      const self = req.url(req.path) + (req.rawQuery ? `?${req.rawQuery}` : '');
      return documentReply(req, resultsDocument(req, job, results, expires, self, variant), expires);
    },
  },
  {
    method: 'GET',
    path: '/download/{job_id}/{asset}',
    summary: 'A result file of a batch job, by signed link (HEAD and Range requests work)',
    auth: 'none',
    listed: false,
    handler: async (req) => {
      let name: string;
      try {
        name = decodeURIComponent(req.params.asset);
      } catch {
        // Bad percent-encoding (`%u002e`) names no asset a link was signed for.
        throw new ApiError('NotFound', {}, 'This link is not valid. Request the job results again for working links.');
      }
      const { job, expires } = await signedJob(req, name);
      const results = await req.app.store.jobResults.get(job.id);
      const asset = results?.assets[name];
      const info = asset ? await req.app.jobs.results.stat(asset.key) : null;
      if (!results || !asset || !info || info === 'folder') throw new ApiError('NotFound', {}, 'This result file no longer exists.');
      const gone = (e: unknown) => {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new ApiError('NotFound', {}, 'This result file no longer exists.');
        throw e;
      };
      // A STAC document naming the job's other files (a model's Item): its hrefs become signed links.
      const body = namesOtherAssets(asset, info.size) ? await withSignedHrefs(req, job.id, results, asset, req.app.jobs.results, expires).catch(gone) : null;
      const size = body ? body.length : info.size;
      const range = parseRange(req.header('range'), size);
      const headers: Record<string, string> = {
        'Accept-Ranges': 'bytes',
        'Last-Modified': info.modified.toUTCString(),
        ETag: body ? `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` : `"${info.size.toString(16)}-${info.modified.getTime().toString(16)}"`,
        'Content-Disposition': `attachment; filename*=UTF-8''${enc(name)}`,
      };
      if (range) headers['Content-Range'] = `bytes ${range.start}-${range.end}/${size}`;
      if (body) return { status: range ? 206 : 200, body: range ? body.subarray(range.start, range.end + 1) : body, contentType: asset.type, headers };
      const stream = await req.app.jobs.results.read(asset.key, range ?? undefined).catch(gone);
      return { status: range ? 206 : 200, stream, size: range ? range.end - range.start + 1 : info.size, contentType: asset.type, headers };
    },
  },
];
