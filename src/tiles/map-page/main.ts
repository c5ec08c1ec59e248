// The map page (served at /viewer by api/tiles.ts, written by tiles/viewer.ts): OpenLayers showing
// the XYZ tiles of one or more services, or of a collection's preview, over where they have data,
// with a layer switch, opacity, a preview's date control, the legend of the colours and a scale
// line. Its settings come from a JSON block of the page; it loads nothing but our own tiles.
// Bundled by `npm run build:map` (esbuild) into build/map-page.js and build/map-page.css.
import 'ol/ol.css';
import './map-page.css';
import OlMap from 'ol/Map.js';
import View from 'ol/View.js';
import { defaults as defaultControls, ScaleLine } from 'ol/control.js';
import { defaults as defaultInteractions } from 'ol/interaction/defaults.js';
import { createEmpty, extend, isEmpty, type Extent } from 'ol/extent.js';
import { CONFIG_ELEMENT_ID, type LonLatBox, type MapPageConfig } from '../map-page-config.js';
import { dataLayer, extentLayer, gridLayer, mercatorExtent, type DataLayer } from './layers.js';
import { buildPanel } from './panel.js';
import { syncHash, trackStatus, viewFromHash } from './status.js';

const config = JSON.parse(document.getElementById(CONFIG_ELEMENT_ID)!.textContent) as MapPageConfig;

const layers = config.layers.map(dataLayer);
const boxes = config.layers.map((l) => l.extent).filter((b): b is LonLatBox => b !== null);
const outline = extentLayer(boxes);
const grid = gridLayer();

const view = new View({
  center: [0, 0],
  zoom: 1,
  minZoom: Math.min(...config.layers.map((l) => l.minZoom)),
  maxZoom: Math.max(...config.layers.map((l) => l.maxZoom)),
});

const map = new OlMap({
  target: 'map',
  // The first layer of the URL on top.
  layers: [...layers.map((d) => d.layer).reverse(), outline, grid],
  view,
  controls: defaultControls({ attribution: false, rotate: false }).extend([new ScaleLine({ units: 'metric' })]),
  // + and - zoom and the arrows pan wherever the focus is (but not while typing in a field).
  keyboardEventTarget: document,
  interactions: defaultInteractions(),
});

/** Fits the data, at the deepest whole zoom that shows all of it (tiles drawn at their own size). */
function fitData(): void {
  const all: Extent = createEmpty();
  for (const b of boxes) extend(all, mercatorExtent(b));
  if (isEmpty(all)) {
    view.setCenter([0, 0]);
    view.setZoom(Math.max(view.getMinZoom(), 1));
    return;
  }
  view.fit(all, { padding: [40, 40, 40, 40] });
  view.setZoom(Math.max(view.getMinZoom(), Math.floor(view.getZoom() ?? 0)));
}

const shared = viewFromHash(location.hash);
if (shared) {
  view.setCenter(shared.center);
  view.setZoom(shared.zoom);
} else fitData();

/** A preview's new date: its tiles reload; the page's address keeps it for a reload or a link. */
function dateChanged(d: DataLayer, datetime: string): void {
  d.setDatetime(datetime);
  document.body.dataset.datetime = datetime;
  const url = new URL(location.href);
  if (datetime) url.searchParams.set('datetime', datetime);
  else url.searchParams.delete('datetime');
  history.replaceState(history.state, '', url);
}

buildPanel(
  document.getElementById('panel')!,
  config.title,
  layers,
  [
    { id: 'show-extent', label: 'Where the data is', layer: outline },
    { id: 'show-grid', label: 'Tile grid (z/x/y)', layer: grid },
  ],
  dateChanged,
);
const dated = layers.find((d) => d.config.dates);
if (dated) document.body.dataset.datetime = dated.datetime;
trackStatus(map, layers, document.getElementById('status')!);
syncHash(map);
