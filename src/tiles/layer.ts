// What the tile sources share: a layer (a service, or a collection's preview) as the renderer sees
// it, a tile's answer, and the geometry of tiles against a layer's extent.
import type { Graph, UserProcess } from '../core/graph.js';
import type { Box } from '../core/grid.js';
import { transformBox } from '../geometry/crs.js';
import { tileBounds, MERCATOR_HALF, type TileCoord } from './tile-grid.js';
import type { TileConfig } from './service-types.js';
import type { LonLatBox } from './extent.js';

/**
 * How long a service's record (or a preview's collection) is used before it is read again in the
 * background (changes by other servers without a change notice, stored processes). A change made
 * through any node drops the state at once (invalidate).
 */
export const STATE_TTL_MS = 15_000;

export type TileFormat = 'png' | 'jpeg';

/** What the tiles of a layer (a service, or a collection's preview) are drawn from. */
export interface LayerState {
  /** Cache key prefix: the layer and a hash of everything that shapes its tiles. */
  prefix: string;
  hash: string;
  config: TileConfig;
  /** The graph whose result is coloured (a preview's without its stretch). */
  graph: Graph;
  userProcesses: Record<string, UserProcess>;
  /** Whose graph it is (a service's owner: their user-defined functions run in their own interpreters); none for previews. */
  user?: string;
  extent: LonLatBox | null;
  /** The extent in Web Mercator, for the outside-the-data test. */
  mercator: Box | null;
  loadedAt: number;
  /** A service's processing parameters: the most values a tile's load reads, and its Cache-Control (else the server's). */
  maxValues?: number;
  cacheControl?: string;
}

/** A tile as HTTP wants it: 200 with the image, or 304 when the client's ETag still matches. */
export interface TileAnswer {
  status: 200 | 304;
  headers: Record<string, string>;
  body?: Buffer;
  contentType?: string;
}

/** The graph and colours a tile is drawn with (null: the tile is empty). */
export type Drawing = { graph: Graph; options: Record<string, unknown> } | null;

/** The process parameters of the XYZ service type for one tile (or, for the value range, for a whole extent drawn as one tile). */
export function tileParameters(coord: TileCoord, size: number, extent: Record<string, number> = tileBounds(coord)): Record<string, unknown> {
  return { spatial_extent: extent, tile_zoom: coord.z, tile_x: coord.x, tile_y: coord.y, tile_size: size };
}

export function tileBox(coord: TileCoord): Box {
  const b = tileBounds(coord);
  return [b.west, b.south, b.east, b.north];
}

export function mercatorBox(e: LonLatBox): Box {
  // Web Mercator ends at about ±85.05°.
  const lat = (v: number) => Math.max(-85.05, Math.min(85.05, v));
  const b = transformBox([e[0], lat(e[1]), e[2], lat(e[3])], 4326, 3857);
  return [Math.max(-MERCATOR_HALF, b[0]), Math.max(-MERCATOR_HALF, b[1]), Math.min(MERCATOR_HALF, b[2]), Math.min(MERCATOR_HALF, b[3])];
}

export const intersects = (a: Box, b: Box) => a[0] < b[2] && a[2] > b[0] && a[1] < b[3] && a[3] > b[1];
