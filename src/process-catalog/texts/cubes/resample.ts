// Our words for the processes implemented in src/processes/cubes/resample.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  resample_spatial: {
    summary: 'Change pixel size and/or CRS',
    description:
      'Puts the x/y dimensions on a new grid: the same extent in the target CRS (carried over when it changes), covered by pixels of the given size, starting at the chosen corner. Methods: `near` (the pixel containing each new pixel centre), `bilinear` (weights of the four nearest pixel centres, skipping no-data), and `average` (mean of the valid pixels of each block, for a pixel size grown by a whole factor in the same CRS). On a collection that is not loaded yet, only the load changes: it reads the overview level that fits the new pixel size (`average` then reads the averaged overviews), on the grid of the load.',
    parameters: {
      data: 'A raster data cube.',
      resolution: 'The new pixel size in units of the target CRS, one number for x and y or [x, y]; 0 keeps the pixel size.',
      projection: 'The target CRS as an EPSG code; null keeps the CRS. WKT is not supported.',
      method: 'How new pixel values are computed: near, bilinear or average (others are refused).',
      align: 'The corner of the extent the new grid starts at; the pixels that do not fit overhang the opposite sides.',
    },
    returns: 'The cube on the new grid; other dimensions unchanged.',
  },
  resample_cube_spatial: {
    summary: 'Resample onto the grid of another cube',
    description:
      'Puts the x/y dimensions on exactly the grid (CRS, pixel size, extent and alignment) of the target cube; pixels outside the data become no-data. Methods as in resample_spatial: near, bilinear, or average for a pixel size grown by a whole factor in the same CRS. On a collection that is not loaded yet the load reads the target area at the target CRS and pixel size (from the fitting overview level), and the result is then cut or padded to the target grid.',
    parameters: {
      data: 'A raster data cube.',
      target: 'A raster data cube whose grid the data is put on.',
      method: 'How new pixel values are computed: near, bilinear or average (others are refused).',
    },
    returns: 'The cube on the grid of the target; other dimensions unchanged.',
  },
};
