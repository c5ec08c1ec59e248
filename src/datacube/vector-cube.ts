// Vector cubes from features: the `geometry` dimension (labels 0 .. n-1, the features' positions)
// and, for load_geojson's `properties`, a dimension of property values. A cube of geometries alone
// holds one no-data value per geometry.
import { DataCube, type Dimension } from './datacube.js';
import type { VectorFeatures } from './features.js';

export const GEOMETRY_DIM = 'geometry';

export function geometryDimension(n: number): Dimension {
  return { name: GEOMETRY_DIM, type: 'geometry', labels: Array.from({ length: n }, (_, i) => i) };
}

/** The vector cube of features, without other dimensions. */
export function vectorCube(features: VectorFeatures): DataCube {
  return new DataCube({ dims: [geometryDimension(features.length)], data: new Float32Array(features.length).fill(NaN), features });
}

/** The number a property value stands for in a cube (no-data for anything that is not a number or boolean). */
export function propertyNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return NaN;
}

/** The vector cube of features with a `properties` dimension made from property values (load_geojson). */
export function propertiesCube(features: VectorFeatures, names: string[]): DataCube {
  const n = features.length;
  const cols = names.map((p) => features.properties.column(p));
  if (names.length === 1) {
    const col = cols[0] ?? [];
    const arrays = col.some((v) => Array.isArray(v));
    if (arrays) {
      // One property of arrays: one label per array index, as many as the longest array.
      const len = Math.max(0, ...col.map((v) => (Array.isArray(v) ? v.length : 1)));
      const data = new Float32Array(n * len).fill(NaN);
      col.forEach((v, g) => {
        const xs = Array.isArray(v) ? v : [v];
        xs.forEach((x, k) => (data[g * len + k] = propertyNumber(x)));
      });
      return new DataCube({ dims: [geometryDimension(n), { name: 'properties', type: 'other', labels: Array.from({ length: len }, (_, i) => i) }], data, features });
    }
  }
  const data = new Float32Array(n * names.length).fill(NaN);
  for (let g = 0; g < n; g++) for (let k = 0; k < names.length; k++) data[g * names.length + k] = propertyNumber(cols[k]?.[g]);
  return new DataCube({ dims: [geometryDimension(n), { name: 'properties', type: 'other', labels: [...names] }], data, features });
}
