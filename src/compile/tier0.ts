// Tier 0: encodes a Program for the block VM of kernels/vm.ts (the wire format is described there).
// The program is checked and reduced to its canonical form (dead instructions dropped); registers
// are then mapped onto scratch slots, a slot being reused once its register is no longer read, so
// the VM's working set stays small (a few blocks) however long the program. Constants get slots of
// their own, filled once per run; the output register is written straight into the output array.
import { canonical, checkProgram, opcode, isUnary, isBinary, isReducer, type Instr, type Program } from './program.js';

export const VM_MAGIC = 0x30564d58;
/** VM-internal opcode (not in OPCODES): copy a register, for a program whose output is an input. */
export const OP_COPY = 128;
/** The VM's median sorts the values per pixel (a sorting network); more arguments than this are refused. */
export const MAX_MEDIAN_ARGS = 256;

const f32bits = (() => {
  const f = new Float32Array(1);
  const i = new Int32Array(f.buffer);
  return (x: number): number => {
    f[0] = x;
    return i[0];
  };
})();
const f64words = (() => {
  const f = new Float64Array(1);
  const i = new Int32Array(f.buffer); // little-endian, as wasm memory
  return (x: number): [number, number] => {
    f[0] = x;
    return [i[0], i[1]];
  };
})();

/**
 * A comparator network sorting n values (Batcher's merge exchange, Knuth's Algorithm 5.2.2M, for
 * any n): pairs i < j, after which position i holds the smaller value.
 */
export function sortingNetwork(n: number): [number, number][] {
  const pairs: [number, number][] = [];
  if (n < 2) return pairs;
  const t = Math.ceil(Math.log2(n));
  for (let p = 1 << (t - 1); p > 0; p >>= 1) {
    let q = 1 << (t - 1);
    let r = 0;
    let d = p;
    for (;;) {
      for (let i = 0; i < n - d; i++) if ((i & p) === r) pairs.push([i, i + d]);
      if (q === p) break;
      d = q - p;
      q >>= 1;
      r = p;
    }
  }
  return pairs;
}

function operands(ins: Instr): number[] {
  if ('args' in ins) return ins.args;
  if ('c' in ins) return [ins.c, ins.t, ins.f];
  if ('b' in ins) return [ins.a, ins.b];
  if ('a' in ins) return [ins.a];
  return [];
}

/** The program as the VM's instruction table (i32 words; f32/f64 immediates as their bits). */
export function encodeProgram(p: Program): Int32Array {
  checkProgram(p);
  const q = canonical(p);
  const nIn = q.inputs;
  const code = q.code;
  const nRegs = nIn + code.length;
  const OUT = -1;
  // Last instruction reading each register (-1: never read).
  const lastUse = new Int32Array(nRegs).fill(-1);
  code.forEach((ins, k) => {
    for (const r of operands(ins)) lastUse[r] = k;
  });
  // Slot of each instruction's register (OUT for the output).
  const slotOf = new Int32Array(nRegs).fill(-2);
  const permanent = new Set<number>();
  const free: number[] = [];
  let nSlots = 0;
  let maxArgs = 0;
  code.forEach((ins, k) => {
    const r = nIn + k;
    if (ins.op === 'const') {
      if (r === q.output) slotOf[r] = OUT;
      else {
        slotOf[r] = nSlots++;
        permanent.add(r);
      }
      return;
    }
    if ('args' in ins) {
      if (ins.op === 'median' && ins.args.length > MAX_MEDIAN_ARGS) throw new Error(`median over ${ins.args.length} values: tier 0 takes at most ${MAX_MEDIAN_ARGS}`);
      maxArgs = Math.max(maxArgs, ins.args.length);
    }
    // Registers read for the last time here give their slots back first: the result may take one.
    for (const o of new Set(operands(ins))) {
      if (o >= nIn && o !== q.output && !permanent.has(o) && lastUse[o] === k) free.push(slotOf[o]);
    }
    if (r === q.output) slotOf[r] = OUT;
    else {
      slotOf[r] = free.length > 0 ? free.pop()! : nSlots++;
      if (lastUse[r] === -1) free.push(slotOf[r]);
    }
  });
  const outId = nIn + nSlots;
  const id = (r: number): number => (r < nIn ? r : slotOf[r] === OUT ? outId : nIn + slotOf[r]);
  const words: number[] = [VM_MAGIC, nIn, nSlots, 0, maxArgs];
  let nInstr = 0;
  code.forEach((ins, k) => {
    const dst = id(nIn + k);
    const op = opcode(ins.op);
    nInstr++;
    if (ins.op === 'const') words.push(op, dst, f32bits(ins.value));
    else if (ins.op === 'clip') words.push(op, dst, id(ins.a), f32bits(ins.min), f32bits(ins.max));
    else if (ins.op === 'linscale') words.push(op, dst, id(ins.a), ...f64words(ins.inMin), ...f64words(ins.inMax), ...f64words(ins.outMin), ...f64words(ins.outMax));
    else if (ins.op === 'if') words.push(op, dst, id(ins.c), id(ins.t), id(ins.f));
    else if (ins.op === 'median') {
      const net = sortingNetwork(ins.args.length);
      words.push(op, dst, ins.args.length, ...ins.args.map(id), net.length);
      for (const [i, j] of net) words.push(i * 16, j * 16);
    } else if (isReducer(ins.op) && 'args' in ins) words.push(op, dst, ins.args.length, ...ins.args.map(id));
    else if (isBinary(ins.op) && 'b' in ins) words.push(op, dst, id(ins.a), id(ins.b));
    else if (isUnary(ins.op) && 'a' in ins) words.push(op, dst, id(ins.a));
    else throw new Error(`tier 0 cannot encode ${JSON.stringify(ins)}`);
  });
  if (q.output < nIn) {
    words.push(OP_COPY, outId, q.output);
    nInstr++;
  }
  words[3] = nInstr;
  return Int32Array.from(words);
}
