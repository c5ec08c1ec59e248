// The files a job run writes and what its STAC asset says about them: a COG fed window by window
// (with running band statistics), or the encoded bytes of another format.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CogStreamWriter, type CogStreamOptions, type EncodedWindow, type Window } from '../output/cog-stream.js';
import { cogOptionsOf } from '../output/cog-plan.js';
import type { DeflateThreads } from '../output/deflate-threads.js';
import { gridBox, type Grid } from '../core/grid.js';
import { transformBox } from '../geometry/crs.js';
import { OUTPUT_FORMATS } from '../output/formats.js';
import { ProcessException } from '../core/errors.js';
import { alloc, f64, kernels, mark, ptrOf, release } from '../wasm/kernels.js';

/** A finished file of a run, in the run's folder. */
export interface OutputFile {
  /** Asset key and file name. */
  name: string;
  file: string;
  type: string;
  bytes: number;
  title: string;
  roles: string[];
  /** STAC asset fields (proj:*, raster:bands, eo:bands). */
  fields: Record<string, unknown>;
}

export const COG_TYPE = OUTPUT_FORMATS.find((f) => f.name === 'GTiff')!.mediaType;

/** Below this many values the kernel call costs more than the loop. */
const KERNEL_STATS_FROM = 1024;

/** Per band: count, sum, sum of squares, min and max of the valid values. */
export class BandStats {
  n = 0;
  sum = 0;
  sq = 0;
  min = Infinity;
  max = -Infinity;

  add(values: Float32Array): void {
    // A plane in kernel memory (a chunk's, as jobs write them) is counted there, four values at a time.
    const at = ptrOf(values);
    if (at >= 0 && values.length >= KERNEL_STATS_FROM) {
      const m = mark();
      try {
        const out = alloc(40);
        kernels().bandStats(at, values.length, out);
        const [n, sum, sq, min, max] = f64(out, 5);
        this.merge({ n, sum, sq, min, max });
      } finally {
        release(m);
      }
      return;
    }
    let n = 0;
    let sum = 0;
    let sq = 0;
    let min = this.min;
    let max = this.max;
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v !== v || v === Infinity || v === -Infinity) continue;
      n++;
      sum += v;
      sq += v * v;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    this.n += n;
    this.sum += sum;
    this.sq += sq;
    this.min = min;
    this.max = max;
  }

  /** Adds the statistics of values counted elsewhere (another chunk, on another machine). */
  merge(o: Pick<BandStats, 'n' | 'sum' | 'sq' | 'min' | 'max'>): void {
    if (o.n === 0) return; // its min and max are not numbers
    this.n += o.n;
    this.sum += o.sum;
    this.sq += o.sq;
    this.min = Math.min(this.min, o.min);
    this.max = Math.max(this.max, o.max);
  }

  summary(total: number): Record<string, number> {
    if (this.n === 0) return { valid_percent: 0 };
    const mean = this.sum / this.n;
    return {
      minimum: this.min,
      maximum: this.max,
      mean,
      stddev: Math.sqrt(Math.max(0, this.sq / this.n - mean * mean)),
      valid_percent: Math.round((this.n / total) * 1e6) / 1e4,
    };
  }
}

/** A chunk encoded where it was computed: its COG tiles and its band statistics. */
export interface EncodedChunk {
  encoded: EncodedWindow;
  stats: Pick<BandStats, 'n' | 'sum' | 'sq' | 'min' | 'max'>[];
}

export interface CogSink {
  write(w: Window, planes: Float32Array[]): Promise<void>;
  /** Places a chunk encoded by encodeChunk() with the same grid, names and options. */
  writeEncoded(chunk: EncodedChunk): Promise<void>;
  /** Writes no-data into the windows not written yet (for partial results), then the file. */
  finish(all: Window[]): Promise<OutputFile>;
  abort(): Promise<void>;
}

/** The COG of a job: float32, NaN no-data, the save_result tile size and overview resampling. */
function cogOptions(grid: Grid, names: string[], options: Record<string, unknown>, deflater: DeflateThreads | null, dir?: string): CogStreamOptions {
  return {
    deflater,
    width: grid.width,
    height: grid.height,
    epsg: grid.epsg,
    transform: grid.transform,
    bandCount: names.length,
    sampleType: 'float32',
    nodata: NaN,
    descriptions: names,
    ...cogOptionsOf(options),
    ...(dir ? { tmpDir: dir } : {}),
  };
}

/** Encodes a chunk of a job's COG (the writer's cogSink may be on another machine); `deflater`: the job thread's deflate threads, if any. */
export async function encodeChunk(grid: Grid, names: string[], options: Record<string, unknown>, w: Window, planes: Float32Array[], deflater: DeflateThreads | null = null): Promise<EncodedChunk> {
  const stats = planes.map((p) => {
    const s = new BandStats();
    s.add(p);
    return { n: s.n, sum: s.sum, sq: s.sq, min: s.min, max: s.max };
  });
  return { encoded: await CogStreamWriter.encodeWindow(cogOptions(grid, names, options, deflater), w, planes), stats };
}

/** A job's COG, written window by window; `deflater`: the job thread's deflate threads, if any (else libuv's pool deflates). */
export async function cogSink(dir: string, name: string, grid: Grid, names: string[], options: Record<string, unknown>, deflater: DeflateThreads | null = null): Promise<CogSink> {
  const file = path.join(dir, name);
  const writer = await CogStreamWriter.create(file, cogOptions(grid, names, options, deflater, dir)).catch((e: unknown) => {
    // The writer refuses a file that could pass classic TIFF's 4 GiB before anything is computed.
    const message = e instanceof Error ? e.message : String(e);
    if (/bytes/.test(message) && /limit|beyond/.test(message)) throw new ProcessException('FormatUnsuitable', `GTiff: ${message}`);
    throw e;
  });
  const stats = names.map(() => new BandStats());
  const written = new Set<string>();
  const key = (w: Window) => `${w.col},${w.row}`;
  return {
    async write(w, planes) {
      if (planes.length !== names.length) throw new Error(`a chunk has ${planes.length} bands where the first had ${names.length}`);
      planes.forEach((p, i) => stats[i].add(p));
      await writer.writeWindow(w, planes);
      written.add(key(w));
    },
    async writeEncoded(chunk) {
      if (chunk.stats.length !== names.length) throw new Error(`a chunk has ${chunk.stats.length} bands where the first had ${names.length}`);
      chunk.stats.forEach((st, i) => stats[i].merge(st));
      await writer.writeEncoded(chunk.encoded);
      written.add(key(chunk.encoded.win));
    },
    async finish(all) {
      let empty: Float32Array | null = null;
      for (const w of all) {
        if (written.has(key(w))) continue;
        empty ??= new Float32Array(all[0].width * all[0].height).fill(NaN);
        const plane = empty.subarray(0, w.width * w.height);
        await writer.writeWindow(
          w,
          names.map(() => plane),
        );
      }
      const { bytes } = await writer.finish();
      const total = grid.width * grid.height;
      const t = grid.transform;
      return {
        name,
        file,
        type: COG_TYPE,
        bytes,
        title: names.length === 1 ? names[0] : `${names.length} bands`,
        roles: ['data'],
        fields: {
          'file:size': bytes,
          'proj:epsg': grid.epsg,
          'proj:shape': [grid.height, grid.width],
          'proj:transform': [t[1], t[2], t[0], t[4], t[5], t[3]],
          'proj:bbox': gridBox(grid),
          'eo:bands': names.map((n) => ({ name: n })),
          'raster:bands': names.map((n, i) => ({
            description: n,
            data_type: 'float32',
            nodata: 'nan',
            spatial_resolution: Math.abs(t[1]),
            statistics: stats[i].summary(total),
          })),
        },
      };
    },
    abort: () => writer.abort(),
  };
}

/** Writes an encoded answer (JSON, netCDF, an image) as the run's one file. */
export async function bytesOutput(dir: string, body: Buffer, mediaType: string, extension: string): Promise<OutputFile> {
  const name = `result.${extension || 'bin'}`;
  const file = path.join(dir, name);
  await writeFile(file, body, { flag: 'wx' });
  return { name, file, type: mediaType || 'application/octet-stream', bytes: body.length, title: 'Result', roles: ['data'], fields: { 'file:size': body.length } };
}

/** WGS84 bbox and footprint of a grid. */
export function footprint(grid: Grid): { bbox: [number, number, number, number]; geometry: unknown } {
  const b = transformBox(gridBox(grid), grid.epsg, 4326);
  const bbox = b.map((v) => Math.round(v * 1e7) / 1e7) as [number, number, number, number];
  const [w, s, e, n] = bbox;
  return {
    bbox,
    geometry: {
      type: 'Polygon',
      coordinates: [
        [
          [w, s],
          [e, s],
          [e, n],
          [w, n],
          [w, s],
        ],
      ],
    },
  };
}
