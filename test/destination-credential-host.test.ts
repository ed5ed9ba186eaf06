// A destination's stored credentials are write-only, and a write that does not know them
// cannot send them to a server of its choosing: a PATCH moving the URL to another origin
// (scheme, host, port) must send every stored credential header again in clear or remove it,
// as it must the URL password. A "[redacted]" placeholder, or a credential header kept by
// leaving config.headers out, is a 400 naming each header, and nothing is written.
// A cluster_id change (onto an edge cluster, between clusters, or off one) is treated as an
// origin change: another cluster's agents would send them.
import { insertCluster } from './edge-fixtures';
import { startApi, type ApiHarness, VALIDATION, type ApiTenant as Tenant } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('credhost');
});
afterAll(async () => {
  await h.close();
});

const HEADERS = { Authorization: 'Bearer HOST-SECRET-AUTHZ', 'X-Api-Key': 'HOST-SECRET-APIKEY', 'X-Env': 'prod' };
const SHOWN = { Authorization: '[redacted]', 'X-Api-Key': '[redacted]', 'X-Env': 'prod' };
const URL0 = 'https://hook-user:HOST-SECRET-URLPW@example.test/hooks?src=hl';

const row = async (id: string) => (await h.db.pool.query('SELECT url, config, secrets, cluster_id, updated_at FROM destinations WHERE id = $1', [id])).rows[0];

async function destination(t: Tenant, url = URL0, clusterId: string | null = null): Promise<{ id: string; path: string; view: any }> {
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, {
    key: t.apiKey,
    body: { name: `d-${Math.random().toString(36).slice(2, 8)}`, url, cluster_id: clusterId, config: { headers: HEADERS, timeout_ms: 2000 } },
  });
  expect(made.status).toBe(201);
  expect(made.body.config.headers).toEqual(SHOWN);
  return { id: made.body.id, path: `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, view: made.body };
}

const fieldsOf = (body: any): string[] => (body.errors ?? []).map((e: { field: string }) => e.field).sort();

describe('a PATCH moving the URL to another origin', () => {
  it('refuses to keep stored credential headers it does not send (config.headers left out), naming each, writing nothing', async () => {
    const t = await h.tenant();
    const d = await destination(t);
    const before = await row(d.id);
    const bodies = [
      { url: 'https://attacker.test/hooks' },
      { url: 'https://attacker.test/hooks', name: 'renamed' },
      { url: 'https://attacker.test/hooks', config: { timeout_ms: 5000 } },
      { url: 'http://example.test/hooks' },
      { url: 'https://example.test:8443/hooks' },
      { url: 'https://hook-user:new-pw@attacker.test/hooks' },
    ];
    for (const body of bodies) {
      const res = await h.call('PATCH', d.path, { key: t.apiKey, body });
      expect({ body, status: res.status, type: res.body.type, fields: fieldsOf(res.body) }).toEqual({
        body,
        status: 400,
        type: VALIDATION,
        fields: ['config.headers.Authorization', 'config.headers.X-Api-Key'],
      });
      expect(res.body.instance).toBe(res.headers.get('x-request-id'));
      expect(res.body.errors[0].message).toMatch(/origin/);
      expect(JSON.stringify(res.body)).not.toContain('HOST-SECRET');
    }
    expect(await row(d.id)).toEqual(before);
  });

  it('refuses "[redacted]" placeholders sent back (with the masked URL, the url field too), writing nothing', async () => {
    const t = await h.tenant();
    const d = await destination(t);
    const before = await row(d.id);

    const placeholders = await h.call('PATCH', d.path, { key: t.apiKey, body: { url: 'https://attacker.test/hooks', config: { headers: SHOWN } } });
    expect(placeholders.status).toBe(400);
    expect(placeholders.body).toMatchObject({ type: VALIDATION, status: 400, instance: placeholders.headers.get('x-request-id') });
    expect(placeholders.body.errors).toEqual([
      { field: 'config.headers.Authorization', message: expect.stringContaining('redaction placeholder') },
      { field: 'config.headers.X-Api-Key', message: expect.stringContaining('redaction placeholder') },
    ]);

    // One header resent, the other kept by placeholder: only that one is named.
    const half = await h.call('PATCH', d.path, { key: t.apiKey, body: { url: 'https://attacker.test/hooks', config: { headers: { ...SHOWN, Authorization: 'Bearer mine' } } } });
    expect([half.status, fieldsOf(half.body)]).toEqual([400, ['config.headers.X-Api-Key']]);

    // The view sent back whole with the new host: the URL password and both headers.
    const whole = await h.call('PATCH', d.path, { key: t.apiKey, body: { url: 'https://hook-user:****@attacker.test/hooks?src=hl', config: d.view.config } });
    expect([whole.status, fieldsOf(whole.body)]).toEqual([400, ['config.headers.Authorization', 'config.headers.X-Api-Key', 'url']]);

    expect(await row(d.id)).toEqual(before);
  });

  it('is accepted once each stored credential is sent again in clear or removed', async () => {
    const t = await h.tenant();
    const d = await destination(t);
    const resent = await h.call('PATCH', d.path, { key: t.apiKey, body: { url: 'https://other.test/in', config: { headers: { Authorization: 'Bearer NEW', 'X-Api-Key': 'NEW-KEY', 'X-Env': 'prod' } } } });
    expect(resent.status).toBe(200);
    expect(resent.body.config.headers).toEqual(SHOWN);
    let stored = await row(d.id);
    expect(stored.url).toBe('https://other.test/in');
    expect(stored.config).toEqual({ headers: { Authorization: 'Bearer NEW', 'X-Api-Key': 'NEW-KEY', 'X-Env': 'prod' }, timeout_ms: 2000 });

    // Removed (config.headers without them), non-credential headers may stay as shown.
    const removed = await h.call('PATCH', d.path, { key: t.apiKey, body: { url: 'https://third.test/in', config: { headers: { 'X-Env': 'prod' } } } });
    expect(removed.status).toBe(200);
    stored = await row(d.id);
    expect([stored.url, stored.config.headers]).toEqual(['https://third.test/in', { 'X-Env': 'prod' }]);

    // With no credential header stored, an origin change needs nothing resent.
    const bare = await h.call('PATCH', d.path, { key: t.apiKey, body: { url: 'https://fourth.test/in' } });
    expect(bare.status).toBe(200);
    expect((await row(d.id)).config.headers).toEqual({ 'X-Env': 'prod' });
  });
});

describe('a PATCH keeping the origin', () => {
  it('keeps stored credential headers when it leaves the URL out, or changes only its path or query', async () => {
    const t = await h.tenant();
    const d = await destination(t);
    const storedHeaders = async () => (await row(d.id)).config.headers;

    const rename = await h.call('PATCH', d.path, { key: t.apiKey, body: { name: 'kept', config: { headers: SHOWN } } });
    expect(rename.status).toBe(200);
    expect(await storedHeaders()).toEqual(HEADERS);

    for (const url of ['https://hook-user:****@example.test/v2?x=1', 'https://example.test/v3', 'HTTPS://EXAMPLE.test:443/v4#frag']) {
      const left = await h.call('PATCH', d.path, { key: t.apiKey, body: { url } });
      expect({ url, status: left.status }).toEqual({ url, status: 200 });
      expect(await storedHeaders()).toEqual(HEADERS);
      const back = await h.call('PATCH', d.path, { key: t.apiKey, body: { url, config: { headers: SHOWN } } });
      expect({ url, status: back.status }).toEqual({ url, status: 200 });
      expect(await storedHeaders()).toEqual(HEADERS);
    }
    expect((await row(d.id)).url).toBe('HTTPS://EXAMPLE.test:443/v4#frag');
  });

  it('leaves the signing secret alone on an origin change (it signs, it is never sent)', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'signed', url: 'https://example.test/a', signing_secret: 'whsec_c2lnbmluZy1zZWNyZXQtMDEyMzQ1Njc4OQ==' } });
    expect(made.status).toBe(201);
    const before = await row(made.body.id);
    const moved = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey, body: { url: 'https://elsewhere.test/a' } });
    expect(moved.status).toBe(200);
    expect(moved.body.signing_secrets_count).toBe(1);
    expect((await row(made.body.id)).secrets).toEqual(before.secrets);
  });
});

describe('a PATCH changing cluster_id', () => {
  const MASKED = 'https://hook-user:****@example.test/hooks?src=hl';
  const ALL = ['config.headers.Authorization', 'config.headers.X-Api-Key', 'url'];

  it('onto an edge cluster, between clusters or off one: refuses stored credentials kept by omission, placeholder or mask, naming each, writing nothing', async () => {
    const t = await h.tenant();
    const a = await insertCluster(h.db.pool, t.tenantId);
    const b = await insertCluster(h.db.pool, t.tenantId);
    const central = await destination(t);
    const onA = await destination(t, URL0, a.id);
    const moves: [{ path: string; id: string }, string | null][] = [[central, a.id], [onA, b.id], [onA, null]];
    for (const [d, cluster_id] of moves) {
      const before = await row(d.id);
      const cases: [Record<string, unknown>, string[]][] = [
        // Everything kept by leaving it out: both headers and the URL password.
        [{ cluster_id }, ALL],
        [{ cluster_id, name: 'renamed', config: { timeout_ms: 5000 } }, ALL],
        // Placeholders and the masked URL sent back, as a view shows them.
        [{ cluster_id, url: MASKED, config: { headers: SHOWN } }, ALL],
        // The URL sent again in clear: only the headers left.
        [{ cluster_id, url: 'https://hook-user:NEW-PW@example.test/hooks' }, ['config.headers.Authorization', 'config.headers.X-Api-Key']],
        // Headers sent again in clear, the URL password kept: only url.
        [{ cluster_id, config: { headers: { Authorization: 'Bearer NEW', 'X-Api-Key': 'NEW', 'X-Env': 'prod' } } }, ['url']],
        [{ cluster_id, url: MASKED, config: { headers: { 'X-Env': 'prod' } } }, ['url']],
        // One header resent, the other kept by placeholder: that one named.
        [{ cluster_id, url: 'https://example.test/hooks', config: { headers: { ...SHOWN, Authorization: 'Bearer mine' } } }, ['config.headers.X-Api-Key']],
      ];
      for (const [body, fields] of cases) {
        const res = await h.call('PATCH', d.path, { key: t.apiKey, body });
        expect({ body, status: res.status, type: res.body.type, fields: fieldsOf(res.body) }).toEqual({ body, status: 400, type: VALIDATION, fields });
        expect(res.body.instance).toBe(res.headers.get('x-request-id'));
        for (const e of res.body.errors) expect(e.message).toMatch(/cluster/);
        expect(JSON.stringify(res.body)).not.toContain('HOST-SECRET');
      }
      expect(await row(d.id)).toEqual(before);
    }
  });

  it('is accepted once each stored credential is sent again in clear or removed; the same cluster_id keeps them', async () => {
    const t = await h.tenant();
    const a = await insertCluster(h.db.pool, t.tenantId);
    const b = await insertCluster(h.db.pool, t.tenantId);
    const d = await destination(t);

    // The same cluster_id (here none) is no move: everything kept, as on any PATCH.
    const same = await h.call('PATCH', d.path, { key: t.apiKey, body: { cluster_id: null, url: MASKED, config: { headers: SHOWN } } });
    expect(same.status).toBe(200);
    expect([(await row(d.id)).url, (await row(d.id)).config.headers]).toEqual([URL0, HEADERS]);

    // Onto cluster a, everything sent again in clear.
    const resent = await h.call('PATCH', d.path, {
      key: t.apiKey,
      body: { cluster_id: a.id, url: 'https://hook-user:EDGE-PW@example.test/hooks', config: { headers: { Authorization: 'Bearer EDGE', 'X-Api-Key': 'EDGE-KEY', 'X-Env': 'prod' } } },
    });
    expect([resent.status, resent.body.cluster_id, resent.body.config.headers]).toEqual([200, a.id, SHOWN]);
    let stored = await row(d.id);
    expect([stored.cluster_id, stored.url, stored.config.headers]).toEqual([a.id, 'https://hook-user:EDGE-PW@example.test/hooks', { Authorization: 'Bearer EDGE', 'X-Api-Key': 'EDGE-KEY', 'X-Env': 'prod' }]);

    // Staying on a: placeholders and the mask keep them.
    const stay = await h.call('PATCH', d.path, { key: t.apiKey, body: { cluster_id: a.id, url: 'https://hook-user:****@example.test/hooks', config: { headers: { ...SHOWN } } } });
    expect(stay.status).toBe(200);
    expect((await row(d.id)).config.headers).toEqual({ Authorization: 'Bearer EDGE', 'X-Api-Key': 'EDGE-KEY', 'X-Env': 'prod' });

    // To cluster b, every credential removed: the URL without userinfo, headers without them.
    const removed = await h.call('PATCH', d.path, { key: t.apiKey, body: { cluster_id: b.id, url: 'https://example.test/hooks', config: { headers: { 'X-Env': 'prod' } } } });
    expect(removed.status).toBe(200);
    stored = await row(d.id);
    expect([stored.cluster_id, stored.url, stored.config.headers]).toEqual([b.id, 'https://example.test/hooks', { 'X-Env': 'prod' }]);

    // With no credential stored, a cluster change needs nothing resent.
    const off = await h.call('PATCH', d.path, { key: t.apiKey, body: { cluster_id: null } });
    expect([off.status, (await row(d.id)).cluster_id]).toEqual([200, null]);
  });
});

it('refuses an empty cluster_id on create and PATCH (it would name a cluster nobody serves), writing nothing', async () => {
  const t = await h.tenant();
  const path = `/v1/tenants/${t.tenantId}/destinations`;
  const made = await h.call('POST', path, { key: t.apiKey, body: { name: 'empty-cluster', url: 'https://example.test/h', cluster_id: '' } });
  expect([made.status, made.body.type, made.body.errors?.[0]?.field]).toEqual([400, VALIDATION, 'cluster_id']);
  expect((await h.db.pool.query('SELECT count(*)::int AS n FROM destinations WHERE tenant_id = $1', [t.tenantId])).rows[0].n).toBe(0);
  const d = await destination(t, 'https://example.test/h');
  const before = await row(d.id);
  const patched = await h.call('PATCH', d.path, { key: t.apiKey, body: { cluster_id: '' } });
  expect([patched.status, patched.body.errors?.[0]?.field]).toEqual([400, 'cluster_id']);
  expect(await row(d.id)).toEqual(before);
});
