// Raster grids: a CRS (EPSG code), a north-up affine transform and a size. The transform follows
// GDAL's geotransform order: x = t[0] + col * t[1] + row * t[2]; y = t[3] + col * t[4] + row * t[5].
// Pixel (col, row) covers [col, col+1) x [row, row+1); its centre is at col + 0.5, row + 0.5.

export type GeoTransform = [number, number, number, number, number, number];

export interface Grid {
  epsg: number;
  transform: GeoTransform;
  width: number;
  height: number;
}

/** Bounding box in the grid's CRS: [minX, minY, maxX, maxY]. */
export type Box = [number, number, number, number];

export type SampleType = 'uint8' | 'int8' | 'uint16' | 'int16' | 'uint32' | 'int32' | 'float32' | 'float64';

export type TypedArray = Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array | Float32Array | Float64Array;

export function gridBox(g: Grid): Box {
  const [x0, sx, , y0, , sy] = g.transform;
  const x1 = x0 + g.width * sx;
  const y1 = y0 + g.height * sy;
  return [Math.min(x0, x1), Math.min(y0, y1), Math.max(x0, x1), Math.max(y0, y1)];
}

/** A north-up grid covering `box` with pixels of `res` (x and y) map units. */
export function gridFor(epsg: number, box: Box, resX: number, resY = resX): Grid {
  const width = Math.max(1, Math.round((box[2] - box[0]) / resX));
  const height = Math.max(1, Math.round((box[3] - box[1]) / resY));
  return { epsg, transform: [box[0], resX, 0, box[3], 0, -resY], width, height };
}

export function sampleTypeOf(a: TypedArray): SampleType {
  if (a instanceof Uint8Array) return 'uint8';
  if (a instanceof Int8Array) return 'int8';
  if (a instanceof Uint16Array) return 'uint16';
  if (a instanceof Int16Array) return 'int16';
  if (a instanceof Uint32Array) return 'uint32';
  if (a instanceof Int32Array) return 'int32';
  if (a instanceof Float32Array) return 'float32';
  return 'float64';
}
