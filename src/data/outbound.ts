// The rules for requests the server makes to other hosts. Who asked decides what may be reached:
//  - the administrator (collections added with `xeo import`, later STAC API collections): trusted,
//    any http(s) host and, for imports, local paths;
//  - a user (URLs in load_stac, hrefs found in documents a user named): http and https only, and
//    never an address that is loopback, private, link-local, multicast, unspecified or reserved
//    unless XEO_OUTBOUND_ALLOW lists it.
// The address checked is the address connected to: the guarded connector resolves the name itself
// and hands the checked address to the socket, so a second DNS answer cannot slip in (rebinding).
// Refusals name the rule and nothing about the target: nothing was sent, so nothing is known.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { buildConnector } from 'undici';

/** Who an outbound request is made for. */
export interface OutboundPolicy {
  /** Administrator-added data: any host, local paths for imports. Users' URLs: the rules above. */
  trusted: boolean;
  /** For users' URLs: the addresses XEO_OUTBOUND_ALLOW lets them reach after all (none when absent). */
  allow?: readonly AllowEntry[];
}

export const TRUSTED: OutboundPolicy = Object.freeze({ trusted: true });

/** The rules for users' URLs with this allow list (XEO_OUTBOUND_ALLOW); throws on an invalid one. */
export function usersPolicy(allow: string | undefined): OutboundPolicy {
  return Object.freeze({ trusted: false, allow: Object.freeze(parseAllowList(allow)) });
}

declare module '../core/run-context.js' {
  interface EngineParts {
    /** The rules for URLs users name (usersPolicy of XEO_OUTBOUND_ALLOW). */
    outbound: OutboundPolicy;
  }
}

/** A request the rules refuse; the message names the rule (it is safe to show to the user). */
export class OutboundRefused extends Error {}

// --- addresses ----------------------------------------------------------------------------------

/** 16 bytes of an IPv6 address or 4 of an IPv4 one; null when `s` is not an address. */
export function addressBytes(s: string): Uint8Array | null {
  const kind = isIP(s);
  if (kind === 4) return Uint8Array.from(s.split('.').map(Number));
  if (kind !== 6) return null;
  let text = s.split('%')[0];
  const out = new Uint8Array(16);
  // A trailing dotted quad (::ffff:1.2.3.4) becomes two hex groups.
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const b = quad[1].split('.').map(Number);
    text = text.slice(0, -quad[1].length) + `${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === null ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[2 * i] = v >> 8;
    out[2 * i + 1] = v & 0xff;
  });
  return out;
}

/** An IPv4 address inside an IPv6 one that stands for it (IPv4-mapped, IPv4-compatible, NAT64). */
function embeddedV4(b: Uint8Array): Uint8Array | null {
  const zeros = (from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return b.slice(12);
  if (zeros(0, 12) && !(b[12] === 0 && b[13] === 0 && b[14] === 0 && b[15] <= 1)) return b.slice(12);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12)) return b.slice(12);
  return null;
}

function inPrefix(b: Uint8Array, prefix: Uint8Array, bits: number): boolean {
  if (b.length !== prefix.length) return false;
  for (let i = 0; i < bits; i++) {
    const bit = 7 - (i & 7);
    if (((b[i >> 3] >> bit) & 1) !== ((prefix[i >> 3] >> bit) & 1)) return false;
  }
  return true;
}

const RANGES: [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'private'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fc00::', 7, 'private'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'private'],
  ['ff00::', 8, 'multicast'],
];
const PARSED = RANGES.map(([a, bits, kind]) => ({ prefix: addressBytes(a)!, bits, kind }));

/** Why an address may not be reached on a user's behalf ('loopback', 'private', ...), or null. */
export function addressClass(address: string): string | null {
  let b = addressBytes(address);
  if (!b) return 'unspecified';
  if (b.length === 16) b = embeddedV4(b) ?? b;
  return PARSED.find((r) => inPrefix(b, r.prefix, r.bits))?.kind ?? null;
}

// --- the allow list (XEO_OUTBOUND_ALLOW) -------------------------------------------------------

export type AllowEntry = { host: string; port: number | null } | { prefix: Uint8Array; bits: number; port: number | null };

/**
 * Parses XEO_OUTBOUND_ALLOW: comma-separated hosts, addresses or CIDR ranges, each optionally with
 * a port (`example.org`, `10.1.2.3:8080`, `10.0.0.0/8`, `[::1]:9000`, `[fd00::/8]:443`, `fd00::/8`).
 */
export function parseAllowList(raw: string | undefined): AllowEntry[] {
  const out: AllowEntry[] = [];
  for (const part of (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    let body = part;
    let port: number | null = null;
    const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(part);
    if (bracket) {
      body = bracket[1];
      port = bracket[2] ? Number(bracket[2]) : null;
    } else if ((part.match(/:/g) ?? []).length === 1) {
      const i = part.lastIndexOf(':');
      body = part.slice(0, i);
      port = /^\d+$/.test(part.slice(i + 1)) ? Number(part.slice(i + 1)) : NaN;
    }
    if (port !== null && !(Number.isInteger(port) && port > 0 && port < 65536)) throw new Error(`XEO_OUTBOUND_ALLOW: '${part}' has an invalid port`);
    const [addr, len] = body.split('/');
    const bytes = addressBytes(addr);
    if (bytes) {
      const bits = len === undefined ? bytes.length * 8 : Number(len);
      if (!(Number.isInteger(bits) && bits >= 0 && bits <= bytes.length * 8)) throw new Error(`XEO_OUTBOUND_ALLOW: '${part}' has an invalid prefix length`);
      out.push({ prefix: bytes, bits, port });
    } else if (len === undefined && /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i.test(body)) {
      out.push({ host: body.toLowerCase(), port });
    } else throw new Error(`XEO_OUTBOUND_ALLOW: '${part}' is neither a host, an address nor a CIDR range`);
  }
  return out;
}

function listed(allow: readonly AllowEntry[], host: string, address: string | null, port: number): boolean {
  const b = address ? addressBytes(address) : null;
  const v4 = b && b.length === 16 ? embeddedV4(b) : null;
  return allow.some((e) => {
    if (e.port !== null && e.port !== port) return false;
    if ('host' in e) return e.host === host.toLowerCase();
    return !!b && (inPrefix(b, e.prefix, e.bits) || (!!v4 && inPrefix(v4, e.prefix, e.bits)));
  });
}

// --- URLs and connections -----------------------------------------------------------------------

const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1');
const defaultPort = (protocol: string) => (protocol === 'https:' ? 443 : 80);

function refusal(url: string, kind: string): OutboundRefused {
  return new OutboundRefused(`${url} is refused: it leads to a ${kind} address, which the server does not reach for users (an administrator may list it in XEO_OUTBOUND_ALLOW)`);
}

/**
 * Checks a URL before any I/O: http or https, absolute, and (for users) not an address literal in
 * a refused range. Host names are checked again when connecting (guardedConnector).
 */
export function checkUrl(raw: string, policy: OutboundPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundRefused(`'${raw}' is refused: only absolute http(s) URLs are read`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundRefused(`'${raw}' is refused: only http(s) URLs are read, not ${url.protocol}`);
  if (!policy.trusted) {
    const host = bare(url.hostname);
    const port = Number(url.port) || defaultPort(url.protocol);
    if (isIP(host)) {
      const kind = addressClass(host);
      if (kind && !listed(policy.allow ?? [], host, host, port)) throw refusal(url.href, kind);
    }
  }
  return url;
}

/** The address to connect to for host:port on a user's behalf: the first allowed one it resolves to. */
export async function allowedAddress(allow: readonly AllowEntry[], hostname: string, port: number, shown: string): Promise<string> {
  const host = bare(hostname);
  if (isIP(host)) {
    const kind = addressClass(host);
    if (kind && !listed(allow, host, host, port)) throw refusal(shown, kind);
    return host;
  }
  let addresses: { address: string }[];
  try {
    addresses = await lookup(host, { all: true, verbatim: true });
  } catch {
    throw new OutboundRefused(`${shown}: the host name ${host} cannot be resolved`);
  }
  if (listed(allow, host, null, port)) return addresses[0].address;
  let firstKind: string | null = null;
  for (const { address } of addresses) {
    const kind = addressClass(address);
    if (!kind || listed(allow, host, address, port)) return address;
    firstKind ??= kind;
  }
  throw refusal(shown, firstKind ?? 'unspecified');
}

/**
 * An undici connector that resolves the name itself, checks the address and connects to exactly
 * that address (TLS still verifies the certificate against the host name).
 */
export function guardedConnector(allow: readonly AllowEntry[], options: buildConnector.BuildOptions = {}): buildConnector.connector {
  const base = buildConnector(options);
  return (opts, callback) => {
    const port = Number(opts.port) || defaultPort(opts.protocol);
    allowedAddress(allow, opts.hostname, port, `${opts.protocol}//${opts.host ?? opts.hostname}/`).then(
      (address) => base({ ...opts, hostname: address }, callback),
      (e) => callback(e, null),
    );
  };
}
