import { destinationHealthKey } from '@hookline/queues';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent } from './api-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apirt');
});
afterAll(async () => {
  await h.close();
});

async function attempt(tenantId: string, deliveryId: string, n: number, status: number | null, ms: number, agoMs: number, error?: string): Promise<void> {
  await h.db.pool.query(
    `INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, error_kind, error, started_at, duration_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, now() - $8::int * interval '1 millisecond', $9)`,
    [`att_${deliveryId.slice(4)}${n}`, tenantId, deliveryId, n, status, error ? 'connect' : null, error ?? null, agoMs, ms],
  );
}

describe('flat runtime routes', () => {
  it('serve endpoints, targets and flows on the same rows as the tenant routes', async () => {
    const t = await h.tenant();
    const e = await h.call('POST', '/v1/endpoints', { key: t.apiKey, body: { name: 'e', provider: 'generic' } });
    const g = await h.call('POST', '/v1/targets', { key: t.apiKey, body: { name: 'g', url: 'http://127.0.0.1:1/' } });
    const f = await h.call('POST', '/v1/flows', { key: t.apiKey, headers: { 'x-tenant-id': t.tenantId }, body: { name: 'f', endpoint: e.body.id, target: g.body.id } });
    expect([e.status, g.status, f.status]).toEqual([201, 201, 201]);
    expect((await h.call('GET', '/v1/endpoints', { key: t.apiKey })).body.endpoints.map((x: { id: string }) => x.id)).toEqual([e.body.id]);
    expect((await h.call('GET', '/v1/targets', { key: t.apiKey })).body.targets[0].id).toBe(g.body.id);
    expect((await h.call('GET', '/v1/flows', { key: t.apiKey })).body.flows[0].id).toBe(f.body.id);
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters/${e.body.id}`, { key: t.apiKey })).body.hook_url).toBe(e.body.hook_url);
    const ov = await h.call('GET', '/v1/overview', { key: t.apiKey });
    expect(ov.body).toMatchObject({ tenant_id: t.tenantId, ingesters: { ACTIVE: 1 }, destinations: { ACTIVE: 1 }, flows: { ACTIVE: 1 }, dlq_size: 0 });
    const src = await h.call('GET', '/v1/sources', { key: t.apiKey });
    expect(src.body.sources).toEqual([{ provider: 'generic', ingesters: 1, events_24h: 0, last_event_at: null }]);
    expect(src.body.supported_providers).toContain('stripe');
  });

  it('report target health from recent attempts and the circuit breaker', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const dlv = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId), p, { status: 'failed' });
    await attempt(t.tenantId, dlv, 1, 200, 10, 5000);
    await attempt(t.tenantId, dlv, 2, 200, 20, 4000);
    await attempt(t.tenantId, dlv, 3, 500, 30, 3000);
    await attempt(t.tenantId, dlv, 4, null, 40, 2000, 'ECONNREFUSED');
    await h.redis.hset(destinationHealthKey(h.prefix, p.destinationId), { state: 'open', failures: '2', opened_at: String(Date.now()), last_error: 'connect: ECONNREFUSED' });
    const res = await h.call('GET', `/v1/targets/${p.destinationId}/health`, { key: t.apiKey });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ destination_id: p.destinationId, success_rate: 0.5, consecutive_failures: 2, window: { attempts: 4 } });
    expect(res.body.latency_ms.p50).toBe(25);
    expect(res.body.last_error).toMatchObject({ message: 'connect: ECONNREFUSED', status_code: null });
    expect(res.body.circuit_breaker).toMatchObject({ state: 'open', consecutive_failures: 2 });

    const attempts = await h.call('GET', `/v1/delivery-attempts?status=failed&destination_id=${p.destinationId}`, { key: t.apiKey });
    expect(attempts.body.delivery_attempts.map((a: { number: number }) => a.number).sort()).toEqual([3, 4]);
    // Re-enabling a destination the deliverer disabled clears its reason and resets its breaker.
    await h.db.pool.query(`UPDATE destinations SET state = 'DISABLED', disabled_reason = 'failing since yesterday' WHERE id = $1`, [p.destinationId]);
    const enabled = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${p.destinationId}/enable`, { key: t.apiKey });
    expect(enabled.body).toMatchObject({ state: 'ACTIVE', disabled_reason: null });
    expect((await h.call('GET', `/v1/targets/${p.destinationId}/health`, { key: t.apiKey })).body.circuit_breaker.state).toBe('closed');
  });

  it('gate retained payloads to Pro and show evidence and traces', async () => {
    const free = await h.tenant({ plan: 'free' });
    const gated = await h.call('GET', '/v1/retained-payloads', { key: free.apiKey });
    expect(gated.status).toBe(403);
    expect(gated.body).toMatchObject({ type: 'https://hookline.dev/errors/plan-required', required_plan: 'pro' });

    const t = await h.tenant({ plan: 'pro' });
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const evt = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'delivered' });
    const dlv = await insertDelivery(h, t.tenantId, evt, p, { status: 'delivered', attempts: 2 });
    const retained = await h.call('GET', '/v1/retained-payloads', { key: t.apiKey });
    expect(retained.body.retained_payloads).toEqual([
      expect.objectContaining({ event_id: evt, size_bytes: 7, sha256: '015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862' }),
    ]);
    const ev = await h.call('GET', '/v1/evidence', { key: t.apiKey });
    expect(ev.body.evidence).toEqual([expect.objectContaining({ delivery_id: dlv, event_id: evt, outcome: 'delivered', attempts: 2, payload: { retained: true, sha256: retained.body.retained_payloads[0].sha256, size_bytes: 7 } })]);
    const tr = await h.call('GET', `/v1/traces?event_id=${evt}`, { key: t.apiKey });
    expect(tr.body.traces).toHaveLength(1);
    expect(tr.body.traces[0]).toMatchObject({ trace_id: `cor_${evt}`, event_id: evt });
    expect(tr.body.traces[0].steps.map((s: { name: string }) => s.name)).toEqual(['received', 'validated', 'filtered', 'delivery.created', 'delivery.attempt', 'delivery.attempt']);
  });

  it('report capabilities and readiness honestly', async () => {
    const t = await h.tenant();
    const caps = await h.call('GET', '/v1/capabilities', { key: t.apiKey });
    const byId = Object.fromEntries(caps.body.capabilities.map((c: { id: string; status: string }) => [c.id, c.status]));
    expect(byId).toMatchObject({ replay: 'implemented', mcp: 'implemented', evidence: 'implemented', discovery_documents: 'implemented', private_delivery: 'implemented', clusters: 'implemented', multi_region: 'not_offered' });
    const ready = await h.call('GET', '/v1/readiness', { key: t.apiKey });
    expect(ready.body).toMatchObject({ status: 'ready', checks: { database: { ok: true }, redis: { ok: true }, queues: { ok: true }, evidence: { ok: true, unsealed_receipts: 0, latest_root_at: null } } });
    expect((await h.call('GET', '/v1/capabilities')).status).toBe(401);
  });

  it('readiness needs read:deliveries and names no internal error', async () => {
    const t = await h.tenant({ scopes: ['read:api-keys'] });
    const denied = await h.call('GET', '/v1/readiness', { key: t.apiKey });
    expect([denied.status, denied.body.type, denied.body.required_scope]).toEqual([403, 'https://hookline.dev/errors/insufficient-scope', 'read:deliveries']);
    expect(JSON.stringify(denied.body)).not.toContain('depths');

    const reader = await h.tenant({ scopes: ['read:deliveries'] });
    const ready = await h.call('GET', '/v1/readiness', { key: reader.apiKey });
    expect(ready.status).toBe(200);
    // The shared queues' depths are every tenant's traffic: not shown; the tenant's own backlog is.
    expect(ready.body.checks.queues).toEqual({ ok: true });
    expect(ready.body.checks.deliveries).toEqual({ ok: true, open: 0, open_capped: false });
    // The evidence figures need read:evidence too.
    expect(ready.body.checks.evidence).toEqual({ ok: true });
    const doc = h.api.openApi() as { paths: Record<string, Record<string, unknown>> };
    expect(doc.paths['/v1/readiness']?.['get']).toMatchObject({ 'x-required-scope': 'read:deliveries', description: expect.stringContaining('read:deliveries') });

    // A failing check says so, not why: driver messages name hosts, users and internals.
    const { pool, redis } = h.api.context;
    const query = pool.query.bind(pool);
    const ping = redis.ping;
    const leak = 'connect ECONNREFUSED 10.20.30.40:6379 (password authentication failed for user "hookline")';
    redis.ping = (() => Promise.reject(new Error(leak))) as unknown as typeof redis.ping;
    pool.query = ((text: unknown, ...rest: unknown[]) => (text === 'SELECT 1' ? Promise.reject(new Error(leak)) : (query as (...a: unknown[]) => unknown)(text, ...rest))) as typeof pool.query;
    let degraded;
    try {
      degraded = await h.call('GET', '/v1/readiness', { key: reader.apiKey });
    } finally {
      redis.ping = ping;
      pool.query = query;
    }
    expect(degraded.status).toBe(200);
    expect(degraded.body).toEqual({ status: 'degraded', checks: { database: { ok: false }, redis: { ok: false }, queues: { ok: false }, deliveries: { ok: false }, evidence: { ok: false } } });
    expect(JSON.stringify(degraded.body)).not.toMatch(/ECONNREFUSED|10\.20\.30\.40|password|unavailable|error/);
  });
});

describe('dashboard base (/api/bff/v1)', () => {
  it('lists and creates the ingesters of one cluster', async () => {
    const t = await h.tenant();
    const cls = await h.call('POST', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey, body: { name: 'c' } });
    const base = `/api/bff/v1/tenants/${t.tenantId}/clusters/${cls.body.id}/ingesters`;
    const made = await h.call('POST', base, { key: t.apiKey, body: { name: 'in-cluster', provider: 'generic' } });
    expect(made.status).toBe(201);
    expect(made.body.cluster_id).toBe(cls.body.id);
    await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'elsewhere', provider: 'generic' } });
    expect((await h.call('GET', base, { key: t.apiKey })).body.ingesters.map((i: { id: string }) => i.id)).toEqual([made.body.id]);
    expect((await h.call('GET', `/api/bff/v1/tenants/${t.tenantId}/clusters/cls_00000000000000000000000000/ingesters`, { key: t.apiKey })).status).toBe(404);
  });
});
