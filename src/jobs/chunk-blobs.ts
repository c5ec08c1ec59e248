// A computed chunk as it waits in the result store for the assembly: a small JSON head (band
// names, plane length) after its byte length, then the float32 planes as they are in memory.
// Uncompressed: the chunk lives for minutes, and compressing it would cost the workers' CPU twice.

const MAGIC = 0x4b484358; // 'XCHK' little-endian

export function encodeChunk(names: string[], planes: Float32Array[]): AsyncIterable<Buffer> {
  const length = planes[0]?.length ?? 0;
  const head = Buffer.from(JSON.stringify({ names, length }));
  const prefix = Buffer.alloc(8);
  prefix.writeUInt32LE(MAGIC, 0);
  prefix.writeUInt32LE(head.length, 4);
  return (async function* () {
    yield Buffer.concat([prefix, head]);
    for (const p of planes) yield Buffer.from(p.buffer, p.byteOffset, p.byteLength);
  })();
}

export function decodeChunk(bytes: Buffer): { names: string[]; planes: Float32Array[] } {
  if (bytes.length < 8 || bytes.readUInt32LE(0) !== MAGIC) throw new Error('not a chunk of a job run');
  const headEnd = 8 + bytes.readUInt32LE(4);
  const { names, length } = JSON.parse(bytes.subarray(8, headEnd).toString('utf8')) as { names: string[]; length: number };
  if (bytes.length !== headEnd + names.length * length * 4) throw new Error('a chunk of a job run is cut short');
  // Copied into aligned memory: the buffer's offset need not be a multiple of 4.
  const planes = names.map((_, i) => {
    const start = headEnd + i * length * 4;
    const plane = new Float32Array(length);
    new Uint8Array(plane.buffer).set(bytes.subarray(start, start + length * 4));
    return plane;
  });
  return { names, planes };
}
