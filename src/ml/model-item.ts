// The STAC Item that describes a saved model: the `ml-model` extension (what openEO's
// save_ml_model and load_ml_model speak) and the fields of the STAC MLM extension that fit a
// random forest (name, architecture, tasks, the band order of the input, the output classes).
import type { Forest } from './forest.js';
import { MODEL_MEDIA_TYPE } from './model-file.js';

export const ML_MODEL_EXTENSION = 'https://stac-extensions.github.io/ml-model/v1.0.0/schema.json';
export const MLM_EXTENSION = 'https://stac-extensions.github.io/mlm/v1.4.0/schema.json';
/** Roles of the asset that holds the model file. */
export const MODEL_ROLES = ['ml-model:checkpoint', 'mlm:model'];

/** The STAC Item of a model saved as `file` (an href relative to the Item) with these bytes and this SHA-256. */
export function modelItem(f: Forest, id: string, file: string, bytes: number, sha256: string): Record<string, unknown> {
  const task = f.kind;
  const p = f.predictors.length;
  return {
    type: 'Feature',
    stac_version: '1.0.0',
    stac_extensions: [ML_MODEL_EXTENSION, MLM_EXTENSION],
    id,
    geometry: null,
    properties: {
      datetime: new Date().toISOString(),
      'ml-model:type': 'ml-model',
      'ml-model:learning_approach': 'supervised',
      'ml-model:prediction_type': task,
      'ml-model:architecture': 'random-forest',
      'ml-model:training-processor-type': 'cpu',
      'ml-model:training-os': 'linux',
      'mlm:name': `random forest ${task} (${f.roots.length} trees)`,
      'mlm:architecture': 'Random Forest',
      'mlm:tasks': [task],
      'mlm:framework': 'xeo',
      'mlm:accelerator': 'amd64',
      'mlm:hyperparameters': { num_trees: f.roots.length, max_variables: f.info.maxVariablesGiven, max_variables_per_split: f.info.maxVariables, seed: f.info.seed },
      'mlm:input': [
        {
          name: 'predictors',
          bands: f.predictors,
          input: { shape: [-1, p], dim_order: ['batch', 'bands'], data_type: 'float32' },
        },
      ],
      'mlm:output': [
        {
          name: task === 'classification' ? 'class' : 'value',
          tasks: [task],
          result: { shape: [-1, 1], dim_order: ['batch', task === 'classification' ? 'class' : 'value'], data_type: 'float32' },
          ...(task === 'classification' ? { 'classification:classes': f.classes.map((c) => ({ value: c, name: String(c) })) } : {}),
        },
      ],
      'xeo:training': {
        samples: f.info.samples,
        skipped: f.info.skipped,
        [task === 'classification' ? 'oob_accuracy' : 'oob_r2']: f.info.oobScore,
        oob_samples: f.info.oobSamples,
        depth: f.info.depth,
      },
    },
    assets: {
      model: {
        href: file,
        type: MODEL_MEDIA_TYPE,
        title: 'Random forest (Xeo model format)',
        roles: MODEL_ROLES,
        'mlm:artifact_type': 'xeo.random-forest',
        'file:size': bytes,
        'file:checksum': `1220${sha256}`,
      },
    },
    links: [],
  };
}
