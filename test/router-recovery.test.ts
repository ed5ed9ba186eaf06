import { Client } from 'pg';
import { loadConfig } from '@hookline/config';
import { routerEnv } from '../services/router/src/config';
import { createProducer, createRedis, type JobData } from '@hookline/queues';
import { freePort, waitFor, type TestDatabase } from '@hookline/testing';
import { RECOVERY_LOCK, recoverEvents, startRecoverySweeper, type RecoverDeps } from '../services/router/src/recover-events';
import { ingesterWithFlow, insertEvent, openRouterTest, type RouterTestContext } from './router-fixtures';

let t: RouterTestContext;
let db: TestDatabase;
let deps: RecoverDeps;
let tenantId: string;
let ingesterId: string;

beforeAll(async () => {
  t = await openRouterTest('rrecover');
  ({ db, tenantId } = t);
  deps = { pool: db.pool, producer: t.producer, logger: t.logger };
  ingesterId = await ingesterWithFlow(t);
});

afterAll(() => t.close());

beforeEach(async () => {
  await t.producer.queue('route').obliterate({ force: true });
  await db.pool.query(`UPDATE events SET status = 'filtered' WHERE status = 'validated'`);
});

const routeJobs = (): Promise<Array<JobData['route']>> => t.waitingJobs('route');

describe('recoverEvents', () => {
  it('re-enqueues only events left validated longer than the threshold', async () => {
    const stale = await insertEvent(db.pool, { tenantId, ingesterId, ageMs: 60_000 });
    await insertEvent(db.pool, { tenantId, ingesterId, ageMs: 0 });
    await insertEvent(db.pool, { tenantId, ingesterId, ageMs: 60_000, status: 'filtered' });
    await insertEvent(db.pool, { tenantId, ingesterId, ageMs: 60_000, status: 'received' });

    const out = await recoverEvents(deps, { olderThanMs: 30_000, limit: 1000 });
    expect(out).toEqual({ locked: true, eventIds: [stale], jobs: 1 });
    expect(await routeJobs()).toEqual([{ v: 1, eventIds: [stale] }]);
  });

  it('splits into batches, honours the limit, oldest first, and adds no twin job on the next sweep', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await insertEvent(db.pool, { tenantId, ingesterId, ageMs: 100_000 - i * 1000 }));
    const out = await recoverEvents(deps, { olderThanMs: 30_000, limit: 4, batchSize: 2 });
    expect(out.eventIds).toEqual(ids.slice(0, 4));
    expect(out.jobs).toBe(2);
    const again = await recoverEvents(deps, { olderThanMs: 30_000, limit: 4, batchSize: 2 });
    expect(again.jobs).toBe(2);
    const jobs = await routeJobs();
    expect(jobs.map((j) => j.eventIds).sort()).toEqual([ids.slice(0, 2), ids.slice(2, 4)].sort());
  });

  it('does nothing while another replica holds the sweep lock', async () => {
    await insertEvent(db.pool, { tenantId, ingesterId, ageMs: 60_000 });
    const other = new Client({ connectionString: process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`SELECT pg_advisory_xact_lock(hashtext($1 || ':' || $2))`, [db.schema, RECOVERY_LOCK]);
      expect(await recoverEvents(deps, { olderThanMs: 30_000, limit: 10 })).toEqual({ locked: false, eventIds: [], jobs: 0 });
      await other.query('COMMIT');
      expect((await recoverEvents(deps, { olderThanMs: 30_000, limit: 10 })).eventIds).toHaveLength(1);
    } finally {
      await other.end();
    }
  });

  it('a sweep while Redis is unreachable fails instead of hanging with the lock held, and the next one enqueues', async () => {
    const stale = await insertEvent(db.pool, { tenantId, ingesterId, ageMs: 60_000 });
    const deadRedis = createRedis(`redis://127.0.0.1:${await freePort()}`, 'producer');
    const dead = createProducer(deadRedis, t.prefix, { readyTimeoutMs: 100 });
    let timer: NodeJS.Timeout | undefined;
    try {
      const hung = new Promise<'hung'>((r) => (timer = setTimeout(() => r('hung'), 15_000)));
      const sweep = recoverEvents({ ...deps, producer: dead }, { olderThanMs: 30_000, limit: 10 }).then(() => 'enqueued', (err: Error) => err.message);
      expect(await Promise.race([sweep, hung])).toContain('Redis is not connected');
    } finally {
      clearTimeout(timer);
      await dead.close();
      deadRedis.disconnect();
    }
    // The transaction (and its advisory lock) ended with the failure.
    expect(await recoverEvents(deps, { olderThanMs: 30_000, limit: 10 })).toMatchObject({ locked: true, eventIds: [stale] });
    expect(await routeJobs()).toEqual([{ v: 1, eventIds: [stale] }]);
  });

  it('the sweeper runs on its interval and stops', async () => {
    const stale = await insertEvent(db.pool, { tenantId, ingesterId, ageMs: 60_000 });
    const sweeper = startRecoverySweeper(deps, { intervalMs: 20, olderThanMs: 30_000, limit: 10 });
    try {
      await waitFor(async () => (await routeJobs()).length > 0, { what: 'a sweep', intervalMs: 20 });
    } finally {
      await sweeper.stop();
    }
    expect(await routeJobs()).toEqual([{ v: 1, eventIds: [stale] }]);
  });
});

describe('recovery settings', () => {
  it('refuses, by name, timings past what a timer or the sweep query can hold', () => {
    // setTimeout fires at once past 2^31-1 ms (a sweep every millisecond); the query takes an int.
    expect(() => loadConfig(routerEnv, { RECOVERY_INTERVAL_MS: '3000000000' })).toThrow(/RECOVERY_INTERVAL_MS must be <= 2147483647/);
    expect(() => loadConfig(routerEnv, { RECOVERY_AFTER_MS: '2147483648' })).toThrow(/RECOVERY_AFTER_MS must be <= 2147483647/);
    expect(loadConfig(routerEnv, { RECOVERY_INTERVAL_MS: '60000', RECOVERY_AFTER_MS: '600000' })).toMatchObject({ RECOVERY_INTERVAL_MS: 60000, RECOVERY_AFTER_MS: 600000 });
  });
});
