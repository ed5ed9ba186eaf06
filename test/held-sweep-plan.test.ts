// Held deliveries (open deliveries of a DISABLED destination, `held`, migration
// 20261124000000_held_deliveries) cost the deliverer's recovery sweep nothing: they are
// old and due, yet its partial index (deliveries_next_attempt_at_due_idx ... AND NOT held)
// leaves them out, so the sweep, planned as on the deliverer's connections
// (INDEX_PLAN_SETTINGS), reaches the one due delivery of an ACTIVE destination without
// walking through them.
import { createPool, type Pool } from '@hookline/db';
import { seedTenant, createTestDatabase, type TestDatabase } from '@hookline/testing';
import { SWEEP_SQL } from '../services/deliverer/src/recover-deliveries';
import { explainDeliveriesScans, seedOnOffDestinations, type DeliveriesScans } from './plan-fixtures';

let db: TestDatabase;
let pipeline: Pool;
const HELD = 5000;
const AFTER_MS = 30_000;

beforeAll(async () => {
  db = await createTestDatabase('heldsweepplan');
  const { tenantId } = await seedTenant(db.pool);
  await seedOnOffDestinations(db.pool, tenantId, 0, HELD);
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

test('the recovery sweep finds the due delivery without walking the held ones', async () => {
  const client = await pipeline.connect();
  let plan: DeliveriesScans;
  let found: string[];
  try {
    // Both run the UPDATE: each inside a transaction that is rolled back.
    await client.query('BEGIN');
    found = (await client.query<{ id: string }>(SWEEP_SQL, [AFTER_MS, 100])).rows.map((r) => r.id);
    await client.query('ROLLBACK');
    await client.query('BEGIN');
    plan = await explainDeliveriesScans(client, SWEEP_SQL, [AFTER_MS, 100]);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
  expect(found).toEqual(['dlv_due']);

  const { scans, visited } = plan;
  expect(scans.map((n) => n['Index Name'])).toContain('deliveries_next_attempt_at_due_idx');
  expect(scans.map((n) => n['Node Type'])).not.toContain('Seq Scan');
  console.log(`recovery sweep over ${HELD} held deliveries: deliveries scans visited ${visited} rows`);
  expect(visited).toBeLessThan(HELD / 100);
});
