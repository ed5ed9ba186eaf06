import { createSecretBox } from '@hookline/signing';
import { startApi, type ApiHarness } from './api-harness';
import { TEST_CLIENT_CERT } from './certificate-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apicfg');
});
afterAll(async () => {
  await h.close();
});

const SECRET = 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=';

describe('ingesters', () => {
  it('creates, lists and gets an ingester with its hook URL; secrets stay write-only', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, {
      key: t.apiKey,
      body: { name: 'stripe-prod', provider: 'stripe', config: { signing_secret: SECRET, tolerance_seconds: 300, required_headers: ['X-Source'] } },
    });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({
      name: 'stripe-prod',
      provider: 'stripe',
      state: 'ACTIVE',
      tenant_id: t.tenantId,
      hook_url: `http://127.0.0.1:9999/in/${made.body.id}`,
      config: { signing_secret_set: true, secrets_count: 1, tolerance_seconds: 300, required_headers: { 'x-source': null } },
    });
    expect(made.body.id).toMatch(/^ing_/);
    expect(JSON.stringify(made.body)).not.toContain(SECRET);

    const got = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters/${made.body.id}`, { key: t.apiKey });
    expect(got.body).toEqual(made.body);
    const list = await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey });
    expect(list.body).toEqual({ ingesters: [made.body], next_cursor: null });
    expect(JSON.stringify(list.body)).not.toContain('whsec');

    // Stored sealed, opened with SECRETS_KEY.
    const { rows } = await h.db.pool.query('SELECT secrets, config FROM ingesters WHERE id = $1', [made.body.id]);
    expect(rows[0].secrets[0]).not.toContain(SECRET);
    expect(createSecretBox(h.api.context.config.SECRETS_KEY).open(rows[0].secrets[0])).toBe(SECRET);
    expect(JSON.stringify(rows[0].config)).not.toContain(SECRET);
  });

  it('accepts `type` as the provider and keeps two secrets for rotation', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'gh', type: 'github', config: { signing_secrets: ['new-secret-1', 'old-secret-2'] } } });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ provider: 'github', config: { secrets_count: 2 } });
  });

  it('names the bad fields: unknown provider, missing name', async () => {
    const t = await h.tenant();
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { provider: 'paypal' } });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('https://hookline.dev/errors/validation-error');
    const fields = res.body.errors.map((e: { field: string }) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['name', 'provider']));
    const none = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'x' } });
    expect(none.body.errors).toEqual([{ field: 'provider', message: 'is required' }]);
    const leaky = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'x', provider: 'generic', config: { api_token: 'abc' } } });
    expect(leaky.body.errors).toEqual([{ field: 'config.api_token', message: 'looks like a secret; use config.signing_secret' }]);
  });

  it('answers invalid JSON with a validation problem', async () => {
    const t = await h.tenant();
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, rawBody: '{"name": ', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/validation-error', errors: [{ field: 'body' }] });
    expect(res.body.instance).toBe(res.headers.get('x-request-id'));
  });

  it('gates the IP allowlist to Pro and names the plan', async () => {
    const free = await h.tenant({ plan: 'free' });
    const body = { name: 'allow', provider: 'generic', config: { ip_allowlist: ['10.0.0.0/8'] } };
    const res = await h.call('POST', `/v1/tenants/${free.tenantId}/ingesters`, { key: free.apiKey, body });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/plan-required', required_plan: 'pro', current_plan: 'free' });
    expect(await h.prisma.ingester.count({ where: { tenantId: free.tenantId } })).toBe(0);
    const pro = await h.tenant({ plan: 'pro' });
    expect((await h.call('POST', `/v1/tenants/${pro.tenantId}/ingesters`, { key: pro.apiKey, body })).status).toBe(201);
    const dedicated = await h.call('POST', `/v1/tenants/${pro.tenantId}/ingesters`, { key: pro.apiKey, body: { name: 'ded', provider: 'generic', config: { dedicated_ip: true } } });
    expect(dedicated.status).toBe(403);
    expect(dedicated.body).toMatchObject({ required_plan: 'business', current_plan: 'pro' });
  });

  it('updates with PUT, keeping secrets unless new ones are sent', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'a', provider: 'generic', config: { signing_secret: 'first-secret' } } });
    const put = await h.call('PUT', `/v1/tenants/${t.tenantId}/ingesters/${made.body.id}`, { key: t.apiKey, body: { name: 'b', provider: 'generic', config: { event_type_path: '$.type' } } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ name: 'b', config: { event_type_path: '$.type', secrets_count: 1 } });
  });
});

describe('destinations', () => {
  it('generates a signing secret, returns it once, and never again', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, {
      key: t.apiKey,
      body: { name: 'orders', url: 'https://example.test/hook', config: { timeout_ms: 5000, headers: { 'x-env': 'prod' }, mtls: { cert: TEST_CLIENT_CERT, key: 'PRIVATE-KEY-PEM' } } },
    });
    expect(made.status).toBe(201);
    expect(made.body.signing_secret).toMatch(/^whsec_/);
    expect(made.body).toMatchObject({ name: 'orders', method: 'POST', state: 'ACTIVE', signing_secrets_count: 1, config: { timeout_ms: 5000, mtls: { cert: TEST_CLIENT_CERT, key_set: true } } });
    expect(JSON.stringify(made.body)).not.toContain('PRIVATE-KEY-PEM');
    const got = await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey });
    expect(got.body.signing_secret).toBeUndefined();
    expect(JSON.stringify(got.body)).not.toContain(made.body.signing_secret);
    const { rows } = await h.db.pool.query('SELECT secrets, config FROM destinations WHERE id = $1', [made.body.id]);
    const box = createSecretBox(h.api.context.config.SECRETS_KEY);
    expect(box.open(rows[0].secrets[0])).toBe(made.body.signing_secret);
    expect(box.open(rows[0].config.mtls.key_sealed)).toBe('PRIVATE-KEY-PEM');
  });

  it('refuses non-http URLs and reserved headers, naming the field', async () => {
    const t = await h.tenant();
    const bad = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'x', url: 'ftp://example.test/' } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe('url');
    const hdr = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'x', url: 'http://127.0.0.1:1/', config: { headers: { 'Webhook-Signature': 'x' } } } });
    expect(hdr.body.errors).toEqual([{ field: 'config.headers.Webhook-Signature', message: 'is set by Hookline and cannot be configured' }]);
  });

  it('patches partially and rotates the secret, keeping the previous one valid', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'http://127.0.0.1:1/', config: { timeout_ms: 1000 } } });
    const patched = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey, body: { rotate_signing_secret: true, config: { max_attempts: 3 } } });
    expect(patched.status).toBe(200);
    expect(patched.body.signing_secret).toMatch(/^whsec_/);
    expect(patched.body.signing_secret).not.toBe(made.body.signing_secret);
    expect(patched.body).toMatchObject({ name: 'd', signing_secrets_count: 2, config: { timeout_ms: 1000, max_attempts: 3 } });
  });

  it('keeps credential-bearing header values write-only, and a PATCH sending the placeholder back keeps them', async () => {
    const t = await h.tenant();
    const headers = { Authorization: 'Bearer TOKEN-AUTHZ', 'X-Api-Key': 'TOKEN-APIKEY', 'X-Env': 'prod' };
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'authd', url: 'https://example.test/hook', config: { headers } } });
    expect(made.status).toBe(201);
    const shown = { Authorization: '[redacted]', 'X-Api-Key': '[redacted]', 'X-Env': 'prod' };
    const views = [
      made.body,
      (await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey })).body,
      (await h.call('GET', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey })).body.destinations[0],
      (await h.call('GET', '/v1/targets', { key: t.apiKey })).body.targets[0],
    ];
    for (const view of views) {
      expect(view.config.headers).toEqual(shown);
      expect(JSON.stringify(view)).not.toContain('TOKEN-');
    }
    const stored = async () => (await h.db.pool.query('SELECT config FROM destinations WHERE id = $1', [made.body.id])).rows[0].config.headers;
    expect(await stored()).toEqual(headers);

    // The view sent back as is (placeholders included) changes nothing; a new value replaces.
    const back = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey, body: { config: { headers: { ...shown, 'X-Env': 'staging' } } } });
    expect(back.status).toBe(200);
    expect(await stored()).toEqual({ ...headers, 'X-Env': 'staging' });
    await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey, body: { config: { headers: { ...shown, Authorization: 'Bearer TOKEN-NEW' } } } });
    expect(await stored()).toEqual({ ...headers, 'X-Env': 'prod', Authorization: 'Bearer TOKEN-NEW' });

    // A placeholder standing for nothing stored is refused, on create and on PATCH, changing nothing.
    const before = await stored();
    const orphan = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey, body: { config: { headers: { 'X-Other-Token': '[redacted]' } } } });
    expect([orphan.status, orphan.body.errors]).toEqual([400, [{ field: 'config.headers.X-Other-Token', message: 'is the redaction placeholder and there is no stored value to keep' }]]);
    expect(await stored()).toEqual(before);
    const created = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'ph', url: 'https://example.test/hook', config: { headers: { Authorization: '[redacted]' } } } });
    expect([created.status, created.body.errors[0].field]).toEqual([400, 'config.headers.Authorization']);
  });
});

describe('delivery flows', () => {
  it('connects an ingester to a destination under either spelling and validates the filter', async () => {
    const t = await h.tenant();
    const ing = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'i', provider: 'generic' } });
    const dst = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'http://127.0.0.1:1/' } });
    const a = await h.call('POST', `/v1/tenants/${t.tenantId}/delivery-flows`, { key: t.apiKey, body: { name: 'f1', endpoint: ing.body.id, target: dst.body.id } });
    expect(a.status).toBe(201);
    // The record names its references as SPEC creates them (endpoint, target) and by id.
    expect(a.body).toMatchObject({ endpoint: ing.body.id, target: dst.body.id, ingester_id: ing.body.id, destination_id: dst.body.id, state: 'ACTIVE', filter: {} });
    const b = await h.call('POST', `/v1/tenants/${t.tenantId}/delivery-flows`, {
      key: t.apiKey,
      body: { name: 'f2', ingester_id: ing.body.id, destination_id: dst.body.id, filter: { event_types: ['order.*'] } },
    });
    expect(b.status).toBe(201);
    expect([b.body.endpoint, b.body.target]).toEqual([ing.body.id, dst.body.id]);
    const list = await h.call('GET', `/v1/tenants/${t.tenantId}/delivery-flows`, { key: t.apiKey });
    expect(list.body.delivery_flows.map((f: { id: string }) => f.id)).toEqual([b.body.id, a.body.id]);
    const bad = await h.call('POST', `/v1/tenants/${t.tenantId}/delivery-flows`, { key: t.apiKey, body: { name: 'f3', endpoint: ing.body.id, target: dst.body.id, filter: { jsonpath: '$[' } } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe('filter.jsonpath');
  });

  it('refuses references to objects of another tenant with 422', async () => {
    const t = await h.tenant();
    const other = await h.tenant();
    const ing = await h.call('POST', `/v1/tenants/${other.tenantId}/ingesters`, { key: other.apiKey, body: { name: 'i', provider: 'generic' } });
    const dst = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'http://127.0.0.1:1/' } });
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/delivery-flows`, { key: t.apiKey, body: { name: 'f', endpoint: ing.body.id, target: dst.body.id } });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ field: 'endpoint', message: `ingester ${ing.body.id} does not exist` }]);
  });
});
