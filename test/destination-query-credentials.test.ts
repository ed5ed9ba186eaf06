// A destination URL's query values whose parameter names are credentials (lib/secret-keys.ts,
// isCredentialHeader: access_token, api_key, key, …) are write-only like its userinfo: views
// and the audit log show `name=****`; the masked URL sent back keeps the stored values when
// nothing else in the URL changed; `****` with nothing to keep is refused; a cluster_id
// change must resend them in clear. The deliverer still reads the stored URL.
import { waitFor } from '@hookline/testing';
import { insertCluster } from './edge-fixtures';
import { startApi, type ApiHarness, VALIDATION, type ApiTenant as Tenant } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('qrycred');
});
afterAll(async () => {
  await h.close();
});

const storedUrl = async (id: string): Promise<string> => (await h.db.pool.query('SELECT url FROM destinations WHERE id = $1', [id])).rows[0].url;
const count = async (t: Tenant): Promise<number> => (await h.db.pool.query('SELECT count(*)::int AS n FROM destinations WHERE tenant_id = $1', [t.tenantId])).rows[0].n;
const create = (t: Tenant, url: string, extra: Record<string, unknown> = {}) =>
  h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: `q-${Math.random().toString(36).slice(2, 8)}`, url, ...extra } });

async function views(t: Tenant, id: string, made: any): Promise<any[]> {
  return [
    made,
    (await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${id}`, { key: t.apiKey })).body,
    (await h.call('GET', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey })).body.destinations.find((d: { id: string }) => d.id === id),
    (await h.call('GET', '/v1/targets', { key: t.apiKey })).body.targets.find((d: { id: string }) => d.id === id),
  ];
}

const URL_Q = 'https://hooks.example.com/in?src=hl&access_token=QRY-SECRET-TOKEN&api_key=QRY-SECRET-APIKEY&page=2#frag';
const SHOWN_Q = 'https://hooks.example.com/in?src=hl&access_token=****&api_key=****&page=2#frag';

describe('credential query values', () => {
  it('are masked in the create response, GET, the list and /v1/targets, and stored for the deliverer', async () => {
    const t = await h.tenant();
    const made = await create(t, URL_Q);
    expect(made.status).toBe(201);
    for (const view of await views(t, made.body.id, made.body)) {
      expect(view.url).toBe(SHOWN_Q);
      expect(JSON.stringify(view)).not.toContain('QRY-SECRET');
    }
    expect(await storedUrl(made.body.id)).toBe(URL_Q);

    // With userinfo too, both masked; other parameters and an empty credential value shown as given.
    const both = await create(t, 'https://u:QRY-SECRET-PW@example.test/x?token=QRY-SECRET-T2&key=&q=a+b');
    expect(both.body.url).toBe('https://u:****@example.test/x?token=****&key=&q=a+b');
  });

  it('a PATCH sending the masked URL back keeps the stored values; any other change to the URL needs them in clear', async () => {
    const t = await h.tenant();
    const made = await create(t, URL_Q);
    const path = `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`;
    const same = await h.call('PATCH', path, { key: t.apiKey, body: { url: made.body.url, name: 'kept' } });
    expect([same.status, same.body.url]).toEqual([200, SHOWN_Q]);
    expect(await storedUrl(made.body.id)).toBe(URL_Q);

    for (const url of [
      'https://hooks.example.com/other?src=hl&access_token=****&api_key=****&page=2#frag',
      'https://hooks.example.com/in?src=hl&access_token=****&api_key=****&page=3#frag',
      'https://hooks.example.com/in?access_token=****&src=hl&api_key=****&page=2#frag',
      'https://hooks.example.com/in?src=hl&access_token=****&page=2#frag',
      'https://attacker.test/in?src=hl&access_token=****&api_key=****&page=2#frag',
      'https://hooks.example.com/in?src=hl&access_token=****&api_key=****&page=2&sig_key=****#frag',
    ]) {
      const res = await h.call('PATCH', path, { key: t.apiKey, body: { url } });
      expect({ url, status: res.status, type: res.body.type, fields: res.body.errors?.map((e: { field: string }) => e.field) }).toEqual({ url, status: 400, type: VALIDATION, fields: ['url'] });
      expect(JSON.stringify(res.body)).not.toContain('QRY-SECRET');
    }
    expect(await storedUrl(made.body.id)).toBe(URL_Q);

    // One value sent again in clear, the other kept by the mask.
    const one = await h.call('PATCH', path, { key: t.apiKey, body: { url: 'https://hooks.example.com/in?src=hl&access_token=NEW-TOKEN&api_key=****&page=2#frag' } });
    expect(one.status).toBe(400);
    const resent = await h.call('PATCH', path, { key: t.apiKey, body: { url: 'https://hooks.example.com/v2?access_token=NEW-TOKEN' } });
    expect([resent.status, resent.body.url]).toEqual([200, 'https://hooks.example.com/v2?access_token=****']);
    expect(await storedUrl(made.body.id)).toBe('https://hooks.example.com/v2?access_token=NEW-TOKEN');
  });

  it('keeps both the userinfo and the query values through the masked round trip', async () => {
    const t = await h.tenant();
    const made = await create(t, 'https://u:PW-1@example.test/x?token=TOK-1');
    const path = `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`;
    expect(made.body.url).toBe('https://u:****@example.test/x?token=****');
    const back = await h.call('PATCH', path, { key: t.apiKey, body: { url: made.body.url } });
    expect(back.status).toBe(200);
    expect(await storedUrl(made.body.id)).toBe('https://u:PW-1@example.test/x?token=TOK-1');
    // A new password in clear with the query value kept by the mask.
    const pw = await h.call('PATCH', path, { key: t.apiKey, body: { url: 'https://u:PW-2@example.test/x?token=****' } });
    expect(pw.status).toBe(200);
    expect(await storedUrl(made.body.id)).toBe('https://u:PW-2@example.test/x?token=TOK-1');
  });

  it('refuses **** in a credential query value on create, writing nothing', async () => {
    const t = await h.tenant();
    for (const url of ['https://hooks.example.com/in?access_token=****', 'https://hooks.example.com/in?a=1&api_key=****']) {
      const res = await create(t, url);
      expect({ url, status: res.status, type: res.body.type, fields: res.body.errors?.map((e: { field: string }) => e.field) }).toEqual({ url, status: 400, type: VALIDATION, fields: ['url'] });
      expect(res.body.errors[0].message).toContain('****');
    }
    expect(await count(t)).toBe(0);
    // **** in a parameter that is no credential is just a value.
    const plain = await create(t, 'https://hooks.example.com/in?q=****');
    expect([plain.status, plain.body.url]).toEqual([201, 'https://hooks.example.com/in?q=****']);
  });

  it('a PATCH changing cluster_id must send the URL again in clear', async () => {
    const t = await h.tenant();
    const a = await insertCluster(h.db.pool, t.tenantId);
    const made = await create(t, URL_Q);
    const path = `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`;
    for (const body of [{ cluster_id: a.id }, { cluster_id: a.id, url: SHOWN_Q }]) {
      const res = await h.call('PATCH', path, { key: t.apiKey, body });
      expect({ body, status: res.status, fields: res.body.errors?.map((e: { field: string }) => e.field) }).toEqual({ body, status: 400, fields: ['url'] });
      expect(res.body.errors[0].message).toMatch(/cluster/);
    }
    expect(await storedUrl(made.body.id)).toBe(URL_Q);
    const moved = await h.call('PATCH', path, { key: t.apiKey, body: { cluster_id: a.id, url: 'https://hooks.example.com/in?access_token=EDGE-TOKEN' } });
    expect([moved.status, moved.body.cluster_id]).toEqual([200, a.id]);
    expect(await storedUrl(made.body.id)).toBe('https://hooks.example.com/in?access_token=EDGE-TOKEN');
  });

  it('are masked in the audit log', async () => {
    const t = await h.tenant();
    const made = await create(t, 'https://hooks.example.com/in?access_token=AUDIT-QRY-1&x=1');
    expect(made.status).toBe(201);
    const patched = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey, body: { url: 'https://hooks.example.com/in?api_key=AUDIT-QRY-2' } });
    expect(patched.status).toBe(200);
    const list = await waitFor(async () => {
      const r = await h.call('GET', `/v1/tenants/${t.tenantId}/audit-logs`, { key: t.apiKey });
      return r.body.audit_logs.length >= 2 ? r : null;
    });
    const byAction = Object.fromEntries(list.body.audit_logs.map((a: { action: string }) => [a.action, a]));
    expect(byAction['destinations.create'].params.body.url).toBe('https://hooks.example.com/in?access_token=****&x=1');
    expect(byAction['destinations.update'].params.body.url).toBe('https://hooks.example.com/in?api_key=****');
    const { rows } = await h.db.pool.query('SELECT params::text AS p FROM audit_logs WHERE tenant_id = $1', [t.tenantId]);
    for (const r of rows) expect(r.p).not.toContain('AUDIT-QRY');
  });
});
