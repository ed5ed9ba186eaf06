import { hashApiKey, newApiKey } from '@hookline/signing';
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apiauth');
});
afterAll(async () => {
  await h.close();
});

describe('authentication', () => {
  it('answers 401 problem details with the request id when the key is missing', async () => {
    const t = await h.tenant();
    const res = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { headers: { 'x-request-id': 'req-test-401' } });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.headers.get('x-request-id')).toBe('req-test-401');
    expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/unauthorized', title: 'Unauthorized', status: 401, instance: 'req-test-401' });
    expect(typeof res.body.detail).toBe('string');
  });

  it('answers 401 for an unknown key, in either header', async () => {
    const t = await h.tenant();
    const bad = newApiKey().key;
    const a = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: bad });
    const b = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { headers: { authorization: `Bearer ${bad}` } });
    expect([a.status, b.status]).toEqual([401, 401]);
    expect(a.body.instance).toEqual(a.headers.get('x-request-id'));
    expect(a.body.instance).toMatch(/^req_/);
  });

  it('accepts a valid key through X-API-Key and Authorization: Bearer', async () => {
    const t = await h.tenant();
    const a = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey });
    const b = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.body).toEqual({ ingesters: [], next_cursor: null });
  });

  it('refuses revoked and expired keys', async () => {
    const t = await h.tenant();
    await h.db.pool.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [t.apiKeyId]);
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey })).status).toBe(401);
    const u = await h.tenant();
    await h.db.pool.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [u.apiKeyId]);
    expect((await h.call('GET', `/v1/tenants/${u.tenantId}/ingesters`, { key: u.apiKey })).status).toBe(401);
  });

  it('records last_used_at, at most once a minute', async () => {
    const t = await h.tenant();
    await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey });
    const first = await waitForLastUsed(t.apiKeyId);
    await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey });
    await new Promise((r) => setTimeout(r, 200));
    const { rows } = await h.db.pool.query('SELECT last_used_at FROM api_keys WHERE id = $1', [t.apiKeyId]);
    expect(rows[0].last_used_at.getTime()).toBe(first.getTime());
    expect(hashApiKey(t.apiKey)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('hides another tenant: its ingester is 404 with this key', async () => {
    const a = await h.tenant();
    const b = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${b.tenantId}/ingesters`, { key: b.apiKey, body: { name: 'b-hook', provider: 'generic' } });
    expect(made.status).toBe(201);
    const cross = await h.call('GET', `/v1/tenants/${b.tenantId}/ingesters/${made.body.id}`, { key: a.apiKey });
    expect(cross.status).toBe(404);
    expect(cross.body.type).toBe('https://hookline.dev/errors/not-found');
    // Indistinguishable from an id that does not exist at all.
    const missing = await h.call('GET', `/v1/tenants/${b.tenantId}/ingesters/ing_0000000000000000000000000a`, { key: a.apiKey });
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toBe(cross.body.detail);
    const own = await h.call('GET', `/v1/tenants/${a.tenantId}/ingesters/${made.body.id}`, { key: a.apiKey });
    expect(own.status).toBe(404);
  });

  it('answers 403 insufficient-scope naming the scope', async () => {
    const t = await h.tenant({ scopes: ['read:ingesters'] });
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'x', provider: 'generic' } });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/insufficient-scope', required_scope: 'write:ingesters' });
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey })).status).toBe(200);
  });

  it('answers unknown routes with a 404 problem', async () => {
    const res = await h.call('GET', '/v1/nope', { unchecked: true });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body.instance).toBe(res.headers.get('x-request-id'));
  });

  it('serves /healthz and /readyz', async () => {
    expect((await h.call('GET', '/healthz')).body).toEqual({ status: 'ok' });
    const ready = await h.call('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ database: true, redis: true });
  });
});

async function waitForLastUsed(id: string): Promise<Date> {
  for (let i = 0; i < 50; i++) {
    const { rows } = await h.db.pool.query('SELECT last_used_at FROM api_keys WHERE id = $1', [id]);
    if (rows[0]?.last_used_at) return rows[0].last_used_at as Date;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('last_used_at was never written');
}
