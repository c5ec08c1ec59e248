// Users' files for engine threads: a graph that reads a user's uploaded file (load_uploaded_files)
// runs on a compute or job thread, while the file store (the disk or the bucket) is the main
// thread's. Each thread gets a MessagePort to the main thread's reader when spawned (as item
// searches do, data/stac-search-bridge.ts); the bytes come back transferred, not copied.
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { ApiError, errorFromData, errorToData, type ErrorData } from '../core/errors.js';
import type { UserFileInfo, UserFiles } from '../core/run-context.js';

export interface FilesHost {
  /** Size and date of a user's file; null when there is none (or it is a folder). */
  stat(userId: string, path: string): Promise<UserFileInfo | null>;
  /** The bytes of a user's file (its size checked against `maxBytes` by the caller first). */
  read(userId: string, path: string, maxBytes: number): Promise<Uint8Array>;
  /** The model file a finished batch job of the user saved (load_ml_model by job id); absent without a job store. */
  jobModel?(userId: string, jobId: string, maxBytes: number): Promise<Uint8Array>;
}

type Request = { id: number; op: 'stat' | 'read' | 'jobModel'; userId: string; path: string; maxBytes?: number };

/** A port for a new engine thread (to pass in workerData and transferList) whose file requests `h` answers. */
export function filesPortFor(h: FilesHost): MessagePort {
  const { port1, port2 } = new MessageChannel();
  port1.on('message', (m: Request) => {
    const done = (p: Promise<unknown>) =>
      p.then(
        (value) => {
          if (value instanceof Uint8Array) {
            // The answer's bytes are handed over: copy only when they share a larger buffer.
            const own = value.byteOffset === 0 && value.byteLength === value.buffer.byteLength ? value : value.slice();
            port1.postMessage({ id: m.id, ok: true, value: own }, [own.buffer as ArrayBuffer]);
          } else port1.postMessage({ id: m.id, ok: true, value });
        },
        (e) => {
          const err = e instanceof ApiError ? e : null;
          if (!err) console.error('[xeo] reading a user file failed:', e);
          port1.postMessage({ id: m.id, ok: false, error: errorToData(err ?? new ApiError('StorageFailure')) });
        },
      );
    if (m.op === 'jobModel') {
      // The path is the job id here. Both outcomes are answered on the port by done() itself.
      void done(h.jobModel ? h.jobModel(m.userId, m.path, m.maxBytes ?? 0) : Promise.reject(new ApiError('JobNotFound', { identifier: m.path })));
      return;
    }
    // Both outcomes are answered on the port by done() itself.
    void done(m.op === 'stat' ? h.stat(m.userId, m.path) : h.read(m.userId, m.path, m.maxBytes ?? 0));
  });
  port1.unref();
  return port2;
}

/** The file reader of an engine thread, over its port: bound to a user per run. */
export function filesOverPort(port: MessagePort): (userId: string) => UserFiles {
  let next = 1;
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
  port.on('message', (m: { id: number; ok: boolean; value?: unknown; error?: ErrorData }) => {
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (m.ok) w.resolve(m.value);
    else w.reject(errorFromData(m.error!));
  });
  port.unref();
  const ask = <T>(req: Omit<Request, 'id'>) =>
    new Promise<T>((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve: resolve, reject });
      port.postMessage({ id, ...req });
    });
  return (userId) => ({
    owner: userId,
    stat: (path) => ask<UserFileInfo | null>({ op: 'stat', userId, path }),
    read: (path, maxBytes) => ask<Uint8Array>({ op: 'read', userId, path, maxBytes }),
    jobModel: (jobId, maxBytes) => ask<Uint8Array>({ op: 'jobModel', userId, path: jobId, maxBytes }),
  });
}

/** The host reading from users' workspaces. */
export function workspaceFilesHost(ws: { stat: FilesHost['stat']; readAll(userId: string, path: string, maxBytes: number): Promise<Uint8Array> }, jobModel?: FilesHost['jobModel']): FilesHost {
  return { stat: (u, p) => ws.stat(u, p), read: (u, p, max) => ws.readAll(u, p, max), ...(jobModel ? { jobModel } : {}) };
}
