// The AssemblyScript compiler for tier 1 (src/compile/tier1.ts): AssemblyScript source in, wasm bytes
// out. tier1.ts runs this file as a worker thread (new URL('./asc-worker.js', import.meta.url) from
// dist/src/compile) so that compiling (hundreds of milliseconds of Binaryen) never blocks the thread
// that runs tier 0 meanwhile; compileSource() is also callable in-thread (the fallback when the
// built worker file is missing).
//
// Protocol: the parent posts { id, source, options } (options: asc CompilerOptions, chosen by the
// parent so that an older built copy of this file still compiles as asked); the worker answers
// { id, binary, ms } or { id, error, ms }, one answer per request, in order.
import { parentPort, workerData } from 'node:worker_threads';

export interface CompileRequest {
  id: number;
  source: string;
  options: Record<string, unknown>;
  /** The source's file name in messages (default kernel.ts). */
  file?: string;
}

export interface CompileReply {
  id: number;
  binary?: Uint8Array;
  error?: string;
  ms: number;
}

/** The marker tier1.ts passes as workerData, so that only the compiler's own thread listens. */
export const WORKER_MARKER = 'xeo-asc-worker';

type Asc = typeof import('assemblyscript/asc');
let ascModule: Promise<Asc> | undefined;

/** Compiles one AssemblyScript module (file name `kernel.ts` unless named) with the given asc options. */
export async function compileSource(source: string, options: Record<string, unknown>, file = 'kernel.ts'): Promise<Uint8Array> {
  ascModule ??= import('assemblyscript/asc');
  const asc = (await ascModule).default;
  const result = await asc.compileString({ [file]: source }, options);
  if (result.error || !result.binary) {
    // asc colours its diagnostics where it believes a terminal reads them (CI=true, say): plain text here.
    const text = result.stderr
      .toString()
      .replace(/\u001b\[[0-9;]*m/g, '')
      .trim();
    throw new Error(`asc failed: ${result.error?.message ?? 'no binary'}${text ? `\n${text.slice(0, 4000)}` : ''}`);
  }
  return result.binary;
}

if (parentPort && workerData === WORKER_MARKER) {
  const port = parentPort;
  // One compile at a time, in the order asked.
  let chain: Promise<void> = Promise.resolve();
  port.on('message', (req: CompileRequest) => {
    chain = chain.then(async () => {
      const t = performance.now();
      try {
        const binary = (await compileSource(req.source, req.options, req.file)).slice();
        const reply: CompileReply = { id: req.id, binary, ms: performance.now() - t };
        port.postMessage(reply, [binary.buffer]);
      } catch (e) {
        const reply: CompileReply = { id: req.id, error: (e as Error).message ?? String(e), ms: performance.now() - t };
        port.postMessage(reply);
      }
    });
  });
}
