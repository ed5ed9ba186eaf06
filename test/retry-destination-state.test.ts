// Retry looks at each delivery's destination and flow: ACTIVE destination → pending and
// enqueued; DISABLED destination → pending and held (enqueued when it is enabled);
// DELETED destination or a flow that is not ACTIVE → left as it is. Nothing retryable →
// 409 with the problem replay gives for an inactive destination (or flow).
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent, setOwnerState, type Pipeline } from './api-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apiretrystate');
});
afterAll(async () => {
  await h.close();
});

async function queuedDeliveryIds(): Promise<string[]> {
  const jobs = await h.producer.queue('deliver').getJobs(['waiting', 'delayed', 'prioritized']);
  return jobs.flatMap((j) => (j.data as { deliveryIds: string[] }).deliveryIds);
}

const status = async (id: string): Promise<string> => (await h.db.pool.query('SELECT status::text AS status FROM deliveries WHERE id = $1', [id])).rows[0].status;

describe('retry and the destination and flow states', () => {
  it('retries deliveries of ACTIVE destinations (enqueued) and DISABLED ones (held until enabled), not those of DELETED destinations or inactive flows', async () => {
    const t = await h.tenant();
    const active = await createPipeline(h, t.tenantId, t.apiKey, 'active');
    const disabled = await createPipeline(h, t.tenantId, t.apiKey, 'disabled');
    const deleted = await createPipeline(h, t.tenantId, t.apiKey, 'deleted');
    const flowOff = await createPipeline(h, t.tenantId, t.apiKey, 'flowoff');
    const flowGone = await createPipeline(h, t.tenantId, t.apiKey, 'flowgone');
    await setOwnerState(h, t, 'destinations', disabled.destinationId, 'DISABLED');
    await setOwnerState(h, t, 'destinations', deleted.destinationId, 'DELETED');
    await setOwnerState(h, t, 'delivery-flows', flowOff.flowId, 'DISABLED');
    await setOwnerState(h, t, 'delivery-flows', flowGone.flowId, 'DELETED');

    const evt = await insertEvent(h, t.tenantId, active.ingesterId, { status: 'dlq_queued' });
    const make = (p: Pipeline, s: string) => insertDelivery(h, t.tenantId, evt, p, { status: s, attempts: 5 });
    const a = await make(active, 'exhausted');
    const d = await make(disabled, 'failed');
    const gone = await make(deleted, 'exhausted');
    const off = await make(flowOff, 'exhausted');
    const flowDeleted = await make(flowGone, 'exhausted');

    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/events/${evt}/retry`, { key: t.apiKey });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ event_id: evt, retried: 2 });
    expect([...res.body.delivery_ids].sort()).toEqual([a, d].sort());
    expect(await status(a)).toBe('replaying'); // out of the DLQ (SPEC.md: re-queued from the DLQ for retry)
    expect(await status(d)).toBe('pending');
    for (const id of [gone, off, flowDeleted]) expect(await status(id)).toBe('exhausted');
    const queued = await queuedDeliveryIds();
    expect(queued).toContain(a);
    // Held: not handed to the deliverer while its destination is disabled.
    expect(queued).not.toContain(d);

    // The API shows it pending, among the destination's pending deliveries.
    const shown = await h.call('GET', `/v1/tenants/${t.tenantId}/deliveries/${d}`, { key: t.apiKey });
    expect(shown.body).toMatchObject({ id: d, status: 'pending', destination_id: disabled.destinationId });
    const list = await h.call('GET', `/v1/tenants/${t.tenantId}/deliveries?destination_id=${disabled.destinationId}&status=pending`, { key: t.apiKey });
    expect(list.body.deliveries.map((x: { id: string }) => x.id)).toEqual([d]);

    // Enabled: the held retry goes to the deliverer at once.
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${disabled.destinationId}/enable`, { key: t.apiKey })).body.state).toBe('ACTIVE');
    expect(await queuedDeliveryIds()).toContain(d);
  });

  it('answers 409 destination_not_active, as replay does, when the only failed deliveries belong to a DELETED destination', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    await setOwnerState(h, t, 'destinations', p.destinationId, 'DELETED');
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted', attempts: 5 });

    const retry = await h.call('POST', `/v1/tenants/${t.tenantId}/events/${evt}/retry`, { key: t.apiKey });
    const replay = await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey });
    expect(retry.status).toBe(409);
    expect(replay.status).toBe(409);
    expect(retry.headers.get('content-type')).toBe(replay.headers.get('content-type'));
    expect(retry.body).toMatchObject({ type: replay.body.type, title: replay.body.title, status: 409, reason_code: 'destination_not_active' });
    expect(replay.body.reason_code).toBe('destination_not_active');
    expect(Object.keys(retry.body).sort()).toEqual(Object.keys(replay.body).sort());
    expect(await status(dlv)).toBe('exhausted');
    expect(await queuedDeliveryIds()).not.toContain(dlv);

    // The flat route and a flow that is not ACTIVE: the same shape, flow_not_active.
    const q = await createPipeline(h, t.tenantId, t.apiKey, 'q');
    await setOwnerState(h, t, 'delivery-flows', q.flowId, 'DISABLED');
    const evt2 = await insertEvent(h, t.tenantId, q.ingesterId, { status: 'failed' });
    const dlv2 = await insertDelivery(h, t.tenantId, evt2, q, { status: 'failed', attempts: 1 });
    const flat = await h.call('POST', '/v1/retry', { key: t.apiKey, body: { event_id: evt2 } });
    expect(flat.status).toBe(409);
    expect(flat.body).toMatchObject({ type: replay.body.type, reason_code: 'flow_not_active' });
    expect(await status(dlv2)).toBe('failed');
  });

  it('answers 409 payload_not_retained when the payload is gone, changing nothing', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued', payload: false });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted', attempts: 5 });
    const retry = await h.call('POST', `/v1/tenants/${t.tenantId}/events/${evt}/retry`, { key: t.apiKey });
    expect(retry.status).toBe(409);
    expect(retry.body).toMatchObject({ type: 'https://hookline.dev/errors/conflict', reason_code: 'payload_not_retained' });
    expect(await status(dlv)).toBe('exhausted');
  });
});

describe('enabling a destination or a flow', () => {
  it('hands its due held deliveries to the deliverer at once; ones not yet due keep their schedule', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    await setOwnerState(h, t, 'destinations', p.destinationId, 'DISABLED');
    const e1 = await insertEvent(h, t.tenantId, p.ingesterId);
    const e2 = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'failed' });
    const held = await insertDelivery(h, t.tenantId, e1, p, { status: 'pending', at: new Date(Date.now() - 5_000) });
    const later = await insertDelivery(h, t.tenantId, e2, p, { status: 'failed', attempts: 1 });
    await h.db.pool.query(`UPDATE deliveries SET next_attempt_at = now() + interval '1 hour' WHERE id = $1`, [later]);
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/deliveries/${held}`, { key: t.apiKey })).body.status).toBe('pending');
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}`, { key: t.apiKey })).body.state).toBe('DISABLED');

    await h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}/enable`, { key: t.apiKey });
    const queued = await queuedDeliveryIds();
    expect(queued).toContain(held);
    expect(queued).not.toContain(later);
    const { rows } = await h.db.pool.query('SELECT next_attempt_at FROM deliveries WHERE id = $1', [held]);
    expect(rows[0].next_attempt_at.getTime()).toBeGreaterThan(Date.now() - 4_000);

    // A disabled flow's held delivery: the same on the flow's enable.
    const q = await createPipeline(h, t.tenantId, t.apiKey, 'q');
    await setOwnerState(h, t, 'delivery-flows', q.flowId, 'DISABLED');
    const flowHeld = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, q.ingesterId), q, { status: 'pending', at: new Date(Date.now() - 5_000) });
    expect(await queuedDeliveryIds()).not.toContain(flowHeld);
    await h.call('POST', `/v1/tenants/${t.tenantId}/delivery-flows/${q.flowId}/enable`, { key: t.apiKey });
    expect(await queuedDeliveryIds()).toContain(flowHeld);
  });
});
