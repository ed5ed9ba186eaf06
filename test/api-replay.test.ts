import { newId } from '@hookline/db';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent } from './api-fixtures';

/** A tenant with a dedicated deliverer pool, as the router and deliverers would be told too. */
const POOLED_TENANT = newId('ten');

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apireplay', { DEDICATED_POOLS: `${POOLED_TENANT}=acme` });
});
afterAll(async () => {
  await h.close();
});

/** Delivery ids of the jobs waiting in Redis on `deliver`, or on `deliver.<pool>`. */
async function queuedDeliveryIds(pool?: string): Promise<string[]> {
  const jobs = await h.producer.queue('deliver', pool).getJobs(['waiting', 'delayed', 'prioritized']);
  return jobs.flatMap((j) => (j.data as { v: number; deliveryIds: string[] }).deliveryIds);
}

async function row(id: string): Promise<{ status: string; replay_count: number; next_attempt_at: Date }> {
  const { rows } = await h.db.pool.query('SELECT status, replay_count, next_attempt_at FROM deliveries WHERE id = $1', [id]);
  return rows[0];
}

describe('retry', () => {
  it("re-queues the event's failed and exhausted deliveries, leaving delivered ones alone", async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'a');
    const q = await createPipeline(h, t.tenantId, t.apiKey, 'b');
    const r = await createPipeline(h, t.tenantId, t.apiKey, 'c');
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
    const exhausted = await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted', attempts: 5, at: new Date(Date.now() - 60_000) });
    const failed = await insertDelivery(h, t.tenantId, evt, q, { status: 'failed', attempts: 2 });
    const delivered = await insertDelivery(h, t.tenantId, evt, r, { status: 'delivered', attempts: 1 });

    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/events/${evt}/retry`, { key: t.apiKey });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ event_id: evt, retried: 2 });
    expect(res.body.delivery_ids.sort()).toEqual([exhausted, failed].sort());
    expect((await row(exhausted)).status).toBe('pending');
    expect((await row(exhausted)).next_attempt_at.getTime()).toBeGreaterThan(Date.now() - 5000);
    expect((await row(delivered)).status).toBe('delivered');
    expect((await queuedDeliveryIds()).sort()).toEqual(expect.arrayContaining([exhausted, failed]));

    const again = await h.call('POST', `/v1/retry`, { key: t.apiKey, body: { event_id: evt } });
    expect(again.status).toBe(409);
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/events/evt_00000000000000000000000000/retry`, { key: t.apiKey })).status).toBe(404);
  });
});

describe('replay', () => {
  it('replays an exhausted delivery whose payload is retained', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted', attempts: 5 });
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ id: dlv, status: 'replaying', replay_count: 1 });
    const { rows } = await h.db.pool.query('SELECT status FROM events WHERE id = $1', [evt]);
    expect(rows[0].status).toBe('replayed');
    expect(await queuedDeliveryIds()).toContain(dlv);
    const twice = await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey });
    expect(twice.status).toBe(409);
    expect(twice.body).toMatchObject({ reason_code: 'not_replayable', current_status: 'replaying' });
  });

  it('refuses with 409 payload_not_retained once the payload is gone, changing nothing', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued', payload: false });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted', attempts: 5 });
    const res = await h.call('POST', `/v1/replay`, { key: t.apiKey, body: { delivery_id: dlv } });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/conflict', reason_code: 'payload_not_retained' });
    expect(await row(dlv)).toMatchObject({ status: 'exhausted', replay_count: 0 });
  });

  it('refuses while the destination is disabled', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const dlv = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId), p, { status: 'exhausted', attempts: 5 });
    await h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}/disable`, { key: t.apiKey });
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey });
    expect(res.body.reason_code).toBe('destination_not_active');
  });

  it('replays the DLQ in bulk by filter, skipping what cannot be replayed', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'a');
    const q = await createPipeline(h, t.tenantId, t.apiKey, 'b');
    const old = new Date(Date.now() - 3_600_000);
    const a1 = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId), p, { status: 'exhausted', attempts: 5 });
    const a2 = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId), p, { status: 'exhausted', attempts: 5, at: old });
    const gone = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { payload: false }), p, { status: 'exhausted', attempts: 5 });
    const done = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId), p, { status: 'delivered', attempts: 1 });
    const b1 = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, q.ingesterId), q, { status: 'exhausted', attempts: 5 });

    const dlq = await h.call('GET', '/v1/dlq', { key: t.apiKey });
    expect(dlq.body.deliveries.map((d: { id: string }) => d.id).sort()).toEqual([a1, a2, gone, b1].sort());

    const recent = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { destination_id: p.destinationId, since: new Date(Date.now() - 600_000).toISOString() } });
    expect(recent.status).toBe(202);
    expect(recent.body).toEqual({ replayed: 1, delivery_ids: [a1] });
    const rest = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { destination_id: p.destinationId } });
    expect(rest.body).toEqual({ replayed: 1, delivery_ids: [a2] });
    expect((await row(gone)).status).toBe('exhausted');
    expect((await row(done)).status).toBe('delivered');
    expect((await row(b1)).status).toBe('exhausted');
    const bad = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { status: 'pending' } });
    expect(bad.status).toBe(400);
  });
});

describe('dedicated pools', () => {
  it("puts a pooled tenant's retries and replays on its pool's queue, never on the shared one", async () => {
    const t = await h.tenant({ id: POOLED_TENANT });
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const failed = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { status: 'failed' }), p, { status: 'failed', attempts: 2 });
    const one = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' }), p, { status: 'exhausted', attempts: 5 });
    const bulk = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' }), p, { status: 'exhausted', attempts: 5 });
    const evt = (await h.db.pool.query('SELECT event_id FROM deliveries WHERE id = $1', [failed])).rows[0].event_id;

    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/events/${evt}/retry`, { key: t.apiKey })).status).toBe(202);
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${one}/replay`, { key: t.apiKey })).status).toBe(202);
    expect((await h.call('POST', '/v1/replay', { key: t.apiKey, body: { delivery_ids: [bulk] } })).body).toEqual({ replayed: 1, delivery_ids: [bulk] });

    expect((await queuedDeliveryIds('acme')).sort()).toEqual([failed, one, bulk].sort());
    const shared = await queuedDeliveryIds();
    for (const id of [failed, one, bulk]) expect(shared).not.toContain(id);
  });
});
