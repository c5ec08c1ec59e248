// A TCP proxy of our own on loopback, for the tests and benches that need a server far away or a
// server that stops answering: every chunk is forwarded after `delayMs` in each direction (a round
// trip costs twice that), in order; `hold()` stops forwarding altogether (a hung server, a cut
// network: connections stay open, nothing arrives) until `release()`.
import net from 'node:net';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

export interface DelayProxy {
  port: number;
  /** Address of the proxy, for a URL in place of the server's. */
  host: string;
  /** Delay of each direction, ms; may change while connections are open. */
  delayMs: number;
  /** Stops forwarding in both directions: bytes wait in the proxy. */
  hold(): void;
  /** Forwards again, what waited first. */
  release(): void;
  close(): Promise<void>;
}

export async function startDelayProxy(target: { host: string; port: number }, delayMs = 0): Promise<DelayProxy> {
  const sockets = new Set<net.Socket>();
  let held = false;
  /** Forwarders waiting for release(). */
  const waiting: (() => void)[] = [];

  /** Forwards `from` to `to`, each chunk `delayMs` later than it came, never out of order. */
  const pipe = (from: net.Socket, to: net.Socket) => {
    let last = 0;
    from.on('data', (chunk) => {
      const send = () => {
        if (held) return void waiting.push(send);
        if (!to.destroyed) to.write(chunk);
      };
      // Each chunk leaves at its own arrival + delay, and never before the one before it.
      const due = Math.max(performance.now() + proxy.delayMs, last);
      last = due;
      const wait = due - performance.now();
      if (wait <= 0 && !held) send();
      else setTimeout(send, Math.max(0, wait));
    });
    from.on('end', () => {
      const end = () => {
        if (held) return void waiting.push(end);
        to.end();
      };
      setTimeout(end, Math.max(0, last - performance.now()));
    });
  };

  const server = net.createServer((client) => {
    client.setNoDelay(true);
    const upstream = net.connect(target.port, target.host);
    upstream.setNoDelay(true);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    pipe(client, upstream);
    pipe(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: DelayProxy = {
    port: (server.address() as net.AddressInfo).port,
    host: '127.0.0.1',
    delayMs,
    hold() {
      held = true;
    },
    release() {
      held = false;
      for (const f of waiting.splice(0)) f();
    },
    async close() {
      proxy.release();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}

/**
 * The same proxy on a thread of its own, so the load of a bench running in this process (its
 * clients, its event loop) does not delay the traffic more than asked.
 */
export async function startDelayProxyThread(target: { host: string; port: number }, delayMs: number): Promise<{ port: number; host: string; close(): Promise<void> }> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { delayProxy: { target, delayMs } } });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', (m: { port: number }) => resolve(m.port));
    worker.once('error', reject);
  });
  return { port, host: '127.0.0.1', close: () => worker.terminate().then(() => {}) };
}

if (!isMainThread && (workerData as { delayProxy?: unknown } | null)?.delayProxy) {
  const { target, delayMs } = (workerData as { delayProxy: { target: { host: string; port: number }; delayMs: number } }).delayProxy;
  void startDelayProxy(target, delayMs).then((p) => parentPort!.postMessage({ port: p.port }));
}
