// SPEC.md lifecycle: a DISABLED destination stops delivery, it does not lose events. An
// ACTIVE flow to it still routes: the deliveries are created pending and held (the
// deliverer consumes a job for them without claiming, its recovery sweep leaves them
// alone), sent once the destination is enabled again, or moved to the DLQ if it is deleted.
// Router, deliverer and the api's lifecycle code on one schema and queue prefix.
import { createLogger } from '@hookline/logger';
import { startReceiver, waitFor, type Receiver } from '@hookline/testing';
import type { AppContext } from '../services/api/src/context';
import { changeState } from '../services/api/src/lifecycle/lifecycle';
import { recoverDeliveries } from '../services/deliverer/src/recover-deliveries';
import { FlowCache } from '../services/router/src/flow-cache';
import { routeEvents, type RouteDeps } from '../services/router/src/route-events';
import { createHarness, type Harness } from './deliverer-fixtures';
import { insertEvent, insertFlow, insertIngester } from './router-fixtures';

jest.setTimeout(60_000);

let h: Harness;
let rx: Receiver;
let app: AppContext;
let router: RouteDeps;
const logger = createLogger('held-test', 'error');

beforeAll(async () => {
  h = await createHarness('helddlv');
  rx = await startReceiver();
  // What changeState uses of the api's context: PostgreSQL, Redis, the producer, the prefix.
  app = { pool: h.db.pool, redis: h.redis, producer: h.deps.producer, config: { QUEUE_PREFIX: h.prefix, pools: new Map() }, logger } as unknown as AppContext;
  router = { pool: h.db.pool, producer: h.deps.producer, flows: new FlowCache(h.db.pool, 0), logger };
});

afterAll(async () => {
  await rx?.close();
  await h?.close();
});

const queued = async (): Promise<string[]> => (await h.deps.producer.queue('deliver').getJobs(['waiting', 'delayed', 'prioritized'])).flatMap((j) => (j.data as { deliveryIds: string[] }).deliveryIds);
const sweep = () => recoverDeliveries({ pool: h.db.pool, producer: h.deps.producer }, { afterMs: 1000, batchSize: 100 });
const disable = (destinationId: string) => h.db.pool.query(`UPDATE destinations SET state = 'DISABLED', disabled_reason = 'failing without a success for 72 h' WHERE id = $1`, [destinationId]);

/** An ACTIVE flow to `destinationId` and one validated event of its ingester, routed. */
async function routedEvent(destinationId: string): Promise<{ eventId: string; deliveryId: string; held: number }> {
  const ingesterId = await insertIngester(h.db.pool, h.tenantId);
  await insertFlow(h.db.pool, { tenantId: h.tenantId, ingesterId, destinationId });
  const eventId = await insertEvent(h.db.pool, { tenantId: h.tenantId, ingesterId });
  const out = await routeEvents(router, { eventIds: [eventId] });
  expect(out.deliveryIds).toHaveLength(1);
  return { eventId, deliveryId: out.deliveryIds[0]!, held: out.held };
}

test('an event routed while its destination is DISABLED is held, pending, and delivered once the destination is enabled', async () => {
  const dst = await h.destination(rx.url);
  await disable(dst.id);
  const { eventId, deliveryId, held } = await routedEvent(dst.id);
  expect(held).toBe(1);
  expect(await queued()).not.toContain(deliveryId);
  expect(await h.event(eventId)).toMatchObject({ status: 'filtered', status_reason: null });

  // A deliver job naming it is consumed without a claim: no lease, no attempt, still pending.
  expect(await h.run([deliveryId])).toMatchObject({ claimed: 0 });
  expect(await h.row(deliveryId)).toMatchObject({ status: 'pending', lease_owner: null, lease_until: null, attempt_count: 0 });
  // Overdue, it is still left alone by every recovery sweep (no re-enqueue loop).
  await h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() - interval '1 minute' WHERE id = $1`, [deliveryId]);
  const before = (await h.row(deliveryId)).updated_at;
  expect(await sweep()).toBe(0);
  expect(await sweep()).toBe(0);
  expect((await h.row(deliveryId)).updated_at).toEqual(before);
  expect(await queued()).not.toContain(deliveryId);
  expect(rx.requests).toHaveLength(0);

  // Enabled: handed to the deliverer at once, not at the next sweep.
  await changeState(app, 'destination', h.tenantId, dst.id, 'enable');
  expect(await queued()).toContain(deliveryId);
  expect((await h.row(deliveryId)).next_attempt_at.getTime()).toBeGreaterThan(Date.now() - 10_000);
  h.startWorker();
  await waitFor(async () => (await h.row(deliveryId)).status === 'delivered', { what: 'the held delivery sent after the enable' });
  expect(rx.requests.map((r) => r.headers['x-service-delivery-idempotency-key'])).toEqual([deliveryId]);
  expect((await h.event(eventId)).status).toBe('delivered');
});

test('a held delivery whose destination is deleted goes to the DLQ and is never sent', async () => {
  const dst = await h.destination(rx.url);
  await disable(dst.id);
  const { eventId, deliveryId } = await routedEvent(dst.id);
  const sent = rx.requests.length;
  await changeState(app, 'destination', h.tenantId, dst.id, 'delete');
  expect(await h.row(deliveryId)).toMatchObject({ status: 'exhausted', last_error: expect.stringMatching(/^destination_deleted: /) });
  expect((await h.row(deliveryId)).exhausted_at).toBeInstanceOf(Date);
  expect(await h.event(eventId)).toMatchObject({ status: 'dlq_queued' });
  expect(await h.run([deliveryId])).toMatchObject({ claimed: 0 });
  expect(rx.requests.length).toBe(sent);
});

test('a delivery being sent while its destination is deleted stays in the DLQ: the late outcome is recorded as an attempt only', async () => {
  const slow = await startReceiver(() => ({ status: 200, body: 'ok', delayMs: 1500 }));
  try {
    const dst = await h.destination(slow.url);
    const { deliveryId, eventId } = await h.delivery(dst.id);
    const sending = h.run([deliveryId]);
    await waitFor(async () => slow.requests.length === 1, { what: 'the request to be in flight' });
    expect((await h.row(deliveryId)).status).toBe('delivering');
    await disable(dst.id);
    await changeState(app, 'destination', h.tenantId, dst.id, 'delete');
    expect(await h.row(deliveryId)).toMatchObject({ status: 'exhausted', lease_owner: null });

    expect(await sending).toMatchObject({ claimed: 1, delivered: 1 });
    const row = await h.row(deliveryId);
    expect(row).toMatchObject({ status: 'exhausted', last_error: expect.stringMatching(/^destination_deleted: /), delivered_at: null, lease_owner: null });
    expect((await h.attempts(deliveryId)).map((a) => a.status_code)).toEqual([200]);
    expect((await h.event(eventId)).status).toBe('dlq_queued');
    // Nothing brings it back: no retry job claims it, no sweep picks it up.
    expect(await h.run([deliveryId])).toMatchObject({ claimed: 0 });
    expect(await sweep()).toBe(0);
  } finally {
    await slow.close();
  }
});
