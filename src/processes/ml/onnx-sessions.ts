// ONNX inference sessions of one engine thread, by the SHA-256 of the model's bytes: the tiles of a
// map and the chunks of a job build a model's session once. onnxruntime-node (CPU) is loaded on
// first use, so threads that never run a model never load it. Each session runs its operators on
// at most XEO_ML_ONNX_THREADS threads (and one operator at a time), so a thread running a model
// leaves the other cores to the tiles beside it.
//
// A model is either per pixel (one input [N, bands] -> [N, k] or [N]) or per patch
// ([1, bands, H, W] -> [1, k, H, W]); anything else, or bytes that are no ONNX model, is the
// client's 400.
import { ApiError } from '../../core/errors.js';
import type { ModelSource } from '../../data/model-source.js';
import { labelsOfMetadata, onnxMetadata } from './onnx-metadata.js';

type Ort = typeof import('onnxruntime-node');
type Session = import('onnxruntime-node').InferenceSession;

/** A dimension of a model's input or output: a size, or null when the model leaves it open. */
export type Extent = number | null;

export interface OnnxModel {
  /** Content hash of the model bytes. */
  hash: string;
  /** Runs using the session now, and whether it left the cache (released when the last run ends). */
  users: number;
  evicted: boolean;
  session: Session;
  kind: 'pixel' | 'patch';
  input: { name: string; type: string; shape: Extent[] };
  output: { name: string; type: string; shape: Extent[] };
  /** Output labels the model's own metadata names, or null. */
  labels: string[] | null;
}

export interface OnnxRequest {
  processId: string;
  parameter: string;
}

const invalid = (r: OnnxRequest, reason: string) => new ApiError('ProcessParameterInvalid', { process: r.processId, parameter: r.parameter, reason });

/** A shape as the messages show it: `[?, 4]` (an open size as `?`, a named one by its name). */
export const shapeText = (s: readonly (Extent | string)[]) => `[${s.map((d) => (d === null ? '?' : d)).join(', ')}]`;

const extents = (s: readonly (number | string)[]): Extent[] => s.map((d) => (typeof d === 'number' && d >= 0 ? d : null));

/** Input element types a model may take; cube values are converted to them. */
export const INPUT_TYPES = new Set(['float32', 'float64']);

export class OnnxSessions {
  private ort: Promise<Ort> | null = null;
  private readonly sessions = new Map<string, Promise<OnnxModel>>();

  constructor(
    /** Threads of one inference (intraOpNumThreads). */
    readonly threads: number,
    /** Sessions kept; the least recently used goes first. */
    readonly keep = 8,
  ) {}

  /** onnxruntime-node, loaded on first use. */
  runtime(): Promise<Ort> {
    return (this.ort ??= import('onnxruntime-node'));
  }

  /**
   * Runs `fn` with the session of a model (built once per content; the request names the parameter
   * in errors). A session that leaves the cache meanwhile is released once no run uses it.
   */
  async use<T>(src: ModelSource, r: OnnxRequest, fn: (m: OnnxModel) => Promise<T>): Promise<T> {
    const m = await this.model(src, r);
    m.users++;
    try {
      return await fn(m);
    } finally {
      // a session that fails to release is gone from the cache all the same; nothing else holds it
      if (--m.users === 0 && m.evicted) m.session.release().catch(() => {});
    }
  }

  private model(src: ModelSource, r: OnnxRequest): Promise<OnnxModel> {
    let p = this.sessions.get(src.hash);
    if (p) {
      // Most recently used last.
      this.sessions.delete(src.hash);
      this.sessions.set(src.hash, p);
      return p;
    }
    p = this.build(src, r);
    this.sessions.set(src.hash, p);
    p.catch(() => this.sessions.delete(src.hash));
    while (this.sessions.size > this.keep) {
      const [oldest, q] = this.sessions.entries().next().value!;
      this.sessions.delete(oldest);
      q.then((m) => {
        m.evicted = true;
        if (m.users === 0) return m.session.release();
        // evicting only frees memory: a session that failed to load or release has nothing left to free
      }).catch(() => {});
    }
    return p;
  }

  private async build(src: ModelSource, r: OnnxRequest): Promise<OnnxModel> {
    const ort = await this.runtime();
    let session: Session;
    try {
      session = await ort.InferenceSession.create(src.bytes, {
        executionProviders: ['cpu'],
        intraOpNumThreads: this.threads,
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: 'all',
      });
    } catch (e) {
      const why = String((e as Error)?.message ?? e)
        .split('\n')[0]
        .slice(0, 200);
      throw invalid(r, `${src.href} is not a valid ONNX model (${why})`);
    }
    try {
      return { hash: src.hash, users: 0, evicted: false, session, ...describe(session, src, r) };
    } catch (e) {
      // the error being thrown is the one to report; a failed release only leaves memory to the collector
      await session.release().catch(() => {});
      throw e;
    }
  }
}

/** The kind, input, output and labels of a loaded model; a model of no supported form is a 400. */
function describe(session: Session, src: ModelSource, r: OnnxRequest): Omit<OnnxModel, 'hash' | 'session' | 'users' | 'evicted'> {
  const inputs = session.inputMetadata;
  if (inputs.length !== 1) throw invalid(r, `the model takes ${inputs.length} inputs (${session.inputNames.join(', ')}); models of one input are run here`);
  const i = inputs[0];
  if (!i.isTensor) throw invalid(r, `the model's input '${i.name}' is not a tensor`);
  if (!INPUT_TYPES.has(i.type)) throw invalid(r, `the model's input '${i.name}' is of type ${i.type}; models taking float32 (or float64) values are run here`);
  const o = session.outputMetadata.find((m) => m.isTensor);
  if (!o || !o.isTensor) throw invalid(r, 'the model has no tensor output');
  const input = { name: i.name, type: i.type, shape: extents(i.shape) };
  const output = { name: o.name, type: o.type, shape: extents(o.shape) };
  let kind: OnnxModel['kind'];
  if (input.shape.length === 2) kind = 'pixel';
  else if (input.shape.length === 4) kind = 'patch';
  else throw invalid(r, `the model takes input '${i.name}' of shape ${shapeText(i.shape)}: neither pixels [N, bands] nor patches [1, bands, H, W]`);
  if (kind === 'patch' && input.shape[0] !== null && input.shape[0] !== 1) {
    throw invalid(r, `the model takes input '${i.name}' of shape ${shapeText(i.shape)}: patches are given one at a time, [1, bands, H, W]`);
  }
  if (output.shape.length && kind === 'pixel' && output.shape.length > 2) throw invalid(r, `the model answers shape ${shapeText(o.shape)} for pixels: [N, k] or [N] is expected`);
  if (output.shape.length && kind === 'patch' && output.shape.length !== 4) {
    throw invalid(r, `the model answers shape ${shapeText(o.shape)} for patches: [1, k, H, W] is expected`);
  }
  return { kind, input, output, labels: labelsOfMetadata(onnxMetadata(src.bytes)) };
}

declare module '../../core/run-context.js' {
  interface EngineParts {
    /** The thread's ONNX inference sessions by model hash (XEO_ML_ONNX_THREADS threads each). */
    onnx: OnnxSessions;
  }
}
