// Held deliveries (open deliveries of a DISABLED destination, `held`, migration
// 20261124000000_held_deliveries) cost the deliverer's recovery sweep nothing: they are
// old and due, yet its partial index (deliveries_next_attempt_at_due_idx ... AND NOT held)
// leaves them out, so the sweep, planned as on the deliverer's connections
// (INDEX_PLAN_SETTINGS), reaches the one due delivery of an ACTIVE destination without
// walking through them.
import { createPool, type Pool } from '@hookline/db';
import { seedTenant, createTestDatabase, type TestDatabase } from '@hookline/testing';
import { SWEEP_SQL } from '../services/deliverer/src/recover-deliveries';

let db: TestDatabase;
let pipeline: Pool;
const HELD = 5000;
const AFTER_MS = 30_000;

beforeAll(async () => {
  db = await createTestDatabase('heldsweepplan');
  const { tenantId } = await seedTenant(db.pool);
  await db.pool.query(
    `INSERT INTO destinations (id, tenant_id, name, url, state, updated_at) VALUES
       ('dst_off', $1, 'off', 'http://127.0.0.1:9/hook', 'DISABLED', now()), ('dst_on', $1, 'on', 'http://127.0.0.1:9/hook', 'ACTIVE', now())`,
    [tenantId],
  );
  await db.pool.query(
    `INSERT INTO events (id, tenant_id, ingester_id, status, correlation_id)
     SELECT 'evt_' || lpad(i::text, 8, '0'), $1, 'ing_x', 'filtered', 'c' FROM generate_series(0, ${HELD}) i`,
    [tenantId],
  );
  // The held backlog: due for days (older than anything else); then one delivery of the
  // ACTIVE destination whose job was lost, due for a minute.
  await db.pool.query(
    `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, next_attempt_at, held)
     SELECT 'dlv_' || lpad(i::text, 8, '0'), $1, 'evt_' || lpad(i::text, 8, '0'), 'flw_x', 'dst_off', 'pending', now() - interval '3 days' + i * interval '1 second', true
     FROM generate_series(1, ${HELD}) i`,
    [tenantId],
  );
  await db.pool.query(
    `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, next_attempt_at)
     VALUES ('dlv_due', $1, 'evt_00000000', 'flw_x', 'dst_on', 'pending', now() - interval '1 minute')`,
    [tenantId],
  );
  await db.pool.query('ANALYZE');
  pipeline = createPool(db.url, 1, { indexPlans: true });
});

afterAll(async () => {
  await pipeline?.end();
  await db?.drop();
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

test('the recovery sweep finds the due delivery without walking the held ones', async () => {
  const client = await pipeline.connect();
  let plan: PlanNode;
  let found: string[];
  try {
    // Both run the UPDATE: each inside a transaction that is rolled back.
    await client.query('BEGIN');
    found = (await client.query<{ id: string }>(SWEEP_SQL, [AFTER_MS, 100])).rows.map((r) => r.id);
    await client.query('ROLLBACK');
    await client.query('BEGIN');
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${SWEEP_SQL}`, [AFTER_MS, 100]);
    plan = rows[0]!['QUERY PLAN'][0].Plan;
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
  expect(found).toEqual(['dlv_due']);

  const scans = nodes(plan).filter((n) => n['Relation Name'] === 'deliveries' && /Scan/.test(n['Node Type']));
  expect(scans.map((n) => n['Index Name'])).toContain('deliveries_next_attempt_at_due_idx');
  expect(scans.map((n) => n['Node Type'])).not.toContain('Seq Scan');
  // Rows the deliveries scans produced or threw away, over all their loops.
  const visited = scans.reduce((sum, n) => sum + ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) * (n['Actual Loops'] ?? 1), 0);
  console.log(`recovery sweep over ${HELD} held deliveries: deliveries scans visited ${visited} rows`);
  expect(visited).toBeLessThan(HELD / 100);
});
