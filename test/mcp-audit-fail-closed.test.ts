// MCP writes are audited fail closed (services/api/src/audit/audit-write.ts, startAudit): the
// audit row is written before the write runs, and when it cannot be, nothing is changed and
// the call fails (500). The outcome is recorded once the call ends; when that update fails the
// answer stands and the row keeps the unfinished outcome (server_error, no status). Write
// tools over MCP and the REST mirror, and MCP key management. Faults are injected into this
// file's private schema by a trigger on audit_logs that fails the statements a table names.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { PrismaClient } from '@hookline/db';
import { attachApiContext, callTool as call, mcpKey, seedTenantData, startMcp, type McpHarness, type TenantData } from './mcp-harness';
import { insertDestination } from './router-fixtures';
import { installAuditFaults } from './support/audit-faults';

let h: McpHarness;
let t: TenantData;
let agent: { id: string; key: string };
let client: Client;
let prisma: PrismaClient;

const keys = (tenantId: string) => `/v1/tenants/${tenantId}/mcp-keys`;

beforeAll(async () => {
  h = await startMcp('mcpauditclosed');
  // The audit failures below are logged on purpose: keep them out of the output.
  h.deps.logger.silent = true;
  prisma = attachApiContext(h);
  await installAuditFaults(h.db.pool);
  t = await seedTenantData(h);
  agent = await mcpKey(h, t.tenant);
  for (const group of ['retry', 'replay', 'configuration']) {
    expect((await h.http('PUT', `${keys(t.tenant.tenantId)}/${agent.id}/tool-groups/${group}`, { headers: { 'x-api-key': t.tenant.apiKey } })).status).toBe(200);
  }
  client = await h.client(agent.key);
});

afterAll(async () => {
  await prisma.$disconnect();
  await h.close();
});

afterEach(async () => {
  await h.db.pool.query('DELETE FROM audit_faults');
});

const fail = (action: string, op: 'INSERT' | 'UPDATE') => h.db.pool.query('INSERT INTO audit_faults (action, op) VALUES ($1, $2)', [action, op]);
const audit = async (action: string) =>
  (await h.db.pool.query<{ resource_id: string | null; outcome: string; params: any }>('SELECT resource_id, outcome, params FROM audit_logs WHERE action = $1 ORDER BY id', [action])).rows;
const snapshot = async () =>
  (
    await h.db.pool.query(
      `SELECT (SELECT json_agg(json_build_object('id', id, 'state', state) ORDER BY id) FROM destinations WHERE tenant_id = $1) AS destinations,
              (SELECT json_agg(json_build_object('id', id, 'status', status, 'replay_count', replay_count, 'next_attempt_at', next_attempt_at) ORDER BY id) FROM deliveries WHERE tenant_id = $1) AS deliveries,
              (SELECT json_agg(json_build_object('id', id, 'status', status) ORDER BY id) FROM events WHERE tenant_id = $1) AS events`,
      [t.tenant.tenantId],
    )
  ).rows[0];
const queued = async () => (await h.producer.queue('deliver').getJobs(['waiting', 'delayed'])).length;

test('a write tool whose audit row cannot be written changes nothing and fails with 500, over MCP and the REST mirror', async () => {
  const dst = await insertDestination(h.db.pool, t.tenant.tenantId);
  const calls: [string, Record<string, unknown>][] = [
    ['set_destination_state', { destination_id: dst, state: 'DISABLED' }],
    ['replay_delivery', { delivery_id: t.deliveredId }],
    ['retry_event', { event_id: t.eventId }],
  ];
  const before = await snapshot();
  const jobs = await queued();
  for (const [name, args] of calls) {
    await fail(`mcp.${name}`, 'INSERT');
    const viaMcp = await call(client, name, args);
    expect([name, viaMcp]).toEqual([name, { isError: true, body: expect.objectContaining({ status: 500, type: expect.stringMatching(/\/internal-error$/) }) }]);
    const viaRest = await h.http('POST', `/v1/mcp/tools/${name}`, { headers: { 'x-mcp-api-key': agent.key }, body: args });
    expect([name, viaRest.status, viaRest.body.type]).toEqual([name, 500, expect.stringMatching(/\/internal-error$/)]);
    expect(await audit(`mcp.${name}`)).toEqual([]);
  }
  // Nothing was switched, replayed or retried, and nothing was queued.
  expect(await snapshot()).toEqual(before);
  expect(await queued()).toBe(jobs);

  // Once the row can be written, the same call goes through, and its row says how it ended.
  await h.db.pool.query('DELETE FROM audit_faults');
  const ok = await call(client, 'set_destination_state', { destination_id: dst, state: 'DISABLED' });
  expect(ok).toEqual({ isError: false, body: { destination_id: dst, state: 'DISABLED', previous_state: 'ACTIVE' } });
  expect(await audit('mcp.set_destination_state')).toEqual([
    { resource_id: dst, outcome: 'success:200', params: { tool: 'set_destination_state', tool_group: 'configuration', arguments: { destination_id: dst, state: 'DISABLED' } } },
  ]);
});

test('when the outcome cannot be recorded, the answer stands and the row stays unfinished (server_error, no status)', async () => {
  const dst = await insertDestination(h.db.pool, t.tenant.tenantId);
  await fail('mcp.set_destination_state', 'UPDATE');
  const before = (await audit('mcp.set_destination_state')).length;
  const ok = await call(client, 'set_destination_state', { destination_id: dst, state: 'DISABLED', note: 'x' });
  // The write was applied (its row was there first): the caller is told so, not asked to retry.
  expect(ok).toEqual({ isError: false, body: { destination_id: dst, state: 'DISABLED', previous_state: 'ACTIVE' } });
  const rows = (await audit('mcp.set_destination_state')).slice(before);
  expect(rows).toEqual([
    { resource_id: dst, outcome: 'server_error:', params: { tool: 'set_destination_state', tool_group: 'configuration', arguments: { destination_id: dst, state: 'DISABLED' }, extra_arguments: ['note'] } },
  ]);
  // Every reader shows it as an error: the logs of the destination say so.
  const logs = await call(await h.client(agent.key), 'get_logs', { id: dst, level: 'error' });
  expect(logs.body.entries).toEqual([expect.objectContaining({ source: 'audit', level: 'error', message: expect.stringContaining('mcp.set_destination_state') })]);
});

test('refused calls are audited first too: a refusal whose row cannot be written is a 500', async () => {
  const narrow = await mcpKey(h, t.tenant, ['mcp:read:health']);
  const c = await h.client(narrow.key);
  await fail('mcp.retry_event', 'INSERT');
  expect((await call(c, 'retry_event', { event_id: t.eventId })).body).toMatchObject({ status: 500 });
  await h.db.pool.query('DELETE FROM audit_faults');
  expect((await call(c, 'retry_event', { event_id: t.eventId })).body).toMatchObject({ status: 403, tool_group: 'retry' });
  expect((await audit('mcp.retry_event')).map((a) => [a.resource_id, a.outcome])).toEqual([[t.eventId, 'client_error:403']]);
});

test('MCP key management: a change whose audit row cannot be written is not made (500)', async () => {
  const tid = t.tenant.tenantId;
  const api = { 'x-api-key': t.tenant.apiKey };
  const count = async () => (await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1 AND kind = 'mcp'`, [tid])).rows[0]!.n;
  const target = await mcpKey(h, t.tenant, ['mcp:read:health']);
  const state = async () =>
    (await h.db.pool.query(`SELECT k.revoked_at, ARRAY(SELECT tool_group FROM mcp_tool_grants g WHERE g.api_key_id = k.id ORDER BY 1) AS groups FROM api_keys k WHERE k.id = $1`, [target.id])).rows[0];
  const before = { keys: await count(), target: await state() };
  const { rows: mark } = await h.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_logs');

  await fail('mcp_keys.create', 'INSERT');
  const created = await h.http('POST', keys(tid), { headers: api, body: { name: 'never' } });
  expect([created.status, created.body.type]).toEqual([500, expect.stringMatching(/\/internal-error$/)]);
  expect(await count()).toBe(before.keys);

  await fail('mcp_keys.enable_tool_group', 'INSERT');
  expect((await h.http('PUT', `${keys(tid)}/${target.id}/tool-groups/retry`, { headers: api })).status).toBe(500);
  await fail('mcp_keys.revoke', 'INSERT');
  expect((await h.http('DELETE', `${keys(tid)}/${target.id}`, { headers: api })).status).toBe(500);
  expect(await state()).toEqual(before.target);
  expect((await h.http('GET', '/v1/mcp/health', { headers: { 'x-mcp-api-key': target.key } })).status).toBe(200);
  // No row either: none could be written, and nothing was done without one.
  expect((await h.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_logs')).rows[0]!.n).toBe(mark[0]!.n);

  // Without the fault the same requests go through and are audited as before.
  await h.db.pool.query('DELETE FROM audit_faults');
  const made = await h.http('POST', keys(tid), { headers: api, body: { name: 'now' } });
  expect(made.status).toBe(201);
  expect((await audit('mcp_keys.create')).at(-1)).toEqual({ resource_id: made.body.id, outcome: 'success:201', params: expect.objectContaining({ name: 'now' }) });
  expect((await h.http('DELETE', `${keys(tid)}/${target.id}`, { headers: api })).status).toBe(200);
  expect((await audit('mcp_keys.revoke')).at(-1)).toEqual({ resource_id: target.id, outcome: 'success:200', params: {} });
});
