// Stand-ins for the outside world of STAC API collections, all on loopback: a small STAC API of our
// own (landing page with conformsTo, /collections, item_assets, /queryables, /search in GET and
// POST with `next` paging, the query extension and CQL2-JSON filters), a file server with HTTP
// Range that counts requests per file, and a scene of COGs whose items look like Earth Search's
// sentinel-2-l2a (asset keys blue, green, red, nir, scl with eo:bands and raster:bands).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { CLI, ROOT } from './helpers.js';

export interface Listening {
  url: string;
  close(): Promise<void>;
}

export async function listen(handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>): Promise<Listening & { server: Server }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      Promise.resolve(handler(req, res, Buffer.concat(chunks))).catch((e) => {
        res.statusCode = 500;
        res.end(String(e));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const sendJson = (res: ServerResponse, status: number, body: unknown, type = 'application/json') => {
  res.writeHead(status, { 'content-type': type });
  res.end(JSON.stringify(body));
};

/**
 * Runs the `xeo` CLI without blocking this process (spawnSync would stall the stand-in servers
 * the command talks to, which run in this process).
 */
export function xeoAsync(args: string[], opts: { dataDir: string; env?: Record<string, string> }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, XEO_DATA_DIR: opts.dataDir, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

// --- files with Range -----------------------------------------------------------------------------

export interface FileServer extends Listening {
  /** Requests per path (only those the check let through). */
  hits: Map<string, number>;
  /** Every request let through, as "path range" (no range: "path -"). */
  ranges: string[];
  /** Requests refused by the check. */
  refused: string[];
}

/** Serves files under `dir` with HTTP Range; `check` may refuse a request (answered 403). */
export async function startFileServer(dir: string, check?: (req: IncomingMessage, url: URL) => boolean): Promise<FileServer> {
  const hits = new Map<string, number>();
  const ranges: string[] = [];
  const refused: string[] = [];
  const l = await listen((req, res) => {
    const url = new URL(req.url!, 'http://x');
    if (check && !check(req, url)) {
      refused.push(url.pathname);
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.end('refused');
      return;
    }
    const file = path.join(dir, decodeURIComponent(url.pathname));
    if (!file.startsWith(dir) || !statSync(file, { throwIfNoEntry: false })?.isFile()) {
      res.writeHead(404);
      res.end();
      return;
    }
    hits.set(url.pathname, (hits.get(url.pathname) ?? 0) + 1);
    ranges.push(`${url.pathname} ${req.headers.range ?? '-'}`);
    const data = readFileSync(file);
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (!m) {
      res.writeHead(200, { 'content-length': data.length, 'accept-ranges': 'bytes' });
      res.end(req.method === 'HEAD' ? undefined : data);
      return;
    }
    const start = Number(m[1]);
    const end = Math.min(data.length - 1, m[2] ? Number(m[2]) : data.length - 1);
    res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${data.length}`, 'content-length': end - start + 1, 'accept-ranges': 'bytes' });
    res.end(req.method === 'HEAD' ? undefined : data.subarray(start, end + 1));
  });
  return { ...l, hits, ranges, refused };
}

// --- the STAC API ---------------------------------------------------------------------------------

export interface StacApiOptions {
  collection: any;
  items: any[];
  queryables?: any;
  /** Search methods offered on the landing page (both by default). */
  methods?: ('GET' | 'POST')[];
  /** Which filter language the API conforms to. */
  filter?: 'cql2' | 'query' | 'none';
  /** Most items per page, whatever `limit` asks (100 by default). */
  pageSize?: number;
  /** Answer numberMatched. */
  matched?: boolean;
  /** The first this many searches are answered 503 (a flaky API); they are counted in `searches`. */
  failSearches?: number;
}

/** A search as the API received it: the first page of every search, with its parameters. */
export interface SearchSeen {
  method: 'GET' | 'POST';
  params: Record<string, any>;
  /** Pages fetched for it (1 + next pages). */
  pages: number;
}

export interface StacApi extends Listening {
  searches: SearchSeen[];
  /** Every request, as "METHOD path". */
  requests: string[];
}

const CONF = {
  core: 'https://api.stacspec.org/v1.0.0/core',
  collections: 'https://api.stacspec.org/v1.0.0/collections',
  search: 'https://api.stacspec.org/v1.0.0/item-search',
  query: 'https://api.stacspec.org/v1.0.0/item-search#query',
  filter: 'https://api.stacspec.org/v1.0.0-rc.2/item-search#filter',
  cql2json: 'http://www.opengis.net/spec/cql2/1.0/conf/cql2-json',
};

function intersects(a: number[], b: number[]): boolean {
  return a[0] <= b[2] && a[2] >= b[0] && a[1] <= b[3] && a[3] >= b[1];
}

const cmp = (op: string, a: any, b: any): boolean =>
  op === '=' || op === 'eq'
    ? a === b
    : op === '<>' || op === 'neq'
      ? a !== b
      : op === '<' || op === 'lt'
        ? a < b
        : op === '<=' || op === 'lte'
          ? a <= b
          : op === '>' || op === 'gt'
            ? a > b
            : op === '>=' || op === 'gte'
              ? a >= b
              : false;

function cql2(expr: any, props: Record<string, any>): boolean {
  if (expr.op === 'and') return expr.args.every((a: any) => cql2(a, props));
  if (expr.op === 'or') return expr.args.some((a: any) => cql2(a, props));
  const [p, v] = expr.args;
  if (!p || typeof p.property !== 'string') throw new Error(`unsupported CQL2 ${JSON.stringify(expr)}`);
  return cmp(expr.op, props[p.property], v);
}

function matches(item: any, q: Record<string, any>): boolean {
  if (q.collections && !q.collections.includes(item.collection)) return false;
  if (q.bbox && !intersects(item.bbox, q.bbox)) return false;
  if (q.datetime) {
    const [s, e] = String(q.datetime).split('/');
    const t = Date.parse(item.properties.datetime);
    if (s && s !== '..' && t < Date.parse(s)) return false;
    if (e && e !== '..' && t > Date.parse(e)) return false;
  }
  if (q.filter && !cql2(q.filter, item.properties)) return false;
  for (const [p, ops] of Object.entries<any>(q.query ?? {})) for (const [op, v] of Object.entries(ops)) if (!cmp(op, item.properties[p], v)) return false;
  return true;
}

export async function startStacApi(o: StacApiOptions): Promise<StacApi> {
  const methods = o.methods ?? ['GET', 'POST'];
  const filter = o.filter ?? 'cql2';
  const pageSize = o.pageSize ?? 100;
  const searches: SearchSeen[] = [];
  const requests: string[] = [];
  let base = '';
  const conformsTo = [CONF.core, CONF.collections, CONF.search, ...(filter === 'query' ? [CONF.query] : filter === 'cql2' ? [CONF.filter, CONF.cql2json] : [])];
  const l = await listen((req, res, body) => {
    const url = new URL(req.url!, base);
    requests.push(`${req.method} ${url.pathname}`);
    const cid = o.collection.id;
    if (url.pathname === '/' && req.method === 'GET') {
      return sendJson(res, 200, {
        type: 'Catalog',
        id: 'stand-in',
        stac_version: '1.0.0',
        description: 'A STAC API stand-in',
        conformsTo,
        links: [{ rel: 'self', href: `${base}/` }, { rel: 'data', href: `${base}/collections` }, ...methods.map((m) => ({ rel: 'search', type: 'application/geo+json', method: m, href: `${base}/search` }))],
      });
    }
    if (url.pathname === '/collections') return sendJson(res, 200, { collections: [o.collection], links: [] });
    if (url.pathname === `/collections/${cid}`) return sendJson(res, 200, o.collection);
    if (url.pathname === `/collections/${cid}/queryables` && o.queryables) return sendJson(res, 200, o.queryables, 'application/schema+json');
    if (url.pathname === '/search' && methods.includes(req.method as 'GET')) {
      let q: Record<string, any>;
      if (req.method === 'POST') q = JSON.parse(body.toString('utf8'));
      else {
        q = {};
        for (const [k, v] of url.searchParams) {
          if (k === 'collections') q.collections = v.split(',');
          else if (k === 'bbox') q.bbox = v.split(',').map(Number);
          else if (k === 'limit' || k === 'next') q[k] = Number(v);
          else if (k === 'filter' || k === 'query') q[k] = JSON.parse(v);
          else q[k] = v;
        }
      }
      if ((q.filter && filter !== 'cql2') || (q.query && filter !== 'query')) return sendJson(res, 400, { code: 'BadRequest', description: 'unsupported filter' });
      const offset = Number(q.next ?? 0);
      if (offset === 0) {
        const { next: _n, ...params } = q;
        searches.push({ method: req.method as 'GET', params, pages: 1 });
      } else searches[searches.length - 1].pages++;
      if (offset === 0 && searches.length <= (o.failSearches ?? 0)) return sendJson(res, 503, { code: 'ServiceUnavailable', description: 'try again later' });
      const all = o.items.filter((it) => matches(it, q));
      const n = Math.min(pageSize, Number(q.limit ?? 10));
      const page = all.slice(offset, offset + n);
      const links: any[] = [];
      if (offset + n < all.length) {
        if (req.method === 'POST') links.push({ rel: 'next', method: 'POST', href: `${base}/search`, body: { next: offset + n }, merge: true, type: 'application/geo+json' });
        else {
          const u = new URL(url.href);
          u.searchParams.set('next', String(offset + n));
          links.push({ rel: 'next', href: u.href, type: 'application/geo+json' });
        }
      }
      return sendJson(res, 200, { type: 'FeatureCollection', features: page, links, ...(o.matched ? { numberMatched: all.length } : {}) }, 'application/geo+json');
    }
    sendJson(res, 404, { code: 'NotFound', description: url.pathname });
  });
  base = l.url;
  return { ...l, searches, requests };
}

// --- a Sentinel-2-like scene ----------------------------------------------------------------------

export const EPSG = 32633;
export const X0 = 600000;
export const Y0 = 5300000;
export const RES = 10;
export const N = 512;

/** Band asset keys as Earth Search names them, the eo:bands name and common name of each. */
export const BANDS: [key: string, name: string | null, common: string | null, wavelength: number | null][] = [
  ['blue', 'B02', 'blue', 0.49],
  ['green', 'B03', 'green', 0.56],
  ['red', 'B04', 'red', 0.665],
  ['nir', 'B08', 'nir', 0.842],
  ['scl', null, null, null],
];

export interface SceneItem {
  id: string;
  datetime: string;
  cloud: number;
  /** Columns [c0, c1) of the scene the item covers. */
  cols: [number, number];
  /** Varies the pixel values between items. */
  seed: number;
}

/** The items of the scene: a day of two halves (mosaicked), a cloudy day, and a day of two full, overlapping items. */
export const SCENE: SceneItem[] = [
  { id: 'S2_20240510_W', datetime: '2024-05-10T10:00:00Z', cloud: 5, cols: [0, 256], seed: 1 },
  { id: 'S2_20240510_E', datetime: '2024-05-10T10:00:04Z', cloud: 5, cols: [256, 512], seed: 2 },
  { id: 'S2_20240614_F', datetime: '2024-06-14T10:00:00Z', cloud: 40, cols: [0, 512], seed: 3 },
  { id: 'S2_20240704_A', datetime: '2024-07-04T10:00:00Z', cloud: 10, cols: [0, 512], seed: 4 },
  { id: 'S2_20240704_B', datetime: '2024-07-04T10:00:09Z', cloud: 12, cols: [0, 512], seed: 5 },
];

function pixels(key: string, it: SceneItem): Uint16Array | Uint8Array {
  const w = it.cols[1] - it.cols[0];
  const out = key === 'scl' ? new Uint8Array(w * N) : new Uint16Array(w * N);
  const k = BANDS.findIndex((b) => b[0] === key);
  for (let r = 0; r < N; r++) {
    for (let c = 0; c < w; c++) {
      const x = c + it.cols[0];
      out[r * w + c] = key === 'scl' ? 4 + (((r >> 5) + (x >> 5) + it.seed) % 3) : 200 + ((r * (3 + k) + x * (5 + it.seed) + it.seed * 977 + k * 131) % 3000) + (key === 'nir' ? 2000 : 0);
    }
  }
  return out;
}

/** Writes the scene's COGs under `dir` (dir/ID/KEY.tif) with our COG writer. */
export async function writeScene(dir: string): Promise<void> {
  const { writeCog } = await import(path.join(ROOT, 'dist/src/output/cog-writer.js'));
  for (const it of SCENE) {
    mkdirSync(path.join(dir, it.id), { recursive: true });
    for (const [key] of BANDS) {
      await writeCog(path.join(dir, it.id, `${key}.tif`), {
        width: it.cols[1] - it.cols[0],
        height: N,
        epsg: EPSG,
        transform: [X0 + it.cols[0] * RES, RES, 0, Y0, 0, -RES],
        bands: [pixels(key, it)],
        nodata: 0,
        tileSize: 128,
        resampling: key === 'scl' ? 'nearest' : 'average',
      });
    }
  }
}

/** An item document shaped like Earth Search's sentinel-2-l2a; `href(id, key)` places its assets. */
export function itemDoc(it: SceneItem, collection: string, bbox4326: number[], href: (id: string, key: string) => string): any {
  const w = it.cols[1] - it.cols[0];
  const assets: Record<string, any> = {};
  for (const [key, name, common, wl] of BANDS) {
    assets[key] = {
      href: href(it.id, key),
      type: 'image/tiff; application=geotiff; profile=cloud-optimized',
      roles: key === 'scl' ? ['data'] : ['data', 'reflectance'],
      ...(name ? { 'eo:bands': [{ name, common_name: common, center_wavelength: wl }] } : {}),
      'raster:bands': [{ nodata: 0, data_type: key === 'scl' ? 'uint8' : 'uint16', spatial_resolution: RES }],
      'proj:shape': [N, w],
      'proj:transform': [RES, 0, X0 + it.cols[0] * RES, 0, -RES, Y0],
    };
  }
  assets.thumbnail = { href: href(it.id, 'thumbnail.jpg'), type: 'image/jpeg', roles: ['thumbnail'] };
  assets.visual = { href: href(it.id, 'visual.tif'), type: 'image/tiff; application=geotiff', roles: ['visual'], 'eo:bands': [{ name: 'B04' }, { name: 'B03' }, { name: 'B02' }] };
  return {
    type: 'Feature',
    stac_version: '1.0.0',
    id: it.id,
    collection,
    bbox: bbox4326,
    geometry: {
      type: 'Polygon',
      coordinates: [
        [
          [bbox4326[0], bbox4326[1]],
          [bbox4326[2], bbox4326[1]],
          [bbox4326[2], bbox4326[3]],
          [bbox4326[0], bbox4326[3]],
          [bbox4326[0], bbox4326[1]],
        ],
      ],
    },
    properties: { datetime: it.datetime, 'eo:cloud_cover': it.cloud, platform: 'sentinel-2a', 'proj:epsg': EPSG, 's2:mgrs_tile': '33TWN' },
    assets,
    links: [],
  };
}

/** The collection document, with item_assets as Earth Search lists them. */
export function collectionDoc(id: string, bbox4326: number[]): any {
  const item_assets: Record<string, any> = {};
  for (const [key, name, common, wl] of BANDS) {
    item_assets[key] = {
      title: key === 'scl' ? 'Scene classification map (SCL)' : `${common} band`,
      type: 'image/tiff; application=geotiff; profile=cloud-optimized',
      roles: key === 'scl' ? ['data'] : ['data', 'reflectance'],
      ...(name ? { 'eo:bands': [{ name, common_name: common, center_wavelength: wl }] } : {}),
      'raster:bands': [{ nodata: 0, data_type: key === 'scl' ? 'uint8' : 'uint16', spatial_resolution: RES }],
    };
  }
  item_assets.thumbnail = { type: 'image/jpeg', roles: ['thumbnail'] };
  item_assets.visual = { type: 'image/tiff; application=geotiff', roles: ['visual'], 'eo:bands': [{ name: 'B04' }, { name: 'B03' }, { name: 'B02' }] };
  return {
    type: 'Collection',
    stac_version: '1.0.0',
    id,
    title: 'Sentinel-2 Level-2A (stand-in)',
    description: 'Items shaped like Earth Search sentinel-2-l2a',
    license: 'proprietary',
    extent: { spatial: { bbox: [bbox4326] }, temporal: { interval: [['2024-05-01T00:00:00Z', null]] } },
    summaries: { platform: ['sentinel-2a', 'sentinel-2b'], 'eo:cloud_cover': { minimum: 0, maximum: 100 }, 'proj:epsg': [EPSG] },
    item_assets,
    links: [
      { rel: 'root', href: '../' },
      { rel: 'items', href: `./${id}/items`, type: 'application/geo+json' },
      { rel: 'http://www.opengis.net/def/rel/ogc/1.0/queryables', href: `./${id}/queryables` },
    ],
  };
}

export const QUERYABLES = {
  $schema: 'https://json-schema.org/draft/2019-09/schema',
  $id: 'stand-in',
  type: 'object',
  title: 'Queryables',
  properties: {
    'eo:cloud_cover': { description: 'Cloud cover', type: 'number', minimum: 0, maximum: 100 },
    's2:mgrs_tile': { type: 'string' },
    platform: { type: 'string', enum: ['sentinel-2a', 'sentinel-2b'] },
  },
  additionalProperties: true,
};

/** Local STAC Item files of the scene (absolute paths to the COGs), for `xeo import`. */
export function localItemFiles(dir: string, bbox4326: number[], items = SCENE): string[] {
  return items.map((it) => {
    const file = path.join(dir, `${it.id}.json`);
    writeFileSync(file, JSON.stringify(itemDoc(it, 'local', bbox4326, (id, key) => path.join(dir, id, key.includes('.') ? key : `${key}.tif`))));
    return file;
  });
}
