// Machine-learning models by reference, for the engine threads that run them (predict_onnx,
// load_ml_model). A reference is
//  - an http(s) URL, read on the user's behalf under the outbound rules (data/outbound.ts), as
//    load_url and load_stac read theirs;
//  - a path in the user's files (`/a/m.onnx`, `a/m.onnx` and `./a/m.onnx` are the same file);
//  - either of these naming a STAC Item that implements the `ml-model` extension or STAC MLM: its
//    model asset is read instead (an href relative to the Item is resolved against it, so the
//    signed relative hrefs of an Item reached by Xeo's signed result link stay signed). A STAC
//    Item with neither extension is refused: nothing says which asset is the model.
// Every model is at most XEO_ML_MODEL_MAX_BYTES and is known by the SHA-256 of its bytes, so
// threads cache what they build from it (an inference session, a forest) by content, not by name.
// The bytes of a reference are kept per thread for a few minutes, so the tiles of a map or the
// chunks of a job read a model once. Every failure is the client's 4xx, naming the reference.
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { LRUCache } from 'lru-cache';
import { ApiError } from '../core/errors.js';
import type { RunContext, UserFiles } from '../core/run-context.js';
import { parseUserPath } from '../files/paths.js';
import { httpRequest, RemoteError } from './http-client.js';
import { checkUrl, OutboundRefused, usersPolicy } from './outbound.js';

/** The limits of model references (XEO_ML_MODEL_MAX_BYTES), one per engine. */
export interface ModelLimits {
  /** Most bytes of one model file (and of the STAC Item naming it). */
  maxBytes: number;
}

declare module '../core/run-context.js' {
  interface EngineParts {
    /** Limits of models read by reference (XEO_ML_MODEL_MAX_BYTES). */
    modelLimits: ModelLimits;
  }
}

/** The default limits (a run without an engine: a graph evaluated on its own). */
export const DEFAULT_MODEL_LIMITS: ModelLimits = Object.freeze({ maxBytes: 256 * 1024 * 1024 });

/** The limits of the engine a run is on. */
export function modelLimits(run: RunContext | undefined): ModelLimits {
  return run?.engine.modelLimits ?? DEFAULT_MODEL_LIMITS;
}

/** The parts of a STAC asset a model reference looks at. */
export interface ModelAsset {
  href: string;
  type?: string;
  roles?: string[];
  [field: string]: unknown;
}

/** A STAC Item describing a model (`ml-model` or MLM fields in its properties). */
export interface ModelItem {
  type: 'Feature';
  id: string;
  stac_extensions: string[];
  properties: Record<string, unknown>;
  assets: Record<string, ModelAsset>;
  [field: string]: unknown;
}

/** A model's bytes and where they came from. */
export interface ModelSource {
  bytes: Uint8Array;
  /** SHA-256 of the bytes, hex: the key of everything built from them. */
  hash: string;
  /** The model file read: a URL, or `files:<path>` for a user's file. */
  href: string;
  /** The STAC Item the reference named, with the key of the asset read; null for a bare model file. */
  item: ModelItem | null;
  assetKey: string | null;
}

export interface ModelRequest {
  /** The process and parameter the reference was given to (for the error messages). */
  processId: string;
  parameter: string;
  run?: RunContext;
  /**
   * Among several model assets of an Item, the one to read: the first this accepts (e.g. an ONNX
   * file by its media type), else the first model asset.
   */
  prefer?: (asset: ModelAsset, key: string) => boolean;
  /**
   * Models of a JSON format (e.g. a forest of ours): a JSON document that is no STAC Item is then
   * the model itself, and an Item's model asset may be JSON. Without it (ONNX), JSON is only ever
   * read as a STAC Item.
   */
  jsonModels?: boolean;
}

/** Extension schemas that mark an Item as a model description. */
const MODEL_EXTENSIONS = [/^https:\/\/stac-extensions\.github\.io\/ml-model\//, /^https:\/\/stac-extensions\.github\.io\/mlm\//, /^https:\/\/crim-ca\.github\.io\/mlm-extension\//];
/** Asset roles of a model file: `ml-model:checkpoint` (ml-model 1.0) and `mlm:model` (MLM). */
const MODEL_ROLES = ['mlm:model', 'ml-model:checkpoint'];

const invalid = (r: ModelRequest, reason: string) => new ApiError('ProcessParameterInvalid', { process: r.processId, parameter: r.parameter, reason });

/** Whether a reference is a URL (else a path in the user's files). */
export const isModelUrl = (ref: string) => /^[a-z][a-z0-9+.-]*:\/\//i.test(ref);

/** A reference's bytes with their hash, kept per thread by reference (and, for files, their date and size). */
const kept = new LRUCache<string, { bytes: Uint8Array; hash: string }>({
  maxSize: 512 * 1024 * 1024,
  sizeCalculation: (v) => Math.max(1, v.bytes.byteLength),
  ttl: 5 * 60 * 1000,
});
/** Reads under way, so the tiles of one thread asking at once read a model once. */
const pending = new Map<string, Promise<{ bytes: Uint8Array; hash: string }>>();

function once(key: string, read: () => Promise<Uint8Array>): Promise<{ bytes: Uint8Array; hash: string }> {
  const hit = kept.get(key);
  if (hit) return Promise.resolve(hit);
  let p = pending.get(key);
  if (!p) {
    p = read().then((bytes) => {
      const v = { bytes, hash: createHash('sha256').update(bytes).digest('hex') };
      kept.set(key, v);
      return v;
    });
    pending.set(key, p);
    const forget = () => pending.delete(key);
    p.then(forget, forget);
  }
  return p;
}

/** A URL's bytes under the outbound rules and the size limit. */
async function urlBytes(url: string, r: ModelRequest): Promise<Uint8Array> {
  const max = modelLimits(r.run).maxBytes;
  // Without a run there is no engine, so nothing is allowed beyond the rules.
  const policy = r.run?.engine.outbound ?? usersPolicy(undefined);
  try {
    checkUrl(url, policy);
    const res = await httpRequest(url, { policy, maxBytes: max, signal: r.run?.signal, timeoutMs: 60_000, kind: 'read' });
    if (res.status !== 200) throw new RemoteError(url, `it answered HTTP ${res.status}`);
    return res.body;
  } catch (e) {
    if (e instanceof OutboundRefused || e instanceof RemoteError) throw invalid(r, e.message);
    throw e;
  }
}

/** A user file's path as a graph names it, checked as the file API checks paths. */
export function modelPath(ref: string): string {
  return parseUserPath(ref.replace(/^(\.?\/)+/, '').replace(/%/g, '%25'));
}

/** A user file's bytes (the size limit checked before reading). */
async function fileBytes(files: UserFiles | undefined, path: string, r: ModelRequest): Promise<{ key: string; read: () => Promise<Uint8Array> }> {
  if (!files) throw invalid(r, `'${path}' would be read from your files, which cannot be read here (give an http(s) URL)`);
  const st = await files.stat(path);
  if (!st) throw new ApiError('FileNotFound', { file: path });
  const { maxBytes } = modelLimits(r.run);
  if (st.size > maxBytes) throw invalid(r, `the file ${path} has ${st.size} bytes; models are read up to ${maxBytes} bytes here (XEO_ML_MODEL_MAX_BYTES)`);
  return { key: `file:${files.owner}/${st.modified}/${st.size}/${path}`, read: () => files.read(path, maxBytes) };
}

/** Whether bytes are a JSON document (a STAC Item) rather than a model file. */
function looksLikeJson(b: Uint8Array): boolean {
  for (let i = 0; i < b.length && i < 64; i++) {
    const c = b[i];
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0xef || c === 0xbb || c === 0xbf) continue;
    return c === 0x7b; // '{'
  }
  return false;
}

/** The checked Item of a JSON document, and the key and asset of its model file. */
export function modelAssetOf(doc: unknown, shown: string, r: ModelRequest): { item: ModelItem; key: string; asset: ModelAsset } {
  const d = doc as Partial<ModelItem> | null;
  if (!d || typeof d !== 'object' || d.type !== 'Feature' || typeof d.assets !== 'object' || d.assets === null) {
    throw invalid(r, `${shown} is JSON but not a STAC Item (a model is an ONNX file or a STAC Item describing one)`);
  }
  const exts = Array.isArray(d.stac_extensions) ? d.stac_extensions.filter((e): e is string => typeof e === 'string') : [];
  if (!exts.some((e) => MODEL_EXTENSIONS.some((m) => m.test(e)))) {
    throw invalid(r, `the STAC Item ${shown} does not implement the ml-model extension nor STAC MLM, so it names no model`);
  }
  const models = Object.entries(d.assets).filter(([, a]) => a && typeof a === 'object' && typeof a.href === 'string' && Array.isArray(a.roles) && a.roles.some((role) => MODEL_ROLES.includes(role)));
  if (!models.length) throw invalid(r, `the STAC Item ${shown} has no model asset (an asset with the role ${MODEL_ROLES.join(' or ')})`);
  const [key, asset] = models.find(([k, a]) => r.prefer?.(a, k)) ?? models[0];
  return { item: { ...(d as ModelItem), stac_extensions: exts, properties: d.properties ?? {} }, key, asset };
}

/**
 * The model a reference names, read on an engine thread: its bytes (a model file, never a STAC
 * Item), their SHA-256, and the Item that described it, if any.
 */
export async function modelSource(ref: unknown, r: ModelRequest): Promise<ModelSource> {
  if (typeof ref !== 'string' || !ref.trim()) throw invalid(r, 'a model is given as an http(s) URL or a path in your files');
  const files = r.run?.files;
  let first: { bytes: Uint8Array; hash: string };
  let href: string;
  if (isModelUrl(ref)) {
    href = ref;
    first = await once(`url:${ref}`, () => urlBytes(ref, r));
  } else {
    const path = modelPath(ref);
    const f = await fileBytes(files, path, r);
    href = `files:${path}`;
    first = await once(f.key, f.read);
  }
  if (!looksLikeJson(first.bytes)) return { ...first, href, item: null, assetKey: null };

  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(first.bytes.buffer, first.bytes.byteOffset, first.bytes.byteLength).toString('utf8'));
  } catch {
    if (r.jsonModels) return { ...first, href, item: null, assetKey: null };
    throw invalid(r, `${ref} starts like JSON but is not JSON (a model is an ONNX file or a STAC Item describing one)`);
  }
  if (r.jsonModels && (doc as { type?: unknown } | null)?.type !== 'Feature') return { ...first, href, item: null, assetKey: null };
  const { item, key, asset } = modelAssetOf(doc, ref, r);
  let model: { bytes: Uint8Array; hash: string };
  if (isModelUrl(asset.href) || isModelUrl(ref)) {
    // Relative to the Item's URL; an absolute href in a user's Item is read like any URL.
    let url: string;
    try {
      url = new URL(asset.href, isModelUrl(ref) ? ref : undefined).href;
    } catch {
      throw invalid(r, `the model asset '${key}' of ${ref} has an href that is not a URL: ${asset.href}`);
    }
    href = url;
    model = await once(`url:${url}`, () => urlBytes(url, r));
  } else {
    // A relative href in a user's Item: a file beside it in their files. A query (the signature of
    // an Item saved from Xeo's signed result link) means nothing there.
    const base = posix.dirname(modelPath(ref));
    const path = modelPath(posix.normalize(posix.join(base === '.' ? '' : base, asset.href.replace(/[?#].*$/s, ''))));
    const f = await fileBytes(files, path, r);
    href = `files:${path}`;
    model = await once(f.key, f.read);
  }
  if (!r.jsonModels && looksLikeJson(model.bytes)) throw invalid(r, `the model asset '${key}' of ${ref} is JSON, not a model file`);
  return { ...model, href, item, assetKey: key };
}
