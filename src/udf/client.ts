// An engine thread's side of the UDF host (host-thread.ts): runs Python calls and compiles
// AssemblyScript UDFs over the thread's MessagePort. A call leases an interpreter, writes the
// cube's values into its in.bin from where they lie (kernel memory included), runs, and reads the
// answer from its out.bin straight into a plane of the arena: the port carries small messages only.
import { closeSync, constants as fsConstants, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { ApiError, errorFromData, RequestAborted } from '../core/errors.js';
import { plane } from '../wasm/kernels.js';
import { addStage } from '../core/stages.js';
import type { CallSpec, FromHost, HostLink, RunnerReply, ToHost, UdfLogEntry } from './protocol.js';

declare module '../core/run-context.js' {
  interface EngineParts {
    /** The thread's link to the UDF runtimes, or null where none run. */
    udf: UdfLink | null;
  }
}

/** Values one Python call gets at most in a pixel-wise parent when no link says (see python-cube.ts). */
const DEFAULT_CALL_VALUES = 64 * 1024 * 1024;

/** An engine thread's connection to the UDF host, over the port it was spawned with. */
export class UdfLink {
  private nextId = 1;
  private readonly waiting = new Map<number, (m: FromHost) => void>();

  constructor(private readonly link: HostLink) {
    link.port.on('message', (m: FromHost) => {
      const w = this.waiting.get(m.id);
      if (w) {
        this.waiting.delete(m.id);
        w(m);
      }
    });
    link.port.unref();
  }

  /** The AssemblyScript compiler's version on the host. */
  get assemblyScriptVersion(): string | null {
    return this.link.asVersion ?? null;
  }

  /** Values one Python call gets at most in a pixel-wise parent (see python-cube.ts). */
  get maxCallValues(): number {
    return this.link.callValues ?? DEFAULT_CALL_VALUES;
  }

  private ask(msg: ToHost, signal?: AbortSignal): Promise<FromHost> {
    const l = this.link;
    const waiting = this.waiting;
    return new Promise<FromHost>((resolve, reject) => {
      const onAbort = () => {
        if (!waiting.delete(msg.id)) return;
        l.port.postMessage({ type: 'cancel', id: msg.id } satisfies ToHost);
        reject(signal?.reason ?? new RequestAborted());
      };
      if (signal?.aborted) return reject(signal.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      waiting.set(msg.id, (m) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(m);
      });
      l.port.ref();
      l.port.postMessage(msg);
    }).finally(() => {
      if (waiting.size === 0) l.port.unref();
    });
  }

  /** Runs one Python call for `user` on `values` (a cube laid out as spec.shape), or on spec.json. */
  async callPython(user: string, timeoutMs: number, spec: CallSpec, values: Float32Array | null, signal?: AbortSignal, version: string | null = null): Promise<PythonAnswer> {
    const id = this.nextId++;
    const leased = await this.ask({ type: 'lease', id, user, timeoutMs, version }, signal);
    if (leased.type !== 'leased') throw new ApiError('Internal');
    if (!leased.ok) throw errorFromData(leased.error);
    try {
      if (values) {
        const t0 = performance.now();
        await writeValues(path.join(leased.dir, 'in.bin'), values);
        addStage('udfData', performance.now() - t0);
      }
      const m = await this.ask({ type: 'call', id, input: values !== null, spec }, signal);
      if (m.type !== 'result') throw new ApiError('Internal');
      if (!m.ok) throw new UdfCallError(errorFromData(m.error), m.logs);
      if (!m.output) return { reply: m.reply, values: null };
      const shape = m.reply.shape ?? [];
      const n = shape.reduce((a, b) => a * b, 1);
      if (!Array.isArray(m.reply.shape) || !shape.every((s) => Number.isSafeInteger(s) && s >= 0) || m.reply.bytes !== n * 4) {
        throw new ApiError('UdfFailed', { reason: 'the UDF answered an inconsistent cube' });
      }
      const t0 = performance.now();
      const answer = await readValues(m.output, n);
      addStage('udfData', performance.now() - t0);
      return { reply: m.reply, values: answer };
    } finally {
      // Frees the interpreter (the answer read, or the call given up); nothing when it ended.
      this.link.port.postMessage({ type: 'release', id } satisfies ToHost);
    }
  }

  /** Compiled, instrumented and checked wasm of a wrapped AssemblyScript UDF (see assemblyscript.ts). */
  async compile(hash: string, source: string, userLines: number, signal?: AbortSignal): Promise<Uint8Array> {
    const m = await this.ask({ type: 'compile', id: this.nextId++, hash, source, userLines }, signal);
    if (m.type !== 'compiled') throw new ApiError('Internal');
    if (!m.ok) throw errorFromData(m.error);
    return m.wasm;
  }
}

/** The link of a run, or the failure of a process that has none (no UDF runtimes in this process). */
export function requireLink(link: UdfLink | null | undefined): UdfLink {
  if (!link) throw new ApiError('UdfFailed', { reason: 'user-defined functions do not run in this process' });
  return link;
}

/** Values one Python call gets at most with this link (the default without one). */
export const maxCallValues = (link: UdfLink | null | undefined): number => link?.maxCallValues ?? DEFAULT_CALL_VALUES;

/** Below this many bytes a file is written or read at once (a map tile's cube: a memory copy of microseconds). */
const SYNC_BYTES = 4 << 20;
/** Larger files go in this many parts at once (libuv's thread pool copies them in parallel). */
const PARTS = 4;

async function inParts(n: number, fn: (off: number, len: number) => Promise<void>): Promise<void> {
  const part = Math.ceil(n / PARTS / 4096) * 4096;
  const jobs: Promise<void>[] = [];
  for (let off = 0; off < n; off += part) jobs.push(fn(off, Math.min(part, n - off)));
  await Promise.all(jobs);
}

/**
 * Writes the values over the interpreter's in.bin from where they lie (kernel memory included),
 * keeping the file's pages from the previous call, and cuts it to length.
 */
async function writeValues(file: string, values: Float32Array): Promise<void> {
  const bytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  const flags = fsConstants.O_WRONLY | fsConstants.O_CREAT;
  if (bytes.length <= SYNC_BYTES) {
    const fd = openSync(file, flags, 0o644);
    try {
      for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off, bytes.length - off, off);
      ftruncateSync(fd, bytes.length);
    } finally {
      closeSync(fd);
    }
    return;
  }
  const fh = await open(file, flags, 0o644);
  try {
    await inParts(bytes.length, async (start, len) => {
      for (let off = start; off < start + len;) off += (await fh.write(bytes, off, start + len - off, off)).bytesWritten;
    });
    await fh.truncate(bytes.length);
  } finally {
    await fh.close();
  }
}

/** The answer's n values, read into a plane of the arena. */
async function readValues(file: string, n: number): Promise<Float32Array> {
  const out = plane(n);
  const bytes = Buffer.from(out.buffer, out.byteOffset, n * 4);
  const short = () => new ApiError('UdfFailed', { reason: 'the UDF answered fewer values than its cube has' });
  if (bytes.length <= SYNC_BYTES) {
    const fd = openSync(file, 'r');
    try {
      for (let off = 0; off < bytes.length;) {
        const k = readSync(fd, bytes, off, bytes.length - off, off);
        if (k === 0) throw short();
        off += k;
      }
    } finally {
      closeSync(fd);
    }
    return out;
  }
  const fh = await open(file, 'r');
  try {
    await inParts(bytes.length, async (start, len) => {
      for (let off = start; off < start + len;) {
        const { bytesRead } = await fh.read(bytes, off, start + len - off, off);
        if (bytesRead === 0) throw short();
        off += bytesRead;
      }
    });
  } finally {
    await fh.close();
  }
  return out;
}

export interface PythonAnswer {
  reply: RunnerReply;
  /** The answer's values (a plane of the arena in an arena scope), or null for JSON calls. */
  values: Float32Array | null;
}

/** An error of a failed call, with the UDF's logs (the caller logs them too). */
export class UdfCallError extends ApiError {
  constructor(
    readonly original: ApiError,
    readonly logs: UdfLogEntry[],
  ) {
    super('Internal', original.params, original.detail, { code: original.code, status: original.status });
    this.headers = original.headers;
    this.stacktrace = original.stacktrace;
  }
}
