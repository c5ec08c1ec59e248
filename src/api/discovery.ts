// Discovery documents that later parts of Xeo fill: file formats, secondary service types and UDF
// runtimes. Each answers a valid (possibly empty) document of the spec's shape.
import type { Route } from '../server/routes.js';
import { json } from '../server/reply.js';

export interface FileFormat {
  title?: string;
  description?: string;
  gis_data_types: string[];
  parameters: Record<string, unknown>;
}

/** Registries other modules add to as they land (keys are GDAL-style format names). */
export const fileFormats: { input: Record<string, FileFormat>; output: Record<string, FileFormat> } = { input: {}, output: {} };
export const serviceTypes: Record<string, unknown> = {};
export const udfRuntimes: Record<string, unknown> = {};

export const routes: Route[] = [
  { method: 'GET', path: '/file_formats', summary: 'Supported input and output file formats', auth: 'optional', handler: () => json(fileFormats) },
  { method: 'GET', path: '/service_types', summary: 'Supported secondary web service types', auth: 'optional', handler: () => json(serviceTypes) },
  { method: 'GET', path: '/udf_runtimes', summary: 'Supported UDF runtimes', auth: 'optional', handler: () => json(udfRuntimes) },
];
