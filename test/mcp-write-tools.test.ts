import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { newId, type PrismaClient } from '@hookline/db';
import { createRedis, onConfigChange, type ConfigChange } from '@hookline/queues';
import { seedTenant, waitFor } from '@hookline/testing';
import { attachApiContext, callTool as call, mcpKey, seedTenantData, startMcp, type McpHarness, type TenantData } from './mcp-harness';
import { insertEvent, insertFlow } from './router-fixtures';

let h: McpHarness;
let t: TenantData;
let agent: { id: string; key: string };
let client: Client;
let prisma: PrismaClient;

const keys = (tenantId: string) => `/v1/tenants/${tenantId}/mcp-keys`;
const audit = async (action: string) =>
  (await h.db.pool.query<{ actor: string; resource_id: string | null; outcome: string; params: any }>('SELECT actor, resource_id, outcome, params FROM audit_logs WHERE action = $1 ORDER BY id', [action])).rows;

beforeAll(async () => {
  h = await startMcp('mcpwrite');
  prisma = attachApiContext(h);
  t = await seedTenantData(h);
  agent = await mcpKey(h, t.tenant);
  client = await h.client(agent.key);
});

afterAll(async () => {
  await prisma.$disconnect();
  await h.close();
});

test('write tools answer 403 write-tool-disabled with their tool_group by default', async () => {
  const calls: [string, Record<string, unknown>, string][] = [
    ['retry_event', { event_id: t.eventId }, 'retry'],
    ['replay_delivery', { delivery_id: t.exhaustedId }, 'replay'],
    ['set_destination_state', { destination_id: t.destinationId, state: 'DISABLED' }, 'configuration'],
  ];
  for (const [name, args, group] of calls) {
    const r = await call(client, name, args);
    expect(r).toEqual({ isError: true, body: expect.objectContaining({ status: 403, type: expect.stringMatching(/\/write-tool-disabled$/), tool_group: group }) });
    const rest = await h.http('POST', `/v1/mcp/tools/${name}`, { headers: { 'x-mcp-api-key': agent.key }, body: args });
    expect(rest.status).toBe(403);
    expect(rest.body).toMatchObject({ title: 'Write Tool Disabled', tool_group: group, instance: rest.headers.get('x-request-id') });
  }
  // Nothing changed, and the refusals are on record.
  const { rows } = await h.db.pool.query('SELECT status FROM deliveries WHERE id = $1', [t.exhaustedId]);
  expect(rows[0].status).toBe('exhausted');
  expect((await audit('mcp.retry_event')).map((a) => [a.actor, a.outcome])).toEqual([[`mcp_key:${agent.id}`, 'client_error:403'], [`mcp_key:${agent.id}`, 'client_error:403']]);
});

test('an enabled retry group works and is audited', async () => {
  const enabled = await h.http('PUT', `${keys(t.tenant.tenantId)}/${agent.id}/tool-groups/retry`, { headers: { 'x-api-key': t.tenant.apiKey } });
  expect(enabled.status).toBe(200);
  expect(enabled.body.tool_groups).toEqual(['retry']);
  const c = await h.client(agent.key);
  const r = await call(c, 'retry_event', { event_id: t.eventId });
  expect(r).toEqual({ isError: false, body: { event_id: t.eventId, delivery_ids: [t.exhaustedId], deliveries: [{ delivery_id: t.exhaustedId, status: 'replaying' }] } });
  const { rows } = await h.db.pool.query('SELECT status, next_attempt_at <= now() AS due FROM deliveries WHERE id = $1', [t.exhaustedId]);
  expect(rows[0]).toEqual({ status: 'replaying', due: true });
  const jobs = await h.producer.queue('deliver').getJobs(['waiting', 'delayed']);
  expect(jobs.map((j) => j.data)).toEqual([{ v: 1, deliveryIds: [t.exhaustedId] }]);
  const last = (await audit('mcp.retry_event')).at(-1)!;
  expect(last).toMatchObject({ actor: `mcp_key:${agent.id}`, resource_id: t.eventId, outcome: 'success:200', params: { tool: 'retry_event', tool_group: 'retry', arguments: { event_id: t.eventId } } });
  // Nothing left to retry is a conflict; the other groups stay disabled.
  expect((await call(c, 'retry_event', { event_id: t.eventId })).body).toMatchObject({ status: 409 });
  expect((await call(c, 'replay_delivery', { delivery_id: t.deliveredId })).body).toMatchObject({ status: 403, tool_group: 'replay' });
});

test('an enabled replay group re-queues a retained delivery and refuses one without its payload', async () => {
  await h.http('PUT', `${keys(t.tenant.tenantId)}/${agent.id}/tool-groups/replay`, { headers: { 'x-api-key': t.tenant.apiKey } });
  const c = await h.client(agent.key);
  expect((await call(c, 'replay_delivery', { delivery_id: t.deliveredId })).body).toEqual({ delivery_id: t.deliveredId, event_id: t.eventId, status: 'replaying' });
  const { rows } = await h.db.pool.query(`SELECT d.status, d.replay_count, e.status AS event_status FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = $1`, [t.deliveredId]);
  expect(rows[0]).toEqual({ status: 'replaying', replay_count: 1, event_status: 'replayed' });

  const purged = await insertEvent(h.db.pool, { tenantId: t.tenant.tenantId, ingesterId: t.ingesterId, status: 'dlq_queued' });
  await h.db.pool.query('DELETE FROM event_payloads WHERE event_id = $1', [purged]);
  const flow = await insertFlow(h.db.pool, { tenantId: t.tenant.tenantId, ingesterId: t.ingesterId, destinationId: t.destinationId });
  const gone = newId('dlv');
  await h.db.pool.query(`INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status) VALUES ($1, $2, $3, $4, $5, 'exhausted')`, [gone, t.tenant.tenantId, purged, flow, t.destinationId]);
  expect((await call(c, 'replay_delivery', { delivery_id: gone })).body).toMatchObject({ status: 409, reason_code: 'payload_not_retained' });
  expect((await audit('mcp.replay_delivery')).map((a) => a.outcome)).toEqual(['client_error:403', 'client_error:403', 'client_error:403', 'success:200', 'client_error:409']);
  // The REST API's rules, shared: a delivery to a destination that is not ACTIVE is refused.
  const off = newId('dlv');
  const offFlow = await insertFlow(h.db.pool, { tenantId: t.tenant.tenantId, ingesterId: t.ingesterId, destinationId: t.destinationId });
  await h.db.pool.query(`INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status) VALUES ($1, $2, $3, $4, $5, 'exhausted')`, [off, t.tenant.tenantId, t.eventId, offFlow, t.destinationId]);
  await h.db.pool.query(`UPDATE destinations SET state = 'DISABLED' WHERE id = $1`, [t.destinationId]);
  try {
    expect((await call(c, 'replay_delivery', { delivery_id: off })).body).toMatchObject({ status: 409, reason_code: 'destination_not_active' });
    expect((await h.db.pool.query('SELECT status FROM deliveries WHERE id = $1', [off])).rows[0]).toEqual({ status: 'exhausted' });
  } finally {
    await h.db.pool.query(`UPDATE destinations SET state = 'ACTIVE' WHERE id = $1`, [t.destinationId]);
  }
});

test("with DEDICATED_POOLS, the tenant's retries and replays go to its pool's queue", async () => {
  const tenantId = t.tenant.tenantId;
  h.deps.pools = new Map([[tenantId, 'acme']]);
  try {
    const c = await h.client(agent.key);
    const evt = await insertEvent(h.db.pool, { tenantId, ingesterId: t.ingesterId, status: 'failed' });
    const [failed, delivered] = [newId('dlv'), newId('dlv')];
    for (const [id, status] of [[failed, 'failed'], [delivered, 'delivered']] as const) {
      const flow = await insertFlow(h.db.pool, { tenantId, ingesterId: t.ingesterId, destinationId: t.destinationId });
      await h.db.pool.query(`INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count) VALUES ($1, $2, $3, $4, $5, $6, 1)`, [id, tenantId, evt, flow, t.destinationId, status]);
    }
    expect((await call(c, 'retry_event', { event_id: evt })).body).toEqual({ event_id: evt, delivery_ids: [failed], deliveries: [{ delivery_id: failed, status: 'pending' }] });
    expect((await call(c, 'replay_delivery', { delivery_id: delivered })).body).toMatchObject({ delivery_id: delivered, status: 'replaying' });
    const queued = async (pool?: string) => (await h.producer.queue('deliver', pool).getJobs(['waiting', 'delayed'])).flatMap((j) => j.data.deliveryIds as string[]);
    expect((await queued('acme')).sort()).toEqual([failed, delivered].sort());
    const shared = await queued();
    for (const id of [failed, delivered]) expect(shared).not.toContain(id);
  } finally {
    delete h.deps.pools;
  }
});

test('an enabled configuration group switches a destination and announces it', async () => {
  await h.http('PUT', `${keys(t.tenant.tenantId)}/${agent.id}/tool-groups/configuration`, { headers: { 'x-api-key': t.tenant.apiKey } });
  const sub = createRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker');
  const heard: ConfigChange[] = [];
  await onConfigChange(sub, h.prefix, (c) => heard.push(c));
  try {
    const c = await h.client(agent.key);
    expect((await call(c, 'set_destination_state', { destination_id: t.destinationId, state: 'DISABLED' })).body).toEqual({ destination_id: t.destinationId, state: 'DISABLED', previous_state: 'ACTIVE' });
    await waitFor(() => heard.length === 1, { what: 'the config change announcement' });
    expect(heard[0]).toEqual({ kind: 'destination', id: t.destinationId, tenantId: t.tenant.tenantId });
    expect((await call(c, 'set_destination_state', { destination_id: t.destinationId, state: 'ACTIVE' })).body.state).toBe('ACTIVE');
  } finally {
    sub.disconnect();
  }
});

test('key management: create, enable a group, revoke; only with the right credential', async () => {
  const tid = t.tenant.tenantId;
  const api = { 'x-api-key': t.tenant.apiKey };
  // A plain read key cannot manage keys; an admin MCP key can, within its own scopes.
  expect((await h.http('GET', keys(tid), { headers: { 'x-mcp-api-key': agent.key } })).body).toMatchObject({ status: 403, required_scope: 'mcp:admin:keys' });
  const admin = await mcpKey(h, t.tenant, ['mcp:admin:keys', 'mcp:read:health']);
  const listed = await h.http('GET', keys(tid), { headers: { 'x-mcp-api-key': admin.key } });
  expect(listed.body.mcp_keys.map((k: { id: string }) => k.id)).toEqual(expect.arrayContaining([agent.id, admin.id]));
  expect(JSON.stringify(listed.body)).not.toContain(agent.key);
  const beyond = await h.http('POST', keys(tid), { headers: { 'x-mcp-api-key': admin.key }, body: { name: 'x', scopes: ['mcp:read:logs'] } });
  expect(beyond.body).toMatchObject({ status: 403, required_scope: 'mcp:read:logs' });
  const child = await h.http('POST', keys(tid), { headers: { 'x-mcp-api-key': admin.key }, body: { name: 'child', scopes: ['mcp:read:health'] } });
  expect(child.status).toBe(201);
  expect(child.body.key).toMatch(/^mcp_/);
  // Only a control-API credential with write:api-keys enables a write group.
  expect((await h.http('PUT', `${keys(tid)}/${child.body.id}/tool-groups/retry`, { headers: { 'x-mcp-api-key': admin.key } })).body).toMatchObject({ status: 403, required_scope: 'write:api-keys' });
  const readOnlyApi = await seedTenant(h.db.pool, { scopes: ['read:api-keys'] });
  expect((await h.http('PUT', `${keys(readOnlyApi.tenantId)}/${child.body.id}/tool-groups/retry`, { headers: { 'x-api-key': readOnlyApi.apiKey } })).body).toMatchObject({ status: 403, required_scope: 'write:api-keys' });
  const stranger = await seedTenant(h.db.pool);
  expect((await h.http('PUT', `${keys(tid)}/${child.body.id}/tool-groups/retry`, { headers: { 'x-api-key': stranger.apiKey } })).status).toBe(404);
  expect((await h.http('PUT', `${keys(stranger.tenantId)}/${child.body.id}/tool-groups/retry`, { headers: { 'x-api-key': stranger.apiKey } })).status).toBe(404);
  expect((await h.http('PUT', `${keys(tid)}/${child.body.id}/tool-groups/delete-everything`, { headers: api })).status).toBe(400);
  expect((await h.http('PUT', `${keys(tid)}/${child.body.id}/tool-groups/retry`, { headers: api })).body.tool_groups).toEqual(['retry']);
  expect((await h.http('POST', keys(tid), { headers: api, body: { name: 'x', scopes: ['write:api-keys'] } })).status).toBe(400);

  const revoked = await h.http('DELETE', `${keys(tid)}/${child.body.id}`, { headers: { 'x-mcp-api-key': admin.key } });
  expect(revoked.body).toMatchObject({ id: child.body.id, tool_groups: [], revoked_at: expect.any(String) });
  expect((await h.http('GET', '/v1/mcp/health', { headers: { 'x-mcp-api-key': child.body.key } })).status).toBe(401);
  expect((await audit('mcp_keys.enable_tool_group')).map((a) => a.outcome)).toEqual([...Array(3).fill('success:200'), 'client_error:403', 'client_error:403', 'client_error:404', 'client_error:404', 'client_error:400', 'success:200']);
  expect((await audit('mcp_keys.revoke')).at(-1)).toMatchObject({ actor: `mcp_key:${admin.id}`, resource_id: child.body.id, outcome: 'success:200' });
});

test('an MCP administrator cannot hand out default scopes it lacks by leaving scopes out', async () => {
  const tid = t.tenant.tenantId;
  const count = async () => (await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1 AND kind = 'mcp'`, [tid])).rows[0]!.n;
  const narrow = await mcpKey(h, t.tenant, ['mcp:admin:keys', 'mcp:read:health']);
  const before = await count();
  const refused = await h.http('POST', keys(tid), { headers: { 'x-mcp-api-key': narrow.key }, body: { name: 'defaults' } });
  expect(refused.status).toBe(403);
  expect(refused.body).toMatchObject({ type: expect.stringMatching(/\/insufficient-scope$/), required_scope: 'mcp:read:endpoints', instance: refused.headers.get('x-request-id') });
  expect(await count()).toBe(before);
  expect((await audit('mcp_keys.create')).at(-1)).toMatchObject({ actor: `mcp_key:${narrow.id}`, outcome: 'client_error:403' });

  // An administrator holding every default scope gets them by default, as an API key does.
  const broad = await mcpKey(h, t.tenant, ['mcp:admin:keys', 'mcp:read:health', 'mcp:read:endpoints', 'mcp:read:evidence', 'mcp:read:deliveries', 'mcp:read:planes', 'mcp:read:logs']);
  const made = await h.http('POST', keys(tid), { headers: { 'x-mcp-api-key': broad.key }, body: { name: 'defaults' } });
  expect(made.status).toBe(201);
  expect([...made.body.scopes].sort()).toEqual(['mcp:read:deliveries', 'mcp:read:endpoints', 'mcp:read:evidence', 'mcp:read:health', 'mcp:read:logs', 'mcp:read:planes']);
});

test('write tools that can stop or change deliveries are annotated destructive; read tools read-only', async () => {
  const { tools } = await client.listTools();
  const hints = Object.fromEntries(tools.map((x) => [x.name, x.annotations]));
  // ToolAnnotations: destructive = not only additive; idempotent = a repeat has no further effect; open world = reaches outside entities.
  expect(hints['retry_event']).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
  expect(hints['replay_delivery']).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
  expect(hints['set_destination_state']).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false });
  for (const x of tools.filter((x) => !('tool_group' in ((x._meta?.['hookline/access'] ?? {}) as object)))) {
    expect([x.name, x.annotations]).toEqual([x.name, { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }]);
  }
});

test('access is checked before arguments: a disabled group or a missing scope answers 403 to bad arguments too, and the refusal is audited', async () => {
  const other = await seedTenantData(h);
  const key = await mcpKey(h, other.tenant, ['mcp:read:health']);
  const c = await h.client(key.key);
  const headers = { 'x-mcp-api-key': key.key };
  const ofKey = async () =>
    (await h.db.pool.query<{ action: string; resource_id: string | null; outcome: string; params: any }>('SELECT action, resource_id, outcome, params FROM audit_logs WHERE actor = $1 ORDER BY id', [`mcp_key:${key.id}`])).rows;
  const bad = { event_id: 'nope' };
  expect((await call(c, 'retry_event', bad)).body).toMatchObject({ status: 403, type: expect.stringMatching(/\/write-tool-disabled$/), tool_group: 'retry' });
  expect((await h.http('POST', '/v1/mcp/tools/retry_event', { headers, body: { ...bad, extra: 1 } })).body).toMatchObject({ status: 403, tool_group: 'retry' });
  // A read tool outside the key's scopes: the scope first, too.
  expect((await call(c, 'get_delivery_status', { delivery_id: 'nope' })).body).toMatchObject({ status: 403, required_scope: 'mcp:read:deliveries' });
  expect((await h.http('POST', '/v1/mcp/tools/get_delivery_status', { headers, body: { delivery_id: 7 } })).body).toMatchObject({ status: 403, required_scope: 'mcp:read:deliveries' });
  // Audited as the tool parses them: an argument that does not parse, and one it does not take, by name only.
  expect(await ofKey()).toEqual([
    { action: 'mcp.retry_event', resource_id: null, outcome: 'client_error:403', params: { tool: 'retry_event', tool_group: 'retry', arguments: {}, invalid_arguments: ['event_id'] } },
    { action: 'mcp.retry_event', resource_id: null, outcome: 'client_error:403', params: { tool: 'retry_event', tool_group: 'retry', arguments: {}, invalid_arguments: ['event_id'], extra_arguments: ['extra'] } },
  ]);

  // Once the group is enabled, bad arguments are a 400 validation-error problem (audited), on both surfaces.
  expect((await h.http('PUT', `${keys(other.tenant.tenantId)}/${key.id}/tool-groups/retry`, { headers: { 'x-api-key': other.tenant.apiKey } })).status).toBe(200);
  const enabled = await h.client(key.key);
  const r = await enabled.callTool({ name: 'retry_event', arguments: bad });
  expect(r.isError).toBe(true);
  expect(r._meta?.['hookline/problem']).toMatchObject({ status: 400, type: expect.stringMatching(/\/validation-error$/), errors: [{ field: 'event_id' }] });
  expect((await h.http('POST', '/v1/mcp/tools/retry_event', { headers, body: bad })).body).toMatchObject({ status: 400, errors: [{ field: 'event_id' }] });
  expect((await ofKey()).slice(2).map((a) => [a.action, a.outcome])).toEqual([['mcp.retry_event', 'client_error:400'], ['mcp.retry_event', 'client_error:400']]);
});
