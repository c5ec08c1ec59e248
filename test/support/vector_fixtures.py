# Test data for the vector tests, made with GDAL/OGR and numpy (Debian's python3-gdal):
#   rasters/fields_2024MMDD.tif  three dates of a two-band UInt16 raster (B04, B08), EPSG:32633,
#                                10 m pixels, 0 as no-data (a block of it on the second date)
#   fields.geojson               field polygons in EPSG:4326 (holes, a multi-polygon, a polygon
#                                smaller than a pixel, one outside the raster), with properties
#   reference.json               per field, date and band: mean, valid count and total count of
#                                the pixels whose centre is in the polygon, by GDAL's rasteriser
# Usage: python3 vector_fixtures.py DIR
import json
import sys

import numpy as np
from osgeo import gdal, ogr, osr

gdal.UseExceptions()
out = sys.argv[1]
W, H, RES, X0, Y0 = 240, 160, 10.0, 600000.0, 5300000.0
DATES = ['20240601', '20240611', '20240621']
utm = osr.SpatialReference()
utm.ImportFromEPSG(32633)
wgs = osr.SpatialReference()
wgs.ImportFromEPSG(4326)
wgs.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
utm.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
to_wgs = osr.CoordinateTransformation(utm, wgs)

rng = np.random.default_rng(26)
cubes = []
import os
os.makedirs(f'{out}/rasters', exist_ok=True)
for i, d in enumerate(DATES):
    ds = gdal.GetDriverByName('GTiff').Create(f'{out}/rasters/fields_{d}.tif', W, H, 2, gdal.GDT_UInt16, ['TILED=YES', 'BLOCKXSIZE=64', 'BLOCKYSIZE=64', 'COMPRESS=DEFLATE'])
    ds.SetGeoTransform([X0, RES, 0, Y0, 0, -RES])
    ds.SetProjection(utm.ExportToWkt())
    bands = []
    for b in range(2):
        v = rng.integers(100, 5000, size=(H, W), dtype=np.uint16)
        if i == 1:
            v[40:90, 60:150] = 0
        band = ds.GetRasterBand(b + 1)
        band.SetNoDataValue(0)
        band.WriteArray(v)
        bands.append(v.astype(np.float64))
    ds = None
    cubes.append(bands)


def ring(cx, cy, r, n, jitter):
    # evenly spread angles, a little jittered: a star-shaped ring around the centre, always simple
    a = (np.arange(n) + rng.uniform(-0.3, 0.3, n)) * 2 * np.pi / n
    rr = r * (1 + rng.uniform(-jitter, jitter, n))
    pts = [(cx + rr[k] * np.cos(a[k]), cy + rr[k] * np.sin(a[k])) for k in range(n)]
    return pts + [pts[0]]


def polygon(rings):
    g = ogr.Geometry(ogr.wkbPolygon)
    for pts in rings:
        lr = ogr.Geometry(ogr.wkbLinearRing)
        for x, y in pts:
            lr.AddPoint_2D(float(x), float(y))
        g.AddGeometry(lr)
    return g


fields = []
for k in range(36):
    cx = X0 + rng.uniform(50, W * RES - 50)
    cy = Y0 - rng.uniform(50, H * RES - 50)
    fields.append(polygon([ring(cx, cy, rng.uniform(20, 140), int(rng.integers(5, 12)), 0.3)]))
# a field with a hole
cx, cy = X0 + 1203.3, Y0 - 801.7
fields.append(polygon([ring(cx, cy, 230, 10, 0.05), ring(cx, cy, 90, 8, 0.05)[::-1]]))
assert all(g.IsValid() for g in fields)
# a multi-polygon of two parts
mp = ogr.Geometry(ogr.wkbMultiPolygon)
mp.AddGeometry(polygon([ring(X0 + 300.4, Y0 - 1300.9, 60, 6, 0.2)]))
mp.AddGeometry(polygon([ring(X0 + 2100.6, Y0 - 200.2, 70, 7, 0.2)]))
fields.append(mp)
# smaller than a pixel, holding no pixel centre
fields.append(polygon([[(X0 + 1001.0, Y0 - 1001.0), (X0 + 1004.0, Y0 - 1001.0), (X0 + 1004.0, Y0 - 1004.0), (X0 + 1001.0, Y0 - 1004.0), (X0 + 1001.0, Y0 - 1001.0)]]))
# outside the raster
fields.append(polygon([ring(X0 + 9000, Y0 - 500, 100, 6, 0.1)]))
# reaching over the raster's edge
fields.append(polygon([ring(X0 - 40.2, Y0 - 700.1, 120, 8, 0.2)]))
crops = ['wheat', 'maize', 'barley', 'rapeseed']

# GeoJSON in EPSG:4326 (written by OGR)
drv = ogr.GetDriverByName('GeoJSON')
src = drv.CreateDataSource(f'{out}/fields.geojson')
lyr = src.CreateLayer('fields', wgs, ogr.wkbUnknown, ['COORDINATE_PRECISION=12', 'RFC7946=NO'])
lyr.CreateField(ogr.FieldDefn('field_id', ogr.OFTString))
lyr.CreateField(ogr.FieldDefn('crop', ogr.OFTString))
lyr.CreateField(ogr.FieldDefn('area_ha', ogr.OFTReal))
for k, g in enumerate(fields):
    f = ogr.Feature(lyr.GetLayerDefn())
    f.SetField('field_id', 'F%03d' % k)
    f.SetField('crop', crops[k % 4])
    f.SetField('area_ha', round(g.GetArea() / 10000, 4))
    gw = g.Clone()
    gw.Transform(to_wgs)
    f.SetGeometry(gw)
    lyr.CreateFeature(f)
src = None

# The reference: GDAL's rasteriser (pixel centre in the polygon), feature by feature (fields may overlap).
mem = gdal.GetDriverByName('MEM')
ref = {'mean': [], 'valid': [], 'total': [], 'median': []}
for k, g in enumerate(fields):
    mds = ogr.GetDriverByName('Memory').CreateDataSource('m')
    ml = mds.CreateLayer('l', utm, ogr.wkbUnknown)
    f = ogr.Feature(ml.GetLayerDefn())
    f.SetGeometry(g)
    ml.CreateFeature(f)
    r = mem.Create('', W, H, 1, gdal.GDT_Byte)
    r.SetGeoTransform([X0, RES, 0, Y0, 0, -RES])
    r.SetProjection(utm.ExportToWkt())
    gdal.RasterizeLayer(r, [1], ml, burn_values=[1])
    inside = r.GetRasterBand(1).ReadAsArray() == 1
    ref['total'].append(int(inside.sum()))
    means, valids, medians = [], [], []
    for t in range(len(DATES)):
        mb, vb, md = [], [], []
        for b in range(2):
            v = cubes[t][b][inside]
            v = v[v != 0]
            vb.append(int(v.size))
            mb.append(float(v.mean()) if v.size else None)
            md.append(float(np.median(v)) if v.size else None)
        means.append(mb)
        valids.append(vb)
        medians.append(md)
    ref['mean'].append(means)
    ref['valid'].append(valids)
    ref['median'].append(medians)
json.dump(ref, open(f'{out}/reference.json', 'w'))
