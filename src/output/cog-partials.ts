// Tiles of one pyramid level that are being assembled from pieces. Above the levels a window covers
// with whole tiles, each tile is made of quarters (or smaller pieces) coming from different windows,
// in any order; it is kept here until every pixel has arrived, then handed on whole and forgotten.
import { tilesAcross, type Plan, type Size } from './cog-plan.js';
import type { Raster } from './cog-overviews.js';

interface Partial {
  raster: Raster;
  /** Pixels filled so far; the pieces never overlap, so the tile is complete at width*height. */
  filled: number;
}

/** A tile whose pixels have all arrived, at (x, y) in its level. */
export interface CompleteTile {
  index: number;
  x: number;
  y: number;
  raster: Raster;
}

export class PartialTiles {
  private readonly tiles = new Map<number, Partial>();
  private readonly across: number;

  /** `held` is told of every byte allocated (positive) or let go (negative). */
  constructor(
    private readonly plan: Plan,
    private readonly size: Size,
    private readonly held: (bytes: number) => void,
  ) {
    this.across = tilesAcross(size.width, plan.tileSize);
  }

  /** Tiles waiting for pieces. */
  get pending(): number {
    return this.tiles.size;
  }

  /**
   * Copies the piece `r` at (x, y) into the tiles it touches and returns the tiles it completed.
   * Their memory stays counted as held until the caller calls release().
   */
  add(x: number, y: number, r: Raster): CompleteTile[] {
    const ts = this.plan.tileSize;
    const done: CompleteTile[] = [];
    for (let ty = Math.floor(y / ts); ty * ts < y + r.height; ty++) {
      for (let tx = Math.floor(x / ts); tx * ts < x + r.width; tx++) {
        const index = ty * this.across + tx;
        const tile = this.tiles.get(index) ?? this.open(index, tx, ty);
        const [tx0, ty0] = [tx * ts, ty * ts];
        // The intersection of the piece and the tile, in level coordinates.
        const x0 = Math.max(x, tx0);
        const y0 = Math.max(y, ty0);
        const x1 = Math.min(x + r.width, tx0 + tile.raster.width);
        const y1 = Math.min(y + r.height, ty0 + tile.raster.height);
        copyRect(r, x0 - x, y0 - y, tile.raster, x0 - tx0, y0 - ty0, x1 - x0, y1 - y0);
        tile.filled += (x1 - x0) * (y1 - y0);
        if (tile.filled === tile.raster.width * tile.raster.height) {
          this.tiles.delete(index);
          done.push({ index, x: tx0, y: ty0, raster: tile.raster });
        }
      }
    }
    return done;
  }

  /** Lets go of a completed tile's memory (in the count; the caller drops its reference). */
  release(t: CompleteTile): void {
    this.held(-rasterBytes(t.raster));
  }

  private open(index: number, tx: number, ty: number): Partial {
    const ts = this.plan.tileSize;
    // Tiles at the right and bottom edges are cut to the level: only real pixels are assembled.
    const width = Math.min(ts, this.size.width - tx * ts);
    const height = Math.min(ts, this.size.height - ty * ts);
    const raster: Raster = { width, height, bands: Array.from({ length: this.plan.spp }, () => new this.plan.sample.Ctor(width * height)) };
    this.held(rasterBytes(raster));
    const tile = { raster, filled: 0 };
    this.tiles.set(index, tile);
    return tile;
  }
}

export function rasterBytes(r: Raster): number {
  return r.bands.reduce((s, b) => s + b.byteLength, 0);
}

/** Copies w x h pixels of every band from (sx, sy) in `src` to (dx, dy) in `dst`. */
function copyRect(src: Raster, sx: number, sy: number, dst: Raster, dx: number, dy: number, w: number, h: number): void {
  src.bands.forEach((s, b) => {
    const d = dst.bands[b];
    for (let row = 0; row < h; row++) {
      const from = (sy + row) * src.width + sx;
      d.set(s.subarray(from, from + w), (dy + row) * dst.width + dx);
    }
  });
}
