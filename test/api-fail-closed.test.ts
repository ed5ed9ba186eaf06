import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent } from './api-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apifail', {}, { quiet: true });
  // A fault injected into this test's private schema: any write that touches a row named
  // or pointing at "boom" fails inside the database, after earlier statements succeeded.
  await h.db.pool.query(`
    CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$;
    CREATE TRIGGER boom_dst BEFORE INSERT OR UPDATE ON destinations FOR EACH ROW WHEN (NEW.name LIKE 'boom%') EXECUTE FUNCTION boom();
    CREATE TRIGGER boom_evt BEFORE UPDATE ON events FOR EACH ROW WHEN (NEW.type = 'boom' AND NEW.status = 'replayed') EXECUTE FUNCTION boom();
  `);
});
afterAll(async () => {
  await h.close();
});

async function snapshot(tenantId: string): Promise<unknown> {
  const { rows } = await h.db.pool.query(
    `SELECT (SELECT json_agg(json_build_object('id', id, 'state', state, 'name', name) ORDER BY id) FROM ingesters WHERE tenant_id = $1) AS i,
            (SELECT json_agg(json_build_object('id', id, 'state', state, 'name', name, 'secrets', secrets) ORDER BY id) FROM destinations WHERE tenant_id = $1) AS d,
            (SELECT json_agg(json_build_object('id', id, 'state', state) ORDER BY id) FROM delivery_flows WHERE tenant_id = $1) AS f,
            (SELECT json_agg(json_build_object('id', id, 'status', status, 'replay_count', replay_count) ORDER BY id) FROM deliveries WHERE tenant_id = $1) AS dl,
            (SELECT json_agg(json_build_object('id', id, 'status', status) ORDER BY id) FROM events WHERE tenant_id = $1) AS e`,
    [tenantId],
  );
  return rows[0];
}

describe('fail-closed writes', () => {
  it('validates the whole body before applying anything', async () => {
    const t = await h.tenant();
    const before = await snapshot(t.tenantId);
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'ok', url: 'https://example.test/', config: { timeout_ms: 5, max_attempts: 'many' } } });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['config.max_attempts', 'config.timeout_ms']);
    expect(await snapshot(t.tenantId)).toEqual(before);
  });

  it('leaves the database as it was when a write fails in the database halfway', async () => {
    const t = await h.tenant();
    // Apply a DRAFT flow: the flow and its DRAFT ingester are updated first, then the DRAFT
    // destination (named boom) fails. Nothing of the apply may remain.
    const i = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'i', provider: 'generic', state: 'DRAFT' } });
    await h.db.pool.query('ALTER TABLE destinations DISABLE TRIGGER boom_dst');
    const d = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'boom-target', url: 'http://127.0.0.1:1/', state: 'DRAFT' } });
    await h.db.pool.query('ALTER TABLE destinations ENABLE TRIGGER boom_dst');
    const f = await h.call('POST', `/v1/tenants/${t.tenantId}/delivery-flows`, { key: t.apiKey, body: { name: 'f', endpoint: i.body.id, target: d.body.id, state: 'DRAFT' } });
    const before = await snapshot(t.tenantId);

    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/delivery-flows/${f.body.id}/apply`, { key: t.apiKey });
    expect(res.status).toBe(500);
    expect(res.body.type).toBe('https://hookline.dev/errors/internal-error');
    expect(JSON.stringify(res.body)).not.toContain('injected');
    expect(await snapshot(t.tenantId)).toEqual(before);

    // A secret rotation that fails keeps the old secrets.
    const rot = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${d.body.id}`, { key: t.apiKey, body: { rotate_signing_secret: true }, headers: { 'idempotency-key': 'rotate-1' } });
    expect(rot.status).toBe(500);
    expect(await snapshot(t.tenantId)).toEqual(before);
    // Once the handler has started, a server error is the Idempotency-Key's answer like any
    // other (Stripe's semantics: the write may have been applied before it failed): the
    // client's retry under the key gets it replayed and nothing runs again.
    const { rows } = await h.db.pool.query(`SELECT status_code FROM idempotency_records WHERE key = 'rotate-1'`);
    expect(rows.map((r) => r.status_code)).toEqual([500]);
    const again = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${d.body.id}`, { key: t.apiKey, body: { rotate_signing_secret: true }, headers: { 'idempotency-key': 'rotate-1' } });
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([500, 'true']);
    expect(await snapshot(t.tenantId)).toEqual(before);
  });

  it('rolls back a bulk replay whose event update fails', async () => {
    const t = await h.tenant();
    const p = await createPipeline(h, t.tenantId, t.apiKey);
    const good = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
    const bad = await insertEvent(h, t.tenantId, p.ingesterId, { status: 'dlq_queued' });
    await h.db.pool.query(`UPDATE events SET type = 'boom' WHERE id = $1`, [bad]);
    await insertDelivery(h, t.tenantId, good, p, { status: 'exhausted', attempts: 1 });
    await insertDelivery(h, t.tenantId, bad, p, { status: 'exhausted', attempts: 1 });
    const before = await snapshot(t.tenantId);
    const res = await h.call('POST', '/v1/replay', { key: t.apiKey, body: { destination_id: p.destinationId } });
    expect(res.status).toBe(500);
    expect(await snapshot(t.tenantId)).toEqual(before);
    expect(await h.producer.queue('deliver').count()).toBe(0);
  });
});
