// Streaming COG writer: the same file as writeCog (byte for byte), built from square windows that
// arrive one at a time, in any order, with memory that does not grow with the raster.
//
// How the pyramid is built without the raster in memory:
//   - Windows are cut on a grid of chunkAlign() = tileSize * 2^k pixels, so at full resolution and
//     at the k overview levels below, a window covers whole tiles (cut only by the image's edge).
//     Those tiles are encoded straight from the window and its halvings: halving is local to 2x2
//     blocks, so a tile-aligned region halves to exactly what halving the whole level gives.
//   - Above level k a tile gathers pieces from several windows: it is assembled in PartialTiles
//     until complete, then encoded and halved into a piece of the next level, and so on up to the
//     single-tile top.
//   - Every tile is deflated on libuv's pool as soon as it exists and spilled to a temporary file
//     (TileSpill); finish() writes the head (whose size only depends on tile counts) and copies the
//     tiles in COG order into a temporary file next to the target, then fsyncs and renames it.
// Memory held: the tile encoder's fixed buffers (and as many deflated tiles in flight), one window's
// halvings (under a third of the window) and the partial tiles of the levels above k. With windows
// written row by row, that is one row of tiles per such level: about width * tileSize / 2^(k+1)
// pixels at level k+1 and half as much at each level above, so width * tileSize^2 / chunkAlign in
// all, whatever the height. In any order, at worst every pixel of those levels: 1/(3 * 4^k) of the
// raster. heldBytes() counts all of it; the caller's window arrays are its own.
import path from 'node:path';
import { writeAll, writeFileAtomic, tempPathFor } from './atomic-file.js';
import { sampleTypeOf, type SampleType, type TypedArray } from '../core/grid.js';
import type { Window } from '../data/cog-reader.js';
import { halve, type Raster } from './cog-overviews.js';
import { cogHead, headBytes } from './cog-layout.js';
import { PartialTiles, rasterBytes } from './cog-partials.js';
import { MAX_CLASSIC_TIFF_BYTES, levelSizes, planCog, tileBytes, tileCount, tilesAcross, tooBig, type CogMeta, type Plan, type Size } from './cog-plan.js';
import { COPY_BYTES, TileSpill } from './cog-spill.js';
import { LEADER, TRAILER, TileEncoder } from './cog-tiles.js';
import { releaseAnswer, type DeflateThreads } from './deflate-threads.js';

export interface CogStreamOptions extends CogMeta {
  bandCount: number;
  /** The type of the arrays given to writeWindow and of the file's samples. */
  sampleType: SampleType;
  /** Directory of the spilled tiles; default the target's directory. The output's own temporary file is always next to it. */
  tmpDir?: string;
  /** Refuse files larger than this; at most (and by default) classic TIFF's 4 GiB. */
  maxBytes?: number;
  /** Deflate the tiles there (a job's deflate threads) instead of on libuv's pool; the same bytes either way. */
  deflater?: DeflateThreads | null;
}

/** A window of the full-resolution raster in pixels: columns [col, col+width), rows [row, row+height). */
export type { Window };

type State = 'open' | 'finished' | 'aborted' | 'failed';

/**
 * A window encoded away from the writer (on another machine, say): its deflated tiles of every
 * level the window covers whole, and the pieces of the levels above that wait for other windows.
 */
export interface EncodedWindow {
  win: Window;
  tiles: { level: number; index: number; data: Buffer }[];
  pieces: { level: number; x: number; y: number; raster: Raster }[];
}

/** Where put() sends a level's tile-aligned region and its unaligned pieces. */
interface LevelSink {
  tile(li: number, index: number, r: Raster, x0: number, y0: number, w: number, h: number): Promise<void>;
  piece(li: number, x: number, y: number, r: Raster): Promise<void>;
  /** Memory accounting of the halvings (the writer's; nothing for a lone encoding). */
  hold(bytes: number): void;
}

/**
 * Encodes the region `r` at (x, y) of level `li`: tile-aligned regions tile by tile and halved
 * into the next level; anything unaligned goes to `piece`. The one walk of the pyramid, shared by
 * the writer and by encodeWindow().
 */
async function putLevels(plan: Plan, sizes: Size[], li: number, x: number, y: number, r: Raster, out: LevelSink): Promise<void> {
  const ts = plan.tileSize;
  const size = sizes[li];
  const aligned = x % ts === 0 && y % ts === 0 && (r.width % ts === 0 || x + r.width === size.width) && (r.height % ts === 0 || y + r.height === size.height);
  if (!aligned) return out.piece(li, x, y, r);
  const across = tilesAcross(size.width, ts);
  for (let ty = y / ts; ty * ts < y + r.height; ty++) {
    for (let tx = x / ts; tx * ts < x + r.width; tx++) {
      const [x0, y0] = [tx * ts, ty * ts];
      await out.tile(li, ty * across + tx, r, x0 - x, y0 - y, Math.min(ts, size.width - x0), Math.min(ts, size.height - y0));
    }
  }
  if (li + 1 === sizes.length) return;
  // Halving runs here while zlib compresses the tiles just submitted.
  const half = halve(r, plan);
  const bytes = rasterBytes(half);
  out.hold(bytes);
  try {
    await putLevels(plan, sizes, li + 1, x / 2, y / 2, half, out);
  } finally {
    out.hold(-bytes);
  }
}

function fail(message: string): never {
  throw new Error(`CogStreamWriter: ${message}`);
}

function overLimit(what: string, maxBytes: number): Error {
  if (maxBytes === MAX_CLASSIC_TIFF_BYTES) return tooBig('CogStreamWriter', what);
  return new Error(`CogStreamWriter: ${what}, over the limit of ${maxBytes} bytes`);
}

export class CogStreamWriter {
  private readonly sizes: Size[];
  private readonly partials: PartialTiles[];
  private readonly encoder: TileEncoder;
  private readonly align: number;
  /** One flag per window of the chunkAlign grid: written yet? */
  private readonly written: Uint8Array;
  private readonly cellsAcross: number;
  private readonly head: number;
  private state: State = 'open';
  private failure: unknown = null;
  /** Calls run one after another, in call order. */
  private queue: Promise<unknown> = Promise.resolve();
  private held = 0;
  private peak = 0;

  /**
   * The grid windows are cut on: tileSize * 2^k, at least 4 tiles and 1024 pixels. Larger windows
   * leave fewer overview levels to assemble from pieces (see the memory note above).
   */
  static chunkAlign(opts: { tileSize?: number }): number {
    return Math.max(4 * (opts.tileSize ?? 256), 1024);
  }

  private constructor(
    private readonly file: string,
    private readonly plan: Plan,
    private readonly spill: TileSpill,
    private readonly maxBytes: number,
    deflater: DeflateThreads | null,
  ) {
    this.sizes = levelSizes(plan);
    this.head = headBytes(plan, this.sizes);
    this.encoder = new TileEncoder(plan, deflater);
    this.partials = this.sizes.map((s) => new PartialTiles(plan, s, (n) => this.hold(n)));
    this.align = CogStreamWriter.chunkAlign(plan);
    this.cellsAcross = tilesAcross(plan.width, this.align);
    this.written = new Uint8Array(this.cellsAcross * tilesAcross(plan.height, this.align));
    this.hold(this.encoder.bufferBytes + spill.indexBytes + this.written.byteLength);
  }

  /**
   * Checks the options, refuses a file that could outgrow the limit, and creates the spill file.
   *
   * Size policy. Deflated sizes are known only as tiles come, so three checks. Here, refuse when
   * the file could exceed the limit uncompressed (head, frames, every tile of every level at full
   * size): deflate seldom even halves float data, and a batch job should learn that its output may
   * not fit before computing it, not hours later; the answer is to split it (fewer bands, smaller
   * areas). While writing, refuse as soon as the spilled tiles pass the limit (deflate adds a few
   * bytes per block to incompressible data). In finish(), the exact layout is checked again.
   */
  static async create(file: string, opts: CogStreamOptions): Promise<CogStreamWriter> {
    const plan = planCog(opts, opts.bandCount, opts.sampleType, fail);
    const maxBytes = opts.maxBytes ?? MAX_CLASSIC_TIFF_BYTES;
    if (!(maxBytes > 0 && maxBytes <= MAX_CLASSIC_TIFF_BYTES)) fail(`maxBytes must be in 1..${MAX_CLASSIC_TIFF_BYTES}, got ${maxBytes}`);
    const sizes = levelSizes(plan);
    const tiles = sizes.map((s) => tileCount(s, plan.tileSize));
    const raw = headBytes(plan, sizes) + tiles.reduce((s, n) => s + n, 0) * (LEADER + tileBytes(plan) + TRAILER);
    if (raw > maxBytes) throw overLimit(`uncompressed, the COG could take ${raw} bytes`, maxBytes);
    const spill = await TileSpill.create(tempPathFor(file, 'tiles.tmp', opts.tmpDir ?? path.dirname(file)), tiles);
    return new CogStreamWriter(file, plan, spill, maxBytes, opts.deflater ?? null);
  }

  /**
   * Encodes a window for a writer of the same options elsewhere (writeEncoded): the deflating, the
   * bulk of a COG's cost, is done where the window was computed.
   */
  static async encodeWindow(opts: CogStreamOptions, win: Window, bands: TypedArray[]): Promise<EncodedWindow> {
    const plan = planCog(opts, opts.bandCount, opts.sampleType, fail);
    const encoder = new TileEncoder(plan, opts.deflater ?? null);
    const out: EncodedWindow = { win, tiles: [], pieces: [] };
    await putLevels(
      plan,
      levelSizes(plan),
      0,
      win.col,
      win.row,
      { width: win.width, height: win.height, bands },
      {
        tile: (level, index, r, x0, y0, w, h) => encoder.submit(r, x0, y0, w, h, async (data) => void out.tiles.push({ level, index, data })),
        piece: async (level, x, y, raster) => void out.pieces.push({ level, x, y, raster }),
        hold: () => {},
      },
    );
    await encoder.drain();
    return out;
  }

  /** Adds a window encoded by encodeWindow() with the same options, as writeWindow() would have. */
  writeEncoded(e: EncodedWindow): Promise<void> {
    return this.serial(async () => {
      for (const c of this.checkWindow(e.win, null)) this.written[c] = 1;
      for (const t of e.tiles) await this.spillTile(t.level, t.index, t.data);
      for (const p of e.pieces) await this.put(p.level, p.x, p.y, p.raster);
      if (this.encoder.failed) await this.encoder.drain();
    });
  }

  /** Bytes the writer holds now (buffers, overview pieces, tiles in flight); not the caller's windows. */
  heldBytes(): number {
    return this.held;
  }

  /** The most heldBytes() has been. */
  peakHeldBytes(): number {
    return this.peak;
  }

  /**
   * Adds a window: its origin on the chunkAlign() grid, its size chunkAlign() or a multiple, less at
   * the right and bottom edges; one array per band, width*height values, row-major, of the
   * sample type. Each part of the raster exactly once, in any order. Resolves once the window's
   * pixels are copied (compression goes on in the background). Any error ends the writer and
   * removes its temporary files.
   */
  writeWindow(win: Window, bands: TypedArray[]): Promise<void> {
    return this.serial(() => this.addWindow(win, bands));
  }

  /** Assembles the COG into `file` (atomically); refuses when a window is missing. */
  finish(): Promise<{ bytes: number }> {
    return this.serial(() => this.assemble());
  }

  /**
   * Stops and removes the temporary files; harmless after finish() or a failure. Calls not yet
   * started are refused; one under way (a window, or finish()) completes first.
   */
  async abort(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'aborted';
    // Behind the call under way, if any, so no write lands in a removed file.
    await this.queue.catch(() => undefined);
    await this.discard();
  }

  // -------------------------------------------------------------------------------------------

  private serial<R>(task: () => Promise<R>): Promise<R> {
    const run = this.queue.then(async () => {
      if (this.state !== 'open') fail(this.state === 'failed' ? `failed earlier: ${String((this.failure as Error)?.message ?? this.failure)}` : `already ${this.state}`);
      try {
        return await task();
      } catch (err) {
        if (this.state === 'open') {
          this.state = 'failed';
          this.failure = err;
          await this.discard();
        }
        throw err;
      }
    });
    // the queue only orders the writes; each caller gets its own failure from `run`
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async discard(): Promise<void> {
    // Let tiles in flight settle first: they write into the spill file.
    await this.encoder.drain().catch(() => undefined);
    await this.spill.remove();
  }

  private hold(bytes: number): void {
    this.held += bytes;
    if (this.held > this.peak) this.peak = this.held;
  }

  private async addWindow(win: Window, bands: TypedArray[]): Promise<void> {
    const cells = this.checkWindow(win, bands);
    for (const c of cells) this.written[c] = 1;
    await this.put(0, win.col, win.row, { width: win.width, height: win.height, bands });
    // Report a failed compression or spill now rather than at finish().
    if (this.encoder.failed) await this.encoder.drain();
  }

  /** The grid cells the window covers; throws unless it is aligned, in bounds, new and well-typed (bands: when given). */
  private checkWindow(win: Window, bands: TypedArray[] | null): number[] {
    const { width: W, height: H, spp, sample } = this.plan;
    const A = this.align;
    const { col, row, width, height } = win;
    const where = `window ${width}x${height} at (${col}, ${row})`;
    if (![col, row, width, height].every(Number.isInteger) || width < 1 || height < 1) fail(`bad ${where}`);
    if (col < 0 || row < 0 || col + width > W || row + height > H) fail(`${where} is outside the ${W}x${H} raster`);
    if (col % A !== 0 || row % A !== 0) fail(`${where} does not start on the ${A}-pixel grid (chunkAlign)`);
    if ((width % A !== 0 && col + width !== W) || (height % A !== 0 && row + height !== H)) fail(`${where} is not a whole number of ${A}-pixel cells (only the last column and row may be narrower)`);
    if (bands && bands.length !== spp) fail(`${where} has ${bands.length} bands, expected ${spp}`);
    for (const [i, b] of (bands ?? []).entries()) {
      if (sampleTypeOf(b) !== sample.type) fail(`${where}: band ${i} is ${sampleTypeOf(b)}, expected ${sample.type}`);
      if (b.length !== width * height) fail(`${where}: band ${i} has ${b.length} values, expected ${width * height}`);
    }
    const cells: number[] = [];
    for (let cy = row / A; cy * A < row + height; cy++) {
      for (let cx = col / A; cx * A < col + width; cx++) {
        const c = cy * this.cellsAcross + cx;
        if (this.written[c]) fail(`${where} overlaps the window at (${cx * A}, ${cy * A}), written before`);
        cells.push(c);
      }
    }
    return cells;
  }

  /**
   * Takes the pixels `r` at (x, y) of level `li`. Tile-aligned regions are encoded at once and
   * halved into the next level; other pieces wait in PartialTiles for the rest of their tiles.
   */
  private async put(li: number, x: number, y: number, r: Raster): Promise<void> {
    if (this.encoder.failed) return; // addWindow reports it
    await putLevels(this.plan, this.sizes, li, x, y, r, {
      tile: (level, index, src, x0, y0, w, h) => this.encoder.submit(src, x0, y0, w, h, (data) => this.spillTile(level, index, data)),
      piece: async (level, px, py, piece) => {
        for (const tile of this.partials[level].add(px, py, piece)) {
          await this.put(level, tile.x, tile.y, tile.raster);
          this.partials[level].release(tile);
        }
      },
      hold: (bytes) => this.hold(bytes),
    });
  }

  private async spillTile(li: number, index: number, data: Buffer): Promise<void> {
    const total = this.head + this.spill.bytes + LEADER + data.length + TRAILER;
    if (total > this.maxBytes) throw overLimit(`the tiles written so far take ${total} bytes`, this.maxBytes);
    this.hold(data.length);
    try {
      await this.spill.put(li, index, data);
    } finally {
      this.hold(-data.length);
      // Written (or failed): nothing reads the tile's data again.
      releaseAnswer(data);
    }
  }

  private async assemble(): Promise<{ bytes: number }> {
    const missing = this.written.indexOf(0);
    if (missing >= 0) {
      const left = this.written.reduce((n, w) => n + (w ? 0 : 1), 0);
      const [cx, cy] = [missing % this.cellsAcross, Math.floor(missing / this.cellsAcross)];
      fail(`${left} window(s) of the ${this.align}-pixel grid were never written, the first at (${cx * this.align}, ${cy * this.align})`);
    }
    await this.encoder.drain();
    const { head, layout } = cogHead(this.plan, this.sizes, this.spill.byteCounts());
    if (layout.totalBytes > this.maxBytes) throw overLimit(`the COG takes ${layout.totalBytes} bytes`, this.maxBytes);
    this.hold(head.length + COPY_BYTES);
    try {
      await writeFileAtomic(this.file, async (fh) => {
        const end = await this.spill.copyTo(fh, await writeAll(fh, [head], 0));
        if (end !== layout.totalBytes) fail(`wrote ${end} bytes, the layout says ${layout.totalBytes}`);
      });
    } finally {
      this.hold(-(head.length + COPY_BYTES));
    }
    this.state = 'finished';
    await this.spill.remove();
    return { bytes: layout.totalBytes };
  }
}
