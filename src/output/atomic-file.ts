// Files that appear only complete: written under a temporary name in the target's directory,
// flushed to disk, then renamed over the target (rename is atomic within one file system).
import { randomBytes } from 'node:crypto';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/** A fresh hidden name for a temporary file about `file`, in `dir` (default: next to `file`). */
export function tempPathFor(file: string, suffix: string, dir = path.dirname(file)): string {
  return path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.${suffix}`);
}

/** Writes all buffers from `position` on, coping with partial writes and iovec limits; returns the end. */
export async function writeAll(fh: FileHandle, parts: readonly Buffer[], position: number): Promise<number> {
  const BATCH = 512; // well under IOV_MAX (1024 on Linux)
  for (let i = 0; i < parts.length;) {
    let batch = parts.slice(i, i + BATCH);
    i += batch.length;
    let left = batch.reduce((s, b) => s + b.length, 0);
    while (left > 0) {
      const { bytesWritten } = await fh.writev(batch, position);
      if (bytesWritten === 0) throw new Error('the file system accepted no bytes');
      position += bytesWritten;
      left -= bytesWritten;
      batch = dropBytes(batch, bytesWritten);
    }
  }
  return position;
}

function dropBytes(bufs: Buffer[], n: number): Buffer[] {
  let k = 0;
  while (k < bufs.length && n >= bufs[k].length) n -= bufs[k++].length;
  const rest = bufs.slice(k);
  if (n > 0 && rest.length > 0) rest[0] = rest[0].subarray(n);
  return rest;
}

/**
 * Creates a temporary file next to `file`, lets `fill` write it, then flushes and renames it over
 * `file`. On any failure the temporary file is removed and the target left as it was.
 */
export async function writeFileAtomic(file: string, fill: (fh: FileHandle) => Promise<void>): Promise<void> {
  const tmp = tempPathFor(file, 'tmp');
  const fh = await open(tmp, 'wx');
  let closed = false;
  try {
    await fill(fh);
    await fh.sync();
    closed = true;
    await fh.close();
    await rename(tmp, file);
  } catch (err) {
    // The write failed already and that error is rethrown: closing and removing the temporary file are best effort.
    if (!closed) await fh.close().catch(() => undefined); // a handle that fails to close is gone all the same
    await unlink(tmp).catch(() => undefined); // a temporary file never made, or one left behind, is nobody's result
    throw err;
  }
  await syncDir(path.dirname(file));
}

/** Makes a rename durable; best effort, as not every file system lets a directory be fsynced. */
async function syncDir(dir: string): Promise<void> {
  try {
    const d = await open(dir, 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  } catch {
    /* ignore */
  }
}
