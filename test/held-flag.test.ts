// The `held` flag (migration 20261124000000_held_deliveries) on open deliveries of a
// DISABLED destination, which keeps them out of the recovery sweep's index: stored by the
// router and by retry into a DISABLED destination, set on the open deliveries when the
// destination is disabled (by the api, automatically, or by plain SQL: a trigger on
// destinations.state keeps it), cleared when it is enabled (in the same statement,
// keeping next_attempt_at) and by a delete (with the move to the DLQ). With it, held_since
// (migration 20261125000000_held_expiry; the held expiry counts from it): now whenever
// `held` becomes true, NULL whenever it is cleared.
import { disableDestination } from '@hookline/delivery';
import { createLogger } from '@hookline/logger';
import { startReceiver, waitFor, type Receiver } from '@hookline/testing';
import type { AppContext } from '../services/api/src/context';
import { changeState } from '../services/api/src/lifecycle/lifecycle';
import { retryEvent } from '../services/api/src/replay/replay.service';
import { FlowCache } from '../services/router/src/flow-cache';
import { routeEvents, type RouteDeps } from '../services/router/src/route-events';
import { createHarness, type Harness } from './deliverer-fixtures';
import { insertEvent, insertFlow, insertIngester } from './router-fixtures';

jest.setTimeout(60_000);

let h: Harness;
let rx: Receiver;
let app: AppContext;
let router: RouteDeps;
const logger = createLogger('held-flag-test', 'error');

beforeAll(async () => {
  h = await createHarness('heldflag');
  rx = await startReceiver();
  app = { pool: h.db.pool, redis: h.redis, producer: h.deps.producer, config: { QUEUE_PREFIX: h.prefix, pools: new Map() }, logger } as unknown as AppContext;
  router = { pool: h.db.pool, producer: h.deps.producer, flows: new FlowCache(h.db.pool, 0), logger };
  h.startWorker();
});

afterAll(async () => {
  await rx?.close();
  await h?.close();
});

const flags = async (ids: string[]): Promise<Record<string, { held: boolean; held_since: Date | null; status: string; next_attempt_at: Date }>> => {
  const { rows } = await h.db.pool.query<{ id: string; held: boolean; held_since: Date | null; status: string; next_attempt_at: Date }>(
    'SELECT id, held, held_since, status::text AS status, next_attempt_at FROM deliveries WHERE id = ANY($1::text[])',
    [ids],
  );
  return Object.fromEntries(rows.map((r) => [r.id, r]));
};
/** held_since of `id`, when it is set, in ms before now (within the last minute: stamped by the statement just run). */
const heldSinceAgo = async (id: string): Promise<number | null> => {
  const t = (await flags([id]))[id]!.held_since;
  return t === null ? null : Date.now() - t.getTime();
};
const justNow = expect.any(Date);
const stampedNow = async (id: string): Promise<void> => {
  const ago = await heldSinceAgo(id);
  expect(ago).not.toBeNull();
  expect(Math.abs(ago!)).toBeLessThan(60_000);
};

/** An ACTIVE flow to `destinationId` and one validated event of its ingester, routed. */
async function routedEvent(destinationId: string): Promise<string> {
  const ingesterId = await insertIngester(h.db.pool, h.tenantId);
  await insertFlow(h.db.pool, { tenantId: h.tenantId, ingesterId, destinationId });
  const eventId = await insertEvent(h.db.pool, { tenantId: h.tenantId, ingesterId });
  const out = await routeEvents(router, { eventIds: [eventId] });
  expect(out.deliveryIds).toHaveLength(1);
  return out.deliveryIds[0]!;
}

/** A destination with a delivery stopped on its retry schedule (failed, due in an hour) and one delivered. */
async function failedAndDelivered(): Promise<{ dst: { id: string }; open: string; done: string; scheduled: Date }> {
  const dst = await h.destination(rx.url);
  const open = (await h.delivery(dst.id)).deliveryId;
  const done = (await h.delivery(dst.id)).deliveryId;
  await h.db.pool.query(`UPDATE deliveries SET status = 'failed', attempt_count = 1, next_attempt_at = now() + interval '1 hour' WHERE id = $1`, [open]);
  await h.db.pool.query(`UPDATE deliveries SET status = 'delivered', delivered_at = now() WHERE id = $1`, [done]);
  return { dst, open, done, scheduled: (await flags([open]))[open]!.next_attempt_at };
}

test('disable marks the open deliveries held, routing to the DISABLED destination stores held, enable clears it in its transaction', async () => {
  const { dst, open: waiting, done, scheduled } = await failedAndDelivered();

  await changeState(app, 'destination', h.tenantId, dst.id, 'disable');
  expect(await flags([waiting, done])).toMatchObject({ [waiting]: { held: true, held_since: justNow, status: 'failed' }, [done]: { held: false, held_since: null, status: 'delivered' } });
  await stampedNow(waiting);

  const routed = await routedEvent(dst.id);
  expect((await flags([routed]))[routed]).toMatchObject({ held: true, status: 'pending' });
  await stampedNow(routed);

  await changeState(app, 'destination', h.tenantId, dst.id, 'enable');
  // Cleared by the time the enable returns; the retry schedule is kept.
  const after = await flags([waiting, routed]);
  expect(after).toMatchObject({ [waiting]: { held: false, held_since: null, status: 'failed' }, [routed]: { held: false, held_since: null } });
  expect(after[waiting]!.next_attempt_at).toEqual(scheduled);
  await waitFor(async () => (await flags([routed]))[routed]!.status === 'delivered', { what: 'the held delivery sent after the enable' });
});

test('routing to an ACTIVE destination stores held = false', async () => {
  const dst = await h.destination(rx.url);
  const routed = await routedEvent(dst.id);
  expect((await flags([routed]))[routed]).toMatchObject({ held: false, held_since: null });
});

test('an automatic disable marks the open deliveries held', async () => {
  const dst = await h.destination(rx.url);
  const { deliveryId } = await h.delivery(dst.id);
  await h.db.pool.query(`UPDATE deliveries SET status = 'failed', next_attempt_at = now() + interval '1 hour' WHERE id = $1`, [deliveryId]);
  expect(await disableDestination(h.db.pool, h.redis, h.prefix, dst.id, 'failing without a success for 72 h')).toBe(true);
  expect((await flags([deliveryId]))[deliveryId]!.held).toBe(true);
  await stampedNow(deliveryId);
});

test('retry into a DISABLED destination stores held; into an ACTIVE one, not', async () => {
  const off = await h.destination(rx.url);
  const on = await h.destination(rx.url);
  const a = await h.delivery(off.id);
  const b = await h.delivery(on.id);
  await h.db.pool.query(`UPDATE deliveries SET status = 'exhausted', exhausted_at = now(), attempt_count = 5, next_attempt_at = now() + interval '1 hour' WHERE id = ANY($1::text[])`, [[a.deliveryId, b.deliveryId]]);
  // Disabled with no open deliveries: only the retry can mark this one.
  await changeState(app, 'destination', h.tenantId, off.id, 'disable');
  expect((await flags([a.deliveryId]))[a.deliveryId]!.held).toBe(false);

  const deps = { pool: h.db.pool, producer: h.deps.producer, logger, pools: new Map<string, string>() };
  expect(await retryEvent(deps, h.tenantId, a.eventId)).toEqual([a.deliveryId]);
  expect(await retryEvent(deps, h.tenantId, b.eventId)).toEqual([b.deliveryId]);
  expect((await flags([a.deliveryId]))[a.deliveryId]).toMatchObject({ held: true, status: 'replaying' }); // out of the DLQ
  await stampedNow(a.deliveryId);
  expect((await flags([b.deliveryId]))[b.deliveryId]).toMatchObject({ held: false, held_since: null });
});

test('retry of a delivery held long ago into a DISABLED destination holds it from the retry; into an ACTIVE one it clears held_since', async () => {
  const dst = await h.destination(rx.url);
  const { deliveryId, eventId } = await h.delivery(dst.id);
  await h.db.pool.query(`UPDATE deliveries SET status = 'failed', attempt_count = 2, next_attempt_at = now() + interval '1 hour' WHERE id = $1`, [deliveryId]);
  await changeState(app, 'destination', h.tenantId, dst.id, 'disable');
  await h.db.pool.query(`UPDATE deliveries SET held_since = now() - interval '6 days' WHERE id = $1`, [deliveryId]);

  const deps = { pool: h.db.pool, producer: h.deps.producer, logger, pools: new Map<string, string>() };
  expect(await retryEvent(deps, h.tenantId, eventId)).toEqual([deliveryId]);
  expect((await flags([deliveryId]))[deliveryId]).toMatchObject({ held: true, status: 'pending' });
  await stampedNow(deliveryId);

  // Exhausted with its flag left on (an attempt in flight across the disable: the enable
  // clears open deliveries only), then retried into the enabled destination: both cleared.
  await h.db.pool.query(`UPDATE destinations SET state = 'ACTIVE' WHERE id = $1`, [dst.id]);
  await h.db.pool.query(`UPDATE deliveries SET status = 'exhausted', exhausted_at = now(), held = true, held_since = now() - interval '6 days' WHERE id = $1`, [deliveryId]);
  expect(await retryEvent(deps, h.tenantId, eventId)).toEqual([deliveryId]);
  expect((await flags([deliveryId]))[deliveryId]).toMatchObject({ held: false, held_since: null });
});

test('a delete clears held as it moves the open deliveries to the DLQ', async () => {
  const dst = await h.destination(rx.url);
  const { deliveryId } = await h.delivery(dst.id);
  await h.db.pool.query(`UPDATE deliveries SET status = 'failed', next_attempt_at = now() + interval '1 hour' WHERE id = $1`, [deliveryId]);
  await changeState(app, 'destination', h.tenantId, dst.id, 'disable');
  expect((await flags([deliveryId]))[deliveryId]!.held).toBe(true);
  await changeState(app, 'destination', h.tenantId, dst.id, 'delete');
  expect((await flags([deliveryId]))[deliveryId]).toMatchObject({ held: false, held_since: null, status: 'exhausted' });
});

test('plain SQL on destinations.state (manual, or an api replica of an older version) keeps held right both ways', async () => {
  const { dst, open, done, scheduled } = await failedAndDelivered();

  await h.db.pool.query(`UPDATE destinations SET state = 'DISABLED' WHERE id = $1`, [dst.id]);
  expect(await flags([open, done])).toMatchObject({ [open]: { held: true, status: 'failed' }, [done]: { held: false, held_since: null, status: 'delivered' } });
  await stampedNow(open);
  // An UPDATE that leaves the state as it is changes nothing (held_since neither).
  await h.db.pool.query(`UPDATE deliveries SET held_since = now() - interval '6 days' WHERE id = $1`, [open]);
  await h.db.pool.query(`UPDATE destinations SET state = 'DISABLED', updated_at = now() WHERE id = $1`, [dst.id]);
  expect((await flags([open]))[open]!.held).toBe(true);
  expect(await heldSinceAgo(open)).toBeGreaterThan(5 * 86_400_000);

  await h.db.pool.query(`UPDATE destinations SET state = 'ACTIVE' WHERE id = $1`, [dst.id]);
  const after = await flags([open, done]);
  expect(after).toMatchObject({ [open]: { held: false, held_since: null, status: 'failed' }, [done]: { held: false } });
  expect(after[open]!.next_attempt_at).toEqual(scheduled);

  // Disabled again: held from now, not from the first disable. Deleted by hand from
  // DISABLED: they stay held (out of the sweep's index) until closed.
  await h.db.pool.query(`UPDATE destinations SET state = 'DISABLED' WHERE id = $1`, [dst.id]);
  await stampedNow(open);
  await h.db.pool.query(`UPDATE destinations SET state = 'DELETED' WHERE id = $1`, [dst.id]);
  expect((await flags([open]))[open]!.held).toBe(true);
});
