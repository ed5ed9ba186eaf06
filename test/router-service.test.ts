import { publishConfigChange, type JobData } from '@hookline/queues';
import { flushPrefix, startService, waitFor, type ServiceProcess } from '@hookline/testing';
import { deliveriesOf, eventState, insertDestination, insertEvent, insertFlow, insertIngester, openRouterTest, type RouterTestContext } from './router-fixtures';

// The router as it is deployed: its own process, wired by main.ts, on real PG and Redis.
let t: RouterTestContext;
let router: ServiceProcess | undefined;

beforeAll(async () => {
  t = await openRouterTest('rsvc');
});

afterAll(async () => {
  await router?.stop('SIGKILL');
  await t.close();
});

const env = (extra: Record<string, string>): Record<string, string> => ({ DATABASE_URL: t.db.url, REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', QUEUE_PREFIX: t.prefix, ...extra });
const deliverJobIds = async (): Promise<string[]> => (await t.waitingJobs('deliver')).flatMap((j) => j.deliveryIds);

it('routes route jobs, follows config changes, survives a lost job through recovery, and stops gracefully', async () => {
  const { db, producer, tenantId } = t;
  const ingesterId = await insertIngester(db.pool, tenantId);
  await insertFlow(db.pool, { tenantId, ingesterId, destinationId: await insertDestination(db.pool, tenantId) });

  // A route job that Redis loses before any router ran.
  const lost = await insertEvent(db.pool, { tenantId, ingesterId });
  await producer.add('route', { v: 1, eventIds: [lost] });
  await flushPrefix(t.prefix);

  // Phase 1: no recovery within the test, a flow cache that only a message can refresh.
  router = await startService('router', env({ RECOVERY_AFTER_MS: '3600000', FLOW_CACHE_TTL_MS: '3600000' }));
  const live = await insertEvent(db.pool, { tenantId, ingesterId });
  await producer.add('route', { v: 1, eventIds: [live], traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
  await waitFor(async () => (await eventState(db.pool, live)).status === 'filtered', { what: 'the live event to be routed' });
  const liveDeliveries = await deliveriesOf(db.pool, [live]);
  expect(liveDeliveries).toHaveLength(1);
  await waitFor(async () => (await deliverJobIds()).includes(liveDeliveries[0]!.id), { what: 'the deliver job' });
  const deliverJob = (await t.waitingJobs('deliver')).find((j: JobData['deliver']) => j.deliveryIds.includes(liveDeliveries[0]!.id));
  // The router's own span: same trace, a new span id (the deliver job is its child).
  expect(deliverJob).toEqual({ v: 1, deliveryIds: [liveDeliveries[0]!.id], traceparent: expect.stringMatching(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/) });
  expect(deliverJob!.traceparent).not.toContain('b7ad6b7169203331');
  expect((await eventState(db.pool, lost)).status).toBe('validated');

  // A second flow, announced: the next event fans out to both despite the long TTL.
  const second = await insertFlow(db.pool, { tenantId, ingesterId, destinationId: await insertDestination(db.pool, tenantId) });
  await publishConfigChange(t.redis, t.prefix, { kind: 'flow', id: second, tenantId });
  const next = await insertEvent(db.pool, { tenantId, ingesterId });
  await producer.add('route', { v: 1, eventIds: [next] });
  await waitFor(async () => (await eventState(db.pool, next)).status === 'filtered', { what: 'the next event to be routed' });
  expect(await deliveriesOf(db.pool, [next])).toHaveLength(2);

  const res = await fetch(`${router.url}/readyz`);
  expect(res.status).toBe(200);
  expect(await router.stop('SIGTERM')).toBe(0);
  router = undefined;

  // Phase 2: a router that sweeps; the lost event is found in PostgreSQL and routed.
  router = await startService('router', env({ RECOVERY_AFTER_MS: '200', RECOVERY_INTERVAL_MS: '100' }));
  await waitFor(async () => (await eventState(db.pool, lost)).status === 'filtered', { what: 'the lost event to be recovered' });
  const recovered = await deliveriesOf(db.pool, [lost]);
  expect(recovered).toHaveLength(2);
  await waitFor(async () => {
    const queued = await deliverJobIds();
    return recovered.every((r) => queued.includes(r.id));
  }, { what: 'deliver jobs for the recovered event' });
  const output = router.output();
  expect(await router.stop('SIGTERM')).toBe(0);
  router = undefined;
  expect(output).toContain('re-enqueued events a route job left behind');
});
