// The results document of a batch job: a STAC Item, or (API 1.3.0, results over several dates) a
// STAC Collection with the same assets and a link to the Item. Both carry the job's timeline
// (created, updated, queued, started, expires, unpublished) and `openeo:status`. Every link in it
// is signed and expires, so the document and the files work without a token; a signed link to the
// document fixes its form and whether it shows partial results.
import type { AppRequest } from './context.js';
import type { Reply } from './reply.js';
import type { JobRecord, JobResults } from '../store/types.js';

const STAC_EXTENSIONS = [
  'https://stac-extensions.github.io/projection/v1.1.0/schema.json',
  'https://stac-extensions.github.io/raster/v1.1.0/schema.json',
  'https://stac-extensions.github.io/eo/v1.1.0/schema.json',
  'https://stac-extensions.github.io/file/v2.1.0/schema.json',
];

const enc = encodeURIComponent;

export type ResultsForm = 'item' | 'collection';

/** What a link to the document fixes besides the job and the expiry. */
export interface DocumentVariant {
  form: ResultsForm;
  partial: boolean;
}

/** The variant as signed (empty for the plain Item, so links of earlier versions stay valid). */
export const variantKey = (v: DocumentVariant) => [v.form === 'collection' ? 'form=collection' : '', v.partial ? 'partial=true' : ''].filter(Boolean).join('&');

/** A signed, expiring link to the results document (asset null, in a variant) or to one asset. */
export function signedUrl(req: AppRequest, jobId: string, asset: string | null, expires: number, variant: DocumentVariant = { form: 'item', partial: false }): string {
  const key = asset === null ? variantKey(variant) : '';
  const sig = req.app.jobs.links.sign(jobId, asset, expires, key);
  return req.url(`/download/${enc(jobId)}${asset === null ? '' : `/${enc(asset)}`}?expires=${expires}&signature=${sig}${key ? `&${key}` : ''}`);
}

/**
 * The form a request gets: a Collection for results over several dates where the version allows
 * it and the client does not ask for GeoJSON (the Item form); an Item otherwise.
 */
export function formFor(req: AppRequest, results: JobResults | null): ResultsForm {
  const geo = /application\/geo\+json/.test(req.header('accept') ?? '');
  return req.version.resultsCollection && !geo && (results?.times.length ?? 0) > 1 ? 'collection' : 'item';
}

/** The job's timeline as API 1.3.0 names it (the members of an unset time are left out). */
function timeline(job: JobRecord, expires: number): Record<string, string> {
  return {
    created: job.created,
    updated: job.updated,
    ...(job.queued ? { queued: job.queued } : {}),
    ...(job.started ? { started: job.started } : {}),
    expires: new Date(expires * 1000).toISOString(),
    ...(job.unpublished ? { unpublished: job.unpublished } : {}),
  };
}

function assetsOf(req: AppRequest, job: JobRecord, results: JobResults | null, expires: number): Record<string, unknown> {
  const assets: Record<string, unknown> = {};
  for (const [name, a] of Object.entries(results?.assets ?? {})) {
    assets[name] = { href: signedUrl(req, job.id, name, expires), type: a.type, title: a.title, roles: a.roles, ...a.fields };
  }
  return assets;
}

/** The results document in the variant asked; `self` is the address it was asked at. */
export function resultsDocument(req: AppRequest, job: JobRecord, results: JobResults | null, expires: number, self: string, variant: DocumentVariant): Record<string, unknown> {
  const monitor = { rel: 'monitor', href: req.url(`/jobs/${job.id}/logs`), type: 'application/json', title: 'Logs of the job' };
  const title = job.title ?? `Results of job ${job.id}`;
  const times = results?.times ?? [];
  if (variant.form === 'collection') {
    return {
      stac_version: req.version.stacVersion,
      stac_extensions: STAC_EXTENSIONS,
      type: 'Collection',
      id: job.id,
      title,
      description: job.description ?? `The results of batch job ${job.id}.`,
      license: 'proprietary',
      extent: {
        spatial: { bbox: [results?.bbox ?? [-180, -90, 180, 90]] },
        temporal: { interval: [[times[0] ?? null, times[times.length - 1] ?? null]] },
      },
      ...timeline(job, expires),
      'openeo:status': job.status,
      assets: assetsOf(req, job, results, expires),
      links: [
        { rel: 'self', href: self, type: 'application/json' },
        { rel: 'canonical', href: signedUrl(req, job.id, null, expires, variant), type: 'application/json', title: 'This document, signed: works without a token until it expires' },
        { rel: 'item', href: signedUrl(req, job.id, null, expires, { ...variant, form: 'item' }), type: 'application/geo+json', title: 'The results as one STAC Item' },
        monitor,
      ],
    };
  }
  const when =
    times.length === 1 ? { datetime: times[0] } : times.length > 1 ? { datetime: null, start_datetime: times[0], end_datetime: times[times.length - 1] } : { datetime: results?.created ?? job.updated };
  return {
    stac_version: req.version.stacVersion,
    stac_extensions: STAC_EXTENSIONS,
    type: 'Feature',
    id: job.id,
    ...(results?.bbox ? { bbox: results.bbox } : {}),
    geometry: results?.geometry ?? null,
    properties: {
      ...when,
      title,
      ...(job.description ? { description: job.description } : {}),
      ...timeline(job, expires),
      'openeo:status': job.status,
    },
    assets: assetsOf(req, job, results, expires),
    links: [
      { rel: 'self', href: self, type: 'application/geo+json' },
      { rel: 'canonical', href: signedUrl(req, job.id, null, expires, variant), type: 'application/geo+json', title: 'This document, signed: works without a token until it expires' },
      monitor,
    ],
  };
}

export function documentReply(req: AppRequest, doc: Record<string, unknown>, expires: number): Reply {
  const geo = doc.type === 'Feature' && /application\/geo\+json/.test(req.header('accept') ?? '');
  return {
    status: 200,
    body: JSON.stringify(doc),
    contentType: geo ? 'application/geo+json' : 'application/json',
    headers: { [`${req.app.brandWord}-Costs`]: '0', Expires: new Date(expires * 1000).toUTCString() },
  };
}
