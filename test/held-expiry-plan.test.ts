// The janitor's held expiry (services/deliverer/src/expire-held.ts) stays cheap with a long
// delivery history and a large held backlog: planned as on the deliverer's connections
// (INDEX_PLAN_SETTINGS), it reads the partial index deliveries_held_since_held_idx
// (migration 20261125000000_held_expiry) from its oldest entry and stops at the first one
// not yet expired, so with nothing expired it reads next to nothing, and with some expired
// only those it takes; the stamping of held rows left without held_since reads the same
// index's NULL end. The held rows here were created long ago: only held_since counts.
import { createPool, type Pool } from '@hookline/db';
import { HELD_EXPIRED_ERROR } from '@hookline/delivery';
import { seedTenant, createTestDatabase, type TestDatabase } from '@hookline/testing';
import { EXPIRE_HELD_SQL, STAMP_HELD_SINCE_SQL } from '../services/deliverer/src/expire-held';
import { FIND_STRAYS_SQL, STRAY_AFTER_MS } from '../services/deliverer/src/hold-strays';
import { explainDeliveriesScans, seedOnOffDestinations, type PlanNode } from './plan-fixtures';

let db: TestDatabase;
let pipeline: Pool;
const HISTORY = 30_000;
const HELD = 5_000;
const EXPIRED = 50;
const RETENTION_MS = 7 * 86_400_000;

beforeAll(async () => {
  db = await createTestDatabase('heldexpiryplan');
  const { tenantId } = await seedTenant(db.pool);
  await seedOnOffDestinations(db.pool, tenantId, 1, HISTORY + HELD);
  // A long history (delivered, old, of the ACTIVE destination), then the held backlog of
  // the DISABLED one, created long ago (older than the retention) but held within the last
  // days: nothing expired yet.
  await db.pool.query(
    `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, created_at)
     SELECT 'dlv_' || lpad(i::text, 8, '0'), $1, 'evt_' || lpad(i::text, 8, '0'), 'flw_x', 'dst_on', 'delivered', now() - interval '30 days' + i * interval '1 second'
     FROM generate_series(1, ${HISTORY}) i`,
    [tenantId],
  );
  await db.pool.query(
    `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, created_at, held, held_since)
     SELECT 'dlv_' || lpad(i::text, 8, '0'), $1, 'evt_' || lpad(i::text, 8, '0'), 'flw_x', 'dst_off', (CASE WHEN i % 3 = 0 THEN 'failed' ELSE 'pending' END)::"DeliveryStatus",
            now() - interval '20 days' + (i - ${HISTORY}) * interval '1 minute', true, now() - interval '6 days' + (i - ${HISTORY}) * interval '1 minute'
     FROM generate_series(${HISTORY + 1}, ${HISTORY + HELD}) i`,
    [tenantId],
  );
  await db.pool.query('ANALYZE');
  pipeline = createPool(db.url, 1, { indexPlans: true });
});

afterAll(async () => {
  await pipeline?.end();
  await db?.drop();
});

/** The expiry's ids and its plan, run (and rolled back) on a deliverer connection. */
async function run(limit: number, sql = EXPIRE_HELD_SQL, params: unknown[] = [HELD_EXPIRED_ERROR, limit, RETENTION_MS]): Promise<{ closed: number; scans: PlanNode[]; visited: number }> {
  const client = await pipeline.connect();
  try {
    await client.query('BEGIN');
    const closed = (await client.query(sql, params)).rowCount ?? 0;
    await client.query('ROLLBACK');
    await client.query('BEGIN');
    return { closed, ...(await explainDeliveriesScans(client, sql, params)) };
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

test('with many held deliveries and none expired, the expiry reads the held index and next to nothing else', async () => {
  const { closed, scans, visited } = await run(1000);
  expect(closed).toBe(0);
  expect(scans.map((n) => n['Index Name'])).toContain('deliveries_held_since_held_idx');
  expect(scans.map((n) => n['Node Type'])).not.toContain('Seq Scan');
  console.log(`held expiry over ${HELD} held (none expired) and ${HISTORY} delivered: deliveries scans visited ${visited} rows`);
  expect(visited).toBeLessThan(10);
});

test('with every held row stamped, the stamping of rows without held_since reads the index and next to nothing', async () => {
  const { closed, scans, visited } = await run(1000, STAMP_HELD_SINCE_SQL, [1000]);
  expect(closed).toBe(0);
  expect(scans.map((n) => n['Index Name'])).toContain('deliveries_held_since_held_idx');
  expect(scans.map((n) => n['Node Type'])).not.toContain('Seq Scan');
  expect(visited).toBeLessThan(10);
});

test('looking for strays reads the DISABLED destination’s overdue open rows (none here), not the held backlog or the history', async () => {
  const { closed, scans, visited } = await run(1000, FIND_STRAYS_SQL, [1000, STRAY_AFTER_MS]);
  expect(closed).toBe(0);
  expect(scans.map((n) => n['Index Name'])).toContain('deliveries_destination_id_next_attempt_at_open_idx');
  expect(scans.map((n) => n['Node Type'])).not.toContain('Seq Scan');
  expect(visited).toBeLessThan(10);
});

test('with some expired, it takes the oldest through the index and reads about as many rows as it takes', async () => {
  await db.pool.query(`UPDATE deliveries SET held_since = now() - interval '10 days' - ctid_rank * interval '1 second'
    FROM (SELECT id AS rid, row_number() OVER (ORDER BY id) AS ctid_rank FROM deliveries WHERE held ORDER BY id LIMIT ${EXPIRED}) x WHERE id = x.rid`);
  await db.pool.query('ANALYZE deliveries');
  const { closed, scans, visited } = await run(20);
  expect(closed).toBe(20);
  expect(scans.map((n) => n['Index Name'])).toContain('deliveries_held_since_held_idx');
  expect(scans.map((n) => n['Node Type'])).not.toContain('Seq Scan');
  expect(visited).toBeLessThan(100);
  // Of the 50 expired, all of them (and no young one) in a bigger batch.
  expect((await run(1000)).closed).toBe(EXPIRED);
});
