// API 1.3.0's job timeline over HTTP: queued, started and unpublished on the job (every version),
// created, updated, queued, started, expires, unpublished and openeo:status in the results document,
// the STAC Collection form of results over several dates (with its signed Item), a signed link to
// partial results, restarts that discard the old results and start the timeline again, and results
// removed once their `unpublished` time (XEO_JOB_RESULT_TTL) has passed.
import { describe, it, expect } from 'vitest';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { http, type TestServer } from './helpers.js';
import { useDemoServer } from './demo-data.js';
import { Jobs, ndviGraph, pixels, slowGraph, DEMO } from './jobs-helpers.js';

const TTL_S = 6;
const VERSIONS = ['1.3.0', '1.2.0', '1.0.1', '1.0.0-rc.2'];
let s: TestServer;
let jobs: Jobs;
let jobs13: Jobs;

useDemoServer({ env: { XEO_JOB_RESULT_TTL: String(TTL_S), XEO_JOB_THREADS: '1' }, users: { alice: 'pa' } }, (w) => {
  s = w.server;
  jobs = new Jobs(s, w.tokens.alice);
  jobs13 = new Jobs({ ...s, base: `${s.url}/1.3.0` }, w.tokens.alice);
});

const ms = (t: string) => Date.parse(t);
/** The NDVI of every date of the season over a small window: results over several dates. */
const season = () => ({
  l: { process_id: 'load_collection', arguments: { id: DEMO, spatial_extent: pixels(0, 0, 256, 256), temporal_extent: null, bands: ['B04', 'B08'] } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'n' }, format: 'GTiff' }, result: true },
});

describe('the job timeline', () => {
  let id: string;

  it('grows as the job is queued, runs and finishes, on every version', async () => {
    id = await jobs.create(ndviGraph(pixels(0, 0, 512, 512)));
    const created = await jobs.get(id);
    for (const k of ['queued', 'started', 'unpublished']) expect(created).not.toHaveProperty(k);
    await jobs.start(id);
    const done = await jobs.waitFor(id, (j) => j.status === 'finished');
    expect(ms(done.created)).toBeLessThanOrEqual(ms(done.queued));
    expect(ms(done.queued)).toBeLessThanOrEqual(ms(done.started));
    expect(ms(done.started)).toBeLessThanOrEqual(ms(done.updated));
    // kept for XEO_JOB_RESULT_TTL from when it finished
    expect(ms(done.unpublished) - ms(done.updated)).toBeGreaterThanOrEqual(TTL_S * 1000 - 1000);
    expect(ms(done.unpublished) - ms(done.updated)).toBeLessThanOrEqual(TTL_S * 1000 + 1000);
    for (const v of VERSIONS) {
      const r = await http('GET', `${s.url}/${v}/jobs/${id}`, { token: jobs.token, headers: { origin: 'http://x.test' } });
      expect(r.json, v).toMatchObject({ created: done.created, updated: done.updated, queued: done.queued, started: done.started, unpublished: done.unpublished });
    }
  });

  it('is in the results document, with its expiry and status', async () => {
    const doc = (await jobs13.call('GET', `/jobs/${id}/results`)).json;
    const job = await jobs.get(id);
    expect(doc.type).toBe('Feature');
    expect(doc.properties).toMatchObject({
      created: job.created,
      updated: job.updated,
      queued: job.queued,
      started: job.started,
      unpublished: job.unpublished,
      expires: expect.any(String),
      'openeo:status': 'finished',
    });
  });

  it('starts again with a restart, which discards the old results', async () => {
    const before = await jobs.get(id);
    const file = path.join(s.dataDir, 'jobs', id, 'result.tif');
    expect(existsSync(file)).toBe(true);
    await jobs.start(id);
    const again = await jobs.get(id);
    expect(['queued', 'running']).toContain(again.status);
    expect(ms(again.queued)).toBeGreaterThan(ms(before.queued));
    expect(again).not.toHaveProperty('unpublished');
    const done = await jobs.waitFor(id, (j) => j.status === 'finished');
    expect(ms(done.started)).toBeGreaterThan(ms(before.started));
    expect(ms(done.unpublished)).toBeGreaterThan(ms(before.unpublished));
    expect((await jobs.logs(id)).logs.map((l: { message: string }) => l.message)).toContainEqual(expect.stringMatching(/^Restarted from status finished; the results of the previous run are discarded/));
  });

  it('takes the results away once unpublished has passed', async () => {
    const job = await jobs.get(id);
    const file = path.join(s.dataDir, 'jobs', id, 'result.tif');
    expect(existsSync(file)).toBe(true);
    // The server looks for them as often as they expire (here every TTL_S seconds).
    const deadline = ms(job.unpublished) + TTL_S * 1000 + 2000;
    while (existsSync(file) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    expect(existsSync(file)).toBe(false);
    expect(Date.now()).toBeGreaterThan(ms(job.unpublished));
    const doc = (await jobs13.call('GET', `/jobs/${id}/results`)).json;
    expect(doc.assets).toEqual({});
    expect(doc.properties.unpublished).toBe(job.unpublished);
    expect((await jobs.logs(id)).logs.map((l: { message: string }) => l.message)).toContainEqual(expect.stringMatching(/^The results were removed/));
  }, 30_000);
});

describe('the results over several dates', () => {
  it('are a STAC Collection on 1.3.0 with a signed Item, an Item on 1.2.0 and for GeoJSON readers', async () => {
    const job = await jobs.run(season());
    expect(job.status).toBe('finished');
    const col = await jobs13.call('GET', `/jobs/${job.id}/results`);
    expect(col.headers['content-type']).toBe('application/json');
    const doc = col.json;
    expect(doc).toMatchObject({
      type: 'Collection',
      id: job.id,
      stac_version: '1.0.0',
      license: expect.any(String),
      description: expect.any(String),
      'openeo:status': 'finished',
      unpublished: job.unpublished,
      started: job.started,
    });
    const [start, end] = doc.extent.temporal.interval[0];
    expect(ms(start)).toBeLessThan(ms(end));
    expect(doc.extent.spatial.bbox[0]).toHaveLength(4);
    expect(Object.keys(doc.assets)).toEqual(['result.tif']);
    const rels = Object.fromEntries(doc.links.map((l: { rel: string; href: string }) => [l.rel, l.href]));
    // without a token: the signed Collection, and the signed Item it links to
    const canonical = await http('GET', rels.canonical);
    expect(canonical.status).toBe(200);
    expect(canonical.json.type).toBe('Collection');
    const item = await http('GET', rels.item);
    expect(item.status, item.text).toBe(200);
    expect(item.json).toMatchObject({ type: 'Feature', id: job.id, properties: { datetime: null, start_datetime: start, end_datetime: end, 'openeo:status': 'finished' } });
    expect(Object.keys(item.json.assets)).toEqual(['result.tif']);
    // the signed links fix the form: asking for the other one breaks the signature
    expect((await http('GET', rels.canonical.replace('form=collection', 'form=item'))).status).toBe(404);
    const asGeo = await http('GET', `${s.url}/1.3.0/jobs/${job.id}/results`, { token: jobs.token, headers: { accept: 'application/geo+json' } });
    expect(asGeo.json.type).toBe('Feature');
    expect(asGeo.headers['content-type']).toBe('application/geo+json');
    expect((await jobs.call('GET', `/jobs/${job.id}/results`)).json.type).toBe('Feature');
  });
});

describe('partial results', () => {
  it('have a signed link that shows them as they are, without a token', async () => {
    const id = await jobs.create(slowGraph());
    await jobs.start(id);
    await jobs.waitFor(id, (j) => j.status === 'running');
    const doc = (await jobs13.call('GET', `/jobs/${id}/results?partial=true`)).json;
    expect(doc.properties['openeo:status']).toBe('running');
    const canonical = doc.links.find((l: { rel: string }) => l.rel === 'canonical').href;
    expect(new URL(canonical).searchParams.get('partial')).toBe('true');
    const signed = await http('GET', canonical);
    expect(signed.status, signed.text).toBe(200);
    expect(signed.json.properties['openeo:status']).toBe('running');
    // without the partial flag the same signature is refused
    expect((await http('GET', canonical.replace('&partial=true', ''))).status).toBe(404);
    expect((await jobs.call('DELETE', `/jobs/${id}`)).status).toBe(204);
  });
});
