// Batch job test helpers: graphs on the demo collection, and calls that create, start and watch jobs.
import { expect } from 'vitest';
import { http, type Res, type TestServer } from './helpers.js';

export const DEMO = 'DEMO_S2_L2A';
// The demo scene: 2048 x 2048 pixels of 10 m from (620000, 5320000) down to (640480, 5299520).
const X0 = 620000;
const Y0 = 5320000;
/** An extent in pixels of the demo grid, as a UTM bbox on pixel edges. */
export const pixels = (col: number, row: number, w: number, h: number) => ({ west: X0 + col * 10, east: X0 + (col + w) * 10, north: Y0 - row * 10, south: Y0 - (row + h) * 10, crs: 32633 });

const load = (extent: unknown, temporal: unknown, bands = ['B04', 'B08']) => ({ process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: extent, temporal_extent: temporal, bands } });
const reducer = (id: string) => ({ process_graph: { x: { process_id: id, arguments: { data: { from_parameter: 'data' } }, result: true } } });
const JUNE = ['2024-06-01', '2024-07-01'];

/** NDVI of June in GeoTIFF over a window of the demo (2048 x 1536 px by default: 2 x 2 chunks of 1024). */
export const ndviGraph = (extent = pixels(0, 0, 2048, 1536), format = 'GTiff') => ({
  l: load(extent, JUNE),
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'n' }, format }, result: true },
});

/**
 * A long pixel-wise job: the season's highest NDVI at 2.5 m over the whole demo (8192 x 8192 px,
 * 64 chunks, all 8 dates); at 5 m, a quarter of that (4096 x 4096 px, 16 chunks).
 */
export const slowGraph = (resolution: 2.5 | 5 = 2.5) => ({
  l: load(pixels(0, 0, 2048, 2048), null),
  r: { process_id: 'resample_spatial', arguments: { data: { from_node: 'l' }, resolution, method: 'bilinear' } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'r' } } },
  m: { process_id: 'reduce_dimension', arguments: { data: { from_node: 'n' }, dimension: 't', reducer: reducer('max') } },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'm' }, format: 'GTiff' }, result: true },
});

/** A long job that cannot be cut: a 5 x 5 mean over all dates of the whole demo, computed as one piece. */
export const onePieceGraph = () => ({
  l: load(pixels(0, 0, 2048, 2048), null),
  k: { process_id: 'apply_kernel', arguments: { data: { from_node: 'l' }, kernel: Array.from({ length: 5 }, () => [1, 1, 1, 1, 1]), factor: 0.04 } },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'k' }, format: 'GTiff' }, result: true },
});

/** Valid, but fails while running: element 5 of the two bands, inside the reducer. */
export const failingGraph = () => ({
  l: load(pixels(0, 0, 512, 512), JUNE),
  r: {
    process_id: 'reduce_dimension',
    arguments: { data: { from_node: 'l' }, dimension: 'bands', reducer: { process_graph: { el: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, index: 5 }, result: true } } } },
  },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'r' }, format: 'GTiff' }, result: true },
});

export class Jobs {
  constructor(
    private readonly s: TestServer,
    readonly token: string,
  ) {}

  call(method: string, path: string, body?: unknown, token = this.token): Promise<Res> {
    return http(method, `${this.s.base}${path}`, { token, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  }

  /** Creates a job (1.x body) and answers its id. */
  async create(graph: unknown, extra: Record<string, unknown> = {}): Promise<string> {
    const r = await this.call('POST', '/jobs', { process: { process_graph: graph }, ...extra });
    expect(r.status, r.text).toBe(201);
    return r.headers['xeo-identifier'];
  }

  async get(id: string): Promise<any> {
    const r = await this.call('GET', `/jobs/${id}`);
    expect(r.status, r.text).toBe(200);
    return r.json;
  }

  async start(id: string): Promise<void> {
    const r = await this.call('POST', `/jobs/${id}/results`);
    expect(r.status, r.text).toBe(202);
  }

  /** Polls the job until `pred` holds (every 100 ms), failing after `ms`. */
  async waitFor(id: string, pred: (job: any) => boolean, ms = 60_000): Promise<any> {
    const end = Date.now() + ms;
    for (;;) {
      const job = await this.get(id);
      if (pred(job)) return job;
      if (Date.now() > end) throw new Error(`job ${id} did not reach the expected state in ${ms} ms; it is ${job.status} at ${job.progress}%`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async logs(id: string, query = ''): Promise<any> {
    const r = await this.call('GET', `/jobs/${id}/logs${query}`);
    expect(r.status, r.text).toBe(200);
    return r.json;
  }

  /** Runs a job to its end and answers the job record. */
  async run(graph: unknown, extra: Record<string, unknown> = {}, ms = 120_000): Promise<any> {
    const id = await this.create(graph, extra);
    await this.start(id);
    return this.waitFor(id, (j) => j.status === 'finished' || j.status === 'error', ms);
  }
}
