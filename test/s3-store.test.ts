// User files and job results in an S3-compatible store: a real RADOS Gateway on loopback (started
// once for this file by bench/radosgw.ts) behind the real server. The blob store's contract runs on
// the local disk and on the gateway alike; then, through the HTTP API: streamed multipart uploads,
// Range downloads, replace, quota refused while streaming (nothing left in the bucket), listing,
// delete; a batch job's COG read by GDAL through its signed link, byte-equal to a local run;
// s3:// hrefs of imported items read like local files; and a gateway that goes away (503 with
// Retry-After) and comes back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { CreateBucketCommand, ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { addUser, expectError, http, login, removeDir, startServer, tempDir, xeo, type TestServer } from './helpers.js';
import { demoDataDir } from './demo-data.js';
import { describeWithTool, hasGdal, run } from './system-tools.js';
import { Jobs, ndviGraph, pixels } from './jobs-helpers.js';
import { hasRadosgw, startRadosGateway, type RadosGateway } from '../bench/radosgw.js';
import { LocalBlobStore, type BlobStore } from '../src/store/blobs.js';
import { PART_BYTES, S3BlobStore, s3Client } from '../src/store/s3-blobs.js';
import { writeCog } from '../src/output/cog-writer.js';
import { BlockCache, openRaster } from '../src/data/cog-reader.js';
import { usersPolicy } from '../src/data/outbound.js';
import { openStore } from '../src/store/db.js';

const MB = 1024 * 1024;

/** Deterministic bytes that differ at every offset that matters (not zeros: a lost part would go unseen). */
function pattern(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b.writeUInt32LE(x >>> 0, Math.min(i, n - 4));
  }
  return b;
}

async function* chunks(b: Buffer, size = 64 * 1024): AsyncGenerator<Buffer> {
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
}

async function readAll(s: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c);
  return Buffer.concat(parts);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let gw: RadosGateway;
let client: S3Client;

/** Every key in the gateway's bucket, and the multipart uploads not completed nor aborted. */
async function bucketState(prefix = ''): Promise<{ keys: string[]; uploads: number }> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const r = await client.send(new ListObjectsV2Command({ Bucket: gw.bucket, Prefix: prefix, ContinuationToken: token }));
    keys.push(...(r.Contents ?? []).map((o) => o.Key!));
    token = r.IsTruncated ? r.NextContinuationToken : undefined;
  } while (token);
  const up = await client.send(new ListMultipartUploadsCommand({ Bucket: gw.bucket, Prefix: prefix }));
  return { keys, uploads: up.Uploads?.length ?? 0 };
}

/** What any BlobStore must do; `open` gives an empty store, `leftovers` counts unfinished writes it may hold (multipart uploads). */
function blobContract(name: string, open: () => Promise<BlobStore>, leftovers: () => Promise<number> = async () => 0) {
  describe(`blob store contract: ${name}`, () => {
    let b: BlobStore;
    beforeAll(async () => {
      b = await open();
    });

    it('writes larger than a part, reads whole and by range, replaces atomically', async () => {
      const big = pattern(PART_BYTES + 3 * MB + 17, 1);
      const info = await b.write('u/dir/big.bin', chunks(big));
      expect(info).toMatchObject({ key: 'u/dir/big.bin', size: big.length });
      expect(sha(await readAll(await b.read('u/dir/big.bin')))).toBe(sha(big));
      const part = await readAll(await b.read('u/dir/big.bin', { start: PART_BYTES - 5, end: PART_BYTES + 4 }));
      expect(part.equals(big.subarray(PART_BYTES - 5, PART_BYTES + 5))).toBe(true);
      const small = Buffer.from('replaced');
      expect((await b.write('u/dir/big.bin', chunks(small))).size).toBe(small.length);
      expect((await readAll(await b.read('u/dir/big.bin'))).toString()).toBe('replaced');
    });

    it('names folders, refuses a file on the path, lists recursively in key order', async () => {
      await b.write('u/a.txt', chunks(Buffer.from('A')));
      await b.write('u/z/deep/c.txt', chunks(Buffer.from('CC')));
      expect(await b.stat('u/dir')).toBe('folder');
      expect(await b.stat('u/nothing')).toBeNull();
      expect(await b.stat('u/a.txt')).toMatchObject({ key: 'u/a.txt', size: 1 });
      await expect(b.write('u/a.txt/x', chunks(Buffer.from('x')))).rejects.toMatchObject({ code: expect.stringMatching(/ENOTDIR|EEXIST/) });
      expect((await b.list('u')).map((x) => [x.key, x.size])).toEqual([
        ['u/a.txt', 1],
        ['u/dir/big.bin', 8],
        ['u/z/deep/c.txt', 2],
      ]);
    });

    it('leaves nothing when the guard refuses while streaming', async () => {
      await expect(
        b.write('u/refused.bin', chunks(pattern(2 * PART_BYTES, 2)), (n) => {
          if (n > PART_BYTES + MB) throw new Error('over quota');
        }),
      ).rejects.toThrow('over quota');
      expect(await b.stat('u/refused.bin')).toBeNull();
      expect(await leftovers()).toBe(0);
    });

    it('deletes files (false when absent) and trees', async () => {
      expect(await b.delete('u/a.txt', 'u')).toBe(true);
      expect(await b.delete('u/a.txt', 'u')).toBe(false);
      await expect(b.read('u/a.txt')).rejects.toMatchObject({ code: 'ENOENT' });
      await b.deleteTree('u');
      expect(await b.list('u')).toEqual([]);
    });

    it('adopts a finished local file and removes it', async () => {
      const dir = tempDir('xeo-adopt-');
      const f = path.join(dir, 'r.tif');
      const bytes = pattern(PART_BYTES + 1000, 3);
      writeFileSync(f, bytes);
      try {
        const info = await b.adopt('job1/r.tif', f);
        expect(info.size).toBe(bytes.length);
        expect(sha(await readAll(await b.read('job1/r.tif')))).toBe(sha(bytes));
        const { existsSync } = await import('node:fs');
        expect(existsSync(f)).toBe(false);
        await b.deleteTree('job1');
      } finally {
        removeDir(dir);
      }
    });
  });
}

describeWithTool(hasRadosgw, 'the RADOS Gateway (Debian radosgw, ceph-mon, ceph-osd)', 'files and results in S3-compatible storage', () => {
  beforeAll(async () => {
    gw = await startRadosGateway();
    console.log(`[s3-store] RADOS Gateway ready in ${gw.startSeconds.toFixed(2)} s`);
    client = s3Client({ endpoint: gw.endpoint, region: 'us-east-1', accessKeyId: gw.env.XEO_S3_ACCESS_KEY_ID, secretAccessKey: gw.env.XEO_S3_SECRET_ACCESS_KEY, sessionToken: null, bucket: gw.bucket });
  }, 120_000);
  afterAll(() => gw?.stop());

  const local = tempDir('xeo-blobs-');
  afterAll(() => removeDir(local));
  blobContract('local disk', async () => {
    const s = new LocalBlobStore(path.join(local, 'files'), path.join(local, 'tmp'));
    await s.init();
    return s;
  });
  blobContract(
    'S3 (RADOS Gateway), listing pages of 2 keys',
    async () => {
      const s = new S3BlobStore(client, gw.bucket, 'contract/', 2);
      await s.init();
      return s;
    },
    async () => (await bucketState('contract/')).uploads,
  );

  it('refuses to start on a bucket that does not exist, or without credentials (exit code 2)', async () => {
    for (const [env, why] of [
      [{ ...gw.env, XEO_S3_BUCKET: 'no-such-bucket' }, /XEO_S3_BUCKET: the S3 bucket no-such-bucket does not exist/],
      [{ ...gw.env, XEO_S3_ACCESS_KEY_ID: '', AWS_ACCESS_KEY_ID: '' }, /XEO_S3_BUCKET needs credentials/],
    ] as const) {
      const dataDir = tempDir();
      const err = await startServer(env, dataDir).then(
        async (s) => (await s.stop(), null),
        (e: Error) => e.message,
      );
      removeDir(dataDir);
      expect(err).toMatch(/server exited with 2/);
      expect(err).toMatch(why);
    }
  });

  // Left by a crash, or by a store that was away when a job was deleted: files no record accounts for.
  for (const where of ['the local disk', 'the bucket'] as const) {
    it(`sweeps job files no record accounts for from ${where} when a node starts, and only those`, async () => {
      const dataDir = tempDir();
      const bucket = 'xeo-sweep';
      let env: Record<string, string> = {};
      let results: BlobStore;
      if (where === 'the bucket') {
        // the bucket may exist from an earlier test of this file
        await client.send(new CreateBucketCommand({ Bucket: bucket })).catch(() => {});
        env = { ...gw.env, XEO_S3_BUCKET: bucket };
        results = new S3BlobStore(
          s3Client({ endpoint: gw.endpoint, region: 'us-east-1', accessKeyId: gw.env.XEO_S3_ACCESS_KEY_ID, secretAccessKey: gw.env.XEO_S3_SECRET_ACCESS_KEY, sessionToken: null, bucket }),
          bucket,
          'jobs/',
        );
      } else {
        const store = new LocalBlobStore(path.join(dataDir, 'jobs'), path.join(dataDir, 'jobs-tmp'));
        await store.init();
        results = store;
      }
      addUser(dataDir, 'alice', 'secret');
      const records = await openStore(dataDir);
      // Each job runs on a node: one that stopped long ago, or another one still at work.
      const ran = async (id: string, node: string) => {
        await records.jobs.create({ id, userId: 'alice', title: null, description: null, process: { process_graph: {} }, plan: 'free', budget: null, logLevel: 'info' });
        await records.jobQueue.enqueue(id);
        expect((await records.jobQueue.claim(node))?.id).toBe(id);
      };
      await ran('fin', 'old-node');
      await records.jobs.transition('fin', ['running'], 'finished');
      const asset = { key: 'fin/result.tif', type: 'image/tiff; application=geotiff', bytes: 4, title: 'result', roles: ['data'], fields: {} };
      await records.jobResults.put('fin', { run: 1, partial: false, assets: { 'result.tif': asset }, bbox: null, geometry: null, times: [], created: new Date().toISOString() });
      await ran('err', 'old-node');
      await records.jobs.transition('err', ['running'], 'error');
      await ran('busy', 'another-node');
      await records.close();
      const keys = ['gone/result.tif', 'gone/run-2/chunk-0', 'fin/result.tif', 'fin/run-1/chunk-3', 'err/run-1/chunk-2', 'busy/run-1/chunk-0'];
      for (const key of keys)
        await results.write(
          key,
          (async function* () {
            yield Buffer.from(key);
          })(),
        );
      const s = await startServer(env, dataDir);
      try {
        for (let i = 0; i < 100 && !/removed \d+ job file/.test(s.output()); i++) await new Promise((r) => setTimeout(r, 100));
        expect(s.output()).toContain('removed 4 job file(s) that no record accounts for');
        // The finished job keeps its result, the job another node runs keeps its chunk; the rest is gone.
        expect((await results.list('')).map((b) => b.key)).toEqual(['busy/run-1/chunk-0', 'fin/result.tif']);
      } finally {
        await s.stop();
        await results.deleteTree('busy');
        await results.deleteTree('fin');
        removeDir(dataDir);
      }
    });
  }

  describe('through the API', () => {
    let s: TestServer;
    let token: string;
    let jobs: Jobs;
    const files = tempDir('xeo-s3-files-');
    // Room for the 12 MB file and more than one part of the next: the quota strikes after a part was uploaded.
    const QUOTA = 24 * MB;
    const small = path.join(files, 'small_20240301.tif');

    beforeAll(async () => {
      // A small raster, in the bucket and on disk, imported as two collections before the server starts.
      const width = 64;
      const band = Uint16Array.from({ length: width * width }, (_, i) => 100 + (i % width) + 3 * Math.floor(i / width));
      await writeCog(small, { width, height: width, epsg: 32633, transform: [600000, 10, 0, 5300000, 0, -10], bands: [band], nodata: 0 });
      const { readFileSync } = await import('node:fs');
      await client.send(new PutObjectCommand({ Bucket: gw.bucket, Key: 'raw/small_20240301.tif', Body: readFileSync(small) }));
      const item = {
        type: 'Feature',
        stac_version: '1.0.0',
        id: 'small-item',
        properties: { datetime: '2024-03-01T00:00:00Z' },
        geometry: null,
        assets: { B1: { href: `s3://${gw.bucket}/raw/small_20240301.tif`, type: 'image/tiff; application=geotiff', roles: ['data'] } },
      };
      writeFileSync(path.join(files, 'item.json'), JSON.stringify(item));
      const dataDir = await demoDataDir();
      const env = { ...gw.env, XEO_USER_QUOTA_BYTES: String(QUOTA) };
      for (const args of [
        ['import', '--collection', 'SMALL_LOCAL', small],
        ['import', '--collection', 'SMALL_S3', `s3://${gw.bucket}/raw/small_20240301.tif`],
        ['import', '--collection', 'SMALL_STAC', path.join(files, 'item.json')],
      ]) {
        const r = xeo(args, { dataDir, env });
        expect(r.status, r.stderr).toBe(0);
      }
      s = await startServer(env, dataDir);
      addUser(s.dataDir, 'alice', 'pa');
      token = await login(s, 'alice', 'pa');
      jobs = new Jobs(s, token);
    }, 180_000);
    afterAll(async () => {
      if (process.env.XEO_TEST_DEBUG) console.log(s?.output());
      await s?.stop();
      if (s) removeDir(s.dataDir);
      removeDir(files);
    });

    const put = (p: string, body: Buffer | AsyncIterable<Buffer>) => http('PUT', `${s.base}/files/${p}`, { token, body, headers: { 'content-type': 'application/octet-stream' } });
    const get = (p: string, headers: Record<string, string> = {}) => http('GET', `${s.base}/files/${p}`, { token, headers });

    const big = pattern(12 * MB, 7);

    it('uploads 12 MB streamed (multipart) and downloads it byte-identical, whole and by Range', async () => {
      let t = performance.now();
      const up = await put('data/big.bin', chunks(big));
      const upMs = performance.now() - t;
      expect(up.status, up.text).toBe(200);
      expect(up.json).toMatchObject({ path: 'data/big.bin', size: big.length });
      t = performance.now();
      const down = await get('data/big.bin');
      const downMs = performance.now() - t;
      console.log(`[s3-store] 12 MB through the server: upload ${upMs.toFixed(0)} ms, download ${downMs.toFixed(0)} ms`);
      expect(down.status).toBe(200);
      expect(down.headers['accept-ranges']).toBe('bytes');
      expect(sha(down.body)).toBe(sha(big));
      const r = await get('data/big.bin', { range: `bytes=${PART_BYTES - 10}-${PART_BYTES + 9}` });
      expect(r.status).toBe(206);
      expect(r.headers['content-range']).toBe(`bytes ${PART_BYTES - 10}-${PART_BYTES + 9}/${big.length}`);
      expect(r.body.equals(big.subarray(PART_BYTES - 10, PART_BYTES + 10))).toBe(true);
      const tail = await get('data/big.bin', { range: 'bytes=-5' });
      expect(tail.body.equals(big.subarray(big.length - 5))).toBe(true);
      expectError(await get('data/big.bin', { range: `bytes=${big.length}-` }), 416, 'RangeNotSatisfiable');
      const { keys, uploads } = await bucketState('files/');
      expect(keys).toEqual(['files/alice/data/big.bin']);
      expect(uploads).toBe(0);
    }, 60_000);

    it('replaces a file, lists and deletes, with folders as key prefixes', async () => {
      expect((await put('notes/a.txt', Buffer.from('first'))).status).toBe(200);
      expect((await put('notes/a.txt', Buffer.from('second, longer'))).status).toBe(200);
      expect((await get('notes/a.txt')).text).toBe('second, longer');
      expect((await put('notes/b.txt', Buffer.from('b'))).status).toBe(200);
      const list = await http('GET', `${s.base}/files`, { token });
      expect(list.json.files.map((f: any) => [f.path, f.size])).toEqual([
        ['data/big.bin', big.length],
        ['notes/a.txt', 14],
        ['notes/b.txt', 1],
      ]);
      const page = await http('GET', `${s.base}/files?limit=2`, { token });
      expect(page.json.files).toHaveLength(2);
      expect(page.json.links.some((l: any) => l.rel === 'next')).toBe(true);
      expectError(await get('notes'), 400, 'FileOperationUnsupported');
      expectError(await put('notes', Buffer.from('x')), 400, 'FolderOperationUnsupported');
      expectError(await put('notes/a.txt/c', Buffer.from('x')), 400, 'FilePathInvalid');
      // Short enough as text (725 characters), too long as an object key (over 1024 bytes).
      const long = Array.from({ length: 6 }, () => encodeURIComponent('ü'.repeat(120))).join('/');
      expectError(await put(long, Buffer.from('x')), 400, 'FilePathInvalid');
      expectError(await get(long), 400, 'FilePathInvalid');
      expect((await http('DELETE', `${s.base}/files/notes/a.txt`, { token })).status).toBe(204);
      expectError(await http('DELETE', `${s.base}/files/notes/a.txt`, { token }), 404, 'FileNotFound');
      expectError(await get('notes/a.txt'), 404, 'FileNotFound');
      expect((await bucketState('files/')).keys).toEqual(['files/alice/data/big.bin', 'files/alice/notes/b.txt']);
    });

    it('refuses an upload over the quota while it streams, and leaves nothing in the bucket', async () => {
      const before = await bucketState('files/');
      const r = await put('over.bin', chunks(pattern(12 * MB, 9)));
      expect(QUOTA - big.length).toBeGreaterThan(PART_BYTES);
      expectError(r, 400, 'StorageQuotaExceeded');
      const after = await bucketState('files/');
      expect(after.keys).toEqual(before.keys);
      expect(after.uploads).toBe(0);
    }, 60_000);

    it('keeps the old object when an upload is cut off mid-way, and aborts its multipart upload', async () => {
      expect((await put('cut.bin', Buffer.from('old content'))).status).toBe(200);
      const { port, hostname } = new URL(s.url);
      await new Promise<void>((resolve) => {
        const sock = net.connect(Number(port), hostname, async () => {
          sock.write(`PUT /1.2.0/files/cut.bin HTTP/1.1\r\nHost: x\r\nAuthorization: ${token}\r\nContent-Length: ${11 * MB}\r\n\r\n`);
          // More than a part is sent (a multipart upload is under way), then the client goes.
          sock.write(pattern(9 * MB, 11));
          setTimeout(() => {
            sock.destroy();
            resolve();
          }, 500);
        });
      });
      for (let i = 0; i < 50 && (await bucketState('files/')).uploads > 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect((await get('cut.bin')).text).toBe('old content');
      expect((await bucketState('files/')).uploads).toBe(0);
      expect((await http('DELETE', `${s.base}/files/cut.bin`, { token })).status).toBe(204);
    }, 60_000);

    describeWithTool(hasGdal, 'GDAL', 'batch job results', () => {
      it('are stored under jobs/, read by GDAL through the signed link (by range), and byte-equal to a local run', async () => {
        const graph = ndviGraph(pixels(0, 0, 1024, 1024));
        const job = await jobs.run(graph);
        expect(job.status, JSON.stringify(await jobs.logs(job.id))).toBe('finished');
        const doc = (await jobs.call('GET', `/jobs/${job.id}/results`)).json;
        const href = doc.assets['result.tif'].href;
        expect((await bucketState(`jobs/${job.id}/`)).keys).toEqual([`jobs/${job.id}/result.tif`]);
        const info = JSON.parse(run('gdalinfo', ['-json', '-stats', `/vsicurl/${href}`]));
        expect(info.size).toEqual([1024, 1024]);
        expect(Number(info.bands[0].metadata[''].STATISTICS_MAXIMUM)).toBeLessThanOrEqual(1);
        const whole = await http('GET', href);
        expect(whole.status).toBe(200);
        const part = await http('GET', href, { headers: { range: 'bytes=100-199' } });
        expect(part.status).toBe(206);
        expect(part.body.equals(whole.body.subarray(100, 200))).toBe(true);
        // The same job on a server with results on the local disk.
        const plain = await startServer({}, await demoDataDir());
        try {
          addUser(plain.dataDir, 'alice', 'pa');
          const localJobs = new Jobs(plain, await login(plain, 'alice', 'pa'));
          const lj = await localJobs.run(graph);
          const ldoc = (await localJobs.call('GET', `/jobs/${lj.id}/results`)).json;
          const lbytes = (await http('GET', ldoc.assets['result.tif'].href)).body;
          expect(sha(whole.body)).toBe(sha(lbytes));
        } finally {
          await plain.stop();
          removeDir(plain.dataDir);
        }
        // Deleting the job deletes its results in the bucket.
        expect((await jobs.call('DELETE', `/jobs/${job.id}`)).status).toBe(204);
        expect((await bucketState(`jobs/${job.id}/`)).keys).toEqual([]);
      }, 180_000);
    });

    it('reads imported s3:// hrefs (GeoTIFF and STAC item) like the same file on disk', async () => {
      const result = async (id: string) => {
        const graph = {
          load: { process_id: 'load_collection', arguments: { id, spatial_extent: { west: 600000, south: 5299360, east: 600640, north: 5300000, crs: 32633 }, temporal_extent: null } },
          save: { process_id: 'save_result', arguments: { data: { from_node: 'load' }, format: 'GTiff' }, result: true },
        };
        const r = await http('POST', `${s.base}/result`, { token, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ process: { process_graph: graph } }) });
        expect(r.status, r.text).toBe(200);
        return r.body;
      };
      const onDisk = await result('SMALL_LOCAL');
      expect(onDisk.length).toBeGreaterThan(1000);
      expect(sha(await result('SMALL_S3'))).toBe(sha(onDisk));
      expect(sha(await result('SMALL_STAC'))).toBe(sha(onDisk));
      const items = (await http('GET', `${s.base}/collections/SMALL_S3/items`, { token })).json;
      expect(JSON.stringify(items)).not.toContain('TESTSECRET');
    }, 60_000);

    it('answers 503 with Retry-After while the store is away, and works again when it is back', async () => {
      expect((await put('before.txt', Buffer.from('kept'))).status).toBe(200);
      const done = await jobs.run(ndviGraph(pixels(0, 0, 256, 256)));
      expect(done.status).toBe('finished');
      const href = (await jobs.call('GET', `/jobs/${done.id}/results`)).json.assets['result.tif'].href;
      const stored = (await http('GET', href)).body;
      let failedId: string;
      gw.stopGateway();
      try {
        for (const r of [
          await http('GET', `${s.base}/files`, { token }),
          await get('before.txt'),
          await put('during.txt', Buffer.from('lost?')),
          await http('DELETE', `${s.base}/files/before.txt`, { token }),
          await http('GET', href),
          await http('GET', href, { headers: { range: 'bytes=0-99' } }),
        ]) {
          expectError(r, 503, 'InfrastructureBusy');
          expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
        }
        // The rest of the API is unaffected; /me leaves out the storage figures it cannot know.
        const me = await http('GET', `${s.base}/me`, { token });
        expect(me.status).toBe(200);
        expect(me.json.storage).toBeUndefined();
        expect((await http('GET', `${s.base}/collections`, { token })).status).toBe(200);
        // A job that cannot store its results fails with a log entry; its record stays whole.
        const failed = await jobs.run(ndviGraph(pixels(0, 0, 256, 256)));
        failedId = failed.id;
        expect(failed.status).toBe('error');
        expect((await jobs.logs(failed.id)).logs.map((l: any) => l.code)).toContain('StorageFailure');
        const results = await jobs.call('GET', `/jobs/${failed.id}/results`);
        expect(results.status).toBe(424);
        expect(results.json.code).toBe('StorageFailure');
      } finally {
        await gw.startGateway();
      }
      expect((await get('before.txt')).text).toBe('kept');
      expectError(await get('during.txt'), 404, 'FileNotFound');
      expect((await put('after.txt', Buffer.from('back'))).status).toBe(200);
      expect((await get('after.txt')).text).toBe('back');
      expect((await http('GET', href)).body.equals(stored)).toBe(true);
      // The failed job runs again, now with its results stored.
      await jobs.start(failedId);
      const again = await jobs.waitFor(failedId, (j) => j.status === 'finished' || j.status === 'error');
      expect(again.status).toBe('finished');
      expect((await bucketState(`jobs/${failedId}/`)).keys).toEqual([`jobs/${failedId}/result.tif`]);
    }, 120_000);

    it("refuses a user's s3:// href: it would be signed with the operator's credentials", async () => {
      await expect(Promise.resolve().then(() => openRaster(`s3://${gw.bucket}/raw/small_20240301.tif`, usersPolicy(undefined), new BlockCache(1 << 20)))).rejects.toThrow(
        /s3:\/\/ hrefs are read only in collections the administrator added/,
      );
    });
  });
});
