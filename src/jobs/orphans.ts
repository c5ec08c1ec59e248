// What a crash, or a result store that could not be reached, leaves behind among job files: the
// files of a job that no longer exists, result files whose record was never written (or was
// deleted), and chunks of a run on workers whose clean-up did not happen. A node sweeps them when
// it starts, with the records deciding. The files of a queued or running job are never touched,
// nor those of a canceled job whose partial result is not recorded yet (it may be being written).
// Only files listed before the records were read are deleted, one by one, so a file written in
// the meantime stays.
import type { BlobStore } from '../store/blobs.js';
import type { Store } from '../store/types.js';

/** Deletes what no record accounts for; answers how many files it deleted. */
export async function sweepJobFiles(store: Store, results: BlobStore): Promise<number> {
  const byJob = new Map<string, string[]>();
  for (const { key } of await results.list('')) {
    const cut = key.indexOf('/');
    if (cut <= 0) continue;
    const jobId = key.slice(0, cut);
    const keys = byJob.get(jobId);
    if (keys) keys.push(key);
    else byJob.set(jobId, [key]);
  }
  let deleted = 0;
  for (const [jobId, keys] of byJob) {
    const job = await store.jobs.byId(jobId);
    if (!job) {
      // No job, no writer: the whole folder goes.
      await results.deleteTree(jobId);
      deleted += keys.length;
      continue;
    }
    if (job.status === 'queued' || job.status === 'running') continue;
    const kept = await store.jobResults.get(jobId);
    if (!kept && job.status === 'canceled') continue;
    const assets = new Set(Object.values(kept?.assets ?? {}).map((a) => a.key));
    for (const key of keys) {
      if (assets.has(key)) continue;
      if (await results.delete(key, jobId)) deleted++;
    }
  }
  return deleted;
}
