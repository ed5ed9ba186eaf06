// The queue gauges during a Redis outage (packages/observability/src/queue-sampler.ts): a
// sample that fails removes the depth and age series, so they go absent (an alert on
// absent() or on hookline_redis_errors_total{operation="queue_sample"} fires) instead of
// keeping the last values read before the outage; the next good sample sets them again.
import { createLogger } from '@hookline/logger';
import { createMetrics, startQueueSampler, type Metrics } from '@hookline/observability';
import { createProducer, createRedis, type Producer, type Redis } from '@hookline/queues';
import { flushPrefix, startRedisProxy, uniquePrefix, waitFor, type RedisProxy } from '@hookline/testing';

const logger = createLogger('test', 'error');
logger.silent = true;
const prefix = uniquePrefix('qsampleout');

let proxy: RedisProxy;
let redis: Redis;
let producer: Producer;
beforeAll(async () => {
  proxy = await startRedisProxy();
  redis = createRedis(proxy.url, 'producer', undefined, { commandTimeoutMs: 300 });
  producer = createProducer(redis, prefix);
});
afterAll(async () => {
  proxy.resume();
  await producer.close();
  redis.disconnect();
  await proxy.close();
  await flushPrefix(prefix);
});

const series = async (metrics: Metrics) => ({
  depth: (await metrics.queueDepth.get()).values.map((v) => `${v.labels.queue}/${v.labels.state}=${v.value}`).sort(),
  age: (await metrics.queueOldestAge.get()).values.map((v) => String(v.labels.queue)).sort(),
});
const sampleErrors = async (metrics: Metrics): Promise<number> => (await metrics.redisErrors.get()).values.find((v) => v.labels.operation === 'queue_sample')?.value ?? 0;

test('a failed sample removes the depth and age series; the next good one sets them again', async () => {
  await waitFor(async () => (await redis.ping().catch(() => null)) === 'PONG', { what: 'redis through the proxy' });
  await producer.add('route', { v: 1, eventIds: ['evt_1'] });
  const metrics = createMetrics('router', { defaultMetrics: false });
  const sampler = startQueueSampler({ producer, metrics, logger }, [{ name: 'route' }, { name: 'deliver' }], 60_000);
  try {
    await sampler.sample();
    const healthy = {
      depth: ['deliver/active=0', 'deliver/delayed=0', 'deliver/failed=0', 'deliver/waiting=0', 'route/active=0', 'route/delayed=0', 'route/failed=0', 'route/waiting=1'],
      age: ['deliver', 'route'],
    };
    expect(await series(metrics)).toEqual(healthy);

    proxy.stall();
    await sampler.sample();
    expect(await sampleErrors(metrics)).toBe(1);
    expect(await series(metrics)).toEqual({ depth: [], age: [] });
    const text = await metrics.registry.metrics();
    expect(text).not.toMatch(/^hookline_queue_depth\{/m);
    expect(text).not.toMatch(/^hookline_queue_oldest_waiting_age_seconds\{/m);

    proxy.resume();
    await waitFor(async () => (await redis.ping().catch(() => null)) === 'PONG', { what: 'redis back' });
    await sampler.sample();
    expect(await series(metrics)).toEqual(healthy);
    expect(await sampleErrors(metrics)).toBe(1);
  } finally {
    await sampler.stop();
  }
});
