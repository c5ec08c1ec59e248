// The files of the models a batch job saved (save_ml_model): per model, the model file in our
// format and the STAC Item (ml-model extension, STAC MLM fields) that describes it; both become
// assets of the job's results, and load_ml_model finds the model file by its role.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isForest } from '../ml/forest.js';
import { contentHash, encodeForest, MODEL_EXTENSION, MODEL_MEDIA_TYPE } from '../ml/model-file.js';
import { MODEL_ROLES, modelItem } from '../ml/model-item.js';
import type { OutputFile } from './outputs.js';

export async function modelOutputs(dir: string, jobId: string, models: { nodeId: string; model: unknown }[]): Promise<OutputFile[]> {
  const out: OutputFile[] = [];
  for (const [i, m] of models.entries()) {
    if (!isForest(m.model)) continue;
    const base = models.length === 1 ? 'ml_model' : `ml_model_${i + 1}`;
    const name = `${base}.${MODEL_EXTENSION}`;
    const bytes = encodeForest(m.model);
    const sha = contentHash(bytes);
    await writeFile(path.join(dir, name), bytes, { flag: 'wx' });
    const item = Buffer.from(JSON.stringify(modelItem(m.model, `${jobId}-${base}`, name, bytes.length, sha), null, 1));
    const itemName = `${base}_metadata.json`;
    await writeFile(path.join(dir, itemName), item, { flag: 'wx' });
    out.push(
      {
        name,
        file: path.join(dir, name),
        type: MODEL_MEDIA_TYPE,
        bytes: bytes.length,
        title: `Random forest (${m.model.kind}, node ${m.nodeId})`,
        roles: MODEL_ROLES,
        fields: { 'file:size': bytes.length, 'file:checksum': `1220${sha}` },
      },
      {
        name: itemName,
        file: path.join(dir, itemName),
        type: 'application/geo+json',
        bytes: item.length,
        title: 'STAC Item of the model (ml-model extension)',
        roles: ['metadata'],
        fields: { 'file:size': item.length },
      },
    );
  }
  return out;
}
