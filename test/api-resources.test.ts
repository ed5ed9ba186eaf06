import { signServiceRequest } from '@hookline/signing';
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apires', { SERVICE_SIGNATURE_TOLERANCE_SECONDS: '60' });
});
afterAll(async () => {
  await h.close();
});

describe('API keys', () => {
  it('shows a new key once, lets it work with its scopes, and revokes it at once', async () => {
    const t = await h.tenant();
    const path = `/v1/tenants/${t.tenantId}/api-keys`;
    const made = await h.call('POST', path, { key: t.apiKey, body: { name: 'ci', scopes: ['read:ingesters'] } });
    expect(made.status).toBe(201);
    expect(made.body.key).toMatch(/^hk_/);
    expect(made.body).toMatchObject({ name: 'ci', scopes: ['read:ingesters'], revoked_at: null, prefix: made.body.key.slice(0, 11) });
    const list = await h.call('GET', path, { key: t.apiKey });
    expect(list.body.api_keys.map((k: { id: string }) => k.id)).toContain(made.body.id);
    expect(JSON.stringify(list.body)).not.toContain(made.body.key);

    const newKey = made.body.key as string;
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: newKey })).status).toBe(200);
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/destinations`, { key: newKey })).status).toBe(403);

    const revoked = await h.call('DELETE', `${path}/${made.body.id}`, { key: t.apiKey });
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked_at).not.toBeNull();
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: newKey })).status).toBe(401);
  });

  it('cannot grant scopes the caller lacks, nor expire in the past, nor revoke another tenant', async () => {
    const t = await h.tenant({ scopes: ['read:api-keys', 'write:api-keys', 'read:ingesters'] });
    const path = `/v1/tenants/${t.tenantId}/api-keys`;
    const escalate = await h.call('POST', path, { key: t.apiKey, body: { name: 'x', scopes: ['write:ingesters'] } });
    expect(escalate.status).toBe(403);
    expect(escalate.body.required_scope).toBe('write:ingesters');
    const dflt = await h.call('POST', path, { key: t.apiKey, body: { name: 'y' } });
    expect(dflt.body.scopes.sort()).toEqual(['read:api-keys', 'read:ingesters', 'write:api-keys']);
    const past = await h.call('POST', path, { key: t.apiKey, body: { name: 'z', expires_at: '2000-01-01T00:00:00Z' } });
    expect(past.status).toBe(422);
    const bogus = await h.call('POST', path, { key: t.apiKey, body: { name: 'z', scopes: ['root'] } });
    expect(bogus.status).toBe(400);
    // Scope held, object permission missing: a narrower key cannot revoke a broader one.
    const broad = await h.db.pool.query(`INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, scopes) VALUES ('key_broad', $1, 'admin', 'hk_x', 'h-broad', ARRAY['write:ingesters','read:api-keys']) RETURNING id`, [t.tenantId]);
    const denied = await h.call('DELETE', `${path}/${broad.rows[0].id}`, { key: t.apiKey });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ type: 'https://hookline.dev/errors/permission-denied', resource_id: 'key_broad' });
    expect((await h.call('DELETE', `${path}/${dflt.body.id}`, { key: t.apiKey })).status).toBe(200);
    const other = await h.tenant();
    expect((await h.call('DELETE', `/v1/tenants/${other.tenantId}/api-keys/${t.apiKeyId}`, { key: other.apiKey })).status).toBe(404);
    expect((await h.call('DELETE', `/v1/tenants/${other.tenantId}/api-keys/${other.apiKeyId}`, { key: other.apiKey })).status).toBe(200);
  });
});

describe('API key expiry', () => {
  it('a key made by an expiring key cannot outlive it: it inherits the expiry, a later one is 422, an unreadable one 400', async () => {
    const t = await h.tenant({ scopes: ['read:api-keys', 'write:api-keys', 'read:ingesters'] });
    const path = `/v1/tenants/${t.tenantId}/api-keys`;
    const { rows } = await h.db.pool.query(`UPDATE api_keys SET expires_at = date_trunc('second', now()) + interval '1 day' WHERE id = $1 RETURNING expires_at`, [t.apiKeyId]);
    const creatorExpiry = (rows[0].expires_at as Date).toISOString();
    const inherited = await h.call('POST', path, { key: t.apiKey, body: { name: 'child' } });
    expect([inherited.status, inherited.body.expires_at]).toEqual([201, creatorExpiry]);
    const sooner = new Date(Date.parse(creatorExpiry) - 3600_000).toISOString();
    const ok = await h.call('POST', path, { key: t.apiKey, body: { name: 'sooner', expires_at: sooner } });
    expect([ok.status, ok.body.expires_at]).toEqual([201, sooner]);
    const later = await h.call('POST', path, { key: t.apiKey, body: { name: 'later', expires_at: '2999-01-01T00:00:00Z' } });
    expect([later.status, later.body.errors?.[0]?.field]).toEqual([422, 'expires_at']);
    // Accepted by the date-time format, unreadable by Date: a 400 naming the field, not a 500.
    for (const v of ['2999-01-01T00:00:00+01', '2998-12-31T23:59:60Z']) {
      const bad = await h.call('POST', path, { key: t.apiKey, body: { name: 'bad', expires_at: v } });
      expect({ v, status: bad.status, field: bad.body.errors?.[0]?.field }).toEqual({ v, status: 400, field: 'expires_at' });
    }
    // A key without an expiry (or a session) is not capped.
    const free = await h.tenant({ scopes: ['read:api-keys', 'write:api-keys'] });
    const far = await h.call('POST', `/v1/tenants/${free.tenantId}/api-keys`, { key: free.apiKey, body: { name: 'far', expires_at: '2999-01-01T00:00:00Z' } });
    expect([far.status, far.body.expires_at]).toEqual([201, '2999-01-01T00:00:00.000Z']);
    const none = await h.call('POST', `/v1/tenants/${free.tenantId}/api-keys`, { key: free.apiKey, body: { name: 'none' } });
    expect([none.status, none.body.expires_at]).toEqual([201, null]);
  });
});

describe('saved payloads', () => {
  it('creates, reads, replaces and deletes templates', async () => {
    const t = await h.tenant();
    const path = `/v1/tenants/${t.tenantId}/saved-payloads`;
    const made = await h.call('POST', path, { key: t.apiKey, body: { name: 'order', body: '{"id":1}', headers: { 'x-test': '1' } } });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ name: 'order', content_type: 'application/json', body: '{"id":1}', headers: { 'x-test': '1' } });
    const put = await h.call('PUT', `${path}/${made.body.id}`, { key: t.apiKey, body: { name: 'order-v2', body: '{"id":2}', content_type: 'application/json' } });
    expect(put.body).toMatchObject({ name: 'order-v2', body: '{"id":2}', headers: {} });
    expect((await h.call('GET', `${path}/${made.body.id}`, { key: t.apiKey })).body.name).toBe('order-v2');
    expect((await h.call('GET', '/v1/saved-payloads', { key: t.apiKey })).body.saved_payloads).toHaveLength(1);
    expect((await h.call('DELETE', `${path}/${made.body.id}`, { key: t.apiKey })).status).toBe(204);
    expect((await h.call('GET', `${path}/${made.body.id}`, { key: t.apiKey })).status).toBe(404);
    expect((await h.call('DELETE', `${path}/${made.body.id}`, { key: t.apiKey })).status).toBe(404);
    expect((await h.call('PUT', `${path}/${made.body.id}`, { key: t.apiKey, body: { name: 'gone', body: '{}' } })).status).toBe(404);
  });

  it('limits a template to 256 KB in bytes, not characters: 100,000 euro signs (300,000 bytes) are a 400 and nothing is stored', async () => {
    const t = await h.tenant();
    const path = `/v1/tenants/${t.tenantId}/saved-payloads`;
    const big = '\u20ac'.repeat(100_000);
    const res = await h.call('POST', path, { key: t.apiKey, body: { name: 'big', body: big } });
    expect([res.status, res.body.errors]).toEqual([400, [{ field: 'body', message: 'must be at most 262144 bytes (UTF-8)' }]]);
    expect((await h.call('GET', path, { key: t.apiKey })).body.saved_payloads).toEqual([]);
    const small = await h.call('POST', path, { key: t.apiKey, body: { name: 'small', body: '\u20ac'.repeat(87_381) } });
    expect(small.status).toBe(201);
    const put = await h.call('PUT', `${path}/${small.body.id}`, { key: t.apiKey, body: { name: 'small', body: big } });
    expect(put.status).toBe(400);
    expect((await h.call('GET', `${path}/${small.body.id}`, { key: t.apiKey })).body.body).toHaveLength(87_381);
  });
});

describe('clusters and signed cluster requests', () => {
  it('enrolls a cluster (key shown once) and accepts only correctly signed, fresh requests from it', async () => {
    const t = await h.tenant();
    const path = `/v1/tenants/${t.tenantId}/clusters`;
    const made = await h.call('POST', path, { key: t.apiKey, body: { name: 'edge-1' } });
    expect(made.status).toBe(201);
    const key = made.body.hmac_key as string;
    expect(key).toMatch(/^hkc_/);
    const list = await h.call('GET', path, { key: t.apiKey });
    expect(list.body.clusters.map((c: { id: string }) => c.id)).toEqual([made.body.id]);
    expect(JSON.stringify(list.body)).not.toContain(key);
    expect((await h.call('GET', `${path}/${made.body.id}`, { key: t.apiKey })).body).toMatchObject({ id: made.body.id, last_seen_at: null });

    const beat = `/v1/clusters/${made.body.id}/heartbeat`;
    const raw = JSON.stringify({ agent_version: '1.2.3' });
    const ok = await h.call('POST', beat, { rawBody: raw, headers: { 'content-type': 'application/json', ...signServiceRequest(key, raw) } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ agent_version: '1.2.3' });
    expect(ok.body.last_seen_at).not.toBeNull();

    const stale = signServiceRequest(key, raw, Math.floor(Date.now() / 1000) - 120);
    const old = await h.call('POST', beat, { rawBody: raw, headers: { 'content-type': 'application/json', ...stale } });
    expect(old.status).toBe(401);
    const wrong = await h.call('POST', beat, { rawBody: raw, headers: { 'content-type': 'application/json', ...signServiceRequest('not-the-key', raw) } });
    expect(wrong.status).toBe(401);
    // One answer whatever the reason, also for a cluster that does not exist: the answer does
    // not tell which cluster ids exist (the reason is logged).
    const unknown = await h.call('POST', '/v1/clusters/cls_00000000000000000000000000/heartbeat', { rawBody: raw, headers: { 'content-type': 'application/json', ...stale } });
    const strip = (b: Record<string, unknown>) => ({ ...b, instance: undefined });
    expect([unknown.status, strip(unknown.body)]).toEqual([401, strip(old.body)]);
    expect(strip(wrong.body)).toEqual(strip(old.body));
    const tampered = await h.call('POST', beat, { rawBody: raw.replace('1.2.3', '6.6.6'), headers: { 'content-type': 'application/json', ...signServiceRequest(key, raw) } });
    expect(tampered.status).toBe(401);
    expect((await h.call('POST', beat, { rawBody: raw, headers: { 'content-type': 'application/json' } })).status).toBe(401);
    // An API key is not a cluster signature.
    expect((await h.call('POST', beat, { key: t.apiKey, body: {} })).status).toBe(401);
  });
});
