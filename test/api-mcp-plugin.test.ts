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
      expect(res.headers.get('allow')).toBe('POST');
    }
    const index = await h.call('GET', '/ai/evidence/v1/index.json');
    expect(index.body.mcp).toMatchObject({ endpoint: 'https://hooks.example.test/v1/mcp', auth_header: 'X-MCP-API-Key' });
  });

  it('publishes the MCP rate limit as it is: the tenant\'s control API is limited, its MCP calls are not', async () => {
    const limited = await startApi('apimcprl', { RATE_LIMITS: 'free=6/3,pro=6/3,business=6/3,enterprise=6/3' });
    try {
      const t = await limited.tenant();
      const made = await limited.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, body: { name: 'agent', scopes: ['mcp:read:health'] } });
      expect(made.status).toBe(201);
      // Ten MCP calls, more than the burst of 3: every one answered.
      for (let i = 0; i < 10; i++) expect((await limited.call('GET', '/v1/mcp/health', { headers: { 'x-mcp-api-key': made.body.key } })).status).toBe(200);
      const control = [];
      for (let i = 0; i < 4; i++) control.push((await limited.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey })).status);
      expect(control).toContain(429);
      const gaps = (await limited.call('GET', '/ai/security/v1/security-gaps.json')).body.gaps as { id: string; description: string }[];
      expect(gaps.find((g) => g.id === 'SG-006')!.description).toMatch(/^MCP calls .* are not rate-limited/);
    } finally {
      await limited.close();
    }
  });
});
