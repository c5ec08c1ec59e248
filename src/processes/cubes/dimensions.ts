// Processes on the dimensions of a cube: their names, labels and count (rename_labels,
// add_dimension, drop_dimension, dimension_labels, rename_dimension, trim_cube, create_data_cube,
// filter_labels). A raster cube's `grid` must stay in step with its `y` and `x` dimensions: label
// changes on them are refused, cuts along them go through cropCube, dropping one drops the grid.
import { ApiError } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import { ProcessException } from '../../core/errors.js';
import { dateTimeMs, labelStart, type Labels } from '../../core/labels.js';
import { DataCube, gridLabels, spatialDims, type Dimension, type DimensionType } from '../../datacube/datacube.js';
import { LazyCube, cubeOf } from '../../data/lazy.js';
import { bandsOf, collectionOf } from '../../data/load.js';
import { cropCube } from './filters.js';
import { dimIndex, requireCallback } from './common.js';

type Label = string | number;

const invalid = (process: string, parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process, parameter, reason });

/**
 * A key under which two labels of a dimension are the same label: dates and date-times of temporal
 * dimensions by instant (so '2020-06-01' matches '2020-06-01T00:00:00Z'), other labels by type and
 * value (1 is not '1'; a text label such as a week '2020-23' is itself).
 */
export function labelKey(type: DimensionType, l: Label): string {
  if (type === 'temporal' && typeof l === 'string') {
    const t = dateTimeMs(l);
    if (!Number.isNaN(t)) return `t:${t}`;
  }
  return typeof l === 'number' ? `n:${l}` : `s:${l}`;
}

/** Whether dimension d is the x or y dimension of a raster cube (its labels belong to the grid). */
export function isGridDim(cube: DataCube, d: number): boolean {
  return cube.grid !== null && cube.dims[d].type === 'spatial' && (cube.dims[d].axis === 'x' || cube.dims[d].axis === 'y');
}

/** Keeps label positions `keep` (ascending) of dimension d; for grid dimensions they must be one run. */
export function keepLabels(cube: DataCube, d: number, keep: number[], processId: string, parameter: string): DataCube {
  if (keep.length === cube.shape[d]) return cube;
  if (!isGridDim(cube, d)) return cube.select(d, keep);
  const first = keep.length ? keep[0] : 0;
  const last = keep.length ? keep[keep.length - 1] : -1;
  if (last - first + 1 !== keep.length) throw invalid(processId, parameter, `the ${cube.dims[d].name} labels kept must form one contiguous range, or the raster grid would break`);
  const g = cube.grid!;
  return cube.dims[d].axis === 'x' ? cropCube(cube, first, last, 0, g.height - 1) : cropCube(cube, 0, g.width - 1, first, last);
}

export const processes: ProcessImpl[] = [
  implement('rename_labels', async (a, ctx) => {
    const cube = await cubeOf(a.get('data'), ctx.run, 'rename_labels');
    const d = dimIndex(cube, a.get<string>('dimension'));
    const dim = cube.dims[d];
    const target = a.get<Label[]>('target');
    const source = a.get<Label[] | null>('source') ?? [];
    if (!Array.isArray(target)) throw invalid('rename_labels', 'target', 'an array of labels is expected');
    if (isGridDim(cube, d)) throw invalid('rename_labels', 'dimension', `the labels of '${dim.name}' are the pixel coordinates of the raster grid and cannot be renamed`);
    const labels = [...dim.labels];
    let positions: number[];
    if (source.length === 0) {
      const enumerated = labels.every((l, i) => l === i || l === String(i));
      if (!enumerated) throw new ProcessException('LabelsNotEnumerated', `the labels of '${dim.name}' are not 0, 1, 2, ...; name the labels to rename in 'source'`);
      if (target.length > labels.length) throw new ProcessException('LabelMismatch', `'${dim.name}' has ${labels.length} labels, but 'target' has ${target.length}`);
      positions = target.map((_, i) => i);
    } else {
      if (source.length !== target.length) throw new ProcessException('LabelMismatch', `'source' has ${source.length} labels and 'target' ${target.length}`);
      const at = new Map(labels.map((l, i) => [labelKey(dim.type, l), i]));
      positions = source.map((s) => {
        const i = at.get(labelKey(dim.type, s));
        if (i === undefined) throw new ProcessException('LabelNotAvailable', `'${dim.name}' has no label '${s}'`);
        return i;
      });
    }
    // Labels are numbers or strings; on a temporal dimension they need not be dates (the
    // definition asks for none): text labels stay text, in outputs and further processes.
    const bad = target.find((l) => typeof l !== 'string' && typeof l !== 'number');
    if (bad !== undefined) throw invalid('rename_labels', 'target', `labels are numbers or strings, not ${JSON.stringify(bad)}`);
    positions.forEach((p, k) => (labels[p] = target[k]));
    const seen = new Set<string>();
    for (const l of labels) {
      const k = labelKey(dim.type, l);
      if (seen.has(k)) throw new ProcessException('LabelExists', `the label '${l}' would occur twice in '${dim.name}'`);
      seen.add(k);
    }
    // Band metadata follows the bands to their new names.
    let bandInfo = cube.bandInfo;
    if (dim.type === 'bands') {
      bandInfo = { ...cube.bandInfo };
      for (const p of positions) delete bandInfo[String(dim.labels[p])];
      positions.forEach((p, k) => {
        const info = cube.bandInfo[String(dim.labels[p])];
        if (info) bandInfo[String(target[k])] = info;
      });
    }
    return cube.with({ dims: cube.dims.map((x, i) => (i === d ? { ...x, labels } : x)), bandInfo });
  }),
  implement('add_dimension', async (a, ctx) => {
    const cube = await cubeOf(a.get('data'), ctx.run, 'add_dimension');
    const name = a.get<string>('name');
    const label = a.get<Label>('label');
    const type = a.get<DimensionType>('type');
    if (cube.has(name)) throw new ProcessException('DimensionExists', `the data cube has a dimension '${name}' already`);
    if (typeof label !== 'string' && typeof label !== 'number') throw invalid('add_dimension', 'label', 'a number or a string is expected');
    const dim: Dimension = { name, type, labels: [label] };
    if (type === 'temporal' && (typeof label !== 'string' || Number.isNaN(labelStart(label)))) {
      throw invalid('add_dimension', 'label', 'the label of a temporal dimension must be a date or date-time such as 2024-06-21T10:00:00Z');
    }
    if (type === 'geometry') throw invalid('add_dimension', 'type', 'a geometry dimension needs geometries; create vector data cubes with load_geojson or aggregate_spatial');
    if (type === 'spatial') {
      const used = new Set(cube.dims.filter((x) => x.type === 'spatial').map((x) => x.axis ?? 'z'));
      const axis = (['x', 'y', 'z'] as const).find((x) => !used.has(x));
      if (!axis) throw new ProcessException('DimensionExists', 'the data cube has spatial dimensions for all of the axes x, y and z');
      if (axis !== 'z') dim.axis = axis;
    }
    return cube.with({ dims: [dim, ...cube.dims] });
  }),
  implement('drop_dimension', async (a, ctx) => {
    const cube = await cubeOf(a.get('data'), ctx.run, 'drop_dimension');
    const d = dimIndex(cube, a.get<string>('name'));
    const dim = cube.dims[d];
    if (dim.labels.length !== 1) throw new ProcessException('DimensionLabelCountMismatch', `'${dim.name}' has ${dim.labels.length} labels; only a dimension of one label can be dropped`);
    return cube.with({
      dims: cube.dims.filter((_, i) => i !== d),
      grid: dim.type === 'spatial' ? null : cube.grid,
      features: dim.type === 'geometry' ? null : cube.features,
    });
  }),
  implement('dimension_labels', async (a, ctx) => {
    const data = a.get<unknown>('data');
    const name = a.get<string>('dimension');
    if (data instanceof LazyCube) {
      // The labels of a load are known from its plan, without reading pixels.
      const plan = data.plan();
      const { x, y } = gridLabels(plan.grid);
      const known: Record<string, Labels> = { t: plan.times, bands: plan.bands.map((b) => b.name), y, x };
      if (!(name in known)) throw new ProcessException('DimensionNotAvailable', `the data cube has no dimension '${name}' (it has t, bands, y, x)`);
      return [...known[name]];
    }
    const cube = await cubeOf(data, ctx.run, 'dimension_labels');
    return [...cube.dims[dimIndex(cube, name)].labels];
  }),
  implement('rename_dimension', async (a, ctx) => {
    const cube = await cubeOf(a.get('data'), ctx.run, 'rename_dimension');
    const d = dimIndex(cube, a.get<string>('source'));
    const target = a.get<string>('target');
    if (cube.has(target)) throw new ProcessException('DimensionExists', `the data cube has a dimension '${target}' already`);
    return cube.with({ dims: cube.dims.map((x, i) => (i === d ? { ...x, name: target } : x)) });
  }),
  implement('trim_cube', async (a, ctx) => {
    const cube = await cubeOf(a.get('data'), ctx.run, 'trim_cube');
    const n = cube.dims.length;
    const shape = cube.shape;
    const valid = shape.map((s) => new Uint8Array(s));
    const coords = new Int32Array(n);
    const data = cube.data;
    for (let i = 0; i < data.length; i++) {
      if (data[i] === data[i]) for (let d = 0; d < n; d++) valid[d][coords[d]] = 1;
      for (let d = n - 1; d >= 0; d--) {
        if (++coords[d] < shape[d]) break;
        coords[d] = 0;
      }
    }
    const ranges = valid.map((v) => {
      const first = v.indexOf(1);
      return first < 0 ? [0, -1] : [first, v.lastIndexOf(1)];
    });
    let out = cube;
    for (let d = 0; d < n; d++) {
      if (isGridDim(cube, d)) continue;
      const ordered = cube.dims[d].type === 'spatial' || cube.dims[d].type === 'temporal';
      const keep: number[] = [];
      for (let i = 0; i < shape[d]; i++) if (ordered ? i >= ranges[d][0] && i <= ranges[d][1] : valid[d][i]) keep.push(i);
      if (keep.length !== shape[d]) out = out.select(d, keep);
    }
    if (cube.grid) {
      const xi = cube.dims.findIndex((x) => x.type === 'spatial' && x.axis === 'x');
      const yi = cube.dims.findIndex((x) => x.type === 'spatial' && x.axis === 'y');
      const [c0, c1] = ranges[xi];
      const [r0, r1] = ranges[yi];
      if (c0 !== 0 || c1 !== shape[xi] - 1 || r0 !== 0 || r1 !== shape[yi] - 1) out = cropCube(out, c0, c1, r0, r1);
    }
    return out;
  }),
  implement('create_data_cube', () => new DataCube({ dims: [], data: new Float32Array([NaN]) })),
  implement('filter_labels', async (a, ctx) => {
    const data = a.get<unknown>('data');
    const cb = requireCallback(a.callback('condition'), 'filter_labels', 'condition');
    const name = a.get<string>('dimension');
    const context = a.get('context');
    const test = async (labels: Labels) => {
      const keep: number[] = [];
      for (let i = 0; i < labels.length; i++) if ((await cb({ value: labels[i], context })) === true) keep.push(i);
      return keep;
    };
    if (data instanceof LazyCube && name === 'bands') {
      // Narrow the bands of the load instead of reading bands that are dropped.
      const meta = collectionOf(data.spec.source, data.spec.collection);
      const names = bandsOf(meta, data.spec.bands).map((b) => b.name);
      const keep = await test(names);
      if (keep.length) return data.with({ bands: keep.map((i) => names[i]) });
      // No band left: an empty cube of the load's dates and grid, without reading anything.
      const plan = data.plan();
      return new DataCube({ dims: [{ name: 't', type: 'temporal', labels: plan.times }, { name: 'bands', type: 'bands', labels: [] }, ...spatialDims(plan.grid)], data: new Float32Array(0), grid: plan.grid });
    }
    const cube = await cubeOf(data, ctx.run, 'filter_labels');
    const d = dimIndex(cube, name);
    return keepLabels(cube, d, await test(cube.dims[d].labels), 'filter_labels', 'condition');
  }),
];
