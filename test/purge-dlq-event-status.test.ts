// The DLQ purge rolls the events of the entries it deletes up again, in its transaction
// (services/deliverer/src/purge-dlq.ts): an event is dlq_queued only while one of its
// deliveries is in the DLQ. From the deliveries that remain: another exhausted one →
// dlq_queued; a failed one → failed; all delivered → delivered; only open ones (pending,
// held, replaying) or none → failed. Delivered events are not moved back.
import { recordOutcomes } from '@hookline/delivery';
import { purgeDlq } from '../services/deliverer/src/purge-dlq';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent, type Pipeline } from './api-fixtures';

jest.setTimeout(30_000);

const DAY = 86_400_000;
const RETENTION = 7 * DAY;
let h: ApiHarness;

beforeAll(async () => {
  h = await startApi('purgestatus');
});
afterAll(async () => {
  await h.close();
});

const eightDaysAgo = (): Date => new Date(Date.now() - 8 * DAY);

async function event(id: string): Promise<{ status: string; status_reason: string | null; payload: boolean; deliveries: string[] }> {
  const { rows } = await h.db.pool.query(
    `SELECT e.status::text AS status, e.status_reason, EXISTS (SELECT 1 FROM event_payloads p WHERE p.event_id = e.id) AS payload,
            ARRAY(SELECT d.status::text FROM deliveries d WHERE d.event_id = e.id ORDER BY d.id) AS deliveries
       FROM events e WHERE e.id = $1`,
    [id],
  );
  return rows[0];
}

/** The deliverer's outcome for a delivery: leased by `L`, then recorded as `status` (roll-up included). */
async function record(tenantId: string, eventId: string, deliveryId: string, status: 'delivered' | 'exhausted'): Promise<void> {
  await h.db.pool.query(`UPDATE deliveries SET lease_owner = 'L', lease_until = now() + interval '1 minute' WHERE id = $1`, [deliveryId]);
  const written = await recordOutcomes(h.db.pool, 'L', [{
    deliveryId, tenantId, eventId, attemptNumber: 9,
    decision: { status },
    result: { statusCode: status === 'delivered' ? 200 : 500, errorKind: null, error: null, responseBody: '', responseHeaders: null, startedAt: new Date(), durationMs: 1 },
  }]);
  expect(written).toHaveLength(1);
}

describe('DLQ purge and the event status', () => {
  let t: { tenantId: string; apiKey: string };
  let a: Pipeline;
  let b: Pipeline;
  beforeAll(async () => {
    t = await h.tenant();
    a = await createPipeline(h, t.tenantId, t.apiKey, 'a');
    b = await createPipeline(h, t.tenantId, t.apiKey, 'b');
  });

  it('an event whose only DLQ entry expired and whose other delivery was delivered becomes delivered; a younger entry keeps it dlq_queued; a delivered event stays delivered', async () => {
    // The reported case: D1 exhausted long ago, D2 delivered, the event dlq_queued.
    const main = await insertEvent(h, t.tenantId, a.ingesterId, { status: 'dlq_queued' });
    const mainOld = await insertDelivery(h, t.tenantId, main, a, { status: 'exhausted', attempts: 5, at: eightDaysAgo() });
    const mainDone = await insertDelivery(h, t.tenantId, main, b, { status: 'delivered', attempts: 1 });
    // A younger DLQ entry of the same event is still there: dlq_queued stays.
    const younger = await insertEvent(h, t.tenantId, a.ingesterId, { status: 'dlq_queued' });
    await insertDelivery(h, t.tenantId, younger, a, { status: 'exhausted', attempts: 5, at: eightDaysAgo() });
    await insertDelivery(h, t.tenantId, younger, b, { status: 'exhausted', attempts: 5 });
    // A delivered event whose re-sent delivery ended in the DLQ keeps its status.
    const delivered = await insertEvent(h, t.tenantId, a.ingesterId, { status: 'delivered' });
    await insertDelivery(h, t.tenantId, delivered, a, { status: 'exhausted', attempts: 6, at: eightDaysAgo() });
    await insertDelivery(h, t.tenantId, delivered, b, { status: 'delivered', attempts: 1 });

    expect(await purgeDlq(h.db.pool, { retentionMs: RETENTION })).toEqual({ deliveries: 3, payloads: 2 });

    expect(await event(main)).toEqual({ status: 'delivered', status_reason: 'payload_purged', payload: false, deliveries: ['delivered'] });
    const shown = await h.call('GET', `/v1/tenants/${t.tenantId}/events/${main}`, { key: t.apiKey });
    expect(shown.body).toMatchObject({ id: main, status: 'delivered' });
    // Nothing of it is listed as dlq_queued any more, and its delivery is what remains.
    const queued = await h.call('GET', `/v1/tenants/${t.tenantId}/events?status=dlq_queued`, { key: t.apiKey });
    expect(queued.body.events.map((e: { id: string }) => e.id)).not.toContain(main);
    expect(await h.db.pool.query('SELECT 1 FROM deliveries WHERE id = $1', [mainOld])).toMatchObject({ rowCount: 0 });
    expect(await h.db.pool.query('SELECT 1 FROM deliveries WHERE id = $1', [mainDone])).toMatchObject({ rowCount: 1 });

    expect(await event(younger)).toEqual({ status: 'dlq_queued', status_reason: null, payload: true, deliveries: ['exhausted'] });
    expect(await event(delivered)).toEqual({ status: 'delivered', status_reason: 'payload_purged', payload: false, deliveries: ['delivered'] });
  });

  it('an event left with a failed or an open delivery becomes failed, then delivered by the outcome; one with none left becomes failed', async () => {
    // The variant: D2 still failed (being retried) when D1 is purged, delivered later.
    const failing = await insertEvent(h, t.tenantId, a.ingesterId, { status: 'dlq_queued' });
    await insertDelivery(h, t.tenantId, failing, a, { status: 'exhausted', attempts: 5, at: eightDaysAgo() });
    const failingSibling = await insertDelivery(h, t.tenantId, failing, b, { status: 'failed', attempts: 2 });
    // D2 pending (open, no failure yet): the roll-up alone would leave the event as it was.
    const open = await insertEvent(h, t.tenantId, a.ingesterId, { status: 'dlq_queued' });
    await insertDelivery(h, t.tenantId, open, a, { status: 'exhausted', attempts: 5, at: eightDaysAgo() });
    const openSibling = await insertDelivery(h, t.tenantId, open, b, { status: 'pending' });
    // Its only delivery purged.
    const alone = await insertEvent(h, t.tenantId, a.ingesterId, { status: 'dlq_queued' });
    await insertDelivery(h, t.tenantId, alone, a, { status: 'exhausted', attempts: 5, at: eightDaysAgo() });

    expect(await purgeDlq(h.db.pool, { retentionMs: RETENTION })).toEqual({ deliveries: 3, payloads: 1 });

    expect(await event(failing)).toEqual({ status: 'failed', status_reason: null, payload: true, deliveries: ['failed'] });
    expect(await event(open)).toEqual({ status: 'failed', status_reason: null, payload: true, deliveries: ['pending'] });
    expect(await event(alone)).toEqual({ status: 'failed', status_reason: 'payload_purged', payload: false, deliveries: [] });

    // Then the outcomes roll them up as usual: failed → delivered (never dlq_queued → delivered).
    await record(t.tenantId, failing, failingSibling, 'delivered');
    expect((await event(failing)).status).toBe('delivered');
    // An open one exhausted later puts its event back in the DLQ.
    await record(t.tenantId, open, openSibling, 'exhausted');
    expect(await event(open)).toMatchObject({ status: 'dlq_queued', deliveries: ['exhausted'] });

    // The failed one can be retried: a retry of the event takes it (not `replayed`: nothing left the DLQ).
    const again = await insertEvent(h, t.tenantId, a.ingesterId, { status: 'dlq_queued' });
    await insertDelivery(h, t.tenantId, again, a, { status: 'exhausted', attempts: 5, at: eightDaysAgo() });
    const againSibling = await insertDelivery(h, t.tenantId, again, b, { status: 'failed', attempts: 2 });
    await purgeDlq(h.db.pool, { retentionMs: RETENTION });
    const retry = await h.call('POST', `/v1/tenants/${t.tenantId}/events/${again}/retry`, { key: t.apiKey });
    expect(retry.status).toBe(202);
    expect(retry.body).toMatchObject({ retried: 1, delivery_ids: [againSibling] });
    expect((await event(again)).status).toBe('failed');
  });
});
