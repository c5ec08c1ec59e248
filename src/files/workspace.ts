// Each user's file workspace: a folder in the blob store named after the user id, a quota, and
// uploads that count against it while they stream (including other uploads still in flight).
import type { Readable } from 'node:stream';
import type { BlobInfo, BlobStore } from '../store/blobs.js';
import { UnsafePathError } from '../store/blobs.js';
import { ApiError } from '../core/errors.js';

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
  /** Bytes of uploads in progress, per user. */
  private readonly inFlight = new Map<string, number>();

  constructor(
    private readonly blobs: BlobStore,
    private readonly maxUploadBytes: number,
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

  async upload(userId: string, path: string, quota: number, body: AsyncIterable<Buffer>, declaredSize: number | null): Promise<FileRecord> {
    const key = `${userId}/${path}`;
    const existing = await this.guard(path, () => this.blobs.stat(key));
    if (existing === 'folder') throw new ApiError('FolderOperationUnsupported');
    const replaced = existing ? existing.size : 0;
    const used = (await this.usage(userId)) - replaced + (this.inFlight.get(userId) ?? 0);
    const room = Math.min(quota - used, this.maxUploadBytes);
    const tooBig = (n: number): never => {
      throw n > this.maxUploadBytes ? new ApiError('FileSizeExceeded', { size: this.maxUploadBytes }) : new ApiError('StorageQuotaExceeded');
    };
    if (declaredSize !== null && declaredSize > room) tooBig(declaredSize);
    let counted = 0;
    const count = (n: number) => {
      if (n > room) tooBig(n);
      this.inFlight.set(userId, (this.inFlight.get(userId) ?? 0) + n - counted);
      counted = n;
    };
    try {
      const info = await this.guard(path, () => this.blobs.write(key, body, count));
      return toRecord(userId, info);
    } finally {
      const left = (this.inFlight.get(userId) ?? 0) - counted;
      if (left > 0) this.inFlight.set(userId, left);
      else this.inFlight.delete(userId);
    }
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
        console.error(`[xeo] storage failure on ${path}: ${(e as Error).message}`);
        throw new ApiError('StorageFailure');
      }
      throw e;
    }
  }
}
