// A temporary file of framed, compressed tiles in the order they were finished, with an index by
// (level, tile). The streaming COG writer spills every tile here as soon as it is deflated, and at
// the end copies them into the COG in its order (smallest level first, row-major), through one
// bounded buffer.
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { writeAll } from './atomic-file.js';
import { LEADER, TRAILER, frameParts } from './cog-tiles.js';

/** Copy buffer for assembling the COG: large enough for few system calls, small next to a raster. */
export const COPY_BYTES = 4 * 1024 * 1024;

export class TileSpill {
  /** Per level, the spill offset of each tile's frame; -1 until it is written. */
  private readonly offsets: Float64Array[];
  /** Per level, each tile's deflated byte count (without leader and trailer). */
  private readonly lengths: Uint32Array[];
  private end = 0;
  private closed = false;

  private constructor(
    private readonly fh: FileHandle,
    readonly path: string,
    tilesPerLevel: readonly number[],
  ) {
    this.offsets = tilesPerLevel.map((n) => new Float64Array(n).fill(-1));
    this.lengths = tilesPerLevel.map((n) => new Uint32Array(n));
  }

  /** Creates the file (it must not exist yet). */
  static async create(path: string, tilesPerLevel: readonly number[]): Promise<TileSpill> {
    return new TileSpill(await open(path, 'wx+'), path, tilesPerLevel);
  }

  /** Memory of the index. */
  get indexBytes(): number {
    return this.offsets.reduce((s, a) => s + a.byteLength, 0) + this.lengths.reduce((s, a) => s + a.byteLength, 0);
  }

  /** Framed bytes spilled or being spilled: what the tiles will take in the COG. */
  get bytes(): number {
    return this.end;
  }

  /** Appends a tile's deflated data, framed; each tile exactly once. */
  async put(level: number, index: number, data: Buffer): Promise<void> {
    if (this.offsets[level][index] !== -1) throw new Error(`TileSpill: tile ${index} of level ${level} was written twice`);
    // Reserve the place before the write, so concurrent puts never overlap.
    const at = this.end;
    this.end += LEADER + data.length + TRAILER;
    this.offsets[level][index] = at;
    await writeAll(this.fh, frameParts(data), at);
    this.lengths[level][index] = data.length;
  }

  /** Per level, the deflated byte count of each tile, row-major; throws if one is missing. */
  byteCounts(): number[][] {
    return this.offsets.map((offs, li) => {
      const missing = offs.indexOf(-1);
      if (missing >= 0) throw new Error(`TileSpill: tile ${missing} of level ${li} was never written`);
      return Array.from(this.lengths[li]);
    });
  }

  /**
   * Copies every framed tile into `out` from `position` on, levels from the last to the first,
   * each row-major; tiles that lie back to back in the spill are read in one go. Returns the end.
   */
  async copyTo(out: FileHandle, position: number): Promise<number> {
    const buf = Buffer.allocUnsafe(COPY_BYTES);
    let fill = 0;
    for (const [start, length] of this.runs()) {
      for (let src = start, left = length; left > 0;) {
        if (fill === buf.length) {
          position = await writeAll(out, [buf], position);
          fill = 0;
        }
        const n = Math.min(left, buf.length - fill);
        await this.readFully(buf, fill, n, src);
        fill += n;
        src += n;
        left -= n;
      }
    }
    return writeAll(out, [buf.subarray(0, fill)], position);
  }

  /** The frames in COG order as [spill offset, bytes], adjacent ones merged. */
  private *runs(): Generator<[number, number]> {
    let run: [number, number] | null = null;
    for (let li = this.offsets.length - 1; li >= 0; li--) {
      const offs = this.offsets[li];
      const lens = this.lengths[li];
      for (let i = 0; i < offs.length; i++) {
        const [at, n] = [offs[i], LEADER + lens[i] + TRAILER];
        if (run && run[0] + run[1] === at) run[1] += n;
        else {
          if (run) yield run;
          run = [at, n];
        }
      }
    }
    if (run) yield run;
  }

  private async readFully(buf: Buffer, offset: number, length: number, position: number): Promise<void> {
    while (length > 0) {
      const { bytesRead } = await this.fh.read(buf, offset, length, position);
      if (bytesRead === 0) throw new Error(`TileSpill: ${this.path} ends before offset ${position}`);
      offset += bytesRead;
      position += bytesRead;
      length -= bytesRead;
    }
  }

  /** Closes and deletes the file; safe to call more than once. */
  async remove(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      // the file is deleted next; a close that fails leaves nothing to keep
      await this.fh.close().catch(() => undefined);
    }
    await unlink(this.path).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}
