// `xeo import` of ordinary GeoTIFFs (made by GDAL: Byte, Int16, UInt16, Float32; stripped and
// tiled; with and without overviews; several CRSs) and of STAC Items, checked over HTTP and against
// what GDAL says of the same files.
import { it, expect, beforeAll, afterAll } from 'vitest';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startServer, http, removeDir, tempDir, xeo, type TestServer } from './helpers.js';
import { hasGdal, describeWithTool, run } from './system-tools.js';
import { openStore } from '../src/store/db.js';
import { fixedSnapshot, loadChunk } from '../src/data/load.js';
import { BlockCache } from '../src/data/cog-reader.js';
import { usersPolicy } from '../src/data/outbound.js';

/** Makes GeoTIFFs with GDAL's Python bindings (Debian's python3-gdal). */
function makeTiffs(dir: string): void {
  const script = `
import numpy as np
from osgeo import gdal, osr
def make(name, w, h, bands, dtype, epsg, gt, nodata=None, options=(), descriptions=None, metadata=None, overviews=False):
    ds = gdal.GetDriverByName('GTiff').Create('${dir}/' + name, w, h, bands, dtype, list(options))
    ds.SetGeoTransform(gt)
    s = osr.SpatialReference(); s.ImportFromEPSG(epsg); ds.SetProjection(s.ExportToWkt())
    y, x = np.mgrid[0:h, 0:w]
    for b in range(bands):
        band = ds.GetRasterBand(b + 1)
        v = (x * (b + 1) + y * 3) % 250 + 1
        if dtype == gdal.GDT_Float32: v = np.sin(x / 17.0) * 100 + y / 10.0 + b
        if dtype == gdal.GDT_Int16: v = (x - y) * 4 - 300 + b
        if nodata is not None:
            band.SetNoDataValue(nodata)
            v = np.where((x < 5) & (y < 5), nodata, v)
        band.WriteArray(v)
        if descriptions: band.SetDescription(descriptions[b])
    if metadata: ds.SetMetadata(metadata)
    if overviews: ds.BuildOverviews('AVERAGE', [2, 4])
    ds = None
make('landsat_like_20230704.tif', 600, 400, 3, gdal.GDT_Byte, 32632, [400000, 30, 0, 5200000, 0, -30], nodata=0)
make('dem.tif', 500, 300, 1, gdal.GDT_Int16, 4326, [10.0, 0.001, 0, 47.0, 0, -0.001], nodata=-32768, options=['TILED=YES', 'COMPRESS=DEFLATE'], metadata={'TIFFTAG_DATETIME': '2021:05:06 12:30:00'}, overviews=True)
make('laea.tif', 300, 300, 1, gdal.GDT_Float32, 3035, [4500000, 100, 0, 2800000, 0, -100], nodata=-9999, options=['COMPRESS=LZW', 'PREDICTOR=3'])
make('multi.tif', 256, 256, 2, gdal.GDT_UInt16, 32633, [600000, 10, 0, 5300000, 0, -10], descriptions=['red', 'nir'], options=['TILED=YES', 'BLOCKXSIZE=128', 'BLOCKYSIZE=128'])
make('undated.tif', 64, 64, 1, gdal.GDT_Byte, 32633, [600000, 10, 0, 5300000, 0, -10])
`;
  run('/usr/bin/python3', ['-c', script]);
}

describeWithTool(hasGdal, 'GDAL', 'xeo import', () => {
  let dir: string;
  let s: TestServer;
  beforeAll(async () => {
    dir = tempDir('xeo-import-');
    makeTiffs(dir);
    s = await startServer();
  });
  afterAll(async () => {
    await s.stop();
    removeDir(s.dataDir);
    removeDir(dir);
  });

  const imp = (args: string[]) => xeo(['import', ...args], { dataDir: s.dataDir });
  const collection = async (id: string) => (await http('GET', `${s.base}/collections/${id}`)).json;
  const gdalWgs84 = (file: string) => {
    const ring: number[][] = JSON.parse(run('gdalinfo', ['-json', file])).wgs84Extent.coordinates[0];
    return [Math.min(...ring.map((p) => p[0])), Math.min(...ring.map((p) => p[1])), Math.max(...ring.map((p) => p[0])), Math.max(...ring.map((p) => p[1]))];
  };

  it('imports a stripped Byte scene, dated by its file name, with a progress line', async () => {
    const r = imp([path.join(dir, 'landsat_like_20230704.tif'), '--collection', 'LANDSAT_LIKE', '--bands', 'green,red,nir', '--license', 'CC-BY-4.0']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/\[#+\] 1\/1 landsat_like_20230704\.tif/);
    expect(r.stdout).toMatch(/imported 1 item\(s\) into LANDSAT_LIKE/);
    const c = await collection('LANDSAT_LIKE');
    expect(c.license).toBe('CC-BY-4.0');
    expect(c['cube:dimensions'].bands.values).toEqual(['green', 'red', 'nir']);
    expect(c['cube:dimensions'].x).toMatchObject({ extent: [400000, 418000], step: 30, reference_system: 32632 });
    expect(c.extent.temporal.interval).toEqual([['2023-07-04T00:00:00Z', '2023-07-04T00:00:00Z']]);
    const ours = c.extent.spatial.bbox[0];
    const ref = gdalWgs84(path.join(dir, 'landsat_like_20230704.tif'));
    // gdalinfo's wgs84Extent uses the four corners; ours follows the edges, so it may be larger.
    for (let i = 0; i < 4; i++) expect(Math.abs(ours[i] - ref[i])).toBeLessThan(0.01);
  });

  it('imports a tiled Int16 DEM in EPSG:4326 with overviews, dated by TIFF metadata, and reads it', async () => {
    const r = imp([path.join(dir, 'dem.tif'), '--collection', 'DEM']);
    expect(r.status, r.stderr).toBe(0);
    const c = await collection('DEM');
    expect(c['cube:dimensions'].bands.values).toEqual(['B1']);
    expect(c.extent.temporal.interval[0][0]).toBe('2021-05-06T12:30:00Z');
    expect(c.extent.spatial.bbox[0].map((v: number) => Math.round(v * 1000) / 1000)).toEqual([10, 46.7, 10.5, 47]);
    const records = await openStore(s.dataDir);
    try {
      const store = fixedSnapshot(undefined, (await records.collections.get('DEM'))!, await records.collections.items('DEM'));
      const chunk = await loadChunk(store, { collection: 'DEM', extent: { west: 10, south: 46.99, east: 10.01, north: 47 } }, { blocks: new BlockCache(64 << 20), outbound: usersPolicy(undefined) });
      expect(chunk.grid.width).toBe(10);
      // value = (x - y) * 4 - 300, nodata in the corner
      expect(Number.isNaN(chunk.data[0])).toBe(true);
      expect(chunk.data[9 * 10 + 9]).toBe((9 - 9) * 4 - 300);
      expect(chunk.data[9]).toBe((9 - 0) * 4 - 300);
    } finally {
      await records.close();
    }
  });

  it('imports Float32 in EPSG:3035 and multi-band UInt16 named by band descriptions', async () => {
    expect(imp([path.join(dir, 'laea.tif'), '--collection', 'LAEA', '--date', '2020-01-01']).status).toBe(0);
    const laea = await collection('LAEA');
    expect(laea['cube:dimensions'].x.reference_system).toBe(3035);
    expect(laea.summaries['eo:bands']).toEqual([{ name: 'B1' }]);
    expect(imp([path.join(dir, 'multi.tif'), '--collection', 'MULTI', '--date', '2022-02-02T10:00:00Z']).status).toBe(0);
    expect((await collection('MULTI'))['cube:dimensions'].bands.values).toEqual(['red', 'nir']);
  });

  it('extends a collection from a STAC Item', async () => {
    const item = {
      type: 'Feature',
      stac_version: '1.0.0',
      id: 'multi-later',
      properties: { datetime: '2022-03-03T10:00:00Z', 'eo:cloud_cover': 12 },
      geometry: null,
      links: [],
      assets: {
        data: { href: './multi.tif', type: 'image/tiff; application=geotiff; profile=cloud-optimized', roles: ['data'], 'eo:bands': [{ name: 'red' }, { name: 'nir' }] },
        thumbnail: { href: './thumb.png', type: 'image/png', roles: ['thumbnail'] },
      },
    };
    writeFileSync(path.join(dir, 'item.json'), JSON.stringify(item));
    const r = imp([path.join(dir, 'item.json'), '--collection', 'MULTI']);
    expect(r.status, r.stderr).toBe(0);
    const c = await collection('MULTI');
    expect(c['cube:dimensions'].t.values).toEqual(['2022-02-02T10:00:00Z', '2022-03-03T10:00:00Z']);
    const q = (await http('GET', `${s.base}/collections/MULTI/queryables`)).json;
    expect(q.properties['eo:cloud_cover']).toBeDefined();
  });

  it('refuses what it cannot import, with a clear message and exit code 2', async () => {
    const undated = imp([path.join(dir, 'undated.tif'), '--collection', 'X']);
    expect(undated.status).toBe(2);
    expect(undated.stderr).toMatch(/no date/);
    const wrongBands = imp([path.join(dir, 'multi.tif'), '--collection', 'MULTI', '--bands', 'a,b', '--date', '2022-04-04']);
    expect(wrongBands.status).toBe(2);
    expect(wrongBands.stderr).toMatch(/band 'a' is not a band of collection MULTI/);
    writeFileSync(path.join(dir, 'not.tif'), 'hello');
    const broken = imp([path.join(dir, 'not.tif'), '--collection', 'X', '--date', '2020-01-01']);
    expect(broken.status).toBe(2);
    expect(broken.stderr).toMatch(/not a readable GeoTIFF/);
    expect(imp([path.join(dir, 'dem.tif')]).status).toBe(2);
    expect((await http('GET', `${s.base}/collections/X`)).status).toBe(404);
  });
});
