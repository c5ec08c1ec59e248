// The map page of services and of collections' previews: OpenLayers, bundled at build time with our
// own code (tiles/map-page/, `npm run build:map`) into build/map-page.js and .css, which the server
// sends from its own origin. The page itself is a small HTML document holding its settings as a
// JSON block; it runs nothing but that one script, under a policy that allows nothing else.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { ServiceRecord } from '../store/types.js';
import { colorTable, isCategorical } from '../output/colormap.js';
import { tileConfigOf } from './service-types.js';
import type { PreviewInfo } from './preview-layers.js';
import { CONFIG_ELEMENT_ID, type LonLatBox, type MapLayer, type MapLegend, type MapPageConfig } from './map-page-config.js';

export type { MapPageConfig, MapLayer } from './map-page-config.js';

/** The bundle's files, by the name the page asks for. */
const ASSETS = { 'map-page.js': 'text/javascript; charset=utf-8', 'map-page.css': 'text/css; charset=utf-8' } as const;
export type MapAssetName = keyof typeof ASSETS;
export const isMapAsset = (name: string): name is MapAssetName => Object.hasOwn(ASSETS, name);

/** A file of the bundle, held in memory: as built and gzipped, with its hashes. */
export interface MapAsset {
  body: Buffer;
  gzipped: Buffer;
  contentType: string;
  /** sha256 (base64url, 16 characters): the `v=` of its URL and its ETag. */
  version: string;
  /** Subresource integrity of the page's tag (sha384). */
  integrity: string;
}

/** build/: from dist/src/tiles/viewer.js it is ../../../build; from src/tiles (sources) ../../build. */
function buildDir(): string {
  const candidates = ['../../../build/', '../../build/'].map((p) => fileURLToPath(new URL(p, import.meta.url)));
  const found = candidates.find((p) => existsSync(`${p}map-page.js`));
  if (!found) throw new Error(`the map page's bundle build/map-page.js was not found (looked in ${candidates.join(', ')}); run npm run build:map`);
  return found;
}

let assets: Promise<Record<MapAssetName, MapAsset>> | null = null;

/** The bundle, read once (asynchronously: the event loop never waits on the disk). */
export function mapAssets(): Promise<Record<MapAssetName, MapAsset>> {
  if (!assets) {
    assets = (async () => {
      const dir = buildDir();
      const out = {} as Record<MapAssetName, MapAsset>;
      for (const [name, contentType] of Object.entries(ASSETS) as [MapAssetName, string][]) {
        const body = await readFile(dir + name);
        out[name] = {
          body,
          gzipped: await promisify(gzip)(body, { level: 9 }),
          contentType,
          version: createHash('sha256').update(body).digest('base64url').slice(0, 16),
          integrity: `sha384-${createHash('sha384').update(body).digest('base64')}`,
        };
      }
      return out;
    })();
    // A failed read is tried again by the next page (after a build, say).
    assets.catch(() => (assets = null));
  }
  return assets;
}

/** A page and the Content-Security-Policy it is served with. */
export interface Page {
  html: string;
  csp: string;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
// JSON inside <script>: no "</script>" or HTML comment can close it early.
const scriptJson = (v: unknown) =>
  JSON.stringify(v)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
/** A URL as a CSP source, or 'self' when it holds what a policy cannot (the page then still works on our origin). */
const cspSource = (url: string) => (/^https?:\/\/[^\s;,'"]+$/.test(url) ? url : "'self'");

/**
 * The page: the settings as a JSON block (data, never run), our one script and one stylesheet by
 * URL with their integrity, and a policy that allows exactly those two files, images from the
 * tiles' origin, and nothing else: no other script, no inline code, no framing, no plugin.
 */
export async function viewerPage(config: MapPageConfig, publicUrl: string): Promise<Page> {
  const a = await mapAssets();
  const js = `${publicUrl}/viewer/map-page.js`;
  const css = `${publicUrl}/viewer/map-page.css`;
  const tileOrigins = [...new Set(config.layers.map((l) => new URL(l.template.replace(/[{}]/g, '')).origin))];
  const csp = [
    "default-src 'none'",
    `script-src ${cspSource(js)}`,
    `style-src ${cspSource(css)}`,
    `img-src 'self' ${tileOrigins.map(cspSource).join(' ')} data:`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(config.title)} · Xeo map</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${escapeHtml(`${css}?v=${a['map-page.css'].version}`)}" integrity="${a['map-page.css'].integrity}">
<script src="${escapeHtml(`${js}?v=${a['map-page.js'].version}`)}" integrity="${a['map-page.js'].integrity}" defer></script>
</head>
<body>
<div id="map" tabindex="0" role="application" aria-label="Map"></div>
<aside id="panel" class="panel"></aside>
<div id="status" class="panel" aria-live="polite"></div>
<script type="application/json" id="${CONFIG_ELEMENT_ID}">${scriptJson(config)}</script>
</body>
</html>
`;
  return { html, csp };
}

/** The 256 colours of a colour map as RRGGBB hex digits, low to high. */
function rampColors(map: string): string {
  const t = colorTable(map);
  let s = '';
  for (let i = 0; i < 256; i++) s += [t[4 * i], t[4 * i + 1], t[4 * i + 2]].map((v) => v.toString(16).padStart(2, '0')).join('');
  return s;
}

const short = (v: number) => String(+v.toPrecision(4));

/** The legend of a service: its colour map over the configured or estimated range (three-band results are RGB). */
export function serviceLegend(s: ServiceRecord): MapLegend {
  const cfg = tileConfigOf(s.configuration);
  if (isCategorical(cfg.colormap)) {
    // Classes from min to max when both are given (at most 64), else the first twelve colours.
    const lo = cfg.min !== null && Number.isInteger(cfg.min) ? Math.max(0, cfg.min) : 0;
    const hi = cfg.max !== null && Number.isInteger(cfg.max) && cfg.max >= lo ? Math.min(254, cfg.max, lo + 63) : lo + 11;
    const t = colorTable(cfg.colormap);
    const hex = (i: number) => [t[4 * i], t[4 * i + 1], t[4 * i + 2]].map((v) => v.toString(16).padStart(2, '0')).join('');
    return {
      text: `Classes: each class value in its own colour (${cfg.colormap}), ${lo} to ${hi} listed.`,
      classes: Array.from({ length: hi - lo + 1 }, (_, k) => ({ value: String(lo + k), color: hex(lo + k) })),
    };
  }
  const range = s.attributes.value_range as { min: number; max: number } | undefined;
  const lo = cfg.min ?? range?.min;
  const hi = cfg.max ?? range?.max;
  const known = lo !== undefined && hi !== undefined;
  return {
    text: known
      ? `One band: ${cfg.colormap} colours from ${short(lo)} to ${short(hi)}; three bands: red, green, blue.`
      : `One band: ${cfg.colormap} colours over the range of the data (2nd to 98th percentile); three bands: red, green, blue.`,
    ramp: { name: cfg.colormap, colors: rampColors(cfg.colormap), low: known ? short(lo) : '2nd percentile', high: known ? short(hi) : '98th percentile' },
  };
}

/** A service as a layer of the page; `version` (the record's update time) makes browsers fetch fresh tiles after a change. */
export function serviceLayer(s: ServiceRecord, extent: LonLatBox | null, publicUrl: string): MapLayer {
  const cfg = tileConfigOf(s.configuration);
  return {
    kind: 'service',
    id: s.id,
    title: s.title ?? `Service ${s.id}`,
    template: `${publicUrl}/xyz/${s.id}/{z}/{x}/{y}.${cfg.format === 'jpeg' ? 'jpg' : 'png'}?v=${encodeURIComponent(s.updated)}`,
    minZoom: cfg.min_zoom,
    maxZoom: cfg.max_zoom,
    tileSize: cfg.tile_size,
    extent,
    legend: serviceLegend(s),
  };
}

/** A collection's preview as a layer of the page, with its date control. */
export function previewLayer(id: string, p: PreviewInfo, datetime: string | null, publicUrl: string): MapLayer {
  return {
    kind: 'collection',
    id,
    title: p.title,
    template: `${publicUrl}/previews/${encodeURIComponent(id)}/{z}/{x}/{y}.png`,
    minZoom: p.minZoom,
    maxZoom: p.maxZoom,
    tileSize: 256,
    extent: p.extent,
    legend: {
      text: p.legend,
      ramp: p.colormap === 'rgb' ? undefined : { name: p.colormap, colors: rampColors(p.colormap), low: '2nd percentile', high: '98th percentile' },
    },
    dates: { values: p.itemDates, min: p.temporal[0]?.slice(0, 10) ?? null, max: p.temporal[1]?.slice(0, 10) ?? null, selected: datetime },
  };
}

/** The page's title: its one layer's, or its layers' joined. */
export const pageTitle = (layers: MapLayer[]) => layers.map((l) => l.title).join(' · ');
