// Item searches of STAC API collections run on the main thread (stac-collections.ts), where one
// cache and one search under way serve every engine thread. Each thread gets a MessagePort to it
// when spawned; its loads call searchOverPort's function like a local one.
import { log } from '../core/log.js';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { ApiError, errorFromData, errorToData, type ErrorData } from '../core/errors.js';
import type { ItemMeta, RemoteSearch } from '../core/catalog.js';

/** A search; `asker` stands for the engine thread that asked (its port), so what is read ahead reaches each thread once. */
export type SearchFn = (req: RemoteSearch, asker?: object) => Promise<ItemMeta[]>;

/** A port for a new engine thread (to pass in workerData and transferList) whose searches `fn` answers. */
export function searchPortFor(fn: SearchFn): MessagePort {
  const { port1, port2 } = new MessageChannel();
  port1.on('message', (m: { id: number; req: RemoteSearch }) => {
    fn(m.req, port1).then(
      (items) => port1.postMessage({ id: m.id, ok: true, items }),
      (e) => {
        const err = e instanceof ApiError ? e : null;
        if (!err) log.error('a STAC search failed', { err: e });
        port1.postMessage({ id: m.id, ok: false, error: errorToData(err ?? new ApiError('Internal')) });
      },
    );
  });
  // The thread's end closes port2; port1 must not keep the process alive meanwhile.
  port1.unref();
  return port2;
}

/** The search function of an engine thread, over its port. */
export function searchOverPort(port: MessagePort): SearchFn {
  let next = 1;
  const waiting = new Map<number, { resolve(items: ItemMeta[]): void; reject(e: unknown): void }>();
  port.on('message', (m: { id: number; ok: boolean; items?: ItemMeta[]; error?: ErrorData }) => {
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (m.ok) w.resolve(m.items!);
    else w.reject(errorFromData(m.error!));
  });
  port.unref();
  return (req) =>
    new Promise<ItemMeta[]>((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      port.postMessage({ id, req });
    });
}
