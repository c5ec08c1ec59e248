// A data cube through a Python UDF and back: the cube's dimensions and labels go as a small
// header (t as dates, bands as names, x and y as pixel-centre coordinates), its values as one raw
// float32 file; the answer comes back the same way, in the dimension order the parent process
// needs. What the UDF answers is checked here (it comes from the user's code): dimension names
// and sizes, labels, x and y unchanged.
import { createHash } from 'node:crypto';
import { ApiError } from '../core/errors.js';
import type { Labels } from '../core/labels.js';
import { DataCube, type Dimension } from '../datacube/datacube.js';
import { plane } from '../wasm/kernels.js';
import { addStage } from '../core/stages.js';
import { maxCallValues, requireLink, UdfCallError, type UdfLink } from './client.js';
import type { CallSpec, RunnerReply, UdfLogEntry, UdfMode, UdfProblem, WireDimension } from './protocol.js';

/** Who runs a UDF and how: the per-user interpreter, the time limit, cancellation, the run's log. */
export interface UdfRunContext {
  user: string;
  /** run_udf's `version` (checked where the runtime is known), or null for the default. */
  version?: string | null;
  timeoutMs: number;
  signal?: AbortSignal;
  log(entry: UdfLogEntry): void;
  /** The engine's link to the UDF runtimes (null where none run). */
  link: UdfLink | null;
}

export const codeId = (code: string) => createHash('sha256').update(code).digest('hex').slice(0, 32);

/** What the parent process needs back, by mode (see protocol.ts UdfMode). */
function expectation(cube: DataCube, mode: UdfMode, dimension?: string): { expect: string[] | null; squeeze?: string } {
  const names = cube.dims.map((d) => d.name);
  if (mode === 'reduce') return { expect: names.filter((n) => n !== dimension), squeeze: dimension };
  if (mode === 'run') return { expect: null };
  return { expect: names };
}

function wire(d: Dimension): WireDimension {
  return { name: d.name, type: d.type, labels: [...d.labels] };
}

/** The UDF's own failure as the error answered (its traceback along for the log). */
export function udfError(p: UdfProblem | undefined): ApiError {
  const message = p?.message ?? 'the UDF answered nothing';
  const e = new ApiError(p?.kind === 'invalid' ? 'UdfInvalid' : 'UdfFailed', { reason: message });
  if (p?.stacktrace) e.stacktrace = p.stacktrace;
  return e;
}

function logAll(ctx: UdfRunContext, logs: unknown): void {
  if (!Array.isArray(logs)) return;
  for (const l of logs.slice(0, 1000) as UdfLogEntry[]) {
    if (!l || typeof l.message !== 'string') continue;
    const level = ['error', 'warning', 'info', 'debug'].includes(l.level) ? l.level : 'info';
    ctx.log({ level, message: l.message.slice(0, 4000), ...(l.data !== undefined ? { data: l.data } : {}), ...(typeof l.code === 'string' ? { code: l.code } : {}) });
  }
}

/** Labels the UDF answered for a dimension it got: the originals when they denote the same (dates in another spelling). */
function sameLabels(input: Labels, answered: Labels, temporal: boolean): boolean {
  if (input.length !== answered.length) return false;
  return input.every((l, i) => {
    const a = answered[i];
    if (l === a) return true;
    if (temporal && typeof l === 'string' && typeof a === 'string') return Date.parse(l) === Date.parse(a);
    return typeof l === 'number' && typeof a === 'number' && Math.abs(l - a) <= 1e-9 * Math.max(1, Math.abs(l));
  });
}

/** The cube the UDF answered, from its reply (untrusted) and values. */
function cubeOfReply(cube: DataCube, reply: RunnerReply, values: Float32Array, mode: UdfMode): DataCube {
  const bad = (why: string) => new ApiError('UdfFailed', { reason: why });
  const names = reply.dims;
  const shape = reply.shape;
  if (!Array.isArray(names) || !Array.isArray(shape) || names.length !== shape.length || !names.every((n) => typeof n === 'string')) throw bad('the UDF answered an inconsistent cube');
  const labels = Array.isArray(reply.labels) && reply.labels.length === names.length ? reply.labels : names.map(() => null);
  const dims: Dimension[] = names.map((name, i) => {
    const n = shape[i];
    const src = cube.dim(name);
    const given = labels[i];
    const answered = Array.isArray(given) && given.length === n && given.every((l) => typeof l === 'string' || typeof l === 'number') ? given : null;
    if (src && src.type === 'spatial' && (src.axis === 'x' || src.axis === 'y')) {
      if (n !== src.labels.length) throw bad(`the UDF answered ${n} values along '${name}' for ${src.labels.length}: it must keep the pixels of x and y`);
      return src;
    }
    if (src) {
      if (answered && !sameLabels(src.labels, answered, src.type === 'temporal')) return { ...src, labels: answered };
      if (n === src.labels.length) return src;
      return { ...src, labels: answered ?? Array.from({ length: n }, (_, k) => k) };
    }
    return { name, type: name === 'bands' ? 'bands' : 'other', labels: answered ?? Array.from({ length: n }, (_, k) => k) };
  });
  if ((mode === 'apply' || mode === 'neighborhood') && dims.some((d, i) => d.labels.length !== cube.shape[i])) {
    throw bad(`in ${mode === 'apply' ? 'apply' : 'apply_neighborhood'} the UDF must answer a cube of the shape it got (${cube.shape.join(' x ')}), not ${shape.join(' x ')}`);
  }
  const y = dims.findIndex((d) => d.type === 'spatial' && d.axis === 'y');
  const x = dims.findIndex((d) => d.type === 'spatial' && d.axis === 'x');
  const raster = cube.grid && x === dims.length - 1 && y === dims.length - 2;
  return new DataCube({ dims, data: values, grid: raster ? cube.grid : null, bandInfo: cube.bandInfo });
}

/**
 * Runs a Python UDF on a cube in the way of its parent process. When the parent works pixel by
 * pixel (apply, and reduce_dimension or apply_dimension along a dimension other than x and y), a
 * cube of more than XEO_UDF_CALL_VALUES values (a batch job that runs as one piece) is handed over
 * in bands of rows, as a chunked job would hand it over in chunks.
 */
export async function pythonOnCube(ctx: UdfRunContext, code: string, mode: UdfMode, cube: DataCube, opts: { dimension?: string; context: unknown }): Promise<DataCube> {
  const spatial = cube.dim(opts.dimension ?? '')?.type === 'spatial';
  if (cube.size > maxCallValues(ctx.link) && cube.grid && !spatial && (mode === 'apply' || mode === 'reduce' || mode === 'apply_dimension')) {
    return inBands(cube, maxCallValues(ctx.link), (band) => pythonOnCube(ctx, code, mode, band, opts));
  }
  return pythonCall(ctx, code, mode, cube, opts);
}

/** Runs `fn` on bands of rows of a raster cube (y and x last) and joins the answers, which must agree on all but y. */
async function inBands(cube: DataCube, callValues: number, fn: (band: DataCube) => Promise<DataCube>): Promise<DataCube> {
  const grid = cube.grid!;
  const H = grid.height;
  const W = grid.width;
  const outer = cube.size / (H * W);
  const rows = Math.max(1, Math.floor(callValues / (outer * W)));
  const answers: DataCube[] = [];
  for (let r0 = 0; r0 < H; r0 += rows) {
    const r1 = Math.min(H, r0 + rows);
    const data = plane(outer * (r1 - r0) * W);
    for (let o = 0; o < outer; o++) data.set(cube.data.subarray((o * H + r0) * W, (o * H + r1) * W), o * (r1 - r0) * W);
    const t = grid.transform;
    const bandGrid = { ...grid, transform: [t[0] + r0 * t[2], t[1], t[2], t[3] + r0 * t[5], t[4], t[5]] as typeof t, height: r1 - r0 };
    const dims = cube.dims.map((d) => (d.type === 'spatial' && d.axis === 'y' ? { ...d, labels: d.labels.slice(r0, r1) } : d));
    answers.push(await fn(cube.with({ dims, data, grid: bandGrid })));
  }
  const first = answers[0];
  const y = first.dims.length - 2;
  const key = (c: DataCube) => JSON.stringify(c.dims.filter((_, i) => i !== y).map((d) => [d.name, d.labels]));
  if (!first.grid || answers.some((a) => key(a) !== key(first) || !a.grid)) throw new ApiError('UdfFailed', { reason: 'the UDF answered bands of rows of one cube with different dimensions or labels' });
  const outerOut = first.size / (first.grid.height * W);
  const out = plane(outerOut * H * W);
  let r0 = 0;
  for (const a of answers) {
    const h = a.grid!.height;
    for (let o = 0; o < outerOut; o++) out.set(a.data.subarray(o * h * W, (o + 1) * h * W), (o * H + r0) * W);
    r0 += h;
  }
  const dims = first.dims.map((d, i) => (i === y ? cube.dims.find((c) => c.name === d.name)! : d));
  return new DataCube({ dims, data: out, grid, bandInfo: first.bandInfo });
}

async function pythonCall(ctx: UdfRunContext, code: string, mode: UdfMode, cube: DataCube, opts: { dimension?: string; context: unknown }): Promise<DataCube> {
  const spec: CallSpec = {
    code,
    codeId: codeId(code),
    kind: 'cube',
    mode,
    ...(opts.dimension !== undefined ? { dimension: opts.dimension } : {}),
    dims: cube.dims.map(wire),
    shape: cube.shape,
    ...expectation(cube, mode, opts.dimension),
    context: opts.context ?? {},
  };
  const answer = await run(ctx, spec, cube.data);
  return cubeOfReply(cube, answer.reply, answer.values!, mode);
}

/** Runs a Python UDF on plain JSON data (run_udf outside a data cube): apply_udf_data with structured data. */
export async function pythonOnJson(ctx: UdfRunContext, code: string, data: unknown, context: unknown): Promise<unknown> {
  const spec: CallSpec = { code, codeId: codeId(code), kind: 'json', mode: 'run', json: data ?? null, context: context ?? {} };
  const answer = await run(ctx, spec, null);
  return answer.reply.json ?? null;
}

async function run(ctx: UdfRunContext, spec: CallSpec, values: Float32Array | null) {
  try {
    const t0 = performance.now();
    const answer = await requireLink(ctx.link).callPython(ctx.user, ctx.timeoutMs, spec, values, ctx.signal, ctx.version ?? null);
    addStage('udf', performance.now() - t0);
    if (typeof answer.reply.userMs === 'number') addStage('udfCode', answer.reply.userMs);
    logAll(ctx, answer.reply.logs);
    if (!answer.reply.ok) throw udfError(answer.reply.error);
    return answer;
  } catch (e) {
    if (e instanceof UdfCallError) {
      logAll(ctx, e.logs);
      throw e.original;
    }
    throw e;
  }
}
