// Curve fitting: fit_curve finds the parameters of a model function y = f(x, parameters) by
// non-linear least squares (Levenberg-Marquardt, the Jacobian by forward differences), and
// predict_curve evaluates the model at new labels (e.g. the harmonic model over time used to fill
// gaps). Used inside apply_dimension, fit_curve sees the labeled array of every pixel at once (a
// PixelArray) and fits all pixels together: each step evaluates the model once per label for all
// pixels, and the small normal equations are solved pixel by pixel in double precision.
//
// x is the label: a number as it is, a date or date-time as seconds since 1970-01-01T00:00:00Z
// (so a yearly harmonic is cos(2 pi x / 31557600)).
import { ApiError } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import type { Callback } from '../../core/process.js';
import { labelsOf, type Labels } from '../../core/labels.js';
import { DataCube } from '../../datacube/datacube.js';
import { PixelArray, broadcast } from '../../datacube/pixels.js';
import { cubeOf } from '../../data/lazy.js';
import { instantOf } from './aggregate.js';
import { dimIndex, requireCallback } from './common.js';
import { runFused } from '../../compile/child-kernel.js';
import { freePlane, plane } from '../../wasm/kernels.js';

const invalid = (process: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process, parameter, reason });

/** The x of a label: a number, or the seconds since the epoch of a date. */
export function xOf(label: string | number, process: string): number {
  if (typeof label === 'number') return label;
  const ms = instantOf(label);
  if (Number.isNaN(ms)) throw invalid(process, 'data', `the label '${label}' is neither a number nor a date`);
  return ms / 1000;
}

/**
 * The model at x for every pixel's parameters (each a Float64Array of P values). A model the
 * kernels can fuse runs there: x is a constant of the fused program (folded with everything else
 * that does not depend on the parameters, in double precision), one program per x, kept across
 * iterations and chunks; any other model runs as a child process.
 */
async function model(fn: Callback, x: number, params: Float64Array[], pixels: number, items: Float32Array[]): Promise<Float64Array> {
  // The parameters as float32, in planes of kernel memory reused by every evaluation.
  params.forEach((p, i) => items[i].set(p));
  if (fn.child) {
    const child = fn.child;
    const atX = Object.assign((v: Record<string, unknown>) => fn(v), { child: { ...child, outer: (n: string) => (n === 'x' ? x : child.outer(n)) } }) as Callback;
    // x goes in as the context too: the fused program is kept per context.
    const fused = runFused(atX, { kind: 'array', param: 'parameters', labels: items.map((_, i) => i) }, items, pixels, x);
    if (fused) {
      const out = Float64Array.from(fused);
      freePlane(fused);
      return out;
    }
  }
  const v = broadcast(await fn({ x, parameters: new PixelArray(items, null, pixels) }), pixels, 'fit_curve');
  if (v instanceof PixelArray) throw invalid('fit_curve', 'function', 'the model function must answer one number');
  return Float64Array.from(v);
}

const MAX_ITERATIONS = 50;

/** m float32 planes of `pixels` values (kernel memory of the run), for the parameters of every evaluation of one fit. */
const paramPlanes = (m: number, pixels: number): Float32Array[] => Array.from({ length: m }, () => plane(pixels));

/**
 * Fits every pixel: y[k] (P values each) at x[k]; answers the parameters (m arrays of P values),
 * NaN for pixels with fewer valid points than parameters or whose fit failed.
 */
export async function fitPixels(fn: Callback, xs: number[], ys: Float32Array[], guess: number[], pixels: number, ignoreNodata: boolean): Promise<Float64Array[]> {
  const m = guess.length;
  const n = xs.length;
  const items = paramPlanes(m, pixels);
  const p = guess.map((g) => new Float64Array(pixels).fill(g));
  const lambda = new Float64Array(pixels).fill(1e-3);
  const done = new Uint8Array(pixels);
  // valid points per pixel
  const valid = new Int32Array(pixels);
  for (let k = 0; k < n; k++) for (let i = 0; i < pixels; i++) if (ys[k][i] === ys[k][i]) valid[i]++;
  for (let i = 0; i < pixels; i++) if (valid[i] < m || (!ignoreNodata && valid[i] < n)) done[i] = 2;
  const sse = async (pp: Float64Array[]): Promise<{ f: Float64Array[]; s: Float64Array }> => {
    const f: Float64Array[] = [];
    const s = new Float64Array(pixels);
    for (let k = 0; k < n; k++) {
      const fk = await model(fn, xs[k], pp, pixels, items);
      f.push(fk);
      const y = ys[k];
      for (let i = 0; i < pixels; i++) {
        if (y[i] !== y[i]) continue;
        const r = y[i] - fk[i];
        s[i] += r * r;
      }
    }
    return { f, s };
  };
  const cur = await sse(p);
  for (let it = 0; it < MAX_ITERATIONS; it++) {
    // Jacobian by forward differences: J[j][k][i]
    const J: Float64Array[][] = [];
    for (let j = 0; j < m; j++) {
      const h = new Float64Array(pixels);
      for (let i = 0; i < pixels; i++) h[i] = Math.max(1e-4, Math.abs(p[j][i]) * 1e-3);
      const pj = p.map((q, jj) => (jj === j ? q.map((v, i) => v + h[i]) : q));
      // the step as float32 actually took it
      for (let i = 0; i < pixels; i++) h[i] = Math.fround(pj[j][i]) - Math.fround(p[j][i]);
      const rows: Float64Array[] = [];
      for (let k = 0; k < n; k++) {
        const fk = await model(fn, xs[k], pj, pixels, items);
        const d = new Float64Array(pixels);
        for (let i = 0; i < pixels; i++) d[i] = h[i] !== 0 ? (fk[i] - cur.f[k][i]) / h[i] : 0;
        rows.push(d);
      }
      J.push(rows);
    }
    // Per pixel: (JtJ + lambda diag(JtJ)) delta = Jt r
    const next = p.map((q) => Float64Array.from(q));
    const A = new Float64Array(m * m);
    const g = new Float64Array(m);
    let open = 0;
    for (let i = 0; i < pixels; i++) {
      if (done[i]) continue;
      open++;
      A.fill(0);
      g.fill(0);
      for (let k = 0; k < n; k++) {
        const y = ys[k][i];
        if (y !== y) continue;
        const r = y - cur.f[k][i];
        for (let a = 0; a < m; a++) {
          const ja = J[a][k][i];
          g[a] += ja * r;
          for (let b = 0; b <= a; b++) A[a * m + b] += ja * J[b][k][i];
        }
      }
      for (let a = 0; a < m; a++) for (let b = 0; b < a; b++) A[b * m + a] = A[a * m + b];
      for (let a = 0; a < m; a++) A[a * m + a] *= 1 + lambda[i];
      const delta = solve(A, g, m);
      if (!delta) {
        lambda[i] *= 10;
        continue;
      }
      for (let a = 0; a < m; a++) next[a][i] = p[a][i] + delta[a];
    }
    if (open === 0) break;
    const trial = await sse(next);
    let moving = 0;
    for (let i = 0; i < pixels; i++) {
      if (done[i]) continue;
      // Converged when the sum of squares no longer changes (relative to itself: the model is
      // evaluated in float32) or the step no longer moves the parameters.
      let step = 0;
      for (let a = 0; a < m; a++) step = Math.max(step, Math.abs(next[a][i] - p[a][i]) / (Math.abs(p[a][i]) + 1e-6));
      if (Math.abs(cur.s[i] - trial.s[i]) <= 1e-6 * cur.s[i] || step < 1e-6) done[i] = 1;
      if (trial.s[i] <= cur.s[i]) {
        for (let a = 0; a < m; a++) p[a][i] = next[a][i];
        for (let k = 0; k < n; k++) cur.f[k][i] = trial.f[k][i];
        cur.s[i] = trial.s[i];
        lambda[i] = Math.max(1e-12, lambda[i] / 10);
      } else {
        lambda[i] *= 10;
        if (lambda[i] > 1e12) done[i] = 1;
      }
      if (!done[i]) moving++;
    }
    if (moving === 0) break;
  }
  for (let i = 0; i < pixels; i++) if (done[i] === 2 || !Number.isFinite(cur.s[i])) for (let a = 0; a < m; a++) p[a][i] = NaN;
  return p;
}

/** Solves A x = b (m x m, Gaussian elimination with partial pivoting); null when singular. */
function solve(A0: Float64Array, b0: Float64Array, m: number): Float64Array | null {
  const A = Float64Array.from(A0);
  const b = Float64Array.from(b0);
  for (let c = 0; c < m; c++) {
    let piv = c;
    for (let r = c + 1; r < m; r++) if (Math.abs(A[r * m + c]) > Math.abs(A[piv * m + c])) piv = r;
    if (!(Math.abs(A[piv * m + c]) > 1e-300)) return null;
    if (piv !== c) {
      for (let k = 0; k < m; k++) [A[c * m + k], A[piv * m + k]] = [A[piv * m + k], A[c * m + k]];
      [b[c], b[piv]] = [b[piv], b[c]];
    }
    for (let r = c + 1; r < m; r++) {
      const f = A[r * m + c] / A[c * m + c];
      if (f === 0) continue;
      for (let k = c; k < m; k++) A[r * m + k] -= f * A[c * m + k];
      b[r] -= f * b[c];
    }
  }
  const x = new Float64Array(m);
  for (let r = m - 1; r >= 0; r--) {
    let s = b[r];
    for (let k = r + 1; k < m; k++) s -= A[r * m + k] * x[k];
    x[r] = s / A[r * m + r];
  }
  return x.every(Number.isFinite) ? x : null;
}

export const processes: ProcessImpl[] = [
  implement('fit_curve', async (a) => {
    const P = 'fit_curve';
    const fn = requireCallback(a.callback('function'), P, 'function');
    const guess = a.get<number[]>('parameters');
    if (!Array.isArray(guess) || !guess.length || !guess.every((v) => typeof v === 'number' && Number.isFinite(v))) throw invalid(P, 'parameters', 'an array of at least one finite number is expected');
    const data = a.get<unknown>('data');
    const ignore = a.get<boolean>('ignore_nodata') !== false;
    if (data instanceof PixelArray) {
      const labels = data.labels ?? data.items.map((_, i) => i);
      const xs = labels.map((l) => xOf(l, P));
      const p = await fitPixels(fn, xs, data.items, guess, data.pixels, ignore);
      return new PixelArray(
        p.map((q) => Float32Array.from(q)),
        null,
        data.pixels,
      );
    }
    if (!Array.isArray(data)) throw invalid(P, 'data', 'a labeled array is expected');
    const labels: Labels = labelsOf(data) ?? data.map((_, i) => i);
    const ys = data.map((v) => Float32Array.of(typeof v === 'number' ? v : NaN));
    const p = await fitPixels(
      fn,
      labels.map((l) => xOf(l, P)),
      ys,
      guess,
      1,
      ignore,
    );
    return p.map((q) => (Number.isNaN(q[0]) ? null : q[0]));
  }),
  implement('predict_curve', async (a, ctx) => {
    const P = 'predict_curve';
    const fn = requireCallback(a.callback('function'), P, 'function');
    const cube = await cubeOf(a.get('parameters'), ctx.run, P, 'parameters');
    const name = a.get<string>('dimension');
    const labels = a.get<(string | number)[] | null>('labels');
    if (!labels || !labels.length) throw invalid(P, 'labels', 'give the labels to predict for');
    const d = dimIndex(cube, name);
    const m = cube.shape[d];
    const { data, rest } = cube.outermost(d);
    const params = Array.from({ length: m }, (_, j) => Float64Array.from(data.subarray(j * rest, (j + 1) * rest)));
    const out = new Float32Array(labels.length * rest);
    const items = paramPlanes(m, rest);
    for (const [k, l] of labels.entries()) {
      const v = await model(fn, xOf(l, P), params, rest, items);
      for (let i = 0; i < rest; i++) out[k * rest + i] = v[i];
    }
    const dims = cube.dims.map((x, i) => (i === d ? { ...x, labels: [...labels] } : x));
    return cube.with({
      dims,
      data: DataCube.fromOutermost(
        out,
        dims.map((x) => x.labels.length),
        d,
      ),
    });
  }),
];
