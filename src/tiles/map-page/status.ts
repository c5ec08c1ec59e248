// What the page tells its reader and its tests: the status line (zoom, centre, tiles loaded), the
// same as data attributes of <body>, and the view in the address (#map=zoom/lat/lon) so a view can
// be shared and is restored on reload.
import type OlMap from 'ol/Map.js';
import type View from 'ol/View.js';
import { toLonLat, fromLonLat } from 'ol/proj.js';
import type { DataLayer } from './layers.js';

/** Counts tile loads of the data layers and reports them with the view. */
export function trackStatus(map: OlMap, layers: DataLayer[], line: HTMLElement): void {
  const body = document.body.dataset;
  let started = 0;
  let done = 0;
  let failed = 0;
  let renders = 0;
  const report = () => {
    const view = map.getView();
    const center = view.getCenter() ?? [0, 0];
    const zoom = view.getZoom() ?? 0;
    const [lon, lat] = toLonLat(center);
    body.tiles = String(started);
    body.tilesDone = String(done);
    body.tilesFailed = String(failed);
    body.view = JSON.stringify({ zoom, resolution: view.getResolution(), center });
    line.textContent = `zoom ${zoom.toFixed(zoom % 1 ? 2 : 0)} · ${lat.toFixed(4)}°, ${lon.toFixed(4)}° · tiles ${done}/${started}${failed ? ` (${failed} failed)` : ''}`;
  };
  for (const d of layers) {
    d.source.on('tileloadstart', () => (started++, report()));
    d.source.on('tileloadend', () => (done++, report()));
    d.source.on('tileloaderror', () => (done++, failed++, report()));
  }
  body.state = 'loading';
  body.renders = '0';
  map.on('loadstart', () => (body.state = 'loading'));
  map.on('movestart', () => (body.state = 'loading'));
  // Every tile of the view loaded (or failed) and drawn: tests wait for the count to grow.
  map.on('rendercomplete', () => {
    body.state = 'idle';
    body.renders = String(++renders);
    report();
  });
  map.on('moveend', report);
  report();
}

/** `#map=zoom/lat/lon` as [zoom, [x, y]] in Web Mercator, or null when absent or malformed. */
export function viewFromHash(hash: string): { zoom: number; center: number[] } | null {
  const m = /^#map=(-?[\d.]+)\/(-?[\d.]+)\/(-?[\d.]+)$/.exec(hash);
  if (!m) return null;
  const [zoom, lat, lon] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (![zoom, lat, lon].every(Number.isFinite) || Math.abs(lat) > 90 || Math.abs(lon) > 180) return null;
  return { zoom, center: fromLonLat([lon, lat]) };
}

/** Keeps the view in the address bar (replacing, not adding, history entries) and follows edits of it. */
export function syncHash(map: OlMap): void {
  const view: View = map.getView();
  let written = '';
  map.on('moveend', () => {
    const center = view.getCenter();
    const zoom = view.getZoom();
    if (!center || zoom === undefined) return;
    const [lon, lat] = toLonLat(center);
    written = `#map=${+zoom.toFixed(2)}/${lat.toFixed(6)}/${lon.toFixed(6)}`;
    if (location.hash !== written) history.replaceState(history.state, '', `${location.pathname}${location.search}${written}`);
  });
  addEventListener('hashchange', () => {
    if (location.hash === written) return;
    const v = viewFromHash(location.hash);
    if (v) view.animate({ center: v.center, zoom: v.zoom, duration: 0 });
  });
}
