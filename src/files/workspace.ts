// Each user's file workspace: a folder in the blob store named after the user id, a quota, and
// uploads that count against it while they stream, together with the user's other uploads in
// progress on any node: each reserves its bytes in the store's upload ledger before writing them.
import { log } from '../core/log.js';
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { BlobInfo, BlobStore } from '../store/blobs.js';
import { UnsafePathError } from '../store/blobs.js';
import { ApiError } from '../core/errors.js';
import type { UploadLedger } from '../store/upload-ledger.js';

/**
 * An upload reserves in steps of this many bytes (one ledger write per step on a database server),
 * so it holds at most one step more than it wrote; near the quota it holds exactly what it wrote.
 */
const RESERVE_STEP = 1024 * 1024;

export interface FileRecord {
  path: string;
  size: number;
  modified: string;
}

const toRecord = (prefix: string, b: BlobInfo): FileRecord => ({
  path: b.key.slice(prefix.length + 1),
  size: b.size,
  modified: b.modified.toISOString(),
});

/** What the API asks of user files. */
export type Files = Pick<Workspaces, 'list' | 'usage' | 'open' | 'upload' | 'remove'>;

export class Workspaces {
  constructor(
    private readonly blobs: BlobStore,
    private readonly maxUploadBytes: number,
    /** Bytes of uploads in progress, per user, on every node. */
    private readonly uploads: UploadLedger,
  ) {}

  async list(userId: string): Promise<FileRecord[]> {
    return (await this.blobs.list(userId)).map((b) => toRecord(userId, b));
  }

  async usage(userId: string): Promise<number> {
    return (await this.blobs.list(userId)).reduce((sum, b) => sum + b.size, 0);
  }

  /** A file's size and date, then (`range` picks bytes from the size) its bytes. */
  async open(
    userId: string,
    path: string,
    range?: (size: number) => { start: number; end: number } | null,
  ): Promise<{ stream: Readable; size: number; modified: Date; range: { start: number; end: number } | null }> {
    const st = await this.guard(path, () => this.blobs.stat(`${userId}/${path}`));
    if (st === 'folder') throw new ApiError('FileOperationUnsupported');
    if (!st) throw new ApiError('FileNotFound', { file: path });
    const r = range?.(st.size) ?? null;
    const stream = await this.guard(path, () => this.blobs.read(st.key, r ?? undefined)).catch((e: unknown) => {
      // Deleted between the two steps.
      throw (e as NodeJS.ErrnoException).code === 'ENOENT' ? new ApiError('FileNotFound', { file: path }) : e;
    });
    return { stream, size: st.size, modified: st.modified, range: r };
  }

  /** A file's size and date, or null when there is none (a folder counts as none). */
  async stat(userId: string, path: string): Promise<{ size: number; modified: string } | null> {
    const st = await this.guard(path, () => this.blobs.stat(`${userId}/${path}`));
    return st && st !== 'folder' ? { size: st.size, modified: st.modified.toISOString() } : null;
  }

  /** A whole file's bytes; one larger than `maxBytes` is refused before reading. */
  async readAll(userId: string, path: string, maxBytes: number): Promise<Uint8Array> {
    const { stream, size } = await this.open(userId, path);
    if (size > maxBytes) {
      stream.destroy();
      throw new ApiError('FileSizeExceeded', { size: maxBytes });
    }
    const out = new Uint8Array(size);
    let at = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (at + chunk.length > size) {
        stream.destroy();
        throw new ApiError('FileContentInvalid');
      }
      out.set(chunk, at);
      at += chunk.length;
    }
    return at === size ? out : out.subarray(0, at);
  }

  async upload(userId: string, path: string, quota: number, body: AsyncIterable<Buffer>, declaredSize: number | null): Promise<FileRecord> {
    const key = `${userId}/${path}`;
    const existing = await this.guard(path, () => this.blobs.stat(key));
    if (existing === 'folder') throw new ApiError('FolderOperationUnsupported');
    const replaced = existing ? existing.size : 0;
    const stored = (await this.usage(userId)) - replaced;
    const tooBig = (n: number): never => {
      throw n > this.maxUploadBytes ? new ApiError('FileSizeExceeded', { size: this.maxUploadBytes }) : new ApiError('StorageQuotaExceeded');
    };
    const id = randomUUID();
    let reserved = 0;
    /** What the user's uploads held at this one's last reservation. */
    let held = 0;
    /** Holds `n` bytes in all (the bytes written so far, or the declared size) before they are written. */
    /** Answers at once while the bytes are within what this upload holds already; asks the ledger beyond. */
    const hold = (n: number, step: number): void | Promise<void> => {
      if (n > this.maxUploadBytes) tooBig(n);
      if (n <= reserved) return;
      return (async () => {
        // Near the quota, just the bytes: a step there could refuse another upload for bytes never written.
        const more = stored + held + step > quota ? n - reserved : Math.max(step, n - reserved);
        reserved += more;
        held = await this.uploads.reserve(id, userId, more, Date.now());
        if (stored + held <= quota) return;
        if (reserved > n) {
          // The step passed the quota where the bytes themselves may not: hold just those, then judge.
          const back = n - reserved;
          reserved = n;
          held = await this.uploads.reserve(id, userId, back, Date.now());
        }
        if (stored + held > quota) tooBig(n);
      })();
    };
    try {
      if (declaredSize !== null) await hold(declaredSize, 0);
      const info = await this.guard(path, () => this.blobs.write(key, body, (n) => hold(n, RESERVE_STEP)));
      return toRecord(userId, info);
    } finally {
      if (reserved > 0) this.release(id);
    }
  }

  private release(id: string): void {
    this.uploads.release(id).catch((e: unknown) => {
      // The records are away: the reservation stops counting once it is stale.
      log.warn(`an upload's reservation was not released: ${(e as Error).message}`);
    });
  }

  async remove(userId: string, path: string): Promise<void> {
    const st = await this.guard(path, () => this.blobs.stat(`${userId}/${path}`));
    if (st === 'folder') throw new ApiError('FileOperationUnsupported');
    if (!st || !(await this.blobs.delete(`${userId}/${path}`, userId))) throw new ApiError('FileNotFound', { file: path });
  }

  private async guard<T>(path: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof UnsafePathError) throw new ApiError('FilePathInvalid', { reason: 'it leaves your folder' });
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR' || code === 'EEXIST') throw new ApiError('FilePathInvalid', { reason: 'a folder on the path is a file' });
      if (code === 'ENAMETOOLONG') throw new ApiError('FilePathInvalid', { reason: 'it is too long' });
      if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'EIO') {
        log.error(`storage failure on ${path}: ${(e as Error).message}`);
        throw new ApiError('StorageFailure');
      }
      throw e;
    }
  }
}
