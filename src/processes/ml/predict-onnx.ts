// predict_onnx: an ONNX model applied to a raster cube on the engine thread that runs the graph.
//  - Per-pixel models (input [N, bands]) get the pixels whose bands all hold values, in batches;
//    their output [N, k] (or [N]) is k values per pixel, no-data where any band was.
//  - Patch models (input [1, bands, H, W]) get square patches of the cube per date (or other
//    label), as apply_neighborhood would cut them: patches of the model's H x W stepping by the
//    patch less an overlap of an eighth of its side on each edge, whose core is kept; past the
//    raster edge and where a band has no value the patch holds 0 (the zero padding of a
//    convolution), and the output is no-data where any band was. A model that leaves H and W open
//    gets the whole plane when it is at most 1024 x 1024 pixels, else patches of that size.
// One output value (k = 1) replaces the `bands` dimension; k > 1 values become its labels,
// named by the model's metadata, the MLM classes of the STAC Item describing it, or class_0...
import { ApiError } from '../../core/errors.js';
import { addStage } from '../../core/stages.js';
import type { RunContext } from '../../core/run-context.js';
import { DataCube, type Dimension } from '../../datacube/datacube.js';
import { cubeOf } from '../../data/lazy.js';
import { modelSource, type ModelAsset } from '../../data/model-source.js';
import { implement, type ProcessImpl } from '../implement.js';
import { labelsOfItem } from './onnx-metadata.js';
import { OnnxSessions, shapeText, type OnnxModel } from './onnx-sessions.js';

const P = 'predict_onnx';
const invalid = (parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process: P, parameter, reason });

/** Rows of one call of a per-pixel model whose batch size is open. */
const PIXEL_BATCH = 1 << 16;
/** Side of the patches of a patch model whose H and W are open. */
const OPEN_PATCH = 1024;
/** The overlap of a patch on each side, as a fraction of its side (apply_neighborhood's usual 16 of 128). */
const OVERLAP_FRACTION = 1 / 8;
const OPEN_OVERLAP = 32;

/** An asset of a STAC Item that holds an ONNX file (preferred over other model assets). */
const isOnnxAsset = (a: ModelAsset) => /onnx/i.test(String(a.type ?? '')) || /\.onnx$/i.test(a.href.split(/[?#]/)[0]) || a['mlm:artifact_type'] === 'onnx';

type Ort = Awaited<ReturnType<OnnxSessions['runtime']>>;

/** The cube's values with the bands first, and what the model is fed from them. */
interface Layout {
  /** Band-major values: band c of pixel p (over the other dimensions, in order) at c * rest + p. */
  data: Float32Array;
  rest: number;
  /** Bands per pixel (1 without a bands dimension). */
  bands: number;
  bandNames: string[];
  /** Position of the bands dimension, or -1. */
  bandDim: number;
}

function layout(cube: DataCube): Layout {
  const bandDim = cube.dims.findIndex((d) => d.type === 'bands');
  if (bandDim < 0) return { data: cube.data, rest: cube.size, bands: 1, bandNames: [], bandDim };
  const { data, rest } = cube.outermost(bandDim);
  return { data, rest, bands: cube.shape[bandDim], bandNames: cube.dims[bandDim].labels.map(String), bandDim };
}

/** The cube's side of a shape mismatch: `[N, 3] (3 bands: B04, B08, B11)`. */
function cubeShape(l: Layout, dims: (string | number)[]): string {
  const names = l.bandNames.length ? `: ${l.bandNames.slice(0, 8).join(', ')}${l.bandNames.length > 8 ? ', ...' : ''}` : '';
  return `${shapeText(dims)} (${l.bands} band${l.bands === 1 ? '' : 's'}${names})`;
}

function checkBands(m: OnnxModel, l: Layout, cubeDims: (string | number)[]): void {
  const want = m.input.shape[1];
  if (want !== null && want !== l.bands) {
    throw invalid('model', `the model takes input '${m.input.name}' of shape ${shapeText(m.input.shape)}, but the cube gives ${cubeShape(l, cubeDims)}`);
  }
}

function tensorOf(ort: Ort, m: OnnxModel, x: Float32Array, dims: number[]) {
  return m.input.type === 'float64' ? new ort.Tensor('float64', Float64Array.from(x), dims) : new ort.Tensor('float32', x, dims);
}

/** One run of the model; its failures on our input are the client's (the model does not fit). */
async function runModel(ort: Ort, m: OnnxModel, x: Float32Array, dims: number[]): Promise<{ values: ArrayLike<number | bigint>; dims: readonly number[] }> {
  let out;
  try {
    const res = await m.session.run({ [m.input.name]: tensorOf(ort, m, x, dims) }, [m.output.name]);
    out = res[m.output.name];
  } catch (e) {
    const why = String((e as Error)?.message ?? e)
      .split('\n')[0]
      .slice(0, 200);
    throw invalid('model', `the model failed on an input of shape ${shapeText(dims)} (${why})`);
  }
  if (out.type === 'string') throw invalid('model', `the model's output '${m.output.name}' holds text, not numbers`);
  return { values: out.data as ArrayLike<number | bigint>, dims: out.dims };
}

/** Values of an output as numbers (int64 outputs come as bigint). */
function numberAt(v: ArrayLike<number | bigint>, i: number): number {
  return Number(v[i]);
}

function checkLimit(values: number, run: RunContext | undefined): void {
  if (run && values > run.maxValues) throw new ApiError('ProcessGraphComplexity', {}, `predict_onnx would make ${values} values, more than the ${run.maxValues} allowed here. ${run.limitAdvice}`);
}

/** Per-pixel model: k planes of `rest` values each, band-major. */
async function perPixel(ort: Ort, m: OnnxModel, l: Layout, run: RunContext | undefined): Promise<{ out: Float32Array; k: number }> {
  const C = l.bands;
  checkBands(m, l, ['N', C]);
  const { data, rest } = l;
  const valid = new Int32Array(rest);
  let n = 0;
  for (let p = 0; p < rest; p++) {
    let ok = true;
    for (let c = 0; c < C && ok; c++) ok = Number.isFinite(data[c * rest + p]);
    if (ok) valid[n++] = p;
  }
  const fixed = m.input.shape[0];
  const batch = fixed ?? PIXEL_BATCH;
  let out: Float32Array | null = null;
  let k = 0;
  // With no valid pixel the model still runs once (on zeros) to tell how many values it answers.
  for (let start = 0; start < Math.max(n, 1); start += batch) {
    run?.signal?.throwIfAborted();
    const rows = Math.min(batch, n - start);
    const feed = fixed ?? Math.max(rows, 1);
    const x = new Float32Array(feed * C);
    for (let j = 0; j < rows; j++) {
      const p = valid[start + j];
      for (let c = 0; c < C; c++) x[j * C + c] = data[c * rest + p];
    }
    const r = await runModel(ort, m, x, [feed, C]);
    const kk = r.dims.length === 1 ? 1 : r.dims.length === 2 ? r.dims[1] : -1;
    if (kk < 1 || r.dims[0] !== feed) throw invalid('model', `the model answers shape ${shapeText(r.dims)} for ${feed} pixels; [${feed}, k] or [${feed}] is expected`);
    if (!out) {
      k = kk;
      checkLimit(k * rest, run);
      out = new Float32Array(k * rest).fill(NaN);
    } else if (kk !== k) throw invalid('model', `the model answers ${kk} values per pixel in one batch and ${k} in another`);
    const v = r.values;
    if (v instanceof Float32Array) {
      for (let j = 0; j < rows; j++) for (let c = 0; c < k; c++) out[c * rest + valid[start + j]] = v[j * k + c];
    } else {
      for (let j = 0; j < rows; j++) for (let c = 0; c < k; c++) out[c * rest + valid[start + j]] = numberAt(v, j * k + c);
    }
  }
  return { out: out!, k };
}

/** The starts of the patches along one side, the window [lo, lo + size) each reads and its core. */
function windows(n: number, size: number, overlap: number): { lo: number; start: number; end: number }[] {
  if (n <= size) return [{ lo: 0, start: 0, end: n }];
  const core = size - 2 * overlap;
  const out = [];
  for (let s = 0; s < n; s += core) out.push({ lo: s - overlap, start: s, end: Math.min(n, s + core) });
  return out;
}

/** Patch model: k planes of `rest` values each, band-major. */
async function perPatch(ort: Ort, m: OnnxModel, l: Layout, cube: DataCube, run: RunContext | undefined): Promise<{ out: Float32Array; k: number }> {
  const C = l.bands;
  const nd = cube.dims.length;
  const Y = cube.shape[nd - 2];
  const X = cube.shape[nd - 1];
  const [, , mh, mw] = m.input.shape;
  checkBands(m, l, [1, C, mh ?? Y, mw ?? X]);
  const open = mh === null || mw === null;
  const PH = mh ?? Math.min(Y, OPEN_PATCH);
  const PW = mw ?? Math.min(X, OPEN_PATCH);
  const ovY = open ? (Y > PH ? OPEN_OVERLAP : 0) : Math.floor(PH * OVERLAP_FRACTION);
  const ovX = open ? (X > PW ? OPEN_OVERLAP : 0) : Math.floor(PW * OVERLAP_FRACTION);
  if ((Y > PH && PH - 2 * ovY < 1) || (X > PW && PW - 2 * ovX < 1)) throw invalid('model', `the model's patches of ${PH} x ${PW} pixels are too small to overlap`);
  const { data, rest } = l;
  const plane = Y * X;
  const outer = rest / Math.max(1, plane);
  // No-data where any band has none.
  const missing = new Uint8Array(rest);
  for (let c = 0; c < C; c++) {
    const b = c * rest;
    for (let p = 0; p < rest; p++) if (!Number.isFinite(data[b + p])) missing[p] = 1;
  }
  let out: Float32Array | null = null;
  let k = 0;
  const x = new Float32Array(C * PH * PW);
  for (let o = 0; o < outer; o++) {
    for (const wy of windows(Y, PH, ovY)) {
      for (const wx of windows(X, PW, ovX)) {
        run?.signal?.throwIfAborted();
        x.fill(0);
        const r0 = Math.max(0, wy.lo);
        const r1 = Math.min(Y, wy.lo + PH);
        const c0 = Math.max(0, wx.lo);
        const c1 = Math.min(X, wx.lo + PW);
        for (let c = 0; c < C; c++) {
          for (let r = r0; r < r1; r++) {
            const src = c * rest + o * plane + r * X;
            const dst = c * PH * PW + (r - wy.lo) * PW - wx.lo;
            for (let q = c0; q < c1; q++) {
              const v = data[src + q];
              x[dst + q] = Number.isFinite(v) ? v : 0;
            }
          }
        }
        const res = await runModel(ort, m, x, [1, C, PH, PW]);
        const d = res.dims;
        if (d.length !== 4 || d[0] !== 1 || d[2] !== PH || d[3] !== PW) {
          throw invalid('model', `the model answers shape ${shapeText(d)} for a patch of ${shapeText([1, C, PH, PW])}; [1, k, ${PH}, ${PW}] is expected`);
        }
        if (!out) {
          k = d[1];
          checkLimit(k * rest, run);
          out = new Float32Array(k * rest).fill(NaN);
        } else if (d[1] !== k) throw invalid('model', `the model answers ${d[1]} values per pixel for one patch and ${k} for another`);
        const v = res.values;
        for (let c = 0; c < k; c++) {
          for (let r = wy.start; r < wy.end; r++) {
            const dst = c * rest + o * plane + r * X;
            const src = c * PH * PW + (r - wy.lo) * PW - wx.lo;
            for (let q = wx.start; q < wx.end; q++) out[dst + q] = missing[o * plane + r * X + q] ? NaN : numberAt(v, src + q);
          }
        }
      }
    }
  }
  if (!out) return { out: new Float32Array(0), k: 1 };
  return { out, k };
}

/** The cube of the model's answers: k = 1 without the bands dimension, k > 1 with it relabelled. */
function resultCube(cube: DataCube, l: Layout, out: Float32Array, k: number, labels: string[]): DataCube {
  if (k === 1) {
    const dims = l.bandDim < 0 ? cube.dims : cube.dims.filter((_, i) => i !== l.bandDim);
    return cube.with({ dims, data: out, bandInfo: {} });
  }
  const bands: Dimension = { name: l.bandDim < 0 ? 'bands' : cube.dims[l.bandDim].name, type: 'bands', labels };
  const at = l.bandDim < 0 ? cube.dims.length - 2 : l.bandDim;
  const dims = l.bandDim < 0 ? [...cube.dims.slice(0, at), bands, ...cube.dims.slice(at)] : cube.dims.map((d, i) => (i === at ? bands : d));
  const shape = dims.map((d) => d.labels.length);
  return cube.with({ dims, data: DataCube.fromOutermost(out, shape, at), bandInfo: {} });
}

export const processes: ProcessImpl[] = [
  implement('predict_onnx', async (a, ctx) => {
    const cube = await cubeOf(a.get('data'), ctx.run, P, 'data');
    if (!cube.grid || cube.dims.length < 2) throw invalid('data', 'a raster data cube (with x and y) is expected');
    const src = await modelSource(a.get('model'), { processId: P, parameter: 'model', run: ctx.run, prefer: isOnnxAsset });
    const t0 = performance.now();
    // A graph evaluated without an engine (no run) gets sessions of its own, released with it.
    const sessions = ctx.run?.engine.onnx ?? new OnnxSessions(1);
    const ort = await sessions.runtime();
    const answer = await sessions.use(src, { processId: P, parameter: 'model' }, async (m) => {
      const l = layout(cube);
      const { out, k } = m.kind === 'pixel' ? await perPixel(ort, m, l, ctx.run) : await perPatch(ort, m, l, cube, ctx.run);
      let labels = m.labels ?? labelsOfItem(src.item?.properties);
      if (labels && labels.length !== k) {
        ctx.run?.log('warning', `predict_onnx: the model names ${labels.length} output labels but answers ${k} values per pixel; the bands are named class_0 to class_${k - 1}`);
        labels = null;
      }
      return resultCube(cube, l, out, k, labels ?? Array.from({ length: k }, (_, i) => `class_${i}`));
    });
    addStage('model', performance.now() - t0);
    return answer;
  }),
];
