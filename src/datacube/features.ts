// The features of a vector cube: the geometries (packed, with their CRS), the feature ids and the
// feature properties, one column per property name, all aligned with the cube's geometry dimension.
// Selections along that dimension select here too, so properties travel with their geometries
// through every process to the writers.
import { GeometryBuilder, GeometryColumn, type GeoJsonGeometry } from '../geometry/geometry-column.js';

export type PropertyValue = string | number | boolean | null | PropertyValue[] | { [k: string]: PropertyValue };

/** Feature properties by column: names[i] holds columns[i][feature]. */
export class PropertyTable {
  constructor(
    readonly names: string[],
    readonly columns: PropertyValue[][],
  ) {}

  static empty(): PropertyTable {
    return new PropertyTable([], []);
  }

  /** Builds the table from one property object per feature (missing values are null). */
  static fromRows(rows: (Record<string, unknown> | null | undefined)[]): PropertyTable {
    const index = new Map<string, number>();
    const columns: PropertyValue[][] = [];
    rows.forEach((row, f) => {
      if (!row) return;
      for (const [k, v] of Object.entries(row)) {
        let c = index.get(k);
        if (c === undefined) {
          index.set(k, (c = columns.length));
          columns.push(new Array<PropertyValue>(rows.length).fill(null));
        }
        columns[c][f] = (v ?? null) as PropertyValue;
      }
    });
    return new PropertyTable([...index.keys()], columns);
  }

  column(name: string): PropertyValue[] | null {
    const i = this.names.indexOf(name);
    return i < 0 ? null : this.columns[i];
  }

  row(f: number): Record<string, PropertyValue> {
    const out: Record<string, PropertyValue> = {};
    this.names.forEach((n, i) => (out[n] = this.columns[i][f] ?? null));
    return out;
  }

  select(positions: ArrayLike<number>): PropertyTable {
    return new PropertyTable(
      this.names,
      this.columns.map((c) => Array.from({ length: positions.length }, (_, k) => c[positions[k]] ?? null)),
    );
  }
}

export class VectorFeatures {
  constructor(
    readonly geometries: GeometryColumn,
    readonly properties: PropertyTable = PropertyTable.empty(),
    /** Feature ids as given (GeoJSON `id`, FlatGeobuf fid), or null when the input had none. */
    readonly ids: (string | number | null)[] | null = null,
    /** Whether the polygons were checked for validity already (validity.ts). */
    readonly validated = false,
  ) {
    if (properties.columns.some((c) => c.length !== geometries.length)) throw new Error('feature properties do not match the geometries');
    if (ids && ids.length !== geometries.length) throw new Error('feature ids do not match the geometries');
  }

  get length(): number {
    return this.geometries.length;
  }

  get epsg(): number {
    return this.geometries.epsg;
  }

  select(positions: ArrayLike<number>): VectorFeatures {
    return new VectorFeatures(
      this.geometries.select(positions),
      this.properties.select(positions),
      this.ids ? Array.from({ length: positions.length }, (_, k) => this.ids![positions[k]]) : null,
      this.validated,
    );
  }

  withGeometries(geometries: GeometryColumn, validated = this.validated): VectorFeatures {
    return new VectorFeatures(geometries, this.properties, this.ids, validated);
  }

  reproject(epsg: number): VectorFeatures {
    return this.withGeometries(this.geometries.reproject(epsg));
  }

  /** Feature f as a GeoJSON Feature (geometry in the features' CRS). */
  feature(f: number, extra: Record<string, unknown> = {}): { type: 'Feature'; id?: string | number; geometry: GeoJsonGeometry | null; properties: Record<string, unknown> } {
    const id = this.ids?.[f];
    return { type: 'Feature', ...(id !== null && id !== undefined ? { id } : {}), geometry: this.geometries.toGeoJSON(f), properties: { ...this.properties.row(f), ...extra } };
  }

  /** Features of several sets (same CRS) one after the other. */
  static concat(parts: VectorFeatures[]): VectorFeatures {
    if (parts.length === 1) return parts[0];
    const epsg = parts[0].epsg;
    const rows: Record<string, unknown>[] = [];
    const ids: (string | number | null)[] = [];
    let anyIds = false;
    for (const p of parts) {
      if (p.epsg !== epsg) throw new Error('features of different CRSs');
      for (let f = 0; f < p.length; f++) {
        rows.push(p.properties.row(f));
        ids.push(p.ids?.[f] ?? null);
      }
      anyIds ||= p.ids !== null;
    }
    const b = new GeometryBuilder(epsg);
    for (const p of parts) for (let g = 0; g < p.length; g++) b.copyFrom(p.geometries, g);
    return new VectorFeatures(
      b.finish(),
      PropertyTable.fromRows(rows),
      anyIds ? ids : null,
      parts.every((p) => p.validated),
    );
  }
}
