// Where user files and job results live, from the configuration: the local disk (the embedded
// default) or the bucket of XEO_S3_BUCKET, shared by every API node and worker.
import path from 'node:path';
import { mkdir, rm } from 'node:fs/promises';
import { ConfigError, type Config } from '../core/config.js';
import { LocalBlobStore, type BlobStore } from './blobs.js';

/**
 * User files and job results: on the local disk (DATA_DIR/files/<user>/..., DATA_DIR/jobs/<job>/...)
 * or, with XEO_S3_BUCKET, in that bucket under files/ and jobs/. Runs write under DATA_DIR/jobs-tmp
 * either way (a COG is finished on disk, then adopted); it is cleared at each start.
 */
export async function openBlobStore(config: Config, use: 'files' | 'results'): Promise<BlobStore> {
  if (!config.s3Bucket) {
    const local =
      use === 'files' ? new LocalBlobStore(path.join(config.dataDir, 'files'), path.join(config.dataDir, 'tmp')) : new LocalBlobStore(path.join(config.dataDir, 'jobs'), path.join(config.dataDir, 'jobs-tmp'));
    await local.init();
    return local;
  }
  // The S3 client's modules are loaded only by the nodes that use a bucket.
  const { S3BlobStore, s3Client } = await import('./s3-blobs.js');
  const s3 = config.stac.signers.s3;
  const client = s3Client({ ...s3, accessKeyId: s3.accessKeyId!, secretAccessKey: s3.secretAccessKey!, bucket: config.s3Bucket, timeoutMs: config.s3TimeoutMs });
  // Result keys are Xeo's own; user files follow the user's paths.
  const store = new S3BlobStore(client, config.s3Bucket, use === 'files' ? 'files/' : 'jobs/', 1000, use === 'results');
  try {
    await store.init();
  } catch (e) {
    throw new ConfigError(`XEO_S3_BUCKET: ${(e as Error).message}`);
  }
  if (use === 'results') {
    const runs = path.join(config.dataDir, 'jobs-tmp');
    await rm(runs, { recursive: true, force: true });
    await mkdir(runs, { recursive: true });
  }
  return store;
}
