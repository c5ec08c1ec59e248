// A throwaway Redis 7 (Debian's redis-server) on a loopback port, for the tests and benches of the
// job queue: no persistence, no eviction (a queue must never lose a task to memory pressure),
// stopped (only this server) at the end.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { freePort } from './ports.js';

const BIN = '/usr/bin/redis-server';
export const hasRedis = existsSync(BIN) && existsSync('/usr/bin/redis-cli');

export interface RedisServer {
  port: number;
  url: string;
  stop(): void;
  start(): void;
  /** Stops the server where it is (SIGSTOP): connections stay open and nothing answers, as with a hung server. */
  freeze(): void;
  /** Lets a frozen server go on (SIGCONT). */
  thaw(): void;
  remove(): void;
}

export async function startRedis(): Promise<RedisServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'xeo-redis-'));
  const port = await freePort();
  const pidFile = path.join(dir, 'redis.pid');
  const start = () => {
    const r = spawnSync(
      BIN,
      [
        '--bind',
        '127.0.0.1',
        '--port',
        String(port),
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'yes',
        '--pidfile',
        pidFile,
        '--logfile',
        path.join(dir, 'redis.log'),
        '--maxmemory-policy',
        'noeviction',
      ],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`redis-server failed: ${r.stderr || r.stdout}`);
    for (let i = 0; i < 200; i++) {
      if (spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout.trim() === 'PONG') return;
      spawnSync('sleep', ['0.05']);
    }
    throw new Error('redis-server did not answer');
  };
  const stop = () => {
    spawnSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave']);
    // Wait for the process to be gone, so a start right after gets the port.
    for (let i = 0; i < 100 && existsSync(pidFile); i++) {
      const pid = Number(readFileSync(pidFile, 'utf8'));
      try {
        process.kill(pid, 0);
      } catch {
        break;
      }
      spawnSync('sleep', ['0.05']);
    }
  };
  const signal = (s: NodeJS.Signals) => {
    if (existsSync(pidFile)) process.kill(Number(readFileSync(pidFile, 'utf8')), s);
  };
  start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop,
    start,
    freeze: () => signal('SIGSTOP'),
    thaw: () => signal('SIGCONT'),
    remove() {
      try {
        signal('SIGCONT');
      } catch {
        /* not running */
      }
      stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
