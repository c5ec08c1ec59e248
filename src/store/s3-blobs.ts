// The blob store on an S3-compatible object store (AWS S3, Ceph RADOS Gateway, MinIO): one bucket,
// a key prefix per use (`files/` for user files, `jobs/` for job results), so every node of an
// installation sees the same bytes. Writes stream: a file smaller than one part is one PUT, a larger
// one a multipart upload of PART_BYTES parts, at most two in memory at a time; both replace an
// object atomically (readers see the old or the new one), and a write that fails or is refused
// (quota) aborts its multipart upload, so nothing partial remains. Folders are key prefixes.
// A store that cannot be reached (refused, timed out, 5xx) becomes 503 InfrastructureBusy with
// Retry-After, as the record store does when PostgreSQL is away.
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createReadStream } from 'node:fs';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { unlink } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { BlobInfo, BlobStore } from './blobs.js';
import { UnsafePathError } from './blobs.js';
import { ApiError, ServerUnavailable } from '../core/errors.js';
import { countCall } from '../core/metrics.js';
import { log } from '../core/log.js';

/** Size of the parts of a multipart upload (S3 wants at least 5 MiB for all but the last). */
export const PART_BYTES = 8 * 1024 * 1024;
/** Parts uploading while the next one fills: bounds the memory of one upload to (1 + this) parts. */
const PARTS_IN_FLIGHT = 1;
/** The same for a finished local file (a job's result): its upload is the last step before the job ends. */
const FILE_PARTS_IN_FLIGHT = 3;

/** Connections to the store at once (streamed downloads hold one each while their clients read). */
const MAX_STORE_CONNECTIONS = 256;

export interface S3Settings {
  endpoint: string | null;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string | null;
  bucket: string;
  /** Longest silence of the store on one request before it is given up (ms). */
  timeoutMs?: number;
}

/**
 * One client per installation. Path-style URLs (`{endpoint}/{bucket}/{key}`) suit S3-compatible
 * servers without wildcard DNS; checksums only where S3 requires them, since RADOS Gateway answers
 * 411 to the chunked, trailer-checksummed PUTs the SDK sends by default.
 */
export function s3Client(s: S3Settings): S3Client {
  const client = new S3Client({
    region: s.region,
    ...(s.endpoint ? { endpoint: s.endpoint } : {}),
    forcePathStyle: true,
    credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey, ...(s.sessionToken ? { sessionToken: s.sessionToken } : {}) },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // A store that does not answer is unavailable, not a request that hangs: a connection, or an
    // answer that does not begin within the timeout (the request's body sent, the response's
    // headers received; a download streaming to a slow client afterwards is not cut), is tried
    // once more, then the request answers 503. Every download that streams through us holds a
    // connection to the store while its client reads: more than the SDK's default of 50 at once.
    requestHandler: {
      connectionTimeout: s.timeoutMs ?? 10_000,
      requestTimeout: s.timeoutMs ?? 10_000,
      throwOnRequestTimeout: true,
      httpAgent: new HttpAgent({ keepAlive: true, maxSockets: MAX_STORE_CONNECTIONS }),
      httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: MAX_STORE_CONNECTIONS }),
    },
    maxAttempts: 2,
  });
  // The signature covers the request but not a hash of its body: hashing every part and chunk
  // costs a pass over the bytes on the way out (the largest cost of a worker's chunk write),
  // and S3 accepts UNSIGNED-PAYLOAD in SigV4. TLS (https endpoints) protects the bytes in transit.
  client.middlewareStack.add(
    (next) => async (args) => {
      const req = args.request as { headers?: Record<string, string> };
      if (req.headers) req.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
      return next(args);
    },
    { step: 'build', name: 'xeoUnsignedPayload' },
  );
  // Every request to the store counted with its time (core/metrics.ts): a 404 is an answer, not an error.
  client.middlewareStack.add(
    (next) => async (args) => {
      const t0 = performance.now();
      try {
        const out = await next(args);
        countCall('object_store', true, performance.now() - t0);
        return out;
      } catch (e) {
        countCall('object_store', isNotFound(e) || (statusOf(e) ?? 500) < 500, performance.now() - t0);
        throw e;
      }
    },
    { step: 'initialize', name: 'xeoMetrics' },
  );
  return client;
}

/** The store cannot be reached: 503 with Retry-After; the reason goes to the log, not the client. */
export class BlobStoreUnavailable extends ServerUnavailable {
  constructor(reason: string) {
    super('file store', reason);
  }
}

interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

const statusOf = (e: unknown) => (e as SdkError).$metadata?.httpStatusCode;
const isNotFound = (e: unknown) => statusOf(e) === 404 || (e as SdkError).name === 'NotFound' || (e as SdkError).name === 'NoSuchKey';

/** An SDK failure as ours: unreachable or failing servers are BlobStoreUnavailable; anything else stays as it is. */
function translate(e: unknown): unknown {
  if (e instanceof ApiError) return e;
  const err0 = e as SdkError;
  const status = statusOf(e);
  // No HTTP status: the request did not get through (refused, reset, timed out).
  const network = status === undefined && (err0.$metadata !== undefined || /^E[A-Z]+$/.test(err0.code ?? '') || /Timeout|Abort/.test(err0.name ?? ''));
  if (network || (status !== undefined && status >= 500)) {
    const err = e as SdkError;
    return new BlobStoreUnavailable(`${err.name ?? 'Error'}${err.code ? ` ${err.code}` : ''}: ${err.message ?? String(e)}`);
  }
  return e;
}

const enoent = (key: string) => Object.assign(new Error(`${key} does not exist`), { code: 'ENOENT' });

export class S3BlobStore implements BlobStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    /** Prefix of every key of this store, ending in '/' (e.g. 'files/'). */
    private readonly prefix: string,
    /** Keys per listing page (S3 answers at most 1000). */
    private readonly pageSize = 1000,
    /**
     * Keys are made by Xeo alone (job results: `<job>/<asset>`, `<job>/run-N/chunk-i`), never a
     * file where another key has a folder: a write skips the checks of its path, and its answer
     * needs no HEAD afterwards.
     */
    private readonly ownKeys = false,
  ) {}

  /** Fails when the bucket does not exist or refuses us (a configuration error); an unreachable store only logs. */
  async init(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (e) {
      const status = statusOf(e);
      if (status === 404) throw new Error(`the S3 bucket ${this.bucket} does not exist`, { cause: e });
      if (status === 403 || status === 401) throw new Error(`the S3 bucket ${this.bucket} refuses these credentials`, { cause: e });
      translate(e); // logs the outage; requests answer 503 until the store is back
    }
  }

  /** One request to the bucket (readiness): resolves when the store answers and lets us in. */
  async probe(signal?: AbortSignal): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: signal });
    } catch (e) {
      const status = statusOf(e);
      if (status !== undefined) throw new Error(`the bucket ${this.bucket} answered HTTP ${status}`, { cause: e });
      throw new Error(`the store did not answer (${(e as SdkError).name ?? 'Error'})`, { cause: e });
    }
  }

  /** The object key of a store key; refuses segments that would mean something else on a disk. */
  private objectKey(key: string): string {
    if (key.split('/').some((s) => s === '' || s === '.' || s === '..')) throw new UnsafePathError(key);
    const k = this.prefix + key;
    // S3 keys end at 1024 bytes; the local disk says the same of long paths with this code.
    if (Buffer.byteLength(k) > 1024) throw Object.assign(new Error(`${key} is too long for an object key`), { code: 'ENAMETOOLONG' });
    return k;
  }

  private async send<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw translate(e);
    }
  }

  /** HEAD of an object: size, modified, ETag; null when there is none. */
  private async head(objectKey: string): Promise<{ size: number; modified: Date; etag: string } | null> {
    try {
      const r = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: objectKey }));
      return { size: r.ContentLength ?? 0, modified: r.LastModified ?? new Date(), etag: r.ETag ?? '' };
    } catch (e) {
      if (isNotFound(e)) return null;
      throw translate(e);
    }
  }

  async stat(key: string): Promise<BlobInfo | 'folder' | null> {
    const k = this.objectKey(key);
    const h = await this.head(k);
    if (h) return { key, size: h.size, modified: h.modified };
    const r = await this.send(() => this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${k}/`, MaxKeys: 1 })));
    return (r.KeyCount ?? r.Contents?.length ?? 0) > 0 ? 'folder' : null;
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    const base = prefix === '' ? this.prefix : `${this.objectKey(prefix)}/`;
    const out: BlobInfo[] = [];
    let token: string | undefined;
    do {
      const r = await this.send(() => this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: base, ContinuationToken: token, MaxKeys: this.pageSize })));
      for (const o of r.Contents ?? []) {
        if (o.Key) out.push({ key: o.Key.slice(this.prefix.length), size: o.Size ?? 0, modified: o.LastModified ?? new Date(0) });
      }
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
    // S3 orders by UTF-8 bytes, the local store (and paging) by JavaScript string order.
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async read(key: string, range?: { start: number; end: number }): Promise<Readable> {
    const k = this.objectKey(key);
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: k, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }));
      return r.Body as Readable;
    } catch (e) {
      if (isNotFound(e)) throw enoent(key);
      throw translate(e);
    }
  }

  async write(key: string, source: AsyncIterable<Buffer>, guard?: (bytesSoFar: number) => void | Promise<void>): Promise<BlobInfo> {
    const k = this.objectKey(key);
    // A file on the path would make the key a file and a folder at once, which the local store cannot be.
    if (!this.ownKeys) await this.refuseFileOnPath(key);
    return this.upload(key, k, source, guard);
  }

  private async refuseFileOnPath(key: string): Promise<void> {
    const segs = key.split('/');
    // The first segment is the owner's folder (a user or a job), never a file.
    const ancestors = segs.slice(1, -1).map((_, i) => segs.slice(0, i + 2).join('/'));
    const heads = await Promise.all(ancestors.map((a) => this.head(this.objectKey(a))));
    if (heads.some((h) => h !== null)) throw Object.assign(new Error(`a folder on the path of ${key} is a file`), { code: 'ENOTDIR' });
  }

  /** Streams `source` to `k`: one PUT when it fits a part, else a multipart upload (aborted on any failure). */
  private async upload(key: string, k: string, source: AsyncIterable<Buffer>, guard?: (bytesSoFar: number) => void | Promise<void>, partsInFlight = PARTS_IN_FLIGHT): Promise<BlobInfo> {
    let uploadId: string | undefined;
    const parts: { PartNumber: number; ETag: string }[] = [];
    const inFlight = new Set<Promise<void>>();
    // Set by the parts' handlers (the compiler cannot see that, hence the widened type).
    let failure = null as Error | null;
    let buffered: Buffer[] = [];
    let bufferedBytes = 0;
    let size = 0;
    let nextPart = 1;
    const sendPart = async (body: Buffer): Promise<void> => {
      uploadId ??= (await this.send(() => this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: k })))).UploadId;
      const PartNumber = nextPart++;
      const p = this.send(() => this.client.send(new UploadPartCommand({ Bucket: this.bucket, Key: k, UploadId: uploadId, PartNumber, Body: body, ContentLength: body.length }))).then(
        (r) => {
          parts.push({ PartNumber, ETag: r.ETag ?? '' });
        },
        (e: unknown) => {
          failure ??= e instanceof Error ? e : new Error(String(e));
        },
      );
      const tracked = p.finally(() => inFlight.delete(tracked));
      inFlight.add(tracked);
      // Wait for room: at most `partsInFlight` parts upload while the next one fills.
      while (inFlight.size > partsInFlight) await Promise.race(inFlight);
      if (failure) throw failure;
    };
    try {
      for await (const chunk of source) {
        size += chunk.length;
        // A guard that must ask someone (a quota shared by several nodes) holds the next chunk until it answers.
        const judged = guard?.(size);
        if (judged) await judged;
        buffered.push(chunk);
        bufferedBytes += chunk.length;
        if (bufferedBytes >= PART_BYTES) {
          const all = Buffer.concat(buffered, bufferedBytes);
          buffered = [all.subarray(PART_BYTES)];
          bufferedBytes = all.length - PART_BYTES;
          await sendPart(all.subarray(0, PART_BYTES));
        }
      }
      // One piece (a job's chunk, say) goes as it is: no copy.
      const rest = buffered.length === 1 ? buffered[0] : Buffer.concat(buffered, bufferedBytes);
      if (uploadId === undefined) {
        await this.send(() => this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: k, Body: rest, ContentLength: rest.length })));
      } else {
        if (rest.length > 0) await sendPart(rest);
        await Promise.all(inFlight);
        if (failure) throw failure;
        parts.sort((a, b) => a.PartNumber - b.PartNumber);
        await this.send(() => this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: k, UploadId: uploadId, MultipartUpload: { Parts: parts } })));
      }
    } catch (e) {
      await Promise.all(inFlight);
      if (uploadId !== undefined) {
        const id = uploadId;
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: k, UploadId: id })).catch((err: unknown) => {
          log.warn(`could not abort the multipart upload of ${k} (the bucket's lifecycle rule for incomplete uploads removes it): ${(err as Error).message}`);
        });
      }
      throw e; // the store's failures were translated where they happened; the guard's stay as they are
    }
    if (this.ownKeys) return { key, size, modified: new Date() };
    // CompleteMultipartUpload on RADOS Gateway answers an empty ETag, and no size: a HEAD tells both
    // (and the modification time a listing will show, for a user's file).
    const h = await this.head(k);
    return { key, size: h?.size ?? size, modified: h?.modified ?? new Date() };
  }

  async delete(key: string): Promise<boolean> {
    const k = this.objectKey(key);
    if (!(await this.head(k))) return false;
    // Folders are key prefixes: nothing to prune.
    await this.send(() => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: k })));
    return true;
  }

  async adopt(key: string, file: string): Promise<BlobInfo> {
    const info = await this.upload(key, this.objectKey(key), createReadStream(file, { highWaterMark: 1024 * 1024 }), undefined, FILE_PARTS_IN_FLIGHT);
    // the blob is stored; the local file that stays behind is a temporary one
    await unlink(file).catch(() => {});
    return info;
  }

  async deleteTree(prefix: string): Promise<void> {
    const keys = (await this.list(prefix)).map((b) => this.objectKey(b.key));
    // One DELETE per object, eight at a time: a job's results are a few files, and plain DELETEs work on every S3-compatible server.
    for (let i = 0; i < keys.length; i += 8) {
      await Promise.all(keys.slice(i, i + 8).map((Key) => this.send(() => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key })))));
    }
  }
}
