// Our words for the processes implemented in src/processes/cubes/zonal.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  aggregate_spatial: {
    summary: 'Reduce the pixels of each geometry',
    description:
      "Runs the reducer once per geometry on the values of the pixels that belong to it, separately for every position of the other dimensions (dates, bands). A pixel belongs to a polygon when its centre lies inside it or on its boundary (holes excluded), to a line when the line passes through the pixel, to a point when the point lies in it; pixels may belong to several geometries. Geometries are reprojected to the cube's CRS vertex by vertex. The result is a vector cube: a `geometry` dimension (one label per geometry, in the given order, with the features' properties) followed by the non-spatial dimensions of the input. A geometry without pixels (outside the data, or a polygon smaller than a pixel that holds no pixel centre) gives no-data, with a total_count of 0. mean, sum, count, min, max, sd, variance and median run on the kernels; any other reducer runs as a child process.",
    parameters: {
      data: 'A raster data cube.',
      geometries:
        'The geometries: a vector data cube (load_geojson, load_url, load_uploaded_files), or GeoJSON (the deprecated form: a geometry, a Feature or a FeatureCollection, one result per feature, EPSG:4326).',
      reducer: 'The reducer: it gets the array `data` of the pixel values of one geometry (in no particular order) and `context`, and answers one value.',
      target_dimension:
        'If given, the name of a new last dimension of type `other` with the labels `value` (the reducer result), `total_count` (pixels of the geometry) and `valid_count` (those of them that are not no-data).',
      context: 'Any data handed to the reducer as its `context` parameter.',
    },
    returns: 'A vector cube with one value per geometry and per position of the other dimensions.',
    exceptions: { TargetDimensionExists: 'The result already has a dimension with the name given in `target_dimension`.' },
  },
};
