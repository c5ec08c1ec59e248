// What the server tells the map page (tiles/viewer.ts writes it into the page as JSON; the browser
// code in tiles/map-page/ reads it): both sides compile against these types and the one id.

/** WGS84 [west, south, east, north]. */
export type LonLatBox = [number, number, number, number];

/** The colours of a layer, for its legend. */
export interface MapLegend {
  /** The legend in words (the colour map and its range, or the bands drawn as red, green and blue). */
  text: string;
  /**
   * A one-band colour map drawn as a ramp: the 256 colours of output/colormap.ts as 1536 hex digits
   * (RRGGBB each), low to high, and what its two ends stand for. Absent for true-colour layers.
   */
  ramp?: { name: string; colors: string; low: string; high: string };
  /** A categorical map's classes: each value with its colour (RRGGBB), in the legend as swatches. */
  classes?: { value: string; color: string }[];
}

/** A preview's date control: the item dates to choose from, or any day from `min` to `max`. */
export interface MapDates {
  /** The days of the collection's items, oldest first (empty when not known: a STAC API collection). */
  values: string[];
  min: string | null;
  max: string | null;
  /** The `datetime=` shown first (null: the newest date). */
  selected: string | null;
}

/** One tile layer of the page: a service or a collection's preview. */
export interface MapLayer {
  /** `service` or `collection` and the id: where the page's URL names it. */
  kind: 'service' | 'collection';
  id: string;
  title: string;
  /** XYZ template with {z}, {x} and {y}; tiles from zoom minZoom to maxZoom. */
  template: string;
  minZoom: number;
  maxZoom: number;
  /** Pixels of a tile (512: the ground of a 256 tile at twice the detail). */
  tileSize: 256 | 512;
  /** Where the layer has data (null: unknown). */
  extent: LonLatBox | null;
  legend: MapLegend;
  /** A collection's preview: its date control; `datetime=` goes with every tile. */
  dates?: MapDates;
}

export interface MapPageConfig {
  title: string;
  layers: MapLayer[];
}

/** The id of the JSON data block holding the configuration in the page. */
export const CONFIG_ELEMENT_ID = 'xeo-map-config';
