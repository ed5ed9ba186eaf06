// The MCP write tool set_destination_state goes through the control API's lifecycle: the
// same rules and the same effects as POST /v1/tenants/{tid}/destinations/{id}/enable|disable.
// Run in the whole api (mcp.plugin.ts wires MCP to the api's context), on a private schema
// and queue prefix, HTTP on 127.0.0.1.
import { newId } from '@hookline/db';
import { destinationHealthKey, readDestinationHealthState } from '@hookline/queues';
import type { SeededTenant } from '@hookline/testing';
import { startApi, type ApiHarness } from './api-harness';
import { insertDestination, insertEvent, insertFlow, insertIngester } from './router-fixtures';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('mcpstate');
});
afterAll(async () => {
  await h.close();
});

const AUTO_DISABLED = 'auto_disabled: failing since 24 h';

/** An MCP key of the tenant with the configuration write group enabled. */
async function configurationKey(t: SeededTenant): Promise<string> {
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, body: { name: 'operator', scopes: ['mcp:read:health'] } });
  expect(made.status).toBe(201);
  const enabled = await h.call('PUT', `/v1/tenants/${t.tenantId}/mcp-keys/${made.body.id}/tool-groups/configuration`, { key: t.apiKey });
  expect(enabled.status).toBe(200);
  return made.body.key as string;
}

const tool = (key: string, args: Record<string, unknown>) => h.call('POST', '/v1/mcp/tools/set_destination_state', { headers: { 'x-mcp-api-key': key }, body: args });
const restEnable = (t: SeededTenant, id: string) => h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${id}/enable`, { key: t.apiKey });

/**
 * A destination the deliverer disabled automatically: DISABLED with a disabled_reason, its
 * circuit open since it started failing, and a delivery held (pending, due) meanwhile.
 */
async function autoDisabled(t: SeededTenant, ingesterId: string): Promise<{ id: string; held: string }> {
  const id = await insertDestination(h.db.pool, t.tenantId, 'DISABLED');
  await h.db.pool.query('UPDATE destinations SET disabled_reason = $2 WHERE id = $1', [id, AUTO_DISABLED]);
  const since = Date.now() - 24 * 3600_000;
  await h.redis.hset(destinationHealthKey(h.prefix, id), { state: 'open', failures: '57', opened_at: String(Date.now() - 60_000), failing_since: String(since), last_error: 'http_5xx: 503', last_error_at: String(Date.now() - 60_000) });
  const flowId = await insertFlow(h.db.pool, { tenantId: t.tenantId, ingesterId, destinationId: id });
  const eventId = await insertEvent(h.db.pool, { tenantId: t.tenantId, ingesterId });
  const held = newId('dlv');
  await h.db.pool.query(`INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count, next_attempt_at) VALUES ($1, $2, $3, $4, $5, 'pending', 3, now() - interval '1 minute')`, [
    held, t.tenantId, eventId, flowId, id,
  ]);
  return { id, held };
}

/** What an enable is expected to change, as seen from outside. */
async function after(id: string, held: string): Promise<Record<string, unknown>> {
  const { rows } = await h.db.pool.query<{ state: string; disabled_reason: string | null }>('SELECT state::text AS state, disabled_reason FROM destinations WHERE id = $1', [id]);
  const health = await readDestinationHealthState(h.redis, h.prefix, id);
  const queued = (await h.producer.queue('deliver').getJobs(['waiting', 'delayed', 'prioritized'])).flatMap((j) => j.data.deliveryIds as string[]);
  return { ...rows[0], breaker: health.state, failures: health.consecutiveFailures, failing_since: health.failingSince, held_delivery_sent: queued.includes(held) };
}

test('re-enabling an auto-disabled destination through MCP does what the REST enable does: circuit closed, reason cleared, held deliveries sent', async () => {
  const t = await h.tenant();
  const key = await configurationKey(t);
  const ingesterId = await insertIngester(h.db.pool, t.tenantId);
  const viaRest = await autoDisabled(t, ingesterId);
  const viaMcp = await autoDisabled(t, ingesterId);

  expect((await restEnable(t, viaRest.id)).status).toBe(200);
  const res = await tool(key, { destination_id: viaMcp.id, state: 'ACTIVE' });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ destination_id: viaMcp.id, state: 'ACTIVE', previous_state: 'DISABLED' });

  const expected = { state: 'ACTIVE', disabled_reason: null, breaker: 'closed', failures: 0, failing_since: null, held_delivery_sent: true };
  expect(await after(viaRest.id, viaRest.held)).toEqual(expected);
  // Before the fix the MCP enable only updated the row: the circuit stayed open with the old
  // failing_since (the first failure disabled it again at once) and the held delivery waited.
  expect(await after(viaMcp.id, viaMcp.held)).toEqual(expected);
  // The tool call is audited as MCP writes are.
  const { rows } = await h.db.pool.query(`SELECT actor, resource_id, outcome FROM audit_logs WHERE tenant_id = $1 AND action = 'mcp.set_destination_state'`, [t.tenantId]);
  expect(rows).toEqual([{ actor: expect.stringMatching(/^mcp_key:key_/), resource_id: viaMcp.id, outcome: 'success:200' }]);
});

test('disabling through MCP holds deliveries as the REST disable does, and re-enabling sends them', async () => {
  const t = await h.tenant();
  const key = await configurationKey(t);
  const ingesterId = await insertIngester(h.db.pool, t.tenantId);
  const { id, held } = await autoDisabled(t, ingesterId);
  await h.db.pool.query(`UPDATE destinations SET state = 'ACTIVE', disabled_reason = NULL WHERE id = $1`, [id]);
  expect((await tool(key, { destination_id: id, state: 'DISABLED' })).body).toEqual({ destination_id: id, state: 'DISABLED', previous_state: 'ACTIVE' });
  expect((await h.db.pool.query('SELECT state::text AS state FROM destinations WHERE id = $1', [id])).rows[0].state).toBe('DISABLED');
  expect((await tool(key, { destination_id: id, state: 'ACTIVE' })).body).toEqual({ destination_id: id, state: 'ACTIVE', previous_state: 'DISABLED' });
  expect(await after(id, held)).toMatchObject({ state: 'ACTIVE', breaker: 'closed', held_delivery_sent: true });
});

test('refuses what the REST routes refuse, with the same answers; asking for the current state changes nothing', async () => {
  const t = await h.tenant();
  const key = await configurationKey(t);
  const deleted = await insertDestination(h.db.pool, t.tenantId, 'DELETED');
  const draft = await insertDestination(h.db.pool, t.tenantId, 'DRAFT');
  const missing = newId('dst');

  for (const [id, state] of [[deleted, 'ACTIVE'], [deleted, 'DISABLED'], [draft, 'ACTIVE'], [draft, 'DISABLED'], [missing, 'ACTIVE']] as const) {
    const rest = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations/${id}/${state === 'ACTIVE' ? 'enable' : 'disable'}`, { key: t.apiKey });
    const mcp = await tool(key, { destination_id: id, state });
    const shape = (r: typeof rest) => ({ status: r.status, type: r.body.type, current_state: r.body.current_state });
    expect({ id, state, ...shape(mcp) }).toEqual({ id, state, ...shape(rest) });
  }
  // A DELETED destination is not found, as on the REST routes (it was a 409 conflict).
  expect((await tool(key, { destination_id: deleted, state: 'ACTIVE' })).status).toBe(404);
  expect((await tool(key, { destination_id: draft, state: 'ACTIVE' })).body).toMatchObject({ status: 409, current_state: 'DRAFT' });
  expect((await h.db.pool.query(`SELECT state::text AS state FROM destinations WHERE id = ANY($1) ORDER BY id`, [[deleted, draft].sort()])).rows.map((r) => r.state)).toEqual(
    [deleted, draft].sort().map((id) => (id === deleted ? 'DELETED' : 'DRAFT')),
  );

  // Idempotent: the state it is in already is answered as both, and nothing is written.
  const active = await insertDestination(h.db.pool, t.tenantId, 'ACTIVE');
  const stamp = async () => (await h.db.pool.query('SELECT updated_at FROM destinations WHERE id = $1', [active])).rows[0].updated_at.toISOString();
  const before = await stamp();
  expect((await tool(key, { destination_id: active, state: 'ACTIVE' })).body).toEqual({ destination_id: active, state: 'ACTIVE', previous_state: 'ACTIVE' });
  expect(await stamp()).toBe(before);
});
