// A vector cube as bytes and back: the part of a zonal batch job one chunk computed, on its way
// to the assembly (through the result store when workers compute it). Layout: 'XVC1', the byte
// length of a JSON head (dimensions, CRS, ids, properties, array lengths), the head, then the
// geometry arrays and the values, each at an 8-byte aligned offset.
import { DataCube, type Dimension } from './datacube.js';
import { GeometryColumn } from '../geometry/geometry-column.js';
import { PropertyTable, VectorFeatures, type PropertyValue } from './features.js';

const MAGIC = 0x31435658; // 'XVC1' little-endian

interface Head {
  dims: Dimension[];
  epsg: number;
  ids: (string | number | null)[] | null;
  names: string[];
  columns: PropertyValue[][];
  validated: boolean;
  /** Element counts of types, geomParts, partKinds, partRings, ringStarts, xy, data. */
  lengths: number[];
}

const align8 = (n: number) => Math.ceil(n / 8) * 8;

export function encodeVectorCube(cube: DataCube): Uint8Array {
  const f = cube.features;
  if (!f) throw new Error('not a vector cube');
  const g = f.geometries;
  const arrays: ArrayBufferView[] = [g.types, g.geomParts, g.partKinds, g.partRings, g.ringStarts, g.xy, cube.data];
  const head: Head = {
    dims: cube.dims,
    epsg: g.epsg,
    ids: f.ids,
    names: f.properties.names,
    columns: f.properties.columns,
    validated: f.validated,
    lengths: arrays.map((a) => (a as unknown as { length: number }).length),
  };
  const headBytes = Buffer.from(JSON.stringify(head));
  let size = align8(8 + headBytes.length);
  for (const a of arrays) size += align8(a.byteLength);
  const out = new Uint8Array(new ArrayBuffer(size));
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, headBytes.length, true);
  out.set(headBytes, 8);
  let at = align8(8 + headBytes.length);
  for (const a of arrays) {
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
    at += align8(a.byteLength);
  }
  return out;
}

export function decodeVectorCube(bytes: Uint8Array): DataCube {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 8 || view.getUint32(0, true) !== MAGIC) throw new Error('not a vector cube part');
  const headLen = view.getUint32(4, true);
  const head = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset + 8, headLen).toString('utf8')) as Head;
  let at = align8(8 + headLen);
  const kinds = [Uint8Array, Uint32Array, Uint8Array, Uint32Array, Uint32Array, Float64Array, Float32Array] as const;
  const arrays = kinds.map((K, i) => {
    const n = head.lengths[i];
    const byteLength = n * K.BYTES_PER_ELEMENT;
    if (at + byteLength > bytes.length) throw new Error('a vector cube part is cut short');
    // copied: the source offset need not be aligned for the element size
    const a = new K(n);
    new Uint8Array(a.buffer).set(bytes.subarray(at, at + byteLength));
    at += align8(byteLength);
    return a;
  });
  const [types, geomParts, partKinds, partRings, ringStarts, xy, data] = arrays as [Uint8Array, Uint32Array, Uint8Array, Uint32Array, Uint32Array, Float64Array, Float32Array];
  const features = new VectorFeatures(new GeometryColumn(head.epsg, types, geomParts, partKinds, partRings, ringStarts, xy), new PropertyTable(head.names, head.columns), head.ids, head.validated);
  return new DataCube({ dims: head.dims, data, features });
}

/**
 * The parts of a vector cube computed apart (each a subset of its geometries, in any order),
 * joined in the order of their geometry positions; `positions[k]` lists the original positions of
 * part k's geometries.
 */
export function joinVectorParts(parts: DataCube[], positions: number[][]): DataCube {
  if (!parts.length) throw new Error('no parts to join');
  const first = parts[0];
  const gd = first.dims.findIndex((d) => d.type === 'geometry');
  if (gd !== 0) throw new Error('the geometry dimension of a part is not its first');
  const rest = first.size / Math.max(1, first.shape[0]);
  const epsg = first.features!.epsg;
  const all = VectorFeatures.concat(parts.map((p) => (p.features!.epsg === epsg ? p.features! : p.features!.reproject(epsg))));
  // order: by original position
  const entries: { pos: number; part: number; k: number; offset: number }[] = [];
  let offset = 0;
  parts.forEach((p, i) => {
    positions[i].forEach((pos, k) => entries.push({ pos, part: i, k, offset: offset + k }));
    offset += p.shape[0];
  });
  entries.sort((a, b) => a.pos - b.pos);
  const data = new Float32Array(entries.length * rest);
  const labels: (string | number)[] = [];
  entries.forEach((e, j) => {
    const p = parts[e.part];
    data.set(p.data.subarray(e.k * rest, (e.k + 1) * rest), j * rest);
    labels.push(p.dims[0].labels[e.k]);
  });
  return new DataCube({ dims: [{ ...first.dims[0], labels }, ...first.dims.slice(1)], data, features: all.select(entries.map((e) => e.offset)) });
}
