// IP allowlists: every entry is checked at write time with the parser ingest enforces the
// list with, on every surface that writes ingesters; and a stored allowlist keeps being
// enforced after the tenant's plan drops below Pro (a security control must not fail open).
import { startIngestHarness, type IngestHarness } from '../services/ingest/src/testing/ingest-harness';
import { startApi, type ApiHarness, VALIDATION } from './api-harness';

let h: ApiHarness;
let ingest: IngestHarness;
beforeAll(async () => {
  h = await startApi('allowlist');
  // Ingest reads the api's schema. Loopback is a trusted proxy, so X-Forwarded-For stands for
  // other clients without any traffic leaving this machine.
  ingest = await startIngestHarness({ label: 'allowlisting', appDatabaseUrl: () => h.db.url, env: { TRUSTED_PROXIES: '127.0.0.1/32' } });
});
afterAll(async () => {
  await ingest?.close();
  await h?.close();
});

const INVALID = ['10.0.0.1/33', '999.1.1.1', '1.2.3', '010.0.0.1', 'abc', '::1/129', '10.0.0.0/8/8', '1.2.3.4/', '10.0.0.1/-1', 'fffff::1', '1.2.3.4.5', ''];
const VALID = ['10.0.0.0/8', '192.0.2.7', '0.0.0.0/0', '2001:db8::/32', '::1', '::ffff:10.0.0.1', '2001:db8::1/128', '172.16.0.0/12'];

const ingesterCount = async (tenantId: string): Promise<number> => (await h.db.pool.query('SELECT count(*)::int AS n FROM ingesters WHERE tenant_id = $1', [tenantId])).rows[0].n;

function expectEntryRefused(res: { status: number; headers: Headers; body: any }, index: number): void {
  expect(res.status).toBe(400);
  expect(res.body.type).toBe(VALIDATION);
  expect(res.body.errors).toEqual([{ field: `config.ip_allowlist.${index}`, message: expect.stringMatching(/IP address or CIDR range/) }]);
  expect(res.body.instance).toBe(res.headers.get('x-request-id'));
}

describe('allowlist entries are validated at write time', () => {
  it.each(INVALID)('refuses %j on create, naming the entry, and writes nothing', async (bad) => {
    const t = await h.tenant({ plan: 'pro' });
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, {
      key: t.apiKey,
      body: { name: 'in', provider: 'generic', config: { ip_allowlist: ['127.0.0.1/32', bad] } },
    });
    expectEntryRefused(res, 1);
    expect(await ingesterCount(t.tenantId)).toBe(0);
  });

  it('accepts addresses and ranges of both families, stored as given', async () => {
    const t = await h.tenant({ plan: 'pro' });
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'ok', provider: 'generic', config: { ip_allowlist: VALID } } });
    expect(res.status).toBe(201);
    expect(res.body.config.ip_allowlist).toEqual(VALID);
  });

  it('names every bad entry, together with the other field errors', async () => {
    const t = await h.tenant({ plan: 'pro' });
    const res = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, {
      key: t.apiKey,
      body: { name: 'in', config: { ip_allowlist: ['999.1.1.1', '10.0.0.0/8', '10.0.0.1/33'] } },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['provider', 'config.ip_allowlist.0', 'config.ip_allowlist.2']);
  });

  it('refuses a bad entry on update (PUT), leaving the stored ingester as it was', async () => {
    const t = await h.tenant({ plan: 'pro' });
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: 'in', provider: 'generic', config: { ip_allowlist: ['10.0.0.0/8'] } } });
    expect(made.status).toBe(201);
    const path = `/v1/tenants/${t.tenantId}/ingesters/${made.body.id}`;
    const res = await h.call('PUT', path, { key: t.apiKey, body: { name: 'renamed', provider: 'generic', config: { ip_allowlist: ['10.0.0.0/8', '192.168.0.0/16', '10.0.0.1/33'] } } });
    expectEntryRefused(res, 2);
    const after = await h.call('GET', path, { key: t.apiKey });
    expect(after.body).toEqual(made.body);
  });

  it('refuses them on the flat /v1/endpoints and the dashboard (BFF) routes too', async () => {
    const t = await h.tenant({ plan: 'pro' });
    const body = { name: 'in', provider: 'generic', config: { ip_allowlist: ['abc'] } };
    expectEntryRefused(await h.call('POST', '/v1/endpoints', { key: t.apiKey, body }), 0);
    const cls = await h.call('POST', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey, body: { name: 'c' } });
    expect(cls.status).toBe(201);
    expectEntryRefused(await h.call('POST', `/api/bff/v1/tenants/${t.tenantId}/clusters/${cls.body.id}/ingesters`, { key: t.apiKey, body }), 0);
    expect(await ingesterCount(t.tenantId)).toBe(0);
  });
});

describe('a stored allowlist outlives a plan downgrade', () => {
  async function downgradedIngester(label: string): Promise<{ tenantId: string; apiKey: string; id: string; view: any }> {
    const t = await h.tenant({ plan: 'pro' });
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey, body: { name: label, provider: 'generic', config: { ip_allowlist: ['10.0.0.0/8'] } } });
    expect(made.status).toBe(201);
    await h.db.pool.query(`UPDATE tenants SET plan = 'free' WHERE id = $1`, [t.tenantId]);
    return { ...t, id: made.body.id, view: made.body };
  }

  it('ingest keeps refusing addresses outside it after the tenant drops to Free', async () => {
    const t = await downgradedIngester('kept');
    const refused = await ingest.post(t.id, '{}');
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ type: expect.stringMatching(/\/permission-denied$/), resource_id: t.id });
    const { rows } = await h.db.pool.query('SELECT reason_code, source_ip FROM ingest_rejections WHERE ingester_id = $1', [t.id]);
    expect(rows).toEqual([{ reason_code: 'forbidden', source_ip: '127.0.0.1' }]);
    expect((await ingest.post(t.id, '{}', { 'x-forwarded-for': '10.1.2.3' })).status).toBe(202);
  });

  it('lets the downgraded tenant keep it unchanged or remove it, but not change it', async () => {
    const t = await downgradedIngester('edit');
    const path = `/v1/tenants/${t.tenantId}/ingesters/${t.id}`;
    const kept = await h.call('PUT', path, { key: t.apiKey, body: { name: 'renamed', provider: 'generic', config: { ip_allowlist: ['10.0.0.0/8'] } } });
    expect(kept.status).toBe(200);
    expect(kept.body).toMatchObject({ name: 'renamed', config: { ip_allowlist: ['10.0.0.0/8'] } });

    const changed = await h.call('PUT', path, { key: t.apiKey, body: { name: 'renamed', provider: 'generic', config: { ip_allowlist: ['10.0.0.0/8', '192.0.2.0/24'] } } });
    expect(changed.status).toBe(403);
    expect(changed.body).toMatchObject({ type: 'https://hookline.dev/errors/plan-required', required_plan: 'pro', current_plan: 'free' });
    expect((await h.call('GET', path, { key: t.apiKey })).body.config.ip_allowlist).toEqual(['10.0.0.0/8']);

    const removed = await h.call('PUT', path, { key: t.apiKey, body: { name: 'renamed', provider: 'generic', config: {} } });
    expect(removed.status).toBe(200);
    expect(removed.body.config.ip_allowlist).toBeUndefined();
  });

  it('still refuses a new allowlist below Pro', async () => {
    const free = await h.tenant({ plan: 'free' });
    const res = await h.call('POST', `/v1/tenants/${free.tenantId}/ingesters`, { key: free.apiKey, body: { name: 'x', provider: 'generic', config: { ip_allowlist: ['10.0.0.0/8'] } } });
    expect(res.status).toBe(403);
    expect(await ingesterCount(free.tenantId)).toBe(0);
  });
});
