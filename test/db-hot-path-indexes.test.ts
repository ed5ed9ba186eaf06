// The hot-path indexes (migrations 20261121030000_hot_path_indexes and
// 20261121040000_lease_only_claims) serve the queries they were made for: with a long delivery history and few rows due, each sweep, lease and
// purge statement (the services' own SQL) reads its partial index, never the whole table.
import { createPool, type Pool } from '@hookline/db';
import { seedTenant, createTestDatabase, type TestDatabase } from '@hookline/testing';
import { IN_FLIGHT_SQL } from '../services/api/src/edge/cluster-status';
import { LEASE_SQL } from '../services/api/src/edge/lease-work';
import { TAKE_SQL } from '../services/deliverer/src/edge-wait-sweep';
import { PURGE_SQL } from '../services/deliverer/src/purge-dlq';
import { SWEEP_SQL } from '../services/deliverer/src/recover-deliveries';
import { RELEASE_SQL } from '../services/deliverer/src/release-leases';
import { STALE_EVENTS } from '../services/router/src/recover-events';

let db: TestDatabase;
let tenantId: string;
const N = 60_000;
const DESTINATIONS = 500;

beforeAll(async () => {
  db = await createTestDatabase('hotpathidx');
  tenantId = (await seedTenant(db.pool)).tenantId;
  const pad = (col: string) => `lpad(${col}::text, 8, '0')`;
  await db.pool.query(`INSERT INTO clusters (id, tenant_id, name, key_encrypted) VALUES ('cls_a', $1, 'a', 'v1.x.y.z')`, [tenantId]);
  // 500 destinations, 5 of them behind cluster cls_a.
  await db.pool.query(
    `INSERT INTO destinations (id, tenant_id, cluster_id, name, url, updated_at)
     SELECT 'dst_' || i, $1, CASE WHEN i <= 5 THEN 'cls_a' END, 'd' || i, 'http://127.0.0.1:9/hook', now() FROM generate_series(1, ${DESTINATIONS}) i`,
    [tenantId],
  );
  // A long history: nearly every event delivered, one in 1,000 still validated.
  await db.pool.query(
    `INSERT INTO events (id, tenant_id, ingester_id, status, correlation_id, received_at)
     SELECT 'evt_' || ${pad('i')}, $1, 'ing_x', (CASE WHEN i % 1000 = 0 THEN 'validated' ELSE 'delivered' END)::"EventStatus", 'c', now() - i * interval '1 second'
     FROM generate_series(1, ${N}) i`,
    [tenantId],
  );
  // Mostly delivered: a quarter to the cluster's destinations (3,000 each), the rest ~90
  // each. A backlog of due direct deliveries (one in ten: an outage, say), a few due for the
  // cluster, a few failed whose lease expired (a crashed holder), failed, or in the DLQ.
  await db.pool.query(
    `INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, status, next_attempt_at, lease_until, lease_owner, exhausted_at)
     SELECT 'dlv_' || ${pad('i')}, $1, 'evt_' || ${pad('i')}, 'flw_x', CASE WHEN i % 4 = 0 THEN 'dst_' || (i % 5 + 1) ELSE 'dst_' || (i % (${DESTINATIONS} - 5) + 6) END, s.status::"DeliveryStatus", now() - i * interval '1 second',
            CASE WHEN i % 500 = 1 THEN now() - interval '1 minute' END, CASE WHEN i % 500 = 1 THEN 'x:1' END,
            CASE WHEN s.status = 'exhausted' THEN now() - interval '10 days' END
     FROM generate_series(1, ${N}) i,
          LATERAL (SELECT CASE WHEN i % 10 = 5 OR i % 400 = 0 THEN 'pending' WHEN i % 500 = 1 THEN 'failed' WHEN i % 500 = 3 THEN 'exhausted' WHEN i % 500 = 7 THEN 'failed' ELSE 'delivered' END AS status) s`,
    [tenantId],
  );
  await db.pool.query('ANALYZE');
});

afterAll(async () => {
  await db.drop();
});

async function plan(sql: string, params: unknown[], pool: Pool = db.pool): Promise<string> {
  const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

test('the plain status indexes and the lease index are gone, the partial ones exist, deliveries leave room for in-place updates', async () => {
  const { rows } = await db.pool.query<{ indexname: string }>(
    `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename IN ('deliveries', 'events', 'destinations') ORDER BY indexname`,
  );
  const names = rows.map((r) => r.indexname);
  expect(names).toEqual(expect.arrayContaining([
    'deliveries_destination_id_next_attempt_at_open_idx', 'deliveries_exhausted_at_dlq_idx',
    'deliveries_next_attempt_at_due_idx', 'destinations_cluster_id_idx', 'events_received_at_validated_idx',
  ]));
  expect(names).not.toContain('deliveries_status_next_attempt_at_idx');
  expect(names).not.toContain('events_status_received_at_idx');
  // An index on the lease columns would make every claim a new row version in all indexes.
  expect(names).not.toContain('deliveries_lease_until_delivering_idx');
  const { rows: opts } = await db.pool.query<{ reloptions: string[] | null }>(`SELECT reloptions FROM pg_class WHERE oid = 'deliveries'::regclass`);
  expect(opts[0]!.reloptions).toContain('fillfactor=50');
});

test.each([
  ['router recovery sweep', STALE_EVENTS, () => [30_000, 1000], [/events_received_at_validated_idx/]],
  ['deliverer recovery sweep (also expired leases)', SWEEP_SQL, () => [30_000, 2000], [/deliveries_next_attempt_at_due_idx/]],
  ['release of held leases at drain (by the unfinished jobs\' ids)', RELEASE_SQL, () => ['x:', ['dlv_00000001', 'dlv_00000501']], [/deliveries_pkey/]],
  ['DLQ purge', PURGE_SQL, () => [86_400_000, 500], [/deliveries_exhausted_at_dlq_idx/]],
  ['edge work lease', LEASE_SQL, () => ['cls_a', tenantId, 100, 60_000, 'edge@cls_a:a:1', 'v1.sealed-key'], [/destinations_cluster_id_idx/, /deliveries_destination_id_next_attempt_at_open_idx/]],
  ['edge wait sweep', TAKE_SQL, () => [60_000, 900_000, 2000, 'edge-wait:x'], [/destinations_cluster_id_idx/, /deliveries_destination_id_next_attempt_at_open_idx/]],
  // Leased deliveries are few everywhere: either partial index serves the count.
  ['cluster in_flight', IN_FLIGHT_SQL, () => [['cls_a']], [/destinations_cluster_id_idx/, /deliveries_(destination_id_next_attempt_at_open|next_attempt_at_due)_idx/]],
] as const)('%s reads its index, not the whole table', async (_name, sql, params, indexes) => {
  const text = await plan(sql, params());
  for (const index of indexes) expect(text).toMatch(index);
  expect(text).not.toMatch(/Seq Scan on (deliveries|events)\b/);
});

// The router's and the deliverer's statements run on connections that plan with index
// lookups only (INDEX_PLAN_SETTINGS, for their cached plans): their sweeps keep the same
// partial indexes there.
test.each([
  ['router recovery sweep', STALE_EVENTS, () => [30_000, 1000], /events_received_at_validated_idx/],
  ['deliverer recovery sweep', SWEEP_SQL, () => [30_000, 2000], /deliveries_next_attempt_at_due_idx/],
  ['release of held leases at drain', RELEASE_SQL, () => ['x:', ['dlv_00000001', 'dlv_00000501']], /deliveries_pkey/],
  ['DLQ purge', PURGE_SQL, () => [86_400_000, 500], /deliveries_exhausted_at_dlq_idx/],
  ['edge wait sweep', TAKE_SQL, () => [60_000, 900_000, 2000, 'edge-wait:x'], /deliveries_destination_id_next_attempt_at_open_idx/],
] as const)('%s reads the same index on the pipeline connections', async (_name, sql, params, index) => {
  const pipeline = createPool(db.url, 1, { indexPlans: true });
  try {
    const text = await plan(sql, params(), pipeline);
    expect(text).toMatch(index);
    expect(text).not.toMatch(/Seq Scan on (deliveries|events)\b/);
  } finally {
    await pipeline.end();
  }
});
