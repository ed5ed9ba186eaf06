import { ClaimBudget, chunks } from './claim-budget';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

test('never holds more than the limit; waiters start in arrival order as room frees', async () => {
  const budget = new ClaimBudget(10);
  const started: string[] = [];
  const finish = new Map<string, () => void>();
  let peak = 0;
  const job = (name: string, n: number): Promise<string> =>
    budget.run(n, () => {
      started.push(name);
      peak = Math.max(peak, budget.inUse);
      return new Promise<string>((r) => finish.set(name, () => r(name)));
    });
  const a = job('a', 6);
  const b = job('b', 6); // does not fit beside a
  const c = job('c', 2); // would fit, but waits behind b (arrival order)
  await tick();
  expect(started).toEqual(['a']);
  expect(budget.inUse).toBe(6);
  finish.get('a')!();
  await a;
  await tick();
  expect(started).toEqual(['a', 'b', 'c']);
  expect(budget.inUse).toBe(8);
  finish.get('b')!();
  finish.get('c')!();
  await Promise.all([b, c]);
  expect(peak).toBeLessThanOrEqual(10);
  expect(budget.inUse).toBe(0);
});

test('a chunk larger than the budget runs alone instead of waiting for ever; a failure gives the room back', async () => {
  const budget = new ClaimBudget(4);
  await expect(budget.run(9, async () => budget.inUse)).resolves.toBe(4);
  await expect(budget.run(3, async () => Promise.reject(new Error('claim failed')))).rejects.toThrow('claim failed');
  expect(budget.inUse).toBe(0);
  expect(() => new ClaimBudget(0)).toThrow('positive integer');
});

test('chunks splits in order', () => {
  expect(chunks([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
  expect(chunks([], 3)).toEqual([]);
});
