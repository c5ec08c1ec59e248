// The COG's structure around the tile data, in GDAL's layout:
//   8-byte header "II*\0" + offset of the first IFD
//   GDAL "ghost" structural metadata (text) declaring the promises below
//   IFDs: full resolution first, then overviews from largest to smallest, each followed by its
//     out-of-line values (tile offsets/byte counts, geo tags, ...)
//   tile data: smallest overview first, full resolution last; within a level row-major. Every tile
//     is framed as [uint32 LE byte count][deflate data][last 4 data bytes again]; TileOffsets point
//     at the data, after the leader. GDAL uses the leader/trailer to fetch blocks over HTTP
//     without reading TileByteCounts and to detect files edited after writing.
// IFD sizes depend on the number of tiles, not on their sizes, so the head's length is known before
// any tile is compressed.
import { MAX_CLASSIC_TIFF_BYTES, tileCount, tooBig, type Plan, type Size } from './cog-plan.js';
import { LEADER, TRAILER } from './cog-tiles.js';
import * as T from './tiff-tags.js';

/** GDAL's ghost area: the size line counts the bytes after it, trailing space included. */
function ghostArea(): Buffer {
  // The trailing space lets GDAL flip "NO\n " to "YES\n" in place if the file is later edited.
  const body = 'LAYOUT=IFDS_BEFORE_DATA\nBLOCK_ORDER=ROW_MAJOR\nBLOCK_LEADER=SIZE_AS_UINT4\n' + 'BLOCK_TRAILER=LAST_4_BYTES_REPEATED\nKNOWN_INCOMPATIBLE_EDITION=NO\n ';
  const head = `GDAL_STRUCTURAL_METADATA_SIZE=${String(body.length).padStart(6, '0')} bytes\n`;
  return Buffer.from(head + body, 'ascii');
}

function escapeXml(s: string): string {
  // Named entities: GDAL's XML parser does not decode numeric character references.
  const named: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
  return s.replace(/[&<>"']/g, (c) => named[c]);
}

/**
 * GDAL_METADATA XML with band descriptions (GDAL numbers samples from 0). Values are escaped twice:
 * GDAL escapes an item's value, its XML writer escapes that text again, and its reader unescapes
 * twice, so a singly escaped "&amp;" would come back as a cut-off string.
 */
function gdalMetadata(descriptions: readonly string[]): string | null {
  const items = descriptions.map((d, i) => (d ? `  <Item name="DESCRIPTION" sample="${i}" role="description">${escapeXml(escapeXml(d))}</Item>\n` : '')).join('');
  return items ? `<GDALMetadata>\n${items}</GDALMetadata>\n` : null;
}

function geoEntries(plan: Plan): T.IfdEntry[] {
  const t = plan.transform;
  const keys: [number, number][] = [
    [T.GeoKey.GTModelType, plan.geographic ? T.ModelType.Geographic : T.ModelType.Projected],
    [T.GeoKey.GTRasterType, T.RasterType.PixelIsArea],
    [plan.geographic ? T.GeoKey.GeographicType : T.GeoKey.ProjectedCSType, plan.epsg],
  ];
  // Header: directory version 1, revision 1.1 (GeoTIFF 1.1), key count; then per key:
  // id, location 0 (value in the entry itself), count 1, value.
  const dir = [1, 1, 1, keys.length, ...keys.flatMap(([id, v]) => [id, 0, 1, v])];
  return [
    T.double(T.Tag.ModelPixelScale, [t[1], -t[5], 0]),
    // Raster point (0, 0) — the outer corner of the first pixel, as PixelIsArea — maps to (x0, y0).
    T.double(T.Tag.ModelTiepoint, [0, 0, 0, t[0], t[3], 0]),
    T.short(T.Tag.GeoKeyDirectory, dir),
  ];
}

/** The IFD of one level; geo tags and band metadata only on the full-resolution one. */
function ifdEntries(plan: Plan, li: number, level: Size, offsets: readonly number[], counts: readonly number[]): T.IfdEntry[] {
  const { spp, sample } = plan;
  const entries: T.IfdEntry[] = [
    T.long(T.Tag.ImageWidth, level.width),
    T.long(T.Tag.ImageLength, level.height),
    T.short(T.Tag.BitsPerSample, new Array<number>(spp).fill(sample.bytes * 8)),
    T.short(T.Tag.Compression, T.Compression.Deflate),
    T.short(T.Tag.PhotometricInterpretation, T.Photometric.MinIsBlack),
    T.short(T.Tag.SamplesPerPixel, spp),
    T.short(T.Tag.PlanarConfiguration, T.Planar.Chunky),
    T.short(T.Tag.Predictor, sample.float ? T.PredictorKind.FloatingPoint : T.PredictorKind.Horizontal),
    T.short(T.Tag.TileWidth, plan.tileSize),
    T.short(T.Tag.TileLength, plan.tileSize),
    T.long(T.Tag.TileOffsets, offsets),
    T.long(T.Tag.TileByteCounts, counts),
    T.short(T.Tag.SampleFormat, new Array<number>(spp).fill(sample.format)),
  ];
  // Bands beyond the first of a min-is-black image are "extra samples", 0 = unspecified meaning.
  if (spp > 1) entries.push(T.short(T.Tag.ExtraSamples, new Array<number>(spp - 1).fill(0)));
  if (plan.nodataText !== null) entries.push(T.ascii(T.Tag.GdalNodata, plan.nodataText));
  if (li > 0) {
    entries.push(T.long(T.Tag.NewSubfileType, T.SubfileType.ReducedResolution));
    return entries;
  }
  entries.push(...geoEntries(plan));
  const md = gdalMetadata(plan.descriptions);
  if (md) entries.push(T.ascii(T.Tag.GdalMetadata, md));
  return entries;
}

export interface LayoutLevel {
  /** The level's IFD (its tile offsets may be placeholders: only their count matters here). */
  entries: T.IfdEntry[];
  /** Data bytes of each tile, without leader and trailer, row-major. */
  byteCounts: readonly number[];
}

export interface Layout {
  firstIfd: number;
  ifdOffsets: number[];
  /** Per level, the offset of each tile's data (after its leader). */
  tileOffsets: number[][];
  dataStart: number;
  totalBytes: number;
}

const even = (n: number): number => n + (n % 2);
const align4 = (n: number): number => (n + 3) & ~3;

/**
 * Places header, ghost area (`ghostBytes` long), IFDs (level 0 first) and then the tiles (last
 * level first). Throws when the file would not fit classic TIFF's 32-bit offsets. Exported for tests.
 */
export function planLayout(ghostBytes: number, levels: LayoutLevel[]): Layout {
  // The validator wants the first IFD right after the ghost area, on the next even offset.
  const firstIfd = even(8 + ghostBytes);
  const ifdOffsets: number[] = [];
  let pos = firstIfd;
  for (const l of levels) {
    ifdOffsets.push(pos);
    pos = align4(pos + T.ifdSize(l.entries, pos));
  }
  const dataStart = pos;
  const tileOffsets: number[][] = levels.map(() => []);
  for (let li = levels.length - 1; li >= 0; li--) {
    for (const n of levels[li].byteCounts) {
      tileOffsets[li].push(pos + LEADER);
      pos += LEADER + n + TRAILER;
    }
  }
  if (pos > MAX_CLASSIC_TIFF_BYTES) throw tooBig('COG writer', `the COG would take ${pos} bytes`);
  return { firstIfd, ifdOffsets, tileOffsets, dataStart, totalBytes: pos };
}

/** Header, ghost area and all IFDs: everything before the tile data. */
function buildHead(ghost: Buffer, layout: Layout, ifds: T.IfdEntry[][]): Buffer {
  const head = Buffer.alloc(layout.dataStart);
  head.write('II', 0, 'ascii');
  head.writeUInt16LE(42, 2);
  head.writeUInt32LE(layout.firstIfd, 4);
  ghost.copy(head, 8);
  ifds.forEach((entries, li) => T.writeIfd(head, layout.ifdOffsets[li], entries, layout.ifdOffsets[li + 1] ?? 0));
  return head;
}

function layoutFor(plan: Plan, sizes: readonly Size[], counts: readonly (readonly number[])[]): { ghost: Buffer; layout: Layout } {
  const ghost = ghostArea();
  // IFD sizes do not depend on the offsets' values, so placeholders will do to plan the layout.
  const sizing = sizes.map((s, li) => ({
    entries: ifdEntries(
      plan,
      li,
      s,
      counts[li].map(() => 0),
      counts[li],
    ),
    byteCounts: counts[li],
  }));
  return { ghost, layout: planLayout(ghost.length, sizing) };
}

/**
 * The head (everything before the tile data) and the layout of a COG whose level `li` has the
 * given size and tile byte counts (data only, row-major). Throws beyond 4 GiB.
 */
export function cogHead(plan: Plan, sizes: readonly Size[], counts: readonly (readonly number[])[]): { head: Buffer; layout: Layout } {
  const { ghost, layout } = layoutFor(plan, sizes, counts);
  const ifds = sizes.map((s, li) => ifdEntries(plan, li, s, layout.tileOffsets[li], counts[li]));
  return { head: buildHead(ghost, layout, ifds), layout };
}

/** Bytes before the tile data: known before any tile is compressed. */
export function headBytes(plan: Plan, sizes: readonly Size[]): number {
  const counts = sizes.map((s) => new Array<number>(tileCount(s, plan.tileSize)).fill(0));
  return layoutFor(plan, sizes, counts).layout.dataStart;
}
