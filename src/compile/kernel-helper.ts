// A kernel helper thread (see kernel-threads.ts): runs bands of a tier-1 kernel on the kernel memory
// of the engine thread that started it. It blocks in Atomics.wait between jobs (no event loop: the
// memory and the modules arrive through receiveMessageOnPort), claims bands with a
// compare-exchange on the shared control words, and reports each band done.
import { receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import { HOST_IMPORTS } from './codegen.js';
import { C, claim, type HelperMessage } from './kernel-threads-protocol.js';

interface Init {
  ctrl: Int32Array;
  port: MessagePort;
  slot: number;
}

const WA = (globalThis as unknown as { WebAssembly: { Instance: new (m: object, i: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> } } }).WebAssembly;

const { ctrl, port, slot } = workerData as Init;
let memory: { buffer: ArrayBufferLike } | null = null;
let generation = -1;
const modules = new Map<number, { module: object; name: string }>();
const instances = new Map<number, (table: number, out: number, n: number, arg: number, slot: number) => void>();

function drain(): void {
  for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port)) {
    const msg = m.message as HelperMessage;
    if (msg.type === 'memory') {
      memory = msg.memory as { buffer: ArrayBufferLike };
      generation = msg.generation;
      instances.clear();
    } else modules.set(msg.id, { module: msg.module, name: msg.name });
  }
}

function kernelOf(id: number): ((table: number, out: number, n: number, arg: number, slot: number) => void) | null {
  let fn = instances.get(id);
  if (fn) return fn;
  const m = modules.get(id);
  if (!m || !memory) return null;
  const env: Record<string, unknown> = { memory };
  for (const h of HOST_IMPORTS) env[h] = Math[h];
  const run = new WA.Instance(m.module, { env }).exports[m.name];
  if (typeof run !== 'function') return null;
  fn = run as (table: number, out: number, n: number, arg: number, slot: number) => void;
  instances.set(id, fn);
  return fn;
}

function runBand(b: number): boolean {
  // The job's parameters are stable while one of its bands is unclaimed or running.
  drain();
  if (Atomics.load(ctrl, C.GEN) !== generation) return false;
  const fn = kernelOf(Atomics.load(ctrl, C.MODULE));
  if (!fn || !memory) return false;
  const nIn = Atomics.load(ctrl, C.NIN);
  const band = Atomics.load(ctrl, C.BAND);
  const n = Atomics.load(ctrl, C.N);
  const u32 = new Uint32Array(memory.buffer);
  const inTab = Atomics.load(ctrl, C.INTAB) >>> 2;
  const table = Atomics.load(ctrl, C.TABLES) + slot * nIn * 4;
  for (let j = 0; j < nIn; j++) u32[(table >>> 2) + j] = u32[inTab + j] + b * band * 4;
  fn(table, Atomics.load(ctrl, C.OUT) + b * band * 4, Math.min(band, n - b * band), Atomics.load(ctrl, C.ARG), slot);
  return true;
}

for (;;) {
  drain();
  if (Atomics.load(ctrl, C.STOP)) break;
  const w = Atomics.load(ctrl, C.CLAIM);
  const b = claim(ctrl, -1);
  if (b >= 0) {
    let ok: boolean;
    try {
      ok = runBand(b);
    } catch {
      ok = false;
    }
    // A band this thread could not run is left to the engine thread (state 2).
    Atomics.store(ctrl, C.STATE + b, ok ? 1 : 2);
    Atomics.add(ctrl, C.DONE, 1);
    Atomics.notify(ctrl, C.DONE);
    continue;
  }
  Atomics.wait(ctrl, C.CLAIM, w, 1000);
}
