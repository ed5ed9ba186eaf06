// A saved payload's credential headers (Authorization, signatures, cookies: the destinations'
// rule, isCredentialHeader) are write-only: every view shows "[redacted]" to any holder of
// read:saved-payloads, the create and PUT answers included, while the stored row keeps the
// values. A PUT that sends "[redacted]" back keeps the stored value (the destinations' code,
// lib/credential-headers.ts); a placeholder with nothing to keep is a 400 naming the header.
import { startApi, type ApiHarness, VALIDATION, type ApiTenant as Tenant } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('splcred');
});
afterAll(async () => {
  await h.close();
});

const HEADERS = {
  Authorization: 'Bearer SPL-SECRET-AUTHORIZATION',
  'Stripe-Signature': 't=1,v1=SPL-SECRET-SIGNATURE',
  Cookie: 'session=SPL-SECRET-COOKIE',
  'X-Authtoken': 'SPL-SECRET-AUTHTOKEN',
  'X-Event-Type': 'order.created',
};
const SHOWN = { Authorization: '[redacted]', 'Stripe-Signature': '[redacted]', Cookie: '[redacted]', 'X-Authtoken': '[redacted]', 'X-Event-Type': 'order.created' };

const stored = async (id: string) => (await h.db.pool.query('SELECT name, headers, body FROM saved_payloads WHERE id = $1', [id])).rows[0];
const count = async (t: Tenant): Promise<number> => (await h.db.pool.query('SELECT count(*)::int AS n FROM saved_payloads WHERE tenant_id = $1', [t.tenantId])).rows[0].n;
const fieldsOf = (body: any): string[] => (body.errors ?? []).map((e: { field: string }) => e.field).sort();

async function create(t: Tenant, name = 'order'): Promise<{ id: string; path: string; body: any }> {
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/saved-payloads`, { key: t.apiKey, body: { name, body: '{"id":1}', headers: HEADERS } });
  expect(made.status).toBe(201);
  return { id: made.body.id, path: `/v1/tenants/${t.tenantId}/saved-payloads/${made.body.id}`, body: made.body };
}

describe('saved payload credential headers', () => {
  it('are "[redacted]" in every view, to a read-only key too, and stored as sent', async () => {
    const t = await h.tenant();
    const made = await create(t);
    const reader = await h.call('POST', `/v1/tenants/${t.tenantId}/api-keys`, { key: t.apiKey, body: { name: 'viewer', scopes: ['read:saved-payloads'] } });
    expect(reader.status).toBe(201);
    const flatCreated = await h.call('POST', '/v1/saved-payloads', { key: t.apiKey, body: { name: 'flat', body: '{}', headers: HEADERS } });
    expect(flatCreated.status).toBe(201);
    const views = [made.body, flatCreated.body];
    for (const key of [t.apiKey, reader.body.key as string]) {
      views.push(
        (await h.call('GET', made.path, { key })).body,
        ...(await h.call('GET', `/v1/tenants/${t.tenantId}/saved-payloads`, { key })).body.saved_payloads,
        ...(await h.call('GET', '/v1/saved-payloads', { key })).body.saved_payloads,
      );
    }
    expect(views).toHaveLength(2 + 2 * 5);
    for (const view of views) {
      expect(view.headers).toEqual(SHOWN);
      expect(JSON.stringify(view)).not.toContain('SPL-SECRET');
    }
    expect((await stored(made.id)).headers).toEqual(HEADERS);
  });

  it('a PUT sending "[redacted]" back keeps the stored values; a value in clear replaces one; a header left out is removed', async () => {
    const t = await h.tenant();
    const made = await create(t);
    const got = (await h.call('GET', made.path, { key: t.apiKey })).body;
    const back = await h.call('PUT', made.path, { key: t.apiKey, body: { name: 'order-2', body: '{"id":2}', headers: got.headers } });
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ name: 'order-2', headers: SHOWN });
    expect(await stored(made.id)).toEqual({ name: 'order-2', body: '{"id":2}', headers: HEADERS });

    const { Cookie: _cookie, ...withoutCookie } = SHOWN;
    const replaced = await h.call('PUT', made.path, { key: t.apiKey, body: { name: 'order-2', body: '{}', headers: { ...withoutCookie, Authorization: 'Bearer SPL-NEW' } } });
    expect(replaced.status).toBe(200);
    const { Cookie: _stored, ...kept } = HEADERS;
    expect((await stored(made.id)).headers).toEqual({ ...kept, Authorization: 'Bearer SPL-NEW' });
  });

  it('"[redacted]" with no stored value to keep is a 400 naming the header, nothing written (PUT and create)', async () => {
    const t = await h.tenant();
    const made = await create(t);
    const before = await stored(made.id);
    const put = await h.call('PUT', made.path, { key: t.apiKey, body: { name: 'x', body: '{}', headers: { ...SHOWN, 'X-Api-Key': '[redacted]' } } });
    expect({ status: put.status, type: put.body.type, fields: fieldsOf(put.body) }).toEqual({ status: 400, type: VALIDATION, fields: ['headers.X-Api-Key'] });
    expect(put.body.errors[0].message).toMatch(/redaction placeholder/);
    expect(await stored(made.id)).toEqual(before);

    const post = await h.call('POST', `/v1/tenants/${t.tenantId}/saved-payloads`, { key: t.apiKey, body: { name: 'copy', body: '{}', headers: SHOWN } });
    expect({ status: post.status, fields: fieldsOf(post.body) }).toEqual({
      status: 400,
      fields: ['headers.Authorization', 'headers.Cookie', 'headers.Stripe-Signature', 'headers.X-Authtoken'],
    });
    expect(await count(t)).toBe(1);

    // A missing template is still a 404.
    const missing = await h.call('PUT', `/v1/tenants/${t.tenantId}/saved-payloads/spl_missing`, { key: t.apiKey, body: { name: 'x', body: '{}', headers: SHOWN } });
    expect(missing.status).toBe(404);
  });

  it('the audit log keeps header names only', async () => {
    const t = await h.tenant();
    const made = await create(t);
    await h.call('PUT', made.path, { key: t.apiKey, body: { name: 'order', body: '{}', headers: SHOWN } });
    const audit = await h.call('GET', `/v1/tenants/${t.tenantId}/audit-logs`, { key: t.apiKey });
    expect(audit.body.audit_logs.map((a: { action: string }) => a.action).sort()).toEqual(['savedPayloads.create', 'savedPayloads.update']);
    expect(JSON.stringify(audit.body)).not.toContain('SPL-SECRET');
  });
});
