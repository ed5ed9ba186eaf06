// The deliverer's edge wait sweep: deliveries of a cluster with no agent connected wait
// without using attempts up to EDGE_WAIT_LIMIT_MS, then fail (edge_unavailable) and follow
// the ordinary retry policy and the DLQ.
import { deliveryPolicy, type DeliveryPolicy } from '../packages/delivery/src';
import { createTestDatabase, seedTenant, type TestDatabase } from '@hookline/testing';
import { sweepEdgeWaits } from '../services/deliverer/src/edge-wait-sweep';
import { attemptsOf, deliveryRow, insertCluster, insertEdgeDelivery } from './edge-fixtures';

let db: TestDatabase;
let tenantId: string;
const policy = (maxAttempts: number): DeliveryPolicy =>
  deliveryPolicy({ DESTINATION_MAX_CONCURRENCY: 10, DELIVERY_TIMEOUT_MS: 1000, DELIVERY_MAX_ATTEMPTS: maxAttempts, RETRY_BASE_MS: 1000, RETRY_MAX_MS: 60_000, RETRY_SCHEDULE_MS: '5000', RETRY_AFTER_MAX_MS: 60_000, RESPONSE_BODY_LIMIT: 4096 });
const input = { connectedWindowMs: 2_000, waitLimitMs: 5_000, batchSize: 100, instanceId: 'test' };
const ago = (ms: number): Date => new Date(Date.now() - ms);

beforeAll(async () => {
  db = await createTestDatabase('edgewait');
  tenantId = (await seedTenant(db.pool)).tenantId;
});

afterAll(async () => {
  await db?.drop();
});

test('a delivery that waited past the limit with no agent connected fails one attempt and is retried on the schedule', async () => {
  const never = await insertCluster(db.pool, tenantId);
  const stale = await insertEdgeDelivery(db.pool, tenantId, never.id, { nextAttemptAt: ago(10_000) });
  const recent = await insertEdgeDelivery(db.pool, tenantId, never.id, { nextAttemptAt: ago(1_000) });
  const connected = await insertCluster(db.pool, tenantId, { lastSeenAt: ago(500) });
  const served = await insertEdgeDelivery(db.pool, tenantId, connected.id, { nextAttemptAt: ago(60_000) });
  // Its agent went away 3 s ago (out of the 2 s window): the wait counts from then, not
  // from when the delivery became due an hour ago.
  const gone = await insertCluster(db.pool, tenantId, { lastSeenAt: ago(3_000) });
  const late = await insertEdgeDelivery(db.pool, tenantId, gone.id, { nextAttemptAt: ago(3_600_000) });

  expect(await sweepEdgeWaits({ pool: db.pool, policy: policy(5) }, input)).toBe(1);
  const row = await deliveryRow(db.pool, stale.deliveryId);
  expect(row).toMatchObject({ status: 'failed', attempt_count: 1, lease_owner: null });
  expect(row.next_attempt_at.getTime()).toBeGreaterThan(Date.now() + 3_000);
  expect(await attemptsOf(db.pool, stale.deliveryId)).toEqual([{ number: 1, status_code: null, error_kind: 'edge_unavailable', via: 'edge', response_body: null }]);
  const ev = await db.pool.query(`SELECT status FROM events WHERE id = $1`, [stale.eventId]);
  expect(ev.rows[0].status).toBe('failed');
  for (const d of [recent, served, late]) expect(await deliveryRow(db.pool, d.deliveryId)).toMatchObject({ status: 'pending', attempt_count: 0 });
  // A second sweep finds nothing new: the failed one is not due for 5 s.
  expect(await sweepEdgeWaits({ pool: db.pool, policy: policy(5) }, input)).toBe(0);
});

test('the last allowed attempt goes to the DLQ; a vanished agent\'s expired lease counts as waiting', async () => {
  const c = await insertCluster(db.pool, tenantId);
  const d = await insertEdgeDelivery(db.pool, tenantId, c.id, { nextAttemptAt: ago(20_000) });
  await db.pool.query(`UPDATE deliveries SET lease_owner = 'edge:gone:1', lease_until = $2 WHERE id = $1`, [d.deliveryId, ago(6_000)]);
  expect(await sweepEdgeWaits({ pool: db.pool, policy: policy(1) }, input)).toBe(1);
  expect(await deliveryRow(db.pool, d.deliveryId)).toMatchObject({ status: 'exhausted', attempt_count: 1 });
  const ev = await db.pool.query(`SELECT status FROM events WHERE id = $1`, [d.eventId]);
  expect(ev.rows[0].status).toBe('dlq_queued');
});

test("a replayed delivery's round counts from where the replay started it (round_start_attempt)", async () => {
  const c = await insertCluster(db.pool, tenantId);
  // Delivered at attempt 1, replayed (round from 1), its first attempt of the round failed:
  // with max_attempts 2, the sweep's attempt 3 is the round's last.
  const d = await insertEdgeDelivery(db.pool, tenantId, c.id, { nextAttemptAt: ago(10_000) });
  await db.pool.query(`UPDATE deliveries SET status = 'failed', attempt_count = 2, replay_count = 1, round_start_attempt = 1 WHERE id = $1`, [d.deliveryId]);
  // The same, replayed before round_start_attempt was recorded: the old formula (2 × 1) gives attempts up to 4.
  const legacy = await insertEdgeDelivery(db.pool, tenantId, c.id, { nextAttemptAt: ago(10_000) });
  await db.pool.query(`UPDATE deliveries SET status = 'failed', attempt_count = 2, replay_count = 1 WHERE id = $1`, [legacy.deliveryId]);
  expect(await sweepEdgeWaits({ pool: db.pool, policy: policy(2) }, input)).toBe(2);
  expect(await deliveryRow(db.pool, d.deliveryId)).toMatchObject({ status: 'exhausted', attempt_count: 3 });
  expect(await deliveryRow(db.pool, legacy.deliveryId)).toMatchObject({ status: 'failed', attempt_count: 3 });
});
