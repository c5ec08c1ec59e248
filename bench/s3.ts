// What user files cost in an S3-compatible store against the local disk: a 12 MB file uploaded
// (streamed, chunked) and downloaded through the server, median of several rounds, on a throwaway
// RADOS Gateway on loopback (bench/radosgw.ts) and on a server with files on disk; then (full run)
// a 256 MB upload, to show the server's memory stays bounded by the multipart part buffers.
import { spawnSync } from 'node:child_process';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { hasRadosgw, startRadosGateway } from './radosgw.js';
import { CLI, Cleanup, median, procKb, round, startXeo, table, type XeoChild } from './lib.js';
import type { BenchOptions, BenchResult } from './run.js';

const MB = 1024 * 1024;

async function signIn(x: XeoChild): Promise<string> {
  const add = spawnSync(process.execPath, [CLI, 'users', 'add', 'bench', '--password', 'pw'], { env: { ...process.env, XEO_DATA_DIR: x.dataDir }, encoding: 'utf8' });
  if (add.status !== 0) throw new Error(`users add failed: ${add.stderr}`);
  const r = await request(`${x.url}/1.2.0/credentials/basic`, { headers: { authorization: `Basic ${Buffer.from('bench:pw').toString('base64')}` } });
  const body = (await r.body.json()) as { access_token: string };
  return `Bearer basic//${body.access_token}`;
}

/** Milliseconds to upload `mb` MB in 1 MB chunks (no Content-Length: the server streams it) and to download it. */
async function roundTrip(x: XeoChild, auth: string, name: string, mb: number): Promise<{ up: number; down: number }> {
  const chunk = Buffer.alloc(MB, 7);
  async function* body() {
    for (let i = 0; i < mb; i++) yield chunk;
  }
  let t = performance.now();
  const r = await request(`${x.url}/1.2.0/files/${name}`, { method: 'PUT', headers: { authorization: auth }, body: Readable.from(body()) });
  await r.body.text();
  if (r.statusCode !== 200) throw new Error(`upload answered ${r.statusCode}`);
  const up = performance.now() - t;
  t = performance.now();
  const d = await request(`${x.url}/1.2.0/files/${name}`, { headers: { authorization: auth } });
  let n = 0;
  for await (const c of d.body) n += (c as Buffer).length;
  if (n !== mb * MB) throw new Error(`download brought ${n} bytes`);
  return { up, down: performance.now() - t };
}

export async function run(opts: BenchOptions): Promise<BenchResult> {
  if (!hasRadosgw) throw new Error('this bench needs the RADOS Gateway (Debian packages radosgw, ceph-mon, ceph-osd)');
  const cleanup = new Cleanup();
  const rounds = opts.quick ? 3 : 7;
  try {
    const gw = await startRadosGateway('xeo-bench');
    cleanup.add(() => gw.stop());
    const quiet = { XEO_DEMO: 'false', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
    const s3 = await startXeo({ ...gw.env, ...quiet });
    cleanup.add(() => s3.stop());
    const disk = await startXeo(quiet);
    cleanup.add(() => disk.stop());
    const [s3Auth, diskAuth] = [await signIn(s3), await signIn(disk)];
    const s3Times: { up: number; down: number }[] = [];
    const diskTimes: { up: number; down: number }[] = [];
    for (let i = 0; i < rounds; i++) {
      s3Times.push(await roundTrip(s3, s3Auth, 'f12.bin', 12));
      diskTimes.push(await roundTrip(disk, diskAuth, 'f12.bin', 12));
    }
    const f: Record<string, number> = {
      rgw_start_s: round(gw.startSeconds, 2),
      s3_upload_12mb_ms: round(median(s3Times.map((t) => t.up))),
      s3_download_12mb_ms: round(median(s3Times.map((t) => t.down))),
      disk_upload_12mb_ms: round(median(diskTimes.map((t) => t.up))),
      disk_download_12mb_ms: round(median(diskTimes.map((t) => t.down))),
    };
    if (!opts.quick) {
      const before = procKb(s3.proc.pid, 'VmHWM') / 1024;
      const big = await roundTrip(s3, s3Auth, 'f256.bin', 256);
      f.s3_upload_256mb_ms = round(big.up);
      f.s3_download_256mb_ms = round(big.down);
      f.s3_256mb_peak_rss_growth_mb = round(procKb(s3.proc.pid, 'VmHWM') / 1024 - before);
    }
    console.log(
      table([
        ['12 MB through the server', 'upload ms', 'download ms'],
        ['S3 (RADOS Gateway, loopback)', f.s3_upload_12mb_ms, f.s3_download_12mb_ms],
        ['local disk', f.disk_upload_12mb_ms, f.disk_download_12mb_ms],
      ]),
    );
    if (!opts.quick) console.log(`256 MB to S3: upload ${f.s3_upload_256mb_ms} ms, download ${f.s3_download_256mb_ms} ms; server peak RSS grew ${f.s3_256mb_peak_rss_growth_mb} MB`);
    console.log(`RADOS Gateway started in ${f.rgw_start_s} s`);
    return {
      figures: f,
      ratios: { s3_over_disk_upload: round(f.s3_upload_12mb_ms / f.disk_upload_12mb_ms, 2), s3_over_disk_download: round(f.s3_download_12mb_ms / f.disk_download_12mb_ms, 2) },
    };
  } finally {
    await cleanup.run();
  }
}
