// Hostile Python UDFs against the real sandbox: each is refused or stopped with a clear 400 while
// another user's map tiles keep being drawn, and nothing it does reaches the network, a file
// outside the sandbox, or another user's UDF. Limits are set low here so the stops come quickly.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expectError, http, ROOT, type TestServer } from './helpers.js';
import { useDemoServer } from './demo-data.js';
import { describeWithTool } from './system-tools.js';
import { cubeOf, hasUdfPython, load, post, result, udfChild } from './udf-helpers.js';

const { tileAt } = await import(path.join(ROOT, 'dist/src/tiles/tile-grid.js'));

let s: TestServer;
let alice: string;
let bob: string;

useDemoServer(
  {
    env: { XEO_UDF_WORKERS: '3', XEO_UDF_TIMEOUT: '4', XEO_UDF_MEMORY_BYTES: String(1024 ** 3), XEO_UDF_PRINT_BYTES: String(4 * 1024 * 1024), XEO_COMPUTE_THREADS: '2' },
    users: { alice: 'pa', bob: 'pb' },
  },
  (w) => {
    s = w.server;
    ({ alice, bob } = w.tokens);
  },
);

const apply = (code: string) => ({ l: load(), a: { process_id: 'apply', arguments: { data: { from_node: 'l' }, process: udfChild('x', code) }, result: true } });
const udf = (body: string) => `import os, sys, time, socket, signal\nimport numpy as np\n\ndef apply_datacube(cube, context):\n${body.replace(/^/gm, '    ')}\n    return cube\n`;

/** Bob's map: built-in NDVI tiles drawn (never from the cache: each tile once) all the while. */
const tiles = { served: 0, failed: [] as string[], running: true, loop: null as Promise<void> | null };

async function drawTiles(url: string): Promise<void> {
  const c = tileAt(16.745, 47.93, 17);
  for (let k = 0; tiles.running; k++) {
    const x = c.x + (k % 40) - 20;
    const y = c.y + Math.floor(k / 40) - 10;
    const r = await http('GET', url.replace('{z}', '17').replace('{x}', String(x)).replace('{y}', String(y)));
    if (r.status === 200) tiles.served++;
    else tiles.failed.push(`${r.status} ${r.text.slice(0, 200)}`);
  }
}

/** The processes named `comm` (a UDF can name its own process through /proc/self/comm). */
function named(comm: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/comm`, 'utf8').trim() === comm) out.push(Number(e));
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

describeWithTool(hasUdfPython, 'Debian python3 with numpy, pandas, xarray, scipy and bubblewrap', 'hostile Python UDFs', () => {
  beforeAll(async () => {
    const r = await post(s, bob, '/services', {
      type: 'XYZ',
      configuration: { colormap: 'ndvi', min: -0.2, max: 0.9 },
      process: { process_graph: { l: load(['B04', 'B08'], ['2024-06-21', '2024-06-22'], null), n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } }, result: true } } },
    });
    expect(r.status, r.text).toBe(201);
    const url = (await http('GET', `${s.base}/services/${r.headers['xeo-identifier']}`, { token: bob })).json.url;
    tiles.loop = drawTiles(url);
  });

  afterAll(async () => {
    tiles.running = false;
    await tiles.loop;
  });

  const refused = async (body: string, pattern: RegExp) => {
    const r = await result(s, alice, apply(udf(body)));
    expectError(r, 400, 'UdfFailed');
    expect(r.json.message, r.json.message).toMatch(pattern);
  };

  it('reading /etc/passwd finds no such file', () => refused(`print(open("/etc/passwd").read())`, /FileNotFoundError: .*'\/etc\/passwd' \(line 5 of the UDF\)/));

  it('reading the data dir finds nothing of it', async () => {
    await refused(`print(os.listdir(${JSON.stringify(s.dataDir)}))`, /FileNotFoundError/);
    await refused(`print(open(${JSON.stringify(path.join(s.dataDir, 'xeo.sqlite'))}, "rb").read(16))`, /FileNotFoundError/);
  });

  it("a socket to the server's own port reaches nothing", () =>
    refused(`s = socket.create_connection(("127.0.0.1", ${new URL(s.url).port}), timeout=2)\ns.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")`, /ConnectionRefusedError|Network is unreachable/));

  it('the network beyond is not there either', () => refused(`socket.create_connection(("1.1.1.1", 80), timeout=2)`, /OSError|Network is unreachable/));

  it('an endless loop is stopped at the time limit', () => refused(`while True:\n    pass`, /ran longer than the 4 s one call may take/));

  it('allocating far past the memory limit is a MemoryError', async () => {
    await refused(`a = np.ones(10**10)`, /MemoryError: the UDF needed more memory than the 1073741824 bytes/);
    await refused(`keep = []\nwhile True:\n    keep.append(bytearray(64 * 1024 * 1024))`, /MemoryError/);
  });

  it('a fork bomb meets the process limit, and its copies leave the interpreter working', async () => {
    await refused(`while True:\n    os.fork()`, /BlockingIOError|Resource temporarily unavailable/);
    // The forked copies of the runner neither answer for it nor end it: the next call runs as usual.
    for (let i = 0; i < 3; i++) expect((await result(s, alice, apply(udf('')))).status).toBe(200);
  });

  it('writing 1 GB to standard output is stopped at the output limit', async () => {
    await refused(`s = "x" * (1 << 20)\nfor i in range(1024):\n    sys.stdout.write(s)`, /wrote more than 4194304 bytes to its standard output/);
    await refused(`s = b"x" * (1 << 20)\nfor i in range(1024):\n    os.write(1, s)`, /wrote more than 4194304 bytes to its standard output/);
  });

  it('a wrong shape is refused, naming what the parent process needs', async () => {
    await refused(`return cube.get_array()[..., :3]`, /must keep the pixels of x and y/);
    const r = await result(s, alice, { l: load(), r: { process_id: 'reduce_dimension', arguments: { data: { from_node: 'l' }, dimension: 'bands', reducer: udfChild('data', udf('')) }, result: true } });
    expectError(r, 400, 'UdfFailed');
    expect(r.json.message).toMatch(/dimensions \(t, bands, y, x\); here \(t, y, x\) are expected/);
  });

  it('killing its parent is refused; killing itself ends its interpreter with a clear error', async () => {
    await refused(`os.kill(os.getppid(), signal.SIGKILL)`, /PermissionError/);
    await refused(`os.kill(1, signal.SIGKILL)`, /PermissionError/);
    await refused(`os.kill(os.getpid(), signal.SIGKILL)`, /interpreter was ended by SIGKILL/);
  });

  it('a UDF that never returns is ended as soon as its request is cancelled', async () => {
    /** Starts an endless UDF naming its process `comm`, and waits until it runs (its request still open). */
    const endless = async (token: string, comm: string, signal?: AbortSignal) => {
      const code = udf(`open("/proc/self/comm", "w").write("${comm}")\nwhile True:\n    pass`);
      const req = http('POST', `${s.base}/result`, { token, body: JSON.stringify({ process: { process_graph: apply(code) } }), signal });
      let pids: number[] = [];
      for (let k = 0; k < 100 && pids.length === 0; k++) {
        await new Promise((r) => setTimeout(r, 50));
        pids = named(comm);
      }
      expect(pids.length, `the endless UDF ${comm} never ran`).toBe(1);
      return { req };
    };
    // Bob's endless UDF runs first and is never cancelled: the time limit will end it. Alice's starts
    // later, so were the time limit what ends hers, bob's would have ended before.
    const kept = (await endless(bob, 'udf-kept')).req;
    const ac = new AbortController();
    const cancelled = (await endless(alice, 'udf-endless', ac.signal)).req;
    ac.abort();
    await expect(cancelled).rejects.toThrow();
    while (named('udf-endless').length) await new Promise((r) => setTimeout(r, 50));
    expect(named('udf-kept').length, 'the UDF that started earlier still runs: the cancel ended the other one').toBe(1);
    const r = await kept;
    expectError(r, 400, 'UdfFailed');
    expect(r.json.message).toMatch(/ran longer than the 4 s one call may take/);
  });

  it('after all that, alice and bob still run UDFs and the map was drawn throughout', async () => {
    for (const token of [alice, bob]) expect(cubeOf(await result(s, token, apply(udf('')))).values.length).toBe(8 * 2 * 32 * 32);
    tiles.running = false;
    await tiles.loop;
    expect(tiles.failed).toEqual([]);
    expect(tiles.served).toBeGreaterThan(20);
  });
});

// With one interpreter in all, alice's call needs the one bob used: the pool must end his and start
// a fresh one, so the case is met every time instead of when the pool happens to choose it.
describeWithTool(hasUdfPython, 'Debian python3 with numpy, pandas, xarray, scipy and bubblewrap', 'one interpreter for two users', () => {
  let one: TestServer;
  let alice1: string;
  let bob1: string;
  useDemoServer({ env: { XEO_UDF_WORKERS: '1', XEO_COMPUTE_THREADS: '1' }, users: { alice: 'pa', bob: 'pb' } }, (w) => {
    one = w.server;
    ({ alice: alice1, bob: bob1 } = w.tokens);
  });

  it("another user's interpreter, files and module are out of reach", async () => {
    const secret = await result(one, bob1, apply(`BOB_SECRET = "s3cr3t"\nopen("/tmp/bob-secret", "w").write(BOB_SECRET)\n\ndef apply_datacube(cube, context):\n    return cube\n`));
    expect(secret.status, secret.text).toBe(200);
    // Bob's interpreter keeps what his UDF left: the check below would see it there.
    const his = await result(
      one,
      bob1,
      apply(
        `import gc, os\n\ndef apply_datacube(cube, context):\n    if not (os.path.exists("/tmp/bob-secret") and any(isinstance(o, dict) and o.get("BOB_SECRET") for o in gc.get_objects())):\n        raise RuntimeError("lost bob")\n    return cube\n`,
      ),
    );
    expect(his.status, his.text).toBe(200);
    const r = await result(
      one,
      alice1,
      apply(
        `import gc, os\n\ndef apply_datacube(cube, context):\n    if os.path.exists("/tmp/bob-secret") or any(isinstance(o, dict) and o.get("BOB_SECRET") for o in gc.get_objects()):\n        raise RuntimeError("saw bob")\n    return cube\n`,
      ),
    );
    expect(r.status, r.text).toBe(200);
  });
});
