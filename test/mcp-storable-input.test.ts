// The MCP surface refuses what PostgreSQL cannot store as the control API's routes do
// (http/storable-request.ts): a NUL (U+0000) in the path, the query or the body is a 400
// validation-error problem before authentication and before any tool or query runs, never
// a 500 and never a write left without its audit row. A mirror id of another shape than the
// tool takes is a 404, as an unknown one. In the api as main.ts builds it (plugins, body
// parser, OpenAPI conformance of every response).
import type { SeededTenant } from '@hookline/testing';
import { startApi, type ApiHarness, type ApiResponse } from './api-harness';
import { insertDestination } from './router-fixtures';

let h: ApiHarness;
let t: SeededTenant;
let agent: { id: string; key: string };
const BOTH = 'application/json, text/event-stream';

beforeAll(async () => {
  h = await startApi('mcpstorable');
  t = await h.tenant();
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, body: { name: 'agent' } });
  expect(made.status).toBe(201);
  agent = { id: made.body.id, key: made.body.key };
  for (const group of ['configuration', 'replay']) {
    expect((await h.call('PUT', `/v1/tenants/${t.tenantId}/mcp-keys/${agent.id}/tool-groups/${group}`, { key: t.apiKey })).status).toBe(200);
  }
});
afterAll(async () => {
  await h.close();
});

const stateOf = async (id: string): Promise<string> => (await h.db.pool.query<{ state: string }>('SELECT state FROM destinations WHERE id = $1', [id])).rows[0]!.state;
const auditOf = async (action: string) =>
  (await h.db.pool.query<{ outcome: string; resource_id: string | null; params: any }>('SELECT outcome, resource_id, params FROM audit_logs WHERE tenant_id = $1 AND action = $2 ORDER BY id', [t.tenantId, action])).rows;
const rpc = (body: unknown, headers: Record<string, string> = { 'x-mcp-api-key': agent.key }): Promise<ApiResponse> =>
  h.call('POST', '/v1/mcp', { headers: { accept: BOTH, ...headers }, body });
const setState = (args: Record<string, unknown>) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'set_destination_state', arguments: args } });

function expect400(res: ApiResponse, field: string): void {
  expect({ status: res.status, type: res.body?.type, fields: (res.body?.errors ?? []).map((e: { field: string }) => e.field) }).toEqual({
    status: 400,
    type: 'https://hookline.dev/errors/validation-error',
    fields: [field],
  });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body.instance).toBe(res.headers.get('x-request-id'));
}

test('a NUL anywhere in a JSON-RPC message is a 400 before authentication: a write tool given one in an argument it drops changes nothing', async () => {
  const dst = await insertDestination(h.db.pool, t.tenantId);
  // In an argument the tool does not take (MCP drops those): the call used to switch the
  // destination and then fail to write its audit row.
  const withNul = setState({ destination_id: dst, state: 'DISABLED', reason: 'cover\u0000' });
  expect400(await rpc(withNul), 'params.arguments.reason');
  // Before any credential is looked up: no key, or one that does not exist, is answered the same.
  expect400(await rpc(withNul, {}), 'params.arguments.reason');
  expect400(await rpc(withNul, { 'x-mcp-api-key': 'mcp_nope' }), 'params.arguments.reason');
  // In a batch: refused whole.
  expect400(await rpc([setState({ destination_id: dst, state: 'DISABLED' }), { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor: '\u0000' } }]), '1.params.cursor');
  expect(await stateOf(dst)).toBe('ACTIVE');
  expect(await auditOf('mcp.set_destination_state')).toEqual([]);

  // Without the NUL the same call switches it, and is audited with the arguments the tool took
  // and only the name of the one it dropped.
  const ok = await rpc(setState({ destination_id: dst, state: 'DISABLED', reason: 'cover' }));
  expect(ok.status).toBe(200);
  expect(ok.body.result.structuredContent).toEqual({ destination_id: dst, state: 'DISABLED', previous_state: 'ACTIVE' });
  expect(await stateOf(dst)).toBe('DISABLED');
  expect(await auditOf('mcp.set_destination_state')).toEqual([
    { outcome: 'success:200', resource_id: dst, params: { tool: 'set_destination_state', tool_group: 'configuration', arguments: { destination_id: dst, state: 'DISABLED' }, extra_arguments: ['reason'] } },
  ]);
});

test('an argument name PostgreSQL cannot store (a lone surrogate) is audited storably, not left unaudited', async () => {
  const dst = await insertDestination(h.db.pool, t.tenantId);
  // JSON.stringify writes the lone surrogate as the escape \ud800, which jsonb refuses: the
  // audit row used to fail after the write went through.
  const res = await rpc(setState({ destination_id: dst, state: 'DISABLED', '\ud800': 1 }));
  expect(res.status).toBe(200);
  expect(await stateOf(dst)).toBe('DISABLED');
  const rows = (await auditOf('mcp.set_destination_state')).filter((r) => r.resource_id === dst);
  expect(rows).toEqual([{ outcome: 'success:200', resource_id: dst, params: expect.objectContaining({ arguments: { destination_id: dst, state: 'DISABLED' }, extra_arguments: ['\ufffd'] }) }]);
});

test('the REST mirror, tool calls over HTTP and key management refuse a NUL with 400, with or without a credential, writing nothing', async () => {
  const tid = t.tenantId;
  const keys = `/v1/tenants/${tid}/mcp-keys`;
  const keyCount = async () => Number((await h.db.pool.query('SELECT count(*) AS n FROM api_keys WHERE tenant_id = $1', [tid])).rows[0].n);
  const before = { keys: await keyCount(), audits: (await h.db.pool.query('SELECT count(*) AS n FROM audit_logs WHERE tenant_id = $1', [tid])).rows[0].n };
  const cases: [string, string, Record<string, string>, unknown, string][] = [
    ['GET', '/v1/mcp/logs/evt_abc%00def', { 'x-mcp-api-key': agent.key }, undefined, 'path'],
    ['GET', '/v1/mcp/logs/zzz_abc%00def', { 'x-mcp-api-key': agent.key }, undefined, 'path'],
    ['GET', `/v1/mcp/logs/${tid}?level=%00`, { 'x-mcp-api-key': agent.key }, undefined, 'query'],
    ['GET', '/v1/mcp/deliveries/dlv_a%00b/status', { 'x-mcp-api-key': agent.key }, undefined, 'path'],
    ['GET', '/v1/mcp/evidence/dlv_%00', { 'x-mcp-api-key': agent.key }, undefined, 'path'],
    ['GET', '/v1/mcp/health?x=%00', { 'x-mcp-api-key': agent.key }, undefined, 'query'],
    ['GET', '/v1/mcp/planes?cursor=a%00', { 'x-mcp-api-key': agent.key }, undefined, 'query'],
    ['POST', '/v1/mcp/tools/get_logs', { 'x-mcp-api-key': agent.key }, { id: 'evt_\u0000' }, 'id'],
    ['POST', '/v1/mcp/tools/set_destination_state', { 'x-mcp-api-key': agent.key }, { destination_id: 'dst_x', state: 'ACTIVE', note: { 'k\u0000': 1 } }, 'note.k\u0000'],
    ['POST', keys, { 'x-api-key': t.apiKey }, { name: 'a\u0000b' }, 'name'],
    ['POST', keys, { 'x-mcp-api-key': agent.key }, { name: 'a\u0000b' }, 'name'],
    ['GET', `${keys}?cursor=%00`, { 'x-api-key': t.apiKey }, undefined, 'query'],
    ['DELETE', `${keys}/key_%00`, { 'x-api-key': t.apiKey }, undefined, 'path'],
    ['PUT', `${keys}/${agent.id}/tool-groups/re%00try`, { 'x-api-key': t.apiKey }, undefined, 'path'],
    ['DELETE', `${keys}/${agent.id}/tool-groups/replay%00`, { 'x-api-key': t.apiKey }, undefined, 'path'],
  ];
  for (const [method, path, headers, body, field] of cases) {
    for (const creds of [headers, {}]) {
      const res = await h.call(method, path, { headers: creds, body });
      expect([method, path, Object.keys(creds)]).toEqual([method, path, Object.keys(creds)]);
      expect400(res, field);
    }
  }
  expect(await keyCount()).toBe(before.keys);
  expect((await h.db.pool.query('SELECT count(*) AS n FROM audit_logs WHERE tenant_id = $1', [tid])).rows[0].n).toBe(before.audits);
  // The key keeps its groups.
  const listed = await h.call('GET', keys, { key: t.apiKey });
  expect(listed.body.mcp_keys.find((k: { id: string }) => k.id === agent.id).tool_groups).toEqual(['configuration', 'replay']);
});

test('a mirror id of another shape than the tool takes is a 404, as an unknown one', async () => {
  const headers = { 'x-mcp-api-key': agent.key };
  for (const path of [
    '/v1/mcp/deliveries/not-a-delivery/status',
    '/v1/mcp/deliveries/dlv_SHOUTING00000/status',
    `/v1/mcp/deliveries/dlv_${'a'.repeat(41)}/status`,
    '/v1/mcp/logs/x',
    '/v1/mcp/logs/EVT_0123456789',
    `/v1/mcp/logs/evt_${'0'.repeat(5000)}`,
  ]) {
    const res = await h.call('GET', path, { headers });
    expect([path, res.status, res.body.type]).toEqual([path, 404, 'https://hookline.dev/errors/not-found']);
  }
  // The tool takes the same shapes: a bad one is a 400 there (its arguments), a well-formed unknown one a 404 on both.
  expect((await h.call('POST', '/v1/mcp/tools/get_delivery_status', { headers, body: { delivery_id: 'not-a-delivery' } })).status).toBe(400);
  const unknown = `dlv_${'0'.repeat(26)}`;
  expect((await h.call('GET', `/v1/mcp/deliveries/${unknown}/status`, { headers })).status).toBe(404);
  expect((await h.call('POST', '/v1/mcp/tools/get_delivery_status', { headers, body: { delivery_id: unknown } })).status).toBe(404);
  // The tenant's own logs still answer.
  expect((await h.call('GET', `/v1/mcp/logs/${t.tenantId}`, { headers })).status).toBe(200);
});
