// The record store's contract, run the same on both engines: the embedded SQLite file and a real
// PostgreSQL server on loopback. Every repository, its transactions and its uniqueness rules, and
// for PostgreSQL what a cluster needs: two nodes on one database, a server that goes away and
// comes back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/store/db.js';
import { UniqueViolation } from '../src/store/sql.js';
import { StoreUnavailable } from '../src/store/pg.js';
import type { Store, JobRecord } from '../src/store/types.js';
import type { CollectionMeta, ItemMeta } from '../src/core/catalog.js';
import { LinkSigner } from '../src/jobs/signing.js';
import { RESERVATION_STALE_MS } from '../src/store/upload-ledger.js';
import { expectRetryAfter, removeDir, tempDir, watched } from './helpers.js';
import { hasPostgres, startPostgres, type Postgres } from '../bench/postgres.js';
import { describeWithTool } from './system-tools.js';

const collection = (id: string): CollectionMeta => ({ id, title: id, description: '', license: 'CC-BY-4.0', epsg: 32633, resolution: [10, 10], bands: [{ name: 'B04', data_type: 'uint16', nodata: 0 }] });
const item = (id: string, datetime: string): ItemMeta => ({ id, datetime, epsg: 32633, bbox: [0, 0, 10, 10], bbox4326: [15, 47, 15.1, 47.1], assets: { B04: { href: `/data/${id}.tif`, sample: 0 } } });
const job = (id: string, userId = 'alice') => ({
  id,
  userId,
  title: null,
  description: null,
  process: { process_graph: { a: { process_id: 'absolute', arguments: { x: 1 }, result: true } } },
  plan: 'free',
  budget: null,
  logLevel: 'info' as const,
});

/** The contract: what any implementation of Store must do. `open` gives a fresh, empty store. */
function contract(open: () => Promise<Store>) {
  let s: Store;
  beforeAll(async () => {
    s = await open();
    await s.users.create({ id: 'alice', name: 'alice', passwordHash: 'h', oidcIssuer: null, oidcSubject: null, quotaBytes: null });
    await s.users.create({ id: 'bob', name: 'bob', passwordHash: null, oidcIssuer: 'https://idp', oidcSubject: 'b-1', quotaBytes: 1000 });
  });
  afterAll(() => s.close());

  it('users: by id and by OpenID subject; ids and subjects are unique', async () => {
    expect((await s.users.byId('alice'))?.passwordHash).toBe('h');
    expect((await s.users.byOidc('https://idp', 'b-1'))?.id).toBe('bob');
    expect(await s.users.byId('nobody')).toBeNull();
    await expect(s.users.create({ id: 'alice', name: 'x', passwordHash: null, oidcIssuer: null, oidcSubject: null, quotaBytes: null })).rejects.toThrow(UniqueViolation);
    await expect(s.users.create({ id: 'bob2', name: 'x', passwordHash: null, oidcIssuer: 'https://idp', oidcSubject: 'b-1', quotaBytes: null })).rejects.toThrow(UniqueViolation);
    await s.users.setPassword('alice', 'h2');
    expect((await s.users.byId('alice'))?.passwordHash).toBe('h2');
    expect((await s.users.list()).map((u) => u.id)).toEqual(['alice', 'bob']);
  });

  it('tokens: live until they expire, then purged; large times survive', async () => {
    const later = Date.now() + 86_400_000;
    await s.tokens.add('t1', 'alice', later);
    await s.tokens.add('t2', 'alice', 1000);
    expect(await s.tokens.userOf('t1', Date.now())).toEqual({ userId: 'alice', expiresAt: later });
    expect(await s.tokens.userOf('t2', Date.now())).toBeNull();
    expect(await s.tokens.deleteExpired(Date.now())).toBe(1);
    await expect(s.tokens.add('t1', 'bob', later)).rejects.toThrow(UniqueViolation);
    // revoked one by one, or all of a user's at once
    await s.tokens.add('t3', 'alice', later);
    await s.tokens.add('t4', 'bob', later);
    expect(await s.tokens.revoke('t1')).toBe(true);
    expect(await s.tokens.revoke('t1')).toBe(false);
    expect(await s.tokens.userOf('t1', Date.now())).toBeNull();
    expect(await s.tokens.revokeUser('alice')).toBe(1);
    expect(await s.tokens.userOf('t3', Date.now())).toBeNull();
    expect(await s.tokens.userOf('t4', Date.now())).toEqual({ userId: 'bob', expiresAt: later });
  });

  it('signing keys: the first of a kid stays, live until they stop verifying, then purged', async () => {
    const key = (kid: string, x: string, verifiesUntil: number) => ({
      kid,
      alg: 'EdDSA',
      publicJwk: { kty: 'OKP', crv: 'Ed25519', x },
      privateJwk: { kty: 'OKP', crv: 'Ed25519', x, d: `d-${x}` },
      notBefore: 1000,
      signsUntil: 2000,
      verifiesUntil,
    });
    const later = Date.now() + 86_400_000;
    expect(await s.signingKeys.addOnce(key('k1', 'first', later))).toEqual(key('k1', 'first', later));
    // a second node making the same period's key gets the one stored first
    expect((await s.signingKeys.addOnce(key('k1', 'second', later))).publicJwk.x).toBe('first');
    await s.signingKeys.addOnce(key('k0', 'old', 5000));
    expect((await s.signingKeys.live(Date.now())).map((k) => k.kid)).toEqual(['k1']);
    expect((await s.signingKeys.live(4000)).map((k) => k.kid).sort()).toEqual(['k0', 'k1']);
    expect(await s.signingKeys.deleteExpired(Date.now())).toBe(1);
    expect((await s.signingKeys.live(0)).map((k) => k.kid)).toEqual(['k1']);
  });

  it('process graphs: put tells created from replaced, pages by id, delete', async () => {
    expect(await s.processGraphs.put('alice', 'b', { id: 'b', n: 1 })).toBe(true);
    expect(await s.processGraphs.put('alice', 'a', { id: 'a' })).toBe(true);
    expect(await s.processGraphs.put('alice', 'b', { id: 'b', n: 2 })).toBe(false);
    expect((await s.processGraphs.get('alice', 'b'))?.process).toEqual({ id: 'b', n: 2 });
    expect(await s.processGraphs.get('bob', 'b')).toBeNull();
    expect((await s.processGraphs.list('alice', null, 1)).map((p) => p.id)).toEqual(['a']);
    expect((await s.processGraphs.list('alice', 'a', 10)).map((p) => p.id)).toEqual(['b']);
    expect(await s.processGraphs.delete('alice', 'a')).toBe(true);
    expect(await s.processGraphs.delete('alice', 'a')).toBe(false);
  });

  it('collections: listed in the order they came, items by time, stats, cascade', async () => {
    await s.collections.put(collection('c2'));
    await s.collections.put(collection('c1'));
    await s.collections.put({ ...collection('c2'), title: 'again' });
    expect((await s.collections.list()).map((c) => [c.id, c.title])).toEqual([
      ['c2', 'again'],
      ['c1', 'c1'],
    ]);
    await s.collections.putItems('c1', [item('i2', '2024-03-02T00:00:00Z'), item('i1', '2024-03-01T00:00:00Z'), item('i3', '2024-04-01T00:00:00Z')]);
    expect((await s.collections.items('c1')).map((i) => i.id)).toEqual(['i1', 'i2', 'i3']);
    expect((await s.collections.items('c1', '2024-03-02T00:00:00Z', '2024-04-01T00:00:00Z')).map((i) => i.id)).toEqual(['i2']);
    expect(await s.collections.stats('c1')).toEqual({ count: 3, start: '2024-03-01T00:00:00Z', end: '2024-04-01T00:00:00Z' });
    // A batch of items is one transaction: a bad one leaves none of the batch behind.
    await expect(s.collections.putItems('nope', [item('x', '2024-01-01T00:00:00Z')])).rejects.toThrow();
    expect(await s.collections.items('nope')).toEqual([]);
    expect(await s.collections.delete('c1')).toBe(true);
    expect(await s.collections.items('c1')).toEqual([]);
    expect(await s.collections.get('c1')).toBeNull();
  });

  it('services: records, pages, usage counters add up, delete', async () => {
    const rec = {
      id: 's1',
      userId: 'alice',
      type: 'XYZ',
      enabled: true,
      title: 't',
      description: null,
      process: { process_graph: {} },
      configuration: {},
      attributes: {},
      plan: 'free',
      budget: null,
      logLevel: 'info' as const,
      created: 'c',
      updated: 'u',
    };
    await s.services.create(rec);
    await expect(s.services.create(rec)).rejects.toThrow(UniqueViolation);
    await s.services.addUsage('s1', { tiles: 2, cacheHits: 1, valuesRead: 5e9, cpuMs: 1.5 });
    await s.services.addUsage('s1', { tiles: 1, cacheHits: 0, valuesRead: 1, cpuMs: 0.25 });
    await s.services.update({ ...rec, title: 'new', updated: 'u2' });
    const got = (await s.services.get('s1'))!;
    expect(got.title).toBe('new');
    expect(got.usage).toEqual({ tiles: 3, cacheHits: 1, valuesRead: 5e9 + 1, cpuMs: 1.75 });
    expect((await s.services.list('alice', null, 10)).map((x) => x.id)).toEqual(['s1']);
    expect(await s.services.list('bob', null, 10)).toEqual([]);
    expect(await s.services.delete('s1')).toBe(true);
  });

  it('logs: ids grow, pages by id and level, owners apart', async () => {
    const a = await s.logs.append('job:x', { level: 'debug', message: 'one' });
    const b = await s.logs.append('job:x', { level: 'error', message: 'two', code: 'E', data: { k: [1] }, path: [{ node_id: 'n' }], stacktrace: 'Traceback:\n  line 3\n' });
    await s.logs.append('job:y', { level: 'info', message: 'other' });
    expect(Number(b)).toBeGreaterThan(Number(a));
    expect((await s.logs.page('job:x', null, 'debug', 10)).map((e) => e.message)).toEqual(['one', 'two']);
    expect(await s.logs.page('job:x', null, 'warning', 10)).toEqual([expect.objectContaining({ id: b, code: 'E', data: { k: [1] }, path: [{ node_id: 'n' }], stacktrace: 'Traceback:\n  line 3\n' })]);
    expect((await s.logs.page('job:x', null, 'debug', 10))[0]).not.toHaveProperty('stacktrace');
    expect((await s.logs.page('job:x', a, 'debug', 10)).map((e) => e.id)).toEqual([b]);
    await s.logs.deleteOwner('job:x');
    expect(await s.logs.page('job:x', null, 'debug', 10)).toEqual([]);
    expect(await s.logs.page('job:y', null, 'debug', 10)).toHaveLength(1);
  });

  it('jobs: owners, pages, edits, transitions only from the states named, run-guarded reports, throughput', async () => {
    await s.jobs.create(job('j1'));
    await s.jobs.create(job('j2'));
    await s.jobs.create(job('j3', 'bob'));
    await expect(s.jobs.create(job('j1'))).rejects.toThrow(UniqueViolation);
    expect(await s.jobs.get('bob', 'j1')).toBeNull();
    expect(await s.jobs.count('alice')).toBe(2);
    expect((await s.jobs.list('alice', 'j1', 10)).map((j) => j.id)).toEqual(['j2']);
    await s.jobs.edit('j1', { title: 'T', budget: 2.5 });
    expect(await s.jobs.byId('j1')).toMatchObject({ title: 'T', budget: 2.5, status: 'created' });
    expect(await s.jobs.transition('j1', ['queued'], 'running')).toBe(false);
    expect(await s.jobs.transition('j1', ['created', 'error'], 'running', { run: 1, progress: 0 })).toBe(true);
    expect(await s.jobs.report('j1', 0, { progress: 50 })).toBe(false);
    expect(await s.jobs.report('j1', 1, { progress: 50, costs: 0.125 })).toBe(true);
    const usage = { values_read: { value: 4e6, unit: 'values' }, duration: { value: 2, unit: 's' } };
    expect(await s.jobs.transition('j1', ['running'], 'finished', { progress: 100, usage })).toBe(true);
    expect(await s.jobs.byId('j1')).toMatchObject({ status: 'finished', progress: 100, costs: 0.125, usage, run: 1, options: {} });
    expect((await s.jobs.withStatus('finished')).map((j) => j.id)).toEqual(['j1']);
    expect(await s.jobs.throughput()).toEqual({ values: 4e6, seconds: 2, jobs: 1 });
    await s.jobResults.put('j1', { run: 1, partial: false, assets: {}, bbox: null, geometry: null, times: [], created: 'c' });
    expect((await s.jobResults.get('j1'))?.run).toBe(1);
    expect(await s.jobs.delete('j1')).toBe(true);
    expect(await s.jobResults.get('j1')).toBeNull();
  });

  it('secrets: made once, the same for every later caller', async () => {
    expect(await s.secrets.getOrCreate('k', () => 'first')).toBe('first');
    expect(await s.secrets.getOrCreate('k', () => 'second')).toBe('first');
  });

  it('semaphores: never more than the limit taken, each slot given back once', async () => {
    const one = (await s.semaphores.take('u', 2))!;
    const two = (await s.semaphores.take('u', 2))!;
    expect(one).toBeTypeOf('function');
    expect(two).toBeTypeOf('function');
    expect(await s.semaphores.take('u', 2)).toBeNull();
    expect(await s.semaphores.take('v', 2)).not.toBeNull();
    await one();
    const three = await s.semaphores.take('u', 2);
    expect(three).not.toBeNull();
    await two();
    await three!();
  });

  it('upload reservations: a user holds the sum of its uploads in progress, each given back once', async () => {
    const now = Date.now();
    expect(await s.uploads.reserve('up1', 'u', 5, now)).toBe(5);
    expect(await s.uploads.reserve('up2', 'u', 7, now)).toBe(12);
    expect(await s.uploads.reserve('up3', 'v', 1, now)).toBe(1);
    expect(await s.uploads.reserve('up1', 'u', -2, now)).toBe(10);
    await s.uploads.release('up2');
    await s.uploads.release('up2');
    expect(await s.uploads.reserve('up1', 'u', 0, now)).toBe(3);
    await s.uploads.release('up1');
    await s.uploads.release('up3');
    expect(await s.uploads.reserve('probe', 'u', 0, now)).toBe(0);
    await s.uploads.release('probe');
  });

  it('transactions: a failed one leaves none of its rows, and statements of others arriving meanwhile are kept apart', async () => {
    await s.collections.put(collection('t1'));
    const bad = { ...item('bad', '2024-01-03T00:00:00Z'), datetime: null as unknown as string };
    // The batch fails on its third row; a user written at the same moment must not be rolled back with it.
    const [batch, other] = await Promise.allSettled([
      s.collections.putItems('t1', [item('ok1', '2024-01-01T00:00:00Z'), item('ok2', '2024-01-02T00:00:00Z'), bad]),
      s.users.create({ id: 'erin', name: 'erin', passwordHash: null, oidcIssuer: null, oidcSubject: null, quotaBytes: null }),
    ]);
    expect(batch.status).toBe('rejected');
    expect(other.status).toBe('fulfilled');
    expect(await s.collections.items('t1')).toEqual([]);
    expect((await s.users.byId('erin'))?.name).toBe('erin');
    // Many statements at once all land (the pool runs them side by side; SQLite one after another).
    await Promise.all(Array.from({ length: 40 }, (_, i) => s.logs.append('job:many', { level: 'info', message: `m${i}` })));
    expect((await s.logs.page('job:many', null, 'debug', 100)).map((e) => e.message)).toEqual(Array.from({ length: 40 }, (_, i) => `m${i}`));
    await s.collections.delete('t1');
  });

  it('jobs: an edit does not apply while the job is queued or running (it is locked)', async () => {
    await s.jobs.create(job('e1'));
    expect(await s.jobs.edit('e1', { title: 'first' })).toBe(true);
    expect(await s.jobQueue.enqueue('e1')).toBe(true);
    expect(await s.jobs.edit('e1', { title: 'second' })).toBe(false);
    expect(await s.jobQueue.withdraw('e1')).toBe(true);
    expect(await s.jobs.edit('e1', {})).toBe(true);
    expect((await s.jobs.byId('e1'))?.title).toBe('first');
    await s.jobs.delete('e1');
  });

  it('the queue: first in first out, withdraw, claim each job once', async () => {
    for (const id of ['q1', 'q2', 'q3']) await s.jobs.create(job(id));
    expect(await s.jobQueue.enqueue('q2', { run: 1 })).toBe(true);
    expect(await s.jobQueue.enqueue('q1')).toBe(true);
    expect(await s.jobQueue.enqueue('q1')).toBe(false);
    expect(await s.jobQueue.enqueue('q3')).toBe(true);
    expect(await s.jobQueue.size()).toBe(3);
    expect(await s.jobQueue.withdraw('q1')).toBe(true);
    const first = (await s.jobQueue.claim('n1')) as JobRecord;
    expect([first.id, first.status, first.run, first.node]).toEqual(['q2', 'running', 1, 'n1']);
    expect((await s.jobQueue.claim('n1'))?.id).toBe('q3');
    expect(await s.jobQueue.claim('n1')).toBeNull();
    expect(await s.jobQueue.size()).toBe(0);
    // the timeline: queued when queued, started when claimed, cleared back at created
    expect(first.queued).toEqual(expect.any(String));
    expect(first.started).toBe(first.updated);
    expect(Date.parse(first.queued!)).toBeLessThanOrEqual(Date.parse(first.started!));
    expect(await s.jobs.byId('q1')).toMatchObject({ status: 'created', queued: null, started: null });
    expect(await s.jobs.transition('q2', ['running'], 'finished', { unpublished: '2999-01-01T00:00:00.000Z' })).toBe(true);
    expect((await s.jobs.byId('q2'))?.unpublished).toBe('2999-01-01T00:00:00.000Z');
    expect(await s.jobQueue.enqueue('q2')).toBe(true);
    expect(await s.jobs.byId('q2')).toMatchObject({ status: 'queued', started: null, unpublished: null });
    // unpublished in the past, with results still held
    expect(await s.jobs.transition('q3', ['running'], 'finished', { unpublished: '2000-01-01T00:00:00.000Z' })).toBe(true);
    expect(await s.jobs.unpublishedBefore(new Date().toISOString())).toEqual([]);
    await s.jobResults.put('q3', { run: 1, partial: false, assets: {}, bbox: null, geometry: null, times: [], created: 'c' });
    expect((await s.jobs.unpublishedBefore(new Date().toISOString())).map((j) => j.id)).toEqual(['q3']);
    // processing parameters a request gave
    await s.jobs.create({ ...job('q4'), options: { chunk_size: 2048 } });
    expect((await s.jobs.byId('q4'))?.options).toEqual({ chunk_size: 2048 });
    expect(await s.jobs.edit('q4', { options: { chunk_size: 1024, max_values: 5 } })).toBe(true);
    expect((await s.jobs.byId('q4'))?.options).toEqual({ chunk_size: 1024, max_values: 5 });
  });
}

describe('record store on SQLite', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach(removeDir));
  contract(() => {
    const d = tempDir();
    dirs.push(d);
    return openStore(d);
  });
});

describeWithTool(hasPostgres, 'PostgreSQL 15', 'record store on PostgreSQL', () => {
  let pg: Postgres;
  let url: string;
  const dataDir = tempDir();
  beforeAll(async () => {
    pg = await startPostgres();
    url = pg.database();
  }, 60_000);
  afterAll(() => {
    pg?.remove();
    removeDir(dataDir);
  });

  describe('the contract', () => {
    contract(() => openStore({ dataDir, databaseUrl: url }));
  });

  it('two nodes on one database: migrations apply once, records are shared, a job is claimed by one node only', async () => {
    const shared = pg.database();
    const [a, b] = await Promise.all([openStore({ dataDir, databaseUrl: shared }), openStore({ dataDir, databaseUrl: shared })]);
    try {
      await a.users.create({ id: 'carol', name: 'carol', passwordHash: null, oidcIssuer: null, oidcSubject: null, quotaBytes: null });
      expect((await b.users.byId('carol'))?.name).toBe('carol');
      for (let i = 0; i < 20; i++) {
        await a.jobs.create(job(`k${i}`, 'carol'));
        expect(await b.jobQueue.enqueue(`k${i}`)).toBe(true);
      }
      const claimed: string[] = [];
      for (let i = 0; i < 12; i++) {
        for (const node of [a, b]) {
          const j = await node.jobQueue.claim(node === a ? 'a' : 'b');
          if (j) claimed.push(j.id);
        }
      }
      expect(claimed.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `k${i}`).sort());
      // A limit holds across nodes: slots taken on one are not free on the other, until given back.
      const held = [(await a.semaphores.take('dave', 2))!, (await b.semaphores.take('dave', 2))!];
      expect(held.every(Boolean)).toBe(true);
      expect(await a.semaphores.take('dave', 2)).toBeNull();
      expect(await b.semaphores.take('dave', 2)).toBeNull();
      await held[0]();
      expect(await b.semaphores.take('dave', 2)).not.toBeNull();
      // Uploads in progress on one node count on the other; a reservation of a node gone quiet does not.
      const now = Date.now();
      await a.uploads.reserve('on-a', 'dave', 100, now);
      expect(await b.uploads.reserve('on-b', 'dave', 50, now)).toBe(150);
      await a.uploads.reserve('stale', 'dave', 1000, now - RESERVATION_STALE_MS - 1);
      expect(await b.uploads.reserve('on-b', 'dave', 0, now)).toBe(150);
      await a.uploads.release('on-a');
      expect(await b.uploads.reserve('on-b', 'dave', 0, now)).toBe(50);
      await b.uploads.release('on-b');
      // Result links signed by one node verify on the other (each with its own data dir).
      const [sa, sb] = [await LinkSigner.open(a.secrets, tempDir()), await LinkSigner.open(b.secrets, tempDir())];
      expect(sb.verify('job', 'result.tif', 123, sa.sign('job', 'result.tif', 123))).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('the server going away gives StoreUnavailable (an API 503 with Retry-After), no half-written record; work resumes when it returns', async () => {
    const s = await openStore({ dataDir, databaseUrl: pg.database() });
    try {
      await s.users.create({ id: 'dave', name: 'dave', passwordHash: null, oidcIssuer: null, oidcSubject: null, quotaBytes: null });
      pg.stop();
      let err: unknown;
      try {
        await s.collections.putItems('x', [item('a', '2024-01-01T00:00:00Z')]);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(StoreUnavailable);
      expect((err as StoreUnavailable).status).toBe(503);
      expectRetryAfter((err as StoreUnavailable).headers?.['Retry-After']);
      pg.start();
      expect((await s.users.byId('dave'))?.name).toBe('dave');
      await s.collections.put(collection('x'));
      await s.collections.putItems('x', [item('a', '2024-01-01T00:00:00Z')]);
      expect(await s.collections.items('x')).toHaveLength(1);
    } finally {
      await s.close();
    }
  });

  it('a hung server (SIGSTOP): every statement answers StoreUnavailable within the deadline, others keep the event loop; work resumes when it goes on', async () => {
    const s = await openStore({ dataDir, databaseUrl: pg.database(), database: { poolSize: 4, timeoutMs: 1000 } });
    try {
      await s.users.create({ id: 'fay', name: 'fay', passwordHash: null, oidcIssuer: null, oidcSubject: null, quotaBytes: null });
      pg.freeze();
      // The event loop stays free while the statements wait: a 10 ms timer keeps firing before
      // any of them has an answer (a loop blocked on the database would run it once or never).
      const statements = [s.users.byId('fay'), s.jobs.count('fay'), s.collections.list(), s.users.byId('fay'), s.users.byId('fay'), s.users.byId('fay')].map((p) => watched(p));
      let ticksWhileWaiting = 0;
      const ticks = setInterval(() => {
        if (!statements.some((w) => w.settled)) ticksWhileWaiting++;
      }, 10);
      const outcomes = await Promise.allSettled(statements.map((w) => w.promise));
      clearInterval(ticks);
      // Each answered, and with the error that means the store is unavailable (not a hang, not another error).
      for (const o of outcomes) {
        expect(o.status).toBe('rejected');
        expect((o as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailable);
      }
      expect(ticksWhileWaiting).toBeGreaterThanOrEqual(3);
      pg.thaw();
      expect((await s.users.byId('fay'))?.name).toBe('fay');
    } finally {
      pg.thaw();
      await s.close();
    }
  });
});
