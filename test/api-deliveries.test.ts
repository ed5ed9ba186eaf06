import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent } from './api-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apidlv');
});
afterAll(async () => {
  await h.close();
});

describe('deliveries', () => {
  it('reads one delivery and its attempts (newest first), only within the tenant', async () => {
    const t = await h.tenant();
    const other = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'delivered' });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'delivered', attempts: 3 });

    const got = await h.call('GET', `/v1/deliveries/${dlv}`, { key: t.apiKey, headers: { 'x-tenant-id': t.tenantId } });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: dlv, event_id: evt, destination_id: p.destinationId, flow_id: p.flowId, status: 'delivered', attempt_count: 3 });
    const attempts = await h.call('GET', `/v1/deliveries/${dlv}/attempts`, { key: t.apiKey });
    expect(attempts.status).toBe(200);
    expect(attempts.body.attempts.map((a: { number: number }) => a.number)).toEqual([3, 2, 1]);
    expect(attempts.body.attempts[0]).toMatchObject({ delivery_id: dlv, status_code: 200, response_body: 'ok', duration_ms: 30 });
    expect(typeof attempts.body.attempts[0].started_at).toBe('string');

    expect((await h.call('GET', `/v1/deliveries/${dlv}`, { key: other.apiKey })).status).toBe(404);
    expect((await h.call('GET', `/v1/deliveries/${dlv}/attempts`, { key: other.apiKey })).status).toBe(404);
    // Naming another tenant in X-Tenant-ID is denied the same way.
    expect((await h.call('GET', `/v1/deliveries/${dlv}`, { key: t.apiKey, headers: { 'x-tenant-id': other.tenantId } })).status).toBe(404);
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/deliveries/${dlv}`, { key: t.apiKey })).body.id).toBe(dlv);
  });

  it('lists with filters and cursor pagination, newest first', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey, 'a');
    const q = await createPipeline(h, t.tenantId, t.apiKey, 'b');
    const base = Date.now() - 60_000;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const evt = await insertEvent(h, t.tenantId, p.ingesterId, { at: new Date(base + i * 1000) });
      ids.push(await insertDelivery(h, t.tenantId, evt, p, { status: i % 2 ? 'exhausted' : 'delivered', at: new Date(base + i * 1000) }));
    }
    const otherEvt = await insertEvent(h, t.tenantId, q.ingesterId, { at: new Date(base + 10_000) });
    const otherDlv = await insertDelivery(h, t.tenantId, otherEvt, q, { status: 'failed', at: new Date(base + 10_000) });

    const path = `/v1/tenants/${t.tenantId}/deliveries`;
    const all = await h.call('GET', path, { key: t.apiKey });
    expect(all.body.deliveries.map((d: { id: string }) => d.id)).toEqual([otherDlv, ...[...ids].reverse()]);
    expect(all.body.next_cursor).toBeNull();

    const page1 = await h.call('GET', `${path}?limit=2&source_id=${p.ingesterId}`, { key: t.apiKey });
    expect(page1.body.deliveries.map((d: { id: string }) => d.id)).toEqual([ids[4], ids[3]]);
    expect(typeof page1.body.next_cursor).toBe('string');
    const page2 = await h.call('GET', `${path}?limit=2&source_id=${p.ingesterId}&cursor=${page1.body.next_cursor}`, { key: t.apiKey });
    expect(page2.body.deliveries.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    const page3 = await h.call('GET', `${path}?limit=2&source_id=${p.ingesterId}&cursor=${page2.body.next_cursor}`, { key: t.apiKey });
    expect(page3.body).toEqual({ deliveries: [expect.objectContaining({ id: ids[0] })], next_cursor: null });

    const exhausted = await h.call('GET', `${path}?status=exhausted`, { key: t.apiKey });
    expect(exhausted.body.deliveries.map((d: { id: string }) => d.id)).toEqual([ids[3], ids[1]]);
    const byDest = await h.call('GET', `${path}?destination_id=${q.destinationId}`, { key: t.apiKey });
    expect(byDest.body.deliveries.map((d: { id: string }) => d.id)).toEqual([otherDlv]);
    const window = await h.call('GET', `${path}?since=${new Date(base + 1000).toISOString()}&until=${new Date(base + 3000).toISOString()}`, { key: t.apiKey });
    expect(window.body.deliveries.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    const dlq = await h.call('GET', '/v1/deliveries?status=exhausted&limit=1', { key: t.apiKey });
    expect(dlq.body.deliveries.map((d: { id: string }) => d.id)).toEqual([ids[3]]);
    expect(dlq.body.next_cursor).not.toBeNull();
    const offset = await h.call('GET', `${path}?limit=2&offset=2`, { key: t.apiKey });
    expect(offset.body.deliveries.map((d: { id: string }) => d.id)).toEqual([ids[3], ids[2]]);
    expect(offset.body.next_offset).toBe(4);
    const ignored = await h.call('GET', `${path}?colour=blue`, { key: t.apiKey });
    expect(ignored.body.deliveries).toHaveLength(6);
  });

  it('shows a delivery under a live lease as delivering, in the view, the filters, the event and the overview', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId);
    const other = await insertEvent(h, t.tenantId, p.ingesterId);
    const held = await insertDelivery(h, t.tenantId, evt, p, { status: 'failed', attempts: 1 });
    const expired = await insertDelivery(h, t.tenantId, other, p, { status: 'pending' });
    // What a claim writes: the lease only (the stored status stays claimable).
    await h.db.pool.query(`UPDATE deliveries SET lease_owner = 'd:1', lease_until = now() + interval '1 minute' WHERE id = $1`, [held]);
    await h.db.pool.query(`UPDATE deliveries SET lease_owner = 'd:0', lease_until = now() - interval '1 minute' WHERE id = $1`, [expired]);

    const path = `/v1/tenants/${t.tenantId}/deliveries`;
    expect((await h.call('GET', `/v1/deliveries/${held}`, { key: t.apiKey })).body.status).toBe('delivering');
    expect((await h.call('GET', `/v1/deliveries/${expired}`, { key: t.apiKey })).body.status).toBe('pending');
    const ids = async (q: string) => (await h.call('GET', `${path}?${q}`, { key: t.apiKey })).body.deliveries.map((d: { id: string }) => d.id);
    expect(await ids('status=delivering')).toEqual([held]);
    expect(await ids('status=failed')).toEqual([]);
    expect(await ids('status=pending')).toEqual([expired]);
    const event = await h.call('GET', `/v1/tenants/${t.tenantId}/events/${evt}`, { key: t.apiKey });
    expect(event.body.deliveries).toEqual([expect.objectContaining({ id: held, status: 'delivering' })]);
    expect((await h.call('GET', '/v1/overview', { key: t.apiKey })).body.deliveries_24h).toEqual({ delivering: 1, pending: 1 });
    // A manual retry leaves the delivery in flight to its attempt.
    expect((await h.call('POST', `/v1/tenants/${t.tenantId}/events/${evt}/retry`, { key: t.apiKey })).status).toBe(409);
  });

  it('enforces the page size rules and rejects bad filters', async () => {
    const t = await h.tenant();
    const path = `/v1/tenants/${t.tenantId}/deliveries`;
    const big = await h.call('GET', `${path}?limit=101`, { key: t.apiKey });
    expect(big.status).toBe(400);
    expect(big.body.errors).toEqual([{ field: 'limit', message: 'must be between 1 and 100' }]);
    expect((await h.call('GET', `${path}?limit=100`, { key: t.apiKey })).status).toBe(200);
    expect((await h.call('GET', `${path}?status=lost`, { key: t.apiKey })).body.errors[0].field).toBe('status');
    expect((await h.call('GET', `${path}?since=yesterday`, { key: t.apiKey })).body.errors[0].field).toBe('since');
    expect((await h.call('GET', `${path}?cursor=zzz`, { key: t.apiKey })).body.errors[0].field).toBe('cursor');
  });

  it('refuses since/until that are not ISO 8601 date-times with an offset or plain dates, naming the parameter', async () => {
    const t = await h.tenant();
    const path = `/v1/tenants/${t.tenantId}/deliveries`;
    const bad = ['2024-02-30T00:00:00Z', '2024-1-1', '2024-01-01 (x)', '2024-01-01T00:00:00', '2024-01-01T24:00:00Z', '2024-01-01T00:00:00+24:00', '2024-02-30'];
    for (const v of bad) {
      for (const name of ['since', 'until']) {
        const res = await h.call('GET', `${path}?${name}=${encodeURIComponent(v)}`, { key: t.apiKey });
        expect({ v, name, status: res.status, fields: res.body.errors?.map((e: { field: string }) => e.field) }).toEqual({ v, name, status: 400, fields: [name] });
      }
    }
    for (const v of ['2024-02-29T00:00:00Z', '2024-01-01T00:00:00.123+02:00', '2024-01-01t00:00:00z', '2024-06-01T12:30:00-05:30', '2024-06-01T12:30:00-0530', '2024-01-01']) {
      expect({ v, status: (await h.call('GET', `${path}?since=${encodeURIComponent(v)}`, { key: t.apiKey })).status }).toEqual({ v, status: 200 });
    }
  });

  it('defaults to 20 per page', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    for (let i = 0; i < 21; i++) await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { payload: false }), p);
    const res = await h.call('GET', `/v1/tenants/${t.tenantId}/deliveries`, { key: t.apiKey });
    expect(res.body.deliveries).toHaveLength(20);
    expect(res.body.next_cursor).not.toBeNull();
  });
});

describe('events and rejections', () => {
  it('shows an event with its status timeline and deliveries', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId);
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'pending' });
    const res = await h.call('GET', `/v1/tenants/${t.tenantId}/events/${evt}`, { key: t.apiKey });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: evt, ingester_id: p.ingesterId, status: 'filtered', correlation_id: `cor_${evt}`, payload_retained: true, deliveries: [{ id: dlv, status: 'pending' }] });
    expect(res.body.timeline.map((s: { status: string }) => s.status)).toEqual(['received', 'validated', 'filtered']);
    const list = await h.call('GET', `/v1/tenants/${t.tenantId}/events?status=filtered`, { key: t.apiKey });
    expect(list.body.events.map((e: { id: string }) => e.id)).toEqual([evt]);
  });

  it('keeps the event_id filter on every page: event_id AND the cursor, on events and traces', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const base = Date.now() - 60_000;
    const [e0, e1, e2] = [await insertEvent(h, t.tenantId, p.ingesterId, { at: new Date(base) }), await insertEvent(h, t.tenantId, p.ingesterId, { at: new Date(base + 1000) }), await insertEvent(h, t.tenantId, p.ingesterId, { at: new Date(base + 2000) })];
    const events = `/v1/tenants/${t.tenantId}/events`;
    const first = await h.call('GET', `${events}?limit=1`, { key: t.apiKey });
    expect(first.body.events.map((e: { id: string }) => e.id)).toEqual([e2]);
    const cursor = first.body.next_cursor as string;
    const ids = async (path: string, list: string, key: string) => (await h.call('GET', path, { key: t.apiKey })).body[list].map((e: Record<string, string>) => e[key]);
    expect(await ids(`${events}?event_id=${e0}&cursor=${cursor}`, 'events', 'id')).toEqual([e0]);
    expect(await ids(`${events}?event_id=${e2}&cursor=${cursor}`, 'events', 'id')).toEqual([]);
    expect(await ids(`/v1/traces?event_id=${e0}&cursor=${cursor}`, 'traces', 'event_id')).toEqual([e0]);
    expect(await ids(`/v1/traces?event_id=${e2}&cursor=${cursor}`, 'traces', 'event_id')).toEqual([]);
    expect(await ids(`${events}?event_id=${e1}`, 'events', 'id')).toEqual([e1]);
  });

  it('answers 404 for the rejections of a deleted ingester, as its GET does', async () => {
    const t = await h.tenant();
    const path = `/v1/tenants/${t.tenantId}/ingesters`;
    const i = await h.call('POST', path, { key: t.apiKey, body: { name: 'gone', provider: 'generic' } });
    await h.db.pool.query(`INSERT INTO ingest_rejections (id, tenant_id, ingester_id, reason_code) VALUES ('rej_gone', $1, $2, 'provider_verification_failed')`, [t.tenantId, i.body.id]);
    expect((await h.call('GET', `${path}/${i.body.id}/rejections`, { key: t.apiKey })).body.rejections).toHaveLength(1);
    expect((await h.call('POST', `${path}/${i.body.id}/disable`, { key: t.apiKey })).status).toBe(200);
    expect((await h.call('GET', `${path}/${i.body.id}/rejections`, { key: t.apiKey })).body.rejections).toHaveLength(1);
    expect((await h.call('DELETE', `${path}/${i.body.id}`, { key: t.apiKey })).status).toBe(200);
    expect((await h.call('GET', `${path}/${i.body.id}`, { key: t.apiKey })).status).toBe(404);
    const res = await h.call('GET', `${path}/${i.body.id}/rejections`, { key: t.apiKey });
    expect(res.status).toBe(404);
    expect(res.body.type).toBe('https://hookline.dev/errors/not-found');
  });

  it('lists the rejections of an ingester (provider_verification_failed)', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    await h.db.pool.query(`INSERT INTO ingest_rejections (id, tenant_id, ingester_id, reason_code, detail) VALUES ('rej_1', $1, $2, 'provider_verification_failed', 'signature_mismatch')`, [t.tenantId, p.ingesterId]);
    const res = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters/${p.ingesterId}/rejections`, { key: t.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.rejections).toEqual([expect.objectContaining({ ingester_id: p.ingesterId, reason_code: 'provider_verification_failed', detail: 'signature_mismatch' })]);
    const other = await h.tenant();
    expect((await h.call('GET', `/v1/tenants/${other.tenantId}/ingesters/${p.ingesterId}/rejections`, { key: other.apiKey })).status).toBe(404);
  });
});
