// The map page of a service or of a collection's preview: a small slippy map of our own (no
// third-party script), showing the tiles over their extent. Drag to pan, wheel, double-click or +/-
// to zoom; a preview has a date picker. The page needs nothing but the tile template, so it works
// for anyone who has the service id (or, for a public collection, anyone).
import { createHash } from 'node:crypto';

export interface ViewerInput {
  title: string;
  /** Tile URL template with {z}/{x}/{y}. */
  template: string;
  /** WGS84 [west, south, east, north] to fit, or null for the world. */
  extent: [number, number, number, number] | null;
  minZoom: number;
  maxZoom: number;
  tileSize: number;
  /** A short description of the colours (e.g. "ndvi colours, -0.2 .. 0.9"). */
  legend: string;
  /**
   * A date picker (a collection's preview): the dates of its items to choose from, or, when none are
   * known (a STAC API collection), any day from `min` to `max`; `selected` is the `datetime=` shown
   * (null: the newest). The choice is sent as `datetime=` with every tile.
   */
  dates?: { values: string[]; min: string | null; max: string | null; selected: string | null };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
// JSON inside <script>: no "</script>" or HTML comment can close it early.
const scriptJson = (v: unknown) => JSON.stringify(v).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');

/** A page and the Content-Security-Policy it is served with. */
export interface Page {
  html: string;
  csp: string;
}

const STYLE = `
  html, body { margin: 0; height: 100%; font: 13px/1.4 system-ui, sans-serif; }
  #map { position: absolute; inset: 0; overflow: hidden; cursor: grab; touch-action: none;
         background: repeating-conic-gradient(#e8e8e8 0% 25%, #f6f6f6 0% 50%) 0 0 / 24px 24px; }
  #map.dragging { cursor: grabbing; }
  #tiles { position: absolute; left: 0; top: 0; will-change: transform; }
  #tiles img { position: absolute; user-select: none; -webkit-user-drag: none; }
  .panel { position: absolute; background: rgba(255,255,255,.92); border-radius: 6px; padding: 6px 10px;
           box-shadow: 0 1px 4px rgba(0,0,0,.25); }
  #info { left: 10px; top: 10px; max-width: 60%; }
  #info h1 { font-size: 15px; margin: 0 0 2px; }
  #zoom { right: 10px; top: 10px; padding: 0; display: flex; flex-direction: column; }
  #zoom button { width: 32px; height: 32px; font-size: 18px; border: 0; background: none; cursor: pointer; }
  #zoom button + button { border-top: 1px solid #ccc; }
  #status { left: 10px; bottom: 10px; font-variant-numeric: tabular-nums; }
  #dates { right: 56px; top: 10px; }
  #dates[hidden] { display: none; }
  #dates label { margin-right: 6px; }
`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/**
 * The page runs only its own inline script and style, allowed by their hashes (the script holds the
 * service's settings, so its hash is the page's own); everything else is refused: no other script,
 * no plugin, no framing, tiles only from `tileOrigin`. Titles are set as text, never as markup.
 */
export function viewerPage(input: ViewerInput): Page {
  const script = `
const cfg = ${scriptJson(input)};
const HALF = 20037508.342789244, TILE = 256;
const map = document.getElementById('map'), layer = document.getElementById('tiles');
document.querySelector('#info h1').textContent = cfg.title;
document.getElementById('legend').textContent = cfg.legend;
const status = document.getElementById('status');

// A preview's dates: the picker's choice goes with every tile as datetime= (empty: the newest).
let datetime = cfg.dates ? cfg.dates.selected || '' : '';
const tileUrl = (z, x, y) => {
  const url = cfg.template.replace('{z}', z).replace('{x}', x).replace('{y}', y);
  return datetime ? url + (url.includes('?') ? '&' : '?') + 'datetime=' + encodeURIComponent(datetime) : url;
};
if (cfg.dates) {
  const panel = document.getElementById('dates');
  let picker;
  if (cfg.dates.values.length) {
    picker = document.createElement('select');
    const newest = document.createElement('option');
    newest.value = '';
    newest.textContent = 'newest';
    picker.appendChild(newest);
    for (const d of [...cfg.dates.values].reverse()) {
      const o = document.createElement('option');
      o.value = d;
      o.textContent = d;
      picker.appendChild(o);
    }
    if (datetime && !cfg.dates.values.includes(datetime)) {
      const o = document.createElement('option');
      o.value = datetime;
      o.textContent = datetime;
      picker.appendChild(o);
    }
  } else {
    picker = document.createElement('input');
    picker.type = 'date';
    if (cfg.dates.min) picker.min = cfg.dates.min;
    if (cfg.dates.max) picker.max = cfg.dates.max;
  }
  picker.id = 'date';
  picker.value = datetime;
  const label = document.createElement('label');
  label.htmlFor = 'date';
  label.textContent = 'Date';
  panel.append(label, picker);
  panel.hidden = false;
  picker.addEventListener('change', () => {
    datetime = picker.value;
    document.body.dataset.datetime = datetime;
    for (const img of live.values()) img.remove();
    live.clear();
    draw();
  });
  document.body.dataset.datetime = datetime;
}

// The view: the Web Mercator point at the centre of the window and an integer zoom. Tiles are
// drawn TILE css pixels wide whatever their pixel size, so 512 tiles look sharper, not smaller.
const view = { x: 0, y: 0, z: Math.max(cfg.minZoom, 1) };
const merc = (lon, lat) => {
  lat = Math.max(-85.05, Math.min(85.05, lat));
  return [lon * HALF / 180, Math.log(Math.tan((90 + lat) * Math.PI / 360)) * HALF / Math.PI];
};
const lonLat = (x, y) => [x / HALF * 180, Math.atan(Math.exp(y / HALF * Math.PI)) * 360 / Math.PI - 90];
const res = (z) => 2 * HALF / (TILE * 2 ** z);   // metres per css pixel

function fit() {
  if (!cfg.extent) { view.x = 0; view.y = 0; view.z = Math.max(cfg.minZoom, 1); return; }
  const [x0, y0] = merc(cfg.extent[0], cfg.extent[1]), [x1, y1] = merc(cfg.extent[2], cfg.extent[3]);
  view.x = (x0 + x1) / 2; view.y = (y0 + y1) / 2;
  let z = cfg.maxZoom;
  while (z > cfg.minZoom && ((x1 - x0) / res(z) > map.clientWidth * 0.9 || (y1 - y0) / res(z) > map.clientHeight * 0.9)) z--;
  view.z = z;
}

const live = new Map();   // "z/x/y" -> img
function draw() {
  const w = map.clientWidth, h = map.clientHeight, r = res(view.z), n = 2 ** view.z;
  // Mercator of the window's top-left corner, in css pixels from the world's top-left.
  const left = (view.x + HALF) / r - w / 2, top = (HALF - view.y) / r - h / 2;
  const want = new Set();
  const tx0 = Math.max(0, Math.floor(left / TILE)), tx1 = Math.min(n - 1, Math.floor((left + w) / TILE));
  const ty0 = Math.max(0, Math.floor(top / TILE)), ty1 = Math.min(n - 1, Math.floor((top + h) / TILE));
  for (let ty = ty0; ty <= ty1; ty++) for (let tx = tx0; tx <= tx1; tx++) {
    const key = view.z + '/' + tx + '/' + ty;
    want.add(key);
    let img = live.get(key);
    if (!img) {
      img = new Image(TILE, TILE);
      img.alt = '';
      img.decoding = 'async';
      img.onload = img.onerror = () => { img.dataset.done = img.naturalWidth > 0 ? 'ok' : 'failed'; report(); };
      img.src = tileUrl(view.z, tx, ty);
      layer.appendChild(img);
      live.set(key, img);
    }
    img.style.transform = 'translate(' + (tx * TILE - left) + 'px,' + (ty * TILE - top) + 'px)';
  }
  for (const [key, img] of live) if (!want.has(key)) { img.remove(); live.delete(key); }
  report();
}

function report() {
  const imgs = [...live.values()];
  const done = imgs.filter((i) => i.dataset.done).length;
  const failed = imgs.filter((i) => i.dataset.done === 'failed').length;
  document.body.dataset.tiles = imgs.length;
  document.body.dataset.tilesDone = done;
  document.body.dataset.tilesFailed = failed;
  const [lon, lat] = lonLat(view.x, view.y);
  status.textContent = 'zoom ' + view.z + ' · ' + lat.toFixed(4) + '°, ' + lon.toFixed(4) + '° · tiles ' + done + '/' + imgs.length + (failed ? ' (' + failed + ' failed)' : '');
}

function zoomAt(dz, px, py) {
  const z = Math.max(cfg.minZoom, Math.min(cfg.maxZoom, view.z + dz));
  if (z === view.z) return;
  // Keep the map point under the pointer where it is.
  const w = map.clientWidth, h = map.clientHeight;
  const mx = view.x + (px - w / 2) * res(view.z), my = view.y - (py - h / 2) * res(view.z);
  view.z = z;
  view.x = mx - (px - w / 2) * res(z); view.y = my + (py - h / 2) * res(z);
  for (const img of live.values()) img.remove();
  live.clear();
  draw();
}

let drag = null;
map.addEventListener('pointerdown', (e) => { drag = { x: e.clientX, y: e.clientY }; map.setPointerCapture(e.pointerId); map.classList.add('dragging'); });
map.addEventListener('pointermove', (e) => {
  if (!drag) return;
  view.x -= (e.clientX - drag.x) * res(view.z); view.y += (e.clientY - drag.y) * res(view.z);
  drag = { x: e.clientX, y: e.clientY };
  draw();
});
const endDrag = () => { drag = null; map.classList.remove('dragging'); };
map.addEventListener('pointerup', endDrag);
map.addEventListener('pointercancel', endDrag);
let wheelAt = 0;
map.addEventListener('wheel', (e) => {
  e.preventDefault();
  const now = Date.now();
  if (now - wheelAt < 200) return;   // one step per wheel gesture
  wheelAt = now;
  zoomAt(e.deltaY < 0 ? 1 : -1, e.clientX, e.clientY);
}, { passive: false });
map.addEventListener('dblclick', (e) => zoomAt(1, e.clientX, e.clientY));
document.getElementById('in').onclick = () => zoomAt(1, map.clientWidth / 2, map.clientHeight / 2);
document.getElementById('out').onclick = () => zoomAt(-1, map.clientWidth / 2, map.clientHeight / 2);
addEventListener('keydown', (e) => {
  if (e.key === '+' || e.key === '=') zoomAt(1, map.clientWidth / 2, map.clientHeight / 2);
  if (e.key === '-') zoomAt(-1, map.clientWidth / 2, map.clientHeight / 2);
});
addEventListener('resize', draw);
fit();
draw();
`;
  const tileOrigin = new URL(input.template.replace(/[{}]/g, '')).origin;
  const csp = [
    "default-src 'none'",
    `script-src ${sha256(script)}`,
    `style-src ${sha256(STYLE)}`,
    `img-src 'self' ${tileOrigin} data:`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(input.title)} · Xeo map</title>
<style>${STYLE}</style>
</head>
<body>
<div id="map"><div id="tiles"></div></div>
<div id="info" class="panel"><h1></h1><div id="legend"></div></div>
<div id="zoom" class="panel"><button id="in" title="Zoom in" aria-label="Zoom in">+</button><button id="out" title="Zoom out" aria-label="Zoom out">−</button></div>
<div id="dates" class="panel" hidden></div>
<div id="status" class="panel"></div>
<script>${script}</script>
</body>
</html>
`;
  return { html, csp };
}
