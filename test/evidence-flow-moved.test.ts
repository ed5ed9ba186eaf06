// A flow's evidence (GET /v1/mcp/evidence/flw_…) is of every delivery the flow made, not
// only of those to the destination it points at now: PUT .../delivery-flows/{id} may point
// it at another destination (or take it from another ingester), and the deliveries it made
// before keep their flow_id and their receipts.
import { evidenceFor, evidenceKey, issueReceipts } from '@hookline/evidence';
import { createPipeline, insertDelivery, insertEvent, type Pipeline } from './api-fixtures';
import { startApi, type ApiHarness } from './api-harness';
import { analysingPool, planReads } from './support/plan-reads';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('evflwmoved');
});
afterAll(async () => {
  await h.close();
});

const key = () => evidenceKey(h.api.context.config.SECRETS_KEY);

interface Listed {
  receipt: { id: string; delivery_id: string; attempt_number: number; destination_id: string };
}

/** Every receipt of `id`, page after page (`limit` each); the status of the first page. */
async function allPages(headers: Record<string, string>, id: string, limit: number): Promise<{ status: number; receipts: Listed['receipt'][] }> {
  const out: Listed['receipt'][] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 50; i++) {
    const res = await h.call('GET', `/v1/mcp/evidence/${id}?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, { headers });
    if (res.status !== 200) return { status: res.status, receipts: out };
    out.push(...(res.body.receipts as Listed[]).map((b) => b.receipt));
    if (!res.body.has_more) return { status: 200, receipts: out };
    cursor = res.body.next_cursor;
  }
  throw new Error('too many pages');
}

/** The receipts in the documented order of a flow's list: newest delivery first, a delivery's latest attempt first. */
const newestFirst = (rs: Listed['receipt'][]): string[] =>
  [...rs].sort((a, b) => (a.delivery_id === b.delivery_id ? b.attempt_number - a.attempt_number : a.delivery_id < b.delivery_id ? 1 : -1)).map((r) => r.id);

test("a flow pointed at another destination keeps its earlier deliveries' evidence, and lists the new ones with them, page by page", async () => {
  const t = await h.tenant();
  const p = await createPipeline(h, t.tenantId, t.apiKey);
  const d2 = await h.call('POST', `/v1/tenants/${t.tenantId}/destinations`, { key: t.apiKey, body: { name: 'second-out', url: 'http://127.0.0.1:2/hook' } });
  expect(d2.status).toBe(201);
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, body: { name: 'reader', scopes: ['mcp:read:evidence'] } });
  const headers = { 'x-mcp-api-key': made.body.key };

  // Two deliveries to the first destination (2 + 1 attempts), receipts issued.
  const early = Date.now() - 60_000;
  const before = [
    await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { status: 'delivered' }), p, { status: 'delivered', attempts: 2, at: new Date(early) }),
    await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { status: 'delivered' }), p, { status: 'delivered', attempts: 1, at: new Date(early + 1_000) }),
  ];
  await issueReceipts(h.db.pool, key());
  const first = await allPages(headers, p.flowId, 20);
  expect(first.status).toBe(200);
  expect(first.receipts).toHaveLength(3);
  expect(new Set(first.receipts.map((r) => r.delivery_id))).toEqual(new Set(before));

  // The flow now goes to the second destination (same name, ingester and filter).
  const put = await h.call('PUT', `/v1/tenants/${t.tenantId}/delivery-flows/${p.flowId}`, { key: t.apiKey, body: { name: 'p-flow', endpoint: p.ingesterId, target: d2.body.id } });
  expect(put.status).toBe(200);
  expect(put.body.destination_id).toBe(d2.body.id);

  const moved = await allPages(headers, p.flowId, 20);
  expect(moved.status).toBe(200);
  expect(moved.receipts.map((r) => r.id)).toEqual(first.receipts.map((r) => r.id));

  // New deliveries of the flow, to the second destination.
  const p2: Pipeline = { ...p, destinationId: d2.body.id };
  const after = [
    await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { status: 'delivered' }), p2, { status: 'delivered', attempts: 2, at: new Date(early + 2_000) }),
    await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { status: 'delivered' }), p2, { status: 'delivered', attempts: 1, at: new Date(early + 3_000) }),
  ];
  await issueReceipts(h.db.pool, key());
  const all = await allPages(headers, p.flowId, 20);
  expect(all.status).toBe(200);
  expect(all.receipts).toHaveLength(6);
  expect(all.receipts.map((r) => r.id)).toEqual(newestFirst(all.receipts));
  expect(all.receipts.slice(0, 3).map((r) => r.delivery_id).sort()).toEqual([...after, after[0]].sort());
  expect(all.receipts.slice(3).map((r) => r.id)).toEqual(first.receipts.map((r) => r.id));
  expect(new Set(all.receipts.map((r) => r.destination_id))).toEqual(new Set([p.destinationId, d2.body.id]));

  // Page by page (pages that end within a delivery and across the two destinations): the same list.
  for (const limit of [1, 2, 4]) expect({ limit, ids: (await allPages(headers, p.flowId, limit)).receipts.map((r) => r.id) }).toEqual({ limit, ids: all.receipts.map((r) => r.id) });

  // Each destination still lists only the deliveries made to it; another tenant sees nothing.
  expect((await allPages(headers, p.destinationId, 20)).receipts.map((r) => r.id)).toEqual(first.receipts.map((r) => r.id));
  expect((await allPages(headers, d2.body.id, 20)).receipts.map((r) => r.id)).toEqual(all.receipts.slice(0, 3).map((r) => r.id));
  const other = await h.tenant();
  const theirs = await h.call('POST', `/v1/tenants/${other.tenantId}/mcp-keys`, { key: other.apiKey, body: { name: 'reader', scopes: ['mcp:read:evidence'] } });
  expect((await h.call('GET', `/v1/mcp/evidence/${p.flowId}`, { headers: { 'x-mcp-api-key': theirs.body.key } })).status).toBe(404);
});

test('a flow moved to another ingester and destination, then deleted, still answers the evidence of all its deliveries', async () => {
  const t = await h.tenant();
  const p = await createPipeline(h, t.tenantId, t.apiKey);
  const q = await createPipeline(h, t.tenantId, t.apiKey, 'q');
  const made = await h.call('POST', `/v1/tenants/${t.tenantId}/mcp-keys`, { key: t.apiKey, body: { name: 'reader', scopes: ['mcp:read:evidence'] } });
  const headers = { 'x-mcp-api-key': made.body.key };
  const old = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, p.ingesterId, { status: 'delivered' }), p, { status: 'delivered', attempts: 1 });
  await issueReceipts(h.db.pool, key());

  const put = await h.call('PUT', `/v1/tenants/${t.tenantId}/delivery-flows/${p.flowId}`, { key: t.apiKey, body: { name: 'p-flow', ingester_id: q.ingesterId, destination_id: q.destinationId } });
  expect(put.status).toBe(200);
  const later = await insertDelivery(h, t.tenantId, await insertEvent(h, t.tenantId, q.ingesterId, { status: 'delivered' }), { ...p, ingesterId: q.ingesterId, destinationId: q.destinationId }, { status: 'delivered', attempts: 1 });
  await issueReceipts(h.db.pool, key());
  expect((await h.call('POST', `/v1/tenants/${t.tenantId}/delivery-flows/${p.flowId}/disable`, { key: t.apiKey })).status).toBe(200);
  expect((await h.call('DELETE', `/v1/tenants/${t.tenantId}/delivery-flows/${p.flowId}`, { key: t.apiKey })).status).toBe(200);

  const res = await allPages(headers, p.flowId, 20);
  expect(res.status).toBe(200);
  expect(res.receipts.map((r) => r.delivery_id)).toEqual([later, old]);
  // The other flow into the same destination is not mixed in.
  expect((await allPages(headers, q.flowId, 20)).status).toBe(404);
});

test("a page of a moved flow's evidence reads its deliveries by the flow's index, about a page of them, first or deep in the list, among busier flows to both its destinations", async () => {
  const t = await h.tenant();
  const q = (sql: string, params: unknown[] = []) => h.db.pool.query(sql, params);
  const pad = (col: string) => `lpad((${col})::text, 8, '0')`;
  // Flow flw_m<tenant> went to dst a for its first 400 deliveries, then to dst b; another
  // flow sends 20 times as many to each. Ids interleave in time.
  const tag = t.tenantId.slice(4, 14);
  const [a, b, moved, busy] = [`dst_a${tag}`, `dst_b${tag}`, `flw_m${tag}`, `flw_x${tag}`];
  await q(`INSERT INTO events (id, tenant_id, ingester_id, status, correlation_id) SELECT 'evt_${tag}' || ${pad('i')}, $1, 'ing_x', 'delivered', 'c' FROM generate_series(1, 16800) i`, [t.tenantId]);
  await q(
    `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count)
     SELECT 'dlv_${tag}' || ${pad('i')}, $1, 'evt_${tag}' || ${pad('i')}, CASE WHEN i % 21 = 0 THEN $2 ELSE $3 END,
            CASE WHEN (i % 21 = 0 AND i <= 8400) OR (i % 21 <> 0 AND i % 2 = 0) THEN $4 ELSE $5 END, 'delivered', 1
       FROM generate_series(1, 16800) i`,
    [t.tenantId, moved, busy, a, b],
  );
  await q(
    `INSERT INTO evidence_receipts (id, tenant_id, attempt_id, delivery_id, event_id, destination_id, attempt_number, outcome, status_code, started_at, completed_at, duration_ms, key_id, signature, leaf_hash, issued_at)
     SELECT 'rcp_' || substr(d.id, 5), d.tenant_id, 'att_' || substr(d.id, 5), d.id, d.event_id, d.destination_id, 1, 'succeeded', 200, now(), now(), 5, 'ek_x', 's', 'h', now()
       FROM deliveries d WHERE d.tenant_id = $1`,
    [t.tenantId],
  );
  await q('ANALYZE deliveries');
  await q('ANALYZE evidence_receipts');

  const list = (await q(`SELECT r.id FROM evidence_receipts r JOIN deliveries x ON x.id = r.delivery_id WHERE r.tenant_id = $1 AND x.flow_id = $2 ORDER BY r.delivery_id DESC`, [t.tenantId, moved])).rows.map((r) => r.id as string);
  expect(list).toHaveLength(800);
  for (const cursor of [null, list[600]!]) {
    const analysing = analysingPool(h.db.pool);
    await evidenceFor(analysing.pool, t.tenantId, moved, 21, cursor);
    const { rows, seqScans, reads } = planReads(analysing.plan()!);
    // The flow's deliveries by its index, about a page of them (not the 8,400 to either of its
    // destinations); their receipts by delivery, however the planner joins them (a merge join
    // walks the tenant's receipts in delivery order: here about 21 per delivery of the flow).
    const read = Object.values(reads).reduce((x, y) => x + y, 0);
    expect({ cursor, rows, seqScans, deliveries: reads['deliveries']! <= 50, atMost1000: read <= 1_000, reads }).toEqual({ cursor, rows: 21, seqScans: [], deliveries: true, atMost1000: true, reads });
    // And the page is the list's next 21.
    const page = await evidenceFor(h.db.pool, t.tenantId, moved, 21, cursor);
    const from = cursor ? list.indexOf(cursor) + 1 : 0;
    expect(page!.map((x) => x.receipt.id)).toEqual(list.slice(from, from + 21));
  }
});
