// Our words for the processes implemented in src/processes/cubes/vector-load.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  load_geojson: {
    summary: 'GeoJSON to a vector data cube',
    description:
      'Makes a vector data cube of GeoJSON (RFC 7946: a FeatureCollection, a Feature or a geometry, in EPSG:4326 unless a `crs` member names another EPSG code). Each geometry is one label of the `geometry` dimension (0, 1, ... in the order given); feature ids and properties travel with the geometries to every output. Polygons must be valid (closed rings that do not cross themselves or each other); the first that is not is named in the error. With `properties`, a dimension `properties` holds the values of those properties (numbers, booleans as 1 and 0, anything else and missing values as no-data).',
    parameters: {
      data: 'The GeoJSON: a FeatureCollection, a Feature or a geometry.',
      properties: 'Names of feature properties to make a `properties` dimension of: one label per name, or for a single property holding arrays one label per array position.',
    },
    returns: 'A vector data cube.',
  },
  load_url: {
    summary: 'Load a vector file from a URL',
    description:
      'Reads a GeoJSON, FlatGeobuf, GeoParquet or CSV file from an http(s) URL into a vector data cube, one geometry per feature with its properties. The URL must be reachable on the open internet (addresses of this network are refused unless the operator allows them) and the file no larger than the server allows (XEO_VECTOR_MAX_BYTES). A file read is kept for ten minutes per thread, so repeated use in one job reads it once.',
    parameters: {
      url: 'The http(s) URL of the file.',
      format: 'The file format, one of the input formats of GET /file_formats (GeoJSON, FlatGeobuf, Parquet, CSV); any case.',
      options: 'Options of the format, as GET /file_formats lists them (for CSV the names of the geometry columns, say).',
    },
    returns: 'A vector data cube.',
    exceptions: { FormatUnsuitable: 'The file is not in the format given, or the format is not a vector format.' },
  },
  load_uploaded_files: {
    summary: 'Load your uploaded vector files',
    description:
      'Reads files of your workspace (uploaded with PUT /files) into one data cube. Vector files (GeoJSON, FlatGeobuf, GeoParquet or CSV) give a vector data cube: the features of several files follow one another in the order of `paths`, in the CRS of the first file. GeoTIFFs give a raster data cube (t, bands, y, x) like load_collection: each file is one date (its TIFF DateTime, or the date in its name such as fields_20240601.tif), its samples the bands, on the grid of the first file. `/a.tif`, `a.tif` and `./a.tif` name the same file; a path outside your workspace is not found. Files larger than the server allows (XEO_VECTOR_MAX_BYTES) are refused.',
    parameters: {
      paths: 'The files to read, as paths in your workspace.',
      format: 'The file format, one of the input formats of GET /file_formats (GTiff, GeoJSON, FlatGeobuf, Parquet, CSV); any case.',
      options: 'Options of the format, as GET /file_formats lists them.',
    },
    returns: 'A vector data cube, or a raster data cube for GeoTIFFs.',
    exceptions: {
      FormatUnsuitable: 'A file is not in the format given, or the format is not one this back-end reads.',
      FileNotFound: 'A path names no file of your workspace.',
    },
  },
};
