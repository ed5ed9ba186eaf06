import { ConcurrencyLimits, shareOf } from './limiter';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A task that stays open until `finish()`; `open` counts those running. */
function tasks() {
  const finishers: (() => void)[] = [];
  const state = { open: 0, peak: 0 };
  const task = (): Promise<void> => {
    state.open++;
    state.peak = Math.max(state.peak, state.open);
    return new Promise<void>((r) =>
      finishers.push(() => {
        state.open--;
        r();
      }),
    );
  };
  const finishAll = async (): Promise<void> => {
    while (finishers.length > 0) {
      finishers.splice(0).forEach((f) => f());
      await tick();
    }
  };
  return { task, state, finishAll };
}

test('a share is the fraction of the limit, never below 4 (or the whole limit when smaller)', () => {
  expect(shareOf(256, 0.25)).toBe(64);
  expect(shareOf(256, 1)).toBe(256);
  expect(shareOf(16, 0.1)).toBe(4);
  expect(shareOf(2, 0.25)).toBe(2);
  expect(shareOf(1024, 0.5)).toBe(512);
});

test("a destination alone uses all but one share of the overall slots; another destination then finds that share free; a backlog holds no overall slot", async () => {
  const limits = new ConcurrencyLimits(16, { destination: 0.25, tenant: 1 });
  expect(limits.capFor(1000)).toBe(4);
  expect(limits.capFor(2)).toBe(2);
  const a = tasks();
  const b = tasks();
  const aRuns = Array.from({ length: 40 }, () => limits.run('dst_a', 1000, a.task, 'ten_a'));
  await tick();
  // Its share (4) as its own, then borrowed slots while more than a share stays free: 12.
  expect(a.state.open).toBe(12);
  // Another destination gets the 4 slots held back, which A's 28 waiting requests do not hold.
  const bRuns = Array.from({ length: 6 }, () => limits.run('dst_b', 10, b.task, 'ten_b'));
  await tick();
  expect(b.state.open).toBe(4);
  await Promise.all([a.finishAll(), b.finishAll()]);
  await Promise.all([...aRuns, ...bRuns]);
  expect(a.state.peak).toBe(12);
  expect(b.state.peak).toBe(4);
});

test("a destination's max_concurrency still bounds it below its share, and a borrowing waiter does not hold up another destination's own request", async () => {
  const limits = new ConcurrencyLimits(8, { destination: 0.5, tenant: 1 });
  const a = tasks();
  const b = tasks();
  const c = tasks();
  // A: share 4, borrows up to 8 − 4 = 4 more? No: borrowing stops once only a share is free, so A holds 4.
  const aRuns = Array.from({ length: 10 }, () => limits.run('dst_a', 1000, a.task));
  await tick();
  expect(a.state.open).toBe(4);
  const cRuns = Array.from({ length: 5 }, () => limits.run('dst_c', 2, c.task));
  await tick();
  expect(c.state.open).toBe(2); // its own max_concurrency
  const bRuns = Array.from({ length: 3 }, () => limits.run('dst_b', 10, b.task));
  await tick();
  expect(b.state.open).toBe(2); // the two slots left, its own (A's borrowers wait and do not block it)
  await Promise.all([a.finishAll(), b.finishAll(), c.finishAll()]);
  await Promise.all([...aRuns, ...bRuns, ...cRuns]);
});

test("a tenant's destinations together hold at most the tenant's share; a request waiting for it holds no overall slot", async () => {
  const limits = new ConcurrencyLimits(16, { destination: 0.25, tenant: 0.5 });
  const a = tasks();
  const b = tasks();
  const aRuns = ['d1', 'd2', 'd3', 'd4'].flatMap((d) => Array.from({ length: 5 }, () => limits.run(d, 1000, a.task, 'ten_a')));
  await tick();
  expect(a.state.open).toBe(8);
  const bRuns = Array.from({ length: 8 }, (_, i) => limits.run(`b${i}`, 10, b.task, 'ten_b'));
  await tick();
  expect(b.state.open).toBe(8);
  await Promise.all([a.finishAll(), b.finishAll()]);
  await Promise.all([...aRuns, ...bRuns]);
  expect(a.state.peak).toBe(8);
});

test("a tenant's share is never below one destination's", () => {
  expect(new ConcurrencyLimits(256, { destination: 0.25, tenant: 0.1 }).tenantCap).toBe(64);
  expect(new ConcurrencyLimits(256, { destination: 0.25, tenant: 0.5 }).tenantCap).toBe(128);
});

test('shares of 1 bound nothing but max_concurrency and the overall limit (as before)', async () => {
  const limits = new ConcurrencyLimits(16);
  expect(limits.capFor(1000)).toBe(16);
  const a = tasks();
  const runs = Array.from({ length: 20 }, () => limits.run('dst_a', 1000, a.task, 'ten_a'));
  await tick();
  expect(a.state.open).toBe(16);
  await a.finishAll();
  await Promise.all(runs);
});
