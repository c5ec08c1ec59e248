// A remote GeoTIFF as geotiff.js reads it, in few round trips: the header (IFDs and the arrays of
// block offsets, which a COG keeps at the front) comes in ONE range request of HEADER_BYTES, grown
// and fetched again while the file is being opened if its IFDs reach further; after that, the
// slices of one fetch (the blocks of a window) are merged where adjacent and requested in parallel.
import { fetchRange, RemoteError } from './http-client.js';
import type { OutboundPolicy } from './outbound.js';
import { HEADER_BYTES, type HeaderSeed } from '../core/catalog.js';

export { HEADER_BYTES };
/** Slices closer than this are fetched as one range (a few wasted bytes cost less than a round trip). */
const MERGE_GAP = 16 * 1024;
const MAX_HEADER_BYTES = 16 * 1024 * 1024;

interface Slice {
  offset: number;
  length: number;
}

/** The source interface of geotiff.js (its BaseSource is not exported): fetch, fileSize, close. */
export class HttpRangeSource {
  private header: Promise<Buffer> | null = null;
  private size: number | null = null;
  /** While true (opening), slices beyond the header grow the header instead of being fetched alone. */
  opening = true;

  constructor(
    readonly url: string,
    private readonly policy: OutboundPolicy,
    /** Turns `url` into the URL to request, each time (an s3:// href becomes a presigned URL that expires). */
    private readonly sign?: (url: string) => Promise<string>,
    /** The header read ahead (a service's warm-up): the first header request is answered by it. */
    private seed: HeaderSeed | null = null,
  ) {}

  /** A range of the file; errors name the href, never a presigned URL (it carries a signature). */
  private async range(start: number, end: number, signal?: AbortSignal): Promise<{ data: Buffer; size: number | null }> {
    if (!this.sign) return fetchRange(this.url, this.policy, start, end, signal);
    let signed: string;
    try {
      signed = await this.sign(this.url);
    } catch (e) {
      throw new RemoteError(this.url, (e as Error).message); // no credentials, say
    }
    try {
      return await fetchRange(signed, this.policy, start, end, signal);
    } catch (e) {
      if (e instanceof RemoteError) throw new RemoteError(this.url, e.reason.split(signed).join(this.url));
      throw e;
    }
  }

  get fileSize(): number | null {
    return this.size;
  }

  async close(): Promise<void> {}

  /** Bytes held in memory for this file (the header), for the cache's memory bound. */
  get heldBytes(): number {
    return this.headerLength;
  }
  private headerLength = 0;

  private loadHeader(bytes: number): Promise<Buffer> {
    const seed = this.seed;
    this.seed = null;
    const whole = seed && seed.size !== null && seed.bytes.length >= seed.size;
    const seeded = seed && (whole || seed.bytes.length >= bytes) ? Promise.resolve({ data: Buffer.from(seed.bytes.buffer, seed.bytes.byteOffset, seed.bytes.byteLength), size: seed.size }) : null;
    const p = (seeded ?? this.range(0, bytes)).then(({ data, size }) => {
      this.size = size;
      this.headerLength = data.length;
      return data;
    });
    p.catch(() => {
      if (this.header === p) this.header = null;
    });
    return (this.header = p);
  }

  async fetch(slices: Slice[], signal?: AbortSignal): Promise<ArrayBuffer[]> {
    let header = await (this.header ?? this.loadHeader(HEADER_BYTES));
    const end = Math.max(...slices.map((s) => s.offset + s.length));
    const whole = this.size !== null && header.length >= this.size;
    if (this.opening && end > header.length && !whole) {
      // The IFDs reach beyond the header: fetch a header that holds them (at least twice as large).
      const want = Math.max(end, 2 * header.length);
      if (want > MAX_HEADER_BYTES) throw new RemoteError(this.url, `its TIFF header is larger than ${MAX_HEADER_BYTES} bytes`);
      header = await this.loadHeader(Math.ceil(want / HEADER_BYTES) * HEADER_BYTES);
    }
    const out: ArrayBuffer[] = new Array(slices.length);
    const far: number[] = [];
    slices.forEach((s, i) => {
      if (s.offset + s.length <= header.length || whole) out[i] = copy(header, s.offset, s.length);
      else far.push(i);
    });
    if (!far.length) return out;
    // Adjacent or nearly adjacent slices become one range; the ranges go out together.
    far.sort((a, b) => slices[a].offset - slices[b].offset);
    const groups: number[][] = [];
    for (const i of far) {
      const g = groups[groups.length - 1];
      const prev = g && slices[g[g.length - 1]];
      if (prev && slices[i].offset <= prev.offset + prev.length + MERGE_GAP) g.push(i);
      else groups.push([i]);
    }
    await Promise.all(
      groups.map(async (g) => {
        const start = slices[g[0]].offset;
        const stop = Math.max(...g.map((i) => slices[i].offset + slices[i].length));
        const { data } = await this.range(start, stop, signal);
        if (data.length < stop - start) throw new RemoteError(this.url, `a range request for bytes ${start}-${stop - 1} brought ${data.length} bytes`);
        for (const i of g) out[i] = copy(data, slices[i].offset - start, slices[i].length);
      }),
    );
    return out;
  }
}

function copy(buf: Buffer, offset: number, length: number): ArrayBuffer {
  const n = Math.max(0, Math.min(length, buf.length - offset));
  const out = new ArrayBuffer(n);
  new Uint8Array(out).set(buf.subarray(offset, offset + n));
  return out;
}
