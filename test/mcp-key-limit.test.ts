// An MCP key with mcp:admin:keys creates keys through POST /v1/tenants/{tid}/mcp-keys
// (X-MCP-API-Key): it may not hand out a higher rate limit than its own effective one (422,
// nothing created), and a key it makes without one gets the default capped at its figures,
// stored as the key's own, so a later raise of MCP_KEY_RATE_LIMIT does not lift it above
// its creator's. A control-API credential stays capped at the plan only.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@hookline/logger';
import type { SeededTenant } from '@hookline/testing';
import { buildApp } from '../services/api/src/app';
import { defaultPlugins } from '../services/api/src/plugins';
import { startApi, type ApiHarness, type ApiResponse } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  // MCP_KEY_RATE_LIMIT 50/100; free's plan (30/40) is below it, the others far above.
  h = await startApi('mcpkeylimit', { RATE_LIMITS: 'free=30/40,pro=100000/100000,business=100000/100000,enterprise=100000/100000', MCP_KEY_RATE_LIMIT: '50/100' });
});
afterAll(async () => {
  await h.close();
});

type Limit = { per_minute: number; burst: number };
const keysPath = (t: SeededTenant) => `/v1/tenants/${t.tenantId}/mcp-keys`;
const ADMIN_SCOPES = ['mcp:admin:keys', 'mcp:read:health'];

/** An MCP administrator made with the tenant's API key, with its own rate limit or none. */
async function makeAdmin(t: SeededTenant, rateLimit?: Limit): Promise<{ id: string; key: string }> {
  const res = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'admin', scopes: ADMIN_SCOPES, ...(rateLimit ? { rate_limit: rateLimit } : {}) } });
  expect([res.status, res.body.type]).toEqual([201, undefined]);
  return res.body;
}
const byAdmin = (t: SeededTenant, adminKey: string, rateLimit?: Limit, requestId = 'req-mcp-key-limit'): Promise<ApiResponse> =>
  h.call('POST', keysPath(t), { headers: { 'x-mcp-api-key': adminKey, 'x-request-id': requestId }, body: { name: 'child', scopes: ['mcp:read:health'], ...(rateLimit ? { rate_limit: rateLimit } : {}) } });
const mcpKeyCount = async (t: SeededTenant): Promise<number> =>
  (await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1 AND kind = 'mcp'`, [t.tenantId])).rows[0]!.n;
const stored = async (id: string): Promise<unknown> =>
  (await h.db.pool.query('SELECT rate_limit_per_minute AS per_minute, rate_limit_burst AS burst FROM api_keys WHERE id = $1', [id])).rows[0];

function expectRefused(res: ApiResponse, errors: { field: string; message: string }[], creator: Limit): void {
  expect([res.status, res.headers.get('content-type')]).toEqual([422, expect.stringMatching(/^application\/problem\+json/)]);
  expect(res.body).toEqual({
    type: 'https://hookline.dev/errors/unprocessable-entity',
    title: 'Unprocessable Entity',
    status: 422,
    detail: `A key created with an MCP key cannot have a higher rate limit than that key's own (${creator.per_minute} per minute, burst ${creator.burst}).`,
    instance: res.headers.get('x-request-id'),
    errors,
  });
}

const PER_MINUTE = (n: number) => ({ field: 'rate_limit.per_minute', message: `must be at most ${n}, the per-minute limit of the MCP key creating it` });
const BURST = (n: number) => ({ field: 'rate_limit.burst', message: `must be at most ${n}, the burst of the MCP key creating it` });

test("an MCP key cannot create a key with a higher rate limit than its own: 422, nothing created", async () => {
  const t = await h.tenant({ plan: 'enterprise' });
  const admin = await makeAdmin(t, { per_minute: 20, burst: 30 });
  const creator = { per_minute: 20, burst: 30 };
  const cases: [Limit, { field: string; message: string }[]][] = [
    [{ per_minute: 21, burst: 30 }, [PER_MINUTE(20)]],
    [{ per_minute: 20, burst: 31 }, [BURST(30)]],
    [{ per_minute: 1000, burst: 1000 }, [PER_MINUTE(20), BURST(30)]],
    // Above the plan too: the creator's limit is the tighter bound, and the one named.
    [{ per_minute: 100001, burst: 5 }, [PER_MINUTE(20)]],
  ];
  for (const [rateLimit, errors] of cases) {
    const res = await byAdmin(t, admin.key, rateLimit, `req-over-${rateLimit.per_minute}-${rateLimit.burst}`);
    expect(res.body.instance).toBe(`req-over-${rateLimit.per_minute}-${rateLimit.burst}`);
    expectRefused(res, errors, creator);
  }
  expect(await mcpKeyCount(t)).toBe(1);
  // The refusals are audited as the admin's, as every key-management write is.
  const audit = await h.db.pool.query(`SELECT actor, outcome FROM audit_logs WHERE tenant_id = $1 AND action = 'mcp_keys.create' AND outcome = 'client_error:422'`, [t.tenantId]);
  expect(audit.rows).toEqual(cases.map(() => ({ actor: `mcp_key:${admin.id}`, outcome: 'client_error:422' })));

  // At its own figures or below: created with what was asked.
  const same = await byAdmin(t, admin.key, creator);
  const lower = await byAdmin(t, admin.key, { per_minute: 5, burst: 10 });
  expect([same.status, same.body.rate_limit, lower.status, lower.body.rate_limit]).toEqual([201, { ...creator, source: 'key' }, 201, { per_minute: 5, burst: 10, source: 'key' }]);

  // A control-API credential of the same tenant keeps the plan as its only cap.
  const byApi = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'big', rate_limit: { per_minute: 1000, burst: 1000 } } });
  expect([byApi.status, byApi.body.rate_limit]).toEqual([201, { per_minute: 1000, burst: 1000, source: 'key' }]);
  const overPlan = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'too-big', rate_limit: { per_minute: 100001, burst: 5 } } });
  expect([overPlan.status, overPlan.body.type, overPlan.body.errors]).toEqual([
    400,
    'https://hookline.dev/errors/validation-error',
    [{ field: 'rate_limit.per_minute', message: "must be at most 100000, the per-minute limit of the tenant's enterprise plan" }],
  ]);
  expect(await mcpKeyCount(t)).toBe(4);
});

test("the creator's effective limit caps: MCP_KEY_RATE_LIMIT or a plan lowered since, not just the stored figures", async () => {
  // Free (30/40) caps MCP_KEY_RATE_LIMIT (50/100): an admin without a limit of its own has 30/40.
  const t = await h.tenant({ plan: 'free' });
  const plain = await makeAdmin(t);
  expectRefused(await byAdmin(t, plain.key, { per_minute: 31, burst: 40 }), [PER_MINUTE(30)], { per_minute: 30, burst: 40 });
  // Its own figures above the plan (set before the plan went down): the plan's still bind.
  const stale = await makeAdmin(t, { per_minute: 30, burst: 40 });
  await h.db.pool.query('UPDATE api_keys SET rate_limit_per_minute = 500, rate_limit_burst = 500 WHERE id = $1', [stale.id]);
  expectRefused(await byAdmin(t, stale.key, { per_minute: 30, burst: 41 }), [BURST(40)], { per_minute: 30, burst: 40 });
  expect(await mcpKeyCount(t)).toBe(2);
  expect((await byAdmin(t, plain.key, { per_minute: 30, burst: 40 })).status).toBe(201);
});

test("a key an MCP key makes without a rate_limit gets the default capped at the creator's figures, always stored as its own", async () => {
  const t = await h.tenant({ plan: 'enterprise' });
  const cases: [Limit | undefined, Limit & { source: string }, Limit | { per_minute: null; burst: null }][] = [
    // Both figures below MCP_KEY_RATE_LIMIT (50/100): the creator's, stored as the key's own.
    [{ per_minute: 20, burst: 30 }, { per_minute: 20, burst: 30, source: 'key' }, { per_minute: 20, burst: 30 }],
    // One below: that one from the creator, the other from the default.
    [{ per_minute: 80, burst: 60 }, { per_minute: 50, burst: 60, source: 'key' }, { per_minute: 50, burst: 60 }],
    // None below (or no limit of its own): the default's figures, stored as the key's own
    // too, so the key does not follow a later raise of MCP_KEY_RATE_LIMIT past its creator.
    [{ per_minute: 500, burst: 500 }, { per_minute: 50, burst: 100, source: 'key' }, { per_minute: 50, burst: 100 }],
    [undefined, { per_minute: 50, burst: 100, source: 'key' }, { per_minute: 50, burst: 100 }],
  ];
  for (const [own, shown, columns] of cases) {
    const admin = await makeAdmin(t, own);
    const child = await byAdmin(t, admin.key);
    expect([JSON.stringify(own), child.status, child.body.rate_limit, await stored(child.body.id)]).toEqual([JSON.stringify(own), 201, shown, columns]);
  }
  // The inherited limit is the child's bucket: its calls show the creator's per-minute figure.
  const admin = await makeAdmin(t, { per_minute: 3, burst: 2 });
  const child = (await byAdmin(t, admin.key)).body as { key: string };
  const calls: number[] = [];
  let res: ApiResponse | undefined;
  for (let i = 0; i < 3; i++) calls.push((res = await h.call('GET', '/v1/mcp/health', { headers: { 'x-mcp-api-key': child.key } })).status);
  expect(calls).toEqual([200, 200, 429]);
  expect([res!.headers.get('x-ratelimit-scope'), res!.headers.get('x-ratelimit-limit')]).toEqual(['mcp_key', '3']);
  // The control API's keys still get the default, and follow it.
  const byApi = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'plain' } });
  expect(byApi.body.rate_limit).toEqual({ per_minute: 50, burst: 100, source: 'default' });
  expect(await stored(byApi.body.id)).toEqual({ per_minute: null, burst: null });
});

test("a later raise of MCP_KEY_RATE_LIMIT does not lift a key an MCP key made above its creator's limit", async () => {
  const t = await h.tenant({ plan: 'enterprise' });
  // The creator's own 80/150 is above MCP_KEY_RATE_LIMIT (50/100): the child gets 50/100.
  const admin = await makeAdmin(t, { per_minute: 80, burst: 150 });
  const child = await byAdmin(t, admin.key);
  const byApi = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'plain' } });
  expect([child.status, child.body.rate_limit]).toEqual([201, { per_minute: 50, burst: 100, source: 'key' }]);

  // The api restarted with MCP_KEY_RATE_LIMIT raised to 200/300 (same database and Redis).
  const config = { ...h.api.context.config, mcpKeyRateLimit: { perMinute: 200, burst: 300 } };
  const raised = buildApp({ prisma: h.prisma, pool: h.db.pool, redis: h.redis, producer: h.producer, config, logger: createLogger('api-test', 'error') }, defaultPlugins(config));
  const server: Server = await new Promise((resolve) => {
    const s = raised.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const listed = (await (await fetch(`${url}${keysPath(t)}?limit=100`, { headers: { 'x-api-key': t.apiKey } })).json()) as { mcp_keys: { id: string; rate_limit: unknown }[] };
    const view = (id: string) => listed.mcp_keys.find((k) => k.id === id)?.rate_limit;
    // The child keeps what its creator could hand out; the creator keeps its own; a key made
    // with the control API's credential follows the default up.
    expect([view(child.body.id), view(admin.id), view(byApi.body.id)]).toEqual([
      { per_minute: 50, burst: 100, source: 'key' },
      { per_minute: 80, burst: 150, source: 'key' },
      { per_minute: 200, burst: 300, source: 'default' },
    ]);
    // And its bucket is that limit: X-RateLimit-Limit names 50, not 200.
    const res = await fetch(`${url}/v1/mcp/health`, { headers: { 'x-mcp-api-key': child.body.key } });
    expect([res.status, res.headers.get('x-ratelimit-scope'), res.headers.get('x-ratelimit-limit')]).toEqual([200, 'mcp_key', '50']);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('the OpenAPI document says so for the create operation', async () => {
  const doc = (await h.call('GET', '/v1/openapi.json')).body;
  const create = doc.paths['/v1/tenants/{tid}/mcp-keys'].post;
  expect(create.responses['422'].description).toMatch(/created with an MCP key, a rate_limit figure is above that key's own effective limit/);
  expect(create.requestBody.content['application/json'].schema.properties.rate_limit.description).toMatch(/Created with an MCP key, neither may exceed that key's own effective limit \(422/);
});
