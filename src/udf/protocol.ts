// The messages of the UDF runtimes: between the Python runner in its sandbox and the UDF host
// thread (framed JSON over fds 3 and 4, see sandbox.ts), and between an engine thread and the UDF
// host thread (a MessagePort each; see host-thread.ts and client.ts). Pixels never travel in them:
// they go as raw float32 files (in.bin, out.bin) in the interpreter's I/O folder.
import type { ErrorData } from '../core/errors.js';
import type { LogLevel } from '../core/run-context.js';

/** A dimension of a cube as the runner sees it (labels null for x and y, whose coordinates come along). */
export interface WireDimension {
  name: string;
  type: string;
  labels: (string | number)[] | null;
}

/** How the parent process runs the UDF, which decides what its answer must look like. */
export type UdfMode = 'apply' | 'reduce' | 'apply_dimension' | 'neighborhood' | 'run';

/** What a call of the UDF is, without its data. */
export interface CallSpec {
  code: string;
  /** Hash of the code: the runner executes each code once and reuses its module. */
  codeId: string;
  /** A data cube (raw float32 in, raw float32 out), or plain JSON in and out. */
  kind: 'cube' | 'json';
  mode: UdfMode;
  /** The dimension of reduce_dimension / apply_dimension. */
  dimension?: string;
  dims?: WireDimension[];
  shape?: number[];
  /** The answer's dimensions in order (null: any, with y and x last). */
  expect?: string[] | null;
  /** A dimension the answer may keep with one label (a reducer that kept it), dropped then. */
  squeeze?: string;
  context: unknown;
  json?: unknown;
}

export interface RunnerRequest extends CallSpec {
  type: 'call';
  id: number;
  /** The input file inside the sandbox (/io/in.bin). */
  input?: string;
  /** CPU seconds the call may use. */
  cpuSeconds: number;
}

export interface RunnerHello {
  type: 'hello';
  python: string;
  libraries: Record<string, string>;
}

export interface UdfLogEntry {
  level: LogLevel;
  message: string;
  data?: unknown;
  code?: string;
}

export interface UdfProblem {
  /** exception: raised by the UDF; invalid: cannot run as written; result: an unusable answer; limit: a limit reached. */
  kind: 'exception' | 'invalid' | 'result' | 'limit';
  message: string;
  exception?: string;
  line?: number | null;
  stacktrace?: string;
}

export interface RunnerReply {
  type: 'result';
  id: number;
  ok: boolean;
  dims?: string[];
  shape?: number[];
  labels?: ((string | number)[] | null)[];
  bytes?: number;
  json?: unknown;
  error?: UdfProblem;
  logs: UdfLogEntry[];
  /** Milliseconds the UDF's own code took (its function, not the data's way there and back). */
  userMs?: number;
}

// ---------------------------------------------------------------------------------------------
// Engine thread <-> UDF host thread

export type ToHost =
  /** An interpreter of `user` for one call: answered with its I/O folder, where the caller writes in.bin. */
  | { type: 'lease'; id: number; user: string; timeoutMs: number; version: string | null }
  /** Runs the leased call; `input` says whether in.bin holds the cube (raw float32). */
  | { type: 'call'; id: number; input: boolean; spec: CallSpec }
  /** The caller gave up (its request was cancelled): the interpreter is ended at once. */
  | { type: 'cancel'; id: number }
  /** The caller has read the answer file (or gave up before the call): the interpreter is free again. */
  | { type: 'release'; id: number }
  /** Compiles an AssemblyScript UDF (source already wrapped by assemblyscript.ts) to checked wasm. */
  | { type: 'compile'; id: number; hash: string; source: string; userLines: number };

export type FromHost =
  | { type: 'leased'; id: number; ok: true; dir: string }
  | { type: 'leased'; id: number; ok: false; error: ErrorData }
  | { type: 'result'; id: number; ok: true; reply: RunnerReply; output: string | null }
  | { type: 'result'; id: number; ok: false; error: ErrorData; logs: UdfLogEntry[] }
  | { type: 'compiled'; id: number; ok: true; wasm: Uint8Array }
  | { type: 'compiled'; id: number; ok: false; error: ErrorData };

/** What the UDF host knows of the runtimes, for GET /udf_runtimes. */
export interface RuntimeInfo {
  python: { available: true; version: string; libraries: Record<string, string> } | { available: false; missing: string };
  assemblyscript: { version: string };
}

/** What an engine thread gets to reach the UDF runtimes (in its workerData; the ports in its transferList). */
export interface HostLink {
  /** To the UDF host thread. */
  port: import('node:worker_threads').MessagePort;
  /** Values one Python call gets at most in a pixel-wise parent (XEO_UDF_CALL_VALUES). */
  callValues: number;
  /** The AssemblyScript compiler's version (what run_udf's `version` may name). */
  asVersion: string;
}
