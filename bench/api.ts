// Discovery throughput: GET /1.2.0/ and GET /1.2.0/conformance on Xeo against a bare uWS server
// that answers the very same bytes and headers (bare-server.ts), so the gap is Xeo's own work per
// request: routing, CORS, request objects, promises. Runs alternate between the two servers so
// the noise of a shared machine hits both alike. When autocannon (one JS thread) is the bottleneck
// the req/s ratio hides that gap; the table's server CPU per request still shows it.
import { writeFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import { BENCH_DIR, Cleanup, cannon, median, removeDir, round, startChild, startXeo, table, tempDir, type Load } from './lib.js';
import type { BareSpec } from './bare-server.js';

const ENDPOINTS = { root: '/1.2.0/', conformance: '/1.2.0/conformance' } as const;
type Endpoint = keyof typeof ENDPOINTS;
type Server = 'xeo' | 'bare';

interface Answer {
  status: number;
  headers: [string, string][];
  body: Buffer;
}

// What the bare server must repeat: every header of Xeo's answer (its request id as a fixed string
// of the same length) but Date, Content-Length and uWS's own, which uWS writes in both servers.
const OWNED_BY_UWS = /^(date|uwebsockets|content-length|connection|transfer-encoding)$/;

async function fetchAnswer(url: string): Promise<Answer> {
  const r = await fetch(url);
  const body = Buffer.from(await r.arrayBuffer());
  const headers = [...r.headers].filter(([k]) => !OWNED_BY_UWS.test(k));
  return { status: r.status, headers, body };
}

export async function run(opts: { quick: boolean }): Promise<{ figures: Record<string, number>; ratios: Record<string, number> }> {
  const seconds = opts.quick ? 2 : 5;
  const rounds = opts.quick ? 3 : 5;
  const warmup = opts.quick ? 1 : 3;
  const cleanup = new Cleanup();
  try {
    const xeo = await startXeo();
    cleanup.add(() => xeo.stop());

    const spec: BareSpec = { routes: {} };
    const answers = {} as Record<Endpoint, Answer>;
    for (const [name, p] of Object.entries(ENDPOINTS) as [Endpoint, string][]) {
      const a = await fetchAnswer(xeo.url + p);
      if (a.status !== 200) throw new Error(`Xeo answered ${a.status} on GET ${p}: ${a.body}`);
      answers[name] = a;
      spec.routes[p] = { status: `${a.status} ${STATUS_CODES[a.status]}`, headers: a.headers, bodyBase64: a.body.toString('base64') };
    }
    const dir = tempDir('xeo-bench-bare-');
    cleanup.add(() => removeDir(dir));
    const specFile = path.join(dir, 'spec.json');
    writeFileSync(specFile, JSON.stringify(spec));
    const bare = await startChild(path.join(BENCH_DIR, 'bare-server.js'), [specFile]);
    cleanup.add(() => bare.stop());

    // The comparison is only fair if the bare server sends what Xeo sends.
    for (const [name, p] of Object.entries(ENDPOINTS) as [Endpoint, string][]) {
      const b = await fetchAnswer(bare.url + p);
      const a = answers[name];
      if (b.status !== a.status || !b.body.equals(a.body) || JSON.stringify(b.headers) !== JSON.stringify(a.headers)) {
        throw new Error(`bare server differs from Xeo on ${p}: ${JSON.stringify(b.headers)} vs ${JSON.stringify(a.headers)}`);
      }
    }
    console.log(`api bench: ${rounds} rounds x ${seconds} s per server and endpoint, 50 connections, pipelining 1`);
    console.log(`  root ${answers.root.body.length} B, conformance ${answers.conformance.body.length} B; xeo ${xeo.url}, bare ${bare.url}`);

    const urls: Record<Server, string> = { xeo: xeo.url, bare: bare.url };
    const pids: Record<Server, number | undefined> = { xeo: xeo.proc.pid, bare: bare.proc.pid };
    // Warm-up so the JIT and the socket buffers settle before anything counts.
    for (const server of ['xeo', 'bare'] as const) {
      for (const p of Object.values(ENDPOINTS)) await cannon({ url: urls[server] + p, duration: warmup });
    }

    const runs: Record<`${Server}_${Endpoint}`, Load[]> = { xeo_root: [], bare_root: [], xeo_conformance: [], bare_conformance: [] };
    for (let i = 0; i < rounds; i++) {
      for (const endpoint of Object.keys(ENDPOINTS) as Endpoint[]) {
        for (const server of ['xeo', 'bare'] as const) {
          const load = await cannon({ url: urls[server] + ENDPOINTS[endpoint], duration: seconds }, pids[server]);
          runs[`${server}_${endpoint}`].push(load);
          const cpu = load.serverCpuS === null ? '' : `, server ${(load.serverCpuS / load.seconds).toFixed(2)} cores`;
          console.log(`  round ${i + 1}/${rounds} ${server.padEnd(4)} ${endpoint.padEnd(11)} ${Math.round(load.reqPerSec)} req/s, p99 ${load.p99Ms} ms${cpu}`);
        }
      }
    }

    // Rate over all rounds: all requests over all seconds, so a slow round weighs what it lasted.
    const rate = (loads: Load[]) => loads.reduce((s, l) => s + l.requests, 0) / loads.reduce((s, l) => s + l.seconds, 0);
    const r = {
      xeo_root: rate(runs.xeo_root),
      bare_root: rate(runs.bare_root),
      xeo_conformance: rate(runs.xeo_conformance),
      bare_conformance: rate(runs.bare_conformance),
    };
    const p99 = (loads: Load[]) => round(median(loads.map((l) => l.p99Ms)), 2);
    // Server CPU per answer over all rounds. The load generator saturates before the servers do on a
    // small machine, so req/s ratios stay near 1; CPU per answer shows our own cost over bare uWS.
    const us = (loads: Load[]) => (loads.some((l) => l.serverCpuS === null) ? '' : round((1e6 * loads.reduce((s, l) => s + l.serverCpuS!, 0)) / loads.reduce((s, l) => s + l.requests, 0), 1));
    const cpuXeo = us([...runs.xeo_root, ...runs.xeo_conformance]);
    const cpuBare = us([...runs.bare_root, ...runs.bare_conformance]);
    const figures = {
      xeo_root_req_per_s: round(r.xeo_root),
      bare_root_req_per_s: round(r.bare_root),
      xeo_conformance_req_per_s: round(r.xeo_conformance),
      bare_conformance_req_per_s: round(r.bare_conformance),
      // Median over rounds: one noisy round should not decide the tail figure.
      xeo_root_p99_ms: round(median(runs.xeo_root.map((l) => l.p99Ms)), 2),
      ...(cpuXeo !== '' && cpuBare !== '' ? { xeo_cpu_us_per_req: cpuXeo, bare_cpu_us_per_req: cpuBare } : {}),
    };
    const ratios = {
      discovery_over_bare: round((r.xeo_root + r.xeo_conformance) / (r.bare_root + r.bare_conformance), 3),
      root_over_bare: round(r.xeo_root / r.bare_root, 3),
      conformance_over_bare: round(r.xeo_conformance / r.bare_conformance, 3),
      // bare CPU per answer / ours: 1 = no overhead over a bare uWS server sending the same bytes.
      ...(cpuXeo !== '' && cpuBare !== '' ? { cpu_bare_over_xeo: round(cpuBare / cpuXeo, 3) } : {}),
    };

    console.log();
    console.log(
      table([
        ['endpoint', 'xeo req/s', 'bare req/s', 'xeo/bare', 'xeo p99 ms', 'bare p99 ms', 'xeo cpu us/req', 'bare cpu us/req'],
        ['GET /1.2.0/', figures.xeo_root_req_per_s, figures.bare_root_req_per_s, ratios.root_over_bare, p99(runs.xeo_root), p99(runs.bare_root), us(runs.xeo_root), us(runs.bare_root)],
        [
          'GET /1.2.0/conformance',
          figures.xeo_conformance_req_per_s,
          figures.bare_conformance_req_per_s,
          ratios.conformance_over_bare,
          p99(runs.xeo_conformance),
          p99(runs.bare_conformance),
          us(runs.xeo_conformance),
          us(runs.bare_conformance),
        ],
        ['both', round(r.xeo_root + r.xeo_conformance), round(r.bare_root + r.bare_conformance), ratios.discovery_over_bare, '', '', '', ''],
      ]),
    );
    console.log();
    return { figures, ratios };
  } finally {
    await cleanup.run();
  }
}
