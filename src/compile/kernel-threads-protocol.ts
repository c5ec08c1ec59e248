// The control words shared by an engine thread and its kernel helper threads (kernel-threads.ts,
// kernel-helper.ts): an Int32Array on a SharedArrayBuffer.

export const C = {
  /** The claim word: job (7 bits) << 24 | bands (12 bits) << 12 | next band (12 bits). */
  CLAIM: 0,
  /** Bands finished (by anyone) in the current job. */
  DONE: 1,
  /** Non-zero: the helpers end. */
  STOP: 2,
  MODULE: 3,
  /** Kernel memory: u32 pointers of the inputs at pixel 0. */
  INTAB: 4,
  /** Kernel memory: one input table per thread slot (slot * NIN * 4 bytes in). */
  TABLES: 5,
  OUT: 6,
  N: 7,
  /** Values per band (a multiple of 16). */
  BAND: 8,
  NIN: 9,
  /** Memory generation of the job (the helper must have that memory). */
  GEN: 10,
  /** A value handed to the kernel as is after (table, out, n), followed by the thread's slot (0 = the engine thread). */
  ARG: 11,
  /** Per band: 0 claimed or not, 1 done, 2 left to the engine thread. */
  STATE: 16,
} as const;

export const MAX_BANDS = 64;
export const CTRL_WORDS = C.STATE + MAX_BANDS;

export type HelperMessage = { type: 'memory'; memory: unknown; generation: number } | { type: 'module'; id: number; module: object; name: string };

/** Claims the next band of the current job (of job `job`, or any job with -1); -1 when none is left. */
export function claim(ctrl: Int32Array, job: number): number {
  for (;;) {
    const w = Atomics.load(ctrl, C.CLAIM);
    const count = (w >>> 12) & 0xfff;
    const next = w & 0xfff;
    if ((job >= 0 && w >>> 24 !== job) || next >= count) return -1;
    if (Atomics.compareExchange(ctrl, C.CLAIM, w, w + 1) === w) return next;
  }
}
