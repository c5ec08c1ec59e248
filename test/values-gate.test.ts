// The memory bound of a compute thread drawing several tiles at once (src/engine/values-gate.ts):
// loads pass while together they hold no more than one load may, one alone always passes, a run
// that holds values never waits, waiters pass oldest first, and an aborted waiter leaves the line.
import { describe, it, expect } from 'vitest';
import { ValuesGate } from '../src/engine/values-gate.js';

/** Whether a promise has settled after the microtasks queued so far have run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('the values gate of tiles drawn at once', () => {
  it('lets loads through while they fit together, and one alone even when larger than the limit', async () => {
    const g = new ValuesGate();
    expect(await settled(g.reserve(60, 100, false))).toBe(true);
    expect(await settled(g.reserve(40, 100, false))).toBe(true);
    const third = g.reserve(1, 100, false);
    expect(await settled(third)).toBe(false);
    g.release(60);
    expect(await settled(third)).toBe(true);
    g.release(40);
    g.release(1);
    expect(await settled(g.reserve(500, 100, false))).toBe(true);
  });

  it('never makes a run that holds values wait (two runs waiting for each other would hang)', async () => {
    const g = new ValuesGate();
    await g.reserve(70, 100, false);
    await g.reserve(20, 100, false);
    expect(await settled(g.reserve(50, 100, true))).toBe(true);
  });

  it('lets waiters through oldest first: a small load does not overtake a large one', async () => {
    const g = new ValuesGate();
    await g.reserve(90, 100, false);
    const order: string[] = [];
    const big = g.reserve(80, 100, false).then(() => order.push('big'));
    const small = g.reserve(5, 100, false).then(() => order.push('small'));
    expect(await settled(small)).toBe(false);
    g.release(90);
    await Promise.all([big, small]);
    expect(order).toEqual(['big', 'small']);
  });

  it('takes an aborted waiter out of the line, and the next one passes', async () => {
    const g = new ValuesGate();
    await g.reserve(90, 100, false);
    const ac = new AbortController();
    const aborted = g.reserve(50, 100, false, ac.signal);
    const next = g.reserve(10, 100, false);
    ac.abort(new Error('gone'));
    await expect(aborted).rejects.toThrow('gone');
    expect(await settled(next)).toBe(true);
  });
});
