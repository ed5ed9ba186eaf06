// MCP calls under the control API's per-tenant rate limit. Every plan refills one token a
// minute, so no test sees a refill: the counts below are exact.
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createRedis } from '@hookline/queues';
import { seedTenant } from '@hookline/testing';
import { callTool as call, mcpKey, startMcp, type HttpReply, type McpHarness } from './mcp-harness';

let h: McpHarness;
beforeAll(async () => {
  h = await startMcp('mcprate', { rateLimits: 'free=1/4,pro=1/8,business=1/4,enterprise=1/4' });
});
afterAll(async () => {
  await h.close();
});

const keys = (tenantId: string) => `/v1/tenants/${tenantId}/mcp-keys`;
const rpc = (id: number | undefined, method: string, params: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', ...(id === undefined ? {} : { id }), method, params });
const toolCall = (id: number) => rpc(id, 'tools/call', { name: 'get_health', arguments: {} });
const post = (key: string, body: unknown) => h.http('POST', '/v1/mcp', { headers: { 'x-mcp-api-key': key, accept: 'application/json, text/event-stream' }, body });

/** The control API's 429: problem details, retry_after_seconds, Retry-After, the request id. */
function expectRateLimited(problem: any, res: HttpReply): void {
  expect(res.status).toBe(429);
  expect(problem).toMatchObject({ type: expect.stringMatching(/\/rate-limit-exceeded$/), title: 'Rate Limit Exceeded', status: 429, instance: res.headers.get('x-request-id') });
  expect(Number.isInteger(problem.retry_after_seconds)).toBe(true);
  expect(problem.retry_after_seconds).toBeGreaterThanOrEqual(1);
  expect(problem.retry_after_seconds).toBeLessThanOrEqual(60);
  expect(res.headers.get('retry-after')).toBe(String(problem.retry_after_seconds));
}

test('the REST mirror and tool calls over HTTP count per tenant, with the limits of its plan', async () => {
  const a = await seedTenant(h.db.pool, { plan: 'free' });
  const key = await mcpKey(h, a); // key management counts: 1 of 4
  const headers = { 'x-mcp-api-key': key.key };
  const ok = [
    (await h.http('GET', '/v1/mcp/health', { headers })).status,
    (await h.http('POST', '/v1/mcp/tools/list_non_claims', { headers, body: {} })).status,
    (await h.http('GET', '/v1/mcp/planes', { headers })).status,
  ];
  expect(ok).toEqual([200, 200, 200]);
  const limited = await h.http('GET', '/v1/mcp/health', { headers });
  expect(limited.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expectRateLimited(limited.body, limited);
  expect([limited.headers.get('x-ratelimit-limit'), limited.headers.get('x-ratelimit-remaining')]).toEqual(['1', '0']);
  const tool = await h.http('POST', '/v1/mcp/tools/get_health', { headers, body: {} });
  expectRateLimited(tool.body, tool);

  // Another tenant has its own bucket; a pro tenant gets the pro burst (8).
  const b = await seedTenant(h.db.pool, { plan: 'free' });
  expect((await h.http('GET', '/v1/mcp/health', { headers: { 'x-mcp-api-key': (await mcpKey(h, b)).key } })).status).toBe(200);
  const pro = await seedTenant(h.db.pool, { plan: 'pro' });
  const proKey = await mcpKey(h, pro);
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++) statuses.push((await h.http('GET', '/v1/mcp/health', { headers: { 'x-mcp-api-key': proKey.key } })).status);
  expect(statuses).toEqual([...Array(7).fill(200), 429]);
});

test('MCP key management counts against the tenant, with an API key or an MCP admin key', async () => {
  const t = await seedTenant(h.db.pool, { plan: 'free' });
  const admin = await mcpKey(h, t, ['mcp:admin:keys', 'mcp:read:health']); // 1 of 4
  const api = { 'x-api-key': t.apiKey };
  const mcp = { 'x-mcp-api-key': admin.key };
  expect((await h.http('GET', keys(t.tenantId), { headers: api })).status).toBe(200);
  expect((await h.http('GET', keys(t.tenantId), { headers: mcp })).status).toBe(200);
  expect((await h.http('POST', keys(t.tenantId), { headers: api, body: { name: 'fourth' } })).status).toBe(201);
  const count = async () => (await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1 AND kind = 'mcp'`, [t.tenantId])).rows[0]!.n;
  const before = await count();
  for (const [method, headers, body] of [['GET', api, undefined], ['GET', mcp, undefined], ['POST', api, { name: 'fifth' }], ['POST', mcp, { name: 'fifth', scopes: ['mcp:read:health'] }]] as const) {
    const res = await h.http(method, keys(t.tenantId), { headers, body });
    expectRateLimited(res.body, res);
  }
  expect((await h.http('DELETE', `${keys(t.tenantId)}/${admin.id}`, { headers: api })).status).toBe(429);
  expect(await count()).toBe(before);
});

test('POST /v1/mcp answers 429 over HTTP; the SDK client throws it, its body the JSON-RPC answer with the problem in _meta', async () => {
  const t = await seedTenant(h.db.pool, { plan: 'free' });
  const key = await mcpKey(h, t); // 1 of 4
  const c = await h.client(key.key); // initialize and notifications/initialized: 3 of 4
  expect((await call(c, 'get_health')).isError).toBe(false); // 4 of 4

  // What the SDK client does with an HTTP error: it throws StreamableHTTPError (code = status) with the body in its message.
  const err = await c.callTool({ name: 'get_health', arguments: {} }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StreamableHTTPError);
  expect((err as StreamableHTTPError).code).toBe(429);
  const message = (err as Error).message;
  const answer = JSON.parse(message.slice(message.indexOf('{')));
  expect(answer).toMatchObject({ jsonrpc: '2.0', id: expect.any(Number), result: { isError: true } });
  const problem = answer.result._meta['hookline/problem'];
  expect(problem).toMatchObject({ type: expect.stringMatching(/\/rate-limit-exceeded$/), status: 429, retry_after_seconds: expect.any(Number) });
  // As every failed tool call: the same problem in the text for the model.
  expect(JSON.parse(answer.result.content[0].text)).toEqual(problem);

  // Over plain HTTP: status, Retry-After and request id as the control API answers them.
  const called = await post(key.key, toolCall(7));
  expect(called.headers.get('content-type')).toMatch(/^application\/json/);
  expect(called.body).toMatchObject({ jsonrpc: '2.0', id: 7, result: { isError: true } });
  expectRateLimited(called.body.result._meta['hookline/problem'], called);
  // Any other request: a JSON-RPC error carrying the problem in data; a notification alone: one error with a null id.
  const listed = await post(key.key, rpc(8, 'tools/list'));
  expect(listed.body).toMatchObject({ jsonrpc: '2.0', id: 8, error: { code: -32000 } });
  expectRateLimited(listed.body.error.data['hookline/problem'], listed);
  const notified = await post(key.key, rpc(undefined, 'notifications/initialized'));
  expect(notified.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
  expectRateLimited(notified.body.error.data['hookline/problem'], notified);
});

test('a JSON-RPC batch takes one token per tool call', async () => {
  const t = await seedTenant(h.db.pool, { plan: 'pro' });
  const key = await mcpKey(h, t); // 1 of 8
  const five = await post(key.key, [1, 2, 3, 4, 5].map(toolCall)); // 6 of 8
  expect(five.status).toBe(200);
  expect(five.body.map((m: any) => [m.id, m.result.isError ?? false])).toEqual([[1, false], [2, false], [3, false], [4, false], [5, false]]);
  expect(five.headers.get('x-ratelimit-remaining')).toBe('2');
  // Three calls, two tokens left: the whole batch is refused, each call answered with the problem.
  const three = await post(key.key, [rpc(9, 'ping'), toolCall(10), toolCall(11), toolCall(12)]);
  expect(three.status).toBe(429);
  expect(three.body.map((m: any) => [m.id, m.result?._meta['hookline/problem'].status ?? m.error.data['hookline/problem'].status])).toEqual([[9, 429], [10, 429], [11, 429], [12, 429]]);
  expectRateLimited(three.body[1].result._meta['hookline/problem'], three);
});

/** Runs `fn` with the api's Redis client swapped for one that is disconnected. */
async function withRedisDown(fn: () => Promise<void>): Promise<void> {
  const live = h.deps.redis;
  const dead = createRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', 'producer');
  dead.disconnect();
  h.deps.redis = dead;
  try {
    await fn();
  } finally {
    h.deps.redis = live;
  }
}

test('with Redis unreachable the limiter fails open, as the control API does', async () => {
  const t = await seedTenant(h.db.pool, { plan: 'free' });
  const key = await mcpKey(h, t);
  await withRedisDown(async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await h.http('POST', '/v1/mcp/tools/list_non_claims', { headers: { 'x-mcp-api-key': key.key }, body: {} })).status);
    expect(statuses).toEqual(Array(6).fill(200));
  });
});

test("with Redis unreachable a key's own limit fails open too, and holds again once Redis is back", async () => {
  const t = await seedTenant(h.db.pool, { plan: 'pro' }); // 8
  const made = await h.http('POST', keys(t.tenantId), { headers: { 'x-api-key': t.apiKey }, body: { name: 'agent', rate_limit: { per_minute: 1, burst: 1 } } }); // 7
  expect([made.status, made.body.rate_limit]).toEqual([201, { per_minute: 1, burst: 1, source: 'key' }]);
  const headers = { 'x-mcp-api-key': made.body.key };
  expect((await h.http('GET', '/v1/mcp/health', { headers })).status).toBe(200); // key 0, tenant 6
  const refused = await h.http('GET', '/v1/mcp/health', { headers });
  expectRateLimited(refused.body, refused);
  expect(refused.headers.get('x-ratelimit-scope')).toBe('mcp_key');
  await withRedisDown(async () => {
    const answers: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await h.http('GET', '/v1/mcp/health', { headers });
      answers.push([res.status, res.headers.get('x-ratelimit-remaining'), res.headers.get('x-ratelimit-scope')]);
    }
    // Served, without X-RateLimit-* headers: no bucket was read.
    expect(answers).toEqual(Array(3).fill([200, null, null]));
  });
  const after = await h.http('GET', '/v1/mcp/health', { headers });
  expectRateLimited(after.body, after);
  expect([after.headers.get('x-ratelimit-scope'), after.headers.get('x-ratelimit-remaining')]).toEqual(['mcp_key', '0']);
});
