// A compute thread's first graph pays once for what every later one finds ready: the JIT of the
// engine's code and of the HTTP client, the wasm kernels compiled and instantiated, proj4's
// definitions, zlib's thread pool, geotiff.js's decoders, the PNG encoder. Paid at start-up
// instead, on a tiny synthetic COG (two bands, 64 x 64 px of 10 m in UTM) served over HTTP by a
// loopback server of this thread's own and drawn as a 256 px Web Mercator NDVI tile, so a server's
// first map tile costs its round trips and its own compute only. (Measured by the `remote` bench:
// without it the first tile spent about 130 ms more, outside the read of its data.)
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import type { CatalogSource, CollectionMeta, ItemMeta } from '../core/catalog.js';
import type { Graph } from '../core/graph.js';
import type { Box } from '../core/grid.js';
import { transformBox } from '../geometry/crs.js';
import { writeCog } from '../output/cog-writer.js';
import { execute } from './execute.js';
import type { Engine } from './engine.js';

const ID = 'warm-up';
const SIZE = 64;
const X0 = 600000;
const Y0 = 5300000;

const GRAPH: Graph = {
  l: { process_id: 'load_collection', arguments: { id: ID, spatial_extent: null, temporal_extent: null, bands: ['red', 'nir'] } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  r: {
    process_id: 'reduce_dimension',
    arguments: { data: { from_node: 'n' }, dimension: 't', reducer: { process_graph: { m: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } } } },
    result: true,
  },
};

export async function warmUp(engine: Engine): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), `xeo-warm-up-${threadId}-`));
  try {
    const file = path.join(dir, 'scene.tif');
    const red = new Uint16Array(SIZE * SIZE).map((_, i) => 400 + (i % 97));
    const nir = new Uint16Array(SIZE * SIZE).map((_, i) => 2500 + (i % 89));
    await writeCog(file, { width: SIZE, height: SIZE, epsg: 32633, transform: [X0, 10, 0, Y0, 0, -10], bands: [red, nir], nodata: 0 });
    const bytes = await readFile(file);
    const server = createServer((req, res) => {
      const m = /^bytes=(\d+)-(\d+)$/.exec(String(req.headers.range ?? ''));
      const start = m ? Number(m[1]) : 0;
      const end = m ? Math.min(bytes.length - 1, Number(m[2])) : bytes.length - 1;
      res.writeHead(m ? 206 : 200, { 'content-length': end - start + 1, ...(m ? { 'content-range': `bytes ${start}-${end}/${bytes.length}` } : {}) });
      res.end(bytes.subarray(start, end + 1));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      await drawTile(engine, `http://127.0.0.1:${(server.address() as AddressInfo).port}/scene.tif`);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  } finally {
    engine.blocks.clear();
    await rm(dir, { recursive: true, force: true });
  }
}

async function drawTile(engine: Engine, href: string): Promise<void> {
  {
    const bbox: Box = [X0, Y0 - SIZE * 10, X0 + SIZE * 10, Y0];
    const meta: CollectionMeta = {
      id: ID,
      title: ID,
      description: ID,
      license: 'other',
      epsg: 32633,
      resolution: [10, 10],
      bands: [
        { name: 'red', common_name: 'red', data_type: 'uint16', nodata: 0 },
        { name: 'nir', common_name: 'nir', data_type: 'uint16', nodata: 0 },
      ],
    };
    const item: ItemMeta = {
      id: ID,
      datetime: '2024-01-01T00:00:00Z',
      epsg: 32633,
      bbox,
      bbox4326: transformBox(bbox, 32633, 4326),
      assets: { red: { href, sample: 0 }, nir: { href, sample: 1 } },
    };
    const catalog: CatalogSource = { collections: { get: async (id) => (id === ID ? meta : null), items: async (id) => (id === ID ? [item] : []) } };
    const m = transformBox(bbox, 32633, 3857);
    const res = (m[2] - m[0]) / 256;
    await execute(
      {
        graph: GRAPH,
        userProcesses: {},
        maxValues: 1 << 24,
        limitAdvice: '',
        region: { epsg: 3857, transform: [m[0], res, 0, m[3], 0, -res], width: 256, height: 256 },
        answer: { kind: 'encoded', output: { format: 'PNG', options: { colormap: 'ndvi', min: -0.2, max: 0.9 } } },
        // Tier 0 only: a tier-1 compile now would take the CPU from the first real tiles.
        kernels: 0,
      },
      { ...engine, catalog: () => catalog },
    );
  }
}
