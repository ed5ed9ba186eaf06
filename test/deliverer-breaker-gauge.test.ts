// hookline_breaker_state of the deliverer (services/deliverer/src/observed-breaker.ts) against
// real Redis and PostgreSQL: a destination disabled or deleted while its circuit is open
// keeps its health hash `open` in Redis (only an enable resets it), so the gauge must drop
// it by the destination's state, not by the circuit's; and a deliverer that starts while
// circuits are open shows them at its first refresh, not only after their next probe.
import IORedis from 'ioredis';
import { createPool, newId } from '@hookline/db';
import { createBreaker } from '@hookline/delivery';
import { createMetrics, type Metrics } from '@hookline/observability';
import { destinationHealthKey } from '@hookline/queues';
import { createTestDatabase, flushPrefix, freePort, seedTenant, uniquePrefix, type TestDatabase } from '@hookline/testing';
import { observeBreaker } from '../services/deliverer/src/observed-breaker';

let db: TestDatabase;
let redis: IORedis;
let tenantId: string;
const prefix = uniquePrefix('brkgauge');

beforeAll(async () => {
  db = await createTestDatabase('brkgauge');
  redis = new IORedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
  tenantId = (await seedTenant(db.pool)).tenantId;
});
afterAll(async () => {
  await flushPrefix(prefix);
  redis.disconnect();
  await db.drop();
});

async function destination(state: 'ACTIVE' | 'DISABLED' = 'ACTIVE'): Promise<string> {
  const id = newId('dst');
  await db.pool.query(`INSERT INTO destinations (id, tenant_id, name, url, state, updated_at) VALUES ($1, $2, $1, 'http://127.0.0.1:9/hook', $3, now())`, [id, tenantId, state]);
  return id;
}
const setState = (id: string, state: string) => db.pool.query(`UPDATE destinations SET state = $2, updated_at = now() WHERE id = $1`, [id, state]);

const breaker = () => createBreaker(redis, { prefix, threshold: 1, cooldownMs: 60_000, ttlMs: 10 * 24 * 3600_000 });
const failed = { successes: 0, trailingFailures: 1, lastError: 'http_error: HTTP 500' };

/** The gauge's series: destination id → value. */
async function gauge(metrics: Metrics): Promise<Record<string, number>> {
  return Object.fromEntries((await metrics.breakerState.get()).values.map((v) => [String(v.labels.destination_id), v.value]));
}

test('a destination disabled (automatically or by a user) or deleted while its circuit is open loses its series at the next refresh; an active one keeps it', async () => {
  const metrics = createMetrics('deliverer', { defaultMetrics: false });
  const observed = observeBreaker(breaker(), metrics, redis, prefix, db.pool);
  const [active, disabled, deleted, gone] = [await destination(), await destination(), await destination(), await destination()];
  for (const id of [active, disabled, deleted, gone]) await observed.breaker.record(id, failed);
  expect(await gauge(metrics)).toEqual({ [active]: 2, [disabled]: 2, [deleted]: 2, [gone]: 2 });

  // None of these touches the health hash: each circuit still reads `open` in Redis.
  await setState(disabled, 'DISABLED');
  await setState(deleted, 'DELETED');
  await db.pool.query('DELETE FROM destinations WHERE id = $1', [gone]);
  expect(await redis.hget(destinationHealthKey(prefix, disabled), 'state')).toBe('open');

  await observed.refresh();
  expect(await gauge(metrics)).toEqual({ [active]: 2 });
  // Scraped text: no series of the dropped destinations.
  const text = await metrics.registry.metrics();
  for (const id of [disabled, deleted, gone]) expect(text).not.toContain(id);

  // A circuit closed by another replica still removes its series.
  await redis.del(destinationHealthKey(prefix, active));
  await observed.refresh();
  expect(await gauge(metrics)).toEqual({});
});

test('a deliverer that starts while circuits are open shows the active destinations among them at its first refresh', async () => {
  const b = breaker();
  const [open, halfOpen, disabled, closed] = [await destination(), await destination(), await destination(), await destination()];
  for (const id of [open, halfOpen, disabled]) await b.record(id, failed);
  await redis.hset(destinationHealthKey(prefix, halfOpen), 'state', 'half_open');
  await b.record(closed, { successes: 1, trailingFailures: 0, lastError: '' });
  await setState(disabled, 'DISABLED');

  // A fresh process: nothing recorded here yet.
  const metrics = createMetrics('deliverer', { defaultMetrics: false });
  const observed = observeBreaker(b, metrics, redis, prefix, db.pool);
  expect(await gauge(metrics)).toEqual({});
  await observed.refresh();
  expect(await gauge(metrics)).toEqual({ [open]: 2, [halfOpen]: 1 });
});

test('with PostgreSQL unavailable a refresh still re-reads the circuits shown from Redis, then fails (and is logged by its loop)', async () => {
  const deadPool = createPool(`postgresql://postgres@127.0.0.1:${await freePort()}/test`, 1);
  try {
    const metrics = createMetrics('deliverer', { defaultMetrics: false });
    const [a, b] = [await destination(), await destination()];
    const observed = observeBreaker(breaker(), metrics, redis, prefix, deadPool);
    for (const id of [a, b]) await observed.breaker.record(id, failed);
    await redis.del(destinationHealthKey(prefix, b));
    await expect(observed.refresh()).rejects.toThrow();
    expect(await gauge(metrics)).toEqual({ [a]: 2 });
  } finally {
    await deadPool.end();
  }
});

test('the boot scan matches the prefix literally (glob characters in it match only themselves)', async () => {
  const special = `${uniquePrefix('brkglob')}[x]*`;
  const lookalike = special.replace('[x]*', 'xyz');
  try {
    const [mine, other] = [await destination(), await destination()];
    await createBreaker(redis, { prefix: special, threshold: 1, cooldownMs: 60_000, ttlMs: 60_000 }).record(mine, failed);
    await createBreaker(redis, { prefix: lookalike, threshold: 1, cooldownMs: 60_000, ttlMs: 60_000 }).record(other, failed);
    const metrics = createMetrics('deliverer', { defaultMetrics: false });
    await observeBreaker(breaker(), metrics, redis, special, db.pool).refresh();
    expect(await gauge(metrics)).toEqual({ [mine]: 2 });
  } finally {
    for (const p of [special, lookalike]) for (const key of await redis.keys(`${p.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}:*`)) await redis.del(key);
  }
});
