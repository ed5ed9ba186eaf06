import { backoffDelay, retryDelay } from './backoff';

test('doubles from the base, jittered within [d/2, d], and capped', () => {
  const low = () => 0;
  const high = () => 1;
  expect([1, 2, 3, 4].map((n) => backoffDelay(n, 500, 30_000, high))).toEqual([500, 1000, 2000, 4000]);
  expect([1, 2, 3, 4].map((n) => backoffDelay(n, 500, 30_000, low))).toEqual([250, 500, 1000, 2000]);
  expect(backoffDelay(50, 500, 30_000, high)).toBe(30_000);
  expect(backoffDelay(50, 500, 30_000, low)).toBe(15_000);
  for (let i = 0; i < 100; i++) {
    const d = backoffDelay(3, 500, 30_000);
    expect(d).toBeGreaterThanOrEqual(1000);
    expect(d).toBeLessThanOrEqual(2000);
  }
});

test("the wait before a retry is the backoff, or the service's Retry-After when that is longer", () => {
  const backoff = { baseMs: 500, maxMs: 30_000 };
  expect(retryDelay(1, backoff, 120_000, () => 1)).toBe(120_000);
  expect(retryDelay(4, backoff, 1_000, () => 1)).toBe(4_000);
  expect(retryDelay(4, backoff, null, () => 0)).toBe(2_000);
});
