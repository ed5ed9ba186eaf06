import type { Breaker, BreakerAfter } from '@hookline/delivery';
import { viewCircuits } from './circuit-view';

/** A breaker answering what the test sets, as the Redis scripts would. */
function scripted() {
  const next: { admit: { allowed: number; retryAt: number }; after: BreakerAfter } = {
    admit: { allowed: 1, retryAt: 0 },
    after: { state: 'closed', consecutiveFailures: 0, failingSince: null, openedAt: null },
  };
  const breaker = { admit: async () => next.admit, record: async () => next.after } as unknown as Breaker;
  return { next, ...viewCircuits(breaker, 30_000, 2) };
}

const failed = { successes: 0, trailingFailures: 1, lastError: 'http_error: HTTP 500' };

test('every answer of a circuit updates the view: opened by a record, closed by an admit', async () => {
  const { next, breaker, circuits } = scripted();
  expect(circuits.heldUntil('dst_a')).toBeNull();
  next.after = { state: 'open', consecutiveFailures: 3, failingSince: 1_000, openedAt: 5_000 };
  await breaker.record('dst_a', failed, 6_000);
  expect(circuits.heldUntil('dst_a')).toBe(35_000); // opened_at + cooldown, not now + cooldown

  // Another replica's probe closed it: the next admit says so.
  next.admit = { allowed: 4, retryAt: 0 };
  await breaker.admit('dst_a', 4, 20_000, 40_000);
  expect(circuits.heldUntil('dst_a')).toBeNull();
});

test('an admit that holds back (open) or lets a probe through (half-open) holds the destination until its retryAt', async () => {
  const { next, breaker, circuits } = scripted();
  next.admit = { allowed: 0, retryAt: 90_000 };
  await breaker.admit('dst_b', 3, 20_000, 70_000);
  expect(circuits.heldUntil('dst_b')).toBe(90_000);
  next.admit = { allowed: 1, retryAt: 130_000 };
  await breaker.admit('dst_b', 3, 20_000, 100_000);
  expect(circuits.heldUntil('dst_b')).toBe(130_000);
  // The probe succeeded.
  await breaker.record('dst_b', { successes: 1, trailingFailures: 0, lastError: '' }, 101_000);
  expect(circuits.heldUntil('dst_b')).toBeNull();
});

test('the view is bounded: beyond its size the destination heard of longest ago is forgotten', async () => {
  const { next, breaker, circuits } = scripted();
  next.admit = { allowed: 0, retryAt: 9_000 };
  for (const id of ['dst_1', 'dst_2', 'dst_3']) await breaker.admit(id, 1, 1_000, 1_000);
  expect(['dst_1', 'dst_2', 'dst_3'].map((id) => circuits.heldUntil(id))).toEqual([null, 9_000, 9_000]);
});
