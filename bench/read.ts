// Decoded window-read throughput of our COG reader against GDAL (gdal_translate of the same window
// to raw ENVI) on the same file, in alternating rounds. Cold reads: our block cache is cleared
// before each of our rounds; GDAL starts a fresh process each time (its start-up is part of its
// figure, so a large window keeps that share small).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { writeCog } from '../src/output/cog-writer.js';
import { BlockCache, openRaster } from '../src/data/cog-reader.js';
import { TRUSTED } from '../src/data/outbound.js';
import { Cleanup, median, round, table, tempDir, removeDir } from './lib.js';
import type { BenchOptions, BenchResult } from './run.js';

const SIZE = 4096;
const WINDOW = { col: 512, row: 512, width: 3072, height: 3072 };

/** Smooth, image-like UInt16 data (compresses like real reflectance, not like noise or zeros). */
function image(): Uint16Array {
  const a = new Uint16Array(SIZE * SIZE);
  for (let y = 0; y < SIZE; y++) {
    for (let x = 0; x < SIZE; x++) {
      const v = 2000 + 900 * Math.sin(x / 97) * Math.cos(y / 131) + 400 * Math.sin((x + y) / 23) + ((x * 7919 + y * 104729) % 97);
      a[y * SIZE + x] = Math.max(1, Math.round(v));
    }
  }
  return a;
}

function gdalAvailable(): boolean {
  return spawnSync('gdal_translate', ['--version'], { encoding: 'utf8' }).status === 0;
}

export async function run(opts: BenchOptions): Promise<BenchResult> {
  const cleanup = new Cleanup();
  const dir = tempDir();
  cleanup.add(() => removeDir(dir));
  try {
    const file = path.join(dir, 'bench.tif');
    const started = performance.now();
    await writeCog(file, { width: SIZE, height: SIZE, epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], bands: [image()], nodata: 0, level: 6 });
    console.log(`wrote a ${SIZE}x${SIZE} UInt16 COG (deflate, predictor 2, 256 px tiles) in ${Math.round(performance.now() - started)} ms`);
    const blocks = new BlockCache(256 << 20);
    const reader = await openRaster(file, TRUSTED, blocks);
    const mb = (WINDOW.width * WINDOW.height * 2) / 1e6;
    const rounds = opts.quick ? 3 : 7;
    const ours: number[] = [];
    const gdal: number[] = [];
    const hasGdal = gdalAvailable();
    const out = path.join(dir, 'window.bin');
    for (let i = 0; i < rounds; i++) {
      blocks.clearBlocks();
      let t = performance.now();
      const data = await reader.readWindow(0, 0, WINDOW);
      ours.push(performance.now() - t);
      if (Number.isNaN(data[0])) throw new Error('read returned nodata where there is data');
      if (hasGdal) {
        t = performance.now();
        const r = spawnSync('gdal_translate', ['-q', '--config', 'GDAL_NUM_THREADS', 'ALL_CPUS', '-srcwin', ...[WINDOW.col, WINDOW.row, WINDOW.width, WINDOW.height].map(String), '-of', 'ENVI', file, out], {
          encoding: 'utf8',
        });
        gdal.push(performance.now() - t);
        if (r.status !== 0) throw new Error(`gdal_translate failed: ${r.stderr}`);
      }
      console.log(`  round ${i + 1}/${rounds}: ours ${Math.round(ours[i])} ms${hasGdal ? `, gdal_translate ${Math.round(gdal[i])} ms` : ''}`);
    }
    // Warm: every block of the window already decoded in the cache.
    const tw = performance.now();
    await reader.readWindow(0, 0, WINDOW);
    const warmMs = performance.now() - tw;

    const oursMbs = mb / (median(ours) / 1000);
    const figures: Record<string, number> = {
      window_mpx: round((WINDOW.width * WINDOW.height) / 1e6, 2),
      read_mb_per_s: round(oursMbs, 1),
      read_warm_mb_per_s: round(mb / (warmMs / 1000), 1),
    };
    const ratios: Record<string, number> = {};
    const rows: (string | number)[][] = [
      ['reader', 'median ms', 'MB/s (UInt16 window)'],
      ['xeo (cold cache)', round(median(ours), 1), figures.read_mb_per_s],
      ['xeo (warm cache)', round(warmMs, 1), figures.read_warm_mb_per_s],
    ];
    if (hasGdal) {
      const gdalMbs = mb / (median(gdal) / 1000);
      figures.gdal_mb_per_s = round(gdalMbs, 1);
      ratios.read_over_gdal = round(oursMbs / gdalMbs, 3);
      rows.push(['gdal_translate (process)', round(median(gdal), 1), figures.gdal_mb_per_s]);
    } else console.log('gdal_translate not found: no GDAL baseline, no read_over_gdal ratio');
    console.log();
    console.log(table(rows));
    console.log();
    return { figures, ratios };
  } finally {
    await cleanup.run();
  }
}
