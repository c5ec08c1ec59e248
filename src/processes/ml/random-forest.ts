// Machine learning with random forests: training on the samples of a vector cube
// (fit_class_random_forest, fit_regr_random_forest), prediction (predict_random_forest,
// predict_probabilities: as the child process of reduce_dimension or apply_dimension they run as
// the forest kernel, see cubes/apply.ts; here on plain arrays and pixel vectors), and models as
// results of batch jobs (save_ml_model, load_ml_model). Everything here runs on engine threads.
import { ApiError } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import type { ProcessArgs, ProcessContext } from '../../core/process.js';
import type { RunContext } from '../../core/run-context.js';
import { cubeOf, isCube } from '../../data/lazy.js';
import { PixelArray } from '../../datacube/pixels.js';
import type { VectorFeatures } from '../../datacube/features.js';
import { featuresFromGeoJson } from '../../datacube/geojson-in.js';
import { vectorLimits } from '../../datacube/vector-limits.js';
import { isForest, leafWidth, predictOne, probabilitiesOne, type Forest, type ForestKind } from '../../ml/forest.js';
import { resolveMaxVariables, trainForest } from '../../ml/train.js';
import { mlLimits } from '../../ml/limits.js';
import { contentHash, ModelFileError } from '../../ml/model-file.js';
import { ModelCache } from '../../ml/model-cache.js';
import { isModelUrl, modelLimits, modelSource } from '../../data/model-source.js';

const invalid = (process: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process, parameter, reason });

/** The model argument as a forest, or a clear error. */
export function forestArg(v: unknown, processId: string, parameter = 'model'): Forest {
  if (!isForest(v)) throw invalid(processId, parameter, 'a random-forest model is expected (the result of fit_class_random_forest, fit_regr_random_forest or load_ml_model)');
  return v;
}

/** Whether two features have the same geometry (type, vertex count and bounds; coordinates within a micro-degree or a millimetre). */
function sameGeometry(a: VectorFeatures, b: VectorFeatures, g: number): boolean {
  const ga = a.geometries;
  const gb = b.geometries;
  if (ga.typeName(g) !== gb.typeName(g) || ga.vertices(g) !== gb.vertices(g)) return false;
  const ba = ga.bboxes();
  const bb = gb.bboxes();
  for (let k = 0; k < 4; k++) {
    const x = ba[g * 4 + k];
    const y = bb[g * 4 + k];
    if (Number.isNaN(x) && Number.isNaN(y)) continue;
    if (!(Math.abs(x - y) <= 1e-6 * Math.max(1, Math.abs(x)))) return false;
  }
  return true;
}

/** The target's features and the label of each (the property `target`, else the cube's one value per geometry). */
async function targetOf(v: unknown, run: RunContext | undefined, processId: string): Promise<{ features: VectorFeatures; labels: unknown[] }> {
  if (isCube(v)) {
    const cube = await cubeOf(v, run, processId, 'target');
    if (!cube.features) throw invalid(processId, 'target', 'a vector data cube (or a GeoJSON FeatureCollection) is expected, not a raster data cube');
    const col = cube.features.properties.column('target');
    if (col) return { features: cube.features, labels: col };
    const n = cube.features.length;
    if (cube.size !== n) throw invalid(processId, 'target', "the vector data cube has no property 'target' and more than one value per geometry");
    return { features: cube.features, labels: Array.from(cube.data, (x) => (Number.isNaN(x) ? null : x)) };
  }
  const features = featuresFromGeoJson(v, { processId, parameter: 'target', limits: vectorLimits(run).geometry });
  return { features, labels: features.properties.column('target') ?? new Array(features.length).fill(null) };
}

interface Samples {
  x: Float32Array;
  y: Float64Array;
  n: number;
  p: number;
  predictors: string[];
  noData: number;
  noLabel: number;
}

/** The training samples: predictor values of each feature (all valid) with its label. */
async function samplesOf(a: ProcessArgs, ctx: ProcessContext): Promise<Samples> {
  const P = ctx.processId;
  const cube = await cubeOf(a.get('predictors'), ctx.run, P, 'predictors');
  const g = cube.dims.findIndex((d) => d.type === 'geometry');
  if (!cube.features || g < 0) throw invalid(P, 'predictors', 'a vector data cube is expected (aggregate_spatial gives one), not a raster data cube');
  const { data, rest: p } = cube.outermost(g);
  const nFeatures = cube.features.length;
  if (p < 1) throw invalid(P, 'predictors', 'the vector data cube holds no predictor values (it has no dimension besides its geometries)');
  // Predictors are named by their labels (e.g. the bands), joined with '/' over several dimensions;
  // a dimension of one label (the single date of a composite) names nothing.
  const others = cube.dims.filter((_, i) => i !== g);
  const naming = others.map((d) => d.labels.length > 1 || d.type === 'bands' || others.length === 1);
  const predictors: string[] = [];
  const walk = (k: number, prefix: string[]) => {
    if (k === others.length) return void predictors.push(prefix.join('/') || String(predictors.length));
    for (const l of others[k].labels) walk(k + 1, naming[k] ? [...prefix, String(l)] : prefix);
  };
  walk(0, []);
  const target = await targetOf(a.get('target'), ctx.run, P);
  if (target.features.length !== nFeatures) {
    throw invalid(P, 'target', `the target has ${target.features.length} features and the predictors ${nFeatures}; they must be the same features in the same order`);
  }
  const t = target.features.epsg === cube.features.epsg ? target.features : target.features.reproject(cube.features.epsg);
  for (let i = 0; i < nFeatures; i++) {
    if (!sameGeometry(cube.features, t, i)) throw invalid(P, 'target', `feature ${i} of the target has another geometry than feature ${i} of the predictors; they must be the same features in the same order`);
  }
  const keep: number[] = [];
  let noData = 0;
  let noLabel = 0;
  for (let i = 0; i < nFeatures; i++) {
    const label = target.labels[i];
    if (label === null || label === undefined) {
      noLabel++;
      continue;
    }
    if (typeof label !== 'number' || !Number.isFinite(label)) throw invalid(P, 'target', `the label of feature ${i} is ${JSON.stringify(label)}; labels (the property 'target') must be numbers`);
    let ok = true;
    for (let f = 0; f < p && ok; f++) ok = !Number.isNaN(data[i * p + f]);
    if (!ok) {
      noData++;
      continue;
    }
    keep.push(i);
  }
  const n = keep.length;
  if (n === 0) throw invalid(P, 'target', `no feature has both a label and valid predictor values (${noLabel} without a label, ${noData} with no-data predictors)`);
  const x = new Float32Array(n * p);
  const y = new Float64Array(n);
  keep.forEach((i, j) => {
    for (let f = 0; f < p; f++) x[f * n + j] = data[i * p + f];
    y[j] = target.labels[i] as number;
  });
  return { x, y, n, p, predictors, noData, noLabel };
}

/** Samples and predictors a training counts at least (see XEO_ML_MAX_WORK). */
const MIN_SAMPLES = 100;
const MIN_PREDICTORS = 10;

async function fit(kind: ForestKind, a: ProcessArgs, ctx: ProcessContext): Promise<Forest> {
  const P = ctx.processId;
  const numTrees = a.get<number>('num_trees');
  const s = await samplesOf(a, ctx);
  const limits = mlLimits(ctx.run);
  // At least 100 samples and 10 predictors count: a tree costs its arrays and bootstrap however few
  // the samples (a handful cannot ask for millions of trees), and its nodes however few the
  // predictors (up to two per sample: a million samples of one predictor cannot ask for gigabytes).
  const work = Math.max(s.n, MIN_SAMPLES) * Math.max(s.p, MIN_PREDICTORS) * numTrees;
  if (work > limits.maxWork) {
    throw new ApiError(
      'ProcessGraphComplexity',
      {},
      `${P}: ${s.n} samples × ${s.p} predictors × ${numTrees} trees is ${work} units of work (counting at least ${MIN_SAMPLES} samples and ${MIN_PREDICTORS} predictors), more than the ${limits.maxWork} accepted here (XEO_ML_MAX_WORK). Use fewer trees (num_trees), fewer samples or fewer predictors.`,
    );
  }
  const given = a.has('max_variables') && a.get('max_variables') !== null ? a.get<number | string>('max_variables') : kind === 'classification' ? 'sqrt' : 'onethird';
  const seedArg = a.get<number | null>('seed');
  const seed = seedArg === null || seedArg === undefined ? Math.floor(Math.random() * 2 ** 32) : seedArg >>> 0;
  const forest = trainForest({
    kind,
    x: s.x,
    n: s.n,
    p: s.p,
    y: s.y,
    predictors: s.predictors,
    numTrees,
    maxVariables: resolveMaxVariables(given, s.p, kind),
    maxVariablesGiven: given,
    seed,
    maxDepth: limits.maxDepth,
    skipped: s.noData + s.noLabel,
  });
  const i = forest.info;
  const score = i.oobScore === null ? 'no sample was out of bag' : kind === 'classification' ? `out-of-bag accuracy ${(i.oobScore * 100).toFixed(2)} %` : `out-of-bag R² ${i.oobScore.toFixed(4)}`;
  ctx.run?.log(
    'info',
    `${P}: ${numTrees} trees on ${s.n} samples × ${s.p} predictors (${i.maxVariables} tried per split${kind === 'classification' ? `, ${forest.classes.length} classes` : ''}, seed ${seed}) in ${i.trainMs} ms; ${score}; the deepest leaf is at depth ${i.depth}. Left out: ${s.noData} features with no-data predictors, ${s.noLabel} without a label.`,
    { oob_score: i.oobScore, oob_samples: i.oobSamples, samples: s.n, skipped_nodata: s.noData, skipped_unlabelled: s.noLabel, seed },
  );
  if (i.depth >= limits.maxDepth) ctx.run?.log('warning', `${P}: trees reached the depth limit of ${limits.maxDepth} (XEO_ML_MAX_DEPTH); their deepest nodes were left unsplit.`);
  return forest;
}

/** The predictor vectors of a reducer's `data` (pixel vectors or one plain array) checked against the model. */
function checkPredictors(f: Forest, count: number, processId: string): void {
  if (count !== f.predictors.length) {
    throw invalid(processId, 'data', `the model was trained on ${f.predictors.length} predictors (${f.predictors.join(', ')}), the data has ${count} values per pixel`);
  }
}

const plainNumber = (v: unknown) => (typeof v === 'number' ? v : NaN);

async function loadModel(id: string, ctx: ProcessContext): Promise<Forest> {
  const run = ctx.run;
  const maxBytes = modelLimits(run).maxBytes;
  const maxDepth = mlLimits(run).maxDepth;
  // A graph evaluated without an engine (no run) decodes its models afresh.
  const models = run?.engine.forests ?? new ModelCache();
  const decoded = (hash: string, bytes: Uint8Array) => {
    try {
      return models.forest(hash, bytes, maxDepth);
    } catch (e) {
      if (e instanceof ModelFileError) throw invalid('load_ml_model', 'id', `${id}: ${e.message}`);
      throw e;
    }
  };
  const byJob = !isModelUrl(id) && /^[\w\-.~]+$/.test(id) && run?.files?.jobModel;
  if (byJob) {
    const key = `${run.files!.owner}\n${id}`;
    const hit = models.jobModelHash(key);
    if (hit) {
      const f = models.peek(hit);
      if (f) return f;
    }
    try {
      const bytes = await run.files!.jobModel!(id, maxBytes);
      const hash = contentHash(bytes);
      models.rememberJobModel(key, hash);
      return decoded(hash, bytes);
    } catch (e) {
      // Not a job of this user: it may still name one of their files.
      if (!(e instanceof ApiError && e.code === 'JobNotFound') || !(await run.files!.stat(id).catch(() => null))) throw e;
    }
  }
  const src = await modelSource(id, { processId: 'load_ml_model', parameter: 'id', run });
  return decoded(src.hash, src.bytes);
}

export const processes: ProcessImpl[] = [
  implement('fit_class_random_forest', (a, ctx) => fit('classification', a, ctx)),
  implement('fit_regr_random_forest', (a, ctx) => fit('regression', a, ctx)),
  implement('predict_random_forest', (a) => {
    const f = forestArg(a.get('model'), 'predict_random_forest');
    const data = a.get('data');
    if (data instanceof PixelArray) {
      checkPredictors(f, data.items.length, 'predict_random_forest');
      const out = new Float32Array(data.pixels);
      const x = new Float64Array(data.items.length);
      for (let i = 0; i < data.pixels; i++) {
        for (let k = 0; k < x.length; k++) x[k] = data.items[k][i];
        out[i] = predictOne(f, x);
      }
      return out;
    }
    if (!Array.isArray(data)) throw invalid('predict_random_forest', 'data', 'an array of numbers is expected');
    checkPredictors(f, data.length, 'predict_random_forest');
    const v = predictOne(f, data.map(plainNumber));
    return Number.isNaN(v) ? null : v;
  }),
  implement('predict_probabilities', (a) => {
    const f = forestArg(a.get('model'), 'predict_probabilities');
    if (f.kind !== 'classification') throw invalid('predict_probabilities', 'model', 'the model predicts values, not classes: it has no class probabilities');
    const data = a.get('data');
    const w = leafWidth(f);
    if (data instanceof PixelArray) {
      checkPredictors(f, data.items.length, 'predict_probabilities');
      const outs = Array.from({ length: w }, () => new Float32Array(data.pixels));
      const x = new Float64Array(data.items.length);
      for (let i = 0; i < data.pixels; i++) {
        for (let k = 0; k < x.length; k++) x[k] = data.items[k][i];
        probabilitiesOne(f, x).forEach((v, c) => (outs[c][i] = v));
      }
      return new PixelArray(outs, f.classes.map(String), data.pixels);
    }
    if (!Array.isArray(data)) throw invalid('predict_probabilities', 'data', 'an array of numbers is expected');
    checkPredictors(f, data.length, 'predict_probabilities');
    return probabilitiesOne(f, data.map(plainNumber)).map((v) => (Number.isNaN(v) ? null : v));
  }),
  implement('save_ml_model', (a, ctx) => {
    const f = forestArg(a.get('data'), 'save_ml_model', 'data');
    const options = a.get<Record<string, unknown> | null>('options') ?? {};
    if (Object.keys(options).length) throw invalid('save_ml_model', 'options', `no options are known (got ${Object.keys(options).join(', ')})`);
    if (ctx.run?.mode !== 'job' || !ctx.run.models) throw invalid('save_ml_model', 'data', 'models are saved with the results of batch jobs; run the graph as a batch job (POST /jobs)');
    ctx.run.models.push({ nodeId: ctx.nodeId, model: f });
    return true;
  }),
  implement('load_ml_model', (a, ctx) => loadModel(a.get<string>('id'), ctx)),
];
