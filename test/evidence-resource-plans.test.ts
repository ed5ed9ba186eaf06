// The evidence of an ingester, a destination or a flow (GET /v1/mcp/evidence/{id}, the MCP
// tool get_evidence) is read through indexes: with a long, skewed history, the statement
// evidenceFor sends reads no table whole and, for an ingester or a destination, a page (the
// first, or one deep in the list) reads a few hundred rows at most, however many receipts
// the resource has. A flow's page reads its deliveries through deliveries_flow_id_id_idx
// (migration 20261203000000_deliveries_flow_id_index), whatever destinations they went to.
import { evidenceFor } from '@hookline/evidence';
import { createTestDatabase, seedTenant, type TestDatabase } from '@hookline/testing';
import { analysingPool, planReads, type PlanReads } from './support/plan-reads';

let db: TestDatabase;
let tenantId: string;
const N = 60_000;
const pad = (col: string) => `lpad((${col})::text, 8, '0')`;

beforeAll(async () => {
  db = await createTestDatabase('evresplans');
  tenantId = (await seedTenant(db.pool)).tenantId;
  const other = (await seedTenant(db.pool)).tenantId;
  const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
  await q(`INSERT INTO ingesters (id, tenant_id, name, provider, updated_at) SELECT 'ing_' || ${pad('i')}, $1, 'in', 'generic', now() FROM generate_series(0, 39) i`, [tenantId]);
  await q(`INSERT INTO destinations (id, tenant_id, name, url, updated_at) SELECT 'dst_' || ${pad('i')}, $1, 'out', 'http://127.0.0.1:9/hook', now() FROM generate_series(0, 199) i`, [tenantId]);
  // Two flows into each destination d, both from ingester d mod 40: flw_d and flw_(1000 + d).
  await q(
    `INSERT INTO delivery_flows (id, tenant_id, name, ingester_id, destination_id, updated_at)
     SELECT 'flw_' || ${pad('d + 1000 * k')}, $1, 'f', 'ing_' || ${pad('d % 40')}, 'dst_' || ${pad('d')}, now() FROM generate_series(0, 199) d, generate_series(0, 1) k`,
    [tenantId],
  );
  // Half the events on ingester 0, the rest spread over the 40; one in ten of another tenant.
  await q(
    `INSERT INTO events (id, tenant_id, ingester_id, status, correlation_id, received_at)
     SELECT 'evt_' || ${pad('i')}, CASE WHEN i % 10 = 9 THEN $2 ELSE $1 END, 'ing_' || ${pad('CASE WHEN i % 2 = 0 THEN 0 ELSE i % 40 END')}, 'delivered', 'c', now() - (${N} - i) * interval '1 second'
       FROM generate_series(1, ${N}) i`,
    [tenantId, other],
  );
  await q('ANALYZE events');
  // Each event to two of its ingester's five destinations (0, 40, 80, … for ingester 0), alternating between their two flows.
  await q(
    `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, attempt_count)
     SELECT 'dlv_' || substr(e.id, 5) || k, e.tenant_id, e.id, 'flw_' || ${pad('x.d + 1000 * (substr(e.id, 5)::int / 2 % 2)')}, 'dst_' || ${pad('x.d')}, 'delivered', 2
       FROM events e, generate_series(0, 1) k, LATERAL (SELECT substr(e.ingester_id, 5)::int + 40 * ((substr(e.id, 5)::int / 80 + k) % 5) AS d) x`,
  );
  await q('ANALYZE deliveries');
  // Two attempts, so two receipts, per delivery.
  await q(
    `INSERT INTO evidence_receipts (id, tenant_id, attempt_id, delivery_id, event_id, destination_id, attempt_number, outcome, status_code, started_at, completed_at, duration_ms, key_id, signature, leaf_hash, issued_at)
     SELECT 'rcp_' || substr(d.id, 5) || n, d.tenant_id, 'att_' || substr(d.id, 5) || n, d.id, d.event_id, d.destination_id, n, 'succeeded', 200, e.received_at, e.received_at, 5, 'ek_x', 's', 'h', now()
       FROM deliveries d JOIN events e ON e.id = d.event_id, generate_series(1, 2) n`,
  );
  await q('ANALYZE');
});

afterAll(async () => {
  await db.drop();
});

/** Runs the statement evidenceFor sends for this id (and cursor) under EXPLAIN ANALYZE: its answer and the rows it read per table. */
async function readsOf(id: string, cursor: string | null): Promise<PlanReads> {
  const analysing = analysingPool(db.pool);
  await evidenceFor(analysing.pool, tenantId, id, 21, cursor);
  expect(analysing.plan()).toBeDefined();
  return planReads(analysing.plan()!, ['evidence_receipts', 'events', 'deliveries']);
}

// The resource's receipts in the documented order (the statement's own order, written out
// here again), and their number.
const LISTS: Record<string, string> = {
  ing: `FROM evidence_receipts r JOIN events x ON x.id = r.event_id WHERE r.tenant_id = $1 AND x.ingester_id = $2 ORDER BY r.event_id DESC, r.delivery_id DESC, r.attempt_number DESC, r.id DESC`,
  dst: `FROM evidence_receipts r JOIN deliveries x ON x.id = r.delivery_id WHERE r.tenant_id = $1 AND x.destination_id = $2 ORDER BY r.delivery_id DESC, r.attempt_number DESC, r.id DESC`,
  flw: `FROM evidence_receipts r JOIN deliveries x ON x.id = r.delivery_id WHERE r.tenant_id = $1 AND x.flow_id = $2 ORDER BY r.delivery_id DESC, r.attempt_number DESC, r.id DESC`,
};

test.each([
  ['an ingester with half the events', 'ing_00000000'],
  ['an ingester with few', 'ing_00000001'],
  ['a busy destination', 'dst_00000000'],
  ['a quiet destination', 'dst_00000001'],
])('a page of the evidence of %s reads its rows by index, a few hundred at most, first or deep in the list', async (_what, id) => {
  const { total, deep } = await listOf(id);
  expect(total).toBeGreaterThan(1_000);
  for (const cursor of [null, deep]) {
    const r = await readsOf(id, cursor);
    expect({ id, cursor, rows: r.rows, seqScans: r.seqScans }).toEqual({ id, cursor, rows: 21, seqScans: [] });
    const read = Object.values(r.reads).reduce((a, b) => a + b, 0);
    expect({ id, cursor, total, reads: r.reads, atMost500: read <= 500 }).toEqual({ id, cursor, total, reads: r.reads, atMost500: true });
  }
});

test.each([
  ['into a busy destination', 'flw_00001000'],
  ['into a quiet destination', 'flw_00000001'],
])("a page of the evidence of a flow %s reads by index, at most its destination's deliveries and the flow's receipts", async (_what, id) => {
  const { total, deep } = await listOf(id);
  const { rows } = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM deliveries WHERE destination_id = (SELECT destination_id FROM delivery_flows WHERE id = $1)', [id]);
  const toDestination = Number(rows[0]!.n);
  for (const cursor of [null, deep]) {
    const r = await readsOf(id, cursor);
    expect({ id, cursor, rows: r.rows, seqScans: r.seqScans }).toEqual({ id, cursor, rows: 21, seqScans: [] });
    expect({ id, cursor, deliveries: r.reads['deliveries']! <= toDestination, receipts: r.reads['evidence_receipts']! <= total }).toEqual({ id, cursor, deliveries: true, receipts: true });
  }
});

/** How many receipts the resource has, and one two thirds down its list (a cursor deep in it). */
async function listOf(id: string): Promise<{ total: number; deep: string }> {
  const list = LISTS[id.slice(0, 3)]!;
  const total = Number((await db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM (SELECT r.id ${list}) l`, [tenantId, id])).rows[0]!.n);
  const deep = (await db.pool.query<{ id: string }>(`SELECT r.id ${list} OFFSET ${Math.floor((total * 2) / 3)} LIMIT 1`, [tenantId, id])).rows[0]!.id;
  return { total, deep };
}
