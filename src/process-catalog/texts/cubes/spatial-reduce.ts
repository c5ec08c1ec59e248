// Our words for the processes implemented in src/processes/cubes/spatial-reduce.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  reduce_spatial: {
    summary: 'Reduce the x and y dimensions',
    description:
      'Runs the reducer on all pixel values of each x/y plane (for every date, band and other label) and drops x and y. The values come in no particular order. mean, sum, count, min, max, sd, variance and median run on the kernels; any other reducer as a child process.',
    parameters: {
      data: 'A raster data cube.',
      reducer: 'The reducer: it gets the array `data` of the pixel values of one plane (and `context`) and answers one value.',
      context: 'Any data handed to the reducer as its `context` parameter.',
    },
    returns: 'The data cube without x and y.',
  },
  aggregate_spatial_window: {
    summary: 'Reduce windows of pixels',
    description:
      "Cuts the x/y planes into non-overlapping windows of `size` pixels (x, then y) and runs the reducer on each window's values, for every date, band and other label. Where the grid is not a multiple of the window size, `boundary` pads the windows at the edge with no-data (the reducer sees them) or trims the pixels that do not fill a window, at the edges away from the corner `align` names. The result is a raster cube on the coarser grid; the x and y labels are the window centres.",
    parameters: {
      data: 'A raster data cube.',
      reducer: 'The reducer: it gets the array `data` of the values of one window (and `context`) and answers one value.',
      size: 'The window size in pixels: [x, y].',
      boundary: 'pad (the default): windows at the edge are padded with no-data; trim: pixels that do not fill a window are left out.',
      align: 'The corner the windows start at: upper-left (the default), lower-left, upper-right or lower-right.',
      context: 'Any data handed to the reducer as its `context` parameter.',
    },
    returns: 'A raster data cube on the grid of the windows.',
  },
};
