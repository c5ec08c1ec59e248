// The secondary web service types we offer, as GET /service_types shows them, and the checking
// of a service's `configuration` against them. Names are matched case-insensitively (the spec's
// rule); the canonical spelling is stored.
import { ApiError } from '../core/errors.js';
import { COLOR_MAPS } from '../output/colormap.js';
import { MAX_ZOOM } from './tile-grid.js';

interface ConfigParameter {
  type: string | string[];
  description: string;
  default: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  required?: boolean;
}

export interface ServiceType {
  title: string;
  description: string;
  configuration: Record<string, ConfigParameter>;
  process_parameters: { name: string; description: string; schema: Record<string, unknown>; optional?: boolean; default?: unknown }[];
  links: { rel: string; href: string; type?: string; title?: string }[];
}

/** What a tile renderer needs from a service's configuration, with defaults filled in. */
export interface TileConfig {
  tile_size: 256 | 512;
  min_zoom: number;
  max_zoom: number;
  format: 'png' | 'jpeg';
  colormap: string;
  min: number | null;
  max: number | null;
}

const tileConfiguration: Record<string, ConfigParameter> = {
  tile_size: { type: 'integer', description: 'Width and height of a tile in pixels. A 512 tile covers the ground of a 256 tile at the same zoom, at twice the detail.', enum: [256, 512], default: 256 },
  min_zoom: { type: 'integer', description: 'Smallest zoom level served.', minimum: 0, maximum: MAX_ZOOM, default: 0 },
  max_zoom: { type: 'integer', description: 'Largest zoom level served.', minimum: 0, maximum: MAX_ZOOM, default: 22 },
  format: { type: 'string', description: 'Image format of the tiles.', enum: ['png', 'jpeg'], default: 'png' },
  colormap: {
    type: 'string',
    description:
      "Colour map for one-band results (three-band results are drawn as red, green and blue). `classes` is categorical, for classified maps (a random forest's classes): each whole value 0 to 254 in its own colour, never stretched; `min` and `max` then name the classes the legend lists.",
    enum: [...COLOR_MAPS],
    default: 'viridis',
  },
  min: { type: ['number', 'null'], description: "Value drawn with the first colour. By default the 2nd percentile of the service's result over its whole extent, estimated once.", default: null },
  max: { type: ['number', 'null'], description: "Value drawn with the last colour. By default the 98th percentile of the service's result over its whole extent, estimated once.", default: null },
};

const tileParameters: ServiceType['process_parameters'] = [
  {
    name: 'spatial_extent',
    description: 'The bounds of the tile being drawn, in Web Mercator (EPSG:3857). Loads fill the tile anyway; use it to narrow other processes to the tile.',
    schema: { type: 'object', subtype: 'bounding-box', required: ['west', 'south', 'east', 'north'] },
  },
  { name: 'tile_zoom', description: 'Zoom level of the tile being drawn.', schema: { type: 'integer', minimum: 0 } },
  { name: 'tile_x', description: 'Column of the tile being drawn (0 = west).', schema: { type: 'integer', minimum: 0 } },
  { name: 'tile_y', description: 'Row of the tile being drawn (0 = north).', schema: { type: 'integer', minimum: 0 } },
  { name: 'tile_size', description: 'Width and height of the tile in pixels.', schema: { type: 'integer', enum: [256, 512] } },
];

export const SERVICE_TYPES: Record<string, ServiceType> = {
  XYZ: {
    title: 'XYZ map tiles',
    description:
      'Tiles for web maps (Leaflet, OpenLayers, MapLibre) in the XYZ scheme: Web Mercator (EPSG:3857), `{z}/{x}/{y}` with tile (0, 0) in the north-west. ' +
      'The service `url` is a template ending in `/{z}/{x}/{y}.png`; it needs no Authorization header (the service id is the key). ' +
      'Every load of the process graph fills the tile; one-band results are drawn through a colour map, three-band results as RGB, no-data is transparent. ' +
      'Tiles outside the data are transparent.',
    configuration: tileConfiguration,
    process_parameters: tileParameters,
    links: [{ rel: 'about', href: 'https://wiki.openstreetmap.org/wiki/Slippy_map_tilenames', type: 'text/html', title: 'The XYZ tile scheme' }],
  },
  WMTS: {
    title: 'OGC Web Map Tile Service',
    description:
      'The same tiles as XYZ, described by a WMTS 1.0.0 capabilities document (RESTful encoding, tile matrix set GoogleMapsCompatible). ' +
      'The service `url` is the WMTS endpoint; `?service=WMTS&request=GetCapabilities` on it answers the capabilities.',
    configuration: tileConfiguration,
    process_parameters: tileParameters,
    links: [{ rel: 'about', href: 'https://www.ogc.org/standard/wmts/', type: 'text/html', title: 'OGC WMTS' }],
  },
};

/** The canonical name of a service type, matched case-insensitively. */
export function serviceTypeName(type: unknown): string {
  if (typeof type !== 'string') throw new ApiError('ServiceUnsupported', { type: String(type) });
  const name = Object.keys(SERVICE_TYPES).find((k) => k.toLowerCase() === type.toLowerCase());
  if (!name) throw new ApiError('ServiceUnsupported', { type });
  return name;
}

const typeMatches = (t: string, v: unknown) => (t === 'null' ? v === null : t === 'integer' ? Number.isInteger(v) : t === 'number' ? typeof v === 'number' && Number.isFinite(v) : typeof v === t);

/** Checks a configuration against the type and returns it with every parameter given (defaults filled in). */
export function checkConfiguration(type: string, config: unknown): Record<string, unknown> {
  const params = SERVICE_TYPES[type].configuration;
  if (config === undefined || config === null) config = {};
  if (typeof config !== 'object' || Array.isArray(config)) throw new ApiError('ServiceConfigInvalid', { parameter: 'configuration', reason: 'it must be an object' });
  const given = config as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(given)) if (!Object.hasOwn(params, k)) throw new ApiError('ServiceConfigUnsupported', { parameter: k });
  for (const [name, p] of Object.entries(params)) {
    if (!(name in given)) {
      if (p.required) throw new ApiError('ServiceConfigRequired', { parameter: name });
      out[name] = p.default;
      continue;
    }
    const v = given[name];
    const types = Array.isArray(p.type) ? p.type : [p.type];
    const bad = (reason: string) => new ApiError('ServiceConfigInvalid', { parameter: name, reason });
    if (!types.some((t) => typeMatches(t, v))) throw bad(`expected ${types.join(' or ')}`);
    if (p.enum && !p.enum.some((e) => (typeof e === 'string' && typeof v === 'string' ? e.toLowerCase() === v.toLowerCase() : e === v))) {
      throw bad(`one of ${p.enum.join(', ')} is expected`);
    }
    if (typeof v === 'number' && p.minimum !== undefined && v < p.minimum) throw bad(`at least ${p.minimum} is expected`);
    if (typeof v === 'number' && p.maximum !== undefined && v > p.maximum) throw bad(`at most ${p.maximum} is expected`);
    out[name] = typeof v === 'string' ? v.toLowerCase() : v;
  }
  if ((out.min_zoom as number) > (out.max_zoom as number)) throw new ApiError('ServiceConfigInvalid', { parameter: 'min_zoom', reason: 'it must not exceed max_zoom' });
  if (out.min !== null && out.max !== null && !((out.min as number) < (out.max as number))) {
    throw new ApiError('ServiceConfigInvalid', { parameter: 'min', reason: 'it must be below max' });
  }
  return out;
}

export const tileConfigOf = (configuration: Record<string, unknown>): TileConfig => configuration as unknown as TileConfig;

/** Names of the parameters a service passes to its process. */
export const serviceParameterNames = (type: string) => SERVICE_TYPES[type].process_parameters.map((p) => p.name);
