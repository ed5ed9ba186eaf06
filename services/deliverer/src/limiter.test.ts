import { Limiter } from './limiter';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

test('never holds more than the limit; waiters start in arrival order as room frees', async () => {
  const budget = new Limiter(10);
  const started: string[] = [];
  const finish = new Map<string, () => void>();
  let peak = 0;
  const job = (name: string, n: number): Promise<string> =>
    budget.run(() => {
      started.push(name);
      peak = Math.max(peak, budget.held);
      return new Promise<string>((r) => finish.set(name, () => r(name)));
    }, n);
  const a = job('a', 6);
  const b = job('b', 6); // does not fit beside a
  const c = job('c', 2); // would fit, but waits behind b (arrival order)
  await tick();
  expect(started).toEqual(['a']);
  expect(budget.held).toBe(6);
  finish.get('a')!();
  await a;
  await tick();
  expect(started).toEqual(['a', 'b', 'c']);
  expect(budget.held).toBe(8);
  finish.get('b')!();
  finish.get('c')!();
  await Promise.all([b, c]);
  expect(peak).toBeLessThanOrEqual(10);
  expect(budget.held).toBe(0);
  expect(budget.idle).toBe(true);
});

test('a holder larger than the limit runs alone instead of waiting for ever; a failure gives the room back', async () => {
  const budget = new Limiter(4);
  await expect(budget.run(async () => budget.held, 9)).resolves.toBe(4);
  await expect(budget.run(async () => Promise.reject(new Error('claim failed')), 3)).rejects.toThrow('claim failed');
  expect(budget.held).toBe(0);
});

test('one unit each by default: at most `limit` at once', async () => {
  const l = new Limiter(2);
  let active = 0;
  let peak = 0;
  await Promise.all(
    Array.from({ length: 6 }, () =>
      l.run(async () => {
        peak = Math.max(peak, ++active);
        await tick();
        active--;
      }),
    ),
  );
  expect(peak).toBe(2);
  expect(l.idle).toBe(true);
});
