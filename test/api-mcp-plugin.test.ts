// The MCP plugin inside the api (the app main.ts builds): key management with the api's own
// credentials, the REST mirror as the OpenAPI document describes it, and the endpoint's methods.
import { newId } from '@hookline/db';
import { hashPassword } from '@hookline/signing';
import { startApi, type ApiHarness } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('apimcp', { API_PUBLIC_URL: 'https://hooks.example.test' });
});
afterAll(async () => {
  await h.close();
});

async function sessionToken(tenantId: string): Promise<string> {
  const email = `${newId('usr')}@example.test`;
  await h.db.pool.query('INSERT INTO users (id, tenant_id, email, password_hash) VALUES ($1, $2, $3, $4)', [newId('usr'), tenantId, email, await hashPassword('pw-0123456789')]);
  const login = await h.call('POST', '/auth/login', { body: { email, password: 'pw-0123456789' } });
  expect(login.status).toBe(200);
  return login.body.token;
}

describe('the MCP plugin in the api', () => {
  it('manages MCP keys with a session JWT (the api\'s own authentication) and audits them', async () => {
    const t = await h.tenant();
    const bearer = { authorization: `Bearer ${await sessionToken(t.tenantId)}` };
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { headers: bearer, body: { name: 'agent', scopes: ['mcp:read:health'] } });
    expect(made.status).toBe(201);
    expect(made.body.key).toMatch(/^mcp_/);
    const listed = await h.call('GET', `/v1/tenants/${t.tenantId}/mcp-keys`, { headers: bearer });
    expect(listed.body.mcp_keys.map((k: { id: string; key?: string }) => [k.id, k.key])).toEqual([[made.body.id, undefined]]);
    // Another tenant's path is not found; a bad token is 401.
    const other = await h.tenant();
    expect((await h.call('GET', `/v1/tenants/${other.tenantId}/mcp-keys`, { headers: bearer })).status).toBe(404);
    expect((await h.call('GET', `/v1/tenants/${t.tenantId}/mcp-keys`, { headers: { authorization: 'Bearer not.a.jwt' } })).status).toBe(401);
    const audit = await h.db.pool.query('SELECT actor, action FROM audit_logs WHERE tenant_id = $1 AND resource_id = $2', [t.tenantId, made.body.id]);
    expect(audit.rows).toEqual([{ actor: expect.stringMatching(/^user:usr_/), action: 'mcp_keys.create' }]);
  });

  it('answers the REST mirror as documented, scope by scope', async () => {
    const t = await h.tenant();
    const made = await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, body: { name: 'reader', scopes: ['mcp:read:health', 'mcp:read:endpoints', 'mcp:read:planes'] } });
    const mcp = { 'x-mcp-api-key': made.body.key };
    const health = await h.call('GET', '/v1/mcp/health', { headers: mcp });
    expect(health.body).toMatchObject({ status: 'ok', service: 'hookline-api', version: expect.stringMatching(/^\d+\.\d+\.\d+/), commit: null });
    const endpoints = await h.call('GET', '/v1/mcp/endpoints', { headers: mcp });
    expect(endpoints.body.tools.find((x: { name: string }) => x.name === 'get_capabilities')).toBeDefined();
    expect((await h.call('GET', '/v1/mcp/planes', { headers: mcp })).body.planes.map((p: { id: string }) => p.id)).toEqual(['control', 'delivery']);
    const denied = await h.call('GET', '/v1/mcp/evidence/rcp_00000000000000000000000000', { headers: mcp });
    expect(denied.status).toBe(403);
    expect(denied.body.required_scope).toBe('mcp:read:evidence');
    // An API key is not an MCP key.
    expect((await h.call('GET', '/v1/mcp/health', { headers: { 'x-mcp-api-key': t.apiKey } })).status).toBe(401);
  });

  it('refuses GET and DELETE on the stateless endpoint, and links the discovery documents to API_PUBLIC_URL', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await h.call(method, '/v1/mcp');
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST, OPTIONS');
    }
    const index = await h.call('GET', '/ai/evidence/v1/index.json');
    expect(index.body.mcp).toMatchObject({ endpoint: 'https://hooks.example.test/v1/mcp', auth_header: 'X-MCP-API-Key' });
  });

  it('rate-limits MCP calls with the control API, one budget per tenant, and publishes it as it is', async () => {
    // Burst 4, one token a minute: no refill during the test.
    const limited = await startApi('apimcprl', { RATE_LIMITS: 'free=1/4,pro=1/4,business=1/4,enterprise=1/4' });
    try {
      const t = await limited.tenant();
      const made = await limited.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, body: { name: 'agent', scopes: ['mcp:read:health'] } });
      expect(made.status).toBe(201);
      const mcp = { 'x-mcp-api-key': made.body.key };
      const statuses = [
        (await limited.call('GET', '/v1/mcp/health', { headers: mcp })).status,
        (await limited.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey })).status,
        (await limited.call('GET', '/v1/mcp/health', { headers: mcp })).status,
      ];
      expect(statuses).toEqual([200, 200, 200]);
      // Four requests over both surfaces spent the burst: each surface now answers the same 429.
      const viaMcp = await limited.call('GET', '/v1/mcp/health', { headers: mcp });
      const viaApi = await limited.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey });
      const viaRpc = await limited.call('POST', '/v1/mcp', {
        headers: { ...mcp, accept: 'application/json, text/event-stream' },
        body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_health', arguments: {} } },
      });
      const viaKeys = await limited.call('GET', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey });
      const problems = [viaMcp.body, viaApi.body, viaRpc.body.result._meta['hookline/problem'], viaKeys.body];
      for (const [res, problem] of [viaMcp, viaApi, viaRpc, viaKeys].map((r, i) => [r, problems[i]] as const)) {
        expect(res.status).toBe(429);
        expect(problem).toMatchObject({ type: 'https://hookline.dev/errors/rate-limit-exceeded', status: 429, instance: res.headers.get('x-request-id') });
        expect(res.headers.get('retry-after')).toBe(String(problem.retry_after_seconds));
      }
      expect(Object.keys(viaMcp.body).sort()).toEqual(Object.keys(viaApi.body).sort());
      // Another tenant is not affected.
      const other = await limited.tenant();
      expect((await limited.call('GET', `/v1/tenants/${other.tenantId}/mcp-keys`, { key: other.apiKey })).status).toBe(200);

      const gaps = (await limited.call('GET', '/ai/security/v1/security-gaps.json')).body.gaps as { id: string; description: string }[];
      expect(gaps.find((g) => g.id === 'SG-006')!.description).toMatch(/the tenant's per-plan bucket, shared by the control API and MCP, and each MCP key's own bucket/);
      const nonClaims = (await limited.call('GET', '/ai/evidence/v1/non-claims.json')).body;
      expect(JSON.stringify([gaps, nonClaims])).not.toMatch(/not rate-limited/);
    } finally {
      await limited.close();
    }
  });
});
