// kill -9 of the server in the middle of writes, then a restart on the same data dir: SQLite is
// consistent, no partial file is visible, and nothing the server acknowledged is lost. (A kill in
// the middle of a batch job is in jobs tests.)
import { describe, it, expect, afterAll } from 'vitest';
import path from 'node:path';
import { readdirSync } from 'node:fs';
import Database from 'better-sqlite3';
import { startServer, http, removeDir, addUser, login, tempDir, type TestServer } from './helpers.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

async function kill9(s: TestServer): Promise<void> {
  const exited = new Promise((r) => s.proc.once('exit', r));
  s.proc.kill('SIGKILL');
  await exited;
}

function integrity(dataDir: string): string {
  const db = new Database(path.join(dataDir, 'xeo.sqlite'));
  try {
    return db.pragma('integrity_check', { simple: true }) as string;
  } finally {
    db.close();
  }
}

describe('kill -9 during writes', () => {
  it('leaves the old file when an upload is cut off, and no temp file anywhere', async () => {
    const dir = tempDir();
    dirs.push(dir);
    let s = await startServer({}, dir);
    addUser(dir, 'alice', 'pa');
    let token = await login(s, 'alice', 'pa');
    const old = Buffer.alloc(100_000, 7);
    expect((await http('PUT', `${s.base}/files/data/a.bin`, { token, body: old })).status).toBe(200);
    // A 64 MB upload sent slowly; the server dies after a few megabytes.
    let sent = 0;
    async function* slowBody() {
      const chunk = Buffer.alloc(256 * 1024, 1);
      for (let i = 0; i < 256; i++) {
        sent += chunk.length;
        yield chunk;
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    const upload = http('PUT', `${s.base}/files/data/a.bin`, { token, body: slowBody(), headers: { 'content-length': String(64 * 1024 * 1024) } }).catch((e) => e);
    while (sent < 4 * 1024 * 1024) await new Promise((r) => setTimeout(r, 10));
    await kill9(s);
    expect(await upload).toBeInstanceOf(Error);
    expect(integrity(dir)).toBe('ok');

    s = await startServer({}, dir);
    token = await login(s, 'alice', 'pa');
    const list = (await http('GET', `${s.base}/files`, { token })).json.files;
    expect(list.map((f: any) => [f.path, f.size])).toEqual([['data/a.bin', old.length]]);
    expect((await http('GET', `${s.base}/files/data/a.bin`, { token })).body.equals(old)).toBe(true);
    // The cut-off write's temp file is gone after the restart.
    expect(readdirSync(path.join(dir, 'tmp'))).toEqual([]);
    await s.stop();
  });

  it('keeps every stored process and service it acknowledged before the kill, complete', async () => {
    const dir = tempDir();
    dirs.push(dir);
    let s = await startServer({}, dir);
    addUser(dir, 'alice', 'pa');
    let token = await login(s, 'alice', 'pa');
    const acknowledged = new Map<string, number>();
    const services: string[] = [];
    let stop = false;
    // Writers in a loop: each PUT carries its number in the graph, so what comes back can be checked.
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const id = `p${w}_${i % 20}`;
        const graph = { a: { process_id: 'add', arguments: { x: w, y: i }, result: true } };
        // while the store fails, requests may fail in any way: only acknowledged writes are checked
        const r = await http('PUT', `${s.base}/process_graphs/${id}`, { token, body: JSON.stringify({ process_graph: graph, description: `write ${i}` }) }).catch(() => null);
        if (r?.status === 200) acknowledged.set(id, i);
        // while the store fails, requests may fail in any way: only acknowledged writes are checked
        const c = await http('POST', `${s.base}/services`, { token, body: JSON.stringify({ type: 'XYZ', process: { process_graph: graph } }) }).catch(() => null);
        if (c?.status === 201) services.push(c.headers['xeo-identifier']);
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    await new Promise((r) => setTimeout(r, 700));
    await kill9(s);
    stop = true;
    await Promise.all(writers);
    expect(acknowledged.size).toBeGreaterThan(5);
    expect(integrity(dir)).toBe('ok');

    s = await startServer({}, dir);
    token = await login(s, 'alice', 'pa');
    for (const [id, i] of acknowledged) {
      const r = await http('GET', `${s.base}/process_graphs/${id}`, { token });
      expect(r.status, `${id} was acknowledged`).toBe(200);
      // The last acknowledged write, or a later one that was written but not yet answered.
      const got = Number(/write (\d+)/.exec(r.json.description)![1]);
      expect(got).toBeGreaterThanOrEqual(i);
      expect(r.json.process_graph.a.arguments.y).toBe(got);
    }
    for (const id of services) expect((await http('GET', `${s.base}/services/${id}`, { token })).status).toBe(200);
    await s.stop();
  });
});
