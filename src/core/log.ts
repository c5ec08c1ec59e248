// The one logger of every layer and thread: a small interface with two implementations chosen at
// start (configureLogging, from XEO_LOG_FORMAT and XEO_LOG_LEVEL): the readable lines of old
// (`[xeo] job j-1: message`) on stdout and stderr, or one JSON object per line on stdout (pino).
// Context travels in fields (`req` for a request's id, `job` for a job's), given to child loggers.
// Every message and string field passes redact() first: query strings of URLs (signatures, SAS
// tokens), passwords in URLs and bearer tokens never reach a log.
import { isMainThread } from 'node:worker_threads';
import { AsyncLocalStorage } from 'node:async_hooks';
import pino from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'text' | 'json';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger whose lines all carry `fields` (a job's id, say). */
  child(fields: LogFields): Logger;
  /** Writes out what is buffered (before the process exits). */
  flush(): void;
}

export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

// A reader of our output that went away (a log shipper restarted, a pipe closed: EPIPE) costs the
// lines written after it, never the process: without a listener, the stream's error would be
// thrown and end the server in the middle of its requests.
const dropped = () => {};
process.stdout.on('error', dropped);
process.stderr.on('error', dropped);

/** The request whose work is running (across its awaits), for the `req` field of log lines. */
const requestScope = new AsyncLocalStorage<string>();

/**
 * Runs `fn` as the work of request `id`: every line logged meanwhile, in `fn` and in whatever it
 * awaits, carries `req: id` unless it names another. (Used for requests answered asynchronously;
 * the cached tile path never enters it.)
 */
export function inRequest<T>(id: string, fn: () => T): T {
  return requestScope.run(id, fn);
}

/** The fields of a line: the caller's, with the request's id when a request is running. */
function withRequest(fields: LogFields | undefined): LogFields | undefined {
  const req = requestScope.getStore();
  if (req === undefined || (fields && fields.req !== undefined)) return fields;
  return { req, ...fields };
}
const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** Removes what must never reach a log: URL query strings and passwords, bearer tokens. */
export function redact(text: string): string {
  if (!text) return text;
  return (
    text
      // Query strings of URLs hold signatures (result links, SAS tokens, presigned S3 URLs).
      .replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s?#'"<>]*)\?[^\s'"<>)\]]*/gi, '$1?<redacted>')
      // user:password@ in URLs (databases, Redis).
      .replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:@/'"]*):[^\s@/'"]*@/gi, '$1:<redacted>@')
      .replace(/\b(Bearer|Basic)\s+[^\s'",]+/gi, '$1 <redacted>')
      .replace(/\b(basic\/\/|oidc\/[\w-]+\/)[^\s'",]+/gi, '$1<redacted>')
      .replace(/([?&](?:signature|sig|token|access_token|X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token)=)[^&\s'"]+/gi, '$1<redacted>')
  );
}

function cleanFields(fields: LogFields | undefined): LogFields | undefined {
  if (!fields) return fields;
  const out: LogFields = {};
  for (const k in fields) {
    const v = fields[k];
    if (typeof v === 'string') out[k] = redact(v);
    else if (v instanceof Error) out[k] = errorFields(v);
    else out[k] = v;
  }
  return out;
}

function errorFields(e: Error): { type: string; message: string; stack?: string; code?: string } {
  const code = (e as { code?: unknown }).code;
  return { type: e.name, message: redact(e.message), ...(e.stack ? { stack: redact(e.stack) } : {}), ...(typeof code === 'string' ? { code } : {}) };
}

/** The readable form: `[xeo] job j-1: message (key=value)`, errors and warnings on stderr. */
class TextLogger implements Logger {
  constructor(
    private readonly min: number,
    private readonly context: LogFields = {},
  ) {}

  private write(level: LogLevel, msg: string, fields?: LogFields): void {
    if (RANK[level] < this.min) return;
    const all = { ...this.context, ...withRequest(fields) };
    let prefix = '';
    const extra: string[] = [];
    let err: Error | null = null;
    for (const k in all) {
      const v = all[k];
      if (v === undefined) continue;
      if (k === 'job') prefix += `job ${v}: `;
      else if (k === 'req') prefix += `request ${v}: `;
      else if (k === 'worker') prefix += `worker ${v}: `;
      else if (k === 'err' && v instanceof Error) err = v;
      else extra.push(`${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
    }
    let line = `[xeo] ${prefix}${msg}`;
    if (extra.length) line += ` (${extra.join(', ')})`;
    if (err) line += `: ${err.stack ?? err.message}`;
    line = redact(line);
    if (RANK[level] >= RANK.warn) process.stderr.write(`${line}\n`);
    else process.stdout.write(`${line}\n`);
  }

  debug(msg: string, fields?: LogFields): void {
    this.write('debug', msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.write('info', msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.write('warn', msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.write('error', msg, fields);
  }
  child(fields: LogFields): Logger {
    return new TextLogger(this.min, { ...this.context, ...fields });
  }
  flush(): void {}
}

/** One JSON object per line (pino) on stdout: time, level, msg, and the fields. */
class JsonLogger implements Logger {
  constructor(private readonly p: pino.Logger) {}

  static create(level: LogLevel): JsonLogger {
    // Asynchronous on the event loop (it never waits for the pipe); a thread of ours may wait.
    const dest = pino.destination({ dest: 1, sync: !isMainThread, minLength: 0 });
    dest.on('error', dropped);
    const p = pino(
      {
        level,
        base: { pid: process.pid, ...(isMainThread ? {} : { thread: 'engine' }) },
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
      },
      dest,
    );
    return new JsonLogger(p);
  }

  debug(msg: string, fields?: LogFields): void {
    if (this.p.isLevelEnabled('debug')) this.p.debug(cleanFields(withRequest(fields)) ?? {}, redact(msg));
  }
  info(msg: string, fields?: LogFields): void {
    if (this.p.isLevelEnabled('info')) this.p.info(cleanFields(withRequest(fields)) ?? {}, redact(msg));
  }
  warn(msg: string, fields?: LogFields): void {
    this.p.warn(cleanFields(withRequest(fields)) ?? {}, redact(msg));
  }
  error(msg: string, fields?: LogFields): void {
    this.p.error(cleanFields(withRequest(fields)) ?? {}, redact(msg));
  }
  child(fields: LogFields): Logger {
    return new JsonLogger(this.p.child(cleanFields(fields) ?? {}));
  }
  flush(): void {
    try {
      this.p.flush();
    } catch {
      // Nothing buffered, or the stream is gone.
    }
  }
}

/** A logger of this form and level (an engine's, say: EngineParts.log). */
export function createLogger(format: LogFormat, level: LogLevel): Logger {
  return format === 'json' ? JsonLogger.create(level) : new TextLogger(RANK[level]);
}

declare module './run-context.js' {
  interface EngineParts {
    /** The engine thread's logger, of the form and level of the main thread's. */
    log: Logger;
  }
}

/**
 * The main thread's logger (the readable form until configureLogging chooses, at start). Read it
 * at each use. Engine threads log through their engine's (EngineParts.log).
 */
export let log: Logger = new TextLogger(RANK.info);

let current: { format: LogFormat; level: LogLevel } = { format: 'text', level: 'info' };

/** Chooses the form and level of every line this thread writes from now on. */
export function configureLogging(format: LogFormat, level: LogLevel): void {
  if (current.format === format && current.level === level) return;
  log.flush();
  log = createLogger(format, level);
  current = { format, level };
}

/** What configureLogging was given last, for threads to follow the main thread. */
export function loggingSettings(): { format: LogFormat; level: LogLevel } {
  return current;
}
