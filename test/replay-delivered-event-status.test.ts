// A replay marks an event `replayed` only for the deliveries it took out of the DLQ
// (exhausted ones), as retry does: re-sending a delivered delivery of a `dlq_queued` event
// leaves the event `dlq_queued` while its other delivery is still in the DLQ
// (services/api/src/replay/replay.service.ts, REPLAY_SQL's was_exhausted).
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent, type Pipeline } from './api-fixtures';

jest.setTimeout(30_000);

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('replaydlvstatus');
});
afterAll(async () => {
  await h.close();
});

const eventStatus = async (id: string): Promise<string> => (await h.db.pool.query('SELECT status::text AS status FROM events WHERE id = $1', [id])).rows[0].status;
const deliveryStatus = async (id: string): Promise<string> => (await h.db.pool.query('SELECT status::text AS status FROM deliveries WHERE id = $1', [id])).rows[0].status;

describe('replaying a delivered delivery of a dlq_queued event', () => {
  let t: { tenantId: string; apiKey: string };
  let a: Pipeline;
  let b: Pipeline;
  beforeAll(async () => {
    t = await h.tenant();
    a = await createPipeline(h, t.tenantId, t.apiKey, 'a');
    b = await createPipeline(h, t.tenantId, t.apiKey, 'b');
  });

  /** An event dlq_queued: its delivery through `a` exhausted (in the DLQ), through `b` delivered. */
  async function split(): Promise<{ evt: string; exhausted: string; delivered: string }> {
    const evt = await insertEvent(h, t.tenantId, a.ingesterId, { status: 'dlq_queued' });
    const exhausted = await insertDelivery(h, t.tenantId, evt, a, { status: 'exhausted', attempts: 5 });
    const delivered = await insertDelivery(h, t.tenantId, evt, b, { status: 'delivered', attempts: 1 });
    return { evt, exhausted, delivered };
  }

  it('single: the event stays dlq_queued while its exhausted delivery is in the DLQ; replaying that one makes it replayed', async () => {
    const e = await split();
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${e.delivered}/replay`, { key: t.apiKey });
    expect(res.status).toBe(202);
    expect(await deliveryStatus(e.delivered)).toBe('replaying');
    expect(await deliveryStatus(e.exhausted)).toBe('exhausted');
    expect(await eventStatus(e.evt)).toBe('dlq_queued');
    const queued = await h.call('GET', `/v1/tenants/${t.tenantId}/events?status=dlq_queued`, { key: t.apiKey });
    expect(queued.body.events.map((x: { id: string }) => x.id)).toContain(e.evt);

    // Taken out of the DLQ: now replayed.
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${e.exhausted}/replay`, { key: t.apiKey })).status).toBe(202);
    expect(await eventStatus(e.evt)).toBe('replayed');
  });

  it('bulk: status delivered leaves dlq_queued events as they are; a list marks only the events of its exhausted deliveries', async () => {
    const byStatus = await split();
    const res = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { status: 'delivered', destination_id: b.destinationId } });
    expect(res.status).toBe(202);
    expect(res.body.delivery_ids).toContain(byStatus.delivered);
    expect(await deliveryStatus(byStatus.delivered)).toBe('replaying');
    expect(await eventStatus(byStatus.evt)).toBe('dlq_queued');

    // One list, two events: one's exhausted delivery (→ replayed), the other's delivered one (stays dlq_queued).
    const outOfDlq = await split();
    const resent = await split();
    const list = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { delivery_ids: [outOfDlq.exhausted, resent.delivered] } });
    expect(list.status).toBe(202);
    expect([...list.body.delivery_ids].sort()).toEqual([outOfDlq.exhausted, resent.delivered].sort());
    expect(await eventStatus(outOfDlq.evt)).toBe('replayed');
    expect(await eventStatus(resent.evt)).toBe('dlq_queued');
  });
});
