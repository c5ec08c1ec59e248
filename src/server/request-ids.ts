// Request ids: 16 hex digits, made for every request (so cheaply: no crypto call per request),
// unique within a process for 2^32 requests and, with a random half per process, across the
// nodes of an installation. The id is in the answer's X-Request-Id header, in the `id` of an
// error answer and in the request's log lines. Behind trusted proxies (XEO_TRUST_PROXY) a proxy's
// own X-Request-Id is kept instead, so one id follows a request through both.
import { randomBytes } from 'node:crypto';

const INCOMING = /^[\w.:-]{1,128}$/;
/** Two hex digits per byte value: an id is four look-ups, not a number formatted per request. */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export class RequestIds {
  private readonly prefix = randomBytes(4).toString('hex');
  /** xorshift32: every 32-bit value but 0 once per period, in an order that does not tell a count. */
  private state = randomBytes(4).readUInt32LE(0) || 1;

  constructor(private readonly trustIncoming: boolean) {}

  next(incoming: string | undefined): string {
    if (incoming !== undefined && this.trustIncoming && INCOMING.test(incoming)) return incoming;
    let x = this.state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.state = x;
    return this.prefix + HEX[(x >>> 24) & 255] + HEX[(x >>> 16) & 255] + HEX[(x >>> 8) & 255] + HEX[x & 255];
  }
}
