// The DB and Redis error counters and the queue sampler, against real PostgreSQL and Redis.
import { createPool, withTransaction } from '@hookline/db';
import { createLogger } from '@hookline/logger';
import { createMetrics, instrumentPool, instrumentRedis, startQueueSampler } from '@hookline/observability';
import { createProducer, createRedis, type Producer, type Redis } from '@hookline/queues';
import { createTestDatabase, flushPrefix, freePort, uniquePrefix, waitFor, type TestDatabase } from '@hookline/testing';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const logger = createLogger('test', 'error');
logger.silent = true;

const counter = async (metrics: ReturnType<typeof createMetrics>, name: string, labels: Record<string, string>): Promise<number> => {
  const m = (await metrics.registry.getSingleMetric(name)?.get())?.values ?? [];
  return m.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
};

describe('hookline_db_errors_total', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('obsdb');
  });
  afterAll(() => db.drop());

  test('counts failed statements once each (pool.query and inside a transaction), and not the good ones', async () => {
    const metrics = createMetrics('router', { defaultMetrics: false });
    const pool = instrumentPool(createPool(db.url, 2), metrics);
    try {
      await pool.query('SELECT 1');
      await expect(pool.query('SELECT * FROM no_such_table')).rejects.toThrow(/no_such_table/);
      await expect(withTransaction(pool, async (c) => c.query('SELECT 1/0'))).rejects.toThrow(/division by zero/);
      await pool.query('SELECT 2');
      expect(await counter(metrics, 'hookline_db_errors_total', { operation: 'query' })).toBe(2);
      expect(await counter(metrics, 'hookline_db_errors_total', { operation: 'connect' })).toBe(0);
    } finally {
      await pool.end();
    }
  });

  test('counts a failed connection', async () => {
    const metrics = createMetrics('ingest', { defaultMetrics: false });
    const port = await freePort();
    const pool = instrumentPool(createPool(`postgresql://postgres@127.0.0.1:${port}/test`, 1), metrics);
    try {
      await expect(pool.query('SELECT 1')).rejects.toThrow();
      expect(await counter(metrics, 'hookline_db_errors_total', { operation: 'connect' })).toBe(1);
    } finally {
      await pool.end();
    }
  });
});

describe('hookline_redis_errors_total and the queue sampler', () => {
  const prefix = uniquePrefix('obsq');
  let redis: Redis;
  let producer: Producer;
  beforeAll(() => {
    redis = createRedis(REDIS_URL, 'producer');
    producer = createProducer(redis, prefix);
  });
  afterAll(async () => {
    await producer.close();
    redis.disconnect();
    await flushPrefix(prefix);
  });

  test('a client that cannot connect counts connection errors', async () => {
    const metrics = createMetrics('api', { defaultMetrics: false });
    const down = instrumentRedis(createRedis(`redis://127.0.0.1:${await freePort()}`, 'producer'), metrics);
    try {
      await waitFor(async () => (await counter(metrics, 'hookline_redis_errors_total', { operation: 'connection' })) >= 1, { what: 'a connection error' });
    } finally {
      down.disconnect();
    }
  });

  test('depth per queue and state, and the age of the oldest waiting job, for the default and a pool queue', async () => {
    const metrics = createMetrics('deliverer', { defaultMetrics: false });
    await producer.add('deliver', { v: 1, deliveryIds: ['dlv_old'] });
    await new Promise((r) => setTimeout(r, 1100));
    await producer.add('deliver', { v: 1, deliveryIds: ['dlv_new'] });
    await producer.add('deliver', { v: 1, deliveryIds: ['dlv_later'] }, { delayMs: 60_000 });
    await producer.add('deliver', { v: 1, deliveryIds: ['dlv_acme'] }, { pool: 'acme' });
    // Each queue's oldest waiting job, and the clock just before and after the sample: the ages
    // are checked against these, not against how long any step may take.
    const oldestAt = async (pool?: string): Promise<number> => Math.min(...(await producer.queue('deliver', pool).getJobs(['waiting'])).map((j) => j.timestamp));
    const since = { deliver: await oldestAt(), 'deliver.acme': await oldestAt('acme') };
    const before = Date.now();
    const sampler = startQueueSampler({ producer, metrics, logger }, [{ name: 'deliver' }, { name: 'deliver', pool: 'acme' }, { name: 'route' }], 60_000);
    await sampler.sample();
    const after = Date.now();
    await sampler.stop();
    const text = await metrics.registry.metrics();
    expect(text).toContain('hookline_queue_depth{queue="deliver",state="waiting",service="deliverer"} 2');
    expect(text).toContain('hookline_queue_depth{queue="deliver",state="delayed",service="deliverer"} 1');
    expect(text).toContain('hookline_queue_depth{queue="deliver.acme",state="waiting",service="deliverer"} 1');
    expect(text).toContain('hookline_queue_depth{queue="route",state="waiting",service="deliverer"} 0');
    const age = (queue: string): number => Number(new RegExp(`hookline_queue_oldest_waiting_age_seconds\\{queue="${queue.replace('.', '\\.')}",service="deliverer"\\} ([0-9.e-]+)`).exec(text)?.[1]);
    expect(age('deliver')).toBeGreaterThanOrEqual(1);
    for (const [queue, at] of Object.entries(since)) {
      const ms = Math.round(age(queue) * 1000);
      expect({ queue, ms, atLeast: ms >= before - at, atMost: ms <= after - at }).toEqual({ queue, ms, atLeast: true, atMost: true });
    }
    expect(age('route')).toBe(0);
  });
});
