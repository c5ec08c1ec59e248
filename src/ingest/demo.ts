// The demo collection: a deterministic, synthetic Sentinel-2 L2A look-alike, generated on the first
// start with an empty catalog. 2048 x 2048 pixels of 10 m in UTM zone 33N, 8 dates from March to
// October, bands B02 B03 B04 B08 (reflectance x 10000, UInt16, 0 = nodata) and a scene
// classification SCL. Land cover (lake, river, town, forest, crop parcels) follows a season:
// winter wheat greens early and is harvested in July, maize and beet green late, grass is mown.
// Clouds with shadows and an orbit-edge nodata swath appear on some dates.
import path from 'node:path';
import { mkdir } from 'node:fs/promises';
import { writeCog } from '../output/cog-writer.js';
import type { Store } from '../store/types.js';
import type { CollectionMeta, ItemMeta } from '../core/catalog.js';
import { transformBox } from '../geometry/crs.js';
import type { GeoTransform } from '../core/grid.js';

export const DEMO_ID = 'DEMO_S2_L2A';
const N = 2048;
const RES = 10;
const EPSG = 32633;
const X0 = 620000;
const Y0 = 5320000;
const DATES = ['2024-03-18', '2024-04-22', '2024-05-27', '2024-06-21', '2024-07-16', '2024-08-15', '2024-09-19', '2024-10-24'];
/** Share of the scene under cloud, per date. */
const CLOUDINESS = [0.02, 0.25, 0.06, 0, 0.12, 0.03, 0.35, 0.08];
/** Dates whose swath edge leaves part of the scene without data. */
const SWATH_EDGE = new Set([2, 5]);

const enum Cover {
  Water,
  Town,
  Forest,
  Wheat,
  Maize,
  Grass,
  Beet,
  Fallow,
}

// --- deterministic noise ---------------------------------------------------------------------

function hash(x: number, y: number, seed: number): number {
  let h = (x * 374761393 + y * 668265263 + seed * 2147483647) | 0;
  h = Math.imul(h ^ (h >>> 13), 1274126177);
  h ^= h >>> 16;
  return (h >>> 0) / 4294967296;
}

function valueNoise(x: number, y: number, seed: number): number {
  const xi = Math.floor(x);
  const yi = Math.floor(y);
  const fx = x - xi;
  const fy = y - yi;
  const sx = fx * fx * (3 - 2 * fx);
  const sy = fy * fy * (3 - 2 * fy);
  const a = hash(xi, yi, seed);
  const b = hash(xi + 1, yi, seed);
  const c = hash(xi, yi + 1, seed);
  const d = hash(xi + 1, yi + 1, seed);
  return (a + (b - a) * sx + (c - a) * sy + (a - b - c + d) * sx * sy) * 2 - 1;
}

function fbm(x: number, y: number, seed: number, octaves = 4): number {
  let sum = 0;
  let amp = 0.5;
  let f = 1;
  for (let o = 0; o < octaves; o++) {
    sum += amp * valueNoise(x * f, y * f, seed + o * 101);
    amp *= 0.5;
    f *= 2;
  }
  return sum;
}

/** A smooth field at N x N, computed on a coarse grid and interpolated (cheap and smooth enough). */
function smoothField(seed: number, scale: number, octaves = 4, coarse = 4): Float32Array {
  const m = N / coarse + 1;
  const g = new Float32Array(m * m);
  for (let j = 0; j < m; j++) for (let i = 0; i < m; i++) g[j * m + i] = fbm((i * coarse) / scale, (j * coarse) / scale, seed, octaves);
  const out = new Float32Array(N * N);
  for (let y = 0; y < N; y++) {
    const gy = y / coarse;
    const j = Math.min(m - 2, Math.floor(gy));
    const ty = gy - j;
    for (let x = 0; x < N; x++) {
      const gx = x / coarse;
      const i = Math.min(m - 2, Math.floor(gx));
      const tx = gx - i;
      const a = g[j * m + i];
      const b = g[j * m + i + 1];
      const c = g[(j + 1) * m + i];
      const d = g[(j + 1) * m + i + 1];
      out[y * N + x] = a + (b - a) * tx + (c - a) * ty + (a - b - c + d) * tx * ty;
    }
  }
  return out;
}

// --- land cover --------------------------------------------------------------------------------

interface Landscape {
  cover: Uint8Array;
  /** Per-pixel parcel number (fields) for per-parcel timing and brightness. */
  parcel: Uint32Array;
  soil: Float32Array;
}

function landscape(): Landscape {
  const relief = smoothField(11, 700);
  const woods = smoothField(23, 260);
  const townEdge = smoothField(37, 90, 3);
  const cover = new Uint8Array(N * N);
  const parcel = new Uint32Array(N * N);
  const soil = smoothField(41, 120, 3);
  const crops = [Cover.Wheat, Cover.Maize, Cover.Grass, Cover.Beet, Cover.Wheat, Cover.Maize, Cover.Fallow, Cover.Grass];
  for (let y = 0; y < N; y++) {
    for (let x = 0; x < N; x++) {
      const i = y * N + x;
      // A river meanders across the scene from west to east.
      const ry = 1500 + 140 * Math.sin(x / 210) + 40 * Math.sin(x / 57);
      const tdx = x - 1450;
      const tdy = y - 560;
      const townR = 230 + 60 * townEdge[i];
      if (relief[i] < -0.3 || Math.abs(y - ry) < 5 + 2 * Math.sin(x / 33)) cover[i] = Cover.Water;
      else if (tdx * tdx + tdy * tdy < townR * townR) cover[i] = Cover.Town;
      else if (woods[i] > 0.18 || relief[i] > 0.38) cover[i] = Cover.Forest;
      else {
        // Parcels: a jittered grid of rectangles with narrow grass margins between them.
        const cw = 96;
        const ch = 72;
        const cx = Math.floor((x + 17 * Math.sin(y / 150)) / cw);
        const cy = Math.floor(y / ch);
        const id = cx * 7919 + cy * 104729;
        const localX = x + 17 * Math.sin(y / 150) - cx * cw;
        const localY = y - cy * ch;
        const margin = localX < 2 || localY < 2;
        parcel[i] = id >>> 0;
        cover[i] = margin ? Cover.Grass : crops[Math.floor(hash(cx, cy, 5) * crops.length)];
      }
    }
  }
  return { cover, parcel, soil };
}

// --- phenology and reflectance ----------------------------------------------------------------

const bell = (doy: number, peak: number, width: number) => Math.exp(-(((doy - peak) / width) ** 2));

/** NDVI of a land cover on a day of year (shift: per-parcel timing in days). */
function ndviOf(cover: Cover, doy: number, shift: number): number {
  const d = doy - shift;
  switch (cover) {
    case Cover.Water:
      return -0.35;
    case Cover.Town:
      return 0.08;
    case Cover.Forest:
      return 0.5 + 0.32 * bell(d, 190, 75);
    case Cover.Wheat:
      return d < 195 ? 0.3 + 0.55 * bell(d, 145, 45) + 0.1 * Math.min(1, (d - 70) / 40) : 0.18;
    case Cover.Maize:
      return 0.16 + 0.7 * bell(d, 225, 38);
    case Cover.Grass: {
      const mown = d > 160 && d < 175 ? 0.25 : d > 230 && d < 245 ? 0.2 : 0;
      return 0.55 + 0.25 * bell(d, 170, 70) - mown;
    }
    case Cover.Beet:
      return 0.17 + 0.68 * bell(d, 215, 45);
    default:
      return 0.22 + 0.08 * bell(d, 160, 60);
  }
}

function dayOfYear(date: string): number {
  const t = Date.parse(`${date}T00:00:00Z`);
  return Math.floor((t - Date.parse(`${date.slice(0, 4)}-01-01T00:00:00Z`)) / 86400000) + 1;
}

interface Scene {
  b02: Uint16Array;
  b03: Uint16Array;
  b04: Uint16Array;
  b08: Uint16Array;
  scl: Uint8Array;
  cloudCover: number;
}

function scene(land: Landscape, dateIndex: number): Scene {
  const doy = dayOfYear(DATES[dateIndex]);
  const b02 = new Uint16Array(N * N);
  const b03 = new Uint16Array(N * N);
  const b04 = new Uint16Array(N * N);
  const b08 = new Uint16Array(N * N);
  const scl = new Uint8Array(N * N);
  const clouds = smoothField(1000 + dateIndex, 300, 5, 16);
  // Cloud threshold: the cloud field is roughly symmetric around 0, so a share p of the scene
  // lies above a threshold that falls as p rises.
  const p = CLOUDINESS[dateIndex];
  const threshold = p === 0 ? Infinity : 0.45 - 0.9 * p;
  let cloudy = 0;
  let valid = 0;
  const shadowDx = 30;
  const shadowDy = 22;
  for (let y = 0; y < N; y++) {
    for (let x = 0; x < N; x++) {
      const i = y * N + x;
      if (SWATH_EDGE.has(dateIndex) && x + 0.35 * y > 2150 - dateIndex * 40) continue; // nodata: 0
      valid++;
      const cover = land.cover[i] as Cover;
      const grain = hash(x, y, dateIndex + 7) - 0.5;
      let blue: number;
      let green: number;
      let red: number;
      let nir: number;
      let cls: number;
      if (cover === Cover.Water) {
        blue = 620 + 60 * grain;
        green = 540 + 50 * grain;
        red = 360 + 40 * grain;
        nir = 140 + 30 * grain;
        cls = 6;
      } else if (cover === Cover.Town) {
        const street = x % 24 < 3 || y % 24 < 3;
        const b = street ? 1150 : 1350 + 500 * hash(x >> 3, y >> 3, 3);
        blue = b * 0.95;
        green = b;
        red = b * 1.05;
        nir = b * 1.25 + 200 * grain;
        cls = 5;
      } else {
        const shift = cover === Cover.Forest ? 0 : (hash(land.parcel[i], 1, 9) - 0.5) * 20;
        const ndvi = Math.min(0.92, ndviOf(cover, doy, shift) + 0.04 * grain);
        const soilBright = 1 + 0.25 * land.soil[i];
        const veg = Math.max(0, Math.min(1, (ndvi - 0.15) / 0.7));
        nir = 2300 * soilBright * (1 - veg) + (cover === Cover.Forest ? 3100 : 4100) * veg;
        red = (nir * (1 - ndvi)) / (1 + ndvi);
        green = red * (1 - veg) * 0.82 + (red * 1.9 + 250) * veg;
        blue = red * 0.62 + 120;
        cls = ndvi > 0.3 ? 4 : 5;
      }
      const cloud = clouds[i] - threshold;
      if (cloud > 0) {
        const a = Math.min(1, cloud * 6);
        const white = 6500 + 1500 * clouds[i];
        blue += (white - blue) * a;
        green += (white - green) * a;
        red += (white - red) * a;
        nir += (white - nir) * a;
        if (a > 0.6) cls = 9;
        else if (a > 0.25) cls = 8;
        if (a > 0.25) cloudy++;
      } else {
        const sx = x - shadowDx;
        const sy = y - shadowDy;
        if (sx >= 0 && sy >= 0 && clouds[sy * N + sx] - threshold > 0.05) {
          blue *= 0.45;
          green *= 0.45;
          red *= 0.45;
          nir *= 0.45;
          cls = 3;
        }
      }
      b02[i] = Math.max(1, Math.min(10000, Math.round(blue)));
      b03[i] = Math.max(1, Math.min(10000, Math.round(green)));
      b04[i] = Math.max(1, Math.min(10000, Math.round(red)));
      b08[i] = Math.max(1, Math.min(10000, Math.round(nir)));
      scl[i] = cls;
    }
  }
  return { b02, b03, b04, b08, scl, cloudCover: valid ? Math.round((1000 * cloudy) / valid) / 10 : 0 };
}

export const DEMO_BANDS: CollectionMeta['bands'] = [
  { name: 'B02', common_name: 'blue', center_wavelength: 0.49, full_width_half_max: 0.098, data_type: 'uint16', nodata: 0 },
  { name: 'B03', common_name: 'green', center_wavelength: 0.56, full_width_half_max: 0.045, data_type: 'uint16', nodata: 0 },
  { name: 'B04', common_name: 'red', center_wavelength: 0.665, full_width_half_max: 0.038, data_type: 'uint16', nodata: 0 },
  { name: 'B08', common_name: 'nir', center_wavelength: 0.842, full_width_half_max: 0.145, data_type: 'uint16', nodata: 0 },
  {
    name: 'SCL',
    description: 'Scene classification: 0 no data, 3 cloud shadow, 4 vegetation, 5 not vegetated, 6 water, 8 cloud (medium), 9 cloud (high)',
    data_type: 'uint8',
    nodata: 0,
    categorical: true,
  },
];

export function demoMeta(): CollectionMeta {
  return {
    id: DEMO_ID,
    title: 'Demo: Sentinel-2 L2A look-alike (synthetic)',
    description:
      'A synthetic scene that behaves like Sentinel-2 Level-2A surface reflectance: 20 km x 20 km at 10 m in UTM zone 33N, ' +
      'eight dates from March to October 2024 with a lake, a river, a town, forest and crop parcels that green up and are ' +
      'harvested over the season, some clouds with shadows and a swath edge without data. Reflectance is scaled by 10000. ' +
      'Generated by Xeo on first start; it is not real data.',
    license: 'CC0-1.0',
    keywords: ['demo', 'synthetic', 'sentinel-2', 'reflectance'],
    providers: [{ name: 'Xeo', description: 'Generated by this back-end', roles: ['producer', 'processor', 'host'] }],
    epsg: EPSG,
    resolution: [RES, RES],
    bands: DEMO_BANDS,
    summaries: { platform: ['demo-sentinel-2'], instruments: ['synthetic-msi'], 'eo:cloud_cover': { minimum: 0, maximum: 100 } },
  };
}

/** Writes the demo collection's COGs under `dir` and registers it in the catalog. */
export async function generateDemo(store: Store, dir: string, log: (line: string) => void = () => {}): Promise<void> {
  const started = Date.now();
  log(`demo: generating ${DEMO_ID} (${DATES.length} dates, ${N}x${N} px) in ${dir}`);
  const land = landscape();
  const transform: GeoTransform = [X0, RES, 0, Y0, 0, -RES];
  const bbox: [number, number, number, number] = [X0, Y0 - N * RES, X0 + N * RES, Y0];
  const bbox4326 = transformBox(bbox, EPSG, 4326);
  const items: ItemMeta[] = [];
  for (let d = 0; d < DATES.length; d++) {
    const s = scene(land, d);
    const date = DATES[d];
    const folder = path.join(dir, date);
    await mkdir(folder, { recursive: true });
    const assets: ItemMeta['assets'] = {};
    const bands: [string, Uint16Array | Uint8Array][] = [
      ['B02', s.b02],
      ['B03', s.b03],
      ['B04', s.b04],
      ['B08', s.b08],
      ['SCL', s.scl],
    ];
    await Promise.all(
      bands.map(async ([name, data]) => {
        const file = path.join(folder, `${name}.tif`);
        await writeCog(file, {
          width: N,
          height: N,
          epsg: EPSG,
          transform,
          bands: [data],
          nodata: 0,
          descriptions: [name],
          resampling: name === 'SCL' ? 'nearest' : 'average',
          level: 1,
        });
        assets[name] = { href: file, sample: 0 };
      }),
    );
    items.push({
      id: `${DEMO_ID}_${date.replaceAll('-', '')}`,
      datetime: `${date}T10:00:00Z`,
      epsg: EPSG,
      bbox,
      bbox4326,
      assets,
      properties: { 'eo:cloud_cover': s.cloudCover, platform: 'demo-sentinel-2' },
    });
    log(`demo: ${d + 1}/${DATES.length} ${date} written (cloud cover ${s.cloudCover}%)`);
  }
  await store.collections.put(demoMeta());
  await store.collections.putItems(DEMO_ID, items);
  log(`demo: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
