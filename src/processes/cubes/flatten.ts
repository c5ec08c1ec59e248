// flatten_dimensions and unflatten_dimension: several dimensions become one whose labels are the
// labels joined by a separator (in the order the dimensions are named, the last varying fastest),
// and back. Values move with their labels; nothing is computed.
import { ApiError, ProcessException } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import { DataCube, type Dimension } from '../../datacube/datacube.js';
import { cubeOf } from '../../data/lazy.js';
import { dimIndex } from './common.js';

const invalid = (process: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process, parameter, reason });

/** The cube's data with its dimensions in the order `perm` (positions of the old dimensions). */
export function permuted(cube: DataCube, perm: number[]): Float32Array {
  const shape = cube.shape;
  const n = shape.length;
  const oldStride = new Array<number>(n);
  let s = 1;
  for (let d = n - 1; d >= 0; d--) {
    oldStride[d] = s;
    s *= shape[d];
  }
  if (perm.every((p, i) => p === i)) return cube.data;
  const newShape = perm.map((p) => shape[p]);
  const strides = perm.map((p) => oldStride[p]);
  const out = new Float32Array(cube.size);
  const idx = new Array<number>(n).fill(0);
  const inner = newShape[n - 1] ?? 1;
  const innerStride = strides[n - 1] ?? 1;
  for (let o = 0; o < cube.size; o += inner) {
    let src = 0;
    for (let d = 0; d < n - 1; d++) src += idx[d] * strides[d];
    for (let k = 0; k < inner; k++) out[o + k] = cube.data[src + k * innerStride];
    for (let d = n - 2; d >= 0; d--) {
      if (++idx[d] < newShape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

export const processes: ProcessImpl[] = [
  implement('flatten_dimensions', async (a, ctx) => {
    const P = 'flatten_dimensions';
    const cube = await cubeOf(a.get('data'), ctx.run, P);
    const names = a.get<string[]>('dimensions');
    const target = a.get<string>('target_dimension');
    const sep = a.get<string>('label_separator');
    if (!Array.isArray(names) || names.length === 0) throw invalid(P, 'dimensions', 'name at least one dimension');
    const ds = names.map((n) => dimIndex(cube, n));
    if (new Set(ds).size !== ds.length) throw invalid(P, 'dimensions', 'a dimension is named twice');
    if (cube.dims.some((d) => d.name === target && !names.includes(d.name))) throw new ProcessException('TargetDimensionExists', `the cube has a dimension '${target}' already`);
    // New order: the other dimensions, with the joined ones (in the given order) where the first of them was.
    const at = Math.min(...ds);
    const before = cube.dims.map((_, i) => i).filter((i) => !ds.includes(i) && i < at);
    const after = cube.dims.map((_, i) => i).filter((i) => !ds.includes(i) && i > at);
    const perm = [...before, ...ds, ...after];
    let combos: string[][] = [[]];
    for (const d of ds) combos = combos.flatMap((c) => cube.dims[d].labels.map((x) => [...c, String(x)]));
    const labels = combos.map((c) => c.join(sep));
    const dims: Dimension[] = [...before.map((i) => cube.dims[i]), { name: target, type: 'other', labels }, ...after.map((i) => cube.dims[i])];
    const lostSpatial = ds.some((d) => cube.dims[d].type === 'spatial');
    return new DataCube({ dims, data: permuted(cube, perm), grid: lostSpatial ? null : cube.grid, features: cube.features, bandInfo: cube.bandInfo });
  }),
  implement('unflatten_dimension', async (a, ctx) => {
    const P = 'unflatten_dimension';
    const cube = await cubeOf(a.get('data'), ctx.run, P);
    const name = a.get<string>('dimension');
    const targets = a.get<string[]>('target_dimensions');
    const sep = a.get<string>('label_separator');
    const d = dimIndex(cube, name);
    if (!Array.isArray(targets) || targets.length < 2 || new Set(targets).size !== targets.length) throw invalid(P, 'target_dimensions', 'give at least two distinct names');
    const clash = targets.find((t) => t !== name && cube.dims.some((x) => x.name === t));
    if (clash) throw new ProcessException('TargetDimensionExists', `the cube has a dimension '${clash}' already`);
    const k = targets.length;
    const parts = cube.dims[d].labels.map((l) => {
      const p = String(l).split(sep);
      if (p.length !== k) throw invalid(P, 'data', `the label '${l}' splits into ${p.length} part(s) at '${sep}', not ${k}`);
      return p;
    });
    const newLabels = targets.map((_, j) => [...new Set(parts.map((p) => p[j]))]);
    const index = newLabels.map((ls) => new Map(ls.map((l, i) => [l, i])));
    const sizes = newLabels.map((ls) => ls.length);
    const count = sizes.reduce((x, y) => x * y, 1);
    // Position of each old label in the product of the new dimensions.
    const seen = new Set<number>();
    const pos = parts.map((p, i) => {
      let at = 0;
      for (let j = 0; j < k; j++) at = at * sizes[j] + index[j].get(p[j])!;
      if (seen.has(at)) throw invalid(P, 'data', `the label '${cube.dims[d].labels[i]}' splits into the same parts as an earlier one`);
      seen.add(at);
      return at;
    });
    const outer = cube.shape.slice(0, d).reduce((x, y) => x * y, 1);
    const inner = cube.shape.slice(d + 1).reduce((x, y) => x * y, 1);
    const n = cube.shape[d];
    const out = new Float32Array(outer * count * inner).fill(NaN);
    for (let o = 0; o < outer; o++) for (let i = 0; i < n; i++) out.set(cube.data.subarray((o * n + i) * inner, (o * n + i + 1) * inner), (o * count + pos[i]) * inner);
    const dims: Dimension[] = [...cube.dims.slice(0, d), ...targets.map((t, j) => ({ name: t, type: 'other' as const, labels: newLabels[j] })), ...cube.dims.slice(d + 1)];
    const spatial = cube.dims[d].type === 'spatial';
    return new DataCube({ dims, data: out, grid: spatial ? null : cube.grid, features: cube.dims[d].type === 'geometry' ? null : cube.features, bandInfo: cube.bandInfo });
  }),
];
