// The map's layers: one OpenLayers tile layer per service or preview (XYZ tiles from our own
// server), the outline of where they have data, and a grid that names each tile (z/x/y).
import TileLayer from 'ol/layer/Tile.js';
import VectorLayer from 'ol/layer/Vector.js';
import XYZ from 'ol/source/XYZ.js';
import TileDebug from 'ol/source/TileDebug.js';
import VectorSource from 'ol/source/Vector.js';
import Feature from 'ol/Feature.js';
import { fromExtent } from 'ol/geom/Polygon.js';
import { transformExtent } from 'ol/proj.js';
import { Stroke, Style } from 'ol/style.js';
import type { Extent } from 'ol/extent.js';
import type { LonLatBox, MapLayer } from '../map-page-config.js';

/** A box in WGS84 as a Web Mercator extent (latitudes clipped to the Mercator world). */
export function mercatorExtent(box: LonLatBox): Extent {
  const clip = (lat: number) => Math.max(-85.0511, Math.min(85.0511, lat));
  return transformExtent([box[0], clip(box[1]), box[2], clip(box[3])], 'EPSG:4326', 'EPSG:3857');
}

/** The tile URL template of a layer for a `datetime=` (empty: none, the newest date). */
export function templateFor(layer: MapLayer, datetime: string): string {
  if (!datetime) return layer.template;
  return `${layer.template}${layer.template.includes('?') ? '&' : '?'}datetime=${encodeURIComponent(datetime)}`;
}

/** A service's or preview's tiles as an OpenLayers layer, and the way to change its date. */
export interface DataLayer {
  config: MapLayer;
  layer: TileLayer<XYZ>;
  source: XYZ;
  datetime: string;
  setDatetime(datetime: string): void;
}

export function dataLayer(config: MapLayer): DataLayer {
  const datetime = config.dates?.selected ?? '';
  const source = new XYZ({
    url: templateFor(config, datetime),
    // A tile is 256 css pixels whatever its size: a 512 tile brings twice the detail, not half the area.
    tileSize: 256,
    tilePixelRatio: config.tileSize / 256,
    minZoom: config.minZoom,
    maxZoom: config.maxZoom,
    // Tiles exist only once around the world: x beyond it names no tile.
    wrapX: false,
  });
  const layer = new TileLayer({
    source,
    // Nothing is asked for outside the data (those tiles would be empty).
    extent: config.extent ? mercatorExtent(config.extent) : undefined,
    properties: { title: config.title },
  });
  const out: DataLayer = {
    config,
    layer,
    source,
    datetime,
    setDatetime(next: string) {
      if (next === out.datetime) return;
      out.datetime = next;
      source.setUrl(templateFor(config, next));
    },
  };
  return out;
}

/** The outlines of the layers' extents (where the data is), drawn as a dashed line. */
export function extentLayer(boxes: LonLatBox[]): VectorLayer<VectorSource> {
  const features = boxes.map((b) => new Feature(fromExtent(mercatorExtent(b))));
  return new VectorLayer({
    source: new VectorSource({ features }),
    style: [new Style({ stroke: new Stroke({ color: 'rgba(255, 255, 255, 0.9)', width: 3 }) }), new Style({ stroke: new Stroke({ color: '#c0392b', width: 1.5, lineDash: [6, 4] }) })],
  });
}

/** The XYZ grid with each tile's z/x/y, for whoever reads tiles by their coordinates. */
export function gridLayer(): TileLayer<TileDebug> {
  return new TileLayer({ source: new TileDebug({ template: '{z}/{x}/{y}', color: 'rgba(40, 40, 40, 0.8)', wrapX: false }), visible: false });
}
