// Reads a request body from uWS. uWS delivers chunks only to a handler attached during the request
// callback, so the reader is attached at dispatch and buffers until the handler asks for the body,
// either whole (JSON, size-limited) or as a stream that pauses the socket when the consumer lags.
import type { HttpResponse } from 'uWebSockets.js';
import { ApiError, RequestAborted } from '../core/errors.js';

const HIGH_WATER = 1 << 20;

export class BodyReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private received = 0;
  private ended = false;
  private failure: Error | null = null;
  private paused = false;
  private wake: (() => void) | null = null;
  private highWater = HIGH_WATER;
  /** While draining: the byte count up to which the rest of the body is read and dropped. */
  private drainUntil = -1;

  constructor(
    private readonly res: HttpResponse,
    readonly limit: number,
  ) {
    res.onData((ab, isLast) => this.onChunk(ab, isLast));
  }

  get bytesReceived(): number {
    return this.received;
  }

  /** The whole body has arrived (so the connection can be reused after answering). */
  get complete(): boolean {
    return this.ended;
  }

  private onChunk(ab: ArrayBuffer, isLast: boolean): void {
    if (this.failure) return;
    // uWS neuters the ArrayBuffer when this callback returns: copy it.
    const chunk = Buffer.from(new Uint8Array(ab));
    this.received += chunk.length;
    if (this.received > this.limit) {
      const err = new ApiError('PayloadTooLarge', { limit: this.limit });
      err.closeConnection = true;
      this.fail(err);
      return;
    }
    if (this.drainUntil >= 0) {
      if (isLast) this.ended = true;
      this.notify();
      return;
    }
    if (chunk.length) {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
    }
    if (isLast) this.ended = true;
    else if (this.buffered >= this.highWater && !this.paused) {
      this.paused = true;
      this.res.pause();
    }
    this.notify();
  }

  /**
   * Reads again if the body ended while this reader had paused the socket. Called before every
   * answer: uWS hands over what it has already read even after a pause, so a body can end while its
   * socket is paused, and a kept-alive answer on a paused socket would leave the client's next
   * request unread until uWS's timeout resets the connection. (A body that has not ended is drained
   * first or its connection closed: resuming it here would only buffer bytes nobody reads.)
   */
  unpause(): void {
    if (!this.paused || !this.ended || this.failure instanceof RequestAborted) return;
    this.paused = false;
    this.res.resume();
  }

  /** Called when the client went away. */
  abort(): void {
    this.fail(new RequestAborted());
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.chunks = [];
    this.buffered = 0;
    this.notify();
  }

  private notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private resumeIfDrained(): void {
    if (this.paused && this.buffered < this.highWater / 2) {
      this.paused = false;
      this.res.resume();
    }
  }

  private waitForData(): Promise<void> {
    return new Promise((resolve) => (this.wake = resolve));
  }

  /**
   * Reads and drops the rest of the body, at most `max` more bytes (and never beyond `limit`).
   * Resolves true when the body ended, false when it was too long or the client went away.
   */
  async drain(max: number): Promise<boolean> {
    this.drainUntil = this.received + max;
    this.chunks = [];
    this.buffered = 0;
    if (this.paused) {
      this.paused = false;
      this.res.resume();
    }
    while (!this.ended && !this.failure && this.received <= this.drainUntil) await this.waitForData();
    return this.ended && !this.failure;
  }

  /** The whole body, at most `limit` bytes. */
  async all(): Promise<Buffer> {
    this.highWater = Infinity;
    this.resumeIfDrained();
    while (!this.ended && !this.failure) await this.waitForData();
    if (this.failure) throw this.failure;
    const out = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    this.chunks = [];
    this.buffered = 0;
    return out;
  }

  /** The body in pieces; the socket is paused while more than 1 MiB waits unread. */
  async *stream(): AsyncGenerator<Buffer> {
    for (;;) {
      if (this.failure) throw this.failure;
      if (this.chunks.length) {
        // Whatever has arrived, as one piece: a client sending tiny chunks (a 2 MB upload in
        // 7-byte chunks) must not cost a step, a write and an Array.shift over a long queue per
        // chunk, which grew quadratically and held the event loop for seconds.
        const chunk = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
        this.chunks = [];
        this.buffered = 0;
        this.resumeIfDrained();
        yield chunk;
        continue;
      }
      if (this.ended) return;
      await this.waitForData();
    }
  }
}
