// A destination's config.mtls.cert and ca are stored and shown in clear (only mtls.key is
// sealed), so they must be certificates and nothing else: a cert pasted with its private
// key (a combined PEM) is refused with a 400 naming the field, and a row stored before that
// rule shows only its certificate blocks in every view.
import { createSecretBox } from '@hookline/signing';
import { startApi, type ApiHarness, VALIDATION, type ApiTenant as Tenant } from './api-harness';
import { destinationViews } from './support/destination-views';
import { fakeKeyBlock, TEST_CA_CERT, TEST_CLIENT_CERT } from './certificate-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('mtlscert');
});
afterAll(async () => {
  await h.close();
});

const KEY = fakeKeyBlock('MTLS_SECRET_KEY');
const count = async (t: Tenant): Promise<number> => (await h.db.pool.query('SELECT count(*)::int AS n FROM destinations WHERE tenant_id = $1', [t.tenantId])).rows[0].n;
const storedMtls = async (id: string) => (await h.db.pool.query('SELECT config FROM destinations WHERE id = $1', [id])).rows[0].config.mtls;
const fieldsOf = (body: any): string[] => (body.errors ?? []).map((e: { field: string }) => e.field);
const post = (t: Tenant, mtls: unknown) =>
  h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: `m-${Math.random().toString(36).slice(2, 8)}`, url: 'https://mtls.example.com/hook', config: { mtls } } });

const views = (t: Tenant, id: string, made: unknown): Promise<any[]> => destinationViews(h, t, id, made);

describe('config.mtls.cert and ca', () => {
  it('accept certificates (a bundle too) and show them; the key is sealed', async () => {
    const t = await h.tenant();
    const made = await post(t, { cert: TEST_CLIENT_CERT, key: KEY, ca: TEST_CA_CERT + TEST_CLIENT_CERT });
    expect(made.status).toBe(201);
    for (const view of await views(t, made.body.id, made.body)) {
      expect(view.config.mtls).toEqual({ cert: TEST_CLIENT_CERT, ca: TEST_CA_CERT + TEST_CLIENT_CERT, key_set: true });
    }
    const stored = await storedMtls(made.body.id);
    expect(stored).toMatchObject({ cert: TEST_CLIENT_CERT, ca: TEST_CA_CERT + TEST_CLIENT_CERT });
    expect(createSecretBox(h.api.context.config.SECRETS_KEY).open(stored.key_sealed)).toBe(KEY);
  });

  it('refuse a private key (or any other block) beside the certificate, and text that is no certificate: 400 naming each field, nothing written', async () => {
    const t = await h.tenant();
    const cases: [Record<string, string>, string[]][] = [
      [{ cert: TEST_CLIENT_CERT + KEY, key: KEY }, ['config.mtls.cert']],
      [{ cert: KEY + TEST_CLIENT_CERT, key: KEY }, ['config.mtls.cert']],
      [{ cert: TEST_CLIENT_CERT, key: KEY, ca: TEST_CA_CERT + fakeKeyBlock('MTLS_SECRET_CA', 'EC PRIVATE KEY') }, ['config.mtls.ca']],
      [{ cert: `${TEST_CLIENT_CERT}-----BEGIN PRIVATE KEY-----\nMTLS_SECRET_UNFINISHED\n`, key: KEY }, ['config.mtls.cert']],
      [{ cert: 'MTLS_SECRET_NOT_PEM', key: KEY, ca: '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n' }, ['config.mtls.cert', 'config.mtls.ca']],
    ];
    for (const [mtls, fields] of cases) {
      const res = await post(t, mtls);
      expect({ fields, status: res.status, type: res.body.type, got: fieldsOf(res.body) }).toEqual({ fields, status: 400, type: VALIDATION, got: fields });
      expect(JSON.stringify(res.body)).not.toContain('MTLS_SECRET');
    }
    expect((await post(t, { cert: TEST_CLIENT_CERT + KEY, key: KEY })).body.errors[0].message).toMatch(/CERTIFICATE blocks only; found a PRIVATE KEY block/);
    expect(await count(t)).toBe(0);

    // On PATCH too, writing nothing; null still removes mtls.
    const made = await post(t, { cert: TEST_CLIENT_CERT, key: KEY });
    const path = `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`;
    const before = await storedMtls(made.body.id);
    const patched = await h.call('PATCH', path, { key: t.apiKey, body: { config: { mtls: { cert: TEST_CLIENT_CERT + KEY, key: KEY } } } });
    expect([patched.status, fieldsOf(patched.body)]).toEqual([400, ['config.mtls.cert']]);
    expect(await storedMtls(made.body.id)).toEqual(before);
    const removed = await h.call('PATCH', path, { key: t.apiKey, body: { config: { mtls: null } } });
    expect([removed.status, removed.body.config.mtls]).toEqual([200, undefined]);

    // The audit log names the fields only.
    const audit = await h.call('GET', `/v1/tenants/${t.tenantId}/audit-logs`, { key: t.apiKey });
    expect(JSON.stringify(audit.body)).not.toContain('MTLS_SECRET');
  });

  it('stores and shows certificate blocks only, text between them (openssl subject= lines) left out', async () => {
    const t = await h.tenant();
    const made = await post(t, { cert: `subject=/CN=hookline-test-client\n${TEST_CLIENT_CERT}`, key: KEY });
    expect(made.status).toBe(201);
    expect(made.body.config.mtls.cert).toBe(TEST_CLIENT_CERT);
    expect((await storedMtls(made.body.id)).cert).toBe(TEST_CLIENT_CERT);
  });

  it('a row stored before the rule with a key beside its certificate shows the certificate only, in every view', async () => {
    const t = await h.tenant();
    const made = await post(t, { cert: TEST_CLIENT_CERT, key: KEY, ca: TEST_CA_CERT });
    await h.db.pool.query(`UPDATE destinations SET config = jsonb_set(jsonb_set(config, '{mtls,cert}', to_jsonb($2::text)), '{mtls,ca}', to_jsonb($3::text)) WHERE id = $1`, [
      made.body.id,
      TEST_CLIENT_CERT + KEY,
      fakeKeyBlock('MTLS_SECRET_LEGACY_CA') + TEST_CA_CERT,
    ]);
    for (const view of (await views(t, made.body.id, undefined)).slice(1)) {
      expect(view.config.mtls).toEqual({ cert: TEST_CLIENT_CERT, ca: TEST_CA_CERT, key_set: true });
      expect(JSON.stringify(view)).not.toContain('MTLS_SECRET');
    }
    // The stored row is left as it is (the deliverer reads it; TLS ignores the key block).
    expect((await storedMtls(made.body.id)).cert).toBe(TEST_CLIENT_CERT + KEY);
  });
});
