// Byte storage for user files and job results behind a small interface, with the local disk as the
// embedded implementation; store/s3-blobs.ts implements the same methods on an S3-compatible store.
// Keys are `/`-separated relative paths whose segments the caller has validated.
import { createReadStream, createWriteStream, openSync, constants as fsc } from 'node:fs';
import type { Stats } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, rm, rmdir, unlink } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

export interface BlobInfo {
  key: string;
  size: number;
  modified: Date;
}

export interface BlobStore {
  /** A file, 'folder' for a key that is a prefix of other keys, or null. */
  stat(key: string): Promise<BlobInfo | 'folder' | null>;
  /** Every file under `prefix` (recursively; '' for the whole store), sorted by key. */
  list(prefix: string): Promise<BlobInfo[]>;
  /** The bytes of a file (inclusive range); fails with code ENOENT when it is gone. Async: a remote store answers first. */
  read(key: string, range?: { start: number; end: number }): Promise<Readable>;
  /** Writes atomically: readers see the old bytes or all new ones, never a part. */
  write(key: string, source: AsyncIterable<Buffer>, guard?: (bytesSoFar: number) => void | Promise<void>): Promise<BlobInfo>;
  /** Deletes a file and the folders it leaves empty (up to `stopAt`). */
  delete(key: string, stopAt: string): Promise<boolean>;
  /** Moves a finished local file (e.g. a job's COG) into the store under `key`, atomically. */
  adopt(key: string, file: string): Promise<BlobInfo>;
  /** Deletes every file under `prefix`. */
  deleteTree(prefix: string): Promise<void>;
}

export class UnsafePathError extends Error {}

export class LocalBlobStore implements BlobStore {
  constructor(
    private readonly root: string,
    private readonly tmpDir: string,
  ) {}

  async init(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    // Temp files of writes cut short by a crash are never visible; clear them at start.
    await rm(this.tmpDir, { recursive: true, force: true });
    await mkdir(this.tmpDir, { recursive: true });
  }

  /** Absolute path of a key, refusing anything that would leave the root or pass a symlink. */
  private async resolve(key: string): Promise<string> {
    const full = path.resolve(this.root, key);
    if (!full.startsWith(this.root + path.sep)) throw new UnsafePathError(key);
    let p = this.root;
    for (const seg of key.split('/')) {
      p = path.join(p, seg);
      // a part of the path that cannot be read is treated as missing: nothing there to follow
      const st = await lstat(p).catch(() => null);
      if (!st) break;
      if (st.isSymbolicLink()) throw new UnsafePathError(key);
    }
    return full;
  }

  async stat(key: string): Promise<BlobInfo | 'folder' | null> {
    // no such blob (or one that cannot be read): the caller answers not found
    const st = await lstat(await this.resolve(key)).catch(() => null);
    if (!st) return null;
    if (st.isDirectory()) return 'folder';
    if (!st.isFile()) return null;
    return { key, size: st.size, modified: st.mtime };
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    const out: BlobInfo[] = [];
    const base = prefix === '' ? this.root : await this.resolve(prefix);
    const walk = async (dir: string, rel: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        const childRel = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) await walk(path.join(dir, e.name), childRel);
        else if (e.isFile()) {
          // a file removed while the folder is listed is simply not listed
          const st = await lstat(path.join(dir, e.name)).catch(() => null);
          if (st) out.push({ key: childRel, size: st.size, modified: st.mtime });
        }
      }
    };
    await walk(base, prefix);
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async read(key: string, range?: { start: number; end: number }): Promise<Readable> {
    const full = path.resolve(this.root, key);
    if (!full.startsWith(this.root + path.sep)) throw new UnsafePathError(key);
    // O_NOFOLLOW: even a symlink swapped in after stat() is not followed.
    const fd = openSync(full, fsc.O_RDONLY | fsc.O_NOFOLLOW);
    return createReadStream('', { fd, start: range?.start, end: range?.end, highWaterMark: 256 * 1024 });
  }

  async write(key: string, source: AsyncIterable<Buffer>, guard?: (bytesSoFar: number) => void | Promise<void>): Promise<BlobInfo> {
    const full = await this.resolve(key);
    const tmp = path.join(this.tmpDir, randomBytes(12).toString('hex'));
    const out = createWriteStream(tmp, { flags: 'wx' });
    // Without a listener, an error after destroy() (a write still in flight) would crash the process.
    out.on('error', () => {});
    let size = 0;
    try {
      for await (const chunk of source) {
        size += chunk.length;
        // A guard that must ask someone (a quota shared by several nodes) holds the next chunk until it answers.
        const judged = guard?.(size);
        if (judged) await judged;
        if (!out.write(chunk)) await once(out, 'drain');
      }
      out.end();
      await once(out, 'finish');
      const st = await this.place(key, full, tmp);
      return { key, size: st.size, modified: st.mtime };
    } catch (e) {
      // Wait for the stream to close: one still opening would create the temp file after the unlink.
      out.destroy();
      // The write failed already and that error is rethrown: the close and the removal are best effort.
      if (!out.closed) await once(out, 'close').catch(() => {}); // a stream that errors on close is closed all the same
      await unlink(tmp).catch(() => {}); // a temporary file never made, or one left behind, is nobody's blob
      throw e;
    }
  }

  /**
   * Makes a finished file durable and moves it to `full`, making its folders. A concurrent delete
   * may prune those folders at any moment (they were empty): then they are made again. Returns the
   * file's stat from before the move, as a delete may also take the file itself right after it.
   */
  private async place(key: string, full: string, file: string): Promise<Stats> {
    const fh = await open(file, 'r');
    let st: Stats;
    try {
      await fh.sync();
      st = await fh.stat();
    } finally {
      await fh.close();
    }
    for (let attempt = 1; ; attempt++) {
      try {
        await mkdir(path.dirname(full), { recursive: true });
        await this.resolve(key); // the folders created just now must still be ours
        await rename(file, full);
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === 5) throw e;
      }
    }
    await fsyncDir(path.dirname(full));
    return st;
  }

  async delete(key: string, stopAt: string): Promise<boolean> {
    const full = await this.resolve(key);
    try {
      await unlink(full);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw e;
    }
    const stop = path.resolve(this.root, stopAt);
    for (let dir = path.dirname(full); dir.startsWith(stop + path.sep); dir = path.dirname(dir)) {
      try {
        await rmdir(dir);
      } catch {
        break; // not empty
      }
    }
    return true;
  }

  async adopt(key: string, file: string): Promise<BlobInfo> {
    const full = await this.resolve(key);
    const st = await this.place(key, full, file);
    return { key, size: st.size, modified: st.mtime };
  }

  async deleteTree(prefix: string): Promise<void> {
    await rm(await this.resolve(prefix), { recursive: true, force: true });
  }
}

async function fsyncDir(dir: string): Promise<void> {
  // A folder a concurrent delete pruned (with our file in it gone too) has nothing left to sync.
  const fh = await open(dir, 'r').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return null;
    throw e;
  });
  if (!fh) return;
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
