// The request as handlers see it: everything uWS offers only during the callback (method, URL,
// headers) is copied here up front, plus the body reader, the version profile and the user.
import type { VersionProfile } from './versions.js';
import type { User } from '../store/types.js';
import { parseJson } from '../core/json.js';
import { ApiError } from '../core/errors.js';
import { pickLanguage, type Lang } from '../core/messages.js';

/** What a request's context must offer the request itself: the base of its links. */
export interface LinkBase {
  publicUrl(): string;
}

/** A request body as the transport hands it over: whole (size-limited) or as a stream. */
export interface RequestBody {
  all(): Promise<Buffer>;
  stream(): AsyncGenerator<Buffer>;
  abort(): void;
}

/** `Ctx` is the application's context (api/context.ts), a parameter so this layer does not name it. */
export class ApiRequest<Ctx extends LinkBase = LinkBase> {
  user: User | null = null;
  aborted = false;
  private abortListeners: (() => void)[] = [];
  private parsedQuery: URLSearchParams | null = null;
  private language: Lang | null = null;
  private address: string | null = null;

  constructor(
    readonly app: Ctx,
    /** The request's id: in its X-Request-Id answer header, its error answer and its log lines. */
    readonly id: string,
    readonly method: string,
    /** Path below the version prefix, still URL-encoded. */
    readonly path: string,
    readonly rawQuery: string,
    readonly headers: Record<string, string>,
    readonly version: VersionProfile,
    readonly params: Record<string, string>,
    readonly bodyReader: RequestBody | null,
    /** Finds the client's address, once, when it is first asked for (most answers never need it). */
    private readonly findAddress: () => string,
  ) {}

  /** The language of messages: the best of Accept-Language that we speak. */
  get lang(): Lang {
    return (this.language ??= pickLanguage(this.headers['accept-language']));
  }

  /** The client's address: the connection's, or the one trusted proxies name (XEO_TRUST_PROXY). */
  get clientAddress(): string {
    return (this.address ??= this.findAddress());
  }

  get query(): URLSearchParams {
    return (this.parsedQuery ??= new URLSearchParams(this.rawQuery));
  }

  header(name: string): string | undefined {
    return this.headers[name];
  }

  /** Absolute URL of this version's root, without trailing slash: base of every link. */
  get baseUrl(): string {
    return this.app.publicUrl() + this.version.prefix;
  }

  url(path: string): string {
    return this.baseUrl + path;
  }

  /** The signed-in user; routes with auth 'required' never run without one. */
  get me(): User {
    if (!this.user) throw new ApiError('AuthenticationRequired');
    return this.user;
  }

  async json<T = unknown>(): Promise<T> {
    if (!this.bodyReader) throw new ApiError('BodyMissing');
    return parseJson(await this.bodyReader.all()) as T;
  }

  /** A JSON object body; anything else is a JsonInvalid error. */
  async jsonObject(): Promise<Record<string, unknown>> {
    const v = await this.json();
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ApiError('JsonInvalid', { reason: 'the body must be a JSON object' });
    return v as Record<string, unknown>;
  }

  bodyStream(): AsyncGenerator<Buffer> {
    if (!this.bodyReader) throw new ApiError('BodyMissing');
    return this.bodyReader.stream();
  }

  onAbort(fn: () => void): void {
    if (this.aborted) fn();
    else this.abortListeners.push(fn);
  }

  markAborted(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.bodyReader?.abort();
    for (const fn of this.abortListeners.splice(0)) fn();
  }
}
