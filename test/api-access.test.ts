import { API_SCOPES } from '@hookline/signing';
import type { AuthedRoute } from '../services/api/src/http/route';
import { startApi, type ApiHarness } from './api-harness';
import { createPipeline, insertDelivery, insertEvent } from './api-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apiaccess');
});
afterAll(async () => {
  await h.close();
});

function credentialRoutes(): AuthedRoute[] {
  return h.api.routes.filter((r): r is AuthedRoute => r.auth === 'credential');
}

/** Fills `:params` from the segment before each (`/ingesters/:iid` → ids.ingesters). */
function fill(path: string, tid: string, ids: Record<string, string>): string {
  return path.replace(/\/([^/]+)\/:(\w+)/g, (_m, seg: string, name: string) => (name === 'tid' ? `/${seg}/${tid}` : `/${seg}/${ids[seg] ?? 'x_00000000000000000000000000'}`));
}

describe('scopes: each group refuses a credential without its scope', () => {
  const groups = [...new Set(API_SCOPES.map((s) => s.split(':')[1]))];
  it.each(groups)('%s', async (group) => {
    const routes = credentialRoutes().filter((r) => r.scope?.endsWith(`:${group}`));
    expect(routes.length).toBeGreaterThan(0);
    for (const route of routes) {
      const t = await h.tenant({ scopes: API_SCOPES.filter((s) => s !== route.scope) });
      const res = await h.call(route.method.toUpperCase(), fill(route.path, t.tenantId, {}), { key: t.apiKey, body: route.method === 'get' ? undefined : {} });
      expect({ route: `${route.method} ${route.path}`, status: res.status, body: res.body }).toMatchObject({
        status: 403,
        body: { type: 'https://hookline.dev/errors/insufficient-scope', required_scope: route.scope },
      });
    }
  });
});

describe('tenant isolation: every route denies another tenant', () => {
  it("answers 404 for every route called with a second tenant's credentials, and changes nothing", async () => {
    const a = await h.tenant({ plan: 'enterprise' });
    const b = await h.tenant({ plan: 'enterprise' });
    const p = await createPipeline(h, a.tenantId, a.apiKey);
    const evt = await insertEvent(h, a.tenantId, p.ingesterId, { status: 'dlq_queued' });
    const dlv = await insertDelivery(h, a.tenantId, evt, p, { status: 'exhausted', attempts: 1 });
    const spl = await h.call('POST', `/v1/tenants/${a.tenantId}/saved-payloads`, { key: a.apiKey, body: { name: 's', body: '{}' } });
    const cls = await h.call('POST', `/v1/tenants/${a.tenantId}/clusters`, { key: a.apiKey, body: { name: 'c' } });
    const ids: Record<string, string> = {
      ingesters: p.ingesterId,
      destinations: p.destinationId,
      targets: p.destinationId,
      'delivery-flows': p.flowId,
      deliveries: dlv,
      events: evt,
      'api-keys': a.apiKeyId,
      'saved-payloads': spl.body.id,
      clusters: cls.body.id,
    };
    const before = await h.db.pool.query('SELECT state::text AS s FROM ingesters WHERE tenant_id = $1 UNION ALL SELECT status::text FROM deliveries WHERE tenant_id = $1 UNION ALL SELECT coalesce(revoked_at::text, \'live\') FROM api_keys WHERE tenant_id = $1', [a.tenantId]);

    const leaks: string[] = [];
    for (const route of credentialRoutes()) {
      const path = fill(route.path, a.tenantId, ids);
      const body = route.method === 'get' ? undefined : {};
      const asB = await h.call(route.method.toUpperCase(), path, { key: b.apiKey, body, headers: { 'x-tenant-id': a.tenantId } });
      if (asB.status !== 404) leaks.push(`${route.method} ${route.path} with X-Tenant-ID → ${asB.status}`);
      if (route.tenant === 'flat' && /:\w+/.test(route.path)) {
        // Flat routes naming another tenant's object by id, with no tenant header.
        const byId = await h.call(route.method.toUpperCase(), path, { key: b.apiKey, body });
        if (byId.status !== 404) leaks.push(`${route.method} ${route.path} by id → ${byId.status}`);
      }
    }
    expect(leaks).toEqual([]);
    const after = await h.db.pool.query('SELECT state::text AS s FROM ingesters WHERE tenant_id = $1 UNION ALL SELECT status::text FROM deliveries WHERE tenant_id = $1 UNION ALL SELECT coalesce(revoked_at::text, \'live\') FROM api_keys WHERE tenant_id = $1', [a.tenantId]);
    expect(after.rows).toEqual(before.rows);
    expect((await h.call('GET', `/v1/tenants/${a.tenantId}/ingesters/${p.ingesterId}`, { key: a.apiKey })).status).toBe(200);
  });
});
