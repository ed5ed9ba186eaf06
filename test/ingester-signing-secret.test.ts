// A Standard Webhooks ingester's signing secret is a base64 key (`whsec_…`, 24–64 bytes):
// anything else decodes leniently to a short or empty HMAC key, with which anyone could
// sign inbound events. Other providers' secrets are opaque strings and stay as they were.
import { randomBytes } from 'node:crypto';
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('ingsecret');
});
afterAll(async () => {
  await h?.close();
});

const rows = async (tenantId: string): Promise<unknown[]> => (await h.db.pool.query('SELECT id, name, secrets, updated_at FROM ingesters WHERE tenant_id = $1 ORDER BY id', [tenantId])).rows;
const good = (): string => `whsec_${randomBytes(24).toString('base64')}`;

describe('standard-webhooks ingester secrets at write time', () => {
  it('refuses a secret that is not a base64 key of 24-64 bytes on create and on PUT, naming the field, writing nothing', async () => {
    const t = await h.tenant();
    const base = `/v1/tenants/${t.tenantId}/ingesters`;
    for (const config of [{ signing_secret: '!!!!!!!!!!!!!!!!' }, { signing_secret: 'whsec_c2hvcnQ=' }, { signing_secrets: [good(), 'my-shared-secret-2024!'] }]) {
      const before = await rows(t.tenantId);
      const res = await h.call('POST', base, { key: t.apiKey, body: { name: 'sw', provider: 'standard-webhooks', config } });
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual([config.signing_secret ? 'config.signing_secret' : 'config.signing_secrets.1']);
      expect(await rows(t.tenantId)).toEqual(before);
    }
    const made = await h.call('POST', base, { key: t.apiKey, body: { name: 'sw', provider: 'standard-webhooks', config: { signing_secret: good() } } });
    expect(made.status).toBe(201);
    const before = await rows(t.tenantId);
    const put = await h.call('PUT', `${base}/${made.body.id}`, { key: t.apiKey, body: { name: 'sw', provider: 'standard-webhooks', config: { signing_secret: '!!!!!!!!!!!!!!!!' } } });
    expect([put.status, put.body.errors?.map((e: { field: string }) => e.field)]).toEqual([400, ['config.signing_secret']]);
    expect(await rows(t.tenantId)).toEqual(before);
  });

  it('a PUT that changes the provider must send the signing secret again (400 naming config.signing_secret, nothing written)', async () => {
    // The reviewer's bypass: a generic secret that decodes to an empty key, kept across a
    // switch to standard-webhooks because the PUT sent no secret.
    const t = await h.tenant();
    const base = `/v1/tenants/${t.tenantId}/ingesters`;
    const stored = async (): Promise<unknown[]> => (await h.db.pool.query('SELECT id, provider, config, secrets, updated_at FROM ingesters WHERE tenant_id = $1 ORDER BY id', [t.tenantId])).rows;
    const made = await h.call('POST', base, { key: t.apiKey, body: { name: 'g', provider: 'generic', config: { signing_secret: '!!!!!!!!!!!!!!!!' } } });
    expect(made.status).toBe(201);
    const sw = await h.call('POST', base, { key: t.apiKey, body: { name: 'sw', provider: 'standard-webhooks', config: { signing_secret: good() } } });
    expect(sw.status).toBe(201);
    const before = await stored();
    for (const [id, body] of [
      [made.body.id, { name: 'g', provider: 'standard-webhooks', config: {} }],
      [made.body.id, { name: 'g', type: 'standard-webhooks', config: { tolerance_seconds: 60 } }],
      [made.body.id, { name: 'g', provider: 'standard-webhooks' }],
      // Any provider change, not only onto standard-webhooks.
      [sw.body.id, { name: 'sw', provider: 'github', config: {} }],
    ] as const) {
      const put = await h.call('PUT', `${base}/${id}`, { key: t.apiKey, body });
      expect([put.status, put.body.errors?.map((e: { field: string }) => e.field)]).toEqual([400, ['config.signing_secret']]);
      expect(put.body.errors[0].message).toMatch(/provider change .*needs the signing secret again/);
    }
    expect(await stored()).toEqual(before);

    // Sent again, it is checked under the new provider's rules.
    const weak = await h.call('PUT', `${base}/${made.body.id}`, { key: t.apiKey, body: { name: 'g', provider: 'standard-webhooks', config: { signing_secret: '!!!!!!!!!!!!!!!!' } } });
    expect([weak.status, weak.body.errors?.map((e: { field: string }) => e.field)]).toEqual([400, ['config.signing_secret']]);
    expect(await stored()).toEqual(before);
    const moved = await h.call('PUT', `${base}/${made.body.id}`, { key: t.apiKey, body: { name: 'g', provider: 'standard-webhooks', config: { signing_secrets: [good(), good()] } } });
    expect([moved.status, moved.body.provider, moved.body.config.secrets_count]).toEqual([200, 'standard-webhooks', 2]);
    // Without a provider change (or with no stored secret) nothing needs to be sent again.
    const kept = await h.call('PUT', `${base}/${sw.body.id}`, { key: t.apiKey, body: { name: 'sw', provider: 'standard-webhooks', config: {} } });
    expect([kept.status, kept.body.config.secrets_count]).toEqual([200, 1]);
    const bare = await h.call('POST', base, { key: t.apiKey, body: { name: 'bare', provider: 'generic' } });
    const switched = await h.call('PUT', `${base}/${bare.body.id}`, { key: t.apiKey, body: { name: 'bare', provider: 'standard-webhooks' } });
    expect([switched.status, switched.body.config.signing_secret_set]).toEqual([200, false]);
  });

  it('keeps other providers’ secrets opaque', async () => {
    const t = await h.tenant();
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'gh', provider: 'github', config: { signing_secret: 'my-shared-secret-2024!' } } });
    expect(res.status).toBe(201);
  });
});
