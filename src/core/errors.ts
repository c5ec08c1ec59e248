// Typed API errors. Every failure a handler can report is an ApiError with a code; the HTTP status
// comes from the code (the openEO catalogue for standard codes, our table for the few of our own),
// so a handler can never pair a code with the wrong status. messages.ts holds the texts.
import { log, type LogFields } from './log.js';

/** Codes and statuses of the openEO error catalogue (errors.json of API 1.2.0). */
export const CATALOGUE = {
  Internal: 500,
  NotFound: 404,
  FeatureUnsupported: 501,
  InfrastructureMaintenance: 503,
  InfrastructureBusy: 503,
  UnsupportedApiVersion: 404,
  RequestTimeout: 408,
  BudgetInvalid: 400,
  EstimateComplexity: 500,
  NoDataForUpdate: 400,
  PropertyNotEditable: 400,
  CollectionNotFound: 404,
  StorageFailure: 500,
  StorageQuotaExceeded: 400,
  FileNotFound: 404,
  FilePathInvalid: 400,
  FileOperationUnsupported: 400,
  FolderOperationUnsupported: 400,
  ContentTypeInvalid: 400,
  FileTypeInvalid: 400,
  FileSizeExceeded: 400,
  FileContentInvalid: 400,
  FileLocked: 400,
  ProcessGraphNotFound: 404,
  ProcessInvalid: 400,
  ProcessGraphMissing: 400,
  ProcessGraphInvalid: 400,
  PredefinedProcessExists: 400,
  ProcessGraphComplexity: 400,
  ProcessUnsupported: 400,
  ProcessParameterUnsupported: 400,
  ProcessParameterInvalid: 400,
  ProcessParameterRequired: 400,
  JobNotFound: 404,
  JobLocked: 400,
  JobNotFinished: 400,
  JobNotStarted: 400,
  ResultLinkExpired: 410,
  PaymentRequired: 402,
  BillingPlanInvalid: 400,
  BillingPlanMissing: 400,
  AuthenticationRequired: 401,
  AuthenticationSchemeInvalid: 403,
  TokenInvalid: 403,
  CredentialsInvalid: 403,
  PermissionsInsufficient: 403,
  ServiceNotFound: 404,
  ServiceUnsupported: 400,
  ServiceConfigUnsupported: 400,
  ServiceConfigInvalid: 400,
  ServiceConfigRequired: 400,
} as const;

/**
 * Codes of our own, for HTTP-level failures the catalogue has no code for
 * (the spec allows proprietary codes and asks to avoid bare 400/500).
 */
export const OWN_CODES = {
  JsonInvalid: 400,
  BodyMissing: 400,
  PayloadTooLarge: 413,
  MethodNotAllowed: 405,
  QueryParameterInvalid: 400,
  HeaderInvalid: 400,
  PathInvalid: 400,
  /** z/x/y that names no tile of the XYZ scheme, or a zoom the service does not serve. */
  TileInvalid: 400,
  IdentityProviderUnavailable: 503,
  /** A per-user limit of concurrent work is reached (a quota, not a server fault). */
  TooManyRequests: 429,
  /** A user holds as many batch jobs as allowed (XEO_MAX_JOBS_PER_USER). */
  JobQuotaExceeded: 400,
  /** A member of a request body with a value of the wrong kind (a job's title, say). */
  PropertyInvalid: 400,
  /** A Range request that starts beyond the end of a file (answered with a Content-Range header naming the size). */
  RangeNotSatisfiable: 416,
  /**
   * A collection served by a STAC API that cannot be used now (unreachable, answering errors): 424
   * Failed Dependency, since neither the request nor this server is at fault, and a 5xx would read
   * as our failure. The message names the API; Retry-After says when to try again.
   */
  CollectionUnavailable: 424,
  /** Named by the interface spec for an unresolvable parameter reference; not in errors.json. */
  ProcessParameterMissing: 400,
  /** The client went away before its answer (never sent: the status nginx logs for it). */
  ClientClosedRequest: 499,
  /**
   * A user-defined function (run_udf) failed while it ran: an exception in its code, a limit of
   * the sandbox it reached (time, memory, output, processes), or an answer that does not fit the
   * process it runs in. The user's to fix: the message names the UDF's line where there is one.
   */
  UdfFailed: 400,
  /** A user-defined function that cannot be run as written: a syntax or compile error, no known entry point, too large. */
  UdfInvalid: 400,
  /** A processing parameter whose value its schema (GET /processing_parameters) refuses. */
  ProcessingParameterInvalid: 400,
  /**
   * The Remote Process Definition extension's code: a node's URL namespace that cannot be read, is
   * not a process (or a list of processes), or does not hold the node's process.
   */
  ProcessNamespaceInvalid: 400,
} as const;

export type ErrorCode = keyof typeof CATALOGUE | keyof typeof OWN_CODES;

export function statusOf(code: ErrorCode): number {
  return (CATALOGUE as Record<string, number>)[code] ?? (OWN_CODES as Record<string, number>)[code];
}

export type ErrorParams = Record<string, string | number>;

export class ApiError extends Error {
  /** A catalogue code, one of ours, or (for a ProcessException) a code of a process definition. */
  readonly code: string;
  status: number;
  /** Extra response headers (e.g. Allow for 405, Retry-After for 503). */
  headers?: Record<string, string>;
  /** Close the connection after answering (e.g. a body we refused to read). */
  closeConnection = false;
  /** Where it happened in the user's own code (a UDF's traceback): for the log entry, never the answer. */
  stacktrace?: string;

  constructor(
    code: ErrorCode,
    readonly params: ErrorParams = {},
    /** A message that overrides the template (already in English, not translated). */
    readonly detail?: string,
    /** Only for codes outside the catalogue: process exceptions, errors crossing a thread. */
    named?: { code: string; status: number },
  ) {
    super(detail ?? named?.code ?? code);
    this.code = named?.code ?? code;
    this.status = named?.status ?? statusOf(code);
  }

  /** The same error told in other words (code, status and parameters kept). */
  withDetail(detail: string): ApiError {
    return new ApiError('Internal', this.params, detail, { code: this.code, status: this.status });
  }
}

/**
 * A process-specific failure (an `exceptions` code of the process definition, e.g. DivisionByZero
 * or ArrayElementNotAvailable), answered with that code, our message and status 400 unless the
 * definition says otherwise.
 */
export class ProcessException extends ApiError {
  constructor(code: string, message: string, http = 400) {
    super('ProcessParameterInvalid', {}, message, { code, status: http });
  }
}

/**
 * A server we depend on (the record store, the file store, the job queue) cannot be reached: the
 * request answers 503 with Retry-After. Why goes to the log, at most once per 10 s per server
 * (while it is away every request fails alike), never to the client.
 */
export class ServerUnavailable extends ApiError {
  private static lastLog = new Map<string, number>();

  constructor(what: string, reason: string) {
    super('InfrastructureBusy', {}, `The ${what} cannot be reached right now. Please retry shortly.`);
    this.headers = { 'Retry-After': '5' };
    const now = Date.now();
    if (now - (ServerUnavailable.lastLog.get(what) ?? 0) < 10_000) return;
    ServerUnavailable.lastLog.set(what, now);
    log.error(`${what} unavailable: ${reason}`);
  }
}

/** The one mapping of any failure to an API error: anything unexpected is logged and becomes Internal. */
export function toApiError(e: unknown, where = 'request', fields?: LogFields): ApiError {
  if (e instanceof ApiError) return e;
  log.error(`${where} failed`, { ...fields, err: e });
  return new ApiError('Internal');
}

/** The client went away: work for it stops, nothing is answered, nothing is logged. */
export class RequestAborted extends ApiError {
  constructor() {
    super('ClientClosedRequest');
  }
}

/** An error as plain data, to cross a thread boundary. */
export interface ErrorData {
  code: string;
  status: number;
  params: ErrorParams;
  detail?: string;
  /** Response headers the error asks for (Retry-After, say). */
  headers?: Record<string, string>;
  /** A UDF's traceback (ApiError.stacktrace). */
  stacktrace?: string;
}

export function errorToData(e: ApiError): ErrorData {
  return { code: e.code, status: e.status, params: e.params, detail: e.detail, ...(e.headers ? { headers: e.headers } : {}), ...(e.stacktrace ? { stacktrace: e.stacktrace } : {}) };
}

export function errorFromData(d: ErrorData): ApiError {
  const e = new ApiError('Internal', d.params, d.detail, { code: d.code, status: d.status });
  if (d.headers) e.headers = d.headers;
  if (d.stacktrace) e.stacktrace = d.stacktrace;
  return e;
}
