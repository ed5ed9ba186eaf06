// The janitor's search for strays (services/deliverer/src/hold-strays.ts: open deliveries
// of a DISABLED destination that are not held) reads only the deliveries of DISABLED
// destinations, through deliveries_destination_id_next_attempt_at_open_idx, planned as on
// the deliverer's connections (INDEX_PLAN_SETTINGS): a large backlog overdue to an ACTIVE
// destination (an outage, a slow drain) and a long history are not read at all, where
// walking the recovery sweep's due index from its head read that whole backlog each run.
import { createPool, type Pool } from '@hookline/db';
import { seedTenant, createTestDatabase, type TestDatabase } from '@hookline/testing';
import { FIND_STRAYS_SQL, holdStrays, STRAY_AFTER_MS } from '../services/deliverer/src/hold-strays';
import { explainDeliveriesScans, type DeliveriesScans } from './plan-fixtures';

let db: TestDatabase;
let pipeline: Pool;
const HISTORY = 20_000;
const BACKLOG = 20_000;
/** Held rows of the DISABLED destination, overdue too: the open index has no `held`, so these are read (and left). */
const HELD = 20;
const OTHER_DESTINATIONS = 500;

beforeAll(async () => {
  db = await createTestDatabase('heldstraysplan');
  const { tenantId } = await seedTenant(db.pool);
  await db.pool.query(
    `INSERT INTO destinations (id, tenant_id, name, url, state, updated_at)
     SELECT 'dst_' || lpad(i::text, 5, '0'), $1, 'd', 'http://127.0.0.1:9/hook', (CASE WHEN i % 100 = 0 THEN 'DISABLED' ELSE 'ACTIVE' END)::"LifecycleState", now()
     FROM generate_series(1, ${OTHER_DESTINATIONS}) i`,
    [tenantId],
  );
  await db.pool.query(
    `INSERT INTO destinations (id, tenant_id, name, url, state, updated_at) VALUES
       ('dst_off', $1, 'off', 'http://127.0.0.1:9/hook', 'DISABLED', now()), ('dst_on', $1, 'on', 'http://127.0.0.1:9/hook', 'ACTIVE', now())`,
    [tenantId],
  );
  const total = HISTORY + BACKLOG + HELD + 1;
  await db.pool.query(
    `INSERT INTO events (id, tenant_id, ingester_id, status, correlation_id)
     SELECT 'evt_' || lpad(i::text, 8, '0'), $1, 'ing_x', 'filtered', 'c' FROM generate_series(1, ${total}) i`,
    [tenantId],
  );
  const insert = (from: number, to: number, columns: string): Promise<unknown> =>
    db.pool.query(
      `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, next_attempt_at, held, held_since)
       SELECT 'dlv_' || lpad(i::text, 8, '0'), $1, 'evt_' || lpad(i::text, 8, '0'), 'flw_x', ${columns}
       FROM generate_series(${from}, ${to}) i`,
      [tenantId],
    );
  // A long delivered history, then the ACTIVE destination's backlog overdue by 10 minutes to
  // 3 hours (older than the stray: ahead of it in due order), then the DISABLED destination's
  // held rows (overdue by a day) and its one stray (overdue by 10 minutes).
  await insert(1, HISTORY, `'dst_on', 'delivered', now() - interval '30 days', false, NULL`);
  await insert(HISTORY + 1, HISTORY + BACKLOG, `'dst_on', 'pending', now() - interval '3 hours' + (i - ${HISTORY}) * interval '0.5 second', false, NULL`);
  await insert(HISTORY + BACKLOG + 1, HISTORY + BACKLOG + HELD, `'dst_off', 'pending', now() - interval '1 day', true, now() - interval '1 day'`);
  await insert(total, total, `'dst_off', 'pending', now() - interval '10 minutes', false, NULL`);
  await db.pool.query('ANALYZE');
  pipeline = createPool(db.url, 1, { indexPlans: true });
});

afterAll(async () => {
  await pipeline?.end();
  await db?.drop();
});

const strayId = (): string => `dlv_${String(HISTORY + BACKLOG + HELD + 1).padStart(8, '0')}`;

test('with a large backlog overdue to an ACTIVE destination, the strays are found without reading it', async () => {
  const client = await pipeline.connect();
  let found: string[];
  let marked: number;
  let plan: DeliveriesScans;
  try {
    await client.query('BEGIN');
    found = (await client.query<{ id: string }>(FIND_STRAYS_SQL, [1000, STRAY_AFTER_MS])).rows.map((r) => r.id);
    marked = await holdStrays(client, 1000);
    await client.query('ROLLBACK');
    await client.query('BEGIN');
    plan = await explainDeliveriesScans(client, FIND_STRAYS_SQL, [1000, STRAY_AFTER_MS]);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
  expect(found).toEqual([strayId()]);
  expect(marked).toBe(1);

  const { scans, visited } = plan;
  console.log(`stray search over ${BACKLOG} overdue to an ACTIVE destination, ${HELD} held, ${HISTORY} delivered: deliveries scans visited ${visited} rows`);
  // The stray and the DISABLED destination's held rows (left), nothing of the backlog.
  expect(visited).toBeLessThanOrEqual(HELD + 1 + 5);
  expect(scans.map((n) => n['Node Type'])).not.toContain('Seq Scan');
  expect(scans.map((n) => n['Index Name'])).toEqual(expect.arrayContaining(['deliveries_destination_id_next_attempt_at_open_idx']));
  expect(scans.map((n) => n['Index Name'])).not.toContain('deliveries_next_attempt_at_due_idx');
});
