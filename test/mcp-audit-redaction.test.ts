// MCP audit rows (tool calls, key changes) go through the same redaction as the REST
// pipeline's (redactParams): a secret-looking key's value, header values and a URL's userinfo
// credential never reach audit_logs in clear. Tool calls record their arguments as the tool
// parsed them, and only the names of those it does not take: never their values.
import { randomUUID } from 'node:crypto';
import { newId } from '@hookline/db';
import { seedTenant, type SeededTenant } from '@hookline/testing';
import { startAudit, writeAudit } from '../services/api/src/audit/audit-write';
import { callTool, mcpKey, startMcp, type McpHarness } from './mcp-harness';

let h: McpHarness;
let t: SeededTenant;
beforeAll(async () => {
  h = await startMcp('mcpauditredact');
  t = await seedTenant(h.db.pool);
});
afterAll(async () => {
  await h.close();
});

const SECRETS = ['MCP-SECRET-TOKEN', 'MCP-URL-PW', 'MCP-NESTED-SECRET', 'MCP-HDR-VALUE', 'MCP-PASSWORD'];

/** Tool arguments carrying secrets the way a future tool might take them. */
const args = (eventId: string) => ({
  event_id: eventId,
  api_token: 'MCP-SECRET-TOKEN',
  callback_url: 'https://cb-user:MCP-URL-PW@callback.test/x?y=1',
  nested: { client_secret: 'MCP-NESTED-SECRET', headers: { Authorization: 'Bearer MCP-HDR-VALUE' }, list: [{ password: 'MCP-PASSWORD' }] },
});
const redacted = {
  api_token: '[redacted]',
  callback_url: 'https://cb-user:****@callback.test/x?y=1',
  nested: { client_secret: '[redacted]', headers: { Authorization: '[redacted]' }, list: [{ password: '[redacted]' }] },
};

const rowsOf = async (actor: string) =>
  (await h.db.pool.query<{ action: string; outcome: string; params: any; text: string }>('SELECT action, outcome, params, params::text AS text FROM audit_logs WHERE actor = $1 ORDER BY id', [actor])).rows;

test('a tool call through the MCP router (SDK client and REST mirror) is audited with its arguments redacted', async () => {
  const key = await mcpKey(h, t);
  const client = await h.client(key.key);
  const [first, second] = [newId('evt'), newId('evt')];
  // Write tools are disabled by default: refused (403) before the arguments are read, and audited:
  // the argument the tool takes as parsed, the others by name only (their values, secrets
  // included, are never stored).
  const viaMcp = await callTool(client, 'retry_event', args(first));
  expect(viaMcp).toMatchObject({ isError: true, body: { status: 403, tool_group: 'retry' } });
  const viaRest = await h.http('POST', '/v1/mcp/tools/retry_event', { headers: { 'x-mcp-api-key': key.key }, body: args(second) });
  expect(viaRest.status).toBe(403);

  const rows = await rowsOf(`mcp_key:${key.id}`);
  const extra = ['api_token', 'callback_url', 'nested'];
  expect(rows.map((r) => ({ action: r.action, outcome: r.outcome, params: r.params }))).toEqual([
    { action: 'mcp.retry_event', outcome: 'client_error:403', params: { tool: 'retry_event', tool_group: 'retry', arguments: { event_id: first }, extra_arguments: extra } },
    { action: 'mcp.retry_event', outcome: 'client_error:403', params: { tool: 'retry_event', tool_group: 'retry', arguments: { event_id: second }, extra_arguments: extra } },
  ]);
  for (const r of rows) for (const secret of SECRETS) expect(r.text).not.toContain(secret);
});

test('the MCP audit writer redacts whatever params it is given, keeping the rest as is', async () => {
  const actor = `mcp_key:writer_${randomUUID()}`;
  await writeAudit(h.db.pool, {
    tenantId: t.tenantId,
    actor,
    action: 'mcp_keys.create',
    resourceId: null,
    params: { name: 'agent', scopes: ['mcp:read:health'], rate_limit: { per_minute: 2, burst: 3 }, signing_secret: 'whsec_MCP-SECRET-TOKEN', target: 'https://MCP-URL-PW@hooks.test/', config: { headers: { 'X-Api-Key': 'MCP-HDR-VALUE' } } },
    status: 201,
    requestId: 'req_mcp_audit_redaction',
  });
  const rows = await rowsOf(actor);
  expect(rows.map((r) => [r.action, r.outcome, r.params])).toEqual([
    [
      'mcp_keys.create',
      'success:201',
      { name: 'agent', scopes: ['mcp:read:health'], rate_limit: { per_minute: 2, burst: 3 }, signing_secret: '[redacted]', target: 'https://****@hooks.test/', config: { headers: { 'X-Api-Key': '[redacted]' } } },
    ],
  ]);
  for (const secret of SECRETS) expect(rows[0]!.text).not.toContain(secret);
});

test('the fail-closed audit writer (row first, outcome after) redacts the params of both', async () => {
  const actor = `mcp_key:writer_${randomUUID()}`;
  const finish = await startAudit(h.db.pool, { tenantId: t.tenantId, actor, action: 'mcp_keys.create', resourceId: null, params: { path: '/x', ...args('evt_x') }, requestId: 'req_mcp_audit_start' });
  const started = await rowsOf(actor);
  expect(started.map((r) => [r.outcome, r.params])).toEqual([['server_error:', { path: '/x', event_id: 'evt_x', ...redacted }]]);
  await finish(201, { resourceId: 'key_x', params: { name: 'agent', ...args('evt_y') } });
  const ended = await rowsOf(actor);
  expect(ended.map((r) => [r.outcome, r.params])).toEqual([['success:201', { name: 'agent', event_id: 'evt_y', ...redacted }]]);
  for (const r of [...started, ...ended]) for (const secret of SECRETS) expect(r.text).not.toContain(secret);
});
