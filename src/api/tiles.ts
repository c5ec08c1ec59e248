// The public side of secondary web services, at the host root (not versioned, no Authorization:
// map clients cannot send one; the unguessable service id is the key): XYZ tiles, WMTS and the
// map page. Unknown query parameters are ignored (map clients add cache busters).
import type { AppRequest, AppRoute } from './context.js';
import type { Reply } from './reply.js';
import { ApiError } from '../core/errors.js';
import { RequestAborted } from '../core/errors.js';
import { tileConfigOf } from '../tiles/service-types.js';
import type { TileFormat } from '../tiles/tile-server.js';
import { viewerPage } from '../tiles/viewer.js';
import { wmtsCapabilities } from '../tiles/wmts.js';

const FORMATS: Record<string, TileFormat> = { png: 'png', jpg: 'jpeg', jpeg: 'jpeg' };

function tileNumber(v: string | null | undefined, name: string, tile: string): number {
  if (v && /^\d{1,10}$/.test(v)) return Number(v);
  throw new ApiError('TileInvalid', { tile, reason: `${name} must be a whole number` });
}

function serveTile(req: AppRequest, id: string, z: string, x: string, yAndExt: string): Reply | Promise<Reply> {
  const name = `${z}/${x}/${yAndExt}`;
  // One ending at most: `1.png.png` names no tile (and must not reach the code below as a non-match).
  const m = /^([^.]*)(?:\.(\w+))?$/.exec(yAndExt);
  if (!m) throw new ApiError('TileInvalid', { tile: name, reason: 'tiles are .png or .jpg' });
  const ext = m[2]?.toLowerCase();
  if (ext !== undefined && !Object.hasOwn(FORMATS, ext)) throw new ApiError('TileInvalid', { tile: name, reason: 'tiles are .png or .jpg' });
  const coord = { z: tileNumber(z, 'z', name), x: tileNumber(x, 'x', name), y: tileNumber(m[1], 'y', name) };
  // A render is cancelled when every client waiting for it has gone (made only for a render: hits need none).
  const abortable = () => {
    const ac = new AbortController();
    req.onAbort(() => ac.abort(new RequestAborted()));
    return ac.signal;
  };
  return req.app.tiles.tile(id, coord, ext ? FORMATS[ext] : null, req.headers['if-none-match'], abortable);
}

/** An enabled service, or 404 (disabled services answer nothing, as if they did not exist). */
function enabledService(req: AppRequest, id: string | null) {
  const s = id ? req.app.store.services.get(id) : null;
  if (!s || !s.enabled) throw new ApiError('ServiceNotFound', { identifier: id ?? '' });
  return s;
}

export const tileRoutes: AppRoute[] = [
  {
    method: 'GET',
    path: '/xyz/{service_id}/{z}/{x}/{y}',
    summary: 'A map tile of an XYZ service ({y} may end in .png or .jpg)',
    auth: 'none',
    handler: (req) => serveTile(req, req.params.service_id, req.params.z, req.params.x, req.params.y),
  },
  {
    method: 'GET',
    path: '/wmts/{service_id}',
    summary: 'WMTS of a service: GetCapabilities (the default) and KVP GetTile',
    auth: 'none',
    handler: (req) => {
      const q = new Map([...req.query].map(([k, v]) => [k.toLowerCase(), v]));
      const request = (q.get('request') ?? 'GetCapabilities').toLowerCase();
      const id = req.params.service_id;
      if (request === 'gettile') {
        const layer = q.get('layer');
        if (layer && layer !== id) throw new ApiError('ServiceNotFound', { identifier: layer });
        const format = q.get('format') === 'image/jpeg' ? 'jpg' : 'png';
        const row = q.get('tilerow') ?? '';
        return serveTile(req, id, q.get('tilematrix') ?? '', q.get('tilecol') ?? '', `${row}.${format}`);
      }
      if (request !== 'getcapabilities') throw new ApiError('QueryParameterInvalid', { parameter: 'request', reason: 'GetCapabilities or GetTile is expected' });
      const s = enabledService(req, id);
      const cfg = tileConfigOf(s.configuration);
      const root = req.app.publicUrl();
      const ext = cfg.format === 'jpeg' ? 'jpg' : 'png';
      const xml = wmtsCapabilities({
        id: s.id,
        title: s.title ?? `Service ${s.id}`,
        abstract: s.description ?? '',
        endpoint: `${root}/wmts/${s.id}`,
        tileTemplate: `${root}/xyz/${s.id}/{TileMatrix}/{TileCol}/{TileRow}.${ext}`,
        format: cfg.format === 'jpeg' ? 'image/jpeg' : 'image/png',
        extent: req.app.tiles.extentOf(s.id),
        minZoom: cfg.min_zoom,
        maxZoom: cfg.max_zoom,
        tileSize: cfg.tile_size,
      });
      return { status: 200, body: xml, contentType: 'application/xml; charset=utf-8' };
    },
  },
  {
    method: 'GET',
    path: '/viewer',
    summary: 'A map page showing a service (?service=ID)',
    auth: 'none',
    handler: (req) => {
      const s = enabledService(req, req.query.get('service'));
      const cfg = tileConfigOf(s.configuration);
      const range = s.attributes.value_range as { min: number; max: number } | undefined;
      const lo = cfg.min ?? range?.min;
      const hi = cfg.max ?? range?.max;
      const legend =
        lo !== undefined && hi !== undefined
          ? `One band: ${cfg.colormap} colours from ${+lo.toPrecision(4)} to ${+hi.toPrecision(4)}; three bands: red, green, blue.`
          : `One band: ${cfg.colormap} colours over the range of the data; three bands: red, green, blue.`;
      const page = viewerPage({
        title: s.title ?? `Service ${s.id}`,
        // The service version makes browsers fetch fresh tiles after a change.
        template: `${req.app.publicUrl()}/xyz/${s.id}/{z}/{x}/{y}.${cfg.format === 'jpeg' ? 'jpg' : 'png'}?v=${encodeURIComponent(s.updated)}`,
        extent: req.app.tiles.extentOf(s.id),
        minZoom: cfg.min_zoom,
        maxZoom: cfg.max_zoom,
        tileSize: cfg.tile_size,
        legend,
      });
      return { status: 200, body: page.html, contentType: 'text/html; charset=utf-8', headers: { 'Cache-Control': 'no-cache', 'Content-Security-Policy': page.csp } };
    },
  },
];
