// The model file of a random forest (docs/ml.md, "The model format"): a header in JSON and the
// flat arrays of src/ml/forest.ts, little-endian, so a model is read back with a few copies and
// no parsing per node. Reading checks every index, so a corrupt or hostile file is refused with a
// clear message instead of a kernel that walks out of its arrays or never ends.
//
//   bytes 0-3   ASCII "XRF1"
//   bytes 4-7   u32: byte length H of the header
//   8 .. 8+H    header, UTF-8 JSON: kind, classes, predictors, trees, nodes, leaves, info
//   padding to a multiple of 4
//   i32 roots[trees] · i32 feature[nodes] · f32 threshold[nodes] · i32 child[nodes] · f32 leaves[leaves × width]
import { createHash } from 'node:crypto';
import { leafWidth, withSummary, type Forest, type ForestInfo, type ForestKind } from './forest.js';

export const MODEL_MAGIC = 'XRF1';
export const MODEL_MEDIA_TYPE = 'application/vnd.xeo.random-forest';
export const MODEL_EXTENSION = 'xrf';

interface Header {
  kind: ForestKind;
  classes: number[];
  predictors: string[];
  trees: number;
  nodes: number;
  leaves: number;
  info: ForestInfo;
}

/** A model file that cannot be used, with the reason. */
export class ModelFileError extends Error {}

export function encodeForest(f: Forest): Uint8Array {
  const header: Header = { kind: f.kind, classes: f.classes, predictors: f.predictors, trees: f.roots.length, nodes: f.feature.length, leaves: f.leaves.length / leafWidth(f), info: f.info };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const start = (8 + json.length + 3) & ~3;
  const bytes = start + 4 * (f.roots.length + 3 * f.feature.length + f.leaves.length);
  const out = new Uint8Array(bytes);
  out.set(new TextEncoder().encode(MODEL_MAGIC), 0);
  new DataView(out.buffer).setUint32(4, json.length, true);
  out.set(json, 8);
  let at = start;
  for (const a of [f.roots, f.feature, f.threshold, f.child, f.leaves]) {
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
    at += a.byteLength;
  }
  return out;
}

/** The model in `bytes`; ModelFileError when it is not a sound model file of ours. */
export function decodeForest(bytes: Uint8Array, maxDepth = Infinity): Forest {
  const bad = (why: string) => new ModelFileError(`not a usable random-forest model file: ${why}`);
  if (bytes.length < 8 || new TextDecoder().decode(bytes.subarray(0, 4)) !== MODEL_MAGIC) throw bad(`it does not start with "${MODEL_MAGIC}"`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const h = view.getUint32(4, true);
  if (8 + h > bytes.length) throw bad('its header is cut short');
  let header: Header;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + h))) as Header;
  } catch {
    throw bad('its header is not JSON');
  }
  const { kind, classes, predictors, trees, nodes, leaves } = header ?? ({} as Header);
  const count = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
  if (kind !== 'classification' && kind !== 'regression') throw bad('its kind is neither classification nor regression');
  if (!Array.isArray(classes) || !classes.every((c) => typeof c === 'number' && Number.isFinite(c))) throw bad('its classes are not numbers');
  if (kind === 'classification' && classes.length < 1) throw bad('it has no classes');
  if (!Array.isArray(predictors) || predictors.length < 1 || !predictors.every((p) => typeof p === 'string')) throw bad('its predictors are not named');
  if (!count(trees) || trees < 1 || !count(nodes) || nodes < trees || !count(leaves) || leaves < 1) throw bad('its counts are not sound');
  const width = kind === 'classification' ? classes.length : 1;
  const start = (8 + h + 3) & ~3;
  const need = start + 4 * (trees + 3 * nodes + leaves * width);
  if (bytes.length !== need) throw bad(`it has ${bytes.length} bytes where its header promises ${need}`);
  // Copies: aligned, and owned by the model (the file's buffer may be shared or transferred).
  let at = start;
  const take = <T extends Int32Array | Float32Array>(Ctor: new (b: ArrayBuffer) => T, n: number): T => {
    const a = new Ctor(bytes.slice(at, at + n * 4).buffer);
    at += n * 4;
    return a;
  };
  const roots = take(Int32Array, trees);
  const feature = take(Int32Array, nodes);
  const threshold = take(Float32Array, nodes);
  const child = take(Int32Array, nodes);
  const leafValues = take(Float32Array, leaves * width);
  // Every index in range; children come after their parent (so no walk can loop) and the depth holds.
  const depth = new Int32Array(nodes).fill(-1);
  for (const r of roots) {
    if (r < 0 || r >= nodes) throw bad('a tree root lies outside the nodes');
    depth[r] = 0;
  }
  let deepest = 0;
  for (let n = 0; n < nodes; n++) {
    const f = feature[n];
    if (f >= predictors.length || f < -1) throw bad(`node ${n} splits on a predictor it does not have`);
    if (f === -1) {
      if (child[n] < 0 || child[n] >= leaves) throw bad(`leaf ${n} points outside the leaves`);
      continue;
    }
    if (!(child[n] > n && child[n] + 1 < nodes)) throw bad(`node ${n} has children outside the nodes or before itself`);
    if (Number.isNaN(threshold[n])) throw bad(`node ${n} has no threshold`);
    if (depth[n] >= 0) {
      depth[child[n]] = depth[child[n] + 1] = depth[n] + 1;
      deepest = Math.max(deepest, depth[n] + 1);
    }
  }
  if (deepest > maxDepth) throw bad(`its trees are ${deepest} levels deep, more than the ${maxDepth} accepted here (XEO_ML_MAX_DEPTH)`);
  return withSummary({ kind, classes, predictors, roots, feature, threshold, child, leaves: leafValues, info: header.info });
}

/** The hex SHA-256 of a model file: its identity in caches and in its STAC Item. */
export function contentHash(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
