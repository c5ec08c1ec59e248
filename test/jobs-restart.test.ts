// The server killed (kill -9) in the middle of a batch job, then started again on the same data:
// the job is never left `running`, it is queued again and completes, nothing of the cut run is
// visible; a job that keeps taking the server down is given up; an orderly stop queues it too.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { startServer, expectError, removeDir, addUser, login, type TestServer } from './helpers.js';
import { demoDataDir } from './demo-data.js';
import { Jobs, slowGraph } from './jobs-helpers.js';

let dataDir: string;
let s: TestServer;
let jobs: Jobs;

/** The status the database holds, read directly (the server may be dead). */
function storedStatus(id: string): string {
  const db = new Database(path.join(dataDir, 'xeo.sqlite'), { readonly: true });
  try {
    return (db.prepare('SELECT status FROM jobs WHERE id = ?').get(id) as { status: string }).status;
  } finally {
    db.close();
  }
}

async function kill9(): Promise<void> {
  const exited = new Promise((r) => s.proc.once('exit', r));
  s.proc.kill('SIGKILL');
  await exited;
}

async function restart(): Promise<void> {
  s = await startServer({ XEO_JOB_THREADS: '1' }, dataDir);
  // tokens are kept in the database: the same sign-in works after the restart
  jobs = new Jobs(s, jobs.token);
}

beforeAll(async () => {
  dataDir = await demoDataDir();
  s = await startServer({ XEO_JOB_THREADS: '1' }, dataDir);
  addUser(dataDir, 'alice', 'pa');
  jobs = new Jobs(s, await login(s, 'alice', 'pa'));
}, 180_000);
afterAll(async () => {
  await s.stop();
  removeDir(dataDir);
});

describe('a server killed in the middle of a job', () => {
  it('queues the job again on restart; it starts over and completes, and nothing of the cut run shows', async () => {
    // A quarter of the long job: it is cut at a tenth, and then run to its end.
    const id = await jobs.create(slowGraph(5));
    await jobs.start(id);
    const before = await jobs.waitFor(id, (j) => j.status === 'running' && j.progress >= 10, 120_000);
    await kill9();
    // the crash left the record as it was
    expect(storedStatus(id)).toBe('running');

    await restart();
    const after = await jobs.get(id);
    expect(['queued', 'running']).toContain(after.status);
    expect(after.progress).toBeLessThan(before.progress);
    const logs = (await jobs.logs(id)).logs;
    expect(logs).toContainEqual(expect.objectContaining({ level: 'warning', message: expect.stringMatching(/server stopped while this job ran \(run 1\).*queued again/) }));
    // nothing of the interrupted run: no results, no result files, no run files
    expectError(await jobs.call('GET', `/jobs/${id}/results`), 400, 'JobNotFinished');
    expect((await jobs.call('GET', `/jobs/${id}/results?partial=true`)).json.assets).toEqual({});
    expect(existsSync(path.join(dataDir, 'jobs', id))).toBe(false);

    const done = await jobs.waitFor(id, (j) => j.status === 'finished' || j.status === 'error', 240_000);
    expect(done.status).toBe('finished');
    const doc = (await jobs.call('GET', `/jobs/${id}/results`)).json;
    expect(doc.assets['result.tif']['proj:shape']).toEqual([4096, 4096]);
    expect(readdirSync(path.join(dataDir, 'jobs', id))).toEqual(['result.tif']);
  }, 400_000);

  it('gives a job up after it was cut short three times in one run', async () => {
    const id = await jobs.create(slowGraph());
    await jobs.start(id);
    for (let i = 1; i <= 3; i++) {
      await jobs.waitFor(id, (j) => j.status === 'running', 120_000);
      await kill9();
      await restart();
    }
    const job = await jobs.get(id);
    expect(job.status).toBe('error');
    const r = await jobs.call('GET', `/jobs/${id}/results`);
    expect(r.status).toBe(424);
    expect(r.json.message).toMatch(/stopped 3 times/);
    const warnings = (await jobs.logs(id, '?level=warning')).logs.filter((l: any) => l.level === 'warning');
    expect(warnings).toHaveLength(2);
    // started by hand, it runs again from a clean count
    await jobs.start(id);
    expect(['queued', 'running']).toContain((await jobs.get(id)).status);
    expect((await jobs.call('DELETE', `/jobs/${id}`)).status).toBe(204);
  }, 400_000);

  it('an orderly stop queues running jobs again too, without counting it against them', async () => {
    const id = await jobs.create(slowGraph());
    await jobs.start(id);
    await jobs.waitFor(id, (j) => j.status === 'running', 120_000);
    await s.stop();
    expect(storedStatus(id)).toBe('queued');
    await restart();
    const logs = (await jobs.logs(id)).logs.map((l: any) => l.message);
    expect(logs).toContainEqual(expect.stringMatching(/^The server was stopped; the job is queued again/));
    expect(logs.some((m: string) => /server stopped while this job ran/.test(m))).toBe(false);
    await jobs.waitFor(id, (j) => j.status === 'running', 60_000);
    expect((await jobs.call('DELETE', `/jobs/${id}`)).status).toBe(204);
  }, 400_000);
});
