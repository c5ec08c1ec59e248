// One deflate thread of a job (deflate-threads.ts): deflates the tiles it is sent, one at a time,
// from the sender's shared tile buffers, and reads and inflates blocks of local files, those
// first. The answer's own buffer moves to the sender, so nothing is copied and nothing waits here
// for the garbage collector.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { parentPort, receiveMessageOnPort } from 'node:worker_threads';
import { deflateSync, inflateSync } from 'node:zlib';
import type { DeflateAnswer, DeflateAsk, InflateAsk } from './deflate-threads.js';
import { fileIdentity } from '../core/file-identity.js';
import { BLOCK_SLACK, inflateRoom } from '../core/inflate-room.js';
import { undoPredictor16 } from '../wasm/kernels.js';

/** Room for any deflated tile in one output buffer: zlib's bound (deflateBound) with margin. */
const outputRoom = (n: number) => n + (n >>> 10) + 64;

/**
 * The memory of zlib's answer when the answer starts it and fills all but `slack` bytes of it:
 * that buffer goes, the rest of it unread. Otherwise (small answers may lie in memory zlib or
 * Buffer share between calls, slabs of 64 KiB and less) a copy.
 */
function ownBuffer(out: Buffer, slack: number): ArrayBuffer {
  const whole = out.byteOffset === 0 && out.buffer instanceof ArrayBuffer && out.buffer.byteLength - out.length <= slack && out.buffer.byteLength > 65536;
  return whole ? out.buffer : Uint8Array.from(out).buffer;
}

function deflateTile(m: DeflateAsk): { data: ArrayBuffer; length: number } {
  const room = outputRoom(m.length);
  const out = deflateSync(Buffer.from(m.tile, m.offset, m.length), { level: m.level, memLevel: m.memLevel, chunkSize: room });
  return { data: ownBuffer(out, room - out.length), length: out.length };
}

/** Reads the block's bytes (opened and closed here: a thread that ends holds no file). */
function readBlock(m: InflateAsk): Buffer {
  const raw = Buffer.allocUnsafeSlow(m.length);
  const fd = openSync(m.file, 'r');
  try {
    if (fileIdentity(fstatSync(fd)) !== m.identity) throw new Error(`${m.file} is no longer the file that was opened (replaced or rewritten)`);
    for (let got = 0; got < m.length;) {
      const n = readSync(fd, raw, got, m.length - got, m.offset + got);
      if (n === 0) throw new Error(`${m.file} ends inside a block (at byte ${m.offset + got})`);
      got += n;
    }
  } finally {
    closeSync(fd);
  }
  return raw;
}

function inflateBlock(m: InflateAsk): { data: ArrayBuffer; length: number } {
  const raw = readBlock(m);
  const out = inflateSync(raw, m.size > 0 ? { chunkSize: inflateRoom(m.size) } : {});
  (raw.buffer as ArrayBuffer & { transfer(n: number): ArrayBuffer }).transfer(0);
  const w = m.predictor16Width;
  if (w > 0) undoPredictor16(out, w, Math.floor(out.length / 2 / w));
  return { data: ownBuffer(out, BLOCK_SLACK), length: out.length };
}

function answer(m: DeflateAsk | InflateAsk): void {
  let answer: DeflateAnswer;
  let transfer: ArrayBuffer[] = [];
  try {
    const made = m.kind === 'inflate' ? inflateBlock(m) : deflateTile(m);
    answer = { id: m.id, ...made };
    transfer = [made.data];
  } catch (e) {
    answer = { id: m.id, error: e instanceof Error ? e.message : String(e) };
  }
  parentPort!.postMessage(answer, transfer);
}

// Tasks waiting here, in order. Before each task every message that came meanwhile is taken in,
// and a block to read goes before any tile: the job thread waits for its blocks, not for tiles.
const waiting: (DeflateAsk | InflateAsk)[] = [];
let working = false;

function work(): void {
  for (let r; (r = receiveMessageOnPort(parentPort!));) waiting.push(r.message as DeflateAsk | InflateAsk);
  const read = waiting.findIndex((t) => t.kind === 'inflate');
  const m = read >= 0 ? waiting.splice(read, 1)[0] : waiting.shift();
  if (!m) {
    working = false;
    return;
  }
  answer(m);
  setImmediate(work);
}

parentPort!.on('message', (m: DeflateAsk | InflateAsk) => {
  waiting.push(m);
  if (!working) {
    working = true;
    setImmediate(work);
  }
});
