// A rate limit per MCP key (SG-006), through the api as main.ts builds it: a call with an MCP
// key takes a token from the key's own bucket and from its tenant's plan bucket, all or none.
// The buckets that are driven empty here refill one token a minute (the enterprise key's
// two), so no test sees a refill: the counts below are exact.
import { ConfigError } from '@hookline/config';
import type { Pool } from '@hookline/db';
import type { SeededTenant } from '@hookline/testing';
import { loadApiConfig } from '../services/api/src/config';
import { mcpKeyRateLimitKey } from '../services/api/src/limits/rate-limit';
import { startApi, type ApiHarness, type ApiResponse } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  // Free's burst (3) is below MCP_KEY_RATE_LIMIT's (5), which caps its keys; enterprise's
  // per-minute limit is high, for keys whose own per-minute limit is shown above the default.
  h = await startApi('mcpkeyrate', { RATE_LIMITS: 'free=1/3,pro=1/12,business=1/40,enterprise=1000/40', MCP_KEY_RATE_LIMIT: '1/5' });
});
afterAll(async () => {
  await h.close();
});

type Limit = { per_minute: number; burst: number };
const keysPath = (t: SeededTenant) => `/v1/tenants/${t.tenantId}/mcp-keys`;
const mcp = (key: string) => ({ 'x-mcp-api-key': key });
async function makeKey(t: SeededTenant, extra: { scopes?: string[]; rate_limit?: Limit } = {}): Promise<{ id: string; key: string; rate_limit: unknown }> {
  const res = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'agent', ...extra } });
  expect([res.status, res.body.type]).toEqual([201, undefined]);
  return res.body;
}
const health = (key: string) => h.call('GET', '/v1/mcp/health', { headers: mcp(key) });
const toolRoute = (key: string) => h.call('POST', '/v1/mcp/tools/get_health', { headers: mcp(key), body: {} });
const rpc = (key: string, body: unknown) => h.call('POST', '/v1/mcp', { headers: { ...mcp(key), accept: 'application/json, text/event-stream' }, body });
const toolCall = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_health', arguments: {} } });
const controlApi = (t: SeededTenant) => h.call('GET', `/v1/tenants/${t.tenantId}/ingesters`, { key: t.apiKey });
/** The bucket the X-RateLimit-* headers describe: [scope, limit, remaining]. */
const shown = (res: ApiResponse) => [res.headers.get('x-ratelimit-scope'), res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining')];

/** The control API's 429: problem details with the request id, retry_after_seconds, Retry-After; and which bucket refused. */
function expectRefused(res: ApiResponse, problem: any, scope: 'mcp_key' | 'tenant'): void {
  expect(res.status).toBe(429);
  expect(problem).toMatchObject({ type: 'https://hookline.dev/errors/rate-limit-exceeded', title: 'Rate Limit Exceeded', status: 429, instance: res.headers.get('x-request-id') });
  expect(Number.isInteger(problem.retry_after_seconds)).toBe(true);
  expect(problem.retry_after_seconds).toBeGreaterThanOrEqual(1);
  expect(problem.retry_after_seconds).toBeLessThanOrEqual(60);
  expect(res.headers.get('retry-after')).toBe(String(problem.retry_after_seconds));
  expect(res.headers.get('x-ratelimit-scope')).toBe(scope);
  expect(problem.detail).toMatch(scope === 'mcp_key' ? /^Rate limit of this MCP key/ : /^Rate limit of \d+ requests per minute/);
}

/** Tokens left in an MCP key's bucket, read in Redis (floor, as the headers show them). */
async function keyTokens(keyId: string): Promise<number> {
  return Math.floor(Number(await h.redis.hget(mcpKeyRateLimitKey(h.prefix, keyId), 'tokens')));
}

test("a key past its burst gets 429 while another key and the control API of its tenant go on", async () => {
  const t = await h.tenant({ plan: 'business' }); // tenant bucket: 40
  const runaway = await makeKey(t, { rate_limit: { per_minute: 1, burst: 2 } }); // 39
  const other = await makeKey(t); // 38; MCP_KEY_RATE_LIMIT: 1/5
  const first = await health(runaway.key);
  const second = await health(runaway.key); // tenant 36
  expect([first.status, second.status]).toEqual([200, 200]);
  // The headers describe the bucket with the fewest tokens left: the key's.
  expect([shown(first), shown(second)]).toEqual([['mcp_key', '1', '1'], ['mcp_key', '1', '0']]);
  const refused = await health(runaway.key);
  expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expectRefused(refused, refused.body, 'mcp_key');
  expect(shown(refused)).toEqual(['mcp_key', '1', '0']);
  expect(refused.body.detail).toBe('Rate limit of this MCP key, 1 requests per minute (burst 2), exceeded.');

  // Another key of the tenant and the control API still answer; the refusal took no tenant token.
  const byOther = await health(other.key); // tenant 35
  expect([byOther.status, shown(byOther)]).toEqual([200, ['mcp_key', '1', '4']]);
  const byApi = await controlApi(t); // tenant 34: 40 - 2 keys made - 2 calls - 1 call of the other key - this one
  expect([byApi.status, shown(byApi)]).toEqual([200, ['tenant', '1', '34']]);
  const again = await health(runaway.key);
  expectRefused(again, again.body, 'mcp_key');
  expect((await controlApi(t)).headers.get('x-ratelimit-remaining')).toBe('33');
});

test('the tenant limit still applies across keys, and its refusal spends no token of the key', async () => {
  const t = await h.tenant({ plan: 'pro' }); // tenant bucket: 12
  const [a, b, c] = [await makeKey(t), await makeKey(t), await makeKey(t)]; // 9; each key 1/5
  for (const key of [a, b]) for (let i = 0; i < 4; i++) expect((await health(key.key)).status).toBe(200); // tenant 1; a, b: 1 each
  const last = await health(c.key); // tenant 0, c 4
  expect([last.status, shown(last)]).toEqual([200, ['tenant', '1', '0']]);

  // c still has 4 tokens of its own; the tenant has none, for any key and for the control API.
  const refused = await health(c.key);
  expectRefused(refused, refused.body, 'tenant');
  expect(shown(refused)).toEqual(['tenant', '1', '0']);
  expect(refused.body.detail).toBe('Rate limit of 1 requests per minute (burst 12) exceeded.');
  const viaRpc = await rpc(a.key, toolCall(1));
  expectRefused(viaRpc, viaRpc.body.result._meta['hookline/problem'], 'tenant');
  const viaApi = await controlApi(t);
  expectRefused(viaApi, viaApi.body, 'tenant');
  expect([await keyTokens(a.id), await keyTokens(b.id), await keyTokens(c.id)]).toEqual([1, 1, 4]);
});

test("a key's own limit given at creation is used and shown", async () => {
  const t = await h.tenant({ plan: 'enterprise' }); // 1000 per minute, burst 40
  const own = await makeKey(t, { rate_limit: { per_minute: 2, burst: 3 } });
  const plain = await makeKey(t);
  expect([own.rate_limit, plain.rate_limit]).toEqual([{ per_minute: 2, burst: 3, source: 'key' }, { per_minute: 1, burst: 5, source: 'default' }]);
  const listed = await h.call('GET', keysPath(t), { key: t.apiKey });
  expect(listed.body.mcp_keys.map((k: { id: string; rate_limit: unknown }) => [k.id, k.rate_limit])).toEqual([
    [plain.id, { per_minute: 1, burst: 5, source: 'default' }],
    [own.id, { per_minute: 2, burst: 3, source: 'key' }],
  ]);
  const stored = await h.db.pool.query('SELECT id, rate_limit_per_minute, rate_limit_burst FROM api_keys WHERE tenant_id = $1 AND kind = $2 ORDER BY id', [t.tenantId, 'mcp']);
  expect(stored.rows).toEqual([{ id: own.id, rate_limit_per_minute: 2, rate_limit_burst: 3 }, { id: plain.id, rate_limit_per_minute: null, rate_limit_burst: null }]);
  const audit = await h.db.pool.query(`SELECT params FROM audit_logs WHERE tenant_id = $1 AND action = 'mcp_keys.create' AND resource_id = $2`, [t.tenantId, own.id]);
  expect(audit.rows[0].params).toMatchObject({ rate_limit: { per_minute: 2, burst: 3 } });

  // Its burst of 3 (not MCP_KEY_RATE_LIMIT's 5), its 2 per minute in X-RateLimit-Limit.
  const statuses: number[] = [];
  let res: ApiResponse | undefined;
  for (let i = 0; i < 4; i++) statuses.push((res = await health(own.key)).status);
  expect(statuses).toEqual([200, 200, 200, 429]);
  expectRefused(res!, res!.body, 'mcp_key');
  expect(shown(res!)).toEqual(['mcp_key', '2', '0']);
  expect(res!.body.detail).toBe('Rate limit of this MCP key, 2 requests per minute (burst 3), exceeded.');

  // MCP_KEY_RATE_LIMIT is capped at a smaller plan (free: burst 3), and the view says so.
  const free = await h.tenant({ plan: 'free' });
  const capped = await makeKey(free);
  expect(capped.rate_limit).toEqual({ per_minute: 1, burst: 3, source: 'plan' });
});

test('bad rate_limit values answer 400 validation-error and create nothing', async () => {
  const t = await h.tenant({ plan: 'enterprise' }); // 1000 per minute, burst 40: the ceiling of a key's figures
  const bad: [unknown, string][] = [
    [{ per_minute: 0, burst: 5 }, 'rate_limit.per_minute'],
    [{ per_minute: -1, burst: 5 }, 'rate_limit.per_minute'],
    [{ per_minute: 1.5, burst: 5 }, 'rate_limit.per_minute'],
    [{ per_minute: '10', burst: 5 }, 'rate_limit.per_minute'],
    [{ per_minute: 10, burst: 0 }, 'rate_limit.burst'],
    [{ per_minute: 10 }, 'rate_limit.burst'],
    [{ per_minute: 10, burst: 5, window: 60 }, 'rate_limit'],
    [{ per_minute: 1_000_001, burst: 5 }, 'rate_limit.per_minute'],
    [60, 'rate_limit'],
    [null, 'rate_limit'],
    [[10, 5], 'rate_limit'],
    // Above the tenant's plan (enterprise here: 1000 per minute, burst 40).
    [{ per_minute: 1001, burst: 5 }, 'rate_limit.per_minute'],
    [{ per_minute: 10, burst: 41 }, 'rate_limit.burst'],
  ];
  for (const [rateLimit, field] of bad) {
    const res = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'agent', rate_limit: rateLimit } });
    expect([JSON.stringify(rateLimit), res.status, res.headers.get('content-type')]).toEqual([JSON.stringify(rateLimit), 400, expect.stringMatching(/^application\/problem\+json/)]);
    expect(res.body).toMatchObject({ type: 'https://hookline.dev/errors/validation-error', status: 400, instance: res.headers.get('x-request-id') });
    expect([JSON.stringify(rateLimit), res.body.errors.map((e: { field: string }) => e.field)]).toEqual([JSON.stringify(rateLimit), expect.arrayContaining([field])]);
  }
  const overPlan = await h.call('POST', keysPath(t), { key: t.apiKey, body: { name: 'agent', rate_limit: { per_minute: 2000, burst: 50 } } });
  expect(overPlan.body.errors).toEqual([
    { field: 'rate_limit.per_minute', message: "must be at most 1000, the per-minute limit of the tenant's enterprise plan" },
    { field: 'rate_limit.burst', message: "must be at most 40, the burst of the tenant's enterprise plan" },
  ]);
  const count = await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1 AND kind = 'mcp'`, [t.tenantId]);
  expect(count.rows[0]!.n).toBe(0);
  // At the plan's limits exactly: accepted.
  expect((await makeKey(t, { rate_limit: { per_minute: 1000, burst: 40 } })).rate_limit).toEqual({ per_minute: 1000, burst: 40, source: 'key' });
});

test("the JSON-RPC endpoint, the REST mirror and the tool-call route all draw on the key's bucket", async () => {
  const t = await h.tenant({ plan: 'business' }); // tenant bucket: 40
  const key = await makeKey(t, { scopes: ['mcp:admin:keys', 'mcp:read:health'], rate_limit: { per_minute: 1, burst: 4 } }); // 39
  const calls: [string, () => Promise<ApiResponse>, (res: ApiResponse) => unknown][] = [
    ['POST /v1/mcp', () => rpc(key.key, toolCall(7)), (res) => res.body.result._meta['hookline/problem']],
    ['GET /v1/mcp/health', () => health(key.key), (res) => res.body],
    ['POST /v1/mcp/tools/get_health', () => toolRoute(key.key), (res) => res.body],
    ['GET /v1/tenants/{tid}/mcp-keys', () => h.call('GET', keysPath(t), { headers: mcp(key.key) }), (res) => res.body],
  ];
  const served: unknown[] = [];
  for (const [route, call] of calls) {
    const res = await call();
    served.push([route, res.status, ...shown(res)]);
  }
  expect(served).toEqual([
    ['POST /v1/mcp', 200, 'mcp_key', '1', '3'],
    ['GET /v1/mcp/health', 200, 'mcp_key', '1', '2'],
    ['POST /v1/mcp/tools/get_health', 200, 'mcp_key', '1', '1'],
    ['GET /v1/tenants/{tid}/mcp-keys', 200, 'mcp_key', '1', '0'],
  ]);
  for (const [route, call, problemOf] of calls) {
    const res = await call();
    expect([route, res.status]).toEqual([route, 429]);
    expectRefused(res, problemOf(res), 'mcp_key');
  }
  // The JSON-RPC endpoint answers its 429 in JSON-RPC, as it does for the tenant's limit.
  const refused = await rpc(key.key, toolCall(8));
  expect(refused.body).toMatchObject({ jsonrpc: '2.0', id: 8, result: { isError: true } });
  expect(JSON.parse(refused.body.result.content[0].text)).toEqual(refused.body.result._meta['hookline/problem']);
  // Nine calls, four served: the tenant gave exactly four tokens (and one to make the key).
  expect(shown(await controlApi(t))).toEqual(['tenant', '1', '34']);
});

test("a JSON-RPC batch takes one token per tool call from the key's bucket, the whole batch or nothing", async () => {
  const t = await h.tenant({ plan: 'business' }); // 40
  const key = await makeKey(t, { rate_limit: { per_minute: 1, burst: 4 } }); // 39
  const three = await rpc(key.key, [toolCall(1), toolCall(2), toolCall(3)]); // tenant 36, key 1
  expect([three.status, shown(three)]).toEqual([200, ['mcp_key', '1', '1']]);
  expect(three.body.map((m: any) => [m.id, m.result.isError ?? false])).toEqual([[1, false], [2, false], [3, false]]);
  // Two calls, one token left in the key's bucket: refused whole, each call answered with the problem.
  const two = await rpc(key.key, [{ jsonrpc: '2.0', id: 9, method: 'ping' }, toolCall(10), toolCall(11)]);
  expect(two.status).toBe(429);
  expect(two.body.map((m: any) => [m.id, m.result?._meta['hookline/problem'].status ?? m.error.data['hookline/problem'].status])).toEqual([[9, 429], [10, 429], [11, 429]]);
  expectRefused(two, two.body[1].result._meta['hookline/problem'], 'mcp_key');
  // Nothing was taken by the refusal, from the key or from the tenant.
  const one = await rpc(key.key, toolCall(12)); // tenant 35, key 0
  expect([one.status, shown(one)]).toEqual([200, ['mcp_key', '1', '0']]);
  expect(shown(await controlApi(t))).toEqual(['tenant', '1', '34']);
  // A batch larger than the key's burst can never be admitted: the refusal says so.
  const t2 = await h.tenant({ plan: 'business' });
  const small = await makeKey(t2, { rate_limit: { per_minute: 1, burst: 2 } });
  const big = await rpc(small.key, [toolCall(1), toolCall(2), toolCall(3)]);
  expectRefused(big, big.body[0].result._meta['hookline/problem'], 'mcp_key');
  expect(big.body[0].result._meta['hookline/problem'].detail).toMatch(/This batch has 3 tool calls, more than the burst: send at most 2 per batch\.$/);
  expect(await keyTokens(small.id)).toBe(2);
});

test('MCP_KEY_RATE_LIMIT is read as a RATE_LIMITS entry, 60/120 by default; a bad value stops the boot naming it', () => {
  expect(loadApiConfig({}).mcpKeyRateLimit).toEqual({ perMinute: 60, burst: 120 });
  expect(loadApiConfig({ MCP_KEY_RATE_LIMIT: '30/45' }).mcpKeyRateLimit).toEqual({ perMinute: 30, burst: 45 });
  for (const bad of ['0/5', '5/0', '5', 'free=1/2', '1/2/3', '-1/5', 'ten/20']) {
    expect(() => loadApiConfig({ MCP_KEY_RATE_LIMIT: bad })).toThrow(ConfigError);
    expect(() => loadApiConfig({ MCP_KEY_RATE_LIMIT: bad })).toThrow(/MCP_KEY_RATE_LIMIT/);
  }
});

describe('the rate-limit columns of api_keys', () => {
  const BAD: [number | null, number | null][] = [[5, null], [null, 5], [0, 5], [5, 0], [null, 0], [0, null], [-1, -1]];
  const set = (pool: Pool, id: string, perMinute: number | null, burst: number | null) =>
    pool.query('UPDATE api_keys SET rate_limit_per_minute = $2, rate_limit_burst = $3 WHERE id = $1', [id, perMinute, burst]);

  test('hold both figures or neither, each at least 1 (CHECK api_keys_rate_limit_check)', async () => {
    const t = await h.tenant({ plan: 'pro' });
    const key = await makeKey(t);
    for (const [perMinute, burst] of BAD) {
      await expect(set(h.db.pool, key.id, perMinute, burst).then(() => 'stored')).rejects.toMatchObject({ code: '23514', constraint: 'api_keys_rate_limit_check' });
    }
    await set(h.db.pool, key.id, 2, 3);
    await set(h.db.pool, key.id, null, null);
  });
});
