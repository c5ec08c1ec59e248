// A computed chunk as it waits in the result store for the assembly: already encoded for the COG
// (its deflated tiles, the small overview pieces that need other chunks, its band statistics), so
// the compressing is done by the worker that computed it and the assembly only places the tiles.
// Layout: 'XCK2', the byte length of a JSON head, the head, then the tiles' bytes and the pieces'
// float32 samples in the order the head lists them.
import type { EncodedChunk } from './outputs.js';

const MAGIC = 0x324b4358; // 'XCK2' little-endian

interface Head {
  names: string[];
  win: EncodedChunk['encoded']['win'];
  stats: EncodedChunk['stats'];
  /** level, index, bytes */
  tiles: [number, number, number][];
  /** level, x, y, width, height */
  pieces: [number, number, number, number, number][];
}

/** One buffer of its own (so a thread can hand it over without a copy). */
export function chunkBlob(names: string[], chunk: EncodedChunk): Uint8Array {
  const e = chunk.encoded;
  const head: Head = {
    names,
    win: e.win,
    // JSON has no Infinity: a chunk without valid values (n = 0) keeps zeros, which merging skips.
    stats: chunk.stats.map((s) => (s.n === 0 ? { n: 0, sum: 0, sq: 0, min: 0, max: 0 } : s)),
    tiles: e.tiles.map((t) => [t.level, t.index, t.data.length]),
    pieces: e.pieces.map((p) => [p.level, p.x, p.y, p.raster.width, p.raster.height]),
  };
  for (const p of e.pieces) for (const b of p.raster.bands) if (!(b instanceof Float32Array)) throw new Error('a job chunk piece is not float32');
  const headBytes = Buffer.from(JSON.stringify(head));
  const size = 8 + headBytes.length + e.tiles.reduce((n, t) => n + t.data.length, 0) + e.pieces.reduce((n, p) => n + p.raster.bands.length * p.raster.width * p.raster.height * 4, 0);
  const out = new Uint8Array(new ArrayBuffer(size));
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, headBytes.length, true);
  out.set(headBytes, 8);
  let at = 8 + headBytes.length;
  for (const t of e.tiles) {
    out.set(t.data, at);
    at += t.data.length;
  }
  for (const p of e.pieces) {
    for (const b of p.raster.bands) {
      out.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength), at);
      at += b.byteLength;
    }
  }
  return out;
}

export function readChunkBlob(bytes: Buffer): { names: string[]; chunk: EncodedChunk } {
  if (bytes.length < 8 || bytes.readUInt32LE(0) !== MAGIC) throw new Error('not a chunk of a job run');
  const headEnd = 8 + bytes.readUInt32LE(4);
  const head = JSON.parse(bytes.subarray(8, headEnd).toString('utf8')) as Head;
  let at = headEnd;
  const take = (n: number) => {
    if (at + n > bytes.length) throw new Error('a chunk of a job run is cut short');
    const part = bytes.subarray(at, at + n);
    at += n;
    return part;
  };
  const tiles = head.tiles.map(([level, index, n]) => ({ level, index, data: take(n) }));
  const pieces = head.pieces.map(([level, x, y, width, height]) => ({
    level,
    x,
    y,
    // Copied into aligned memory: the buffer's offsets need not be multiples of 4.
    raster: { width, height, bands: head.names.map(() => new Float32Array(new Uint8Array(take(width * height * 4)).buffer)) },
  }));
  if (at !== bytes.length) throw new Error('a chunk of a job run has bytes left over');
  return { names: head.names, chunk: { encoded: { win: head.win, tiles, pieces }, stats: head.stats } };
}
