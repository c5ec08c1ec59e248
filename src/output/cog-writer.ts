// Cloud-Optimized GeoTIFF writer for bands held in memory, from the TIFF 6.0, GeoTIFF 1.1 and COG
// specifications and GDAL's documented COG layout conventions (see cog-layout.ts). For rasters that
// do not fit in memory, cog-stream.ts writes the same bytes window by window.
//
// Only classic TIFF (32-bit offsets): output over 4 GiB is refused. BigTIFF is out of scope.
import { writeAll, writeFileAtomic } from './atomic-file.js';
import { sampleTypeOf, type TypedArray } from '../core/grid.js';
import { halve, type Raster } from './cog-overviews.js';
import { cogHead } from './cog-layout.js';
import { MAX_CLASSIC_TIFF_BYTES, levelSizes, planCog, tilesAcross, tooBig, type CogMeta, type Plan } from './cog-plan.js';
import { LEADER, TRAILER, TileEncoder, frame } from './cog-tiles.js';

export { planLayout, type Layout, type LayoutLevel } from './cog-layout.js';
export type { CogMeta } from './cog-plan.js';

export interface CogInput extends CogMeta {
  /** One array per band, width*height values, row-major, all the same type. */
  bands: TypedArray[];
}

function fail(message: string): never {
  throw new Error(`encodeCog: ${message}`);
}

function checkInput(input: CogInput): Plan {
  const { width, height, bands } = input;
  if (bands.length < 1) fail(`need 1..65535 bands, got ${bands.length}`);
  const type = sampleTypeOf(bands[0]);
  const plan = planCog(input, bands.length, type, fail);
  for (const [i, b] of bands.entries()) {
    if (sampleTypeOf(b) !== type) fail(`band ${i} is ${sampleTypeOf(b)}, band 0 is ${type}`);
    if (b.length !== width * height) fail(`band ${i} has ${b.length} values, expected ${width * height}`);
  }
  return plan;
}

/**
 * Full resolution, then halved levels until one fits in a single tile. Lazy: the next level is
 * built while the current one's tiles compress, and only two levels are alive at a time.
 */
function* pyramid(input: CogInput, plan: Plan): Generator<Raster> {
  const count = levelSizes(plan).length;
  let level: Raster = { width: plan.width, height: plan.height, bands: input.bands };
  yield level;
  for (let li = 1; li < count; li++) {
    level = halve(level, plan);
    yield level;
  }
}

/** Compresses every tile of every level, framed, row-major per level. */
async function encodeLevels(input: CogInput, plan: Plan): Promise<Buffer[][]> {
  const encoder = new TileEncoder(plan);
  const ts = plan.tileSize;
  const levels: Buffer[][] = [];
  let written = 0;
  for (const level of pyramid(input, plan)) {
    const tiles: Buffer[] = [];
    levels.push(tiles);
    const across = tilesAcross(level.width, ts);
    const down = tilesAcross(level.height, ts);
    for (let ty = 0; ty < down && !encoder.failed; ty++) {
      for (let tx = 0; tx < across && !encoder.failed; tx++) {
        const [x0, y0] = [tx * ts, ty * ts];
        const index = ty * across + tx;
        await encoder.submit(level, x0, y0, Math.min(ts, level.width - x0), Math.min(ts, level.height - y0), (data) => {
          tiles[index] = frame(data);
          written += tiles[index].length;
          // Fail early rather than compress gigabytes that cannot be written anyway.
          if (written > MAX_CLASSIC_TIFF_BYTES) throw tooBig('encodeCog', `the COG would take over ${written} bytes`);
        });
      }
    }
  }
  await encoder.drain();
  return levels;
}

/** The COG as a list of buffers in file order (head, then framed tiles). */
async function encodeParts(input: CogInput): Promise<{ parts: Buffer[]; bytes: number }> {
  const plan = checkInput(input);
  const levels = await encodeLevels(input, plan);
  const counts = levels.map((tiles) => tiles.map((t) => t.length - LEADER - TRAILER));
  const { head, layout } = cogHead(plan, levelSizes(plan), counts);
  const parts = [head, ...[...levels].reverse().flat()];
  return { parts, bytes: layout.totalBytes };
}

/** Encodes a Cloud-Optimized GeoTIFF in memory. */
export async function encodeCog(input: CogInput): Promise<Buffer> {
  const { parts, bytes } = await encodeParts(input);
  return Buffer.concat(parts, bytes);
}

/**
 * Writes a COG atomically: into a temporary file next to `file`, flushed to disk, then renamed over
 * it, so readers never see a partial file.
 */
export async function writeCog(file: string, input: CogInput): Promise<{ bytes: number }> {
  const { parts, bytes } = await encodeParts(input);
  await writeFileAtomic(file, async (fh) => void (await writeAll(fh, parts, 0)));
  return { bytes };
}
