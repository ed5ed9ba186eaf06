// Re-enabling a destination forgets its failure streak before the destination becomes
// ACTIVE (services/api/src/lifecycle/lifecycle.ts enableDestination): the first failure
// after the enable starts a new streak, so the deliverer's auto-disable (failing since
// DESTINATION_DISABLE_AFTER_MS) does not disable it again on the streak that disabled it.
// When the streak cannot be forgotten (the api's Redis stalled, through a loopback proxy)
// the enable is refused: 503 with Retry-After, the destination still DISABLED.
import IORedis from 'ioredis';
import { createBreaker, recordHealthAtOnce, type SendResult } from '@hookline/delivery';
import { destinationHealthKey } from '@hookline/queues';
import { startRedisProxy, waitFor, type RedisProxy } from '@hookline/testing';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, setOwnerState } from './api-fixtures';

jest.setTimeout(60_000);

const DAY_MS = 24 * 3600 * 1000;
const DISABLE_AFTER_MS = 3 * DAY_MS;

let proxy: RedisProxy;
let h: ApiHarness;
/** The deliverer's own connection to Redis (not through the proxy). */
let redis: IORedis;
beforeAll(async () => {
  proxy = await startRedisProxy();
  h = await startApi('enablehealth', { REDIS_URL: proxy.url, REDIS_COMMAND_TIMEOUT_MS: '1000' }, { quiet: true });
  redis = new IORedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
});
afterAll(async () => {
  proxy?.resume();
  await h?.close();
  await proxy?.close();
  redis?.disconnect();
});

/** What a deliverer does after one failed attempt: its circuit records it, and actOnHealth acts on it. */
async function oneFailure(destinationId: string): Promise<void> {
  const breaker = createBreaker(redis, { prefix: h.prefix, threshold: 10, cooldownMs: 30_000, ttlMs: DISABLE_AFTER_MS + 7 * DAY_MS });
  const result: SendResult = { statusCode: 500, errorKind: 'http_error', error: 'HTTP 500', responseBody: 'boom', responseHeaders: null, startedAt: new Date(), durationMs: 5 };
  const logger = { warn: () => undefined };
  await recordHealthAtOnce({ pool: h.db.pool, redis, prefix: h.prefix, breaker, logger, disableAfterMs: DISABLE_AFTER_MS }, [{ destinationId, result }]);
}

async function state(id: string): Promise<{ state: string; disabled_reason: string | null }> {
  return (await h.db.pool.query('SELECT state, disabled_reason FROM destinations WHERE id = $1', [id])).rows[0];
}

/** The api's Redis answers again (the stalled connection was dropped and made again). */
const apiRedisBack = () => waitFor(async () => (await h.redis.ping().catch(() => null)) === 'PONG', { timeoutMs: 20_000, what: "the api's Redis" });

/** A DISABLED destination with the streak that got it disabled: failing for four days, circuit open. */
async function disabledWithStaleStreak(t: { tenantId: string; apiKey: string }) {
  const { destinationId } = await createPipeline(h, t.tenantId, t.apiKey);
  await setOwnerState(h, t, 'destinations', destinationId, 'DISABLED');
  const key = destinationHealthKey(h.prefix, destinationId);
  const since = Date.now() - 4 * DAY_MS;
  await redis.hset(key, { state: 'open', failures: '500', failing_since: String(since), opened_at: String(Date.now() - 60_000), last_error: 'http_error: HTTP 500' });
  const enable = () => h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${destinationId}/enable`, { key: t.apiKey });
  return { destinationId, key, since, enable };
}

/** `fn` while the api's Redis is stalled (no reply: each command times out after REDIS_COMMAND_TIMEOUT_MS). */
async function stalled<T>(fn: () => Promise<T>): Promise<T> {
  proxy.stall();
  try {
    return await fn();
  } finally {
    proxy.resume();
  }
}

it('an enable whose failure streak cannot be reset is refused: 503 with Retry-After, the destination and its streak unchanged', async () => {
  const t = await h.tenant();
  const { destinationId, key, since, enable } = await disabledWithStaleStreak(t);
  const refused = await stalled(enable);
  expect([refused.status, refused.body.type, refused.headers.get('retry-after')]).toEqual([503, 'https://hookline.dev/errors/service-unavailable', '2']);
  expect(await state(destinationId)).toEqual({ state: 'DISABLED', disabled_reason: null });
  expect(await redis.hget(key, 'failing_since')).toBe(String(since));
  await apiRedisBack();
});

it('a client that enables a destination during a Redis outage, retrying as told, ends ACTIVE with a fresh streak: one failure does not disable it again', async () => {
  const t = await h.tenant();
  const { destinationId, key, enable } = await disabledWithStaleStreak(t);
  let res = await stalled(enable);
  while (res.status === 503) {
    await apiRedisBack();
    res = await enable();
  }
  expect([res.status, res.body.state]).toEqual([200, 'ACTIVE']);
  // The first failure after the enable starts a new streak: the destination stays ACTIVE.
  await oneFailure(destinationId);
  expect(await state(destinationId)).toEqual({ state: 'ACTIVE', disabled_reason: null });
  expect(Number(await redis.hget(key, 'failing_since'))).toBeGreaterThan(Date.now() - 60_000);
  // An enable refused for its state (ACTIVE: 409) resets nothing.
  const failingSince = await redis.hget(key, 'failing_since');
  expect((await enable()).status).toBe(409);
  expect(await redis.hget(key, 'failing_since')).toBe(failingSince);
});
