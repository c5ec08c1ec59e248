// The official openEO JavaScript client (@openeo/js-client, from npm, unchanged) against Xeo with
// the brand word `openeo`: what a user of the client does, end to end, over real HTTP.
import { describe, it, expect } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { OpenEO } from '@openeo/js-client';
import { http, type TestServer } from './helpers.js';
import { useDemoServer } from './demo-data.js';
import { decodePng } from './png-decode.js';
import { tileAt } from '../src/tiles/tile-grid.js';

let s: TestServer;
let work: string;
// The client's own types are loose; its objects are used as documented.
let con: any;

const DEMO = 'DEMO_S2_L2A';
const JUNE = ['2024-06-01', '2024-07-01'];
const bbox = { west: 627000, south: 5305000, east: 628280, north: 5306280, crs: 32633 };

async function bytesOf(data: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of data) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

useDemoServer({ env: { XEO_BRAND: 'openeo' }, users: { alice: 'secret' } }, (w) => {
  ({ server: s, work } = w);
});

// 1.3.0 through the well-known document (the newest: no version is production-ready in tests), its
// tokens sent raw as JWTs; 1.2.0 connected directly, its tokens in the basic// form.
describe.each(['1.3.0', '1.2.0'])('the openEO JavaScript client on API %s', (version) => {
  it('connects and signs in with basic authentication', async () => {
    con = version === '1.3.0' ? await OpenEO.connect(s.url) : await OpenEO.connectDirect(`${s.url}/${version}`);
    expect(con.getBaseUrl()).toBe(`${s.url}/${version}`);
    const caps = con.capabilities();
    expect(caps.apiVersion()).toBe(version);
    expect(caps.hasFeature('computeResult')).toBe(true);
    expect(caps.hasFeature('createService')).toBe(true);
    expect(caps.hasFeature('createJob')).toBe(true);
    const providers = await con.listAuthProviders();
    expect(providers.map((p: any) => p.getType())).toContain('basic');
    await con.authenticateBasic('alice', 'secret');
    expect(con.isAuthenticated()).toBe(true);
    // What the client sends as the bearer token: the JWT as it is where the JWT class is declared.
    const sent: string = con.authProvider.getToken();
    if (version === '1.3.0') expect(sent).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    else expect(sent).toMatch(/^basic\/\/[\w-]+\.[\w-]+\.[\w-]+$/);
    const me = await con.describeAccount();
    expect(me.user_id).toBe('alice');
  });

  it('lists collections and processes', async () => {
    const collections = await con.listCollections();
    expect(collections.collections.map((c: any) => c.id)).toContain(DEMO);
    const demo = await con.describeCollection(DEMO);
    expect(Object.keys(demo['cube:dimensions']).sort()).toEqual(['bands', 't', 'x', 'y']);
    const processes = await con.listProcesses();
    const ids = processes.processes.map((p: any) => p.id);
    for (const id of ['load_collection', 'ndvi', 'reduce_dimension', 'save_result']) expect(ids).toContain(id);
    expect((await con.describeProcess('ndvi')).id).toBe('ndvi');
    const types = await con.listServiceTypes();
    expect(Object.keys(types)).toContain('XYZ');
    const formats = await con.listFileTypes();
    expect(formats.getOutputType('gtiff')).toBeDefined();
  });

  it('builds a process with its builder and computes a result', async () => {
    // The client takes the result node of a builder.
    const b2 = await con.buildProcess();
    const answer = await con.computeResult(b2.add(40, 2));
    expect(JSON.parse((await bytesOf(answer.data)).toString())).toBe(42);
    expect(answer.type).toBe('application/json');

    const b3 = await con.buildProcess();
    const cube = b3.load_collection(DEMO, bbox, JUNE, ['B04', 'B08']);
    const ndvi = b3.ndvi(cube);
    const mean = b3.reduce_dimension(ndvi, (data: any, _ctx: any, child: any) => child.mean(data), 't');
    const png = await con.computeResult(b3.save_result(mean, 'PNG', { colormap: 'ndvi', min: -1, max: 1 }));
    expect(png.type).toBe('image/png');
    const img = decodePng(await bytesOf(png.data));
    expect([img.width, img.height]).toEqual([128, 128]);
  });

  it("computes a result with the Web Editor's body, a browser event spread into it", async () => {
    // The editor's "Run directly" hands its click event to computeResult as `additional`; a DOM
    // event's one own enumerable member, isTrusted, lands at the top level of POST /result.
    const click = Object.assign(Object.create({ type: 'click', target: null }), { isTrusted: true });
    const b = await con.buildProcess();
    const answer = await con.computeResult(b.multiply(6, 7), null, null, null, click);
    expect(JSON.parse((await bytesOf(answer.data)).toString())).toBe(42);
    expect(answer.logs.map((e: any) => e.level)).toContain('warning');
  });

  it('validates and stores user-defined processes', async () => {
    const bad = await con.validateProcess({ process_graph: { a: { process_id: 'no_such', arguments: {}, result: true } } });
    expect(bad.map((e: any) => e.code)).toEqual(['ProcessUnsupported']);
    const udp = await con.setUserProcess('double', {
      parameters: [{ name: 'x', description: 'a number', schema: { type: 'number' } }],
      process_graph: { m: { process_id: 'multiply', arguments: { x: { from_parameter: 'x' }, y: 2 }, result: true } },
    });
    expect(udp.id).toBe('double');
    const list = await con.listUserProcesses();
    expect(list.map((p: any) => p.id)).toContain('double');
    const stored = await con.getUserProcess('double');
    expect(stored.processGraph.m.process_id).toBe('multiply');
    const r = await con.computeResult({ process_graph: { d: { process_id: 'double', arguments: { x: 21 }, result: true } } });
    expect(JSON.parse((await bytesOf(r.data)).toString())).toBe(42);
    await stored.deleteUserProcess();
    expect((await con.listUserProcesses()).map((p: any) => p.id)).not.toContain('double');
  });

  it('uploads, lists, downloads and deletes a file', async () => {
    const local = path.join(work, 'upload.bin');
    const content = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 31) & 255));
    writeFileSync(local, content);
    const f = await con.uploadFile(local, 'inputs/field data.bin');
    expect(f.path).toBe('inputs/field data.bin');
    const files = await con.listFiles();
    expect(files.map((x: any) => x.path)).toEqual(['inputs/field data.bin']);
    const back = await bytesOf(await (await con.getFile('inputs/field data.bin')).retrieveFile());
    expect(back.equals(content)).toBe(true);
    const target = path.join(work, 'download.bin');
    await (await con.getFile('inputs/field data.bin')).downloadFile(target);
    expect(readFileSync(target).equals(content)).toBe(true);
    await f.deleteFile();
    expect((await con.listFiles()).length).toBe(0);
  });

  it('creates a web service and fetches a tile from its URL without a token', async () => {
    const b = await con.buildProcess();
    const cube = b.load_collection(DEMO, null, JUNE, ['B04', 'B08']);
    const mean = b.reduce_dimension(b.ndvi(cube), (data: any, _c: any, child: any) => child.mean(data), 't');
    const service = await con.createService(mean, 'xyz', 'NDVI tiles', null, true, { colormap: 'ndvi' });
    expect(service.type).toBe('XYZ');
    expect(service.url).toMatch(/\/xyz\/[\w-]+\/\{z\}\/\{x\}\/\{y\}\.png$/);
    const t = tileAt(16.745, 47.93, 13);
    const tile = await http('GET', service.url.replace('{z}', t.z).replace('{x}', t.x).replace('{y}', t.y));
    expect(tile.status).toBe(200);
    expect(decodePng(tile.body).width).toBe(256);
    await service.updateService({ title: 'NDVI, June' });
    expect((await service.describeService()).title).toBe('NDVI, June');
    const listed = await con.listServices();
    expect(listed.map((x: any) => x.id)).toContain(service.id);
    const logs = await service.debugService().nextLogs();
    expect(logs.map((e: any) => e.message)).toContain('XYZ service created');
    await service.deleteService();
    expect((await con.listServices()).map((x: any) => x.id)).not.toContain(service.id);
  });

  it('runs a batch job to completion and downloads its results with the links it gets', async () => {
    const b = await con.buildProcess();
    const cube = b.load_collection(DEMO, bbox, JUNE, ['B04', 'B08']);
    const saved = b.save_result(b.ndvi(cube), 'GTiff');
    const job = await con.createJob(saved, 'NDVI job', 'from the JS client');
    expect(job.status).toBe('created');
    const estimate = await job.estimateJob();
    expect(typeof estimate.duration === 'string' || typeof estimate.costs === 'number').toBe(true);
    await job.startJob();
    let status = '';
    for (let i = 0; i < 300 && status !== 'finished' && status !== 'error'; i++) {
      status = (await job.describeJob()).status;
      if (status !== 'finished') await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe('finished');
    expect(job.progress).toBe(100);
    const logs = await job.debugJob().nextLogs();
    expect(logs.length).toBeGreaterThan(0);
    const stac = await job.getResultsAsStac();
    const assets = Object.values<any>(stac.assets);
    expect(assets.length).toBeGreaterThan(0);
    expect(assets[0].type).toContain('image/tiff');
    // downloadResults fetches the asset links without the token: they are signed.
    const files: string[] = await job.downloadResults(work);
    expect(files.length).toBe(assets.length);
    const tiff = readFileSync(files[0]);
    expect(tiff.subarray(0, 4).toString('latin1')).toBe('II*\0');
    expect((await con.listJobs()).map((j: any) => j.id)).toContain(job.id);
    await job.deleteJob();
    expect((await con.listJobs()).map((j: any) => j.id)).not.toContain(job.id);
  });
});
