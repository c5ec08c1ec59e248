// Signed access to the assets of a STAC API collection, chosen per collection (`--signer`):
// none (hrefs as they are), planetary-computer (Azure Blob URLs get a SAS token from Planetary
// Computer's token endpoint, cached per storage container until shortly before it expires) and s3
// (s3:// and S3 https hrefs become SigV4-presigned https URLs, computed here with node:crypto).
// A signed href is a plain URL, so the COG reader needs nothing else to read it.
import { createHash, createHmac } from 'node:crypto';
import { requestJson } from './http-client.js';
import { s3Settings, type SignerConfig } from '../core/config.js';

export const SIGNERS = ['none', 'planetary-computer', 's3'] as const;
export type SignerName = (typeof SIGNERS)[number];

export interface Signer {
  /** The URL to read `href` with; hrefs the signer does not cover come back unchanged. */
  sign(href: string): Promise<string>;
}

export class SignerError extends Error {}

/** Tokens must outlive the searches cached with them and the loads that use those (minutes). */
const TOKEN_MARGIN_MS = 15 * 60_000;

/** The signer of s3:// hrefs in the administrator's own items (`xeo import`), from the process's environment (the same in every thread). */
let ownS3: Signer | null = null;
export function s3HrefSigner(): Signer {
  return (ownS3 ??= new S3Signer(s3Settings()));
}

export function createSigner(name: SignerName, config: SignerConfig): Signer {
  if (name === 'planetary-computer') return new PlanetaryComputerSigner(config);
  if (name === 's3') return new S3Signer(config.s3);
  return { sign: async (href) => href };
}

// --- Planetary Computer -------------------------------------------------------------------------

class PlanetaryComputerSigner implements Signer {
  private readonly tokens = new Map<string, Promise<{ token: string; expires: number }>>();

  constructor(private readonly config: SignerConfig) {}

  /** Storage account and container of a blob URL, or null when it is not one. */
  private containerOf(u: URL): [string, string] | null {
    const parts = u.pathname.split('/').filter(Boolean);
    const m = /^([a-z0-9]+)\.blob\.core\.windows\.net$/i.exec(u.hostname);
    if (m && parts.length >= 2) return [m[1], parts[0]];
    const ep = this.config.pcBlobEndpoint;
    if (ep && u.href.startsWith(`${ep.replace(/\/+$/, '')}/`) && parts.length >= 3) return [parts[0], parts[1]];
    return null;
  }

  async sign(href: string): Promise<string> {
    let u: URL;
    try {
      u = new URL(href);
    } catch {
      return href;
    }
    const c = this.containerOf(u);
    // Already signed (a SAS token has sig=), or not a blob.
    if (!c || u.searchParams.has('sig')) return href;
    const { token } = await this.token(c[0], c[1]);
    return `${href}${u.search ? '&' : '?'}${token.replace(/^\?/, '')}`;
  }

  private token(account: string, container: string): Promise<{ token: string; expires: number }> {
    const key = `${account}/${container}`;
    const cached = this.tokens.get(key);
    if (cached) {
      return cached.then((t) => (t.expires - TOKEN_MARGIN_MS > Date.now() ? t : (this.tokens.delete(key), this.token(account, container))));
    }
    const p = this.fetchToken(account, container);
    this.tokens.set(key, p);
    p.catch(() => this.tokens.delete(key));
    return p;
  }

  private async fetchToken(account: string, container: string): Promise<{ token: string; expires: number }> {
    const url = `${this.config.pcSasUrl.replace(/\/+$/, '')}/${encodeURIComponent(account)}/${encodeURIComponent(container)}`;
    let res;
    try {
      res = await requestJson(url, { kind: 'token', headers: this.config.pcSubscriptionKey ? { 'Ocp-Apim-Subscription-Key': this.config.pcSubscriptionKey } : {} });
    } catch (e) {
      throw new SignerError(`the SAS token endpoint ${url} cannot be reached (${(e as Error).message})`);
    }
    const body = res.body as { token?: unknown; 'msft:expiry'?: unknown } | undefined;
    if (res.status !== 200 || typeof body?.token !== 'string') throw new SignerError(`the SAS token endpoint ${url} answered HTTP ${res.status} without a token`);
    const expires = Date.parse(String(body['msft:expiry'] ?? ''));
    // Without an expiry, a token is trusted for the margin only (fetched again after).
    return { token: body.token, expires: Number.isNaN(expires) ? Date.now() + 2 * TOKEN_MARGIN_MS : expires };
  }
}

// --- S3 (AWS Signature Version 4, query-string form) ----------------------------------------------

/** Presigned URLs are made per time window, so one href keeps one URL (and its cached header) for a while. */
const S3_WINDOW_S = 1800;
const S3_EXPIRES_S = 7200;

const rfc3986 = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const hmac = (key: Buffer | string, s: string) => createHmac('sha256', key).update(s, 'utf8').digest();

export interface PresignInput {
  url: URL;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | null;
  /** YYYYMMDDTHHMMSSZ */
  amzDate: string;
  expires: number;
  extraQuery?: Record<string, string>;
}

/** A presigned GET URL (AWS SigV4, UNSIGNED-PAYLOAD, only `host` signed). */
export function presignS3(p: PresignInput): string {
  const date = p.amzDate.slice(0, 8);
  const scope = `${date}/${p.region}/s3/aws4_request`;
  const query: Record<string, string> = {
    ...Object.fromEntries(p.url.searchParams),
    ...p.extraQuery,
    'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
    'X-Amz-Credential': `${p.accessKeyId}/${scope}`,
    'X-Amz-Date': p.amzDate,
    'X-Amz-Expires': String(p.expires),
    ...(p.sessionToken ? { 'X-Amz-Security-Token': p.sessionToken } : {}),
    'X-Amz-SignedHeaders': 'host',
  };
  const canonicalQuery = Object.keys(query)
    .sort()
    .map((k) => `${rfc3986(k)}=${rfc3986(query[k])}`)
    .join('&');
  // The path as sent, each segment encoded once (S3 does not double-encode).
  const canonicalPath = p.url.pathname
    .split('/')
    .map((s) => rfc3986(decodeURIComponent(s)))
    .join('/');
  const canonicalRequest = ['GET', canonicalPath, canonicalQuery, `host:${p.url.host}`, '', 'host', 'UNSIGNED-PAYLOAD'].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', p.amzDate, scope, sha256(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${p.secretAccessKey}`, date), p.region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  return `${p.url.protocol}//${p.url.host}${canonicalPath}?${canonicalQuery}&X-Amz-Signature=${signature}`;
}

class S3Signer implements Signer {
  constructor(private readonly c: SignerConfig['s3']) {}

  /** The https URL of an S3 object and its region, or null when the href is not one. */
  private target(href: string): { url: URL; region: string } | null {
    const s3 = /^s3:\/\/([^/]+)\/(.+)$/.exec(href);
    if (s3) {
      const key = s3[2]
        .split('/')
        .map((s) => rfc3986(s))
        .join('/');
      const url = this.c.endpoint ? new URL(`${this.c.endpoint.replace(/\/+$/, '')}/${s3[1]}/${key}`) : new URL(`https://${s3[1]}.s3.${this.c.region}.amazonaws.com/${key}`);
      return { url, region: this.c.region };
    }
    let u: URL;
    try {
      u = new URL(href);
    } catch {
      return null;
    }
    if (u.protocol !== 'https:') return null;
    const m = /(?:^|\.)s3(?:[.-]dualstack)?(?:[.-]([a-z]{2}(?:-[a-z]+)+-\d))?\.amazonaws\.com$/i.exec(u.hostname);
    if (!m) return null;
    return { url: u, region: m[1] ?? this.c.region };
  }

  async sign(href: string): Promise<string> {
    const t = this.target(href);
    if (!t) return href;
    if (!this.c.accessKeyId || !this.c.secretAccessKey) {
      throw new SignerError('the s3 signer has no credentials: set XEO_S3_ACCESS_KEY_ID and XEO_S3_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)');
    }
    const window = Math.floor(Date.now() / 1000 / S3_WINDOW_S) * S3_WINDOW_S;
    const amzDate = new Date(window * 1000)
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d{3}/, '');
    return presignS3({
      url: t.url,
      region: t.region,
      accessKeyId: this.c.accessKeyId,
      secretAccessKey: this.c.secretAccessKey,
      sessionToken: this.c.sessionToken,
      amzDate,
      expires: S3_EXPIRES_S,
      ...(this.c.requesterPays ? { extraQuery: { 'x-amz-request-payer': 'requester' } } : {}),
    });
  }
}
