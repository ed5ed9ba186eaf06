// Deleting a destination or a delivery flow closes its open deliveries in the same
// transaction: `exhausted` (the DLQ) with a last_error naming the delete, their events
// rolled up to dlq_queued. Nothing stays pending for ever; the DLQ purge removes them after
// the retention like any exhausted delivery, and replay/retry answer 409.
import { recordOutcomes, type Outcome } from '@hookline/delivery';
import { purgeDlq } from '../services/deliverer/src/purge-dlq';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent, type Pipeline } from './api-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apidelete');
});
afterAll(async () => {
  await h.close();
});

interface Row {
  status: string;
  last_error: string | null;
  last_status_code: number | null;
  exhausted_at: Date | null;
  lease_owner: string | null;
  lease_until: Date | null;
}

async function row(id: string): Promise<Row> {
  const { rows } = await h.db.pool.query('SELECT status::text AS status, last_error, last_status_code, exhausted_at, lease_owner, lease_until FROM deliveries WHERE id = $1', [id]);
  return rows[0];
}

const eventStatus = async (id: string): Promise<{ status: string; failed_at: Date | null }> => (await h.db.pool.query('SELECT status::text AS status, failed_at FROM events WHERE id = $1', [id])).rows[0];

/** A delivery of `p` for a new event, in `status`; leased: under a live lease of `owner`. */
async function delivery(t: { tenantId: string }, p: Pipeline, status: string, opts: { leasedBy?: string; eventId?: string } = {}): Promise<{ id: string; eventId: string }> {
  const eventId = opts.eventId ?? (await insertEvent(h, t.tenantId, p.ingesterId));
  const id = await insertDelivery(h, t.tenantId, eventId, p, { status, attempts: status === 'pending' ? 0 : 2, at: new Date(Date.now() - 60_000) });
  await h.db.pool.query(`UPDATE deliveries SET last_status_code = CASE WHEN status = 'pending' THEN NULL ELSE 503 END, replay_count = CASE WHEN status = 'replaying' THEN 1 ELSE 0 END WHERE id = $1`, [id]);
  if (opts.leasedBy) await h.db.pool.query(`UPDATE deliveries SET lease_owner = $2, lease_until = now() + interval '2 minutes' WHERE id = $1`, [id, opts.leasedBy]);
  return { id, eventId };
}

describe('deleting a destination', () => {
  it('moves its open deliveries to the DLQ in the same transaction and rolls their events up; other deliveries are untouched', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'a');
    const other = await createPipeline(h, t.tenantId, t.apiKey, 'b');
    const pending = await delivery(t, p, 'pending');
    const failed = await delivery(t, p, 'failed');
    const replaying = await delivery(t, p, 'replaying');
    const leased = await delivery(t, p, 'pending', { leasedBy: 'deliverer-x:0a1b2c' });
    const delivered = await delivery(t, p, 'delivered');
    const old = await delivery(t, p, 'exhausted');
    const oldExhaustedAt = (await row(old.id)).exhausted_at;
    const untouched = await delivery(t, other, 'pending');
    // One event with a delivery to each destination: it ends in the DLQ too.
    const shared = await delivery(t, other, 'delivered');
    const sharedOpen = await delivery(t, p, 'failed', { eventId: shared.eventId });

    const base = `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}`;
    expect((await h.call('DELETE', base, { key: t.apiKey })).status).toBe(409);
    expect((await h.call('POST', `${base}/disable`, { key: t.apiKey })).status).toBe(200);
    const del = await h.call('DELETE', base, { key: t.apiKey });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: p.destinationId, state: 'DELETED' });

    for (const d of [pending, failed, replaying, leased, sharedOpen]) {
      const r = await row(d.id);
      expect(r).toMatchObject({ status: 'exhausted', lease_owner: null, lease_until: null });
      expect(r.last_error).toMatch(/^destination_deleted: the destination was deleted/);
      expect(r.exhausted_at).toBeInstanceOf(Date);
      const e = await eventStatus(d.eventId);
      expect(e.status).toBe('dlq_queued');
      expect(e.failed_at).toBeInstanceOf(Date);
    }
    expect((await row(failed.id)).last_status_code).toBe(503);
    expect((await row(delivered.id)).status).toBe('delivered');
    expect(await row(old.id)).toMatchObject({ status: 'exhausted', exhausted_at: oldExhaustedAt });
    expect((await row(untouched.id)).status).toBe('pending');
    expect((await eventStatus(untouched.eventId)).status).toBe('filtered');

    // The DLQ shows them with the reason.
    const dlq = await h.call('GET', `/v1/dlq?destination_id=${p.destinationId}`, { key: t.apiKey });
    expect(dlq.status).toBe(200);
    expect(dlq.body.deliveries.map((d: { id: string }) => d.id).sort()).toEqual([pending, failed, replaying, leased, old, sharedOpen].map((d) => d.id).sort());
    expect(dlq.body.deliveries.find((d: { id: string }) => d.id === pending.id)).toMatchObject({ status: 'exhausted', last_error: expect.stringMatching(/^destination_deleted: /) });

    // Replay and retry refuse them, with the problem replay gives for an inactive destination.
    const replay = await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${pending.id}/replay`, { key: t.apiKey });
    expect(replay.status).toBe(409);
    expect(replay.body).toMatchObject({ type: 'https://hookline.dev/errors/conflict', reason_code: 'destination_not_active' });
    const retry = await h.call('POST', `/v1/tenants/${t.tenantId}/events/${pending.eventId}/retry`, { key: t.apiKey });
    expect(retry.status).toBe(409);
    expect(retry.body).toMatchObject({ type: replay.body.type, status: replay.body.status, reason_code: 'destination_not_active' });
    expect((await row(pending.id)).status).toBe('exhausted');
  });

  it('keeps a delivery closed when the attempt that was in flight during the delete is recorded afterwards, and purges it after the DLQ retention', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const owner = 'deliverer-y:3d4e5f';
    const leased = await delivery(t, p, 'failed', { leasedBy: owner });
    const base = `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}`;
    await h.call('POST', `${base}/disable`, { key: t.apiKey });
    expect((await h.call('DELETE', base, { key: t.apiKey })).status).toBe(200);

    // The deliverer records its attempt (a 200) under the lease it had.
    const outcome: Outcome = {
      deliveryId: leased.id,
      tenantId: t.tenantId,
      eventId: leased.eventId,
      attemptNumber: 3,
      result: { statusCode: 200, errorKind: null, error: null, responseBody: 'ok', responseHeaders: {}, startedAt: new Date(), durationMs: 12 },
      decision: { status: 'delivered' },
    };
    await recordOutcomes(h.db.pool, owner, [outcome]);
    expect(await row(leased.id)).toMatchObject({ status: 'exhausted', lease_owner: null, last_error: expect.stringMatching(/^destination_deleted: /) });
    const { rows: attempts } = await h.db.pool.query('SELECT number, status_code FROM delivery_attempts WHERE delivery_id = $1 ORDER BY number', [leased.id]);
    expect(attempts.map((a: { status_code: number }) => a.status_code)).toEqual([500, 500, 200]);
    expect((await eventStatus(leased.eventId)).status).toBe('dlq_queued');

    // Purged like any exhausted delivery once the retention is over.
    await new Promise((r) => setTimeout(r, 20));
    await purgeDlq(h.db.pool, { retentionMs: 10 });
    expect(await row(leased.id)).toBeUndefined();
  });
});

describe('deleting a delivery flow', () => {
  it("moves only that flow's open deliveries to the DLQ; replay answers flow_not_active", async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'a');
    // A second flow from the same ingester to the same destination.
    const second = await h.call('POST', `/v1/tenants/${t.tenantId}/delivery-flows`, { key: t.apiKey, body: { name: 'a-flow-2', endpoint: p.ingesterId, target: p.destinationId } });
    const q: Pipeline = { ...p, flowId: second.body.id };
    const pending = await delivery(t, p, 'pending');
    const failed = await delivery(t, p, 'failed');
    const kept = await delivery(t, q, 'pending', { eventId: pending.eventId });

    const base = `/v1/tenants/${t.tenantId}/delivery-flows/${p.flowId}`;
    await h.call('POST', `${base}/disable`, { key: t.apiKey });
    expect((await h.call('DELETE', base, { key: t.apiKey })).status).toBe(200);

    for (const d of [pending, failed]) expect(await row(d.id)).toMatchObject({ status: 'exhausted', last_error: expect.stringMatching(/^flow_deleted: the delivery flow was deleted/) });
    expect((await row(kept.id)).status).toBe('pending');
    expect((await eventStatus(pending.eventId)).status).toBe('dlq_queued');
    expect((await eventStatus(failed.eventId)).status).toBe('dlq_queued');

    const replay = await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${failed.id}/replay`, { key: t.apiKey });
    expect(replay.status).toBe(409);
    expect(replay.body).toMatchObject({ type: 'https://hookline.dev/errors/conflict', reason_code: 'flow_not_active' });
    expect((await row(failed.id)).status).toBe('exhausted');
    const bulk = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { destination_id: p.destinationId } });
    expect(bulk.body).toEqual({ replayed: 0, delivery_ids: [] });
  });
});
