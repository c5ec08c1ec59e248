// The file formats of GET /file_formats and save_result: names aligned with GDAL's driver codes,
// matched case-insensitively, each with the options it takes (checked here, so a wrong option is
// a clear 400 before any work) and its media type.
import { ApiError } from '../core/errors.js';
import { COLOR_MAPS } from './colormap.js';

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
      'A CF-style netCDF file: one variable per band over (t, y, x), or one variable named `var` when the result has no bands dimension; coordinates and the CRS as grid mapping. Temporal labels that are dates are a time coordinate; other labels (weeks, seasons, renamed labels) are a text coordinate.',
    mediaType: 'application/x-netcdf',
    extension: 'nc',
    gis_data_types: ['raster'],
    parameters: {},
    allowsEmpty: false,
  },
  {
    name: 'JSON',
    title: 'JSON',
    description: 'Numbers, arrays and objects as they are; raster cubes as dimensions, coordinates and nested values (null for no-data); vector cubes as a GeoJSON FeatureCollection. Strict JSON by default: NaN and infinite numbers are written as null.',
    mediaType: 'application/json',
    extension: 'json',
    gis_data_types: ['raster', 'vector', 'table', 'other'],
    parameters: {
      non_finite: {
        type: 'string',
        description: "How NaN and infinite numbers are written: 'null' (strict JSON, which every parser reads) or 'tokens' (bare NaN, Infinity and -Infinity, as Python's json module and the Python client read them; strict JSON parsers refuse such text).",
        enum: ['null', 'tokens'],
        default: 'null',
      },
    },
    allowsEmpty: true,
  },
];

/** Formats that load_* and imports read. */
export const INPUT_FORMATS = [
  {
    name: 'GTiff',
    title: 'GeoTIFF',
    description: 'GeoTIFF and Cloud-Optimized GeoTIFF, local or over HTTP(S) range requests: 8/16/32-bit integers and 32/64-bit floats, any EPSG CRS, tiled or stripped.',
    gis_data_types: ['raster'],
    parameters: {},
  },
];

const byName = new Map(OUTPUT_FORMATS.map((f) => [f.name.toLowerCase(), f]));
byName.set('gtiff', byName.get('gtiff')!);
byName.set('cog', byName.get('gtiff')!);
byName.set('geotiff', byName.get('gtiff')!);
byName.set('jpg', byName.get('jpeg')!);
byName.set('netcdf', byName.get('netcdf')!);
byName.set('nc', byName.get('netcdf')!);

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
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(options ?? {})) {
    const p = f.parameters[k];
    const bad = (reason: string) => new ApiError('ProcessParameterInvalid', { process: 'save_result', parameter: 'options', reason: `${f.name} option '${k}': ${reason}` });
    if (!p) throw bad(`unknown; ${f.name} takes ${Object.keys(f.parameters).join(', ') || 'no options'}`);
    const types = [p.type].flat();
    const ok = (v === null && types.includes('null')) || (typeof v === 'number' && (types.includes('number') || (types.includes('integer') && Number.isInteger(v)))) || (typeof v === 'string' && types.includes('string'));
    if (!ok) throw bad(`must be ${types.join(' or ')}`);
    if (p.enum && !p.enum.includes(v)) throw bad(`must be one of ${p.enum.join(', ')}`);
    if (typeof v === 'number' && ((p.minimum !== undefined && v < p.minimum) || (p.maximum !== undefined && v > p.maximum))) throw bad(`must be within ${p.minimum}..${p.maximum}`);
    out[k] = v;
  }
  for (const [k, p] of Object.entries(f.parameters)) if (!(k in out) && 'default' in p) out[k] = p.default;
  return { ...f, options: out };
}
