// A minimal PNG decoder for tests, independent of our encoder and of zlib's CRC: 8-bit,
// non-interlaced, every filter type, indexed colour expanded to RGBA (`indices` keeps the raw
// indices). Reads our tiles and Chromium's screenshots alike.
import { expect } from 'vitest';
import { inflateSync } from 'node:zlib';

export interface DecodedPng {
  width: number;
  height: number;
  channels: 1 | 2 | 3 | 4;
  data: Uint8Array;
  chunks: string[];
  /** For indexed images: the indices, and the palette as RGBA entries. */
  indices?: Uint8Array;
  palette?: Uint8Array;
}

/** Our own CRC-32 (the PNG spec's reflected polynomial 0xedb88320), independent of zlib's. */
const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A minimal PNG decoder for 8-bit non-interlaced images: all five filter types. */
export function decodePng(buf: Buffer): DecodedPng {
  expect([...buf.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const chunks: string[] = [];
  const idat: Buffer[] = [];
  let ihdr: Buffer | null = null;
  let plte: Buffer | null = null;
  let trns: Buffer | null = null;
  for (let at = 8; at < buf.length;) {
    const len = buf.readUInt32BE(at);
    const type = buf.toString('latin1', at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + len);
    expect(buf.readUInt32BE(at + 8 + len), `CRC of ${type}`).toBe(crc32(buf.subarray(at + 4, at + 8 + len)));
    chunks.push(type);
    if (type === 'IHDR') ihdr = data;
    if (type === 'IDAT') idat.push(data);
    if (type === 'PLTE') plte = data;
    if (type === 'tRNS') trns = data;
    at += 12 + len;
  }
  expect(chunks[0]).toBe('IHDR');
  expect(chunks.at(-1)).toBe('IEND');
  const h = ihdr!;
  const width = h.readUInt32BE(0);
  const height = h.readUInt32BE(4);
  expect(h[8]).toBe(8);
  expect([h[10], h[11], h[12]]).toEqual([0, 0, 0]);
  const indexed = h[9] === 3;
  const channels = indexed ? 1 : ({ 0: 1, 4: 2, 2: 3, 6: 4 } as Record<number, 1 | 2 | 3 | 4>)[h[9]];
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  expect(raw.length).toBe((stride + 1) * height);
  const out = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)];
    for (let i = 0; i < stride; i++) {
      const v = raw[y * (stride + 1) + 1 + i];
      const a = i >= channels ? out[y * stride + i - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + i] : 0;
      const c = i >= channels && y > 0 ? out[(y - 1) * stride + i - channels] : 0;
      let pred = 0;
      if (f === 1) pred = a;
      else if (f === 2) pred = b;
      else if (f === 3) pred = (a + b) >> 1;
      else if (f === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else expect(f).toBe(0);
      out[y * stride + i] = (v + pred) & 255;
    }
  }
  if (!indexed) return { width, height, channels, data: out, chunks };
  expect(plte, 'an indexed image has a PLTE chunk').not.toBeNull();
  const entries = plte!.length / 3;
  const palette = new Uint8Array(entries * 4);
  for (let i = 0; i < entries; i++) {
    palette.set(plte!.subarray(3 * i, 3 * i + 3), 4 * i);
    palette[4 * i + 3] = trns && i < trns.length ? trns[i] : 255;
  }
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < out.length; i++) {
    expect(out[i] < entries).toBe(true);
    rgba.set(palette.subarray(4 * out[i], 4 * out[i] + 4), 4 * i);
  }
  return { width, height, channels: 4, data: rgba, chunks, indices: out, palette };
}
