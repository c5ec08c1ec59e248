// apply_polygon: the child process runs once per polygon on the cube cut to the polygon's pixels
// (pixel centre inside; the rest of the cut-out holds `mask_value`), and what it answers for those
// pixels is written into the result. Pixels outside every polygon hold `mask_value` too. A pixel
// claimed by two polygons is an error: the polygons must not overlap.
import { ApiError } from '../../core/errors.js';
import { implement, type ProcessImpl } from '../implement.js';
import { ProcessException } from '../../core/errors.js';
import { DataCube } from '../../datacube/datacube.js';
import { cubeOf } from '../../data/lazy.js';
import { spanBoxes, spansOf } from '../../datacube/spans.js';
import type { Grid } from '../../core/grid.js';
import type { VectorFeatures } from '../../datacube/features.js';
import { cropCube, geometriesArg } from './filters.js';
import { requireCallback } from './common.js';
import { vectorLimits } from '../../datacube/vector-limits.js';

const P = 'apply_polygon';
const invalid = (parameter: string, reason: string) => new ApiError('ProcessParameterInvalid', { process: P, parameter, reason });

/** The number a mask value stands for in a cube (null = no-data). */
function maskValueOf(v: unknown): number {
  if (v === null || v === undefined) return NaN;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return v;
  throw invalid('mask_value', 'this back-end stores numbers in data cubes: give a number, a boolean or null');
}

interface Part {
  /** 1-based owner id in the owner plane. */
  id: number;
  /** Pixel box of the polygon's pixels: columns c0..c1, rows r0..r1. */
  c0: number;
  c1: number;
  r0: number;
  r1: number;
}

/**
 * Gives every pixel the id of the polygon whose interior (or boundary) holds its centre (0 = none)
 * and finds the pixel box of each polygon; a pixel in two polygons raises GeometriesOverlap.
 */
function ownersOf(polygons: VectorFeatures, grid: Grid): { owner: Int32Array; parts: Part[] } {
  const W = grid.width;
  const owner = new Int32Array(W * grid.height);
  const spans = spansOf(polygons.geometries, grid);
  const d = spans.data;
  for (let i = 0; i < spans.count; i++) {
    const id = d[4 * i] + 1;
    const row = d[4 * i + 1];
    for (let col = d[4 * i + 2]; col < d[4 * i + 3]; col++) {
      const at = row * W + col;
      if (owner[at] !== 0 && owner[at] !== id) {
        throw new ProcessException('GeometriesOverlap', `polygons ${owner[at] - 1} and ${id - 1} (counted from 0) both hold the pixel at column ${col}, row ${row}`);
      }
      owner[at] = id;
    }
  }
  const boxes = spanBoxes(spans);
  const parts: Part[] = [];
  for (let l = 0; l < spans.labels; l++) {
    if (boxes[4 * l] < 0) continue;
    parts.push({ id: l + 1, c0: boxes[4 * l], r0: boxes[4 * l + 1], c1: boxes[4 * l + 2], r1: boxes[4 * l + 3] });
  }
  return { owner, parts };
}

export const processes: ProcessImpl[] = [
  implement('apply_polygon', async (a, ctx) => {
    const cb = requireCallback(a.callback('process'), P, 'process');
    const geoms = await geometriesArg(a.get('geometries'), P, vectorLimits(ctx.run));
    const cols = geoms.geometries;
    for (let g = 0; g < cols.length; g++) {
      const t = cols.typeName(g);
      if (t !== null && t !== 'Polygon' && t !== 'MultiPolygon') throw invalid('geometries', `only polygons and multi-polygons are allowed, not a ${t} (feature ${g})`);
    }
    const keep = Array.from({ length: cols.length }, (_, g) => g).filter((g) => !cols.isEmpty(g));
    if (!keep.length) throw invalid('geometries', 'there is no (non-empty) polygon');
    const polygons = geoms.select(keep);
    const fill = maskValueOf(a.get('mask_value'));
    const context = a.get('context');
    const cube = await cubeOf(a.get('data'), ctx.run, P, 'data');
    const grid = cube.grid;
    if (!grid) throw invalid('data', 'a raster data cube (with x and y) is expected');
    const { owner, parts } = ownersOf(polygons, grid);
    const W = grid.width;
    const plane = W * grid.height;
    const planes = cube.size / plane;
    const out = new Float32Array(cube.size).fill(fill);
    for (const part of parts) {
      const w = part.c1 - part.c0 + 1;
      const h = part.r1 - part.r0 + 1;
      const sub = cropCube(cube, part.c0, part.c1, part.r0, part.r1);
      const subData = sub.data;
      for (let r = 0; r < h; r++) {
        for (let c = 0; c < w; c++) {
          if (owner[(part.r0 + r) * W + part.c0 + c] === part.id) continue;
          for (let p = 0; p < planes; p++) subData[(p * h + r) * w + c] = fill;
        }
      }
      const answer = await cb({ data: sub, context });
      if (!(answer instanceof DataCube)) throw invalid('process', 'the child process must answer a data cube');
      const same = answer.dims.length === sub.dims.length && answer.dims.every((d, i) => d.name === sub.dims[i].name && d.type === sub.dims[i].type && d.labels.length === sub.shape[i]);
      if (!same) {
        throw invalid(
          'process',
          `the child process must answer a cube with the dimensions of the cut-out (${sub.dims.map((d, i) => `${d.name}: ${sub.shape[i]}`).join(', ')}), in that order and with as many labels`,
        );
      }
      const res = answer.data;
      for (let r = 0; r < h; r++) {
        const row = (part.r0 + r) * W + part.c0;
        for (let c = 0; c < w; c++) {
          if (owner[row + c] !== part.id) continue;
          for (let p = 0; p < planes; p++) out[p * plane + row + c] = res[(p * h + r) * w + c];
        }
      }
    }
    return cube.with({ data: out });
  }),
];
