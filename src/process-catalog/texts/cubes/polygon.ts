// Our words for the processes implemented in src/processes/cubes/polygon.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  apply_polygon: {
    summary: 'Run a process on the part of a cube inside each polygon',
    description:
      "For each polygon, cuts the cube to the smallest pixel box holding the pixels whose centre lies inside it, puts `mask_value` in the other pixels of that box, and runs the child process on this cube. The values the child process answers for the pixels inside the polygon go into the result; all other pixels of the result, including those outside every polygon, hold `mask_value`. Polygons in another CRS than the cube's are reprojected vertex by vertex; empty ones and ones without any pixel centre are skipped. A pixel inside two polygons raises GeometriesOverlap.",
    parameters: {
      data: 'A raster data cube.',
      geometries: 'Polygons or multi-polygons: a vector data cube, or GeoJSON (EPSG:4326).',
      process: 'The child process: it gets the cut-out cube as `data` (and `context`) and answers a cube with the same dimensions, in the same order and with as many labels.',
      mask_value: 'The value of pixels outside the polygon, in the cut-outs and in the result; null (the default) means no-data.',
      context: 'Any data handed to the child process as its `context` parameter.',
    },
    returns: 'A data cube with the dimensions and labels of `data` and the values computed per polygon.',
    exceptions: { GeometriesOverlap: 'A pixel centre lies inside more than one polygon; the polygons must not overlap.' },
  },
};
