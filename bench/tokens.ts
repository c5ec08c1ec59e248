// The cost of a bearer token per request: GET /1.3.0/processing_parameters (a small answer, public
// or with a token, which is then checked) without a token, with our JWT (raw, and as basic//), and
// with an opaque token of an earlier installation. A token known valid is answered from memory (its
// record read at most once a minute), so the answers with a token should cost about what the one
// without does; a JWT seen for the first time costs an Ed25519 verification and two record reads,
// measured separately with fresh tokens on GET /1.3.0/me.
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { CLI, Cleanup, cannon, median, round, startXeo, table, type Load } from './lib.js';

export async function run(opts: { quick: boolean }): Promise<{ figures: Record<string, number>; ratios: Record<string, number> }> {
  const seconds = opts.quick ? 2 : 5;
  const rounds = opts.quick ? 2 : 4;
  const cleanup = new Cleanup();
  try {
    const xeo = await startXeo({ XEO_DEMO: 'false' });
    cleanup.add(() => xeo.stop());
    const add = spawnSync(process.execPath, [CLI, 'users', 'add', 'alice', '--password', 'pw'], { env: { ...process.env, XEO_DATA_DIR: xeo.dataDir }, encoding: 'utf8' });
    if (add.status !== 0) throw new Error(add.stderr);
    const signIn = async () => {
      const r = await fetch(`${xeo.url}/1.3.0/credentials/basic`, { headers: { authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}` } });
      return ((await r.json()) as { access_token: string }).access_token;
    };
    const jwt = await signIn();
    const opaque = randomBytes(32).toString('base64url');
    const db = new Database(path.join(xeo.dataDir, 'xeo.sqlite'));
    db.prepare('INSERT INTO tokens (token_hash, user_id, expires_at) VALUES (?, ?, ?)').run(createHash('sha256').update(opaque).digest('hex'), 'alice', Date.now() + 3600_000);
    db.close();

    const cases: Record<string, { path: string; authorization?: string }> = {
      public: { path: '/1.3.0/processing_parameters' },
      jwt_raw: { path: '/1.3.0/processing_parameters', authorization: `Bearer ${jwt}` },
      jwt_basic: { path: '/1.3.0/processing_parameters', authorization: `Bearer basic//${jwt}` },
      opaque: { path: '/1.3.0/processing_parameters', authorization: `Bearer basic//${opaque}` },
    };
    const load = (c: { path: string; authorization?: string }, duration: number) => cannon({ url: xeo.url + c.path, duration, headers: c.authorization ? { authorization: c.authorization } : {} }, xeo.proc.pid);
    for (const c of Object.values(cases)) await load(c, 1);
    const runs: Record<string, Load[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
    console.log(`tokens bench: ${rounds} rounds x ${seconds} s per case, 50 connections`);
    for (let i = 0; i < rounds; i++) {
      for (const [name, c] of Object.entries(cases)) {
        const l = await load(c, seconds);
        runs[name].push(l);
        console.log(`  round ${i + 1}/${rounds} ${name.padEnd(9)} ${Math.round(l.reqPerSec)} req/s, p99 ${l.p99Ms} ms`);
      }
    }
    // First sight of a token: a fresh JWT per request (signature, key, row and user read).
    const fresh = await Promise.all(Array.from({ length: opts.quick ? 100 : 400 }, () => signIn()));
    const times: number[] = [];
    for (const t of fresh) {
      const t0 = performance.now();
      const r = await fetch(`${xeo.url}/1.3.0/me`, { headers: { authorization: `Bearer ${t}` } });
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`a fresh token answered ${r.status}`);
      times.push(performance.now() - t0);
    }
    const again: number[] = [];
    for (const t of fresh) {
      const t0 = performance.now();
      await (await fetch(`${xeo.url}/1.3.0/me`, { headers: { authorization: `Bearer ${t}` } })).arrayBuffer();
      again.push(performance.now() - t0);
    }
    const rate = (loads: Load[]) => loads.reduce((s, l) => s + l.requests, 0) / loads.reduce((s, l) => s + l.seconds, 0);
    const cpu = (loads: Load[]) => (loads.some((l) => l.serverCpuS === null) ? NaN : (1e6 * loads.reduce((s, l) => s + l.serverCpuS!, 0)) / loads.reduce((s, l) => s + l.requests, 0));
    const figures: Record<string, number> = {};
    for (const name of Object.keys(cases)) {
      figures[`${name}_req_per_s`] = round(rate(runs[name]));
      figures[`${name}_cpu_us_per_req`] = round(cpu(runs[name]), 1);
    }
    figures.first_sight_median_ms = round(median(times), 2);
    figures.known_median_ms = round(median(again), 2);
    const ratios = {
      jwt_raw_over_public: round(rate(runs.jwt_raw) / rate(runs.public), 3),
      opaque_over_public: round(rate(runs.opaque) / rate(runs.public), 3),
      cpu_public_over_jwt: round(cpu(runs.public) / cpu(runs.jwt_raw), 3),
    };
    console.log();
    console.log(
      table([
        ['case', 'req/s', 'server CPU µs/req'],
        ...Object.keys(cases).map((n) => [n, figures[`${n}_req_per_s`], figures[`${n}_cpu_us_per_req`]]),
        ['first sight of a JWT (one request, median ms)', figures.first_sight_median_ms, ''],
        ['the same JWTs again (median ms)', figures.known_median_ms, ''],
      ]),
    );
    return { figures, ratios };
  } finally {
    await cleanup.run();
  }
}
