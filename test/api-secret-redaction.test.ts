// Secrets never appear in API responses or the audit log after creation, whatever the shape of
// the request that carried them: refused (400) requests are audited too, so their redaction
// cannot rely on the body being valid; nested secret-looking config keys are refused and shown
// redacted; a URL's userinfo is judged as the URL parser (and so the deliverer) reads it.
import { waitFor } from '@hookline/testing';
import { startApi, type ApiHarness, type ApiTenant as Tenant } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('secretredact');
});
afterAll(async () => {
  await h.close();
});

const post = (t: Tenant, kind: string, body: unknown) => h.call('POST', `/v1/tenants/${t.tenantId}/${kind}`, { key: t.apiKey, body });
const auditText = async (t: Tenant, n: number): Promise<string> =>
  JSON.stringify((await waitFor(async () => {
    const r = await h.call('GET', `/v1/tenants/${t.tenantId}/audit-logs?limit=100`, { key: t.apiKey });
    return r.body.audit_logs.length >= n ? r : null;
  })).body);

describe('a destination URL with extra slashes before its userinfo', () => {
  it('is stored as parsed (the credential the deliverer sends) and shown masked in views and the audit log', async () => {
    const t = await h.tenant();
    const made = await post(t, 'destinations', { name: 'slashes', url: 'https:///alice:s3cr3t@hooks.example.com/x' });
    expect(made.status).toBe(201);
    const views = [
      made.body,
      (await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey })).body,
      (await h.call('GET', '/v1/targets', { key: t.apiKey })).body.targets.find((d: { id: string }) => d.id === made.body.id),
    ];
    for (const view of views) expect(view.url).toBe('https://alice:****@hooks.example.com/x');
    const stored = (await h.db.pool.query('SELECT url FROM destinations WHERE id = $1', [made.body.id])).rows[0].url;
    expect(stored).toBe('https://alice:s3cr3t@hooks.example.com/x');
    expect(await auditText(t, 1)).not.toContain('s3cr3t');
  });
});

describe('refused requests', () => {
  it('never store a secret in the audit log, whatever the key spelling or body shape', async () => {
    const t = await h.tenant();
    const keys = ['apikey', 'api-key', 'accessKey', 'passwd', 'pwd', 'authorization', 'auth', 'bearer', 'jwt', 'cookie'];
    const refused = [
      await post(t, 'ingesters', { name: 'i', provider: 'generic', config: Object.fromEntries(keys.map((k) => [k, `LEAK_${k}`])) }),
      await post(t, 'destinations', { name: 'd', url: 'https://example.test/', config: { headers: [{ name: 'Authorization', value: 'Bearer LEAK_HDR' }] } }),
      await post(t, 'ingesters', { name: 'r', provider: 'generic', config: { required_headers: [{ name: 'X-Token', value: 'LEAK_RULE' }] } }),
      await post(t, 'saved-payloads', { name: 'p', body: { card: 'LEAK_BODY' } }),
    ];
    expect(refused.map((r) => r.status)).toEqual([400, 400, 400, 400]);
    expect(refused[0]!.body.errors.map((e: { field: string }) => e.field)).toEqual(keys.map((k) => `config.${k}`));
    expect(await auditText(t, refused.length)).not.toContain('LEAK');
  });
});

describe('nested secret-looking config keys', () => {
  it('are refused with their full path, on destinations and ingesters', async () => {
    const t = await h.tenant();
    const dst = await post(t, 'destinations', { name: 'd', url: 'https://example.test/', config: { oauth: { client_secret: 'cs_LEAK', client_id: 'c' } } });
    expect(dst.status).toBe(400);
    expect(dst.body.errors).toEqual([{ field: 'config.oauth.client_secret', message: expect.stringMatching(/^looks like a secret/) }]);
    const ing = await post(t, 'ingesters', { name: 'i', provider: 'generic', config: { vendor: { authorization: 'Bearer LEAK' } } });
    expect(ing.status).toBe(400);
    expect(ing.body.errors).toEqual([{ field: 'config.vendor.authorization', message: expect.stringMatching(/^looks like a secret/) }]);
  });

  it('stored before the rule are shown redacted by destination and ingester views', async () => {
    const t = await h.tenant();
    const dst = await post(t, 'destinations', { name: 'd', url: 'https://example.test/' });
    const ing = await post(t, 'ingesters', { name: 'i', provider: 'generic' });
    const legacy = JSON.stringify({ oauth: { client_secret: 'cs_LEAK' }, authorization: 'Bearer LEAK', region: 'eu' });
    await h.db.pool.query('UPDATE destinations SET config = $1 WHERE id = $2', [legacy, dst.body.id]);
    await h.db.pool.query('UPDATE ingesters SET config = $1 WHERE id = $2', [legacy, ing.body.id]);
    const d = await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${dst.body.id}`, { key: t.apiKey });
    const i = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters/${ing.body.id}`, { key: t.apiKey });
    expect(d.body.config).toEqual({ oauth: { client_secret: '[redacted]' }, authorization: '[redacted]', region: 'eu' });
    expect(i.body.config).toMatchObject({ oauth: { client_secret: '[redacted]' }, authorization: '[redacted]', region: 'eu' });
  });
});
