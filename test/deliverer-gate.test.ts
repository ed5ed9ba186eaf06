// The gate (circuit breaker, rate limit) and the health record after a batch ask Redis for
// every destination of a chunk at once, not one destination after another; each
// destination still gets its own answer.
import { destinationSettings, type Breaker, type SendResult } from '@hookline/delivery';
import type { ClaimedDelivery } from '../services/deliverer/src/claim-deliveries';
import { gateDeliveries, type Prepared } from '../services/deliverer/src/gate-deliveries';
import { recordHealth } from '../services/deliverer/src/record-health';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

let h: Harness;

beforeAll(async () => {
  h = await createHarness('dlvgate', { BREAKER_FAILURE_THRESHOLD: '2', BREAKER_COOLDOWN_MS: '60000' });
});

afterAll(async () => {
  await h?.close();
});

/** The real breaker (Redis scripts), counting how many of its calls were in flight at once. */
function watched(breaker: Breaker): { breaker: Breaker; maxInFlight: () => number } {
  let now = 0;
  let max = 0;
  const track = async <T>(p: () => Promise<T>): Promise<T> => {
    max = Math.max(max, ++now);
    try {
      return await p();
    } finally {
      now--;
    }
  };
  return {
    breaker: { ...breaker, admit: (...a) => track(() => breaker.admit(...a)), record: (...a) => track(() => breaker.record(...a)) },
    maxInFlight: () => max,
  };
}

const item = (destinationId: string, n: number): Prepared => ({
  d: { id: `dlv_${destinationId}_${n}`, destinationId } as ClaimedDelivery,
  settings: destinationSettings('POST', {}, h.deps.defaults),
});

const failure = (): SendResult => ({ statusCode: 503, errorKind: 'http_error', error: 'HTTP 503', responseBody: null, responseHeaders: null, startedAt: new Date(), durationMs: 1 });

test('every destination of a chunk is gated at once, and an open circuit holds back only its own', async () => {
  const [a, b, c] = ['dst_gate_a', 'dst_gate_b', 'dst_gate_c'];
  const w = watched(h.deps.breaker);
  const deps = { ...h.deps, breaker: w.breaker };
  // Two failures open c's circuit (threshold 2), recorded for all three destinations at once.
  await recordHealth(deps, [
    { destinationId: c!, result: failure() },
    { destinationId: c!, result: failure() },
    { destinationId: a!, result: { ...failure(), statusCode: 200, errorKind: null, error: null } },
    { destinationId: b!, result: { ...failure(), statusCode: 200, errorKind: null, error: null } },
  ]);
  expect(w.maxInFlight()).toBe(3);

  const w2 = watched(h.deps.breaker);
  const items = [item(a!, 1), item(b!, 1), item(c!, 1), item(a!, 2), item(c!, 2)];
  const gated = await gateDeliveries({ ...h.deps, breaker: w2.breaker }, items);
  expect(w2.maxInFlight()).toBe(3);
  expect(gated.allowed.map((p) => p.d.id).sort()).toEqual(['dlv_dst_gate_a_1', 'dlv_dst_gate_a_2', 'dlv_dst_gate_b_1']);
  expect(gated.deferred.map((x) => x.item.d.id).sort()).toEqual(['dlv_dst_gate_c_1', 'dlv_dst_gate_c_2']);
  expect(gated.deferred.every((x) => x.delayMs > 50_000)).toBe(true);
});
