// Our words for the processes implemented in src/processes/cubes/filters.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  filter_bbox: {
    summary: 'Crop to a bounding box',
    description:
      'On a raster cube keeps the pixels whose centre lies inside the bounding box, which is reprojected to the CRS of the cube when it is given in another one. On a vector cube keeps the geometries that lie entirely within the box (empty geometries go).',
    parameters: { data: 'A raster or vector data cube.', extent: 'The bounding box, with `crs` (EPSG:4326 by default).' },
    returns: 'The cube cut to the bounding box.',
  },
  filter_temporal: {
    summary: 'Keep a time interval',
    description: 'Keeps the labels of the temporal dimension (or of all temporal dimensions) that lie in the interval, start included and end excluded. Either end may be null for an open interval.',
    parameters: {
      data: 'A data cube with a temporal dimension.',
      extent: 'The interval: start (included) and end (excluded), as dates or date-times; one of them may be null.',
      dimension: 'The temporal dimension to filter; null filters every temporal dimension.',
    },
    returns: 'The cube with the dates inside the interval.',
    exceptions: {
      DimensionNotAvailable: 'The data cube has no dimension of that name.',
      TemporalExtentEmpty: 'The end of the interval must be later than its start.',
    },
  },
  filter_bands: {
    summary: 'Keep some bands',
    description: 'Keeps the bands named (by name or common name) or lying in one of the wavelength ranges, in the order the criteria give. A band matching any criterion is kept.',
    parameters: {
      data: 'A data cube with a dimension of type bands.',
      bands: 'Band names or common names, in the order wanted.',
      wavelengths: 'Ranges [min, max] of wavelengths in micrometres; matching bands keep their original order.',
    },
    returns: 'The cube with the chosen bands.',
    exceptions: {
      BandFilterParameterMissing: 'Neither band names nor wavelength ranges are given.',
      DimensionMissing: 'The data cube has no dimension of type bands.',
    },
  },
  filter_spatial: {
    summary: 'Crop and mask to geometries',
    description:
      "Cuts the cube to the pixels of the geometries and sets the others inside that box to no-data: pixels whose centre lies inside or on the boundary of a polygon, pixels a line passes through, and the pixel holding each point are kept. Geometries in another CRS are reprojected to the cube's vertex by vertex.",
    parameters: { data: 'A raster data cube.', geometries: 'A vector data cube, or GeoJSON (the deprecated form) in EPSG:4326.' },
    returns: 'The cube cut to the geometries.',
  },
};
