// Compiles AssemblyScript UDFs for every engine thread of the process (it runs in the UDF host
// thread): the user's source, wrapped with our driver (assemblyscript.ts), goes through the same
// compiler as our kernels (asc, in an asc-worker.ts thread of its own so a compile never blocks
// the host), bounded in time (the compiler thread is ended past COMPILE_SECONDS). The module is
// then instrumented with a fuel counter at every loop header and function entry (binaryen's
// log-execution pass, its call replaced by a counter that calls the host only every FUEL steps),
// so a UDF that never returns is stopped by its deadline; and checked: its own memory (never the
// kernels'), no imports but abort, seed, trace and the fuel callback. Compiled modules are kept by
// the hash of what was compiled, in memory and on disk beside the kernels.
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ApiError } from '../core/errors.js';
import { WORKER_MARKER, type CompileReply, type CompileRequest } from '../compile/asc-worker.js';
import { inspectWasm } from '../compile/tier1.js';
import { THREAD_NAMES } from '../core/thread-names.js';

/** Bytes of AssemblyScript source a UDF may have. */
export const MAX_SOURCE_BYTES = 64 * 1024;
/** Seconds one compile may take. */
export const COMPILE_SECONDS = 30;
/** Loop iterations and calls between two looks at the clock. */
export const FUEL = 1 << 22;
/** Memory of one UDF instance, 64 KiB pages (256 MiB). */
export const MAX_PAGES = 4096;

/** The imports a UDF module may have (module env). */
export const ALLOWED_IMPORTS = ['abort', 'seed', 'trace', 'fuel_out'];

/**
 * asc options of UDF modules. The stub runtime (a bump allocator without a garbage collector, so
 * no shadow stack around every call: about twice as fast per pixel as the incremental runtime)
 * suffices because an instance is dropped once its memory has grown (assemblyscript.ts).
 */
export const UDF_ASC_OPTIONS: Record<string, unknown> = {
  optimizeLevel: 3,
  shrinkLevel: 0,
  runtime: 'stub',
  exportStart: '_initialize',
  initialMemory: 2,
  maximumMemory: MAX_PAGES,
  exportRuntime: false,
  noAssert: false,
  debug: false,
};

let worker: Worker | null = null;
let nextId = 1;
const waiting = new Map<number, { resolve(b: Uint8Array): void; reject(e: Error): void }>();
let chain: Promise<unknown> = Promise.resolve();
const memory = new Map<string, Uint8Array>();

function workerFile(): URL {
  const candidates = [new URL('../compile/asc-worker.js', import.meta.url), new URL('../../dist/src/compile/asc-worker.js', import.meta.url)];
  const found = candidates.find((u) => existsSync(fileURLToPath(u)));
  if (!found) throw new Error('dist/src/compile/asc-worker.js not found (run npm run build)');
  return found;
}

function compiler(): Worker {
  if (worker) return worker;
  const w = new Worker(workerFile(), { name: THREAD_NAMES.udfCompiler, workerData: WORKER_MARKER });
  w.on('message', (m: CompileReply) => {
    const job = waiting.get(m.id);
    if (!job) return;
    waiting.delete(m.id);
    if (m.binary) job.resolve(m.binary);
    else job.reject(new Error(m.error ?? 'no answer'));
  });
  const fail = (e: Error) => {
    if (worker === w) worker = null;
    for (const [id, job] of waiting) {
      waiting.delete(id);
      job.reject(e);
    }
  };
  w.on('error', fail);
  w.on('exit', () => fail(new Error('the compiler stopped')));
  w.unref();
  worker = w;
  return w;
}

function ascCompile(source: string): Promise<Uint8Array> {
  const w = compiler();
  const id = nextId++;
  return new Promise<Uint8Array>((resolve, reject) => {
    const timer = setTimeout(() => {
      waiting.delete(id);
      worker = null;
      void w.terminate();
      reject(new ApiError('UdfInvalid', { reason: `the AssemblyScript source did not compile within ${COMPILE_SECONDS} s` }));
    }, COMPILE_SECONDS * 1000);
    waiting.set(id, {
      resolve: (b) => {
        clearTimeout(timer);
        resolve(b);
      },
      reject: (e) => {
        clearTimeout(timer);
        reject(e);
      },
    });
    w.postMessage({ id, source, options: UDF_ASC_OPTIONS, file: 'udf.ts' } satisfies CompileRequest);
  });
}

/** The first compile error of asc's output, with its line and column in the user's source. */
export function compileError(text: string, userLines: number): ApiError {
  const m = /(?:ERROR|error) (\w+): ([^\n]*)[\s\S]*?in udf\.ts\((\d+),(\d+)\)/.exec(text);
  if (!m) return new ApiError('UdfInvalid', { reason: `the AssemblyScript source does not compile: ${text.split('\n').find((l) => l.trim()) ?? 'no reason given'}` });
  const [, code, message, line, column] = m;
  if (Number(line) > userLines) {
    return new ApiError('UdfInvalid', { reason: `the AssemblyScript source does not fit its parent process (${code}: ${message}); see the signatures in the documentation` });
  }
  return new ApiError('UdfInvalid', { reason: `${code}: ${message} (line ${line}, column ${column} of the AssemblyScript source)` });
}

async function instrument(bytes: Uint8Array): Promise<Uint8Array> {
  const binaryen = (await import('binaryen')).default;
  const F = binaryen.Features;
  const m = binaryen.readBinaryWithFeatures(bytes, F.MVP | F.SignExt | F.MutableGlobals | F.NontrappingFPToInt | F.BulkMemory | F.BulkMemoryOpt);
  try {
    m.runPasses(['log-execution']);
    m.removeFunction('log_execution');
    m.addGlobal('xeo_fuel', binaryen.i32, true, m.i32.const(FUEL));
    m.addFunctionImport('xeo_fuel_out', 'env', 'fuel_out', binaryen.none, binaryen.none);
    const fuel = () => m.global.get('xeo_fuel', binaryen.i32);
    m.addFunction(
      'log_execution',
      binaryen.i32,
      binaryen.none,
      [],
      m.block(null, [
        m.global.set('xeo_fuel', m.i32.sub(fuel(), m.i32.const(1))),
        m.if(m.i32.le_s(fuel(), m.i32.const(0)), m.block(null, [m.call('xeo_fuel_out', [], binaryen.none), m.global.set('xeo_fuel', m.i32.const(FUEL))])),
      ]),
    );
    if (!m.validate()) throw new Error('the instrumented module does not validate');
    binaryen.setOptimizeLevel(3);
    binaryen.setShrinkLevel(0);
    binaryen.setAlwaysInlineMaxSize(40);
    m.optimize();
    return m.emitBinary();
  } finally {
    m.dispose();
  }
}

/** Throws unless the module has its own memory and imports only what a UDF may import. */
export function checkUdfModule(bytes: Uint8Array, exportsNeeded: string[]): void {
  const info = inspectWasm(bytes);
  for (const im of info.imports) {
    if (im.module !== 'env' || im.kind !== 0 || !ALLOWED_IMPORTS.includes(im.name)) {
      throw new ApiError('UdfInvalid', { reason: `the AssemblyScript source imports ${im.module}.${im.name}; a UDF may import nothing but the math of the standard library` });
    }
  }
  for (const name of exportsNeeded) if (!info.exports.includes(name)) throw new Error(`the UDF module does not export ${name}`);
}

/** The instrumented, checked wasm of a wrapped source (from memory, disk, or compiled now; one compile at a time). */
export function compileUdf(hash: string, source: string, userLines: number, cacheDir: string): Promise<Uint8Array> {
  const hit = memory.get(hash);
  if (hit) return Promise.resolve(hit);
  const job = chain.then(async () => {
    const again = memory.get(hash);
    if (again) return again;
    const file = path.join(cacheDir, `udf-as-${hash}.wasm`);
    let wasm: Uint8Array | null;
    try {
      wasm = new Uint8Array(await readFile(file));
      checkUdfModule(wasm, ['_initialize']);
    } catch {
      wasm = null;
    }
    if (!wasm) {
      let raw: Uint8Array;
      try {
        raw = await ascCompile(source);
      } catch (e) {
        if (e instanceof ApiError) throw e;
        throw compileError((e as Error).message, userLines);
      }
      wasm = await instrument(raw);
      checkUdfModule(wasm, ['_initialize']);
      await mkdir(cacheDir, { recursive: true });
      const tmp = `${file}.${process.pid}.tmp`;
      await writeFile(tmp, wasm);
      await rename(tmp, file);
    }
    if (memory.size >= 64) memory.delete(memory.keys().next().value!);
    memory.set(hash, wasm);
    return wasm;
  });
  // the chain only orders the compilations; each caller gets its own failure from `job`
  chain = job.catch(() => {});
  return job;
}

export async function stopUdfCompiler(): Promise<void> {
  const w = worker;
  worker = null;
  if (w) await w.terminate();
}
