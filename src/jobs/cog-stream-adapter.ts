// TEMPORARY ADAPTER, to be removed when the `cog-stream` branch (CogStreamWriter) is merged into
// main: it offers the streaming writer's API but collects every window in memory and writes the
// COG with the whole-image writer at the end, so memory grows with the job size. Batch jobs are
// written against the API only; swapping the import is all the change the real writer needs.
import { writeCog } from '../data/cog-writer.js';
import type { GeoTransform } from '../data/grid.js';

export interface CogStreamOptions {
  width: number;
  height: number;
  epsg: number;
  transform: GeoTransform;
  bandCount: number;
  sampleType: 'float32';
  nodata: number | null;
  descriptions?: string[];
  tileSize?: number;
  resampling?: 'average' | 'nearest';
  tmpDir?: string;
}

export interface Window {
  col: number;
  row: number;
  width: number;
  height: number;
}

export class CogStreamWriter {
  /** Windows must start on multiples of this many pixels (the real writer's rule). */
  static chunkAlign(opts: { tileSize?: number } = {}): number {
    return Math.max(4 * (opts.tileSize ?? 256), 1024);
  }

  static async create(file: string, opts: CogStreamOptions): Promise<CogStreamWriter> {
    return new CogStreamWriter(file, opts);
  }

  private bands: Float32Array[] | null;

  private constructor(
    private readonly file: string,
    private readonly opts: CogStreamOptions,
  ) {
    this.bands = Array.from({ length: opts.bandCount }, () => new Float32Array(opts.width * opts.height).fill(NaN));
  }

  async writeWindow(w: Window, bands: Float32Array[]): Promise<void> {
    if (!this.bands) throw new Error('the writer is closed');
    if (bands.length !== this.bands.length) throw new Error(`expected ${this.bands.length} bands, got ${bands.length}`);
    for (let b = 0; b < bands.length; b++) {
      for (let r = 0; r < w.height; r++) this.bands[b].set(bands[b].subarray(r * w.width, (r + 1) * w.width), (w.row + r) * this.opts.width + w.col);
    }
  }

  async finish(): Promise<{ bytes: number }> {
    if (!this.bands) throw new Error('the writer is closed');
    const o = this.opts;
    const out = await writeCog(this.file, {
      width: o.width,
      height: o.height,
      epsg: o.epsg,
      transform: o.transform,
      bands: this.bands,
      nodata: o.nodata,
      descriptions: o.descriptions,
      tileSize: o.tileSize,
      resampling: o.resampling,
    });
    this.bands = null;
    return out;
  }

  async abort(): Promise<void> {
    this.bands = null;
  }
}
