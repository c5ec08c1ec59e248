// One deflate thread of a job (deflate-threads.ts): deflates the tiles it is sent, one at a time,
// from the sender's shared tile buffers. The answer's own buffer moves to the sender, so nothing
// is copied and nothing waits here for the garbage collector.
import { parentPort } from 'node:worker_threads';
import { deflateSync } from 'node:zlib';
import type { DeflateAnswer, DeflateAsk } from './deflate-threads.js';

/** Room for any deflated tile in one output buffer: zlib's bound (deflateBound) with margin. */
const outputRoom = (n: number) => n + (n >>> 10) + 64;

parentPort!.on('message', (m: DeflateAsk) => {
  let answer: DeflateAnswer;
  let transfer: ArrayBuffer[] = [];
  try {
    const room = outputRoom(m.length);
    const out = deflateSync(Buffer.from(m.tile, m.offset, m.length), { level: m.level, memLevel: m.memLevel, chunkSize: room });
    // A large tile's answer is the start of the one output buffer zlib made for it: that buffer
    // goes, the rest of it unread. Smaller answers may lie in memory zlib or Buffer share between
    // calls (slabs of 64 KiB and less), so they are copied out.
    const whole = out.byteOffset === 0 && out.buffer.byteLength === room && room > 65536 && out.buffer instanceof ArrayBuffer;
    const own = whole ? out.buffer : Uint8Array.from(out).buffer;
    answer = { id: m.id, data: own, length: out.length };
    transfer = [own];
  } catch (e) {
    answer = { id: m.id, error: e instanceof Error ? e.message : String(e) };
  }
  parentPort!.postMessage(answer, transfer);
});
