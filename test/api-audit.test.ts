import { waitFor } from '@hookline/testing';
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apiaudit');
});
afterAll(async () => {
  await h.close();
});

describe('audit log', () => {
  it('records every write with identity, action, redacted parameters and outcome, readable through the API', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, {
      key: t.apiKey,
      body: { name: 'audited', provider: 'stripe', config: { signing_secret: 'whsec_supersecretvalue' } },
    });
    const refused = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'x', url: 'gopher://x', config: { headers: { authorization: 'Bearer tok' } } } });
    expect(refused.status).toBe(400);
    await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey });

    const path = `/v1/tenants/${t.tenantId}/audit-logs`;
    const list = await waitFor(async () => {
      const r = await h.call('GET', path, { key: t.apiKey });
      return r.body.audit_logs.length >= 2 ? r : null;
    });
    const [second, first] = list.body.audit_logs;
    expect(list.body.audit_logs).toHaveLength(2);
    expect(first).toMatchObject({
      actor: `api_key:${t.apiKeyId}`,
      action: 'ingesters.create',
      resource_id: made.body.id,
      outcome: 'success',
      status: 201,
      level: 'info',
      request_id: made.headers.get('x-request-id'),
      params: { path: { tid: t.tenantId }, body: { name: 'audited', config: { signing_secret: '[redacted]' } } },
    });
    expect(second).toMatchObject({ action: 'destinations.create', outcome: 'client_error', status: 400, level: 'warn', params: { body: { config: { headers: { authorization: '[redacted]' } } } } });
    expect(JSON.stringify(list.body)).not.toContain('supersecret');
    expect(JSON.stringify(list.body)).not.toContain('Bearer tok');

    const warn = await h.call('GET', `${path}?level=warn`, { key: t.apiKey });
    expect(warn.body.audit_logs.map((a: { action: string }) => a.action)).toEqual(['destinations.create']);
    const other = await h.tenant();
    expect((await h.call('GET', `/v1/tenants/${other.tenantId}/audit-logs`, { key: other.apiKey })).body.audit_logs).toEqual([]);
  });
});
