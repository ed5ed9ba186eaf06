// Secrets are never returned after creation (SPEC): a destination URL's userinfo credential,
// an ingester's header-rule values and secret-looking destination config keys, in views and
// in the audit log.
import { waitFor } from '@hookline/testing';
import { startApi, type ApiHarness, VALIDATION } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('credmask');
});
afterAll(async () => {
  await h.close();
});

const storedUrl = async (id: string): Promise<string> => (await h.db.pool.query('SELECT url FROM destinations WHERE id = $1', [id])).rows[0].url;

/** Every view of one destination: create response, GET, the tenant list and the flat list. */
async function destinationViews(t: { tenantId: string; apiKey: string }, made: { body: any }): Promise<any[]> {
  return [
    made.body,
    (await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey })).body,
    (await h.call('GET', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey })).body.destinations.find((d: { id: string }) => d.id === made.body.id),
    (await h.call('GET', '/v1/targets', { key: t.apiKey })).body.targets.find((d: { id: string }) => d.id === made.body.id),
  ];
}

describe('destination URL credentials', () => {
  it('shows the password masked in every view and stores it for the deliverer', async () => {
    const t = await h.tenant();
    const url = 'https://hook-user:S3cr3t-URL-pass@example.test/hooks/in?src=hl';
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'basic', url } });
    expect(made.status).toBe(201);
    for (const view of await destinationViews(t, made)) {
      expect(view.url).toBe('https://hook-user:****@example.test/hooks/in?src=hl');
      expect(JSON.stringify(view)).not.toContain('S3cr3t-URL-pass');
    }
    expect(await storedUrl(made.body.id)).toBe(url);
  });

  it('masks the user name when it is the only credential (sent as Basic "name:")', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'tok', url: 'https://sk_live_USERNAME_TOKEN@example.test/x' } });
    expect(made.status).toBe(201);
    for (const view of await destinationViews(t, made)) expect(view.url).toBe('https://****@example.test/x');
  });

  it('leaves URLs without userinfo exactly as given', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'plain', url: 'HTTPS://Example.test:443/a/../b' } });
    expect(made.body.url).toBe('HTTPS://Example.test:443/a/../b');
  });

  it('a PATCH sending the masked URL back keeps the stored password (path changes allowed)', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'keep', url: 'https://u:p%40ss-KEEP@example.test/v1' } });
    const path = `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`;
    const same = await h.call('PATCH', path, { key: t.apiKey, body: { url: made.body.url, name: 'keep2' } });
    expect(same.status).toBe(200);
    expect(same.body.url).toBe('https://u:****@example.test/v1');
    expect(await storedUrl(made.body.id)).toBe('https://u:p%40ss-KEEP@example.test/v1');

    const moved = await h.call('PATCH', path, { key: t.apiKey, body: { url: 'https://u:****@example.test/v2?x=1' } });
    expect(moved.status).toBe(200);
    expect(await storedUrl(made.body.id)).toBe('https://u:p%40ss-KEEP@example.test/v2?x=1');

    const replaced = await h.call('PATCH', path, { key: t.apiKey, body: { url: 'https://u:new-pass@example.test/v2' } });
    expect(replaced.status).toBe(200);
    expect(await storedUrl(made.body.id)).toBe('https://u:new-pass@example.test/v2');
  });

  it('refuses the mask when there is no stored credential to keep, or it would go to another origin or user', async () => {
    const t = await h.tenant();
    const created = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'm', url: 'https://u:****@example.test/' } });
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({ type: VALIDATION, errors: [{ field: 'url', message: expect.stringContaining('****') }] });
    expect(created.body.instance).toBe(created.headers.get('x-request-id'));
    expect((await h.db.pool.query('SELECT count(*)::int AS n FROM destinations WHERE tenant_id = $1', [t.tenantId])).rows[0].n).toBe(0);

    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'https://u:ORIGINAL-pw@example.test/' } });
    const path = `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`;
    for (const url of ['https://u:****@attacker.test/', 'http://u:****@example.test/', 'https://u:****@example.test:8443/', 'https://other:****@example.test/']) {
      const res = await h.call('PATCH', path, { key: t.apiKey, body: { url } });
      expect({ url, status: res.status, fields: res.body.errors?.map((e: { field: string }) => e.field) }).toEqual({ url, status: 400, fields: ['url'] });
    }
    expect(await storedUrl(made.body.id)).toBe('https://u:ORIGINAL-pw@example.test/');
  });
});

describe('secret-looking destination config keys', () => {
  it('refuses them on create and PATCH, like the ingester side, writing nothing', async () => {
    const t = await h.tenant();
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'https://example.test/', config: { api_token: 'tok-123', region: 'eu' } } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: VALIDATION, errors: [{ field: 'config.api_token', message: expect.stringMatching(/^looks like a secret/) }] });
    expect((await h.db.pool.query('SELECT count(*)::int AS n FROM destinations WHERE tenant_id = $1', [t.tenantId])).rows[0].n).toBe(0);

    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'https://example.test/', config: { region: 'eu' } } });
    expect(made.status).toBe(201);
    const path = `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`;
    const patched = await h.call('PATCH', path, { key: t.apiKey, body: { config: { password: 'pw', api_key: 'k', client_secret: 's' } } });
    expect(patched.status).toBe(400);
    expect(patched.body.errors.map((e: { field: string }) => e.field)).toEqual(['config.password', 'config.api_key', 'config.client_secret']);
    expect((await h.call('GET', path, { key: t.apiKey })).body.config).toEqual({ region: 'eu' });
  });

  it('shows one stored before the rule as "[redacted]", and a PATCH with null removes it', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'legacy', url: 'https://example.test/' } });
    await h.db.pool.query(`UPDATE destinations SET config = '{"api_token":"LEGACY-TOKEN","region":"eu"}' WHERE id = $1`, [made.body.id]);
    const path = `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`;
    const got = await h.call('GET', path, { key: t.apiKey });
    expect(got.body.config).toEqual({ api_token: '[redacted]', region: 'eu' });
    const cleaned = await h.call('PATCH', path, { key: t.apiKey, body: { config: { api_token: null } } });
    expect(cleaned.status).toBe(200);
    expect(cleaned.body.config).toEqual({ region: 'eu' });
    expect((await h.db.pool.query('SELECT config FROM destinations WHERE id = $1', [made.body.id])).rows[0].config).toEqual({ region: 'eu' });
  });
});

describe('ingester required_headers values', () => {
  const rules = { 'X-Source-Token': 'HDR-SHARED-SECRET', 'x-present': null };

  it('are shown redacted in every view (names and "must be present" kept) and stored for ingest', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'hdr', provider: 'generic', config: { required_headers: rules } } });
    expect(made.status).toBe(201);
    const views = [
      made.body,
      (await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters/${made.body.id}`, { key: t.apiKey })).body,
      (await h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey })).body.ingesters[0],
      (await h.call('GET', '/v1/endpoints', { key: t.apiKey })).body.endpoints[0],
    ];
    for (const view of views) {
      expect(view.config.required_headers).toEqual({ 'X-Source-Token': '[redacted]', 'x-present': null });
      expect(JSON.stringify(view)).not.toContain('HDR-SHARED-SECRET');
    }
    expect((await h.db.pool.query('SELECT config FROM ingesters WHERE id = $1', [made.body.id])).rows[0].config.required_headers).toEqual(rules);
  });

  it('a PUT sending the view back keeps the stored values; a placeholder with nothing to keep is refused', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'hdr', provider: 'generic', config: { required_headers: rules } } });
    const path = `/v1/tenants/${t.tenantId}/ingesters/${made.body.id}`;
    const stored = async () => (await h.db.pool.query('SELECT config FROM ingesters WHERE id = $1', [made.body.id])).rows[0].config.required_headers;

    const roundTrip = await h.call('PUT', path, { key: t.apiKey, body: { name: 'hdr2', provider: 'generic', config: { required_headers: { 'x-source-token': '[redacted]', 'x-present': null } } } });
    expect(roundTrip.status).toBe(200);
    expect(await stored()).toEqual({ 'x-source-token': 'HDR-SHARED-SECRET', 'x-present': null });

    const unknown = await h.call('PUT', path, { key: t.apiKey, body: { name: 'hdr3', provider: 'generic', config: { required_headers: { 'x-source-token': '[redacted]', 'x-new': '[redacted]' } } } });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ type: VALIDATION, errors: [{ field: 'config.required_headers.x-new', message: expect.stringContaining('placeholder') }] });
    expect((await h.call('GET', path, { key: t.apiKey })).body.name).toBe('hdr2');

    const created = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'new', provider: 'generic', config: { required_headers: { 'x-a': '[redacted]' } } } });
    expect(created.status).toBe(400);
    expect(created.body.errors).toEqual([{ field: 'config.required_headers.x-a', message: expect.stringContaining('placeholder') }]);
  });
});

describe('audit log', () => {
  it('records URL credentials masked and header-rule values redacted', async () => {
    const t = await h.tenant();
    const dst = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'a', url: 'https://audit-user:AUDIT-URL-PW@example.test/h' } });
    expect(dst.status).toBe(201);
    const patched = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${dst.body.id}`, { key: t.apiKey, body: { url: 'https://audit-user:AUDIT-URL-PW2@example.test/h' } });
    expect(patched.status).toBe(200);
    const ing = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'a', provider: 'generic', config: { required_headers: { 'X-Token': 'AUDIT-HDR-VALUE', 'x-present': null } } } });
    expect(ing.status).toBe(201);

    const list = await waitFor(async () => {
      const r = await h.call('GET', `/v1/tenants/${t.tenantId}/audit-logs`, { key: t.apiKey });
      return r.body.audit_logs.length >= 3 ? r : null;
    });
    const byAction = Object.fromEntries(list.body.audit_logs.map((a: { action: string }) => [a.action, a]));
    expect(byAction['destinations.create'].params.body.url).toBe('https://audit-user:****@example.test/h');
    expect(byAction['destinations.update'].params.body.url).toBe('https://audit-user:****@example.test/h');
    expect(byAction['ingesters.create'].params.body.config.required_headers).toEqual({ 'X-Token': '[redacted]', 'x-present': null });
    const text = JSON.stringify(list.body);
    for (const secret of ['AUDIT-URL-PW', 'AUDIT-HDR-VALUE']) expect(text).not.toContain(secret);
    const { rows } = await h.db.pool.query('SELECT params::text AS p FROM audit_logs WHERE tenant_id = $1', [t.tenantId]);
    for (const r of rows) for (const secret of ['AUDIT-URL-PW', 'AUDIT-HDR-VALUE']) expect(r.p).not.toContain(secret);
  });
});
