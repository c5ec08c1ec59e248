// Discovery documents: file formats, secondary service types and UDF runtimes. Each answers a valid (possibly empty) document of the spec's shape.
import type { AppRoute } from './context.js';
import { json } from './reply.js';
import { INPUT_FORMATS, OUTPUT_FORMATS } from '../output/formats.js';
import { SERVICE_TYPES } from '../tiles/service-types.js';

export interface FileFormat {
  title?: string;
  description?: string;
  gis_data_types: string[];
  parameters: Record<string, unknown>;
}

const entry = (f: FileFormat): FileFormat => ({ title: f.title, description: f.description, gis_data_types: f.gis_data_types, parameters: f.parameters });

/** Exactly the formats the engine reads and writes (keys are GDAL format codes; see output/formats.ts). */
export const fileFormats: { input: Record<string, FileFormat>; output: Record<string, FileFormat> } = {
  input: Object.fromEntries(INPUT_FORMATS.map((f) => [f.name, entry(f)])),
  output: Object.fromEntries(OUTPUT_FORMATS.map((f) => [f.name, entry(f)])),
};
export const serviceTypes: Record<string, unknown> = SERVICE_TYPES;

export const routes: AppRoute[] = [
  { method: 'GET', path: '/file_formats', summary: 'Supported input and output file formats', auth: 'optional', handler: () => json(fileFormats) },
  { method: 'GET', path: '/service_types', summary: 'Supported secondary web service types', auth: 'optional', handler: () => json(serviceTypes) },
  // From 1.3.0 on the list must name a runtime: AssemblyScript's is always there (AppContext.udfRuntimes).
  { method: 'GET', path: '/udf_runtimes', summary: 'Supported UDF runtimes', auth: 'optional', handler: async (req) => json(await req.app.udfRuntimes()) },
];
