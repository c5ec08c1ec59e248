// One request and its answer on a uWS response: the error and success answers, the request's metrics
// and access log line, the abort handler, and the count of requests still in flight. errorReply is
// the one place where failures become HTTP answers.
import type { HttpResponse } from 'uWebSockets.js';
import type { AppRequest } from '../api/context.js';
import type { Reply } from '../api/reply.js';
import { RequestAborted, toApiError } from '../core/errors.js';
import { log } from '../core/log.js';
import { messageOf, pickLanguage, type Lang } from '../core/messages.js';
import type { BodyReader } from './body.js';
import type { HeaderList } from './header-bytes.js';
import { observeRequest, UNMATCHED } from './metrics.js';
import { sendReply, type ResponseState } from './send.js';

/** Most bytes of a refused request's body read and dropped so that the answer arrives (else: close). */
const DRAIN_BYTES = 8 * 1024 * 1024;

/** Requests answered asynchronously and not yet finished (those answered at once are never in flight). */
export class InFlight {
  count = 0;
  /** Set while the server drains: answers close their connections. */
  draining = false;
  private idle: (() => void) | null = null;
  private readonly settled = () => {
    if (--this.count === 0 && this.idle) this.idle();
  };

  /** Follows an answer given later: the request is in flight until it is sent. */
  follow(p: Promise<unknown>): void {
    this.count++;
    p.then(this.settled, this.settled);
  }

  /** Waits until nothing is in flight, at most `ms`; resolves with the number still in flight then. */
  async settle(ms: number): Promise<number> {
    if (this.count > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.idle = resolve;
        timer = setTimeout(resolve, ms);
      });
      clearTimeout(timer);
      this.idle = null;
    }
    return this.count;
  }
}

/** What an exchange needs of its server. */
export interface ExchangeSettings {
  accessLog: boolean;
  flight: InFlight;
}

/** One request on its way to an answer. */
export class Exchange {
  /** The route family for the request metrics (known once the path is routed). */
  family = UNMATCHED;
  readonly state: ResponseState;
  request: AppRequest | null = null;
  bodyReader: BodyReader | null = null;
  private readonly started = performance.now();

  constructor(
    private readonly server: ExchangeSettings,
    readonly res: HttpResponse,
    readonly id: string,
    readonly method: string,
    readonly url: string,
    readonly headers: Record<string, string>,
    /** CORS (and HSTS) headers of every answer. */
    readonly base: HeaderList,
  ) {
    this.state = { aborted: false, requestId: id };
  }

  /** uWS needs an abort handler before its callback returns unanswered; answers given at once skip it. */
  watchAbort(): void {
    this.res.onAborted(() => {
      this.state.aborted = true;
      this.state.onAbort?.();
      this.request?.markAborted();
    });
  }

  /** Counts the answer in the request metrics and, when asked for, the access log. */
  finish(status: number): void {
    const ms = performance.now() - this.started;
    observeRequest(this.family, this.method, status, ms);
    if (this.server.accessLog) log.info(`${this.method} ${this.url} ${status} ${ms.toFixed(1)}ms`, { req: this.id });
  }

  /** Answers with the error `e` (closing the connection when asked or when the body cannot be drained). */
  fail(e: unknown, close = false): Promise<void> | void {
    const { reply, closeConnection } = errorReply(e, pickLanguage(this.headers['accept-language']), this.method, this.url, this.id);
    if (!reply) return;
    // HEAD gets the head of the error answer only: a body would be read as the next response.
    const answer = (closeIt: boolean) => {
      this.finish(reply.status);
      if (!this.state.aborted) this.bodyReader?.unpause();
      return sendReply(this.res, this.state, reply, this.base, { headOnly: this.method === 'HEAD', closeConnection: closeIt || this.server.flight.draining });
    };
    const reader = this.bodyReader;
    if (reader && !reader.complete && !close && !closeConnection) {
      // Refused before its body was read (a bad token, an unknown id): read and drop the rest
      // first. Closing on unread bytes makes the kernel reset the connection, and the reset can
      // discard the answer before the client reads it; a body too long to drain still closes.
      return reader.drain(DRAIN_BYTES).then((ended) => answer(!ended));
    }
    return answer(close || closeConnection || (reader !== null && !reader.complete));
  }

  /** Sends the handler's answer. */
  succeed(reply: Reply): Promise<void> | void {
    this.finish(reply.status);
    // While draining, answers close their connection: the client's next request goes to another node.
    const unread = this.bodyReader !== null && !this.bodyReader.complete;
    if (!this.state.aborted) this.bodyReader?.unpause();
    return sendReply(this.res, this.state, reply, this.base, { headOnly: this.method === 'HEAD', closeConnection: unread || this.server.flight.draining });
  }

  /** Answers once `out` settles; the request is in flight until then. */
  later(out: Promise<Reply>): void {
    this.server.flight.follow(
      out.then(
        (reply) => this.succeed(reply),
        (e: unknown) => this.fail(e),
      ),
    );
  }
}

/**
 * The one place where failures become HTTP answers: a JSON error object with a catalogue code,
 * whose `id` is the request's (also in its X-Request-Id header and its log lines).
 */
export function errorReply(e: unknown, lang: Lang, method: string, url: string, id: string): { reply: Reply | null; closeConnection: boolean } {
  if (e instanceof RequestAborted) return { reply: null, closeConnection: false };
  const err = toApiError(e, `${method} ${url}`, { req: id });
  if (err.code === 'StorageFailure') log.error(`${method} ${url}: ${err.message}`, { req: id });
  const msg = messageOf(err, lang, { id });
  return {
    reply: {
      status: err.status,
      json: { id, code: err.code, message: msg.text, links: [] },
      headers: { 'Content-Language': msg.lang, ...err.headers },
    },
    closeConnection: err.closeConnection,
  };
}
