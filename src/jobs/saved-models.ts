// The model a finished batch job saved (save_ml_model), read for load_ml_model on an engine thread
// through the file bridge: only the asking user's own jobs (another user's job is as unknown as a
// job that does not exist), only a job that saved exactly one model.
import { ApiError } from '../core/errors.js';
import type { BlobStore } from '../store/blobs.js';
import type { Store } from '../store/types.js';

/** The asset role of a saved model file (src/ml/model-item.ts writes it). */
const MODEL_ROLE = 'ml-model:checkpoint';

const invalid = (reason: string) => new ApiError('ProcessParameterInvalid', { process: 'load_ml_model', parameter: 'id', reason });

export function jobModelReader(store: Pick<Store, 'jobs' | 'jobResults'>, results: BlobStore): (userId: string, jobId: string, maxBytes: number) => Promise<Uint8Array> {
  return async (userId, jobId, maxBytes) => {
    const job = await store.jobs.get(userId, jobId);
    if (!job) throw new ApiError('JobNotFound', { identifier: jobId });
    const res = await store.jobResults.get(jobId);
    if (!res) throw invalid(`the batch job '${jobId}' has no results (its status is ${job.status}); a model is loaded from a finished job`);
    const models = Object.values(res.assets).filter((a) => a.roles.includes(MODEL_ROLE));
    if (models.length !== 1) {
      throw invalid(models.length === 0 ? `the batch job '${jobId}' saved no model (save_ml_model)` : `the batch job '${jobId}' saved ${models.length} models; load one by the URL of its STAC Item`);
    }
    const asset = models[0];
    if (asset.bytes > maxBytes) throw invalid(`the model of job '${jobId}' has ${asset.bytes} bytes; models are read up to ${maxBytes} bytes here (XEO_ML_MODEL_MAX_BYTES)`);
    const stream = await results.read(asset.key);
    const parts: Buffer[] = [];
    for await (const chunk of stream) parts.push(chunk as Buffer);
    return new Uint8Array(Buffer.concat(parts));
  };
}
