// HTTP range requests for remote COGs through undici: one keep-alive connection pool for all
// files, timeouts, and retries with backoff on transient failures (network errors, 429, 5xx).
import { Agent, request } from 'undici';
import { BaseClient, BaseResponse } from 'geotiff';

const agent = new Agent({ connections: 16, keepAliveTimeout: 30_000, headersTimeout: 15_000, bodyTimeout: 30_000 });
const RETRIES = 3;

class UndiciResponse extends BaseResponse {
  constructor(
    private readonly statusCode: number,
    private readonly headers: Record<string, string | string[] | undefined>,
    private readonly data: ArrayBuffer,
  ) {
    super();
  }
  override get ok(): boolean {
    return this.statusCode >= 200 && this.statusCode < 300;
  }
  override get status(): number {
    return this.statusCode;
  }
  override getHeader(name: string): string | undefined {
    const v = this.headers[name.toLowerCase()];
    return Array.isArray(v) ? v.join(', ') : v;
  }
  override async getData(): Promise<ArrayBuffer> {
    return this.data;
  }
}

const transient = (status: number) => status === 429 || status === 502 || status === 503 || status === 504;

export class UndiciClient extends BaseClient {
  override async request({ headers, signal }: { headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<BaseResponse> {
    let lastError: unknown;
    for (let attempt = 0; attempt <= RETRIES; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
      try {
        const res = await request(this.url, { method: 'GET', headers, signal, dispatcher: agent });
        const body = await res.body.arrayBuffer();
        if (transient(res.statusCode) && attempt < RETRIES) {
          lastError = new Error(`HTTP ${res.statusCode}`);
          continue;
        }
        return new UndiciResponse(res.statusCode, res.headers, body);
      } catch (e) {
        if (signal?.aborted) throw e;
        lastError = e;
      }
    }
    throw new Error(`fetching ${this.url} failed: ${(lastError as Error)?.message ?? lastError}`);
  }
}

/** A JSON document over HTTP (STAC API pages, token endpoints) on the shared keep-alive pool. */
export interface JsonResponse {
  status: number;
  /** Parsed body; undefined when the body is not JSON. */
  body: unknown;
}

const MAX_JSON_BYTES = 16 * 1024 * 1024;

export async function requestJson(
  url: string,
  opts: { method?: 'GET' | 'POST'; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<JsonResponse> {
  const timeout = opts.timeoutMs ?? 20_000;
  const res = await request(url, {
    method: opts.method ?? 'GET',
    dispatcher: agent,
    headersTimeout: timeout,
    bodyTimeout: timeout,
    headers: {
      accept: 'application/geo+json, application/json',
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of res.body) {
    size += c.length;
    if (size > MAX_JSON_BYTES) {
      res.body.destroy();
      throw new Error(`the answer is larger than ${MAX_JSON_BYTES} bytes`);
    }
    chunks.push(c);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, body };
}
