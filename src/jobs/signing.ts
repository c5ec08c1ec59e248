// Signed result links: an HMAC-SHA256 over the job id, the asset (or the results document) and the
// expiry, with a secret generated once and kept in the data dir. Whoever holds a link may download
// that one file until it expires, without a token; changing any part breaks the signature.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export class LinkSigner {
  private constructor(private readonly key: Buffer) {}

  /** The data dir's signing secret, created on first use (readable by the owner only). */
  static open(dataDir: string): LinkSigner {
    const file = path.join(dataDir, 'result-links.key');
    try {
      return new LinkSigner(Buffer.from(readFileSync(file, 'utf8').trim(), 'hex'));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    try {
      writeFileSync(file, randomBytes(32).toString('hex'), { flag: 'wx', mode: 0o600 });
    } catch (e) {
      // Another process of the same data dir made it first: use theirs.
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    return new LinkSigner(Buffer.from(readFileSync(file, 'utf8').trim(), 'hex'));
  }

  /** `asset` null signs the results document itself. */
  sign(jobId: string, asset: string | null, expires: number): string {
    return createHmac('sha256', this.key).update(`xeo-result-link\n${jobId}\n${asset ?? ''}\n${expires}`).digest('base64url');
  }

  verify(jobId: string, asset: string | null, expires: number, signature: string): boolean {
    const want = Buffer.from(this.sign(jobId, asset, expires));
    const got = Buffer.from(signature);
    return got.length === want.length && timingSafeEqual(got, want);
  }
}
