import { createCoalescer } from './coalescer';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('createCoalescer', () => {
  it('runs a lone call at once, and merges the calls that wait behind a busy run', async () => {
    const runs: number[][] = [];
    const gate = deferred();
    const call = createCoalescer<number, number>(async (xs) => {
      runs.push(xs);
      if (runs.length === 1) await gate.promise;
      return xs.map((x) => x * 10);
    }, 1, 100);
    const first = call(1);
    const rest = [call(2), call(3), call(4)];
    expect(runs).toEqual([[1]]);
    gate.resolve();
    expect(await first).toBe(10);
    expect(await Promise.all(rest)).toEqual([20, 30, 40]);
    expect(runs).toEqual([[1], [2, 3, 4]]);
  });

  it('caps a merged run at maxBatch and keeps maxInFlight runs going', async () => {
    const runs: number[][] = [];
    let active = 0;
    let peak = 0;
    const call = createCoalescer<number, number>(async (xs) => {
      runs.push(xs);
      peak = Math.max(peak, ++active);
      await new Promise((r) => setTimeout(r, 5));
      active--;
      return xs;
    }, 2, 3);
    const out = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map((x) => call(x)));
    expect(out).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(Math.max(...runs.map((r) => r.length))).toBeLessThanOrEqual(3);
    expect(peak).toBe(2);
    expect(runs.flat().sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('rejects every call of a failed run, and later calls still run', async () => {
    let fail = true;
    const call = createCoalescer<string, string>(async (xs) => {
      if (fail) throw new Error('database went away');
      return xs;
    }, 1, 10);
    const results = await Promise.allSettled([call('a'), call('b')]);
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    fail = false;
    expect(await call('c')).toBe('c');
  });
});
