// A throwaway S3-compatible store for the tests and benches of the S3 blob store: a single-node Ceph
// (one monitor, one memstore OSD, no manager, no cephx) with a RADOS Gateway on a loopback port,
// in a temp dir, with the user TESTKEY/TESTSECRET and one bucket. The steps are those of the
// shared recipe s3-radosgw-start.sh; stop() ends only the daemons this helper started (by the pid
// files in its own run dir), gateway first, as s3-radosgw-stop.sh does.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort, portFree } from './ports.js';

const TOOLS = ['radosgw', 'radosgw-admin', 'ceph-mon', 'ceph-osd', 'ceph', 'monmaptool', 'ceph-authtool'];
const onPath = (cmd: string) => (process.env.PATH ?? '/usr/bin:/bin').split(':').some((d) => existsSync(path.join(d, cmd)));
export const hasRadosgw = TOOLS.every(onPath);

export const ACCESS_KEY = 'TESTKEY';
export const SECRET_KEY = 'TESTSECRET';

export interface RadosGateway {
  endpoint: string;
  bucket: string;
  /** Seconds from the first step to a gateway with its user and bucket. */
  startSeconds: number;
  /** The environment that points a Xeo at this store. */
  env: Record<string, string>;
  /** Stops only the gateway (the cluster stays): the store is unreachable until startGateway(). */
  stopGateway(): void;
  startGateway(): Promise<void>;
  /** Stops the gateway where it is (SIGSTOP): connections stay open and nothing answers, as with a hung store. */
  freezeGateway(): void;
  /** Lets a frozen gateway go on (SIGCONT). */
  thawGateway(): void;
  /** Stops every daemon this helper started and removes its files. */
  stop(): void;
}

/** A gateway port whose monitor ports (+10, +11, as in the recipe) are free too. */
async function freePorts(): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const p = await freePort();
    if (p + 11 < 65536 && (await portFree(p + 10)) && (await portFree(p + 11))) return p;
  }
  throw new Error('no free ports for the RADOS Gateway and its monitor');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startRadosGateway(bucket = 'xeo-test'): Promise<RadosGateway> {
  const t0 = performance.now();
  const dir = mkdtempSync(path.join(tmpdir(), 'xeo-rgw-'));
  for (const d of ['mon', 'osd', 'run', 'log']) mkdirSync(path.join(dir, d));
  const port = await freePorts();
  const fsid = randomUUID();
  const monHost = `[v2:127.0.0.1:${port + 10},v1:127.0.0.1:${port + 11}]`;
  const conf = path.join(dir, 'ceph.conf');
  writeFileSync(
    conf,
    `[global]
fsid = ${fsid}
mon_host = ${monHost}
public_addr = 127.0.0.1
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
run_dir = ${dir}/run
admin_socket = ${dir}/run/$name.asok
pid_file = ${dir}/run/$name.pid
log_file = ${dir}/log/$name.log
mon_data = ${dir}/mon/$id
osd_data = ${dir}/osd/$id
keyring = ${dir}/keyring
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
osd_pool_default_pg_num = 1
paxos_propose_interval = 0.05
mon_lease = 1
mon_tick_interval = 1
osd_pool_default_pgp_num = 1
osd_pool_default_pg_autoscale_mode = off
mon_max_pg_per_osd = 1000
osd_crush_chooseleaf_type = 0
mon_warn_on_pool_no_redundancy = false
mon_data_avail_crit = 0
ms_bind_ipv6 = false
ms_mon_client_mode = crc
client_mount_timeout = 30
rados_mon_op_timeout = 30
osd_objectstore = memstore
memstore_device_bytes = 2147483648
bluestore_block_create = true
bluestore_block_size = 4294967296
bluestore_fsck_on_mkfs = false
bluestore_cache_size = 134217728
osd_memory_target = 939524096
osd_op_num_shards = 2
osd_op_num_threads_per_shard = 1
crash_dir = ${dir}/crash
[client.rgw]
rgw_frontends = beast endpoint=127.0.0.1:${port}
rgw_dns_name = localhost
rgw_thread_pool_size = 64
`,
  );
  const env = { ...process.env, CEPH_CONF: conf };
  const run = (cmd: string, args: string[]): string => {
    const r = spawnSync(cmd, args, { env, encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  const endpoint = `http://127.0.0.1:${port}`;
  const stopDaemons = (names: string[]) => {
    for (const n of names) {
      const f = path.join(dir, 'run', `${n}.pid`);
      if (!existsSync(f)) continue;
      const pid = Number(readFileSync(f, 'utf8').trim());
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        continue; // already gone
      }
      const until = Date.now() + 10_000;
      const alive = () => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      while (alive() && Date.now() < until) spawnSync('sleep', ['0.1']);
      if (alive()) process.kill(pid, 'SIGKILL');
    }
  };
  const signalGateway = (signal: NodeJS.Signals) => {
    const f = path.join(dir, 'run', 'client.rgw.pid');
    if (existsSync(f)) process.kill(Number(readFileSync(f, 'utf8').trim()), signal);
  };
  const startGateway = async () => {
    run('radosgw', ['-n', 'client.rgw']);
    for (let i = 0; ; i++) {
      const ok = await fetch(`${endpoint}/`).then(
        (r) => (r.body?.cancel(), true),
        () => false,
      );
      if (ok) return;
      if (i > 240) throw new Error(`the RADOS Gateway does not answer on ${endpoint}; see ${dir}/log`);
      await sleep(250);
    }
  };
  try {
    run('monmaptool', ['--create', '--addv', 'a', monHost, '--fsid', fsid, path.join(dir, 'monmap')]);
    run('ceph-authtool', ['--create-keyring', path.join(dir, 'keyring'), '--gen-key', '-n', 'mon.', '--cap', 'mon', 'allow *']);
    run('ceph-mon', ['--mkfs', '-i', 'a', '--monmap', path.join(dir, 'monmap'), '--keyring', path.join(dir, 'keyring')]);
    run('ceph-mon', ['-i', 'a']);
    const osdUuid = randomUUID();
    const osdId = run('ceph', ['osd', 'new', osdUuid]).trim();
    mkdirSync(path.join(dir, 'osd', osdId));
    run('ceph-osd', ['-i', osdId, '--mkfs', '--osd-uuid', osdUuid]);
    run('ceph-osd', ['-i', osdId]);
    for (let i = 0; !/1 up/.test(spawnSync('ceph', ['osd', 'stat'], { env, encoding: 'utf8' }).stdout ?? ''); i++) {
      if (i > 120) throw new Error(`the OSD does not come up; see ${dir}/log`);
      await sleep(500);
    }
    await startGateway();
    run('radosgw-admin', ['user', 'create', '--uid=test', '--display-name=test', `--access-key=${ACCESS_KEY}`, `--secret=${SECRET_KEY}`]);
    const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY } });
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    client.destroy();
  } catch (e) {
    stopDaemons(['client.rgw', 'osd.0', 'mon.a']);
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    endpoint,
    bucket,
    startSeconds: (performance.now() - t0) / 1000,
    env: {
      XEO_S3_ENDPOINT: endpoint,
      XEO_S3_BUCKET: bucket,
      XEO_S3_REGION: 'us-east-1',
      XEO_S3_ACCESS_KEY_ID: ACCESS_KEY,
      XEO_S3_SECRET_ACCESS_KEY: SECRET_KEY,
    },
    stopGateway: () => stopDaemons(['client.rgw']),
    startGateway,
    freezeGateway: () => signalGateway('SIGSTOP'),
    thawGateway: () => signalGateway('SIGCONT'),
    stop() {
      try {
        signalGateway('SIGCONT');
      } catch {
        /* not running */
      }
      stopDaemons(['client.rgw', 'osd.0', 'mon.a']);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
