// What a control-API credential may give an MCP key (services/api/src/mcp/mcp-grants.ts): an
// MCP scope or a write tool group only with the control-API scopes that do the same over
// REST, as an API key can only be given scopes its creator holds. Before, write:api-keys
// alone made an MCP key that read deliveries and logs, retried, replayed and switched
// destinations.
import { newId } from '@hookline/db';
import { hashPassword } from '@hookline/signing';
import type { SeededTenant } from '@hookline/testing';
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('mcpgrants');
});
afterAll(async () => {
  await h.close();
});

const keysPath = (t: SeededTenant) => `/v1/tenants/${t.tenantId}/mcp-keys`;

/** An API key of the tenant with only these scopes, made through the API as a customer would. */
async function apiKeyWith(t: SeededTenant, scopes: string[]): Promise<string> {
  const res = await h.call('POST', `/v1/tenants/${t.tenantId}/api-keys`, { key: t.apiKey, body: { name: scopes.join(' '), scopes } });
  expect(res.status).toBe(201);
  return res.body.key;
}

async function counts(t: SeededTenant): Promise<{ keys: number; grants: number }> {
  const { rows } = await h.db.pool.query<{ keys: number; grants: number }>(
    `SELECT (SELECT count(*)::int FROM api_keys WHERE tenant_id = $1 AND kind = 'mcp') AS keys,
            (SELECT count(*)::int FROM mcp_tool_grants WHERE tenant_id = $1) AS grants`,
    [t.tenantId],
  );
  return rows[0]!;
}

const KEYS_ONLY = ['read:api-keys', 'write:api-keys'];

describe('a control-API credential gives an MCP key only what it could do over REST', () => {
  it('refuses MCP read scopes whose control-API read scopes the credential lacks (403 insufficient-scope, nothing created)', async () => {
    const t = await h.tenant();
    const weak = await apiKeyWith(t, KEYS_ONLY);
    const before = await counts(t);

    const deliveries = await h.call('POST', keysPath(t), { key: weak, body: { name: 'esc', scopes: ['mcp:read:deliveries'] } });
    expect(deliveries.status).toBe(403);
    expect(deliveries.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(deliveries.body).toMatchObject({
      type: 'https://hookline.dev/errors/insufficient-scope',
      title: 'Insufficient Scope',
      status: 403,
      required_scope: 'read:deliveries',
      missing_scopes: ['read:deliveries'],
      mcp_scope: 'mcp:read:deliveries',
      instance: deliveries.headers.get('x-request-id'),
    });

    // The audit's reproduction: deliveries, logs and key administration at once.
    const esc = await h.call('POST', keysPath(t), { key: weak, body: { name: 'esc', scopes: ['mcp:read:deliveries', 'mcp:read:logs', 'mcp:admin:keys'] } });
    expect(esc.status).toBe(403);
    expect(esc.body.required_scope).toBe('read:deliveries');
    // Logs need every read scope of what they show, each one named.
    const logs = await h.call('POST', keysPath(t), { key: await apiKeyWith(t, [...KEYS_ONLY, 'read:deliveries']), body: { name: 'logs', scopes: ['mcp:read:logs'] } });
    expect(logs.status).toBe(403);
    expect(logs.body).toMatchObject({ required_scope: 'read:events', missing_scopes: ['read:events', 'read:ingesters', 'read:audit'], mcp_scope: 'mcp:read:logs' });
    expect(logs.body.detail).toMatch(/read:events, read:ingesters, read:audit/);
    // Left out, the default read scopes are checked the same way.
    const defaults = await h.call('POST', keysPath(t), { key: weak, body: { name: 'defaults' } });
    expect(defaults.status).toBe(403);
    expect(defaults.body).toMatchObject({ required_scope: 'read:evidence', mcp_scope: 'mcp:read:health' });
    // get_readiness shows the shared queue depths, which REST readiness shows with read:deliveries.
    const health = await h.call('POST', keysPath(t), { key: await apiKeyWith(t, [...KEYS_ONLY, 'read:evidence']), body: { name: 'health', scopes: ['mcp:read:health'] } });
    expect([health.status, health.body.required_scope]).toEqual([403, 'read:deliveries']);

    expect(await counts(t)).toEqual(before);
    const audit = await h.db.pool.query<{ outcome: string }>(`SELECT outcome FROM audit_logs WHERE tenant_id = $1 AND action = 'mcp_keys.create' ORDER BY id`, [t.tenantId]);
    expect(audit.rows.map((r) => r.outcome)).toEqual(Array(5).fill('client_error:403'));
  });

  it('refuses enabling a write group without its control-API write scope (403, nothing enabled), and the key stays without it', async () => {
    const t = await h.tenant();
    const target = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'agent', scopes: ['mcp:read:health'] } });
    expect(target.status).toBe(201);
    const weak = await apiKeyWith(t, KEYS_ONLY);
    const before = await counts(t);
    for (const [group, scope] of [['configuration', 'write:destinations'], ['retry', 'write:deliveries'], ['replay', 'write:deliveries']] as const) {
      const res = await h.call('PUT', `${keysPath(t)}/${target.body.id}/tool-groups/${group}`, { key: weak });
      expect([group, res.status]).toEqual([group, 403]);
      expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/insufficient-scope', required_scope: scope, missing_scopes: [scope], tool_group: group, instance: res.headers.get('x-request-id') });
    }
    // write:deliveries opens retry and replay, not configuration.
    const deliveriesOnly = await apiKeyWith(t, [...KEYS_ONLY, 'write:deliveries']);
    expect((await h.call('PUT', `${keysPath(t)}/${target.body.id}/tool-groups/configuration`, { key: deliveriesOnly })).body).toMatchObject({ status: 403, required_scope: 'write:destinations' });
    expect(await counts(t)).toEqual(before);

    // So set_destination_state stays refused for the key.
    const dst = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'http://127.0.0.1:1/hook' } });
    const call = await h.call('POST', '/v1/mcp/tools/set_destination_state', { headers: { 'x-mcp-api-key': target.body.key }, body: { destination_id: dst.body.id, state: 'DISABLED' } });
    expect(call.body).toMatchObject({ status: 403, tool_group: 'configuration' });
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/destinations/${dst.body.id}`, { key: t.apiKey })).body.state).toBe('ACTIVE');
  });
});

describe('a credential holding the mapped scopes still grants', () => {
  it('an API key with the read and write scopes makes the key and enables exactly the groups it covers', async () => {
    const t = await h.tenant();
    const reader = await apiKeyWith(t, [...KEYS_ONLY, 'read:deliveries', 'read:evidence', 'read:clusters']);
    const made = await h.call('POST', keysPath(t), { key: reader, body: { name: 'reader', scopes: ['mcp:read:deliveries', 'mcp:read:health', 'mcp:read:evidence', 'mcp:read:planes', 'mcp:read:endpoints', 'mcp:admin:keys'] } });
    expect(made.status).toBe(201);
    expect((await h.call('GET', '/v1/mcp/deliveries/dlv_0000000000000000000000000/status', { headers: { 'x-mcp-api-key': made.body.key } })).status).toBe(404);

    const writer = await apiKeyWith(t, [...KEYS_ONLY, 'write:deliveries']);
    // retry and replay (write:deliveries) but still not configuration; the MCP scope mcp:read:endpoints needs nothing more.
    const agent = await h.call('POST', keysPath(t), { key: writer, body: { name: 'agent', scopes: ['mcp:read:endpoints'] } });
    expect(agent.status).toBe(201);
    for (const group of ['retry', 'replay']) expect((await h.call('PUT', `${keysPath(t)}/${agent.body.id}/tool-groups/${group}`, { key: writer })).status).toBe(200);
    expect((await h.call('PUT', `${keysPath(t)}/${agent.body.id}/tool-groups/configuration`, { key: writer })).status).toBe(403);

    const operator = await apiKeyWith(t, [...KEYS_ONLY, 'write:destinations']);
    const enabled = await h.call('PUT', `${keysPath(t)}/${agent.body.id}/tool-groups/configuration`, { key: operator });
    expect(enabled.status).toBe(200);
    expect(enabled.body.tool_groups).toEqual(['configuration', 'replay', 'retry']);
    // ...and the group does what the operator could do over REST.
    const dst = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'd', url: 'http://127.0.0.1:1/hook' } });
    const call = await h.call('POST', '/v1/mcp/tools/set_destination_state', { headers: { 'x-mcp-api-key': agent.body.key }, body: { destination_id: dst.body.id, state: 'DISABLED' } });
    expect(call.body).toEqual({ destination_id: dst.body.id, state: 'DISABLED', previous_state: 'ACTIVE' });
  });

  it('a session (every scope) grants every MCP scope and group; an MCP administrator keeps its own rule', async () => {
    const t = await h.tenant();
    const email = `${newId('usr')}@example.test`;
    await h.db.pool.query('INSERT INTO users (id, tenant_id, email, password_hash) VALUES ($1, $2, $3, $4)', [newId('usr'), t.tenantId, email, await hashPassword('pw-0123456789')]);
    const login = await h.call('POST', '/auth/login', { body: { email, password: 'pw-0123456789' } });
    const bearer = { authorization: `Bearer ${login.body.token}` };
    const admin = await h.call('POST', keysPath(t), { headers: bearer, body: { name: 'admin', scopes: ['mcp:admin:keys', 'mcp:read:deliveries', 'mcp:read:logs'] } });
    expect(admin.status).toBe(201);
    const all = await h.call('POST', keysPath(t), { headers: bearer, body: { name: 'defaults' } });
    expect(all.status).toBe(201);
    for (const group of ['retry', 'replay', 'configuration']) expect((await h.call('PUT', `${keysPath(t)}/${all.body.id}/tool-groups/${group}`, { headers: bearer })).status).toBe(200);

    // The MCP administrator holds no control-API scope, and needs none: it hands out MCP scopes it holds.
    const mcp = { 'x-mcp-api-key': admin.body.key };
    expect((await h.call('POST', keysPath(t), { headers: mcp, body: { name: 'child', scopes: ['mcp:read:logs'] } })).status).toBe(201);
    expect((await h.call('POST', keysPath(t), { headers: mcp, body: { name: 'child', scopes: ['mcp:read:planes'] } })).body).toMatchObject({ status: 403, required_scope: 'mcp:read:planes' });
    // A weak API key still cannot give what the session could.
    const weak = await apiKeyWith(t, KEYS_ONLY);
    expect((await h.call('PUT', `${keysPath(t)}/${admin.body.id}/tool-groups/retry`, { key: weak })).status).toBe(403);
  });
});

describe('an MCP key cannot outlive the expiring key that made it', () => {
  it('inherits an expiring API key\'s expiry, refuses a later one (422), and so does a key made by an expiring MCP key', async () => {
    const t = await h.tenant();
    const { rows } = await h.db.pool.query(`UPDATE api_keys SET expires_at = date_trunc('second', now()) + interval '2 days' WHERE id = $1 RETURNING expires_at`, [t.apiKeyId]);
    const apiExpiry = (rows[0].expires_at as Date).toISOString();
    const scopes = ['mcp:read:deliveries', 'mcp:admin:keys'];
    const inherited = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'inherits', scopes } });
    expect([inherited.status, inherited.body.expires_at]).toEqual([201, apiExpiry]);
    const later = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'later', scopes, expires_at: '2999-01-01T00:00:00Z' } });
    expect([later.status, later.body.errors?.[0]?.field]).toEqual([422, 'expires_at']);
    // The MCP key (expiring with the API key) makes another: capped at its own expiry.
    const sooner = new Date(Date.parse(apiExpiry) - 86_400_000).toISOString();
    const admin = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'admin', scopes, expires_at: sooner } });
    expect(admin.status).toBe(201);
    const child = await h.call('POST', keysPath(t), { headers: { 'x-mcp-api-key': admin.body.key }, body: { name: 'child', scopes: ['mcp:read:deliveries'] } });
    expect([child.status, child.body.expires_at]).toEqual([201, sooner]);
    const tooLate = await h.call('POST', keysPath(t), { headers: { 'x-mcp-api-key': admin.body.key }, body: { name: 'late', scopes: ['mcp:read:deliveries'], expires_at: apiExpiry } });
    expect(tooLate.status).toBe(422);
    expect((await counts(t)).keys).toBe(3);
  });
});

describe('revoking an MCP key takes a credential that could have granted its scopes', () => {
  const revoke = (t: SeededTenant, id: string, headers: Record<string, string>) => h.call('DELETE', `${keysPath(t)}/${id}`, { headers });
  const revokedAt = async (id: string) => (await h.db.pool.query<{ revoked_at: Date | null }>('SELECT revoked_at FROM api_keys WHERE id = $1', [id])).rows[0]!.revoked_at;

  it('a write:api-keys key cannot revoke an MCP key whose read scopes it lacks (403 permission-denied, key still live)', async () => {
    const t = await h.tenant();
    const strong = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'strong', scopes: ['mcp:read:deliveries', 'mcp:read:endpoints'] } });
    expect(strong.status).toBe(201);
    const weak = await apiKeyWith(t, KEYS_ONLY);
    const refused = await revoke(t, strong.body.id, { 'x-api-key': weak });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ type: 'https://hookline.dev/errors/permission-denied', status: 403, resource_id: strong.body.id, instance: refused.headers.get('x-request-id') });
    expect(refused.body.detail).toMatch(/lacks read:deliveries\)/);
    expect(await revokedAt(strong.body.id)).toBeNull();
    expect((await h.call('GET', '/v1/mcp/deliveries/dlv_0000000000000000000000000/status', { headers: { 'x-mcp-api-key': strong.body.key } })).status).toBe(404);

    // A key whose only scope needs nothing (mcp:read:endpoints) is revoked by the weak key,
    // write group and all: any key manager may disable groups.
    const agent = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'agent', scopes: ['mcp:read:endpoints'] } });
    expect((await h.call('PUT', `${keysPath(t)}/${agent.body.id}/tool-groups/retry`, { key: t.apiKey })).status).toBe(200);
    expect((await revoke(t, agent.body.id, { 'x-api-key': weak })).body).toMatchObject({ id: agent.body.id, tool_groups: [], revoked_at: expect.any(String) });
    expect((await h.db.pool.query('SELECT 1 FROM mcp_tool_grants WHERE api_key_id = $1', [agent.body.id])).rowCount).toBe(0);

    // A credential holding read:deliveries revokes the strong key.
    const covering = await apiKeyWith(t, [...KEYS_ONLY, 'read:deliveries']);
    expect((await revoke(t, strong.body.id, { 'x-api-key': covering })).status).toBe(200);
    expect((await h.call('GET', '/v1/mcp/deliveries/dlv_0000000000000000000000000/status', { headers: { 'x-mcp-api-key': strong.body.key } })).status).toBe(401);
    const audit = await h.db.pool.query<{ outcome: string }>(`SELECT outcome FROM audit_logs WHERE tenant_id = $1 AND action = 'mcp_keys.revoke' ORDER BY id`, [t.tenantId]);
    expect(audit.rows.map((r) => r.outcome)).toEqual(['client_error:403', 'success:200', 'success:200']);
  });

  it('an MCP administrator revokes keys within its own scopes, not stronger ones', async () => {
    const t = await h.tenant();
    const admin = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'admin', scopes: ['mcp:admin:keys', 'mcp:read:health'] } });
    const peer = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'peer', scopes: ['mcp:read:health'] } });
    const stronger = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'stronger', scopes: ['mcp:read:health', 'mcp:read:logs'] } });
    const asAdmin = { 'x-mcp-api-key': admin.body.key };

    const up = await revoke(t, stronger.body.id, asAdmin);
    expect(up.status).toBe(403);
    expect(up.body).toMatchObject({ type: 'https://hookline.dev/errors/permission-denied', resource_id: stronger.body.id });
    expect(up.body.detail).toMatch(/lacks mcp:read:logs\)/);
    expect(await revokedAt(stronger.body.id)).toBeNull();

    expect((await revoke(t, peer.body.id, asAdmin)).status).toBe(200);
    expect(await revokedAt(peer.body.id)).not.toBeNull();
  });
});
