// A throwaway Prometheus (Debian's `prometheus`) on a loopback port that scrapes the given targets
// every second, for the test of /metrics: series are read back through Prometheus's own HTTP query
// API, so what we publish is checked by the program that consumes it. Stopped (only this process)
// and its data removed at the end.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { freePort } from './ports.js';

const BIN = '/usr/bin/prometheus';
export const hasPrometheus = existsSync(BIN);

export interface PrometheusServer {
  url: string;
  /** An instant query: the series of the answer with their labels and values. */
  query(expr: string): Promise<{ metric: Record<string, string>; value: number }[]>;
  /** The scrape targets as Prometheus sees them (health, last error). */
  targets(): Promise<{ scrapeUrl: string; health: string; lastError: string }[]>;
  output(): string;
  stop(): Promise<void>;
}

/** Starts Prometheus scraping `targets` (host:port each) every second at `metricsPath`. */
export async function startPrometheus(targets: string[], metricsPath = '/metrics'): Promise<PrometheusServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'xeo-prometheus-'));
  const port = await freePort();
  const config = [
    'global:',
    '  scrape_interval: 1s',
    '  scrape_timeout: 1s',
    'scrape_configs:',
    '  - job_name: xeo',
    `    metrics_path: ${metricsPath}`,
    '    static_configs:',
    `      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]`,
  ].join('\n');
  writeFileSync(path.join(dir, 'prometheus.yml'), `${config}\n`);
  const proc: ChildProcess = spawn(BIN, [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out = (out + d).slice(-20_000)));
  proc.stderr!.on('data', (d) => (out = (out + d).slice(-20_000)));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const gone = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`prometheus exited (${proc.exitCode}):\n${out}`);
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) break;
    if (i > 300) {
      await stop();
      throw new Error(`prometheus did not become ready:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const api = async (p: string) => {
    const r = await fetch(`${url}/api/v1/${p}`);
    const body = (await r.json()) as { status: string; data: any; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${p}: ${body.error}`);
    return body.data;
  };
  return {
    url,
    async query(expr) {
      const data = await api(`query?query=${encodeURIComponent(expr)}`);
      return (data.result as { metric: Record<string, string>; value: [number, string] }[]).map((s) => ({ metric: s.metric, value: Number(s.value[1]) }));
    },
    async targets() {
      return ((await api('targets')).activeTargets as { scrapeUrl: string; health: string; lastError: string }[]).map((t) => ({ scrapeUrl: t.scrapeUrl, health: t.health, lastError: t.lastError }));
    },
    output: () => out,
    stop,
  };
}
