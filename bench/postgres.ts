// A throwaway PostgreSQL 15 (Debian's postgresql package) on a loopback port, for the tests and
// benches that run the record store on a database server: initdb into a temp dir, start, create
// databases, and stop (only this server) at the end. As root, the server runs as the postgres
// system user, which PostgreSQL requires.
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { freePort } from './ports.js';

const BIN = '/usr/lib/postgresql/15/bin';
export const hasPostgres = existsSync(path.join(BIN, 'initdb')) && existsSync(path.join(BIN, 'pg_ctl'));

export interface Postgres {
  port: number;
  /** URL of a fresh database; each call creates another one. */
  database(): string;
  stop(): void;
  start(): void;
  /** Stops the server's processes where they are (SIGSTOP), as a hung server or a cut network looks: connections stay open, nothing answers. */
  freeze(): void;
  /** Lets a frozen server go on (SIGCONT). */
  thaw(): void;
  remove(): void;
}

/** The postmaster of a data dir and every process it started. */
function serverProcesses(data: string): number[] {
  const main = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = spawnSync('pgrep', ['-P', String(main)], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean)
    .map(Number);
  return [main, ...children];
}

function signalAll(data: string, signal: NodeJS.Signals): void {
  for (const pid of serverProcesses(data)) {
    try {
      process.kill(pid, signal);
    } catch {
      /* ended meanwhile */
    }
  }
}

function asPostgres(cmd: string, args: string[]): void {
  const root = process.getuid?.() === 0;
  const r = root ? spawnSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8' }) : spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${path.basename(cmd)} failed (${r.status}): ${r.stderr || r.stdout}`);
}

export async function startPostgres(): Promise<Postgres> {
  const dir = mkdtempSync(path.join(tmpdir(), 'xeo-pg-'));
  const data = path.join(dir, 'data');
  mkdirSync(data);
  if (process.getuid?.() === 0) {
    const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    chownSync(dir, Number(id.stdout), Number(gid.stdout));
    chownSync(data, Number(id.stdout), Number(gid.stdout));
  }
  const port = await freePort();
  asPostgres(path.join(BIN, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  const start = () => asPostgres(path.join(BIN, 'pg_ctl'), ['-D', data, '-l', path.join(dir, 'postgres.log'), '-w', '-t', '60', 'start', '-o', options]);
  const stop = () => asPostgres(path.join(BIN, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']);
  start();
  let n = 0;
  return {
    port,
    database() {
      const name = `xeo_${++n}`;
      asPostgres(path.join(BIN, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', name]);
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    stop,
    start,
    freeze: () => signalAll(data, 'SIGSTOP'),
    thaw: () => signalAll(data, 'SIGCONT'),
    remove() {
      try {
        signalAll(data, 'SIGCONT');
      } catch {
        /* not running */
      }
      try {
        stop();
      } catch {
        /* already stopped */
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
