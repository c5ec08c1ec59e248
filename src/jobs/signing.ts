// Signed result links: an HMAC-SHA256 over the job id, the asset (or the results document) and the
// expiry, with a secret made once per installation and kept with the records, so every node signs
// and verifies alike. Whoever holds a link may download that one file until it expires, without a
// token; changing any part breaks the signature.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { SecretRepo } from '../store/types.js';

export class LinkSigner {
  private constructor(private readonly key: Buffer) {}

  /**
   * The installation's signing secret. A data dir from before secrets were records keeps its key
   * (DATA_DIR/result-links.key), so the links it handed out stay valid.
   */
  static async open(secrets: SecretRepo, dataDir: string): Promise<LinkSigner> {
    const earlier = await readFile(path.join(dataDir, 'result-links.key'), 'utf8').then(
      (t) => t.trim(),
      () => null,
    );
    const hex = await secrets.getOrCreate('result-links', () => earlier ?? randomBytes(32).toString('hex'));
    return new LinkSigner(Buffer.from(hex, 'hex'));
  }

  /**
   * `asset` null signs the results document itself; `variant` what else the link fixes (which form
   * of the document, partial results), so that it cannot be changed either.
   */
  sign(jobId: string, asset: string | null, expires: number, variant = ''): string {
    return createHmac('sha256', this.key)
      .update(`xeo-result-link\n${jobId}\n${asset ?? ''}\n${expires}${variant ? `\n${variant}` : ''}`)
      .digest('base64url');
  }

  verify(jobId: string, asset: string | null, expires: number, signature: string, variant = ''): boolean {
    const want = Buffer.from(this.sign(jobId, asset, expires, variant));
    const got = Buffer.from(signature);
    return got.length === want.length && timingSafeEqual(got, want);
  }
}
