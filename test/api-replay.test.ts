import { newId } from '@hookline/db';
import { recordOutcomes, type Decision } from '@hookline/delivery';
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

async function eventStatus(id: string): Promise<string> {
  return (await h.db.pool.query('SELECT status FROM events WHERE id = $1', [id])).rows[0].status;
}

/** Records one attempt's outcome for `dlv` as the deliverer would (claim, then record_delivery_outcomes). */
async function outcome(tenantId: string, eventId: string, dlv: string, decision: Decision): Promise<void> {
  const { rows } = await h.db.pool.query(`UPDATE deliveries SET lease_owner = 'test', lease_until = now() + interval '1 minute' WHERE id = $1 RETURNING attempt_count`, [dlv]);
  const result = { statusCode: decision.status === 'delivered' ? 200 : 500, errorKind: null, error: null, responseBody: 'r', responseHeaders: null, startedAt: new Date(), durationMs: 5 };
  await recordOutcomes(h.db.pool, 'test', [{ deliveryId: dlv, tenantId, eventId, attemptNumber: rows[0].attempt_count + 1, decision, result }]);
}

/** Runs `fn` while another transaction holds `locked` (FOR UPDATE, in id order), as a send, an outcome or a concurrent replay would. */
async function whileLocked<T>(locked: string[], fn: () => Promise<T>): Promise<T> {
  const other = await h.db.pool.connect();
  try {
    await other.query('BEGIN');
    await other.query('SELECT 1 FROM deliveries WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', [locked]);
    return await fn();
  } finally {
    await other.query('ROLLBACK').catch(() => undefined);
    other.release();
  }
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
    // SPEC.md: `replaying` is "re-queued from the DLQ for retry"; a failed one is pending again.
    expect([(await row(exhausted)).status, (await row(failed)).status]).toEqual(['replaying', 'pending']);
    expect((await row(exhausted)).next_attempt_at.getTime()).toBeGreaterThan(Date.now() - 5000);
    expect((await row(delivered)).status).toBe('delivered');
    expect((await queuedDeliveryIds()).sort()).toEqual(expect.arrayContaining([exhausted, failed]));

    const again = await h.call('POST', `/v1/retry`, { key: t.apiKey, body: { event_id: evt } });
    expect(again.status).toBe(409);
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/events/evt_00000000000000000000000000/retry`, { key: t.apiKey })).status).toBe(404);
  });

  it('takes a dlq_queued event through replayed to delivered when it re-queues its exhausted deliveries', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted', attempts: 5 });
    // A failed event whose failed delivery is retried is not in the DLQ: it stays failed.
    const failedEvt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'failed' });
    await insertDelivery(h, t.tenantId, failedEvt, p, { status: 'failed', attempts: 2 });

    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/events/${evt}/retry`, { key: t.apiKey })).status).toBe(202);
    expect((await h.call('POST', '/v1/retry', { key: t.apiKey, body: { event_id: failedEvt } })).status).toBe(202);
    expect(await row(dlv)).toMatchObject({ status: 'replaying' });
    expect(await eventStatus(evt)).toBe('replayed');
    expect(await eventStatus(failedEvt)).toBe('failed');

    await outcome(t.tenantId, evt, dlv, { status: 'delivered' });
    expect(await eventStatus(evt)).toBe('delivered');
  });
});

describe('replay', () => {
  it('keeps a replayed event replayed while its replay retries (SPEC: replayed -> delivered), back to dlq_queued only when exhausted again', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted', attempts: 5 });
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey })).status).toBe(202);
    expect(await eventStatus(evt)).toBe('replayed');
    // A failed attempt of the replay: the delivery is failed (retried), the event stays replayed.
    await outcome(t.tenantId, evt, dlv, { status: 'failed', delayMs: 1000 });
    expect([(await row(dlv)).status, await eventStatus(evt)]).toEqual(['failed', 'replayed']);
    await outcome(t.tenantId, evt, dlv, { status: 'exhausted' });
    expect([(await row(dlv)).status, await eventStatus(evt)]).toEqual(['exhausted', 'dlq_queued']);
    // Replayed again, and this time delivered.
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey })).status).toBe(202);
    await outcome(t.tenantId, evt, dlv, { status: 'failed', delayMs: 1000 });
    expect(await eventStatus(evt)).toBe('replayed');
    await outcome(t.tenantId, evt, dlv, { status: 'delivered' });
    expect(await eventStatus(evt)).toBe('delivered');
  });

  it('replays an exhausted delivery whose payload is retained', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted', attempts: 5 });
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ id: dlv, status: 'replaying', replay_count: 1 });
    expect(await eventStatus(evt)).toBe('replayed');
    expect(await queuedDeliveryIds()).toContain(dlv);
    const twice = await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey });
    expect(twice.status).toBe(409);
    expect(twice.body).toMatchObject({ reason_code: 'not_replayable', current_status: 'replaying' });
  });

  it('re-sends a delivered delivery without moving its delivered event backwards, whatever the re-send gives', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'a');
    const q = await createPipeline(h, t.tenantId, t.apiKey, 'b');
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'delivered' });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'delivered', attempts: 1 });
    await insertDelivery(h, t.tenantId, evt, q, { status: 'delivered', attempts: 1 });

    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ id: dlv, status: 'replaying', replay_count: 1 });
    expect(await eventStatus(evt)).toBe('delivered');

    // The re-send fails, then is exhausted: the event was delivered and stays so (SPEC: delivered → acked only).
    await outcome(t.tenantId, evt, dlv, { status: 'failed', delayMs: 1000 });
    expect(await eventStatus(evt)).toBe('delivered');
    await outcome(t.tenantId, evt, dlv, { status: 'exhausted' });
    expect(await row(dlv)).toMatchObject({ status: 'exhausted' });
    expect(await eventStatus(evt)).toBe('delivered');
  });

  it('answers 409 replay_in_progress, not not_replayable, while a concurrent replay holds the delivery', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'exhausted', attempts: 5 });
    const res = await whileLocked([dlv], () => h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey }));
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/conflict', reason_code: 'replay_in_progress', detail: expect.stringMatching(/already in progress/) });
    expect(res.body.current_status).toBeUndefined();
    expect(await row(dlv)).toMatchObject({ status: 'exhausted', replay_count: 0 });
    // Released, the delivery is replayed.
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/deliveries/${dlv}/replay`, { key: t.apiKey })).status).toBe(202);
  });

  it('rejects delivery_id combined with status or limit (400 naming them), replaying nothing', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const dlv = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' }), p, { status: 'exhausted', attempts: 5 });
    const res = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { delivery_id: dlv, status: 'exhausted', limit: 5 } });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('https://hookline.dev/errors/validation-error');
    expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['limit', 'status']);
    expect(await row(dlv)).toMatchObject({ status: 'exhausted', replay_count: 0 });
    expect((await h.call('POST', '/v1/replay', { key: t.apiKey, body: { delivery_id: dlv, limit: 1 } })).status).toBe(400);
    expect(await row(dlv)).toMatchObject({ status: 'exhausted', replay_count: 0 });
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

describe('bulk replay past locked deliveries', () => {
  /** `n` exhausted deliveries of `p` with retained payloads, a second apart; their ids sorted. */
  async function inDlq(tenantId: string, p: Awaited<ReturnType<typeof createPipeline>>, n: number): Promise<string[]> {
    const base = Date.now() - 600_000;
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      ids.push(await insertDelivery(h, tenantId, await insertEvent(h, tenantId, p.ingesterId, { status: 'dlq_queued' }), p, { status: 'exhausted', attempts: 5, at: new Date(base + i * 1000) }));
    }
    return ids.sort();
  }

  it('makes up for deliveries another transaction holds with the next matching ones, up to the limit', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const N = 3;
    const k = 2;
    const ids = await inDlq(t.tenantId, p, N + k);
    // k of the first N (in id order) are being worked on elsewhere: row-locked in an open transaction.
    const locked = [ids[0]!, ids[2]!];
    const free = ids.filter((id) => !locked.includes(id));
    await whileLocked(locked, async () => {
      const res = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { destination_id: p.destinationId, limit: N } });
      expect(res.status).toBe(202);
      expect(res.body.replayed).toBe(N);
      expect([...res.body.delivery_ids].sort()).toEqual(free);
      for (const id of free) expect(await row(id)).toMatchObject({ status: 'replaying', replay_count: 1 });
      expect(await queuedDeliveryIds()).toEqual(expect.arrayContaining(free));

      // Nothing else matches while the locks are held: the next call stops at the end of the candidates.
      expect((await h.call('POST', '/v1/replay', { key: t.apiKey, body: { destination_id: p.destinationId, limit: 10 } })).body).toEqual({ replayed: 0, delivery_ids: [] });
    });
    for (const id of locked) expect(await row(id)).toMatchObject({ status: 'exhausted', replay_count: 0 });
    const { rows } = await h.db.pool.query<{ id: string; status: string }>('SELECT d.id, e.status FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = ANY($1::text[])', [ids]);
    for (const r of rows) expect(r.status).toBe(locked.includes(r.id) ? 'dlq_queued' : 'replayed');
    const queued = await queuedDeliveryIds();
    for (const id of locked) expect(queued).not.toContain(id);

    // Released, they are replayable again.
    const rest = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { destination_id: p.destinationId, limit: N } });
    expect([...rest.body.delivery_ids].sort()).toEqual(locked);
  });

  it('goes past a round made entirely of locked deliveries (more than one round of candidates)', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    // 130 in the DLQ; the first 110 (more than a round of 100 candidates) are held elsewhere.
    const ids = await inDlq(t.tenantId, p, 130);
    await whileLocked(ids.slice(0, 110), async () => {
      const res = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { destination_id: p.destinationId, limit: 5 } });
      expect(res.status).toBe(202);
      // The first free ones in id order, found in the second round.
      expect([...res.body.delivery_ids].sort()).toEqual(ids.slice(110, 115));
    });
    const { rows } = await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE id = ANY($1::text[]) AND status = 'replaying'`, [ids]);
    expect(rows[0]!.n).toBe(5);
  });

  it('does the same for a list of delivery ids', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const ids = await inDlq(t.tenantId, p, 4);
    await whileLocked([ids[0]!], async () => {
      const res = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { delivery_ids: ids, limit: 2 } });
      expect(res.body.replayed).toBe(2);
      expect([...res.body.delivery_ids].sort()).toEqual([ids[1], ids[2]]);
    });
    expect(await row(ids[0]!)).toMatchObject({ status: 'exhausted', replay_count: 0 });
    expect(await row(ids[3]!)).toMatchObject({ status: 'exhausted', replay_count: 0 });
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
