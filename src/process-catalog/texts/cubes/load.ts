// Our words for the processes implemented in src/processes/cubes/load.ts.
import type { ProcessTexts } from '../../spec.js';

const EXTENT = {
  spatial: 'The area to load: a bounding box (with `crs`, EPSG:4326 by default) or GeoJSON polygons (pixels whose centre lies outside them become no-data); null loads the whole collection.',
  temporal: 'The time interval to load, start included and end excluded; either end may be null for an open interval; null loads all dates.',
  bands: 'The bands to load, by name or common name, in the order wanted; null loads all bands.',
};

export const texts: Record<string, ProcessTexts> = {
  load_collection: {
    summary: 'Load a collection as a data cube',
    description:
      'Makes a collection of this back-end available as a raster data cube with the dimensions t, bands, y and x, restricted to an area, a time interval and bands. Nothing is read until a process needs the pixels, and filters and resampling that follow are folded into the read, so only the needed windows, dates, bands and overview levels are fetched.',
    parameters: {
      id: 'The id of the collection, as listed by GET /collections.',
      spatial_extent: EXTENT.spatial,
      temporal_extent: EXTENT.temporal,
      bands: EXTENT.bands,
      properties: 'Conditions on item metadata, as child processes per property name that get the property `value` and answer true to keep the item.',
    },
    returns: 'A raster data cube of the collection.',
    exceptions: {
      NoDataAvailable: 'The collection has no data in the requested area and time interval.',
      TemporalExtentEmpty: 'The end of the temporal interval must be later than its start.',
    },
  },
  load_stac: {
    summary: 'Load STAC items as a data cube',
    description:
      'Reads a STAC Item, ItemCollection, static Collection or STAC API collection over HTTP(S) and makes the GeoTIFF assets of its items available as a raster data cube (t, bands, y, x), restricted like load_collection. Asset files are read with range requests, only where needed.',
    parameters: {
      url: 'The http(s) URL of the STAC document (an Item, an ItemCollection, a Collection with item links or a STAC API collection).',
      spatial_extent: EXTENT.spatial,
      temporal_extent: EXTENT.temporal,
      bands: 'The bands (asset or eo:bands names) to load, in the order wanted; null loads all.',
      properties: 'Conditions on item properties, as child processes per property name that get the property `value` and answer true to keep the item.',
    },
    returns: 'A raster data cube of the items.',
    exceptions: {
      NoDataAvailable: 'The STAC items hold no data in the requested area and time interval.',
      TemporalExtentEmpty: 'The end of the temporal interval must be later than its start.',
      PropertiesUnsupported: 'Filtering by these properties is not possible for this STAC document.',
    },
  },
  save_result: {
    summary: 'Deliver a result in a file format',
    description:
      'Marks data as a result of the graph, in one of the formats of GET /file_formats (case-insensitive) with its options. For a synchronous request the file is the answer, a batch job stores it as an asset, a web service renders it as tiles.',
    parameters: {
      data: 'The data to deliver.',
      format: 'An output format listed by GET /file_formats; upper and lower case are the same.',
      options: 'Options of the format, as GET /file_formats lists them.',
    },
    returns: 'Always true once the result is recorded.',
    exceptions: {
      FormatUnsuitable: 'The data cannot be written in this format.',
      DataCubeEmpty: 'The data cube holds no values, which this format cannot store.',
    },
  },
};
