// The processing parameters users may set (the Processing Parameters extension): per mode (batch
// jobs, synchronous requests, secondary web services), each with its schema, default and meaning,
// the defaults and bounds taken from our configuration. A value comes, in this order, from the
// request's top level (POST /jobs, /result, /services; PATCH of jobs and services), from the
// `default_*_options` of the process submitted, from those of the stored or remote processes its
// root graph calls (in node order; the first that sets one wins), else from the default here.
// A request's members that are neither its own nor a parameter of the mode are ignored and named in
// a warning of the request's (or job's, or service's) log: clients send stray members (the Web
// Editor spreads a browser event into its body). Invalid values of known parameters are refused;
// those of a process are passed over.
import AjvModule, { type ValidateFunction } from 'ajv';
import type { Config } from './config.js';
import { ApiError } from './errors.js';
import { isObject, nodesOf, processKey, type UserProcess } from './graph.js';

const Ajv = AjvModule as unknown as typeof AjvModule.default;
const ajv = new Ajv({ strict: false, allErrors: false });

export type ProcessingMode = 'job' | 'sync' | 'service';

/** Where a process keeps its defaults for each mode. */
export const DEFAULTS_MEMBER: Record<ProcessingMode, string> = {
  job: 'default_job_options',
  sync: 'default_synchronous_options',
  service: 'default_service_options',
};

const MODE_NAME: Record<ProcessingMode, string> = { job: 'batch jobs', sync: 'synchronous processing', service: 'secondary web services' };

/** A parameter as GET /processing_parameters lists it (the API's `parameter` schema). */
export interface ProcessingParameter {
  name: string;
  description: string;
  optional: true;
  default: unknown;
  schema: Record<string, unknown>;
}

const LOG_LEVELS = ['error', 'warning', 'info', 'debug'];

const logLevel = (what: string): ProcessingParameter => ({
  name: 'log_level',
  description: `The lowest severity of the log entries kept for ${what}. Also a member of the request itself in the API; a process can give its default here.`,
  optional: true,
  default: 'info',
  schema: { type: 'string', enum: LOG_LEVELS },
});

const maxValues = (limit: number, what: string): ProcessingParameter => ({
  name: 'max_values',
  description: `The most raster values (pixels × dates × bands) ${what} may read. Lower it to stop early rather than read more than expected; the administrator's limit (${limit}) is the highest value.`,
  optional: true,
  default: limit,
  schema: { type: 'integer', minimum: 1, maximum: limit },
});

/** The parameters of each mode, from the configuration (the same on every node of an installation). */
export function processingParameters(config: Config): Record<ProcessingMode, ProcessingParameter[]> {
  return {
    job: [
      {
        name: 'chunk_size',
        description:
          'Side of the square chunks (in pixels) a batch job whose processes all work pixel by pixel is computed in, rounded up to a whole number of the blocks the GeoTIFF is written in (1024 pixels with its default tiles). Smaller chunks need less memory and report progress more often; larger ones have less overhead.',
        optional: true,
        default: config.jobChunkSize,
        schema: { type: 'integer', minimum: 16, maximum: 8192 },
      },
      maxValues(config.batchMaxValues, 'one load of a batch job (per chunk, or for a job that runs as one piece)'),
      logLevel('the batch job'),
      {
        name: 'udf_timeout',
        description: `Seconds one call of a user-defined function (run_udf) of the job may take before it is stopped; the administrator's limit (${config.udf.jobTimeoutMaxSeconds}) is the highest value.`,
        optional: true,
        default: config.udf.jobTimeoutSeconds,
        schema: { type: 'number', exclusiveMinimum: 0, maximum: config.udf.jobTimeoutMaxSeconds },
      },
    ],
    sync: [maxValues(config.syncMaxValues, 'one load of a synchronous request'), logLevel('the request (its log is linked from the answer)')],
    service: [
      {
        name: 'tile_size',
        description: "Width and height of the service's tiles in pixels, when its configuration does not set `tile_size` (a 512 tile covers the ground of a 256 tile at twice the detail).",
        optional: true,
        default: 256,
        schema: { type: 'integer', enum: [256, 512] },
      },
      maxValues(config.syncMaxValues, 'one load of one tile'),
      {
        name: 'max_age',
        description: 'Seconds browsers and caches may keep a tile of the service before asking again (Cache-Control max-age).',
        optional: true,
        default: config.tileMaxAge,
        schema: { type: 'integer', minimum: 0, maximum: 31536000 },
      },
      logLevel('the service'),
    ],
  };
}

const validators = new WeakMap<ProcessingParameter, ValidateFunction>();
function check(p: ProcessingParameter, value: unknown): string | null {
  let v = validators.get(p);
  if (!v) validators.set(p, (v = ajv.compile(p.schema)));
  return v(value) ? null : ajv.errorsText(v.errors, { dataVar: p.name });
}

/** What a request's top level gives: its processing parameters, and the members ignored. */
export interface RequestOptions {
  options: Record<string, unknown>;
  /** Members that are neither the request's own nor parameters of the mode, in body order. */
  ignored: string[];
}

/**
 * The processing parameters a request gives at its top level: a member that is not one of the
 * request's own (`own`) is a parameter of the mode, with a valid value, or is ignored.
 */
export function requestOptions(params: ProcessingParameter[], body: Record<string, unknown>, own: ReadonlySet<string>): RequestOptions {
  const options: Record<string, unknown> = {};
  const ignored: string[] = [];
  for (const [name, value] of Object.entries(body)) {
    if (own.has(name)) continue;
    const p = params.find((x) => x.name === name);
    if (!p) {
      ignored.push(name);
      continue;
    }
    const problem = check(p, value);
    if (problem) throw new ApiError('ProcessingParameterInvalid', { parameter: name, reason: `${problem}; accepted: ${JSON.stringify(p.schema)}` });
    options[name] = value;
  }
  return { options, ignored };
}

/** The log line that names the members a request of `mode` gave and Xeo ignored. */
export function ignoredMembersMessage(mode: ProcessingMode, ignored: readonly string[]): string {
  const names = ignored.map((n) => `'${n}'`).join(', ');
  const one = ignored.length === 1;
  return `Ignored the request member${one ? '' : 's'} ${names}: ${one ? 'it is' : 'they are'} neither part of the API's request nor a processing parameter of ${MODE_NAME[mode]} (GET /processing_parameters lists those).`;
}

/**
 * The defaults the processes give, highest precedence first: the process submitted, then the
 * stored or remote processes its root graph calls, in node order.
 */
export function processDefaults(mode: ProcessingMode, process: Record<string, unknown>, userProcesses: Record<string, UserProcess>): Record<string, unknown>[] {
  const member = DEFAULTS_MEMBER[mode];
  const out: Record<string, unknown>[] = [];
  if (isObject(process[member])) out.push(process[member]);
  for (const [, node] of nodesOf(process.process_graph)) {
    const key = processKey(node.process_id, node.namespace ?? null);
    const called = key !== null && Object.hasOwn(userProcesses, key) ? (userProcesses[key] as unknown as Record<string, unknown>) : null;
    if (called && isObject(called[member])) out.push(called[member]);
  }
  return out;
}

/** The value of every parameter of the mode: given by the request, else by a process, else the default. */
export function resolveOptions(params: ProcessingParameter[], given: Record<string, unknown>, defaults: Record<string, unknown>[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of params) {
    if (Object.hasOwn(given, p.name)) {
      out[p.name] = given[p.name];
      continue;
    }
    // "Present" counts, whatever the value; a value its schema refuses is passed over.
    const from = defaults.find((d) => Object.hasOwn(d, p.name) && check(p, d[p.name]) === null);
    out[p.name] = from ? from[p.name] : p.default;
  }
  return out;
}
