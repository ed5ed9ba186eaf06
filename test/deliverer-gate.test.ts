// The gate (circuit breaker, rate limit) and the health record after a batch ask Redis for
// every destination of a chunk at once, not one destination after another; each
// destination still gets its own answer.
import { loadConfig } from '@hookline/config';
import { destinationSettings, type Breaker, type SendResult } from '@hookline/delivery';
import { createLogger } from '@hookline/logger';
import { createProducer, createRedis, readDestinationHealthState, redisReady } from '@hookline/queues';
import { startReceiver, startRedisProxy } from '@hookline/testing';
import type { ClaimedDelivery } from '../services/deliverer/src/claim-deliveries';
import { delivererEnv } from '../services/deliverer/src/config';
import { buildDeliverDeps } from '../services/deliverer/src/deliverer-deps';
import { gateDeliveries, type Prepared } from '../services/deliverer/src/gate-deliveries';
import { recordHealth } from '../services/deliverer/src/record-health';
import { createHarness, TEST_ENV, type Harness } from './deliverer-fixtures';

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

test('with Redis stalled (connection open, no replies) the gate lets the batch through and health recording goes on, as with Redis down', async () => {
  const rx = await startReceiver();
  const proxy = await startRedisProxy();
  // A deliverer wired as main.ts wires it: breaker and rate limit on a producer connection,
  // here through a proxy that can stall, with a REDIS_COMMAND_TIMEOUT_MS short enough for the test, long enough for a loaded machine.
  const config = loadConfig(delivererEnv, { ...TEST_ENV, DATABASE_URL: h.db.url, QUEUE_PREFIX: h.prefix, BREAKER_FAILURE_THRESHOLD: '2', BREAKER_COOLDOWN_MS: '60000', REDIS_URL: proxy.url, REDIS_COMMAND_TIMEOUT_MS: '2500' });
  const redis = createRedis(config.REDIS_URL, 'producer', config.REDIS_CLUSTER_NODES, { commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS });
  const producer = createProducer(redis, config.QUEUE_PREFIX);
  const logger = createLogger('deliverer-test', 'error');
  const warned = jest.spyOn(logger, 'warn');
  const deps = buildDeliverDeps(config, { pool: h.db.pool, redis, producer, logger });
  try {
    expect(await redisReady(redis, 20_000)).toBe(true);
    const dst = await h.destination(rx.url, { config: { rate_limit_per_second: 1 } });
    // Its circuit is open (two failures, threshold 2): with Redis answering, the gate holds it back.
    await recordHealth(h.deps, [{ destinationId: dst.id, result: failure() }, { destinationId: dst.id, result: failure() }]);
    expect(await readDestinationHealthState(h.redis, h.prefix, dst.id)).toMatchObject({ state: 'open' });
    const held = await gateDeliveries(deps, [item(dst.id, 1)]);
    expect([held.allowed.length, held.deferred.length]).toEqual([0, 1]);

    proxy.stall();
    // Fail open: everything goes, neither the open circuit nor the rate limit is applied.
    const gated = await gateDeliveries(deps, [item(dst.id, 1), item(dst.id, 2), item('dst_gate_other', 1)]);
    expect(gated.allowed.map((p) => p.d.id)).toEqual([`dlv_${dst.id}_1`, `dlv_${dst.id}_2`, 'dlv_dst_gate_other_1']);
    expect(gated.deferred).toEqual([]);
    expect(warned).toHaveBeenCalledWith('destination gate unavailable, sending without it', expect.objectContaining({ error: 'Command timed out' }));

    // A whole batch: claimed, gated (open), sent, recorded; the health record is logged and skipped.
    const deliveries = await Promise.all([1, 2].map(() => h.delivery(dst.id)));
    expect(await h.run(deliveries.map((d) => d.deliveryId), deps)).toMatchObject({ claimed: 2, delivered: 2 });
    expect(rx.requests).toHaveLength(2);
    // By now the stalled connection may have been dropped (socket timeout): the command then
    // fails at once, as with Redis down, instead of timing out.
    expect(warned).toHaveBeenCalledWith('could not record destination health', expect.objectContaining({ destination_id: dst.id, error: expect.stringMatching(/^(Command timed out|Stream isn't writeable)/) }));
    for (const d of deliveries) expect((await h.row(d.deliveryId)).status).toBe('delivered');
  } finally {
    proxy.resume();
    await deps.sender.close();
    await producer.close();
    redis.disconnect();
    await proxy.close();
    await rx.close();
  }
});
