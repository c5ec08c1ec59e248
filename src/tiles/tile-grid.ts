// The XYZ tile scheme of web maps: Web Mercator (EPSG:3857), tile (0, 0) at the north-west corner,
// 2^z tiles across at zoom z. A tile of any pixel size covers the same ground at the same z.
import type { Grid } from '../core/grid.js';

/** Half the width of the Web Mercator world, in metres. */
export const MERCATOR_HALF = 20037508.342789244;
/** Deepest zoom we accept: beyond it tiles are smaller than a millimetre. */
export const MAX_ZOOM = 30;

export interface TileCoord {
  z: number;
  x: number;
  y: number;
}

/** The grid of a tile: EPSG:3857, `size` × `size` pixels. */
export function tileGrid({ z, x, y }: TileCoord, size: number): Grid {
  const span = (2 * MERCATOR_HALF) / 2 ** z;
  const res = span / size;
  return { epsg: 3857, transform: [-MERCATOR_HALF + x * span, res, 0, MERCATOR_HALF - y * span, 0, -res], width: size, height: size };
}

/** The tile's bounds in EPSG:3857. */
export function tileBounds({ z, x, y }: TileCoord): { west: number; south: number; east: number; north: number; crs: number } {
  const span = (2 * MERCATOR_HALF) / 2 ** z;
  const west = -MERCATOR_HALF + x * span;
  const north = MERCATOR_HALF - y * span;
  return { west, south: north - span, east: west + span, north, crs: 3857 };
}

/** Longitude/latitude (degrees) to the tile that holds it at zoom z. */
export function tileAt(lon: number, lat: number, z: number): TileCoord {
  const n = 2 ** z;
  const x = Math.floor(((lon + 180) / 360) * n);
  const r = (lat * Math.PI) / 180;
  const y = Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n);
  return { z, x: Math.min(n - 1, Math.max(0, x)), y: Math.min(n - 1, Math.max(0, y)) };
}

/** Whether z/x/y names a tile of the scheme. */
export function validTile({ z, x, y }: TileCoord): boolean {
  if (!Number.isInteger(z) || z < 0 || z > MAX_ZOOM) return false;
  const n = 2 ** z;
  return Number.isInteger(x) && Number.isInteger(y) && x >= 0 && y >= 0 && x < n && y < n;
}
