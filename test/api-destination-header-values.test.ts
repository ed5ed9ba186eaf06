// Destination header values the deliverer could not send (undici refuses anything but tab,
// 0x20-0x7e and 0x80-0xff) are refused on write, as is User-Agent (set by Hookline); a value
// stored before that check is not kept by sending the redaction placeholder back.
import { startApi, type ApiHarness, VALIDATION } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apihdrval');
});
afterAll(async () => {
  await h.close();
});

const UNSENDABLE = { control: 'ctl\u0001', euro: 'euro €', del: 'del\u007f', emoji: 'smile \u{1F600}', c1: 'bell\u0007' };

async function storedConfig(id: string): Promise<Record<string, unknown>> {
  return (await h.db.pool.query('SELECT config FROM destinations WHERE id = $1', [id])).rows[0].config;
}

describe('destination header values', () => {
  it('refuses on create a value undici cannot send, naming the header; nothing is written', async () => {
    const t = await h.tenant();
    for (const [what, value] of Object.entries(UNSENDABLE)) {
      const res = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: `d-${what}`, url: 'https://example.test/hook', config: { headers: { 'X-A': value, 'x-ok': 'fine' } } } });
      expect([what, res.status, res.body.type]).toEqual([what, 400, VALIDATION]);
      expect([what, res.body.errors]).toEqual([what, [{ field: 'config.headers.X-A', message: expect.stringContaining('must match pattern') }]]);
    }
    const { rows } = await h.db.pool.query('SELECT count(*)::int AS n FROM destinations WHERE tenant_id = $1', [t.tenantId]);
    expect(rows[0].n).toBe(0);
  });

  it('accepts tab, visible ASCII and U+0080-U+00FF', async () => {
    const t = await h.tenant();
    const headers = { 'X-Tab': 'a\tb', 'X-Latin1': 'café ÿ', 'X-Plain': 'Bearer-ish ~!' };
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'ok', url: 'https://example.test/hook', config: { headers } } });
    expect(res.status).toBe(201);
    expect(res.body.config.headers).toEqual(headers);
  });

  it('refuses on PATCH a value undici cannot send; the stored config is unchanged', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'p', url: 'https://example.test/hook', config: { timeout_ms: 1000, headers: { 'x-env': 'prod' } } } });
    expect(made.status).toBe(201);
    const before = await storedConfig(made.body.id);
    for (const [what, value] of Object.entries(UNSENDABLE)) {
      const res = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey, body: { config: { timeout_ms: 2000, headers: { 'x-env': value } } } });
      expect([what, res.status, res.body.type, res.body.errors?.map((e: { field: string }) => e.field)]).toEqual([what, 400, VALIDATION, ['config.headers.x-env']]);
    }
    expect(await storedConfig(made.body.id)).toEqual(before);
  });

  it('refuses User-Agent on create and PATCH, as the other headers Hookline sets', async () => {
    const t = await h.tenant();
    const refused = [{ field: 'config.headers.User-Agent', message: 'is set by Hookline and cannot be configured' }];
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'ua', url: 'https://example.test/hook', config: { headers: { 'User-Agent': 'mine/1.0' } } } });
    expect([made.status, made.body.errors]).toEqual([400, refused]);
    const ok = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'ua', url: 'https://example.test/hook' } });
    expect(ok.status).toBe(201);
    const patched = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${ok.body.id}`, { key: t.apiKey, body: { config: { headers: { 'User-Agent': 'mine/1.0' } } } });
    expect([patched.status, patched.body.errors]).toEqual([400, refused]);
    expect(await storedConfig(ok.body.id)).toEqual({});
  });

  it('does not show a User-Agent stored before it was reserved, so the view sent back as a PATCH is taken', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'old-ua', url: 'https://example.test/hook', config: { headers: { 'x-env': 'prod' } } } });
    await h.db.pool.query(`UPDATE destinations SET config = jsonb_set(config, '{headers,User-Agent}', '"mine/1.0"') WHERE id = $1`, [made.body.id]);
    const view = await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey });
    expect(view.body.config.headers).toEqual({ 'x-env': 'prod' });
    const patched = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey, body: { config: view.body.config } });
    expect([patched.status, patched.body.config.headers]).toEqual([200, { 'x-env': 'prod' }]);
  });

  it('does not keep an unsendable value stored before the check by its redaction placeholder; a new value replaces it', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'old', url: 'https://example.test/hook', config: { headers: { Authorization: 'Bearer good', 'x-env': 'prod' } } } });
    expect(made.status).toBe(201);
    // As written before values were checked.
    await h.db.pool.query(`UPDATE destinations SET config = jsonb_set(config, '{headers,Authorization}', to_jsonb($2::text)) WHERE id = $1`, [made.body.id, 'Bearer tök€n']);
    const before = await storedConfig(made.body.id);
    const kept = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey, body: { config: { headers: { Authorization: '[redacted]', 'x-env': 'staging' } } } });
    expect([kept.status, kept.body.errors]).toEqual([400, [{ field: 'config.headers.Authorization', message: expect.stringContaining('stored value cannot be sent') }]]);
    expect(await storedConfig(made.body.id)).toEqual(before);
    const fixed = await h.call('PATCH', `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`, { key: t.apiKey, body: { config: { headers: { Authorization: 'Bearer token', 'x-env': 'staging' } } } });
    expect(fixed.status).toBe(200);
    expect((await storedConfig(made.body.id))['headers']).toEqual({ Authorization: 'Bearer token', 'x-env': 'staging' });
  });
});
