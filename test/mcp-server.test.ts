import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { issueReceipts, sealWindow, verifyReceipt, type EvidenceBundle } from '@hookline/evidence';
import { newId } from '@hookline/db';
import { MCP_SCOPES } from '@hookline/signing';
import { seedTenant } from '@hookline/testing';
import { readClusterStatus } from '../services/api/src/edge/cluster-status';
import { mcpPaths } from '../services/api/src/mcp/mcp.openapi';
import { callTool as call, mcpKey, seedTenantData, startMcp, TEST_EVIDENCE_KEY, type McpHarness, type TenantData } from './mcp-harness';
import { insertDestination, insertEvent, insertFlow, insertIngester } from './router-fixtures';

let h: McpHarness;
let mine: TenantData;
let theirs: TenantData;
let reader: { id: string; key: string };
let client: Client;


beforeAll(async () => {
  h = await startMcp('mcpserver');
  mine = await seedTenantData(h);
  theirs = await seedTenantData(h);
  reader = await mcpKey(h, mine.tenant);
  client = await h.client(reader.key);
});

afterAll(async () => {
  await h.close();
});

test('lists the tools with input and output schemas', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  expect(names).toEqual([
    'get_capabilities', 'get_delivery_status', 'get_evidence', 'get_health', 'get_logs', 'get_readiness', 'list_deliveries', 'list_mcp_endpoints',
    'list_merkle_evidence_refs', 'list_non_claims', 'list_planes', 'list_runtime_proofs', 'list_trust_proofs', 'replay_delivery', 'retry_event', 'set_destination_state',
  ]);
  for (const t of tools) {
    expect(t.inputSchema.type).toBe('object');
    expect(t.outputSchema?.type).toBe('object');
    expect(t.description).toBeTruthy();
  }
  const retry = tools.find((t) => t.name === 'retry_event')!;
  expect(retry.inputSchema.required).toEqual(['event_id']);
  expect(retry._meta).toEqual({ 'hookline/access': { tool_group: 'retry', enabled_by_default: false } });
  expect(tools.find((t) => t.name === 'get_delivery_status')!.annotations?.readOnlyHint).toBe(true);
});

test('read tools answer from the tenant data of the key', async () => {
  const caps = await call(client, 'get_capabilities');
  expect(caps.body.evidence_scope).toBe('local_mock_harness_only');
  expect(caps.body.capabilities.find((c: { id: string }) => c.id === 'multi_region_failover').proof_status).toBe('not_claimed');
  const runtime = await call(client, 'list_runtime_proofs');
  expect(runtime.body.proofs.map((p: { proof_id: string }) => p.proof_id)).toEqual(Array.from({ length: 10 }, (_, i) => `PROOF-${String(i + 1).padStart(3, '0')}`));
  const trust = await call(client, 'list_trust_proofs');
  expect(trust.body.proofs.map((p: { proof_id: string }) => p.proof_id)).toEqual(Array.from({ length: 10 }, (_, i) => `TRUST-${String(i + 1).padStart(3, '0')}`));
  expect((await call(client, 'list_non_claims', { category: 'availability' })).body.categories.availability).toContain('Multi-region failover is not offered.');
  expect((await call(client, 'get_readiness')).body.domains.evidence).toMatchObject({ ok: true, unsealed_receipts: 0 });

  const roots = (await call(client, 'list_merkle_evidence_refs')).body.merkle_roots;
  expect(roots).toHaveLength(1);
  expect(roots[0]).toMatchObject({ tenant_id: mine.tenant.tenantId, leaf_count: 3 });
  const evidence = await call(client, 'get_evidence', { id: mine.exhaustedId });
  expect(evidence.body.receipts).toHaveLength(2);
  for (const b of evidence.body.receipts as EvidenceBundle[]) {
    expect(b.receipt.outcome).toBe('failed');
    expect(verifyReceipt(b.receipt, b.proof!, b.root!, { key: TEST_EVIDENCE_KEY.key }).valid).toBe(true);
  }

  expect((await call(client, 'get_delivery_status', { delivery_id: mine.exhaustedId })).body).toMatchObject({ id: mine.exhaustedId, status: 'exhausted', attempt_count: 2, outcome: 'all retries used; in the DLQ' });
  const dlq = (await call(client, 'list_deliveries', { status: 'exhausted' })).body;
  expect(dlq.deliveries.map((d: { id: string }) => d.id)).toEqual([mine.exhaustedId]);
  const planes = (await call(client, 'list_planes')).body.planes;
  expect(planes.map((p: { id: string }) => p.id)).toEqual(['control', 'delivery', mine.clusterId]);
  expect(planes[2]).toMatchObject({ kind: 'edge_cluster', status: 'online', connected: true, in_flight: 0 });
  const logs = (await call(client, 'get_logs', { id: mine.exhaustedId })).body.entries;
  expect(logs.map((e: { source: string; level: string }) => [e.source, e.level])).toEqual([['delivery_attempt', 'warn'], ['delivery_attempt', 'warn']]);
  expect((await call(client, 'get_logs', { id: mine.ingesterId })).body.entries[0]).toMatchObject({ source: 'ingest_rejection', message: 'rejected: provider_verification_failed' });
  expect((await call(client, 'get_health')).body).toMatchObject({ status: 'ok', version: '0.1.0-test', checks: { database: { ok: true }, redis: { ok: true } } });
  const endpoints = (await call(client, 'list_mcp_endpoints')).body;
  expect(endpoints.tools.find((t: { name: string }) => t.name === 'retry_event')).toEqual({ name: 'retry_event', scope: null, tool_group: 'retry', enabled: false });

  // Another tenant's ids are not found, and bad arguments are refused by the input schema.
  for (const [name, args] of [['get_delivery_status', { delivery_id: theirs.exhaustedId }], ['get_evidence', { id: theirs.exhaustedId }], ['get_logs', { id: theirs.eventId }]] as const) {
    const r = await call(client, name, args);
    expect(r).toMatchObject({ isError: true, body: { status: 404, type: expect.stringMatching(/\/not-found$/) } });
  }
  const bad = await client.callTool({ name: 'get_delivery_status', arguments: { delivery_id: 'nope' } });
  expect(bad.isError).toBe(true);
});

test('refuses a missing key, a key without the mcp_ prefix and a revoked key with 401', async () => {
  await expect(h.client()).rejects.toMatchObject({ code: 401 });
  await expect(h.client(mine.tenant.apiKey)).rejects.toMatchObject({ code: 401 });
  await expect(h.client(`mcp_${mine.tenant.apiKey.slice(3)}`)).rejects.toMatchObject({ code: 401 });
  const doomed = await mcpKey(h, mine.tenant);
  const live = await h.client(doomed.key);
  expect((await call(live, 'get_health')).isError).toBe(false);
  const revoked = await h.http('DELETE', `/v1/tenants/${mine.tenant.tenantId}/mcp-keys/${doomed.id}`, { headers: { 'x-api-key': mine.tenant.apiKey } });
  expect(revoked.status).toBe(200);
  await expect(live.callTool({ name: 'get_health', arguments: {} })).rejects.toMatchObject({ code: 401 });
  await expect(h.client(doomed.key)).rejects.toMatchObject({ code: 401 });
  const rest = await h.http('GET', '/v1/mcp/health', { headers: { 'x-mcp-api-key': doomed.key } });
  expect(rest.status).toBe(401);
  expect(rest.body).toMatchObject({ type: expect.stringMatching(/\/unauthorized$/), instance: rest.headers.get('x-request-id') });
});

test('edge planes show connected and in_flight by the rule of the cluster views', async () => {
  const t = await seedTenantData(h);
  const { tenantId } = t.tenant;
  const [stale, never] = [newId('cls'), newId('cls')];
  // Seen two minutes ago: outside EDGE_CONNECTED_WINDOW_MS (60 s), so not connected.
  await h.db.pool.query(
    `INSERT INTO clusters (id, tenant_id, name, key_encrypted, last_seen_at) VALUES ($1, $3, 'dc-stale', 'v1.x.y.z', now() - interval '2 minutes'), ($2, $3, 'dc-new', 'v1.x.y.z', NULL)`,
    [stale, never, tenantId],
  );
  // Two deliveries of the connected cluster's destination: one leased now (in flight), one whose lease expired.
  const dst = await insertDestination(h.db.pool, tenantId);
  await h.db.pool.query('UPDATE destinations SET cluster_id = $1 WHERE id = $2', [t.clusterId, dst]);
  for (const lease of ['1 minute', '-1 minute']) {
    const flow = await insertFlow(h.db.pool, { tenantId, ingesterId: t.ingesterId, destinationId: dst });
    await h.db.pool.query(
      `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, lease_until, lease_owner) VALUES ($1, $2, $3, $4, $5, 'pending', now() + $6::interval, 'edge:a:1')`,
      [newId('dlv'), tenantId, t.eventId, flow, dst, lease],
    );
  }
  const key = await mcpKey(h, t.tenant, ['mcp:read:planes']);
  const res = await h.http('GET', '/v1/mcp/planes', { headers: { 'x-mcp-api-key': key.key } });
  const edge = Object.fromEntries(res.body.planes.filter((p: { kind: string }) => p.kind === 'edge_cluster').map((p: any) => [p.id, { status: p.status, connected: p.connected, in_flight: p.in_flight }]));
  expect(edge).toEqual({
    [t.clusterId]: { status: 'online', connected: true, in_flight: 1 },
    [stale]: { status: 'stale', connected: false, in_flight: 0 },
    [never]: { status: 'never_seen', connected: false, in_flight: 0 },
  });
  const { rows } = await h.db.pool.query<{ id: string; last_seen_at: Date | null }>('SELECT id, last_seen_at FROM clusters WHERE tenant_id = $1', [tenantId]);
  const views = await readClusterStatus(h.db.pool, rows.map((r) => ({ id: r.id, lastSeenAt: r.last_seen_at })));
  for (const [id, plane] of Object.entries(edge)) expect(views.get(id)).toEqual({ connected: plane.connected, in_flight: plane.in_flight });
});

test('a tool outside the scopes of the key answers 403 insufficient-scope', async () => {
  const healthOnly = await mcpKey(h, mine.tenant, ['mcp:read:health']);
  const c = await h.client(healthOnly.key);
  expect((await call(c, 'get_health')).isError).toBe(false);
  const denied = await call(c, 'get_delivery_status', { delivery_id: mine.exhaustedId });
  expect(denied).toEqual({ isError: true, body: expect.objectContaining({ status: 403, type: expect.stringMatching(/\/insufficient-scope$/), required_scope: 'mcp:read:deliveries' }) });
  expect((await call(c, 'get_capabilities')).body.required_scope).toBe('mcp:read:evidence');
});

test('the REST mirror checks each scope', async () => {
  const routes: [string, string, (body: any) => void][] = [
    ['/v1/mcp/health', 'mcp:read:health', (b) => expect(b).toMatchObject({ status: 'ok', version: '0.1.0-test' })],
    ['/v1/mcp/endpoints', 'mcp:read:endpoints', (b) => expect(b.endpoints.map((e: { path: string }) => e.path)).toContain('/v1/mcp/logs/{id}')],
    [`/v1/mcp/evidence/${mine.deliveredId}`, 'mcp:read:evidence', (b) => expect(b.receipts[0].receipt).toMatchObject({ delivery_id: mine.deliveredId, outcome: 'succeeded', status_code: 200 })],
    [`/v1/mcp/deliveries/${mine.deliveredId}/status`, 'mcp:read:deliveries', (b) => expect(b).toMatchObject({ status: 'delivered', outcome: 'delivered' })],
    ['/v1/mcp/planes', 'mcp:read:planes', (b) => expect(b.planes).toHaveLength(3)],
    [`/v1/mcp/logs/${mine.eventId}?level=info`, 'mcp:read:logs', (b) => expect(b.entries.every((e: { level: string }) => e.level === 'info')).toBe(true)],
  ];
  const all = await mcpKey(h, mine.tenant, [...MCP_SCOPES]);
  for (const [path, scope, check] of routes) {
    const ok = await h.http('GET', path, { headers: { 'x-mcp-api-key': all.key } });
    expect([path, ok.status]).toEqual([path, 200]);
    check(ok.body);
    const others = await mcpKey(h, mine.tenant, MCP_SCOPES.filter((s) => s !== scope));
    const denied = await h.http('GET', path, { headers: { 'x-mcp-api-key': others.key } });
    expect([path, denied.status, denied.body.required_scope]).toEqual([path, 403, scope]);
    expect((await h.http('GET', path)).status).toBe(401);
  }
  expect((await h.http('GET', `/v1/mcp/deliveries/${theirs.deliveredId}/status`, { headers: { 'x-mcp-api-key': all.key } })).status).toBe(404);
  expect((await h.http('GET', `/v1/mcp/evidence/${theirs.deliveredId}`, { headers: { 'x-mcp-api-key': all.key } })).status).toBe(404);
  expect((await h.http('GET', '/v1/mcp/logs/evt_x?level=loud', { headers: { 'x-mcp-api-key': all.key } })).status).toBe(400);
  expect((await h.http('POST', '/v1/mcp/tools/get_delivery_status', { headers: { 'x-mcp-api-key': all.key }, body: { delivery_id: mine.deliveredId } })).body.status).toBe('delivered');
  expect((await h.http('GET', '/v1/mcp', { headers: { 'x-mcp-api-key': all.key } })).status).toBe(405);
});

test('list_non_claims takes only its own categories: an Object member is refused as invalid, not a 500', async () => {
  const { tools } = await client.listTools();
  const schema = tools.find((t) => t.name === 'list_non_claims')!.inputSchema.properties!['category'] as { enum?: string[] };
  expect(schema.enum).toEqual(expect.arrayContaining(['availability', 'configuration', 'security', 'evidence']));
  const all = await mcpKey(h, mine.tenant, [...MCP_SCOPES]);
  for (const category of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
    // The same 400 validation-error problem over MCP as over the REST mirror.
    const r = await call(client, 'list_non_claims', { category });
    expect([category, r.isError, r.body.status, r.body.errors?.[0]?.field]).toEqual([category, true, 400, 'category']);
    const rest = await h.http('POST', '/v1/mcp/tools/list_non_claims', { headers: { 'x-mcp-api-key': all.key }, body: { category } });
    expect([category, rest.status, rest.body.errors?.[0]?.field]).toEqual([category, 400, 'category']);
  }
  expect((await call(client, 'list_non_claims', { category: 'security' })).body.categories.security).toContain('Mutual TLS for MCP clients is not implemented; MCP authenticates with mcp_ API keys.');
});

test('a body too large for the MCP router is 413 payload-too-large with the request id, not a 500', async () => {
  const big = { pad: 'x'.repeat(1_100_000) };
  for (const path of ['/v1/mcp/tools/get_health', '/v1/mcp']) {
    const res = await h.http('POST', path, { headers: { 'x-mcp-api-key': reader.key, accept: 'application/json, text/event-stream' }, body: big });
    expect([path, res.status, res.headers.get('content-type')]).toEqual([path, 413, expect.stringMatching(/^application\/problem\+json/)]);
    expect(res.body).toMatchObject({ type: expect.stringMatching(/\/payload-too-large$/), status: 413, instance: res.headers.get('x-request-id') });
  }
});

test('get_logs and GET /v1/mcp/logs/{id} answer 20 entries unless asked for more, as the tool schema and SPEC say', async () => {
  const { tools } = await client.listTools();
  expect((tools.find((t) => t.name === 'get_logs')!.inputSchema.properties!['limit'] as { description: string }).description).toMatch(/default 20/);
  for (let i = 0; i < 25; i++) {
    await h.db.pool.query(`INSERT INTO audit_logs (id, tenant_id, actor, action, resource_id, params, outcome, request_id) VALUES ($1, $2, 'api_key:x', 'destinations.update', $3, '{}', 'success:200', 'req_x')`, [
      newId('aud'), mine.tenant.tenantId, mine.destinationId,
    ]);
  }
  expect((await call(client, 'get_logs', { id: mine.destinationId })).body.entries).toHaveLength(20);
  expect((await call(client, 'get_logs', { id: mine.destinationId, limit: 100 })).body.entries).toHaveLength(25);
  const logsKey = await mcpKey(h, mine.tenant, ['mcp:read:logs']);
  expect((await h.http('GET', `/v1/mcp/logs/${mine.destinationId}`, { headers: { 'x-mcp-api-key': logsKey.key } })).body.entries).toHaveLength(20);
});

test('a cursor the list did not issue is refused, not read as the start of the list', async () => {
  const page1 = (await call(client, 'list_deliveries', { limit: 1 })).body;
  expect(page1.next_cursor).toEqual(expect.any(String));
  const page2 = (await call(client, 'list_deliveries', { limit: 1, cursor: page1.next_cursor })).body;
  expect(page2.deliveries.map((d: { id: string }) => d.id)).toEqual([[mine.exhaustedId, mine.deliveredId].sort()[0]]);
  const root = (await call(client, 'list_merkle_evidence_refs')).body.merkle_roots[0];
  expect((await call(client, 'list_merkle_evidence_refs', { cursor: Buffer.from(root.id).toString('base64url') })).body).toEqual({ merkle_roots: [], next_cursor: null });

  const all = await mcpKey(h, mine.tenant, [...MCP_SCOPES]);
  for (const [tool, cursor] of [['list_deliveries', 'zzz'], ['list_merkle_evidence_refs', 'nope'], ['list_merkle_evidence_refs', mine.exhaustedId]] as const) {
    expect((await client.callTool({ name: tool, arguments: { cursor } })).isError).toBe(true);
    const rest = await h.http('POST', `/v1/mcp/tools/${tool}`, { headers: { 'x-mcp-api-key': all.key }, body: { cursor } });
    expect([tool, cursor, rest.status, rest.body.errors?.[0]?.field]).toEqual([tool, cursor, 400, 'cursor']);
  }
});

test('the endpoint listing names the key-management endpoints of mcp:admin:keys, and they answer such a key', async () => {
  const endpoints = (await call(client, 'list_mcp_endpoints')).body.endpoints as { method: string; path: string; scope: string }[];
  const admin = endpoints.filter((e) => e.scope === 'mcp:admin:keys').map((e) => `${e.method} ${e.path}`);
  expect(admin).toEqual(expect.arrayContaining(['GET /v1/tenants/{tid}/mcp-keys', 'POST /v1/tenants/{tid}/mcp-keys', 'DELETE /v1/tenants/{tid}/mcp-keys/{kid}']));
  const key = await mcpKey(h, mine.tenant, ['mcp:admin:keys']);
  expect((await h.http('GET', `/v1/tenants/${mine.tenant.tenantId}/mcp-keys`, { headers: { 'x-mcp-api-key': key.key } })).status).toBe(200);
});

test('get_evidence and GET /v1/mcp/evidence/{id} page the receipts of a root past 100 with limit, cursor, next_cursor and has_more', async () => {
  // One delivery with 105 attempts, a second apart, all sealed into one root.
  const pool = h.db.pool;
  const tenant = await seedTenant(pool);
  const { tenantId } = tenant;
  const ingesterId = await insertIngester(pool, tenantId);
  const destinationId = await insertDestination(pool, tenantId);
  const eventId = await insertEvent(pool, { tenantId, ingesterId, status: 'dlq_queued' });
  const flowId = await insertFlow(pool, { tenantId, ingesterId, destinationId });
  const deliveryId = newId('dlv');
  await pool.query(`INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count, exhausted_at) VALUES ($1, $2, $3, $4, $5, 'exhausted', 105, now())`, [
    deliveryId, tenantId, eventId, flowId, destinationId,
  ]);
  await pool.query(
    `INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, response_body, started_at, duration_ms)
     SELECT a.id, $2, $3, a.n, 503, 'down', now() - interval '1 hour' + a.n * interval '1 second', 5 FROM unnest($1::text[]) WITH ORDINALITY AS a(id, n)`,
    [Array.from({ length: 105 }, () => newId('att')), tenantId, deliveryId],
  );
  await issueReceipts(pool, TEST_EVIDENCE_KEY);
  const root = (await sealWindow(pool, TEST_EVIDENCE_KEY, tenantId, { start: new Date(0), end: new Date(Date.now() + 60_000) }))!;
  expect(root.leaf_count).toBe(105);
  const key = await mcpKey(h, tenant, ['mcp:read:evidence']);
  const c = await h.client(key.key);

  const first = (await call(c, 'get_evidence', { id: root.id })).body;
  expect([first.receipts.length, first.has_more, typeof first.next_cursor]).toEqual([20, true, 'string']);
  // Every receipt once, oldest first, over two pages of 100; the last page says it is the last.
  const seen: number[] = [];
  const pages: { n: number; has_more: boolean; next_cursor: string | null }[] = [];
  let cursor: string | null = null;
  do {
    const page: any = (await call(c, 'get_evidence', { id: root.id, limit: 100, ...(cursor ? { cursor } : {}) })).body;
    seen.push(...(page.receipts as EvidenceBundle[]).map((b) => b.receipt.attempt_number));
    pages.push({ n: page.receipts.length, has_more: page.has_more, next_cursor: page.next_cursor });
    cursor = page.next_cursor;
  } while (cursor && pages.length < 5);
  expect(pages).toEqual([{ n: 100, has_more: true, next_cursor: expect.any(String) }, { n: 5, has_more: false, next_cursor: null }]);
  expect(seen).toEqual(Array.from({ length: 105 }, (_, i) => i + 1));

  const headers = { 'x-mcp-api-key': key.key };
  const rest = await h.http('GET', `/v1/mcp/evidence/${root.id}?limit=100`, { headers });
  expect([rest.status, rest.body.receipts.length, rest.body.has_more]).toEqual([200, 100, true]);
  const last = await h.http('GET', `/v1/mcp/evidence/${root.id}?limit=100&cursor=${rest.body.next_cursor}`, { headers });
  expect(last.body).toMatchObject({ resource_id: root.id, has_more: false, next_cursor: null });
  const bundle = last.body.receipts[4] as EvidenceBundle;
  expect(bundle.receipt.attempt_number).toBe(105);
  expect(verifyReceipt(bundle.receipt, bundle.proof!, bundle.root!, { key: TEST_EVIDENCE_KEY.key }).valid).toBe(true);
  // The delivery's evidence pages the same way.
  expect((await call(c, 'get_evidence', { id: deliveryId, limit: 100, cursor: pages[0]!.next_cursor })).body.receipts).toHaveLength(5);

  // A cursor the list did not issue is refused, on both surfaces.
  for (const bad of ['nope', Buffer.from(deliveryId).toString('base64url')]) {
    expect((await call(c, 'get_evidence', { id: root.id, cursor: bad })).body).toMatchObject({ status: 400, errors: [{ field: 'cursor' }] });
    expect((await h.http('GET', `/v1/mcp/evidence/${root.id}?cursor=${bad}`, { headers })).body).toMatchObject({ status: 400, errors: [{ field: 'cursor' }] });
  }
  expect((await h.http('GET', `/v1/mcp/evidence/${root.id}?limit=101`, { headers })).status).toBe(400);
});

test('get_evidence and GET /v1/mcp/evidence/{id} answer the receipts of an ingester, a destination or a flow, newest first, a page at a time', async () => {
  // One ingester fanned out to two destinations (two flows to the first), and a second
  // ingester's flow into the first destination: each id must find exactly its own receipts.
  const pool = h.db.pool;
  const tenant = await seedTenant(pool);
  const { tenantId } = tenant;
  const [ing1, ing2] = [await insertIngester(pool, tenantId), await insertIngester(pool, tenantId)];
  const [dst1, dst2] = [await insertDestination(pool, tenantId), await insertDestination(pool, tenantId)];
  const flw1 = await insertFlow(pool, { tenantId, ingesterId: ing1, destinationId: dst1 });
  const flw1b = await insertFlow(pool, { tenantId, ingesterId: ing1, destinationId: dst1, filter: { match: { type: 'invoice.paid' } } });
  const flw2 = await insertFlow(pool, { tenantId, ingesterId: ing1, destinationId: dst2 });
  const flw3 = await insertFlow(pool, { tenantId, ingesterId: ing2, destinationId: dst1 });
  const plan: { ingester: string; flow: string; destination: string; attempts: number }[] = [
    ...[1, 2, 3].flatMap(() => [{ ingester: ing1, flow: flw1, destination: dst1, attempts: 2 }, { ingester: ing1, flow: flw2, destination: dst2, attempts: 1 }]),
    { ingester: ing1, flow: flw1b, destination: dst1, attempts: 1 },
    { ingester: ing2, flow: flw3, destination: dst1, attempts: 2 },
  ];
  // Attempt start times in an order unlike the ids of their events, deliveries and receipts: the lists go by event or delivery.
  const offsets = [7, 2, 11, 0, 9, 4, 1, 10, 5, 3, 8, 6];
  const attempts: { id: string; event: string; delivery: string; n: number; ingester: string; flow: string; destination: string; startedAgoS: number }[] = [];
  for (const p of plan) {
    const eventId = await insertEvent(pool, { tenantId, ingesterId: p.ingester, status: 'delivered' });
    const delivery = newId('dlv');
    await pool.query(`INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count, delivered_at) VALUES ($1, $2, $3, $4, $5, 'delivered', $6, now())`, [
      delivery, tenantId, eventId, p.flow, p.destination, p.attempts,
    ]);
    for (let n = 1; n <= p.attempts; n++) {
      const a = { id: newId('att'), event: eventId, delivery, n, ingester: p.ingester, flow: p.flow, destination: p.destination, startedAgoS: 100 + offsets[attempts.length]! * 60 - n };
      await pool.query(
        `INSERT INTO delivery_attempts (id, tenant_id, delivery_id, number, status_code, response_body, started_at, duration_ms) VALUES ($1, $2, $3, $4, $5, 'x', now() - $6::int * interval '1 second', 7)`,
        [a.id, tenantId, delivery, n, n === p.attempts ? 200 : 503, a.startedAgoS],
      );
      attempts.push(a);
    }
  }
  expect(attempts).toHaveLength(offsets.length);
  await issueReceipts(pool, TEST_EVIDENCE_KEY);
  await sealWindow(pool, TEST_EVIDENCE_KEY, tenantId, { start: new Date(0), end: new Date(Date.now() + 60_000) });
  // Newest first: an ingester's by event, then delivery; a destination's or flow's by delivery; a delivery's latest attempt first.
  type Attempt = (typeof attempts)[number];
  const desc = (x: string, y: string) => (x < y ? 1 : x > y ? -1 : 0);
  const byDelivery = (a: Attempt, b: Attempt) => desc(a.delivery, b.delivery) || b.n - a.n;
  const newest = (keep: (a: Attempt) => boolean, order: (a: Attempt, b: Attempt) => number) => attempts.filter(keep).sort(order).map((a) => a.id);
  const byEvent = (a: Attempt, b: Attempt) => desc(a.event, b.event) || byDelivery(a, b);
  const expected: Record<string, string[]> = {
    [ing1]: newest((a) => a.ingester === ing1, byEvent),
    [ing2]: newest((a) => a.ingester === ing2, byEvent),
    [dst1]: newest((a) => a.destination === dst1, byDelivery),
    [dst2]: newest((a) => a.destination === dst2, byDelivery),
    [flw1]: newest((a) => a.flow === flw1, byDelivery),
    [flw1b]: newest((a) => a.flow === flw1b, byDelivery),
    [flw2]: newest((a) => a.flow === flw2, byDelivery),
    [flw3]: newest((a) => a.flow === flw3, byDelivery),
  };
  expect(Object.fromEntries(Object.entries(expected).map(([id, ids]) => [id, ids.length]))).toEqual({ [ing1]: 10, [ing2]: 2, [dst1]: 9, [dst2]: 3, [flw1]: 6, [flw1b]: 1, [flw2]: 3, [flw3]: 2 });

  const key = await mcpKey(h, tenant, ['mcp:read:evidence']);
  const headers = { 'x-mcp-api-key': key.key };
  const c = await h.client(key.key);
  for (const [id, ids] of Object.entries(expected)) {
    // One page (default 20): exactly the receipts of this resource, newest first, each valid.
    const tool = await call(c, 'get_evidence', { id });
    expect([id, tool.isError]).toEqual([id, false]);
    expect([id, tool.body.resource_id, (tool.body.receipts as EvidenceBundle[]).map((b) => b.receipt.attempt_id), tool.body.has_more, tool.body.next_cursor]).toEqual([id, id, ids, false, null]);
    for (const b of tool.body.receipts as EvidenceBundle[]) expect(verifyReceipt(b.receipt, b.proof!, b.root!, { key: TEST_EVIDENCE_KEY.key }).valid).toBe(true);
    // The REST mirror answers the same.
    const rest = await h.http('GET', `/v1/mcp/evidence/${id}`, { headers });
    expect([id, rest.status]).toEqual([id, 200]);
    expect(rest.body).toEqual(tool.body);

    // Pages of 3 over both surfaces: every receipt once, in the same order; the last page says it is the last.
    for (const surface of ['tool', 'rest'] as const) {
      const seen: string[] = [];
      const pages: boolean[] = [];
      let cursor: string | null = null;
      do {
        const q: Record<string, unknown> = { limit: 3, ...(cursor ? { cursor } : {}) };
        const page: any =
          surface === 'tool'
            ? (await call(c, 'get_evidence', { id, ...q })).body
            : (await h.http('GET', `/v1/mcp/evidence/${id}?${new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, String(v)]))}`, { headers })).body;
        seen.push(...(page.receipts as EvidenceBundle[]).map((b) => b.receipt.attempt_id));
        pages.push(page.has_more);
        expect(page.has_more).toBe(page.next_cursor !== null);
        cursor = page.next_cursor;
      } while (cursor && pages.length < 10);
      expect([id, surface, seen]).toEqual([id, surface, ids]);
      expect(pages).toEqual(Array.from({ length: Math.ceil(ids.length / 3) }, (_, i) => i < Math.ceil(ids.length / 3) - 1));
    }
  }
  // A cursor of another list is not one this list issued: 400 cursor, on both surfaces.
  const ofDst2 = (await call(c, 'get_evidence', { id: dst2, limit: 1 })).body.next_cursor;
  expect((await call(c, 'get_evidence', { id: flw1, cursor: ofDst2 })).body).toMatchObject({ status: 400, errors: [{ field: 'cursor' }] });
  expect((await h.http('GET', `/v1/mcp/evidence/${flw1}?cursor=${ofDst2}`, { headers })).body).toMatchObject({ status: 400, errors: [{ field: 'cursor' }] });

  // A DELETED destination keeps its evidence (receipts are never withdrawn), as a purged delivery's id does.
  await pool.query(`UPDATE destinations SET state = 'DELETED' WHERE id = $1`, [dst2]);
  expect((await h.http('GET', `/v1/mcp/evidence/${dst2}`, { headers })).body.receipts.map((b: EvidenceBundle) => b.receipt.attempt_id)).toEqual(expected[dst2]);

  // Another tenant's ingester, destination and flow, and one of ours without receipts: 404 on both surfaces, as an unknown id.
  const { rows } = await pool.query<{ id: string }>('SELECT id FROM delivery_flows WHERE tenant_id = $1 ORDER BY id LIMIT 1', [theirs.tenant.tenantId]);
  const idle = await insertDestination(pool, tenantId);
  for (const id of [theirs.ingesterId, theirs.destinationId, rows[0]!.id, idle, `flw_${'0'.repeat(26)}`]) {
    const rest = await h.http('GET', `/v1/mcp/evidence/${id}`, { headers });
    expect([id, rest.status, rest.body.type]).toEqual([id, 404, expect.stringMatching(/\/not-found$/)]);
    expect([id, await call(c, 'get_evidence', { id })]).toEqual([id, { isError: true, body: expect.objectContaining({ status: 404, type: rest.body.type }) }]);
  }
  // The other tenant's key sees its own.
  const theirKey = await mcpKey(h, theirs.tenant, ['mcp:read:evidence']);
  const own = await h.http('GET', `/v1/mcp/evidence/${theirs.ingesterId}`, { headers: { 'x-mcp-api-key': theirKey.key } });
  expect([own.status, own.body.receipts.length]).toEqual([200, 3]);
});

test('get_evidence and its REST mirror describe the ingester, destination and flow ids they take', async () => {
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === 'get_evidence')!;
  for (const prefix of ['ing_', 'dst_', 'flw_']) expect([prefix, tool.description]).toEqual([prefix, expect.stringContaining(prefix)]);
  expect(tool.description).toMatch(/newest first/);
  const op = (mcpPaths['/v1/mcp/evidence/{id}'] as { get: { summary: string; description: string } }).get;
  expect(`${op.summary} ${op.description}`).toMatch(/ingester.*destination.*flow/s);
});
