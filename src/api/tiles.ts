// The public side of secondary web services, at the host root (not versioned, no Authorization:
// map clients cannot send one; the unguessable service id is the key): XYZ tiles, WMTS and the
// map page (OpenLayers, bundled at build time and sent from here with its stylesheet). Unknown
// query parameters are ignored (map clients add cache busters). The previews of collections are
// served the same way (public, like the collections themselves), under /previews/{collection_id},
// with `datetime=` choosing the dates.
import type { AppRequest, AppRoute } from './context.js';
import type { Reply } from './reply.js';
import { ApiError } from '../core/errors.js';
import { RequestAborted } from '../core/errors.js';
import { tileConfigOf } from '../tiles/service-types.js';
import type { TileFormat } from '../tiles/layer.js';
import { isMapAsset, mapAssets, pageTitle, previewLayer, serviceLayer, viewerPage, type MapLayer } from '../tiles/viewer.js';
import { wmtsCapabilities, type WmtsInput } from '../tiles/wmts.js';
import type { TileAnswer } from '../tiles/layer.js';
import type { TileCoord } from '../tiles/tile-grid.js';

const FORMATS: Record<string, TileFormat> = { png: 'png', jpg: 'jpeg', jpeg: 'jpeg' };

/** A whole number of 1 to 10 digits in `s` from `from` to `to`, or -1 (read without a regular expression: this runs for every tile). */
function wholeNumber(s: string, from: number, to: number): number {
  if (to - from < 1 || to - from > 10) return -1;
  let v = 0;
  for (let i = from; i < to; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}

type TileSource = (coord: TileCoord, format: TileFormat | null, ifNoneMatch: string | undefined, abortable: () => AbortSignal) => TileAnswer | Promise<TileAnswer>;

function serveTile(req: AppRequest, source: TileSource, z: string, x: string, yAndExt: string): Reply | Promise<Reply> {
  const invalid = (reason: string) => new ApiError('TileInvalid', { tile: `${z}/${x}/${yAndExt}`, reason });
  // One ending at most: `1.png.png` names no tile.
  const dot = yAndExt.indexOf('.');
  let format: TileFormat | null = null;
  if (dot >= 0) {
    const ext = yAndExt.slice(dot + 1).toLowerCase();
    if (!Object.hasOwn(FORMATS, ext)) throw invalid('tiles are .png or .jpg');
    format = FORMATS[ext];
  }
  const coord = { z: wholeNumber(z, 0, z.length), x: wholeNumber(x, 0, x.length), y: wholeNumber(yAndExt, 0, dot < 0 ? yAndExt.length : dot) };
  if (coord.z < 0) throw invalid('z must be a whole number');
  if (coord.x < 0) throw invalid('x must be a whole number');
  if (coord.y < 0) throw invalid('y must be a whole number');
  // A render is cancelled when every client waiting for it has gone (made only for a render: hits need none).
  const abortable = () => {
    const ac = new AbortController();
    req.onAbort(() => ac.abort(new RequestAborted()));
    return ac.signal;
  };
  return source(coord, format, req.headers['if-none-match'], abortable);
}

const serviceTiles =
  (req: AppRequest, id: string): TileSource =>
  (coord, format, inm, abortable) =>
    req.app.tiles.tile(id, coord, format, inm, abortable);

/**
 * A collection id from the path (URL-decoded: ids may hold slashes). Unknown ids answer 404 from the
 * tile server (which keeps a preview's state for seconds, so cached tiles need no lookup).
 */
function previewCollection(req: AppRequest): string {
  let id: string;
  try {
    id = decodeURIComponent(req.params.collection_id);
  } catch {
    throw new ApiError('CollectionNotFound', { identifier: req.params.collection_id });
  }
  return id;
}

/** `datetime=` of a preview: null (the newest date) when absent or empty. */
const datetimeOf = (req: AppRequest) => (req.rawQuery === '' ? null : req.query.get('datetime') || null);

const previewTiles =
  (req: AppRequest, id: string): TileSource =>
  (coord, format, inm, abortable) =>
    req.app.tiles.previewTile(id, datetimeOf(req), coord, format, inm, abortable);

/** Where a collection's preview is reached: XYZ tiles, WMTS and the map page (links of the collection's STAC document). */
export function previewLinks(req: AppRequest, id: string): { rel: string; href: string; type: string; title: string; [k: string]: unknown }[] {
  const base = `${req.app.publicUrl()}/previews/${encodeURIComponent(id)}`;
  return [
    { rel: 'xyz', href: `${base}/{z}/{x}/{y}.png`, type: 'image/png', title: 'Preview tiles (the newest date; add ?datetime= for others)' },
    { rel: 'wmts', href: `${base}/wmts`, type: 'image/png', title: 'Preview as WMTS (GetCapabilities)', 'wmts:layer': id },
    { rel: 'alternate', href: `${req.app.publicUrl()}/viewer?collection=${encodeURIComponent(id)}`, type: 'text/html', title: 'The collection on a map' },
  ];
}

/** WMTS of a layer: GetCapabilities (the default) and KVP GetTile. */
function wmts(req: AppRequest, layer: string, tiles: TileSource, notFound: (layer: string) => ApiError, capabilities: () => WmtsInput | Promise<WmtsInput>): Reply | Promise<Reply> {
  const q = new Map([...req.query].map(([k, v]) => [k.toLowerCase(), v]));
  const request = (q.get('request') ?? 'GetCapabilities').toLowerCase();
  if (request === 'gettile') {
    const asked = q.get('layer');
    if (asked && asked !== layer) throw notFound(asked);
    const format = q.get('format') === 'image/jpeg' ? 'jpg' : 'png';
    const row = q.get('tilerow') ?? '';
    return serveTile(req, tiles, q.get('tilematrix') ?? '', q.get('tilecol') ?? '', `${row}.${format}`);
  }
  if (request !== 'getcapabilities') throw new ApiError('QueryParameterInvalid', { parameter: 'request', reason: 'GetCapabilities or GetTile is expected' });
  const reply = (w: WmtsInput): Reply => ({ status: 200, body: wmtsCapabilities(w), contentType: 'application/xml; charset=utf-8' });
  const w = capabilities();
  return w instanceof Promise ? w.then(reply) : reply(w);
}

/** An enabled service, or 404 (disabled services answer nothing, as if they did not exist). */
async function enabledService(req: AppRequest, id: string | null) {
  const s = id ? await req.app.store.services.get(id) : null;
  if (!s || !s.enabled) throw new ApiError('ServiceNotFound', { identifier: id ?? '' });
  return s;
}

export const tileRoutes: AppRoute[] = [
  {
    method: 'GET',
    path: '/xyz/{service_id}/{z}/{x}/{y}',
    summary: 'A map tile of an XYZ service ({y} may end in .png or .jpg)',
    auth: 'none',
    handler: (req) => serveTile(req, serviceTiles(req, req.params.service_id), req.params.z, req.params.x, req.params.y),
  },
  {
    method: 'GET',
    path: '/wmts/{service_id}',
    summary: 'WMTS of a service: GetCapabilities (the default) and KVP GetTile',
    auth: 'none',
    handler: (req) => {
      const id = req.params.service_id;
      return wmts(
        req,
        id,
        serviceTiles(req, id),
        (layer) => new ApiError('ServiceNotFound', { identifier: layer }),
        async () => {
          const s = await enabledService(req, id);
          const cfg = tileConfigOf(s.configuration);
          const root = req.app.publicUrl();
          const ext = cfg.format === 'jpeg' ? 'jpg' : 'png';
          return {
            id: s.id,
            title: s.title ?? `Service ${s.id}`,
            abstract: s.description ?? '',
            endpoint: `${root}/wmts/${s.id}`,
            tileTemplate: `${root}/xyz/${s.id}/{TileMatrix}/{TileCol}/{TileRow}.${ext}`,
            format: cfg.format === 'jpeg' ? 'image/jpeg' : 'image/png',
            extent: await req.app.tiles.extentOf(s.id),
            minZoom: cfg.min_zoom,
            maxZoom: cfg.max_zoom,
            tileSize: cfg.tile_size,
          };
        },
      );
    },
  },
  {
    method: 'GET',
    path: '/previews/{collection_id}/{z}/{x}/{y}',
    summary: 'A map tile of the preview of a collection ({y} may end in .png or .jpg; datetime= a date, date-time or interval, the newest date by default)',
    auth: 'none',
    handler: (req) => serveTile(req, previewTiles(req, previewCollection(req)), req.params.z, req.params.x, req.params.y),
  },
  {
    method: 'GET',
    path: '/previews/{collection_id}/wmts',
    summary: 'WMTS of the preview of a collection: GetCapabilities (the default) and KVP GetTile',
    auth: 'none',
    handler: (req) => {
      const id = previewCollection(req);
      return wmts(
        req,
        id,
        previewTiles(req, id),
        (layer) => new ApiError('CollectionNotFound', { identifier: layer }),
        async () => {
          const p = await req.app.tiles.preview(id, datetimeOf(req));
          const base = `${req.app.publicUrl()}/previews/${encodeURIComponent(id)}`;
          const dt = datetimeOf(req);
          const query = dt ? `?datetime=${encodeURIComponent(dt)}` : '';
          return {
            id,
            title: `${p.title} (preview)`,
            abstract: p.legend,
            endpoint: `${base}/wmts${query}`,
            tileTemplate: `${base}/{TileMatrix}/{TileCol}/{TileRow}.png${query}`,
            format: 'image/png',
            extent: p.extent,
            minZoom: p.minZoom,
            maxZoom: p.maxZoom,
            tileSize: 256,
          };
        },
      );
    },
  },
  {
    method: 'GET',
    path: '/viewer',
    summary: 'A map page of services (?service=ID, repeatable) and of the preview of a collection (?collection=ID, optionally &datetime=)',
    auth: 'none',
    handler: mapPage,
  },
  {
    method: 'GET',
    path: '/viewer/{asset}',
    summary: 'The script and the stylesheet of the map page (map-page.js, map-page.css)',
    auth: 'none',
    handler: mapAsset,
  },
];

/** Layers one map page shows at most. */
const MAX_PAGE_LAYERS = 8;

/**
 * The map page: each `service=` (in the order given, the first on top), then the preview of
 * `collection=` with its date control. Unknown or disabled services and unknown collections are 404.
 */
async function mapPage(req: AppRequest): Promise<Reply> {
  const services = [...new Set(req.query.getAll('service'))];
  const collection = req.query.get('collection');
  if (services.length > MAX_PAGE_LAYERS) throw new ApiError('QueryParameterInvalid', { parameter: 'service', reason: `a page shows at most ${MAX_PAGE_LAYERS} services` });
  if (!services.length && collection === null) throw new ApiError('ServiceNotFound', { identifier: '' });
  const root = req.app.publicUrl();
  const layers: MapLayer[] = [];
  for (const id of services) {
    const s = await enabledService(req, id);
    layers.push(serviceLayer(s, await req.app.tiles.extentOf(s.id), root));
  }
  if (collection !== null) {
    const datetime = datetimeOf(req);
    layers.push(previewLayer(collection, await req.app.tiles.preview(collection, datetime), datetime, root));
  }
  const page = await viewerPage({ title: pageTitle(layers), layers }, root);
  return { status: 200, body: page.html, contentType: 'text/html; charset=utf-8', headers: { 'Cache-Control': 'no-cache', 'Content-Security-Policy': page.csp } };
}

/**
 * A file of the page's bundle, gzipped for clients that take it; kept for a year when asked for
 * with its current version (`?v=`, which the page's links carry), else checked again each time.
 */
async function mapAsset(req: AppRequest): Promise<Reply> {
  const name = req.params.asset;
  if (!isMapAsset(name)) throw new ApiError('NotFound');
  const a = (await mapAssets())[name];
  const etag = `"${a.version}"`;
  const headers: Record<string, string> = {
    'Cache-Control': req.query.get('v') === a.version ? 'public, max-age=31536000, immutable' : 'no-cache',
    ETag: etag,
    Vary: 'Accept-Encoding',
  };
  if (req.headers['if-none-match'] === etag) return { status: 304, headers };
  if (/\bgzip\b/.test(req.headers['accept-encoding'] ?? '')) return { status: 200, body: a.gzipped, contentType: a.contentType, headers: { ...headers, 'Content-Encoding': 'gzip' } };
  return { status: 200, body: a.body, contentType: a.contentType, headers };
}
