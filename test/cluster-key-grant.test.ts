// Issuing a cluster key (enrolling a cluster, rotating its key) takes what its agents receive
// and do (services/api/src/clusters/cluster-key-grant.ts): event bodies (read:events),
// destination URLs and credential headers (write:destinations) and recorded outcomes
// (write:deliveries), besides write:clusters. Before, write:clusters alone minted a key whose
// work items carried the destinations' credentials and payloads, and whose reports marked
// deliveries delivered.
import { randomUUID } from 'node:crypto';
import { API_SCOPES } from '@hookline/signing';
import { startApi, type ApiHarness, type ApiResponse } from './api-harness';
import { SECRETS_KEY } from './edge-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('clskeygrant', { SECRETS_KEY });
});
afterAll(async () => {
  await h?.close();
});

type Tenant = Awaited<ReturnType<ApiHarness['tenant']>>;

async function keyWith(t: Tenant, scopes: string[]): Promise<string> {
  const res = await h.call('POST', `/v1/tenants/${t.tenantId}/api-keys`, { key: t.apiKey, body: { name: `key-${scopes.length}-${randomUUID().slice(0, 8)}`, scopes } });
  expect(res.status).toBe(201);
  return res.body.key as string;
}

function expectRefused(res: ApiResponse, missing: string[]): void {
  expect(res.status).toBe(403);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/insufficient-scope', status: 403, required_scope: missing[0], missing_scopes: missing, instance: res.headers.get('x-request-id') });
  expect(JSON.stringify(res.body)).not.toMatch(/hmac_key|hkc_/);
}

const clusterState = async (id: string) =>
  (await h.db.pool.query<{ key_encrypted: string; previous_key_encrypted: string | null }>('SELECT key_encrypted, previous_key_encrypted FROM clusters WHERE id = $1', [id])).rows[0]!;

test('write:clusters alone neither enrolls a cluster nor rotates its key (403 naming what is missing, nothing changed)', async () => {
  const t = await h.tenant();
  const weak = await keyWith(t, ['read:clusters', 'write:clusters']);
  const name = `edge-${randomUUID()}`;
  expectRefused(await h.call('POST', `/v1/tenants/${t.tenantId}/clusters`, { key: weak, body: { name } }), ['write:destinations', 'read:events', 'write:deliveries']);
  expect((await h.db.pool.query('SELECT 1 FROM clusters WHERE tenant_id = $1', [t.tenantId])).rowCount).toBe(0);

  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/clusters`, { key: t.apiKey, body: { name } });
  expect(made.status).toBe(201);
  const before = await clusterState(made.body.id);
  const almost = await keyWith(t, ['write:clusters', 'write:destinations', 'read:events']);
  expectRefused(await h.call('POST', `/v1/tenants/${t.tenantId}/clusters/${made.body.id}/rotate-key`, { key: almost, body: { grace_seconds: 3600 } }), ['write:deliveries']);
  expect(await clusterState(made.body.id)).toEqual(before);
  // Disabling needs no more than write:clusters: it takes power away.
  expect((await h.call('POST', `/v1/tenants/${t.tenantId}/clusters/${made.body.id}/disable`, { key: weak })).status).toBe(200);
});

test('a credential holding what an agent receives enrolls and rotates', async () => {
  const t = await h.tenant();
  const operator = await keyWith(t, ['write:clusters', 'write:destinations', 'read:events', 'write:deliveries']);
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/clusters`, { key: operator, body: { name: `edge-${randomUUID()}` } });
  expect(made.status).toBe(201);
  expect(made.body.hmac_key).toEqual(expect.any(String));
  const rotated = await h.call('POST', `/v1/tenants/${t.tenantId}/clusters/${made.body.id}/rotate-key`, { key: operator, body: { grace_seconds: 0 } });
  expect(rotated.status).toBe(200);
  expect(rotated.body.hmac_key).not.toBe(made.body.hmac_key);
  // Every scope (as a session has) too.
  const all = await keyWith(t, [...API_SCOPES]);
  expect((await h.call('POST', `/v1/tenants/${t.tenantId}/clusters/${made.body.id}/rotate-key`, { key: all, body: {} })).status).toBe(200);
});
