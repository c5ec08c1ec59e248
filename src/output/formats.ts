// The file formats of GET /file_formats and save_result: names aligned with GDAL's driver codes,
// matched case-insensitively, each with the options it takes (checked here, so a wrong option is
// a clear 400 before any work) and its media type.
import { ApiError, ProcessException } from '../core/errors.js';
import { COLOR_MAPS } from './colormap.js';
import { DEFAULT_DEFLATE_LEVEL } from './cog-plan.js';

export interface FormatOption {
  type: string | string[];
  description: string;
  default?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
}

export interface OutputFormat {
  name: string;
  title: string;
  description: string;
  mediaType: string;
  extension: string;
  gis_data_types: string[];
  parameters: Record<string, FormatOption>;
  allowsEmpty: boolean;
}

const COG_MEDIA_TYPE = 'image/tiff; application=geotiff; profile=cloud-optimized';

const rendering: Record<string, FormatOption> = {
  colormap: { type: 'string', description: 'Colour map for one-band results.', enum: [...COLOR_MAPS], default: 'viridis' },
  min: { type: ['number', 'null'], description: 'Value drawn with the first colour (one band) or as black (three bands); by default the 2nd percentile of the data.', default: null },
  max: { type: ['number', 'null'], description: 'Value drawn with the last colour (one band) or as full brightness (three bands); by default the 98th percentile of the data.', default: null },
};

export const OUTPUT_FORMATS: OutputFormat[] = [
  {
    name: 'GTiff',
    title: 'Cloud-Optimized GeoTIFF',
    description: 'A tiled, deflate-compressed GeoTIFF with internal overviews. Every combination of non-spatial labels (e.g. date and band) becomes one band, described by its labels.',
    mediaType: COG_MEDIA_TYPE,
    extension: 'tif',
    gis_data_types: ['raster'],
    parameters: {
      tile_size: { type: 'integer', description: 'Width and height of the tiles in pixels.', enum: [128, 256, 512, 1024], default: 256 },
      overview_resampling: { type: 'string', description: 'How overviews are computed.', enum: ['average', 'nearest'], default: 'average' },
      deflate_level: {
        type: 'integer',
        description: 'zlib level of the tiles: 1 is fastest, 9 smallest. The default is about twice as fast as 6 for files about 1% larger.',
        minimum: 1,
        maximum: 9,
        default: DEFAULT_DEFLATE_LEVEL,
      },
    },
    allowsEmpty: false,
  },
  {
    name: 'PNG',
    title: 'Portable Network Graphics',
    description: 'An image: one-band results through a colour map, three-band results as red, green and blue; no-data is transparent.',
    mediaType: 'image/png',
    extension: 'png',
    gis_data_types: ['raster'],
    parameters: { ...rendering },
    allowsEmpty: false,
  },
  {
    name: 'JPEG',
    title: 'JPEG',
    description: 'A lossy image like PNG (colour map or red, green and blue); no-data is drawn black.',
    mediaType: 'image/jpeg',
    extension: 'jpg',
    gis_data_types: ['raster'],
    parameters: { ...rendering, quality: { type: 'integer', description: 'JPEG quality.', minimum: 1, maximum: 100, default: 85 } },
    allowsEmpty: false,
  },
  {
    name: 'netCDF',
    title: 'netCDF (classic, 64-bit offsets)',
    description:
      'A CF-1.8 netCDF file. Raster cubes: one variable per band over (t, y, x), or one variable named `var` when the result has no bands dimension; coordinates and the CRS as grid mapping; temporal labels that are dates are a time coordinate, other labels (weeks, seasons, renamed labels) a text coordinate. Vector cubes: a time series per geometry (featureType timeSeries), one variable per band over (feature, t), the geometries as CF simple geometries (x, y, node counts, parts and holes) with a point per feature in lat and lon, and the feature ids.',
    mediaType: 'application/x-netcdf',
    extension: 'nc',
    gis_data_types: ['raster', 'vector'],
    parameters: {},
    allowsEmpty: false,
  },
  {
    name: 'CSV',
    title: 'Comma-separated values',
    description:
      'A vector cube as a table: one row per geometry and date (and per label of any other dimension except bands), with the columns feature_index, the feature properties, date and one column per band (labels of several such dimensions joined by ~). No-data is an empty field. With `geometry` WKT, a WKT column makes it a layer GDAL reads with its geometries.',
    mediaType: 'text/csv',
    extension: 'csv',
    gis_data_types: ['vector', 'table'],
    parameters: {
      geometry: {
        type: 'string',
        description: "Write each feature's geometry as well: 'none' (the default) or 'WKT' (a column named WKT, as GDAL's CSV driver writes and reads it).",
        enum: ['none', 'WKT'],
        default: 'none',
      },
    },
    allowsEmpty: true,
  },
  {
    name: 'GeoJSON',
    title: 'GeoJSON',
    description:
      'A vector cube as a FeatureCollection (RFC 7946, in EPSG:4326: other CRSs are reprojected): one feature per geometry with its id and properties, and one property per date and band holding the value (keys are the labels joined by ~, e.g. 2024-06-01T00:00:00Z~B04; no-data is null).',
    mediaType: 'application/geo+json',
    extension: 'geojson',
    gis_data_types: ['vector'],
    parameters: {},
    allowsEmpty: true,
  },
  {
    name: 'Parquet',
    title: 'GeoParquet',
    description:
      'A vector cube as GeoParquet 1.1 (readable by GeoPandas, DuckDB and GDAL): one row per geometry and date with feature_index, the feature properties, date, a column per band and the geometry as WKB in its CRS (PROJJSON in the metadata). Snappy-compressed.',
    mediaType: 'application/parquet; profile=geo',
    extension: 'parquet',
    gis_data_types: ['vector', 'table'],
    parameters: {},
    allowsEmpty: true,
  },
  {
    name: 'JSON',
    title: 'JSON',
    description:
      'Numbers, arrays and objects as they are; raster cubes as dimensions, coordinates and nested values (null for no-data). Vector cubes with a temporal dimension (aggregate_spatial over dates) in the time-series form openEO clients read: an object of dates, each an array with one array of band values per geometry; other vector cubes as a GeoJSON FeatureCollection with the values in the properties. Strict JSON by default: NaN and infinite numbers are written as null.',
    mediaType: 'application/json',
    extension: 'json',
    gis_data_types: ['raster', 'vector', 'table', 'other'],
    parameters: {
      non_finite: {
        type: 'string',
        description:
          "How NaN and infinite numbers are written: 'null' (strict JSON, which every parser reads) or 'tokens' (bare NaN, Infinity and -Infinity, as Python's json module and the Python client read them; strict JSON parsers refuse such text).",
        enum: ['null', 'tokens'],
        default: 'null',
      },
    },
    allowsEmpty: true,
  },
];

export interface InputFormat {
  name: string;
  title: string;
  description: string;
  gis_data_types: string[];
  parameters: Record<string, FormatOption>;
}

/** Formats that load_* and imports read (names are GDAL's driver names). */
export const INPUT_FORMATS: InputFormat[] = [
  {
    name: 'GTiff',
    title: 'GeoTIFF',
    description:
      'GeoTIFF and Cloud-Optimized GeoTIFF, local or over HTTP(S) range requests (imports, load_stac), or uploaded (load_uploaded_files: each file one date, from its TIFF DateTime or the date in its name): 8/16/32-bit integers and 32/64-bit floats, any EPSG CRS, tiled or stripped.',
    gis_data_types: ['raster'],
    parameters: {},
  },
  {
    name: 'GeoJSON',
    title: 'GeoJSON',
    description: 'RFC 7946 GeoJSON: a FeatureCollection, a Feature or a geometry, in EPSG:4326 or the EPSG code of a `crs` member (as GDAL writes it). load_url, load_uploaded_files.',
    gis_data_types: ['vector'],
    parameters: {},
  },
  {
    name: 'FlatGeobuf',
    title: 'FlatGeobuf',
    description: 'FlatGeobuf files (any geometry type, EPSG CRS, properties of every column type). load_url, load_uploaded_files.',
    gis_data_types: ['vector'],
    parameters: {},
  },
  {
    name: 'Parquet',
    title: 'GeoParquet',
    description: 'GeoParquet 1.0 and 1.1 with WKB geometries (snappy or uncompressed pages), or Parquet with a WKB column named geometry (then in EPSG:4326). load_url, load_uploaded_files.',
    gis_data_types: ['vector', 'table'],
    parameters: {},
  },
  {
    name: 'CSV',
    title: 'Comma-separated values',
    description:
      'CSV (comma, semicolon, tab or pipe separated, detected from the header) with the geometry as WKT in one column or as x and y columns (points). The other columns become feature properties. load_url, load_uploaded_files.',
    gis_data_types: ['vector', 'table'],
    parameters: {
      GEOM_POSSIBLE_NAMES: { type: 'string', description: 'Comma-separated names the WKT column may have (first found wins, any case).', default: 'WKT,geometry,geom,the_geom' },
      X_POSSIBLE_NAMES: { type: 'string', description: 'Comma-separated names the x (longitude, easting) column may have, when there is no WKT column.', default: 'x,lon,long,longitude,lng,easting' },
      Y_POSSIBLE_NAMES: { type: 'string', description: 'Comma-separated names the y (latitude, northing) column may have.', default: 'y,lat,latitude,northing' },
      KEEP_GEOM_COLUMNS: { type: 'boolean', description: 'Keep the x and y columns as properties as well.', default: true },
      AUTODETECT_TYPE: { type: 'boolean', description: 'Read fields that look like numbers as numbers (otherwise every property is text).', default: true },
      crs: { type: 'integer', description: 'EPSG code of the coordinates.', default: 4326 },
    },
  },
];

const inputByName = new Map(INPUT_FORMATS.map((f) => [f.name.toLowerCase(), f]));
inputByName.set('geoparquet', inputByName.get('parquet')!);
inputByName.set('fgb', inputByName.get('flatgeobuf')!);
inputByName.set('geotiff', inputByName.get('gtiff')!);

/** An input format by name (any case) with its options checked (names any case) and defaults applied. */
export function inputFormat(name: string, options: Record<string, unknown>, processId: string): InputFormat & { options: Record<string, unknown> } {
  const f = inputByName.get(String(name).toLowerCase());
  if (!f) throw new ProcessException('FormatUnsuitable', `'${name}' is not an input format here; use one of ${INPUT_FORMATS.map((x) => x.name).join(', ')}`);
  return { ...f, options: checkOptions(f.name, f.parameters, options, processId, false) };
}

function checkOptions(format: string, params: Record<string, FormatOption>, options: Record<string, unknown>, processId: string, exactCase = true): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new ApiError('ProcessParameterInvalid', { process: processId, parameter: 'options', reason: 'options must be an object' });
  for (const [k0, v] of Object.entries(options)) {
    const k = exactCase ? k0 : (Object.keys(params).find((x) => x.toLowerCase() === k0.toLowerCase()) ?? k0);
    const p = params[k];
    const bad = (reason: string) => new ApiError('ProcessParameterInvalid', { process: processId, parameter: 'options', reason: `${format} option '${k0}': ${reason}` });
    if (!p) throw bad(`unknown; ${format} takes ${Object.keys(params).join(', ') || 'no options'}`);
    const types = [p.type].flat();
    const ok =
      (v === null && types.includes('null')) ||
      (typeof v === 'number' && (types.includes('number') || (types.includes('integer') && Number.isInteger(v)))) ||
      (typeof v === 'string' && types.includes('string')) ||
      (typeof v === 'boolean' && types.includes('boolean'));
    if (!ok) throw bad(`must be ${types.join(' or ')}`);
    if (p.enum && !p.enum.includes(v)) throw bad(`must be one of ${p.enum.join(', ')}`);
    if (typeof v === 'number' && ((p.minimum !== undefined && v < p.minimum) || (p.maximum !== undefined && v > p.maximum))) throw bad(`must be within ${p.minimum}..${p.maximum}`);
    out[k] = v;
  }
  for (const [k, p] of Object.entries(params)) if (!(k in out) && 'default' in p) out[k] = p.default;
  return out;
}

const byName = new Map(OUTPUT_FORMATS.map((f) => [f.name.toLowerCase(), f]));
byName.set('gtiff', byName.get('gtiff')!);
byName.set('cog', byName.get('gtiff')!);
byName.set('geotiff', byName.get('gtiff')!);
byName.set('jpg', byName.get('jpeg')!);
byName.set('netcdf', byName.get('netcdf')!);
byName.set('nc', byName.get('netcdf')!);
byName.set('geoparquet', byName.get('parquet')!);
byName.set('json', byName.get('json')!);

/** A format by name (any case) with its options checked and defaults applied. */
export function outputFormat(name: string, options: Record<string, unknown>): OutputFormat & { options: Record<string, unknown> } {
  const f = byName.get(String(name).toLowerCase());
  if (!f) {
    throw new ApiError('ProcessParameterInvalid', {
      process: 'save_result',
      parameter: 'format',
      reason: `'${name}' is not an output format here; use one of ${OUTPUT_FORMATS.map((x) => x.name).join(', ')}`,
    });
  }
  const out = checkOptions(f.name, f.parameters, options ?? {}, 'save_result');
  return { ...f, options: out };
}
