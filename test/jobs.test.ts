// Batch jobs over HTTP: creation in both body forms, every call in every status of the openEO
// state table (created, queued, running, canceled, finished, error), cancel that stops the work
// within a second, failures with the failing node, logs with level, offset and limit, budgets,
// deletion, and users who cannot see each other's jobs. One job thread, so a second job queues.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { startServer, expectError, removeDir, addUser, login, http, type TestServer } from './helpers.js';
import { demoDataDir } from './demo-data.js';
import { Jobs, ndviGraph, slowGraph, onePieceGraph, failingGraph, pixels } from './jobs-helpers.js';
import { THREAD_NAMES } from '../src/core/thread-names.js';

let s: TestServer;
let jobs: Jobs;
let bob: string;

beforeAll(async () => {
  s = await startServer({ XEO_JOB_THREADS: '1' }, await demoDataDir());
  addUser(s.dataDir, 'alice', 'pa');
  addUser(s.dataDir, 'bob', 'pb');
  jobs = new Jobs(s, await login(s, 'alice', 'pa'));
  bob = await login(s, 'bob', 'pb');
}, 180_000);
afterAll(async () => {
  await s.stop();
  removeDir(s.dataDir);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('creating and listing jobs', () => {
  it('creates a job from the 1.x body and from the interface spec body: 201, Location, identifier, no body', async () => {
    const r = await jobs.call('POST', '/jobs', { title: 'NDVI', description: 'June', process: { process_graph: ndviGraph() }, log_level: 'debug' });
    expect(r.status).toBe(201);
    expect(r.text).toBe('');
    const id = r.headers['xeo-identifier'];
    expect(id).toMatch(/^[\w\-.~]{20,}$/);
    expect(r.headers.location).toBe(`${s.base}/jobs/${id}`);
    const job = (await http('GET', r.headers.location, { token: jobs.token })).json;
    expect(job).toMatchObject({ id, title: 'NDVI', description: 'June', status: 'created', progress: 0, plan: 'free', budget: null, costs: 0, log_level: 'debug' });
    expect(job.process.process_graph).toEqual(ndviGraph());
    expect(Date.parse(job.created)).toBeGreaterThan(Date.now() - 60_000);
    expect(job.links).toContainEqual(expect.objectContaining({ rel: 'monitor', href: `${s.base}/jobs/${id}/logs` }));

    const flat = await jobs.call('POST', '/jobs', { title: 'flat', process_graph: ndviGraph() });
    expect(flat.status).toBe(201);
    const other = await jobs.get(flat.headers['xeo-identifier']);
    expect(other.process).toEqual({ process_graph: ndviGraph() });
    expect(other.log_level).toBe('info');
    expect(flat.headers['xeo-identifier']).not.toBe(id);
  });

  it('refuses bad bodies with catalogue codes', async () => {
    expectError(await jobs.call('POST', '/jobs', { title: 'x' }), 400, 'ProcessGraphMissing');
    expectError(await jobs.call('POST', '/jobs', { process_graph: { a: { process_id: 'nope', arguments: {}, result: true } } }), 400, 'ProcessUnsupported');
    expectError(await jobs.call('POST', '/jobs', { process_graph: ndviGraph(), title: 5 }), 400, 'PropertyInvalid');
    expectError(await jobs.call('POST', '/jobs', { process_graph: ndviGraph(), plan: 'gold' }), 400, 'BillingPlanInvalid');
    expectError(await jobs.call('POST', '/jobs', { process_graph: ndviGraph(), budget: -1 }), 400, 'BudgetInvalid');
    expectError(await jobs.call('POST', '/jobs', { process_graph: ndviGraph(), log_level: 'loud' }), 400, 'PropertyInvalid');
    expectError(await jobs.call('POST', '/jobs', { process_graph: ndviGraph() }, ''), 401, 'AuthenticationRequired');
    expectError(await jobs.call('GET', '/jobs/j-nothing-here'), 404, 'JobNotFound');
    expectError(await jobs.call('GET', '/jobs/bad id'), 404, 'JobNotFound');
  });

  it('lists jobs without their process, in pages', async () => {
    const all = (await jobs.call('GET', '/jobs')).json;
    expect(all.jobs.length).toBeGreaterThanOrEqual(2);
    for (const j of all.jobs) {
      expect(j.process).toBeUndefined();
      expect(j).toMatchObject({ id: expect.any(String), status: expect.any(String), created: expect.any(String) });
    }
    const page = (await jobs.call('GET', '/jobs?limit=1')).json;
    expect(page.jobs).toHaveLength(1);
    const next = page.links.find((l: any) => l.rel === 'next');
    const rest = (await http('GET', next.href, { token: jobs.token })).json;
    expect(rest.jobs[0].id).not.toBe(page.jobs[0].id);
  });
});

describe('the state table', () => {
  let slow: string; // long and pixel-wise: canceled with a partial result
  let small: string; // queued behind it, then finished
  let failing: string;

  it('created: reads, edits, estimates and logs; results not finished; cancel has no effect', async () => {
    slow = await jobs.create(slowGraph(), { title: 'slow' });
    small = await jobs.create(ndviGraph(), { title: 'small' });
    const before = await jobs.get(slow);
    expect(before.status).toBe('created');
    expect((await jobs.call('PATCH', `/jobs/${slow}`, { title: 'slow, renamed', description: 'season maximum' })).status).toBe(204);
    const after = await jobs.get(slow);
    expect(after).toMatchObject({ title: 'slow, renamed', description: 'season maximum', status: 'created', updated: before.updated });
    expect((await jobs.call('PATCH', `/jobs/${slow}`, {})).status).toBe(204);
    expectError(await jobs.call('PATCH', `/jobs/${slow}`, { status: 'finished' }), 400, 'PropertyNotEditable');
    expectError(await jobs.call('PATCH', `/jobs/${slow}`, { title: 1 }), 400, 'PropertyInvalid');
    expectError(await jobs.call('PATCH', `/jobs/${slow}`, { budget: 'lots' }), 400, 'BudgetInvalid');
    expectError(await jobs.call('GET', `/jobs/${slow}/results`), 400, 'JobNotFinished');
    expectError(await jobs.call('GET', `/jobs/${slow}/results?partial=true`), 400, 'JobNotFinished');
    expect((await jobs.call('DELETE', `/jobs/${slow}/results`)).status).toBe(204);
    expect((await jobs.get(slow)).status).toBe('created');
    const est = (await jobs.call('GET', `/jobs/${slow}/estimate`)).json;
    // 8192 x 8192 output pixels from 8 dates x 2 bands, float32 output with overviews
    expect(est.costs).toBeCloseTo((8192 * 8192 * 16 * 0.001) / 1e6, 5);
    expect(est.duration).toMatch(/^PT(\d+H)?(\d+M)?(\d+S)?$/);
    expect(est.size).toBe(Math.ceil(8192 * 8192 * 4 * (4 / 3)));
    expect(est).not.toHaveProperty('downloads_included');
    const logs = await jobs.logs(slow);
    expect(logs.logs[0]).toMatchObject({ id: expect.any(String), level: 'info', message: expect.stringMatching(/Created/), time: expect.any(String) });
  });

  it('queued and running: locked for edits, start has no effect, results only as partial', async () => {
    await jobs.start(slow);
    await jobs.waitFor(slow, (j) => j.status === 'running' && j.progress > 0);
    await jobs.start(small);
    // one job thread: the second job waits
    let q = await jobs.get(small);
    expect(q).toMatchObject({ status: 'queued', progress: 0 });
    expectError(await jobs.call('PATCH', `/jobs/${small}`, { title: 'x' }), 400, 'JobLocked');
    await jobs.start(small);
    expect((await jobs.get(small)).status).toBe('queued');
    expectError(await jobs.call('GET', `/jobs/${small}/results`), 400, 'JobNotFinished');
    expectError(await jobs.call('GET', `/jobs/${small}/results?partial=true`), 400, 'JobNotFinished');
    expect((await jobs.call('GET', `/jobs/${small}/estimate`)).status).toBe(200);
    expect((await jobs.logs(small)).logs.map((l: any) => l.message)).toContainEqual(expect.stringMatching(/^Queued \(run 1\)/));
    // cancel while queued: back to created; queued again
    expect((await jobs.call('DELETE', `/jobs/${small}/results`)).status).toBe(204);
    expect((await jobs.get(small)).status).toBe('created');
    await jobs.start(small);
    q = await jobs.get(small);
    expect(q.status).toBe('queued');

    const r = await jobs.get(slow);
    expect(r.status).toBe('running');
    expectError(await jobs.call('PATCH', `/jobs/${slow}`, { title: 'x' }), 400, 'JobLocked');
    await jobs.start(slow);
    expect((await jobs.get(slow)).status).toBe('running');
    expect((await jobs.logs(slow)).logs.filter((l: any) => /^Queued/.test(l.message))).toHaveLength(1);
    expectError(await jobs.call('GET', `/jobs/${slow}/results`), 400, 'JobNotFinished');
    const partial = await jobs.call('GET', `/jobs/${slow}/results?partial=true`);
    expect(partial.status).toBe(200);
    expect(partial.json.properties['openeo:status']).toBe('running');
    expect(partial.json.assets).toEqual({});
    expect((await jobs.call('GET', `/jobs/${slow}/estimate`)).status).toBe(200);
    // progress is the share of chunks done, and it moves
    const p1 = (await jobs.get(slow)).progress;
    const p2 = (await jobs.waitFor(slow, (j) => j.progress > p1)).progress;
    expect(p2).toBeGreaterThan(p1);
    // a whole number of the 64 chunks, in tenths of a percent
    const steps = Array.from({ length: 65 }, (_, k) => Math.floor((k * 1000) / 64) / 10);
    expect(steps).toContain(p2);
  });

  it('running -> canceled: the computation stops and the chunks done become a partial result', async () => {
    const t0 = performance.now();
    const r = await jobs.call('DELETE', `/jobs/${slow}/results`);
    expect(r.status).toBe(204);
    console.log(`cancel answered after ${(performance.now() - t0).toFixed(0)} ms`);
    const canceled = await jobs.get(slow);
    expect(canceled.status).toBe('canceled');
    expect(canceled.progress).toBeGreaterThan(0);
    expect(canceled.progress).toBeLessThan(100);
    await sleep(1500);
    expect((await jobs.get(slow)).progress).toBe(canceled.progress);
    expectError(await jobs.call('GET', `/jobs/${slow}/results`), 400, 'JobNotFinished');
    // the partial result is listed once written
    let doc: any;
    for (let i = 0; i < 600; i++) {
      doc = (await jobs.call('GET', `/jobs/${slow}/results?partial`)).json;
      if (doc.assets['result.tif']) break;
      await sleep(100);
    }
    expect(doc.properties['openeo:status']).toBe('canceled');
    expect(doc.assets['result.tif']).toMatchObject({ type: 'image/tiff; application=geotiff; profile=cloud-optimized', 'proj:shape': [8192, 8192] });
    const messages = (await jobs.logs(slow)).logs.map((l: any) => l.message);
    expect(messages).toContainEqual(expect.stringMatching(/^Canceled after \d+ chunk/));
    expect(messages).toContainEqual(expect.stringMatching(/^The partial result is written/));
    expect((await jobs.get(slow)).status).toBe('canceled');
  }, 120_000);

  it('canceled: edits allowed, cancel has no effect; the queued job runs to finished', async () => {
    expect((await jobs.call('PATCH', `/jobs/${slow}`, { log_level: 'warning' })).status).toBe(204);
    expect((await jobs.call('DELETE', `/jobs/${slow}/results`)).status).toBe(204);
    expect((await jobs.get(slow)).status).toBe('canceled');
    expect((await jobs.call('GET', `/jobs/${slow}/estimate`)).status).toBe(200);
    const done = await jobs.waitFor(small, (j) => j.status === 'finished' || j.status === 'error');
    expect(done).toMatchObject({ status: 'finished', progress: 100 });
    expect(done.usage).toMatchObject({
      cpu: { value: expect.any(Number), unit: 'cpu-seconds' },
      duration: { value: expect.any(Number), unit: 'seconds' },
      pixels: { value: 2048 * 1536, unit: 'pixels' },
    });
    expect(done.costs).toBeCloseTo((2048 * 1536 * 2 * 0.001) / 1e6, 5);
    expect(done.links).toContainEqual(expect.objectContaining({ rel: 'result', href: `${s.base}/jobs/${small}/results` }));
  }, 120_000);

  it('finished: results, edits keep the status, cancel has no effect, a restart discards the results', async () => {
    const res = await jobs.call('GET', `/jobs/${small}/results`);
    expect(res.status).toBe(200);
    expect(res.json.properties['openeo:status']).toBe('finished');
    const file = path.join(s.dataDir, 'jobs', small, 'result.tif');
    expect(existsSync(file)).toBe(true);
    const before = await jobs.get(small);
    expect((await jobs.call('PATCH', `/jobs/${small}`, { title: 'small, renamed' })).status).toBe(204);
    expect(await jobs.get(small)).toMatchObject({ status: 'finished', updated: before.updated, title: 'small, renamed' });
    expect((await jobs.call('DELETE', `/jobs/${small}/results`)).status).toBe(204);
    expect((await jobs.get(small)).status).toBe('finished');
    expect((await jobs.call('GET', `/jobs/${small}/results`)).status).toBe(200);
    await jobs.start(small);
    const restarted = await jobs.get(small);
    expect(['queued', 'running']).toContain(restarted.status);
    expect(existsSync(file)).toBe(false);
    expectError(await jobs.call('GET', `/jobs/${small}/results`), 400, 'JobNotFinished');
    const again = await jobs.waitFor(small, (j) => j.status === 'finished');
    expect(again.progress).toBe(100);
    expect((await jobs.logs(small)).logs.map((l: any) => l.message)).toContainEqual(expect.stringMatching(/^Restarted from status finished/));
    expect(existsSync(file)).toBe(true);
  }, 120_000);

  it('canceled -> restarted, then deleted while running: the work stops and the job and its files are gone', async () => {
    await jobs.start(slow);
    await jobs.waitFor(slow, (j) => j.status === 'running' && j.progress > 0, 120_000);
    expect(existsSync(path.join(s.dataDir, 'jobs', slow))).toBe(false);
    expect((await jobs.call('DELETE', `/jobs/${slow}`)).status).toBe(204);
    expectError(await jobs.call('GET', `/jobs/${slow}`), 404, 'JobNotFound');
    expectError(await jobs.call('GET', `/jobs/${slow}/logs`), 404, 'JobNotFound');
    expect(existsSync(path.join(s.dataDir, 'jobs', slow))).toBe(false);
  }, 180_000);

  it('running -> created: a job that cannot be cut is stopped by ending its thread when it does not halt', async () => {
    const id = await jobs.create(onePieceGraph());
    await jobs.start(id);
    await jobs.waitFor(id, (j) => j.status === 'running');
    // let it get into the one long computation
    await sleep(1500);
    expect((await jobs.call('DELETE', `/jobs/${id}/results`)).status).toBe(204);
    expect(await jobs.get(id)).toMatchObject({ status: 'created' });
    const messages = (await jobs.logs(id)).logs.map((l: any) => l.message);
    expect(messages).toContainEqual(expect.stringMatching(/runs as one piece: node 'k' \(apply_kernel\)/));
    expect(messages).toContainEqual(expect.stringMatching(/back to created/));
    expectError(await jobs.call('GET', `/jobs/${id}/results?partial=true`), 400, 'JobNotFinished');
    // the thread was replaced: the next job runs
    const next = await jobs.run(ndviGraph(pixels(0, 0, 256, 256)));
    expect(next.status).toBe('finished');
  }, 120_000);

  it('error: 424 with the failing node; partial results report the error; a restart runs again', async () => {
    failing = await jobs.create(failingGraph());
    await jobs.start(failing);
    const job = await jobs.waitFor(failing, (j) => j.status === 'error' || j.status === 'finished');
    expect(job.status).toBe('error');
    const r = await jobs.call('GET', `/jobs/${failing}/results`);
    expect(r.status).toBe(424);
    expect(r.json).toMatchObject({
      id: expect.any(String),
      level: 'error',
      code: 'ArrayElementNotAvailable',
      message: expect.stringMatching(/index 5/),
      path: [
        { node_id: 'el', process_id: 'array_element' },
        { node_id: 'r', process_id: 'reduce_dimension' },
      ],
    });
    expect(r.headers['access-control-allow-origin']).toBe('*');
    const partial = await jobs.call('GET', `/jobs/${failing}/results?partial=true`);
    expect(partial.status).toBe(200);
    expect(partial.json.properties['openeo:status']).toBe('error');
    expect((await jobs.call('PATCH', `/jobs/${failing}`, { description: 'fails at run time' })).status).toBe(204);
    expect((await jobs.call('DELETE', `/jobs/${failing}/results`)).status).toBe(204);
    expect((await jobs.get(failing)).status).toBe('error');
    const errors = await jobs.logs(failing, '?level=error');
    expect(errors.level).toBe('error');
    expect(errors.logs).toHaveLength(1);
    await jobs.start(failing);
    await jobs.waitFor(failing, (j) => j.status === 'error' && j.updated !== job.updated);
    expect((await jobs.logs(failing, '?level=error')).logs).toHaveLength(2);
    // the job list and record point at the results of a failed job
    expect((await jobs.get(failing)).links.map((l: any) => l.rel)).toContain('result');
  }, 120_000);
});

describe('budgets', () => {
  it('refuses to start a job whose estimated costs exceed its budget (402), and keeps it created', async () => {
    const id = await jobs.create(ndviGraph(), { budget: 0.000001 });
    const r = await jobs.call('POST', `/jobs/${id}/results`);
    expectError(r, 402, 'PaymentRequired');
    expect(r.json.message).toMatch(/budget/);
    expect((await jobs.get(id)).status).toBe('created');
    expect((await jobs.call('PATCH', `/jobs/${id}`, { budget: null })).status).toBe(204);
    expect((await jobs.get(id)).budget).toBeNull();
    expect((await jobs.call('POST', `/jobs/${id}/results`)).status).toBe(202);
    await jobs.waitFor(id, (j) => j.status === 'finished');
  }, 120_000);
});

describe('logs', () => {
  let id: string;
  beforeAll(async () => {
    const job = await jobs.run(ndviGraph(), { log_level: 'debug' });
    id = job.id;
  }, 120_000);

  it('keeps what happens from creation on, chronologically, at the levels asked for', async () => {
    const all = await jobs.logs(id);
    expect(all.level).toBe('debug');
    const messages = all.logs.map((l: any) => l.message);
    expect(messages[0]).toMatch(/^Created/);
    expect(messages).toContainEqual(expect.stringMatching(/^Queued/));
    expect(messages).toContainEqual(expect.stringMatching(/^The output grid is 2048 x 1536 pixels in EPSG:32633/));
    expect(messages).toContainEqual(expect.stringMatching(/runs as 4 chunks of up to 1024 x 1024 pixels/));
    for (let c = 1; c <= 4; c++) expect(messages).toContainEqual(expect.stringMatching(new RegExp(`^Chunk ${c} of 4 `)));
    // Where the chunks' time went: every stage of an NDVI job is measured (reading and writing take time).
    const times = messages.find((m: string) => m.startsWith('Time in the chunks'));
    const secs = /reading ([\d.]+) s, warping ([\d.]+) s, computing ([\d.]+) s, writing the result ([\d.]+) s\.$/.exec(times ?? '');
    expect(secs, times).not.toBeNull();
    expect(Number(secs![1])).toBeGreaterThan(0);
    expect(Number(secs![4])).toBeGreaterThan(0);
    expect(messages[messages.length - 1]).toMatch(/^Finished: result.tif/);
    const ids = all.logs.map((l: any) => Number(l.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    const info = await jobs.logs(id, '?level=info');
    expect(info.level).toBe('info');
    expect(info.logs.every((l: any) => l.level !== 'debug')).toBe(true);
    expect(info.logs.length).toBeLessThan(all.logs.length);
    // never a 500 for an empty log
    const none = await jobs.logs(id, '?level=error');
    expect(none.logs).toEqual([]);
  });

  it('pages with offset (the id of the last entry seen) and limit', async () => {
    const all = (await jobs.logs(id)).logs;
    const after = await jobs.logs(id, `?offset=${all[1].id}`);
    expect(after.logs.map((l: any) => l.id)).toEqual(all.slice(2).map((l: any) => l.id));
    const page = await jobs.logs(id, '?limit=3');
    expect(page.logs.map((l: any) => l.id)).toEqual(all.slice(0, 3).map((l: any) => l.id));
    const next = page.links.find((l: any) => l.rel === 'next');
    const rest = (await http('GET', next.href, { token: jobs.token })).json;
    expect(rest.logs[0].id).toBe(all[3].id);
    expect((await jobs.logs(id, `?offset=${all[all.length - 1].id}`)).logs).toEqual([]);
    expectError(await jobs.call('GET', `/jobs/${id}/logs?level=loud`), 400, 'QueryParameterInvalid');
    expectError(await jobs.call('GET', `/jobs/${id}/logs?offset=abc`), 400, 'QueryParameterInvalid');
  });

  it('stores only what reaches the job log level', async () => {
    const quiet = await jobs.run(ndviGraph(pixels(0, 0, 512, 512)), { log_level: 'warning' });
    const logs = await jobs.logs(quiet.id);
    expect(logs.level).toBe('warning');
    expect(logs.logs).toEqual([]);
  }, 120_000);
});

describe('users', () => {
  it('see only their own jobs: another user gets 404 for every call', async () => {
    const id = await jobs.create(ndviGraph());
    expect((await jobs.call('GET', '/jobs', undefined, bob)).json.jobs).toEqual([]);
    for (const [method, p] of [
      ['GET', ''],
      ['PATCH', ''],
      ['DELETE', ''],
      ['GET', '/results'],
      ['POST', '/results'],
      ['DELETE', '/results'],
      ['GET', '/estimate'],
      ['GET', '/logs'],
    ] as const) {
      expectError(await jobs.call(method, `/jobs/${id}${p}`, method === 'PATCH' ? { title: 'mine' } : undefined, bob), 404, 'JobNotFound');
    }
    expect((await jobs.get(id)).status).toBe('created');
  });
});

describe('job threads', () => {
  it('run at a lower priority than the event loop, the compute threads and the libuv pool (Linux)', async () => {
    // A job has run by now, so the file's one job thread has started.
    expect((await jobs.run(ndviGraph(pixels(0, 0, 256, 256)))).status).toBe('finished');
    const task = `/proc/${s.proc.pid}/task`;
    const threads = readdirSync(task).map((tid) => {
      const stat = readFileSync(`${task}/${tid}/stat`, 'utf8');
      return { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), nice: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) };
    });
    // Threads go by their names (src/core/thread-names.ts): the job thread and the deflate threads
    // it starts at 10, every other thread (the compute threads among them) at 0.
    const low = new Set<string>([THREAD_NAMES.job, THREAD_NAMES.deflate]);
    expect(threads.filter((t) => t.name === THREAD_NAMES.job).map((t) => t.nice)).toEqual([10]);
    expect(threads.filter((t) => t.name === THREAD_NAMES.compute).length).toBeGreaterThanOrEqual(1);
    const niceness = (ts: typeof threads) => ts.map((t) => `${t.name} ${t.nice}`);
    expect(niceness(threads.filter((t) => low.has(t.name)))).toEqual(threads.filter((t) => low.has(t.name)).map((t) => `${t.name} 10`));
    expect(niceness(threads.filter((t) => !low.has(t.name)))).toEqual(threads.filter((t) => !low.has(t.name)).map((t) => `${t.name} 0`));
  });
});
