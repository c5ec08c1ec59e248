// Where a UDF's code comes from: run_udf's `udf` is the code itself (it has a line break), an
// http(s) URL (fetched on the user's behalf through the outbound rules, without any credentials,
// bounded and cached briefly), or a path in the user's files (read by the thread that has the
// file store, over the engine thread's files port, like the STAC search bridge). A path outside
// the workspace, or a file that is not there, is run_udf's FileNotFound.
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { ApiError, ProcessException, errorFromData, errorToData, type ErrorData } from '../core/errors.js';
import { httpRequest, RemoteError } from '../data/http-client.js';
import { ON_USERS_BEHALF, OutboundRefused } from '../data/outbound.js';
import type { Files } from '../files/workspace.js';

/** Bytes of UDF code read from a URL or file at most. */
export const MAX_CODE_BYTES = 1024 * 1024;
/** How long a fetched URL's code is reused. */
const URL_TTL_MS = 5 * 60 * 1000;

export type SourceKind = 'code' | 'url' | 'path';

export function sourceKind(udf: string): SourceKind {
  if (/\r|\n/.test(udf)) return 'code';
  if (/^https?:\/\//i.test(udf)) return 'url';
  return 'path';
}

const invalid = (reason: string) => new ApiError('ProcessParameterInvalid', { process: 'run_udf', parameter: 'udf', reason });

const fetched = new Map<string, { at: number; code: Promise<string> }>();

/** The code behind a URL (outbound rules, no credentials, 1 MiB at most), reused for 5 minutes. */
export function fetchUdfUrl(url: string, signal?: AbortSignal): Promise<string> {
  const hit = fetched.get(url);
  if (hit && Date.now() - hit.at < URL_TTL_MS) return hit.code;
  const code = (async () => {
    try {
      const res = await httpRequest(url, { policy: ON_USERS_BEHALF, maxBytes: MAX_CODE_BYTES, signal, headers: { accept: 'text/plain, */*' } });
      if (res.status !== 200) throw invalid(`${url} answered HTTP ${res.status}`);
      return res.body.toString('utf8');
    } catch (e) {
      if (e instanceof OutboundRefused) throw invalid(e.message);
      if (e instanceof RemoteError) throw invalid(e.message);
      throw e;
    }
  })();
  if (fetched.size >= 64) fetched.delete(fetched.keys().next().value!);
  fetched.set(url, { at: Date.now(), code });
  code.catch(() => fetched.delete(url));
  return code;
}

/** Reads a user's file as text; answers FileNotFound (run_udf's) when it is not there or not theirs. */
export type UdfFileReader = (user: string, path: string) => Promise<string>;

/** A workspace path as run_udf defines it: `/a/b.py`, `a/b.py` and `./a/b.py` are the same file. */
export function workspacePath(p: string): string {
  return p.replace(/^(\.?\/)+/, '');
}

let reader: UdfFileReader | null = null;

/** Makes `fn` read the files of threads spawned from now on (set once at start, where the file store is). */
export function setUdfFileReader(fn: UdfFileReader | null): void {
  reader = fn;
}

/** A port for a new engine thread, or null without a reader. */
export function filesPortForThread(): MessagePort | null {
  const fn = reader;
  if (!fn) return null;
  const { port1, port2 } = new MessageChannel();
  port1.on('message', (m: { id: number; user: string; path: string }) => {
    fn(m.user, m.path).then(
      (text) => port1.postMessage({ id: m.id, ok: true, text }),
      (e) => port1.postMessage({ id: m.id, ok: false, error: errorToData(e instanceof ApiError ? e : new ApiError('Internal')) }),
    );
  });
  port1.unref();
  return port2;
}

let port: MessagePort | null = null;
let next = 1;
const waiting = new Map<number, { resolve(t: string): void; reject(e: unknown): void }>();

/** Connects this engine thread to the file reader (from its workerData). */
export function configureFilesPort(p: MessagePort | null): void {
  port = p;
  if (!p) return;
  p.on('message', (m: { id: number; ok: boolean; text?: string; error?: ErrorData }) => {
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (m.ok) w.resolve(m.text!);
    else w.reject(errorFromData(m.error!));
  });
  p.unref();
}

function readFile(user: string, path: string): Promise<string> {
  if (reader) return reader(user, path);
  const p = port;
  if (!p) return Promise.reject(new ProcessException('FileNotFound', `UDF files cannot be read in this process ('${path}')`));
  return new Promise<string>((resolve, reject) => {
    const id = next++;
    waiting.set(id, { resolve, reject });
    p.ref();
    p.postMessage({ id, user, path });
  }).finally(() => {
    if (waiting.size === 0) p.unref();
  });
}

/** The code of a run_udf `udf` argument for `user`. */
export async function udfCode(udf: unknown, user: string, signal?: AbortSignal): Promise<string> {
  if (typeof udf !== 'string' || udf.length === 0) throw invalid('the UDF is given as its code, a URL or a path in your files');
  const kind = sourceKind(udf);
  if (kind === 'code') return udf;
  if (kind === 'url') return fetchUdfUrl(udf, signal);
  return readFile(user, workspacePath(udf));
}

/** A reader over the file store of this process (the API node's workspaces, a worker's too). */
export function workspaceReader(files: Pick<Files, 'open'>): UdfFileReader {
  return async (user, path) => {
    let opened;
    try {
      opened = await files.open(user, path);
    } catch (e) {
      if (e instanceof ApiError && ['FileNotFound', 'FilePathInvalid', 'FileOperationUnsupported'].includes(e.code)) {
        throw new ProcessException('FileNotFound', `there is no file '${path}' in your workspace`);
      }
      throw e;
    }
    if (opened.size > MAX_CODE_BYTES) {
      opened.stream.destroy();
      throw invalid(`the file '${path}' is larger than ${MAX_CODE_BYTES} bytes`);
    }
    const chunks: Buffer[] = [];
    for await (const c of opened.stream) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };
}
